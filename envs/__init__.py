"""puffgpu envs: PufferLib 5.0-style C env headers stepped on OpenMP threads through cffi.

    import envs
    env = envs.make("platformer", total_agents=1024)
    env.reset(); env.actions[:] = 0; env.step(); env.log()

See envs/vecenv.py for the API, envs/pufferenv.h for the C contract, envs/js/jsenv.py for
JavaScript games, and `python -m envs.play platformer` to play an env yourself.
"""

from . import vecenv as _vecenv
from .ini import read_ini
from .vecenv import DEFAULT_ENV_KEYS, VecEnv, env_config, env_header_path, env_headers, env_ini_path, list_envs


def make(name_or_path, total_agents, config=None, num_threads=None, seed=0, check_actions=True, num_buffers=1):
    """envs.vecenv.make: a built-in env name or a C env header's path; a path ending in .js is a
    p5.js-style JavaScript game (envs/js/jsenv.py), which takes the same arguments."""
    if str(name_or_path).endswith(".js"):
        from .js.jsenv import JsEnv
        return JsEnv(name_or_path, total_agents, config=config, num_threads=num_threads, seed=seed,
                     check_actions=check_actions, num_buffers=num_buffers)
    return _vecenv.make(name_or_path, total_agents, config=config, num_threads=num_threads, seed=seed,
                        check_actions=check_actions, num_buffers=num_buffers)

__all__ = ["DEFAULT_ENV_KEYS", "VecEnv", "env_config", "env_header_path", "env_ini_path",
           "env_headers", "list_envs", "make", "read_ini"]
