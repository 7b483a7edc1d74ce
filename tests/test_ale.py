"""The Atari kind (envs/ale/): ALE's frames, rewards, terminals and truncations against ale-py's own
emulator stepped by a plain loop, the layout against ale-py's vector env, the logs per whole game, the
messages, and a short training plus an eval GIF. Needs the optional extra [atari] (in [dev])."""
import importlib.util
import re

import numpy as np
import pytest

import envs
from envs.interface import spread_seed

HAVE_ALE = importlib.util.find_spec("ale_py") is not None and importlib.util.find_spec("gymnasium") is not None
needs_ale = pytest.mark.skipif(not HAVE_ALE, reason='the Atari kind needs the extra [atari]: pip install -e ".[atari]"')


def seeds(seed, n):
    return [spread_seed(seed, i) & 0x7FFFFFFF for i in range(n)]


class ReferenceGame:
    """One game on ale-py's ALEInterface, stepped frame by frame with the preprocessing the ALE kind
    asks its vector env for, written out from its documented meaning: FIRE at a game's start, the
    action held for `frameskip` frames, the max of the last two frames, frames stacked, a terminal
    at a life lost while the game goes on, a truncation after `max_frames` frames, and a new game
    in the same step. Full resolution (no resize), gray, no no-op starts (their count is drawn from
    the C++ standard library's distribution)."""

    def __init__(self, rom, seed, sticky, stack, frameskip, max_frames, episodic_life):
        import ale_py
        self.ale = ale = ale_py.ALEInterface()
        ale.setLoggerMode(ale_py.LoggerMode.Error)
        ale.setInt("random_seed", seed)
        ale.setFloat("repeat_action_probability", sticky)
        ale.loadROM(ale_py.roms.get_rom_path(rom))
        self.actions = ale.getMinimalActionSet()
        self.stack, self.frameskip, self.max_frames, self.episodic_life = stack, frameskip, max_frames, episodic_life
        self.reset()

    def reset(self):
        ale = self.ale
        ale.reset_game()
        ale.act(ale_py_action("FIRE"))
        screen = ale.getScreenGrayscale()
        self.frames = [np.zeros_like(screen)] * (self.stack - 1) + [screen]
        self.elapsed, self.lives = 0, ale.lives()

    def step(self, a):
        ale, reward, last2 = self.ale, 0, [None, None]
        game_over = False
        for k in range(self.frameskip, 0, -1):
            reward += ale.act(self.actions[a])
            game_over = ale.game_over()
            self.elapsed += 1
            if game_over or self.elapsed >= self.max_frames:
                break
            if k <= 2:
                last2[k - 1] = ale.getScreenGrayscale()
        life_lost = 0 < ale.lives() < self.lives
        terminated = game_over or (self.episodic_life and life_lost)
        truncated = self.elapsed >= self.max_frames and not terminated
        if game_over or self.elapsed >= self.max_frames:
            self.reset()  # the next game's first frame, in the same step
        else:
            self.frames = self.frames[1:] + [np.maximum(last2[0], last2[1])]
            self.lives = ale.lives()
        return reward, terminated, truncated, game_over or self.elapsed == 0

    def picture(self):
        return np.stack(self.frames[::-1], axis=-1)  # HWC, the newest frame first


def ale_py_action(name):
    import ale_py
    return getattr(ale_py.Action, name)


@needs_ale
@pytest.mark.parametrize("episodic_life", [1, 0])
def test_frames_and_episode_ends_match_ale_itself(episodic_life):
    """Frame for frame, reward for reward, the same terminals and truncations as ale-py's emulator
    driven by the reference loop: sticky actions on (the same ALE random stream given the seed), games
    that end by losing every life and games cut at max_frames, in both meanings of a terminal."""
    n, steps, seed = 3, 450, 5
    cfg = {"picture_height": 210, "picture_width": 160, "picture_channels": 2, "noop_max": 0, "max_frames": 640,
           "episodic_life": episodic_life, "repeat_action_probability": 0.25}
    rng = np.random.default_rng(1)
    with envs.make("ale:Breakout", n, config=cfg, num_threads=2, seed=seed) as env:
        refs = [ReferenceGame("breakout", s, 0.25, 2, 4, 640, episodic_life) for s in seeds(seed, n)]
        env.reset()
        pics = env.observations.reshape(n, 210, 160, 2)
        for i, ref in enumerate(refs):
            assert np.array_equal(pics[i], ref.picture())
        seen = {"life": 0, "game_over": 0, "truncated": 0}
        scores = [[] for _ in range(n)]
        score = np.zeros(n)
        for t in range(steps):
            actions = rng.integers(0, 4, n)
            env.step(actions[:, None].astype(np.float32))
            for i, ref in enumerate(refs):
                reward, terminated, truncated, game_ended = ref.step(int(actions[i]))
                where = f"step {t}, game {i}"
                assert np.array_equal(pics[i], ref.picture()), where
                assert env.rewards[i] == reward, where
                assert env.terminals[i] == float(terminated or truncated), where
                assert env.truncations[i] == float(truncated), where
                assert env.episode_over(i) == game_ended, where
                score[i] += reward
                if game_ended:
                    scores[i].append(score[i])
                    score[i] = 0
                seen["truncated"] += truncated
                seen["game_over"] += game_ended and not truncated
                seen["life"] += terminated and not game_ended
        assert seen["truncated"] and seen["game_over"] and bool(seen["life"]) == bool(episodic_life), seen
        # the log counts whole games with their scores, lives included
        counts = env.log_counts()
        assert counts.tolist() == [len(s) for s in scores]
        log = env.log()
        played = [x for s in scores for x in s]
        assert log["n"] == len(played) and log["score"] == pytest.approx(np.mean(played))


@needs_ale
def test_default_layout_is_ale_vector_env_in_hwc():
    """At the family's settings (84x84, 4 frames, sticky actions, random no-op starts): the rows are ALE's
    own vector env's frames for the same seeds and actions, laid out HWC with the newest frame first."""
    from ale_py.vector_env import AtariVectorEnv
    n, seed = 4, 11
    rng = np.random.default_rng(2)
    with envs.make("ale:Pong", n, num_threads=2, seed=seed) as env:  # atari.ini: the family's settings
        c = env.config
        assert env.picture == (84, 84, 4) and env.act_sizes == (6,) and env.obs_dtype == np.uint8
        assert env.action_meanings == ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
        assert (c["repeat_action_probability"], c["frameskip"], c["noop_max"], c["max_frames"]) == (0.25, 4, 30, 108000)
        ref = AtariVectorEnv("pong", n, num_threads=2, repeat_action_probability=0.25, autoreset_mode="SameStep",
                             life_loss_info=True, reward_clipping=False)
        obs, _ = ref.reset(seed=np.array(seeds(seed, n), np.int64))
        env.reset()
        for t in range(300):
            want = obs[:, ::-1].transpose(0, 2, 3, 1).reshape(n, -1)
            assert np.array_equal(env.observations, want), t
            a = rng.integers(0, 6, n)
            obs, reward, term, trunc, _ = ref.step(a.astype(np.int32))
            env.step(a[:, None].astype(np.float32))
            assert np.array_equal(env.rewards, reward) and np.array_equal(env.terminals, (term | trunc).astype(np.float32))
        ref.close()
        # what a person sees of agent 0 (eval's window and GIFs): its newest frame, gray, 2x
        view = env.agent_view(0, scale=2)
        assert view.shape == (168, 168, 3) and np.array_equal(view[::2, ::2, 1], env.observations[0].reshape(84, 84, 4)[..., 0])


@needs_ale
def test_two_buffers_step_the_same_games():
    """num_buffers = 2: two vector envs of half the games each, the same games as one buffer."""
    rng = np.random.default_rng(3)
    acts = rng.integers(0, 6, (40, 4, 1)).astype(np.float32)
    out = []
    for buffers in (1, 2):
        with envs.make("ale:Pong", 4, config={"picture_height": 42, "picture_width": 42}, num_threads=2, seed=1,
                       num_buffers=buffers) as env:
            env.reset()
            for a in acts:
                for b in range(env.num_buffers):
                    r0, r1 = env.buffer_rows(b)
                    env.step_buffer(b, a[r0:r1])
            out.append(env.observations.copy())
    assert np.array_equal(out[0], out[1])


@needs_ale
def test_names_and_settings_are_checked():
    assert envs.resolve("ale:MsPacman").name == envs.resolve("ale:ms_pacman").name == "ale_ms_pacman"
    assert envs.resolve("ale:Breakout").ini.name == "breakout.ini"  # CleanRL's v4 game: no sticky actions
    assert envs.make("ale:Breakout", 1).config["repeat_action_probability"] == 0
    assert envs.resolve("ale:Pong").ini.name == "atari.ini"  # the family's
    with pytest.raises(ValueError, match=r"ale:Brekout: no such Atari game .*did you mean breakout\?"):
        envs.resolve("ale:Brekout")
    with pytest.raises(ValueError, match=r"ale: needs a game"):
        envs.resolve("ale:")
    with pytest.raises(ValueError, match=r"with grayscale = 0 the channels a multiple of 3"):
        envs.make("ale:Pong", 2, config={"grayscale": 0, "picture_channels": 4})
    with pytest.raises(ValueError, match=r"^\[env\] frameskip = 0 must be a whole number >= 1; noop_max = -1 must be "
                                         r"a whole number >= 0 \(from .*atari.ini or --env.KEY\)$"):
        envs.make("ale:Pong", 2, config={"frameskip": 0, "noop_max": -1})
    with pytest.raises(ValueError, match=r"^\[env\] repeat_action_probability = 1.5 must be in \[0, 1\]"):
        envs.make("ale:Pong", 2, config={"repeat_action_probability": 1.5})
    with pytest.raises(ValueError, match=r"isolate is for C env headers"):
        envs.make("ale:Pong", 2, config={"isolate": 1})
    with pytest.raises(ValueError, match=r"unknown \[env\] key 'frame_skip'"):
        envs.make("ale:Pong", 2, config={"frame_skip": 2})


def test_without_the_extra_the_message_names_it(monkeypatch):
    """Runs without ale-py too: the message says which extra to install."""
    import sys
    monkeypatch.setitem(sys.modules, "ale_py", None)  # import ale_py now raises ImportError
    with pytest.raises(ValueError, match=r'--env ale:Breakout needs the optional extra \[atari\].*pip install -e "\.\[atari\]"'):
        envs.resolve("ale:Breakout")


@needs_ale
@pytest.mark.slow
def test_a_short_training_runs_and_eval_records_a_whole_game(tmp_path, capsys):
    """trainer.run on ale:Breakout (small pictures and policy), then trainer.eval --gif plays one
    whole game, all its lives, from the checkpoint."""
    from trainer.eval import main as eval_main
    from trainer.run import main as run_main
    flags = ["--vec.total_agents", "8", "--train.horizon", "16", "--train.minibatch_size", "64",
             "--policy.hidden_size", "16", "--policy.num_layers", "1", "--env.picture_height", "42",
             "--env.picture_width", "42", "--env.picture_channels", "2", "--base.checkpoint_dir", str(tmp_path / "ck"),
             "--base.log_dir", str(tmp_path / "logs")]
    assert run_main(["--env", "ale:Breakout", "--plain", "--train.total_timesteps", str(8 * 16 * 3), *flags]) == 0
    ck = sorted((tmp_path / "ck" / "ale_breakout").glob("*/*.bin"))
    assert ck, capsys.readouterr()
    gif = tmp_path / "game.gif"
    assert eval_main(["--env", "ale:Breakout", str(ck[-1]), "--gif", str(gif), *flags]) == 0
    out = capsys.readouterr().out
    logged = re.search(r"wrote .*: (\d+) frames; .* episode_length (\d+) n 1$", out, re.M)
    assert logged, out  # exactly one game ended: the GIF holds every step of it
    from PIL import Image
    with Image.open(gif) as im:
        # 4x the 42x42 picture; an untrained policy's five lives last well over 100 steps
        assert im.size == (168, 168) and im.n_frames == int(logged[1]) == int(logged[2]) > 100
