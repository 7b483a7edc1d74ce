"""Atari games stepped in the Arcade Learning Environment's own C++ vector env (`--env ale:Breakout`).

ale-py's `AtariVectorEnv` runs N emulators on its own threads and does the standard preprocessing
in C++ (frameskip with a max over the last two frames, grayscale, a resize with OpenCV's area
filter, frame stacking, random no-op starts, FIRE at reset, sticky actions); no Python wrapper
touches a frame. This class only lays its output out as the trainer expects:

- Observation: the picture (height, width, channels), uint8, rows from the top, channels last:
  the stacked frames as channels, the newest first (gray: one channel a frame; RGB: three). ALE
  hands frames out stacked first (stack, height, width); each step copies them into HWC rows.
- One discrete head: the game's minimal action set (18 actions with full_action_space = 1).
- Rewards: the game's own (the trainer clamps them to [-1, 1] for training, which for Atari's
  integer rewards is CleanRL's sign clipping); the logged score is the game's real score.
- Terminals: the end of a game, and with episodic_life = 1 also each life lost while the game goes
  on (CleanRL's EpisodicLifeEnv: the value function sees a life's end, the game is not restarted).
  ALE's own `episodic_life` restarts the game at every life lost instead, so a policy would never see
  a game past its first life: this class asks ALE for `life_loss_info` (a terminal flag on a life
  lost, no reset) to get CleanRL's meaning. `truncations` marks a game cut at max_frames.
- Autoreset in the same step (ALE's SameStep mode, PufferLib's contract): the observation after a
  game's last step is the next game's first.
- Logs are per game (all its lives): score (the game's score), episode_length (agent steps), perf
  (the score again: PufferLib's headline metric; for Atari the score is the measure).
"""
from __future__ import annotations

import numpy as np

from ..interface import PICTURE_KEYS, EnvBase, check_counts, merge_config, spread_seed, usable_cpus

EXTRA = "atari"  # pip install -e ".[atari]"
# [env] keys of an Atari game and their defaults (the settings of Gymnasium's ALE/<Game>-v5 plus
# CleanRL's Atari preprocessing); envs/ale/atari.ini documents each one
ALE_DEFAULTS = {
    "picture_height": 84, "picture_width": 84, "picture_channels": 4, "grayscale": 1,
    "frameskip": 4, "maxpool": 1, "noop_max": 30, "repeat_action_probability": 0.25, "episodic_life": 1,
    "fire_reset": 1, "full_action_space": 0, "max_frames": 108_000,
}
LOG_KEYS = ("perf", "score", "episode_length")
# the [env] numbers with a range: key -> (test, the range in words)
RANGES = {
    "frameskip": (lambda v: float(v) == int(v) >= 1, "a whole number >= 1"),
    "repeat_action_probability": (lambda v: 0 <= float(v) <= 1, "in [0, 1]"),
    "noop_max": (lambda v: float(v) == int(v) >= 0, "a whole number >= 0"),
    "max_frames": (lambda v: float(v) == int(v) >= 1, "a whole number >= 1"),
}


def _fits(test, value) -> bool:
    try:
        return bool(test(value))
    except (TypeError, ValueError, OverflowError):  # not a number at all
        return False


def missing_extra(what, error) -> ValueError:
    """The message for a missing optional dependency."""
    return ValueError(f"{what} needs the optional extra [{EXTRA}] (ale-py and gymnasium): "
                      f'pip install -e ".[{EXTRA}]" ({error})')


def ale_module(what):
    """ale_py, or a ValueError that names the extra."""
    try:
        import ale_py  # noqa: F401
        from ale_py.vector_env import AtariVectorEnv  # noqa: F401  (needs gymnasium too)
    except ImportError as e:
        raise missing_extra(what, e) from None
    return ale_py


class AleEnv(EnvBase):
    """N Atari games, one agent each, in one AtariVectorEnv per env buffer. Create with envs.make()."""

    threads_kind = "ale"

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
                 num_buffers=1):
        ale_module(f"--env ale:{source.name}")
        from ale_py.vector_env import AtariVectorEnv
        check_counts(total_agents, seed)
        self.source = source
        self.name = source.name
        self.rom = source.path.stem
        self.config = c = merge_config(source.env_config(), config, source.name, source.ini)
        self.check_actions = check_actions
        if int(c.get("num_agents", 1)) != 1:
            raise ValueError(f"[env] num_agents = {c['num_agents']}: an Atari game has one player (num_agents = 1)")
        h, w, ch = (int(c[k]) for k in PICTURE_KEYS)
        gray = bool(c["grayscale"])
        per_frame = 1 if gray else 3
        if min(h, w, ch) < 1 or ch % per_frame or any(float(c[k]) != int(c[k]) for k in PICTURE_KEYS):
            raise ValueError(f"[env] picture {c['picture_height']}x{c['picture_width']}x{c['picture_channels']} in "
                             f"{source.ini}: whole numbers >= 1, and with grayscale = 0 the channels a multiple of 3 "
                             f"(three per stacked frame)")
        self.stack = ch // per_frame
        bad = [f"{k} = {c[k]} must be {meaning}" for k, (fits, meaning) in RANGES.items() if not _fits(fits, c[k])]
        if bad:
            raise ValueError(f"[env] {'; '.join(bad)} (from {source.ini} or --env.KEY)")
        self.num_agents = self.num_envs = n = int(total_agents)
        if not isinstance(num_buffers, (int, np.integer)) or num_buffers < 1 or n % num_buffers:
            raise ValueError(f"num_buffers = {num_buffers!r} must be a positive int that divides the {n} games")
        self.num_threads = max(1, min(int(num_threads or usable_cpus()), usable_cpus(), n))
        rows = [b * n // num_buffers for b in range(num_buffers + 1)]
        self.buffers = [(rows[b], rows[b + 1], rows[b], rows[b + 1]) for b in range(num_buffers)]
        self.picture = (h, w, ch)
        self.obs_size = h * w * ch
        self.obs_dtype = np.dtype(np.uint8)
        self._seed = int(seed)
        self._vecs = []
        try:
            for lo, hi, _, _ in self.buffers:
                self._vecs.append(AtariVectorEnv(
                    self.rom, hi - lo, num_threads=max(1, self.num_threads // num_buffers),
                    repeat_action_probability=float(c["repeat_action_probability"]),
                    full_action_space=bool(c["full_action_space"]), autoreset_mode="SameStep",
                    img_height=h, img_width=w, grayscale=gray, stack_num=self.stack, frameskip=int(c["frameskip"]),
                    maxpool=bool(c["maxpool"]), noop_max=int(c["noop_max"]),
                    # CleanRL's episodic life: a terminal at a life lost, the game goes on (see above)
                    episodic_life=False, life_loss_info=bool(c["episodic_life"]), reward_clipping=False,
                    use_fire_reset=bool(c["fire_reset"]), max_num_frames_per_episode=int(c["max_frames"])))
        except Exception:
            self.close()
            raise
        self.act_sizes = (int(self._vecs[0].single_action_space.n),)
        self._observations = np.zeros((n, self.obs_size), np.uint8)
        self._pictures = self._observations.reshape(n, h, w, self.stack, per_frame)
        self._actions = np.zeros((n, 1), np.float32)
        self._rewards = np.zeros(n, np.float32)
        self._terminals = np.zeros(n, np.float32)
        self._truncations = np.zeros(n, np.float32)
        self._action_mask = np.ones((n, self.act_sizes[0]), np.uint8)
        self._setup_actions()
        # per game: lives and emulator frames since its reset as ALE last reported them (a life
        # lost vs a new game), and the running score and length of the game in progress
        self._lives = np.zeros(n, np.int64)
        self._frames = np.zeros(n, np.int64)
        self._score = np.zeros(n, np.float64)
        self._length = np.zeros(n, np.int64)
        self._log_sums = np.zeros((n, len(LOG_KEYS)), np.float64)
        self._log_n = np.zeros(n, np.int64)

    @property
    def truncations(self):
        """1 where a game was cut at max_frames on this step (its terminal is 1 too)."""
        return self._truncations

    @property
    def action_meanings(self):
        """The names of the head's actions, in order (NOOP, FIRE, RIGHT, LEFT for Breakout)."""
        return [a.name for a in self._live()[0].ale.get_action_set()]

    def _live(self):
        if not self._vecs:
            raise RuntimeError(f"{self.name} env is closed")
        return self._vecs

    def _write(self, r0, obs, info):
        """Copies ALE's stacked frames [n, stack, h, w(, 3)] into the rows from r0 on, newest first."""
        rows = r0 + np.asarray(info["env_id"], np.int64)
        frames = obs[:, ::-1]  # ALE: oldest first
        frames = frames.transpose(0, 2, 3, 1, 4) if frames.ndim == 5 else frames.transpose(0, 2, 3, 1)[..., None]
        if np.array_equal(rows, np.arange(r0, r0 + len(rows))):
            self._pictures[r0:r0 + len(rows)] = frames
        else:
            self._pictures[rows] = frames
        self._lives[rows] = info["lives"]
        self._frames[rows] = info["episode_frame_number"]
        return rows

    def reset(self):
        """Starts a new game everywhere (env i seeded from the env seed and i); rewards and terminals 0."""
        for (lo, hi, _, _), vec in zip(self.buffers, self._live()):
            seeds = np.array([spread_seed(self._seed, i) & 0x7FFFFFFF for i in range(lo, hi)], np.int64)
            obs, info = vec.reset(seed=seeds)
            self._write(lo, obs, info)
        self._rewards[:] = 0
        self._terminals[:] = 0
        self._truncations[:] = 0
        self._score[:] = 0
        self._length[:] = 0
        return self._observations

    def step(self, actions=None):
        """Steps every game with env.actions (or copies `actions` [N, 1] into it first)."""
        self._take_actions(actions)
        for b in range(self.num_buffers):
            self._step_range(b)

    def step_buffer(self, b, actions=None, threads=None):
        """Steps buffer b's games only (its own AtariVectorEnv, whose threads run without the GIL)."""
        r0, r1 = self.buffer_rows(b)
        self._take_actions(actions, r0, r1)
        self._step_range(b)

    def _step_range(self, b):
        lo, hi, _, _ = self.buffers[b]
        vec = self._live()[b]
        lives, frames = self._lives[lo:hi].copy(), self._frames[lo:hi].copy()
        obs, reward, terminated, truncated, info = vec.step(self._actions[lo:hi, 0].astype(np.int32))
        rows = self._write(lo, obs, info)
        lives_before, frames_before = lives[rows - lo], frames[rows - lo]
        self._rewards[rows] = reward
        self._terminals[rows] = terminated | truncated
        self._truncations[rows] = truncated
        self._score[rows] += reward
        self._length[rows] += 1
        # a terminal is a game's end unless a life was lost and the game went on: ALE then reports
        # fewer lives and more frames than before (after a reset, the new game's lives and frames)
        life_lost = terminated & ~truncated & (self._lives[rows] < lives_before) & (self._frames[rows] > frames_before)
        ended = rows[(terminated | truncated) & ~life_lost]
        if len(ended):
            self._log_sums[ended] += np.stack([self._score[ended], self._score[ended], self._length[ended]], axis=1)
            self._log_n[ended] += 1
            self._score[ended] = 0
            self._length[ended] = 0

    def set_key(self, key, down):
        """Keys do not reach the emulator: envs.play's window picks actions with digit keys."""

    def episode_over(self, index):
        """Whether game `index` ended on the last step (not merely a life)."""
        return bool(self._terminals[index]) and self._length[index] == 0

    # ---- logs: per game, PufferLib's vec_log (sums over games, divided by the games counted) ----

    def _averages(self, sums, n):
        if n == 0:
            return {}
        return {**{k: float(v / n) for k, v in zip(LOG_KEYS, sums)}, "n": float(n)}

    def log(self):
        """Game stats since the last call, averaged over the games that ended; {} if none."""
        sums, n = self._log_sums.sum(axis=0), int(self._log_n.sum())
        self._log_sums[:] = 0
        self._log_n[:] = 0
        return self._averages(sums, n)

    def log_counts(self):
        return self._log_n.astype(np.float32)

    def env_log(self, index):
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range [0, {self.num_envs})")
        out = self._averages(self._log_sums[index].copy(), int(self._log_n[index]))
        self._log_sums[index] = 0
        self._log_n[index] = 0
        return out

    def agent_view(self, index=0, scale=1):
        """What agent `index` sees newest: the first frame of its stack (gray, or RGB), as RGB
        [H*scale, W*scale, 3]; what trainer.eval's GIFs and window show."""
        h, w, _ = self.picture
        frame = self._pictures[index, :, :, 0]
        rgb = np.repeat(frame, 3, axis=2) if frame.shape[2] == 1 else frame
        return np.ascontiguousarray(np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1))

    def close(self):
        for vec in getattr(self, "_vecs", []):
            vec.close()
        self._vecs = []

    def __repr__(self):
        return (f"AleEnv({self.name!r}, num_agents={self.num_agents}, picture={self.picture}, "
                f"actions={self.act_sizes[0]}, buffers={self.num_buffers})")
