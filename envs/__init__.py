"""puffgpu envs: PufferLib 5.0-style C env headers, JavaScript games, game servers and DDNet bots,
presented to the trainer as one env interface.

    import envs
    env = envs.make("platformer", total_agents=1024)
    env.reset(); env.actions[:] = 0; env.step(); env.log()

Each env kind is a package that holds all of it, its declaration in its kind.py: envs/c/ (C
headers: the contract, the vecenv, Go-Explore), envs/js/ (JavaScript games), envs/shm/ (game
servers and isolated headers over shared memory), envs/ddnet/ (DDNet bots), envs/ale/ (Atari
games in ALE's C++ vector env: `envs.make("ale:Breakout", 64)`). What they share:
registry.py (a name or path → its kind, file and ini: the KINDS), kind.py (what a kind declares,
what a name resolves to), interface.py (the Env contract and the mechanics every env class
shares), supervisor.py (the processes of envs that run in other processes), build/ (the one
compile-and-cache path), errors.py. envs/ocean/ holds the example envs; `python -m envs.play
platformer` plays one yourself.
"""

from puffbase.ini import read_ini

from .c.env import VecEnv
from .errors import EnvError
from .interface import Env
from .kind import DEFAULT_ENV_KEYS, EnvSource, Kind
from .registry import (KINDS, describe_envs, env_config, env_headers, env_ini_path, env_sources, list_envs, make,
                       resolve)
from .shm.env import ShmVecEnv

__all__ = ["DEFAULT_ENV_KEYS", "KINDS", "Env", "EnvError", "EnvSource", "Kind", "ShmVecEnv", "VecEnv", "describe_envs",
           "env_config", "env_headers", "env_ini_path", "env_sources", "list_envs", "make", "read_ini", "resolve"]
