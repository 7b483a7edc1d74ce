"""puffgpu envs: PufferLib 5.0-style C env headers, JavaScript games and game servers, presented
to the trainer as one vecenv interface.

    import envs
    env = envs.make("platformer", total_agents=1024)
    env.reset(); env.actions[:] = 0; env.step(); env.log()

envs/vec/ is the Python runtime (registry.py: names and paths → kind; interface.py: the Env
contract; cvec.py, jsvec.py, shmvec.py: the backends), envs/c/ the C runtime (pufferenv.h, the
vecenv), envs/js/ the JavaScript engine, envs/shm/ the shared-memory protocol, envs/ocean/ the
example envs. `python -m envs.play platformer` plays an env yourself.
"""

from puffbase.ini import read_ini

from .errors import EnvError
from .vec.backends import make
from .vec.cvec import VecEnv
from .vec.interface import Env
from .vec.registry import (DEFAULT_ENV_KEYS, KINDS, EnvSource, describe_envs, env_config, env_headers,
                           env_ini_path, env_sources, list_envs, resolve)
from .vec.shmvec import ShmVecEnv

__all__ = ["DEFAULT_ENV_KEYS", "KINDS", "Env", "EnvError", "EnvSource", "ShmVecEnv", "VecEnv", "describe_envs", "env_config",
           "env_headers", "env_ini_path", "env_sources", "list_envs", "make", "read_ini", "resolve"]
