"""Python envs (envs/gym/, envs/pz/): the space mapping round-trips every space type exactly,
episodes end as in Gymnasium's own vector loop (next-step autoreset, terminated vs truncated), a
killed worker is restarted with its episodes truncated, PettingZoo agents that leave are masked,
[env] keys reach the factory, and a short CartPole run learns."""
import os
import signal
from pathlib import Path

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium", reason="the Gymnasium kind needs the gym extra: pip install -e '.[gym]'")
from gymnasium import spaces  # noqa: E402

import envs  # noqa: E402
from envs.errors import EnvError  # noqa: E402
from envs.gym.spaces import ActLayout, ObsLayout, SpaceError  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PY_ENVS = ROOT / "tests" / "py_envs"


def _same(a, b):
    """Exact equality of nested observations/actions, dtypes included."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


IMG = spaces.Box(0, 255, (40, 48, 3), np.uint8)
OBS_SPACES = {
    "box_f32": (spaces.Box(-2, 2, (3, 2), np.float32), 6, np.float32, None),
    "box_i64": (spaces.Box(-1000, 1000, (4,), np.int64), 4, np.float32, None),
    "discrete": (spaces.Discrete(7, start=-3), 1, np.float32, None),
    "multidiscrete": (spaces.MultiDiscrete([[3, 4], [5, 2]], start=[[1, 0], [0, -1]]), 4, np.float32, None),
    "multibinary": (spaces.MultiBinary([2, 3]), 6, np.uint8, None),
    "uint8_small_image": (spaces.Box(0, 255, (7, 7, 3), np.uint8), 147, np.uint8, None),  # MiniGrid's: features
    "picture_hwc": (IMG, 40 * 48 * 3, np.uint8, (40, 48, 3)),
    "picture_chw": (spaces.Box(0, 255, (4, 36, 40), np.uint8), 4 * 36 * 40, np.uint8, (36, 40, 4)),
    "picture_gray": (spaces.Box(0, 255, (36, 36), np.uint8), 36 * 36, np.uint8, (36, 36, 1)),
    "dict_nested": (spaces.Dict({"pos": spaces.Box(-1, 1, (2,), np.float32),
                                 "inner": spaces.Tuple((spaces.Discrete(3), spaces.MultiBinary(2)))}),
                    5, np.float32, None),
    "dict_picture_and_features": (spaces.Dict({"image": IMG, "vel": spaces.Box(-1, 1, (2,), np.float64)}),
                                  2 + 40 * 48 * 3, np.float32, (40, 48, 3)),
    "tuple_uint8_picture_features": (spaces.Tuple((spaces.Box(0, 255, (3,), np.uint8), IMG)),
                                     3 + 40 * 48 * 3, np.uint8, (40, 48, 3)),
}


@pytest.mark.parametrize("name", list(OBS_SPACES))
def test_observation_spaces_round_trip(name):
    space, size, dtype, picture = OBS_SPACES[name]
    space.seed(5)
    layout = ObsLayout(space)
    assert (layout.size, layout.dtype, layout.picture) == (size, np.dtype(dtype), picture)
    rows = np.zeros((8, layout.size), layout.dtype)
    samples = [space.sample() for _ in range(8)]
    if name == "dict_picture_and_features":  # float64 values the float32 row holds exactly
        for s in samples:
            s["vel"] = s["vel"].astype(np.float32).astype(np.float64)
    for s, row in zip(samples, rows):
        layout.write(s, row)
    for s, row in zip(samples, rows):
        assert _same(layout.read(row), s), name
    if picture is not None:  # the picture is the row's last h*w*c values, HWC
        h, w, c = picture
        pic = rows[0, layout.size - h * w * c:].reshape(h, w, c)
        img = samples[0] if not isinstance(samples[0], (dict, tuple)) else (
            samples[0]["image"] if isinstance(samples[0], dict) else samples[0][1])
        img = img.reshape(h, w, c) if img.ndim == 2 else (img.transpose(1, 2, 0) if img.shape[0] == c else img)
        scale = 1.0 if layout.dtype == np.uint8 else 1 / 255
        assert np.array_equal(np.rint(pic.astype(np.float64) / scale), img)


def test_dict_keys_flatten_in_the_spaces_order():
    layout = ObsLayout(spaces.Dict({"b": spaces.Discrete(5), "a": spaces.Box(0, 1, (2,), np.float32)}))
    row = np.zeros(3, np.float32)
    layout.write({"a": np.array([0.25, 0.5], np.float32), "b": 4}, row)
    assert row.tolist() == [0.25, 0.5, 4.0]  # Gymnasium sorts a plain dict's keys: a, then b


ACT_SPACES = {
    "discrete": (spaces.Discrete(5, start=2), (5,)),
    "discrete_of_one": (spaces.Tuple((spaces.Discrete(1, start=7), spaces.Discrete(3))), (3,)),
    "multidiscrete": (spaces.MultiDiscrete([[3, 1], [4, 2]], start=[[0, 5], [1, -2]]), (3, 4, 2)),
    "multibinary": (spaces.MultiBinary(3), (2, 2, 2)),
    "box_continuous": (spaces.Box(-1, 1, (2,), np.float32), (1, 1)),
    "box_int": (spaces.Box(-2, 3, (2,), np.int32), (6, 6)),
    "dict_hybrid": (spaces.Dict({"move": spaces.Discrete(4), "aim": spaces.Box(-np.inf, np.inf, (1,), np.float64)}),
                    (1, 4)),
}


@pytest.mark.parametrize("name", list(ACT_SPACES))
def test_action_spaces_round_trip(name):
    space, sizes = ACT_SPACES[name]
    space.seed(3)
    layout = ActLayout(space)
    assert layout.sizes == sizes
    for _ in range(10):
        a = space.sample()
        if name == "dict_hybrid":
            a["aim"] = a["aim"].astype(np.float32).astype(np.float64)
        row = np.full(len(sizes), -1.0, np.float32)
        layout.write(a, row)
        assert ((row >= 0) & (row < np.array(sizes))).all() or 1 in sizes
        assert _same(layout.read(row), a), name


def test_continuous_actions_are_clipped_to_the_box():
    layout = ActLayout(spaces.Box(np.array([-1, 0], np.float32), np.array([1, 2], np.float32)))
    assert _same(layout.read(np.array([-3.5, 0.75], np.float32)), np.array([-1, 0.75], np.float32))
    assert _same(layout.read(np.array([0.5, 9.0], np.float32)), np.array([0.5, 2], np.float32))


def test_an_action_mask_in_the_observation_is_the_mask():
    act = ActLayout(spaces.Discrete(4))
    obs = ObsLayout(spaces.Dict({"observation": spaces.Box(0, 1, (3,), np.float32),
                                 "action_mask": spaces.Box(0, 1, (4,), np.int8)}), mask_size=sum(act.sizes))
    assert obs.size == 3 and obs.mask_size == 4
    row, mask = np.zeros(3, np.float32), np.zeros(4, np.uint8)
    value = {"action_mask": np.array([1, 0, 0, 1], np.int8), "observation": np.array([0.5, 0.25, 1], np.float32)}
    obs.write(value, row)
    obs.write_mask(value, mask)
    assert mask.tolist() == [1, 0, 0, 1] and _same(obs.read(row, mask), value)


@pytest.mark.parametrize("space, where", [
    (spaces.Text(5), r"observation_space is Text"),
    (spaces.Dict({"ok": spaces.Discrete(2), "seq": spaces.Sequence(spaces.Discrete(2))}),
     r"observation_space\['seq'\] is Sequence"),
    (spaces.Dict({"a": IMG, "b": IMG}), r"\['a'\] and .*\['b'\] are both pictures"),
])
def test_unsupported_observation_spaces_are_named(space, where):
    with pytest.raises(SpaceError, match=where):
        ObsLayout(space)


def test_unsupported_action_spaces_are_named():
    with pytest.raises(SpaceError, match=r"action_space is Box\(.*int.*finite bounds"):
        ActLayout(spaces.Box(0, np.iinfo(np.int64).max, (1,), np.int64))
    with pytest.raises(SpaceError, match=r"action_space\[1\] is Text"):
        ActLayout(spaces.Tuple((spaces.Discrete(2), spaces.Text(3))))


def test_a_missing_extra_is_named(monkeypatch):
    import sys
    from envs.gym.spaces import gym_spaces
    from envs.pz.runner import PzRunner
    monkeypatch.setitem(sys.modules, "gymnasium.spaces", None)
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    with pytest.raises(EnvError, match=r"pip install 'puffgpu\[gym\]'"):
        gym_spaces()
    with pytest.raises(EnvError, match=r"pip install 'puffgpu\[pz\]'"):
        PzRunner({}, 1)  # the first thing a PettingZoo runner needs


def _reference_stream(env_id, kwargs, seed, actions):
    """What Gymnasium's own vector loop (SyncVectorEnv, next-step autoreset) gives for per-env
    action sequences, rewritten the PufferLib way: a reset step is taken out and its observation
    becomes the one that came with the episode's end. actions [E, K] -> [(obs, r, term, trunc)] per env."""
    from gymnasium.vector import AutoresetMode, SyncVectorEnv
    E, K = actions.shape
    vec = SyncVectorEnv([lambda: gym.make(env_id, **kwargs) for _ in range(E)], autoreset_mode=AutoresetMode.NEXT_STEP)
    first, _ = vec.reset(seed=seed)
    streams, ptr, pending = [[] for _ in range(E)], [0] * E, [False] * E
    while min(ptr) < K or any(pending):
        obs, r, te, tr, _ = vec.step(np.array([actions[i, min(ptr[i], K - 1)] for i in range(E)]))
        for i in range(E):
            if pending[i]:  # Gymnasium's reset step: the action was ignored
                assert r[i] == 0 and not te[i] and not tr[i]
                streams[i][-1] = (obs[i].copy(), *streams[i][-1][1:])
                pending[i] = False
            elif ptr[i] < K:
                streams[i].append((obs[i].copy(), float(r[i]), bool(te[i]), bool(tr[i])))
                ptr[i] += 1
                pending[i] = bool(te[i] or tr[i])
    vec.close()
    return first, streams


@pytest.mark.parametrize("isolate", [0, 1], ids=["one-process", "worker"])
def test_episodes_end_as_in_gymnasiums_vector_loop(isolate):
    """CartPole with a 12-step time limit: terminations and truncations both happen; every
    observation, reward, terminal and truncation equals Gymnasium's reference loop's."""
    E, K, seed = 5, 60, 11
    actions = np.random.default_rng(0).integers(0, 2, (E, K))
    actions[:2] = 1  # always pushing right: the pole falls before the time limit
    first, ref = _reference_stream("CartPole-v1", {"max_episode_steps": 12}, seed, actions)
    with envs.make("gym:CartPole-v1", E, config={"isolate": isolate, "processes": 1, "max_episode_steps": 12},
                   seed=seed) as env:
        env.reset()
        assert np.array_equal(env.observations, first)
        ends = {"term": 0, "trunc": 0}
        for k in range(K):
            env.step(actions[:, k:k + 1].astype(np.float32))
            for i in range(E):
                obs, r, te, tr = ref[i][k]
                assert np.array_equal(env.observations[i], obs), (k, i)
                assert (env.rewards[i], env.terminals[i], env.truncations[i]) == (r, float(te or tr), float(tr)), (k, i)
                ends["term"] += te and not tr
                ends["trunc"] += tr
        assert ends["term"] > 5 and ends["trunc"] > 5, ends
        log = env.log()
        assert log["n"] == ends["term"] + ends["trunc"]
        assert log["episode_return"] == log["episode_length"] == log["score"]  # CartPole: +1 a step


def test_one_process_and_workers_step_alike():
    """Two workers (their own seeds per process) against the same envs in one process, seeded
    as each worker seeds its share."""
    from envs.interface import spread_seed
    E, seed = 6, 4
    rng = np.random.default_rng(1)
    with envs.make("gym:CartPole-v1", E, config={"processes": 2}, seed=seed) as w:
        assert type(w).__name__ == "PythonWorkerEnv" and w.num_threads == 2
        halves = [envs.make("gym:CartPole-v1", 3, config={"isolate": 0}, seed=spread_seed(seed, i)) for i in range(2)]
        w.reset()
        for h in halves:
            h.reset()
        for _ in range(40):
            a = rng.integers(0, 2, (E, 1)).astype(np.float32)
            w.step(a)
            for i, h in enumerate(halves):
                h.step(a[3 * i:3 * i + 3])
                assert np.array_equal(w.observations[3 * i:3 * i + 3], h.observations)
                assert np.array_equal(w.terminals[3 * i:3 * i + 3], h.terminals)
        for h in halves:
            h.close()


def test_a_killed_worker_is_restarted_and_its_episodes_truncated(capfd):
    with envs.make("gym:CartPole-v1", 6, config={"processes": 2}, seed=2) as env:
        env.reset()
        for _ in range(5):
            env.step(np.zeros((6, 1), np.float32))
        victim = env.server_pids()[1]
        os.kill(victim, signal.SIGKILL)
        env.step(np.zeros((6, 1), np.float32))
        assert env.restarts == 1 and env.server_pids()[1] != victim
        assert "server 1" in env.faults[0] and "killed by SIGKILL" in env.faults[0]
        assert env.terminals[3:].tolist() == [1] * 3 and env.truncations[3:].tolist() == [1] * 3
        assert env.rewards[3:].tolist() == [0] * 3
        assert env.terminals[:3].tolist() == [0] * 3  # the other worker's episodes go on
        for _ in range(30):
            env.step(np.zeros((6, 1), np.float32))
        assert env.log()["n"] >= 6 and env.epoch_metrics()["server_restarts"] == 1.0
    assert "restarting it" in capfd.readouterr().err


def test_a_python_env_file_gets_its_ini_keys():
    source = envs.resolve(PY_ENVS / "cartpole_file.py")
    assert source.kind.name == "gym" and source.ini == PY_ENVS / "cartpole_file.ini"
    with envs.make(source, 2, config={"isolate": 0, "reward_scale": 0.5}) as env:
        env.reset()
        for _ in range(31):
            env.step(np.zeros((2, 1), np.float32))  # always push left: falls over in < 30 steps anyway
            assert env.rewards.tolist() == [0.5, 0.5]  # CartPole's +1, scaled for the trainer
        assert env.config["max_episode_steps"] == 30
        log = env.log()
        assert 0 < log["episode_length"] <= 30 and log["episode_return"] == log["episode_length"]  # logged unscaled
    with pytest.raises(EnvError, match=r"make_env\(0, max_episode_steps=30, gravity=9.8, nope=1\).*unexpected keyword"):
        envs.make(source, 1, config={"isolate": 0, "nope": 1})


pettingzoo = pytest.importorskip("pettingzoo", reason="the PettingZoo kind needs the pz extra: pip install -e '.[pz]'")


@pytest.mark.parametrize("isolate", [0, 1], ids=["one-process", "worker"])
def test_pettingzoo_agents_that_leave_are_masked(isolate):
    """tests/py_envs/leaving.py with every agent playing 1: a0..a3 leave at steps 1..4, 'late'
    joins at step 2 and is truncated at step 6, and the episode starts again on that step."""
    for name in (f"pz:{PY_ENVS / 'leaving.py'}", PY_ENVS / "leaving.py"):  # a file defining parallel_env is PZ's
        assert envs.resolve(name).kind.name == "pz"
    with envs.make(PY_ENVS / "leaving.py", 10, config={"isolate": isolate, "processes": 1}, seed=0) as env:
        assert env.num_agents == 10 and env.act_sizes == (2,) and env.obs_size == 3
        env.reset()
        assert env.action_mask[:5, 0].tolist() == [1, 1, 1, 1, 0]  # 'late' is not there yet
        assert env.observations[4].tolist() == [0, 0, 0]
        ones = np.ones((10, 1), np.float32)
        rewards, terms, truncs, masks, obs = [], [], [], [], []
        for _ in range(6):
            env.step(ones)
            rewards.append(env.rewards[:5].tolist())
            terms.append(env.terminals[:5].tolist())
            truncs.append(env.truncations[:5].tolist())
            masks.append(env.action_mask[:5, 0].tolist())
            obs.append(env.observations[:5, :2].tolist())
        assert rewards == [[10, 0, 0, 0, 0], [0, 11, 0, 0, 0], [0, 0, 12, 0, 0], [0, 0, 0, 13, 0], [0, 0, 0, 0, 0],
                           [0, 0, 0, 0, 0]]
        # a leaving agent's step and every masked step is an episode end; 'late' is masked until it joins
        assert terms == [[1, 0, 0, 0, 1], [1, 1, 0, 0, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 0],
                         [1, 1, 1, 1, 1]]
        assert truncs[5] == [0, 0, 0, 0, 1] and sum(map(sum, truncs[:5])) == 0
        assert masks == [[0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 1],
                         [1, 1, 1, 1, 0]]  # step 6: everyone gone, the env reset on the same step
        assert obs[1] == [[0, 0], [0, 0], [2, 2], [3, 2], [4, 2]] and obs[5] == [[0, 0], [1, 0], [2, 0], [3, 0], [0, 0]]
        log = env.log()  # both envs alike: 5 agent episodes each
        assert log["n"] == 10 and log["episode_return"] == pytest.approx((10 + 11 + 12 + 13 + 0) / 5)
        assert log["episode_length"] == pytest.approx((1 + 2 + 3 + 4 + 4) / 5)


def test_a_pettingzoo_aec_env_is_refused_with_a_hint():
    with pytest.raises(EnvError, match="not a PettingZoo ParallelEnv"):
        envs.make(f"pz:{PY_ENVS / 'turns.py'}:env", 2, config={"isolate": 0})


def test_an_evaluation_steps_python_envs_in_its_own_process():
    """trainer.eval counts each env's first episodes, so it runs a Python env in its process (a worker
    would be one "env" of many to it): CartPole episodes of random play differ in length, and 8 envs ×
    their first 2 are exactly 16."""
    from envs.gym.env import PythonEnv
    from trainer import config
    from trainer.eval import Evaluator
    name = str(PY_ENVS / "cartpole_file.py")
    cfg, _ = config.load(name, {})
    assert cfg["env"]["isolate"] == 1  # training's default: worker processes
    ev = Evaluator(name, cfg, None, num_agents=8, seed=1)
    try:
        assert isinstance(ev.env, PythonEnv)
        out = ev.measure(16)
    finally:
        ev.env.close()
    assert out["episodes"] == 16
    assert 8 <= out["episode_length"] <= 60 and out["episode_return"] == out["episode_length"]


def test_a_factory_that_raises_is_one_message_with_its_line(tmp_path):
    path = tmp_path / "bad_make.py"
    path.write_text("def make_env(seed):\n    raise KeyError('boom')\n")
    for isolate in (0, 1):  # the probe in this process, before any worker starts
        with pytest.raises(EnvError, match=rf"^bad_make: make_env\(0\) raised KeyError: 'boom' at "
                                           rf"{path}:2 in make_env$"):
            envs.make(str(path), 2, config={"isolate": isolate})


def test_a_render_that_fails_is_one_message(tmp_path):
    """An env whose render() raises (CartPole's without pygame) is an EnvError naming it, which
    trainer.eval --gif prints as one line."""
    path = tmp_path / "norender.py"
    path.write_text("import gymnasium as gym\n\n\n"
                    "class NoRender(gym.Wrapper):\n"
                    "    def render(self):\n"
                    "        raise ImportError('no renderer here: pip install one')\n\n\n"
                    "def make_env(seed):\n"
                    "    return NoRender(gym.make('CartPole-v1'))\n")
    env = envs.make(str(path), 1, config={"isolate": 0})
    try:
        env.reset()
        with pytest.raises(EnvError, match=r"^norender: the env's render\(\) failed: ImportError: no renderer here"):
            env.render(0)
    finally:
        env.close()


@pytest.mark.slow
def test_a_short_cartpole_run_learns(tmp_path):
    """trainer.run on gym:CartPole-v1 (its ini, 120K steps): the mean return rises from random
    play's ~22 to over 100."""
    from trainer import config
    from trainer.run import train
    cfg, _ = config.load("gym:CartPole-v1", {"train.total_timesteps": "122880", "base.checkpoint_dir": str(tmp_path / "ck"),
                                             "base.log_dir": str(tmp_path / "logs")})
    out = train("gym:CartPole-v1", cfg, live=False)
    assert out["global_step"] == 122880
    assert out["metrics"]["env/episode_return"] > 100, out["metrics"]
