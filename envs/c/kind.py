"""The C-header kind's declaration: a .h file written to the PufferLib 5.0 env contract."""
from pathlib import Path

from ..build import load_module
from ..kind import SHM_KEYS, Kind
from .env import GoExploreVecEnv, VecEnv


def header_ini(header: Path) -> Path:
    """<name>.ini beside the header, else PufferLib's layout (ocean/<name>/<name>.h with
    config/<name>.ini a few folders up); the path returned may not exist."""
    beside = header.with_suffix(".ini")
    if beside.is_file():
        return beside
    for parent in list(header.parents)[1:4]:
        candidate = parent / "config" / f"{header.stem}.ini"
        if candidate.is_file():
            return candidate
    return beside


def make(source, total_agents, config, **options):
    """In-process: a VecEnv, or a GoExploreVecEnv when the header includes goexplore.h (with
    `isolate = 1` envs.make runs it in server processes instead: isolatable). The shared-memory
    layer's keys are taken out unless the header reads a key of the same name itself."""
    own = source.env_config()
    for k in SHM_KEYS:
        if k not in own:
            config.pop(k, None)
    cls = GoExploreVecEnv if load_module(source.path).goexplore else VecEnv
    return cls(source, total_agents, config=config, **options)


KIND = Kind(name="header", title="C header", suffix=".h", noun="env header", make=make, ini_of=header_ini,
            isolatable=True)
