"""envs.make: the env's kind (registry.resolve) picks its backend."""
from __future__ import annotations

from puffbase.ini import parse_value

from ..build import load_module
from .cvec import GoExploreVecEnv, VecEnv
from .interface import Env
from .jsvec import JsEnv
from .registry import SHM_KEYS, env_config, resolve
from .shmvec import ShmVecEnv


def _flag(value):
    return parse_value(value) if isinstance(value, str) else value


def make(name_or_path, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
         num_buffers=1) -> Env:
    """Creates `total_agents` agents of an env: a name of envs/ocean/ (list_envs()) or the path of
    a C env header written to the PufferLib 5.0 contract, a p5.js-style JavaScript game (.js) or a
    server env's ini (compiled on first use, then cached).

    config: [env] key -> value overrides of the env's ini; an unknown key is a ValueError that
        lists the valid ones. `isolate = 1` runs a C header in server processes (`processes`,
        `timeout`: the shared-memory layer's keys, taken out before the env sees the config).
    num_threads: threads stepping the envs (None: all usable CPUs); capped at the usable CPUs and
        the number of envs. OpenMP's when the compiler has it, else the vecenv's own
        (env.threads_kind says which).
    seed: mixed with each env's index into env.rng; same seed + same actions = same episodes.
    check_actions: validate env.actions on every step (cheap, vectorized); the attribute
        env.check_actions can be flipped later for a hot loop.
    num_buffers: PufferLib's env buffers: the agents split into this many contiguous groups of
        whole envs, each stepped alone with env.step_buffer(b) (env.step() steps all).
    """
    source = resolve(name_or_path)
    kw = dict(num_threads=num_threads, seed=seed, check_actions=check_actions, num_buffers=num_buffers)
    return BACKENDS[source.kind](source, total_agents, dict(config or {}), kw)


def _server(source, total_agents, config, kw):
    return ShmVecEnv(source, total_agents, config, **kw)


def _js(source, total_agents, config, kw):
    if _flag(config.get("isolate", 0)):
        raise ValueError(f"{source.path}: [env] isolate is for C env headers; a JS game runs in its own "
                         f"JS runtime per env already")
    for k in SHM_KEYS:
        config.pop(k, None)
    return JsEnv(source.path, total_agents, config=config, **kw)


def _header(source, total_agents, config, kw):
    if _flag(config.get("isolate", 0)):
        return ShmVecEnv(source, total_agents, config, isolate=True, **kw)
    own = env_config(source)
    for k in SHM_KEYS:
        if k not in own:  # a C env that reads a key of the same name keeps it
            config.pop(k, None)
    cls = GoExploreVecEnv if load_module(source.path).goexplore else VecEnv
    return cls(source.path, total_agents, config=config, **kw)


def _ddnet(source, total_agents, config, kw):
    from .ddnetvec import DDNetEnv  # its C client is built on first use
    if _flag(config.get("isolate", 0)):
        raise ValueError(f"{source.path}: [env] isolate is for C env headers; a DDNet env's bots play on "
                         f"DDNet server processes already")
    for k in ("isolate", "processes", "reattach"):  # the shared-memory layer's (timeout is shared: see its ini)
        config.pop(k, None)
    kw.pop("num_threads", None)
    return DDNetEnv(source, total_agents, config, **kw)


# the env's kind (registry.KINDS) -> its backend
BACKENDS = {"header": _header, "js": _js, "server": _server, "ddnet": _ddnet}
