"""Python envs (Gymnasium, PettingZoo) as puffgpu envs: in worker processes over the shared-memory
protocol (the default), or in the trainer's own process for debugging (`[env] isolate = 0`).

    env = envs.make("gym:CartPole-v1", 256)                    # 2 workers on 2 cores, 128 envs each
    env = envs.make("gym:CartPole-v1", 8, config={"isolate": 0})   # one process: pdb, prints, tracebacks
    env = envs.make("pz:mpe2.simple_spread_v3", 96)            # 32 envs of 3 agents

Workers: `processes` of them (0: one per usable core, at most one per env), each a Python server
(envs/shm/server.py) running a runner (envs/gym/runner.py, envs/pz/runner.py) over its share of
the envs; the trainer side is ShmVecEnv, so the envs step in parallel without the GIL between
them, and a worker that crashes or hangs is restarted by the supervisor with its agents' episodes
truncated. Before starting them the trainer makes one env itself (a probe), so that a bad id, a
missing package or an unsupported space is one message, not a worker's output.
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

from ..errors import EnvError
from ..interface import EnvBase, check_counts, merge_config, spread_seed, usable_cpus
from ..kind import DEFAULT_ENV_KEYS, SHM_KEYS
from ..shm.env import ShmVecEnv, _Server
from ..shm.protocol import MAX_HEADS
from .runner import LOG_NAMES, make_runner, probe, raised_at

# [env] keys of the Python kinds themselves; every other [env] key is passed to the env's factory
PY_KEYS = {"factory", "reward_scale"}
RESERVED = set(DEFAULT_ENV_KEYS) | set(SHM_KEYS) | PY_KEYS
# what starts a worker: its sys.path is the trainer's (so it imports what the trainer imports,
# puffgpu and the user's modules alike), then envs.gym.worker runs the spec
BOOT = "import sys, json; s = json.loads(sys.argv[1]); sys.path[:0] = s['sys_path']; " \
       "from envs.gym.worker import main; main(s)"


def factory_kwargs(config):
    """The [env] keys passed through to the env's factory ('none' is None)."""
    out = {}
    for k, v in config.items():
        if k in RESERVED:
            continue
        out[k] = None if isinstance(v, str) and v.lower() == "none" else v
    return out


def env_spec(source, config, runner):
    """The JSON-able description a runner is made from (envs/gym/runner.py)."""
    file = source.path if source.path != source.ini else None  # a file (an id resolves to its ini alone)
    factory = (source.target if file else "") or str(config.get("factory", ""))  # pz:file.py:fn names its own
    return {"runner": runner, "name": source.name, "target": source.target,
            "file": str(file) if file else None, "factory": factory,
            "reward_scale": float(config.get("reward_scale", 1.0)), "kwargs": factory_kwargs(config)}


def split_envs(num_envs, procs):
    """Envs per worker: the first num_envs mod procs one more."""
    base, extra = divmod(num_envs, procs)
    return [base + (i < extra) for i in range(procs)]


def plan(source, total_agents, overrides, runner):
    """The config, the spec, the probe's layout and the envs count for `total_agents` agents."""
    defaults = source.env_config()
    # a Python env's factory takes keyword arguments of its own: a key its ini does not name passes too
    defaults.update({k: v for k, v in (overrides or {}).items() if k not in defaults})
    config = merge_config(defaults, overrides, source.name, source.ini)
    spec = env_spec(source, config, runner)
    layout = probe(spec)
    per_env = layout[5]
    num_envs = max(1, -(-int(total_agents) // per_env))  # whole envs until the agents are reached
    return config, spec, layout, num_envs


class PythonEnv(EnvBase):
    """Python envs in this process (`[env] isolate = 0`): the same runner a worker runs, writing
    this object's arrays. For debugging: a breakpoint or a print in the env works, an exception is
    a traceback here."""

    threads_kind = "python"
    num_threads = 1

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
                 num_buffers=1, runner="envs.gym.runner:GymRunner"):
        check_counts(total_agents, seed)
        self.check_actions = check_actions
        self.name, self.source = source.name, source
        self.config, self.spec, _, num_envs = plan(source, total_agents, config, runner)
        self._seed = int(seed)
        self._runner = None
        self._runner = make_runner(self.spec, num_envs)
        r = self._runner
        self.num_envs, self.num_agents = num_envs, r.num_agents
        self.obs_size, self.obs_dtype, self.act_sizes, self.picture = r.obs_size, np.dtype(r.obs_dtype), r.act_sizes, \
            r.picture
        n = self.num_agents
        self._observations = np.zeros((n, self.obs_size), self.obs_dtype)
        self._actions = np.zeros((n, len(self.act_sizes)), np.float32)
        self._rewards = np.zeros(n, np.float32)
        self._terminals = np.zeros(n, np.float32)
        self._truncations = np.zeros(n, np.float32)
        self._action_mask = np.ones((n, sum(self.act_sizes)), np.uint8)
        self._log = np.zeros((num_envs, len(LOG_NAMES)), np.float64)
        r.bind(self._observations, self._rewards, self._terminals, self._truncations,
               self._action_mask if r.has_masks else None, self._add_episode)
        self._setup_actions()
        if not isinstance(num_buffers, (int, np.integer)) or num_buffers < 1 or num_envs % num_buffers:
            raise ValueError(f"num_buffers = {num_buffers} must divide the {num_envs} envs")
        per, k = num_envs // num_buffers, r.agents_per_env
        self.buffers = [(b * per, (b + 1) * per, b * per * k, (b + 1) * per * k) for b in range(num_buffers)]

    def _add_episode(self, e, values):
        row = self._log[e]
        for i, key in enumerate(LOG_NAMES):
            row[i] += 1.0 if key == "n" else values.get(key, 0.0)

    @property
    def truncations(self):
        return self._truncations

    def reset(self, seed=None):
        self._runner.reset(self._seed if seed is None else int(seed))
        np.maximum(self._terminals, self._truncations, out=self._terminals)
        return self._observations

    def step(self, actions=None):
        self._take_actions(actions)
        self._runner.step(self._actions)
        np.maximum(self._terminals, self._truncations, out=self._terminals)

    def step_buffer(self, b, actions=None, threads=None):
        lo, hi, r0, r1 = self.buffers[b]
        self._take_actions(actions, r0, r1)
        self._runner.step(self._actions, lo, hi)
        # the runner writes the protocol's terminals (the game's rule); the trainer's are any end
        np.maximum(self._terminals[r0:r1], self._truncations[r0:r1], out=self._terminals[r0:r1])

    def _averages(self, total):
        n = total[-1]
        if n == 0:
            return {}
        return {**{k: float(v / n) for k, v in zip(LOG_NAMES[:-1], total[:-1])}, "n": float(n)}

    def log(self):
        total = self._log.sum(axis=0)
        self._log[:] = 0
        return self._averages(total)

    def env_log(self, index):
        total = self._log[index].copy()
        self._log[index] = 0
        return self._averages(total)

    def log_counts(self):
        return self._log[:, -1].astype(np.float32)

    def render(self, index=0):
        """env `index`'s own render() as an RGB image (its factory must have been given
        render_mode = rgb_array: `--env.render_mode rgb_array` where the factory takes it)."""
        env = self._runner.envs[index // self._runner.agents_per_env]
        try:
            frame = env.render()
        except Exception as e:  # the env's own code: a renderer it lacks (CartPole's pygame), a bug
            raise EnvError(f"{self.name}: the env's render() failed: {type(e).__name__}: {e}{raised_at(e)}") from e
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise ValueError(f"{self.name}: render() gave {type(frame).__name__}, not an RGB image; pass "
                             f"--env.render_mode rgb_array (an [env] key the factory receives)")
        return np.ascontiguousarray(frame[..., :3].astype(np.uint8))

    def close(self):
        if getattr(self, "_runner", None) is not None:
            self._runner.close()
            self._runner = None

    def __repr__(self):
        return (f"PythonEnv({self.name!r}, num_agents={getattr(self, 'num_agents', '?')}, "
                f"obs_size={getattr(self, 'obs_size', '?')}, act_sizes={getattr(self, 'act_sizes', '?')})")


class PythonWorkerEnv(ShmVecEnv):
    """Python envs in worker processes (the default): ShmVecEnv over servers that run
    envs/gym/worker.py, each over its share of whole envs."""

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
                 num_buffers=1, runner="envs.gym.runner:GymRunner"):
        self._runner_name = runner
        super().__init__(source, total_agents, config, num_threads, seed, check_actions, num_buffers)

    def _setup_command(self, source, total_agents, overrides):
        self.name, self.header, self.source = source.name, None, source
        config, spec, layout, num_envs = plan(source, total_agents, overrides, self._runner_name)
        self.config, self.spec = config, spec
        act_sizes = layout[3]
        if len(act_sizes) > MAX_HEADS:
            raise EnvError(f"{self.name}: {len(act_sizes)} action heads, more than the shared-memory protocol's "
                           f"{MAX_HEADS}; run it in one process with --env.isolate 0")
        self.timeout = float(config["timeout"])
        self.reattach = 0.0
        if not self.timeout > 0:
            raise ValueError(f"{source.ini}: [env] timeout = {config['timeout']!r} must be > 0 (seconds)")
        procs = int(config["processes"]) or usable_cpus()
        procs = max(1, min(procs, num_envs))
        per_env = layout[5]
        self._attach = []
        self._cwd = os.getcwd()
        boot = {**spec, "sys_path": [p for p in sys.path if p]}

        def argv(s):
            return [sys.executable, "-c", BOOT, json.dumps({**boot, "shm": s.name, "envs": s.envs, "seed": s.seed})]
        self._argv = argv
        self.num_agents_asked = int(total_agents)
        for i, count in enumerate(split_envs(num_envs, procs)):
            s = _Server(i, count * per_env, spread_seed(self._seed, i))
            s.envs = count
            self._servers.append(s)

    def __repr__(self):
        return (f"PythonWorkerEnv({self.name!r}, num_agents={self.num_agents}, obs_size={self.obs_size}, "
                f"act_sizes={self.act_sizes}, processes={len(self._servers)})")
