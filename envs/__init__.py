"""puffgpu envs: PufferLib 5.0-style C env headers stepped on OpenMP threads through cffi.

    import envs
    env = envs.make("platformer", total_agents=1024)
    env.reset(); env.actions[:] = 0; env.step(); env.log()

See envs/vecenv.py for the API, envs/pufferenv.h for the C contract, envs/js/jsenv.py for
JavaScript games, and `python -m envs.play platformer` to play an env yourself.
"""

from .ini import read_ini
from .vecenv import DEFAULT_ENV_KEYS, VecEnv, env_config, env_header_path, env_headers, list_envs
# make: an in-process VecEnv, or servers over shared memory; env_ini_path knows server envs' inis
from .shmvec import ShmVecEnv, env_ini_path, make

__all__ = ["DEFAULT_ENV_KEYS", "ShmVecEnv", "VecEnv", "env_config", "env_header_path", "env_ini_path",
           "env_headers", "list_envs", "make", "read_ini"]
