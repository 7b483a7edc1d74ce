"""The env interface: what the trainer, eval, play, the viewer and Go-Explore call on an env, and
the mechanics every env class shares (arrays, action checks, config merging, seeds, buffers).

The env classes, one per kind package: C headers in-process through cffi (envs/c/env.py: VecEnv,
GoExploreVecEnv), JavaScript games (envs/js/env.py: JsEnv, a VecEnv), envs in other processes over
shared memory (envs/shm/env.py: ShmVecEnv, game servers and headers run isolated) and DDNet bots
(envs/ddnet/env.py: DDNetEnv). envs.make resolves the env and its kind makes one; `Env` is the
contract they meet, checked over every kind by tests/test_env_interface.py.
"""
from __future__ import annotations

import os
from typing import Protocol, runtime_checkable

import numpy as np

from puffbase.ini import parse_value

# The [env] keys that declare a picture, in env.picture's order.
PICTURE_KEYS = ("picture_height", "picture_width", "picture_channels")


@runtime_checkable
class Env(Protocol):
    """N = num_agents agents; the arrays are the same objects for the env's life (read
    `observations` and `rewards` again after a server restart: they may be views of a new block).

    observations [N, obs_size] obs_dtype; actions [N, len(act_sizes)] f32 (a head of size 1 is
    continuous, else indices); rewards, terminals [N] f32 (terminal 1: the episode ended on this
    step and the env already reset itself); action_mask [N, sum(act_sizes)] u8.
    picture: (height, width, channels) of the picture at the end of each observation row, or None.
    Buffers (PufferLib's num_buffers): groups of whole envs, rows buffer_rows(b), stepped alone by
    step_buffer(b), which releases the GIL.

    Optional, where an env class has it: render(index) (an RGB image of one env), has_scripted and
    scripted_actions() (a rule-based policy), set_key(key, down) (keyboard input for play),
    set_clear_outputs(on), truncations [N], Go-Explore's archive methods (archive_stats,
    save_archive, reset_real, ...: envs/c/goexplore.py, for a header that includes goexplore.h),
    save_state/load_state (servers that offer it), a JS game's game_state/final/frame/reset_seed.
    """
    name: str
    num_agents: int
    num_envs: int
    obs_size: int
    obs_dtype: np.dtype
    act_sizes: tuple
    picture: tuple | None
    config: dict
    num_threads: int
    threads_kind: str
    check_actions: bool

    @property
    def observations(self) -> np.ndarray: ...
    @property
    def actions(self) -> np.ndarray: ...
    @property
    def rewards(self) -> np.ndarray: ...
    @property
    def terminals(self) -> np.ndarray: ...
    @property
    def action_mask(self) -> np.ndarray: ...
    @property
    def num_buffers(self) -> int: ...

    def reset(self): ...
    def step(self, actions=None): ...
    def step_buffer(self, b, actions=None, threads=None): ...
    def buffer_rows(self, b) -> tuple: ...
    def log(self) -> dict: ...
    def env_log(self, index) -> dict: ...
    def log_counts(self) -> np.ndarray: ...
    def episode_over(self, index) -> bool: ...
    def agent_view(self, index=0, scale=1) -> np.ndarray: ...
    # at rollout end and at checkpoints, naming no env feature (a Go-Explore env: its archive)
    def epoch_metrics(self) -> dict: ...
    def save_extras(self, checkpoint) -> list: ...
    def restore_extras(self, checkpoint) -> list: ...
    def close(self): ...


def usable_cpus():
    """CPUs this process may run on (its affinity mask where the OS has one: Linux), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def spread_seed(seed, index):
    """The seed of the index-th env, server or process of a vecenv seeded `seed`."""
    return (int(seed) + int(index) * 0x9E3779B9) & 0xFFFFFFFF


def check_counts(total_agents, seed):
    if not isinstance(total_agents, (int, np.integer)) or total_agents < 1:
        raise ValueError(f"total_agents must be a positive int, got {total_agents!r}")
    if not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be an int in [0, 2**32), got {seed!r}")


def merge_config(defaults, overrides, env, ini, skip=()):
    """`defaults` (an env's [env] keys: EnvSource.env_config) updated by `overrides`. Values are
    numbers (true/false count as 1/0) or, for keys whose default is text (a map file, a command, a
    JS action table), strings. An unknown key, or a number key given a non-number, is a ValueError
    that says what would be right. Keys in `skip` are the env class's own and left out."""
    config = dict(defaults)
    for key, value in (overrides or {}).items():
        if key in skip:
            continue
        if key not in config:
            raise ValueError(f"unknown [env] key {key!r} for {env}; valid keys: {', '.join(sorted(config))}")
        if isinstance(value, str):
            value = parse_value(value)
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        if isinstance(value, (np.integer, np.floating)):
            value = value.item()
        is_number = isinstance(value, (int, float))
        if isinstance(config[key], str) and not is_number and value is not None:
            config[key] = str(value)
            continue
        if not is_number or not np.isfinite(value):
            raise ValueError(f"[env] {key} must be a finite number, got {value!r}")
        config[key] = value
    for key, value in config.items():
        if isinstance(value, bool):
            config[key] = int(value)
        elif not isinstance(value, (int, float, str)):
            raise ValueError(f"[env] {key} = {value!r} in {ini}: env config values must be numbers or text")
    return config


class EnvBase:
    """The mechanics every env class shares. An env class sets name, act_sizes, obs_size, obs_dtype,
    picture and buffers ([(env_lo, env_hi, row_lo, row_hi)]), and calls _make_arrays (or sets the
    arrays itself) and _setup_actions."""

    check_actions = True

    def _setup_actions(self):
        self._act_hi = np.array(self.act_sizes, dtype=np.float32)
        self._continuous = self._act_hi == 1  # PufferLib: a head of size 1 is continuous

    # numpy arrays the env writes in place; properties so they cannot be rebound by mistake
    @property
    def observations(self):
        return self._observations

    @property
    def actions(self):
        return self._actions

    @property
    def rewards(self):
        return self._rewards

    @property
    def terminals(self):
        return self._terminals

    @property
    def action_mask(self):
        return self._action_mask

    @property
    def num_buffers(self):
        return len(self.buffers)

    def buffer_rows(self, b):
        """Agent rows [lo, hi) of buffer b."""
        return self.buffers[b][2], self.buffers[b][3]

    def _take_actions(self, actions, r0=0, r1=None):
        """Copies `actions` (if given) into rows [r0, r1) of env.actions, then checks those rows."""
        r1 = self._actions.shape[0] if r1 is None else r1
        if actions is not None:
            actions = np.asarray(actions)
            want = (r1 - r0, self._actions.shape[1])
            if actions.shape != want:
                rows = "num_agents" if (r0, r1) == (0, self._actions.shape[0]) else f"rows {r0}..{r1 - 1}"
                raise ValueError(f"actions must have shape {want} ({rows}, action heads), got {actions.shape}")
            np.copyto(self._actions[r0:r1], actions, casting="unsafe")
        if self.check_actions:
            self._validate_actions(r0, r1)

    def _validate_actions(self, r0=0, r1=None):
        a = self._actions[r0:r1]
        # NaN fails every comparison, so one pass catches NaN, inf, range and non-integers.
        ok = (a >= 0) & (a < self._act_hi) & (a == np.floor(a))
        if self._continuous.any():
            ok |= self._continuous & np.isfinite(a)
        if ok.all():
            return
        agent, head = (int(i) for i in np.argwhere(~ok)[0])
        size = self.act_sizes[head]
        want = "a finite float (a continuous head)" if size == 1 else f"an integer in [0, {size - 1}]"
        raise ValueError(f"{self.name}: action of agent {agent + r0}, head {head} is "
                         f"{a[agent, head]!r}; it must be {want} "
                         f"(head sizes {tuple(self.act_sizes)}); {int((~ok).sum())} invalid in total")

    def agent_view(self, index=0, scale=1):
        """What agent `index` sees: its observation's picture as an RGB image np.uint8
        [H*scale, W*scale, 3] (grayscale repeated into R, G, B; float pictures ×255), each
        picture pixel a scale×scale block. A ValueError for an env without a picture."""
        if self.picture is None:
            raise ValueError(f"{self.name} declares no picture (PICTURE_* macros or [env] picture_* keys)")
        h, w, c = self.picture
        pic = self.observations[index, self.obs_size - h * w * c:].reshape(h, w, c)
        if self.obs_dtype != np.uint8:
            pic = np.clip(np.rint(pic.astype(np.float64) * 255.0), 0, 255)
        pic = pic.astype(np.uint8)
        rgb = pic[..., :3] if c >= 3 else np.repeat(pic[..., :1], 3, axis=2)
        return np.ascontiguousarray(np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1))

    def episode_over(self, index):
        """Whether agent `index`'s episode, as the env logs it, ended on the last step: its terminal,
        unless the env's terminals are finer than its episodes (an Atari game's lives)."""
        return bool(self.terminals[index])

    def epoch_metrics(self):
        """What a trainer logs at the end of each rollout, as env/<key>: the episode stats of log()."""
        return self.log()

    def save_extras(self, checkpoint):
        """Saves beside `checkpoint` what resuming needs beyond the weights; returns the files."""
        return []

    def restore_extras(self, checkpoint):
        """Loads what save_extras saved; returns lines for the user."""
        return []

    has_scripted = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
