"""The Gymnasium kind's declaration: `gym:ID` for any registered id, or a Python file whose
factory makes one env (`make_env(seed, **[env] keys)`, or the function [env] factory names).

The training ini of `gym:ID` is envs/gym/ini/<ID>.ini ('/' in an id as '-'; for `gym:module:ID`,
which imports the module that registers ID first, the same), of a file the ini beside it; without
one, envs/gym/default.ini.
"""
from pathlib import Path

from ..kind import SHM_KEYS, EnvSource, Kind, beside, wants_isolation
from .env import PythonEnv, PythonWorkerEnv, PY_KEYS

HERE = Path(__file__).resolve().parent
INI_DIR = HERE / "ini"  # the training settings of Gymnasium ids, one <id>.ini each
TRAINING_INI = HERE / "default.ini"  # a Python env's settings when it has no ini of its own
# isolate = 1: workers by default (`--env.isolate 0`: the trainer's process); processes = 0: one per
# core; reward_scale multiplies the rewards the trainer sees (it clamps them to [-1, 1]), not the
# logged returns
DEFAULTS = {**SHM_KEYS, "isolate": 1, "factory": "make_env", "reward_scale": 1.0}
assert set(PY_KEYS) <= set(DEFAULTS)
# trainer.eval steps the envs in its own process: it counts each env's first episodes, and a worker
# process is one "env" of many to it (its first episodes to finish, short ones first)
EVALUATION = {"isolate": 0}


def safe_name(text: str) -> str:
    """An id as a name for folders (checkpoints/<name>/, logs/<name>/): '/' and ':' as '-'."""
    return text.replace("/", "-").replace(":", "-")


def make_python_env(source, total_agents, config, runner, **options):
    """In worker processes unless `[env] isolate = 0`."""
    cls = PythonWorkerEnv if wants_isolation({**source.env_config(), **config}) else PythonEnv
    return cls(source, total_agents, config, runner=runner, **options)


def make(source, total_agents, config, **options):
    return make_python_env(source, total_agents, config, "envs.gym.runner:GymRunner", **options)


def lookup(env_id: str) -> EnvSource:
    if not env_id:
        raise ValueError("gym: needs a Gymnasium id after it, e.g. gym:CartPole-v1")
    name = safe_name(env_id.rsplit(":", 1)[-1])  # "minigrid:MiniGrid-Empty-8x8-v0": the id after the module
    ini = INI_DIR / f"{name}.ini"
    return EnvSource(name, KIND, ini, ini, target=env_id)


KIND = Kind(name="gym", title="Gymnasium env", suffix=".py", noun="Python env file", make=make, ini_of=beside,
            defaults=DEFAULTS, training=TRAINING_INI, prefix="gym:", lookup=lookup, open_keys=True,
            evaluation=EVALUATION)
