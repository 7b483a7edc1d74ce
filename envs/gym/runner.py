"""Python envs stepped into puffgpu's arrays: the loop a worker process runs (envs/gym/worker.py)
and the one-process mode runs in the trainer.

    runner = GymRunner(spec, count=64)          # 64 Gymnasium envs made from spec (below)
    runner.bind(obs, rewards, terminals, truncations, masks, on_episode)   # rows 0..63 of each
    runner.reset(seed)                          # env i: reset(seed=seed + i)
    runner.step(actions)                        # one step of every env, autoreset in the same step

spec (a JSON-able dict, so that a worker process can rebuild it): {"runner": "module:Class",
"target": a Gymnasium id or "module.path:function", "file": a .py file or None, "factory": the
function's name in the file, "reward_scale": what rewards are multiplied by (the trainer clamps
them to [-1, 1]; episode returns are logged unscaled), "kwargs": the [env] keys passed through}.

Episodes end the PufferLib way: on the step where Gymnasium says terminated or truncated, the env
is reset at once and the row gets that step's reward, terminal = terminated, truncation =
truncated (the trainer's terminals are their OR), and the *new* episode's first observation (the last observation of the
ended episode is not shown, as in every PufferLib env). Gymnasium's vector envs defer the reset
to the next step instead (next-step autoreset: that step ignores its action and returns the first
observation with reward 0); puffgpu's stream is theirs with those reset steps taken out, which
tests/test_gym.py checks against gymnasium.vector.SyncVectorEnv.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

import numpy as np

from ..errors import EnvError
from .spaces import ActLayout, ObsLayout, gym_spaces, require

# what every Python env logs per finished episode (the n field counts them); score is the return,
# the key the dashboard shows for every env
LOG_NAMES = ("episode_return", "episode_length", "score", "n")


def import_target(target, what):
    """'module.path:function' → the function (or a module attribute)."""
    module, _, name = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise EnvError(f"{what}: cannot import {module!r}: {e}") from None
    if not name:
        return mod
    try:
        return getattr(mod, name)
    except AttributeError:
        raise EnvError(f"{what}: module {module!r} has no {name!r}") from None


def load_file(path, name, what):
    """The function `name` of the Python file `path` (run as a module of its own; its folder is
    importable, so it may import its neighbours)."""
    path = Path(path)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    key = f"_puffgpu_env_{path.stem}_{abs(hash(str(path)))}"
    mod = sys.modules.get(key)
    if mod is None:
        spec = importlib.util.spec_from_file_location(key, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as e:
            del sys.modules[key]
            raise EnvError(f"{what}: running {path} failed: {type(e).__name__}: {e}") from e
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise EnvError(f"{what}: {path} defines no function {name}() (set [env] factory = <name> in its ini for "
                       f"another name)")
    return fn


def call(factory, what, *args, label=None, passthrough=(), **kwargs):
    """factory(*args, **kwargs); what it raises (but EnvError and `passthrough`) is one message that
    names the call and where it raised, a keyword it does not take with a hint."""
    name = label or getattr(factory, "__name__", "the factory")
    shown = f"{name}({', '.join([*map(repr, args), *(f'{k}={v!r}' for k, v in kwargs.items())])})"
    try:
        return factory(*args, **kwargs)
    except (EnvError, *passthrough):
        raise
    except Exception as e:  # the env's own code: the message says where, `from e` keeps the traceback
        if isinstance(e, TypeError) and "argument" in str(e):
            raise EnvError(f"{what}: {shown}: {e} (every [env] key other than the trainer's is passed to it)") from None
        raise EnvError(f"{what}: {shown} raised {type(e).__name__}: {e}{raised_at(e)}") from e


def raised_at(error) -> str:
    """' at FILE:LINE in FUNCTION' of the line that raised `error`, or ''."""
    frames = traceback.extract_tb(error.__traceback__)
    return f" at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""


def make_runner(spec, count):
    """The runner class a spec names, with `count` envs (or, for PettingZoo, envs of agents)."""
    cls = import_target(spec["runner"], "puffgpu")
    return cls(spec, count)


class Runner:
    """What both runners share: the layouts, the arrays they write, episode bookkeeping."""

    def bind(self, observations, rewards, terminals, truncations, masks, on_episode):
        """The arrays of this runner's rows (numpy views: a worker's shared block, or the
        in-process env's own) and on_episode(env_index, {field: value}) for finished episodes.
        As in the shared-memory protocol, `terminals` is 1 where the episode ended by the game's
        rules (Gymnasium's terminated), `truncations` where it was cut short (truncated); a
        reader's episode end is their OR. masks may be None when the layout has none."""
        self.observations, self.rewards, self.terminals, self.truncations = observations, rewards, terminals, truncations
        self.masks, self.on_episode = masks, on_episode
        if masks is not None:
            masks[:] = 1

    # the layout, as the worker's Server and the in-process env read it
    @property
    def act_sizes(self):
        return self.act.sizes

    @property
    def obs_size(self):
        return self.obs.size

    @property
    def obs_dtype(self):
        return self.obs.dtype

    @property
    def picture(self):
        return self.obs.picture

    def _clear_step(self):
        """No reward and no episode end in any row: what a reset leaves."""
        self.rewards[:] = 0
        self.terminals[:] = 0
        self.truncations[:] = 0

    def close(self):
        for e in self.envs:
            try:
                e.close()
            except Exception:
                pass


class GymRunner(Runner):
    """`count` Gymnasium envs, one agent (row) each."""

    def __init__(self, spec, count):
        self.spec = spec
        what = spec.get("name", "env")
        if spec.get("file"):
            factory = load_file(spec["file"], spec["factory"], what)
            self._make = lambda seed: call(factory, what, seed, **spec["kwargs"])
        else:
            gym = require("gymnasium", "Gymnasium", "gym")
            target = spec["target"]

            def make(seed):  # gymnasium.make also takes "module:Id-v0", importing the module first
                try:
                    return call(gym.make, what, target, label="gymnasium.make", passthrough=(gym.error.Error,),
                                **spec["kwargs"])
                except gym.error.Error as e:
                    hint = ""
                    if isinstance(e, gym.error.NameNotFound) and ":" not in target:
                        hint = (f"; an id that another package registers needs that package imported first: "
                                f"gym:<package>:{target} (gym:minigrid:MiniGrid-Empty-8x8-v0, gym:ale_py:ALE/Breakout-v5)")
                    raise EnvError(f"{what}: gymnasium.make({target!r}): {type(e).__name__}: {str(e).rstrip('.')}{hint}") from None
            self._make = make
        self.scale = float(spec.get("reward_scale", 1.0))
        self.envs = []
        try:
            for i in range(count):
                self.envs.append(self._checked(self._make(i)))
        except BaseException:
            self.close()
            raise
        first = self.envs[0]
        self.act = ActLayout(first.action_space)
        self.obs = ObsLayout(first.observation_space, mask_size=sum(self.act.sizes))
        self.has_masks = self.obs.mask_path is not None
        self.agents_per_env = 1
        self.num_agents = count
        self.ret = np.zeros(count, np.float64)
        self.len = np.zeros(count, np.int64)
        self._discrete = self.act.discrete_only
        self._base = int(self.act.leaves[0].base[0]) if self._discrete else 0

    def _checked(self, env):
        if not (hasattr(env, "step") and hasattr(env, "reset") and hasattr(env, "observation_space")):
            raise EnvError(f"{self.spec.get('name', 'env')}: the factory returned {type(env).__name__}, not a "
                           f"Gymnasium env (an object with reset, step, observation_space and action_space)")
        if hasattr(env, "num_envs") and getattr(env, "num_envs", 1) != 1 and hasattr(env, "single_action_space"):
            raise EnvError(f"{self.spec.get('name', 'env')}: the factory returned a vector env ({type(env).__name__}); "
                           f"return one env: puffgpu makes many and steps them in worker processes")
        return env

    def _write(self, i, obs):
        if self.has_masks:
            self.obs.write_mask(obs, self.masks[i])
        self.obs.write(obs, self.observations[i])

    def reset(self, seed):
        """Every env reset with seed + its index (Gymnasium's vector envs seed theirs alike)."""
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=int(seed) + i)
            self._write(i, obs)
        self.ret[:] = 0
        self.len[:] = 0
        self._clear_step()

    def step(self, actions, lo=0, hi=None):
        """One step of envs [lo, hi) with their rows of `actions`."""
        hi = len(self.envs) if hi is None else hi
        envs, ret, length = self.envs, self.ret, self.len
        rewards, terminals, truncations = self.rewards, self.terminals, self.truncations
        read, scale = self.act.read, self.scale
        for i in range(lo, hi):
            a = int(actions[i, 0]) + self._base if self._discrete else read(actions[i])
            obs, r, term, trunc, _ = envs[i].step(a)
            r = float(r)
            ret[i] += r
            length[i] += 1
            if term or trunc:
                self.on_episode(i, {"episode_return": ret[i], "episode_length": float(length[i]), "score": ret[i]})
                ret[i] = 0.0
                length[i] = 0
                obs, _ = envs[i].reset()
            self._write(i, obs)
            rewards[i] = r * scale
            terminals[i] = 1.0 if term else 0.0
            truncations[i] = 1.0 if trunc else 0.0


def probe(spec):
    """One env of the spec made in this process and mapped (the trainer does it before starting
    workers, so a bad id, a missing package or an unsupported space is one message here); returns
    the runner's layout: (obs_size, obs_dtype, picture, act_sizes, has_masks, agents_per_env)."""
    gym_spaces()
    runner = make_runner(spec, 1)
    try:
        return (runner.obs_size, runner.obs_dtype, runner.picture, runner.act_sizes, runner.has_masks,
                runner.agents_per_env)
    finally:
        runner.close()
