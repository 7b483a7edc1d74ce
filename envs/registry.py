"""Which env a name or path is: the one place that looks at a file's suffix, an env folder or a kind.

    resolve("platformer")                       # EnvSource(name, kind header, path .../platformer.h, ini)
    resolve("catcher").kind.title               # "JavaScript game": envs/ocean/catcher/catcher.js
    resolve("path/to/my_env.h"), resolve("game.js"), resolve("server.ini")
    resolve("ale:Breakout")                     # a kind named by its prefix: an Atari game (envs/ale/)
    make("platformer", 1024)                    # the env: resolve, then its kind makes it
    list_envs()                                 # every folder of envs/ocean/

An example env is a folder envs/ocean/<name>/ holding the file of one kind (<name>.h, <name>.js,
or a <name>.ini that a server kind claims), with its ini beside it. A path names a file of a kind
anywhere; a kind's prefix and a name name an env of a kind that has no file (`ale:Breakout`). Each kind
declares itself in its package's kind.py; KINDS below registers it.
"""
from __future__ import annotations

import os
from pathlib import Path

from .ale.kind import KIND as ATARI_GAME
from .c.kind import KIND as C_HEADER
from .ddnet.kind import KIND as DDNET_BOTS
from .gym.kind import KIND as GYMNASIUM
from .js.kind import KIND as JS_GAME
from .kind import EnvSource, Kind, wants_isolation
from .pz.kind import KIND as PETTINGZOO
from .shm.kind import KIND as GAME_SERVER
from .shm.kind import isolated

OCEAN_DIR = Path(__file__).resolve().parent / "ocean"

# The env kinds, in the order a file or an env folder is tried: a kind is registered by its line
# here (and the import of its declaration above).
KINDS: tuple[Kind, ...] = (
    C_HEADER,
    JS_GAME,
    DDNET_BOTS,  # before the game servers: an ini that names a DDNet map is a DDNet env's
    GAME_SERVER,
    PETTINGZOO,  # before Gymnasium: a Python file defining parallel_env is a PettingZoo env's
    GYMNASIUM,
    ATARI_GAME,  # named by its prefix (ale:Breakout), never a file
)
FILE_KINDS = tuple(k for k in KINDS if k.suffix is not None)


def _kind_of(path: Path) -> Kind | None:
    """The kind that claims the file `path`, or None."""
    for kind in FILE_KINDS:
        if path.suffix == kind.suffix and (kind.claims is None or kind.claims(path)):
            return kind
    return None


def source_of(path) -> EnvSource:
    """The EnvSource of a file, by its suffix (and, for a suffix several kinds share, its content)."""
    path = Path(path).expanduser().resolve()
    same_suffix = [k for k in FILE_KINDS if k.suffix == path.suffix]
    if not same_suffix:
        what = ", ".join(f"{k.title} ({k.suffix})" for k in FILE_KINDS)
        raise ValueError(f"{path}: an env is a {what}, not a {path.suffix or 'suffix-less'} file")
    if not path.is_file():
        raise FileNotFoundError(f"{same_suffix[0].noun} {path} does not exist")
    kind = _kind_of(path)
    if kind is None:
        raise ValueError(f"{path}: an {path.suffix} file passed as the env must be a server env's: its [env] "
                         f"section needs " + " or ".join(k.mark for k in same_suffix)
                         + f"; for a C env pass its header ({C_HEADER.suffix}) instead")
    return EnvSource(path.stem, kind, path, kind.ini_of(path))


def _folder_source(folder: Path) -> EnvSource | None:
    for kind in FILE_KINDS:
        p = folder / f"{folder.name}{kind.suffix}"
        if p.is_file() and (kind.claims is None or kind.claims(p)):
            return EnvSource(folder.name, kind, p, kind.ini_of(p))
    return None


def env_sources(*folders) -> list:
    """The EnvSource of every env folder under `folders` (default envs/ocean/), by name."""
    out = []
    for folder in folders or (OCEAN_DIR,):
        for sub in sorted(Path(folder).iterdir()):
            src = _folder_source(sub) if sub.is_dir() else None
            if src is not None:
                out.append(src)
    return out


def list_envs() -> list:
    """Names of the example envs: every env folder of envs/ocean/."""
    return [s.name for s in env_sources()]


def describe_envs() -> str:
    """'name (kind), ...' for --help, then the kinds named by a prefix ('ale:<name> (...)')."""
    return ", ".join([f"{s.name} ({s.kind.title})" for s in env_sources()]
                     + [f"{k.prefix}<name> ({k.title})" for k in KINDS if k.prefix])


def env_headers(*folders) -> list:
    """The C env headers among the env folders under `folders` (default envs/ocean/): what the
    sanitizer and the cross-compile checks build."""
    return [s.path for s in env_sources(*folders) if s.kind is C_HEADER]


def _lookup(text: str) -> EnvSource:
    """The resolution itself: a kind's prefixed name ("gym:CartPole-v1", "ale:Breakout"), a name of envs/ocean/ or a path."""
    for kind in KINDS:
        if kind.prefix and text.startswith(kind.prefix):
            return kind.lookup(text[len(kind.prefix):])
    if "/" in text or os.sep in text or Path(text).suffix in {k.suffix for k in FILE_KINDS}:
        return source_of(text)
    src = _folder_source(OCEAN_DIR / text) if (OCEAN_DIR / text).is_dir() else None
    if src is None:
        files = ", ".join(dict.fromkeys(f"{k.noun} path/to/my_env{k.suffix}" for k in FILE_KINDS))
        prefixed = ", ".join(f"{k.prefix}..." for k in KINDS if k.prefix)
        raise ValueError(f"unknown env {text!r}; built-in envs: {', '.join(list_envs())} (or pass the path of "
                         f"your own env: {files}; or a name with a kind's prefix: {prefixed})")
    return src


def resolve(name_or_path) -> EnvSource:
    """A name of envs/ocean/, a path (anything with a folder separator or an env suffix) or a
    kind's prefixed name (`ale:Breakout`) as its EnvSource; an EnvSource is returned as it is, so
    whoever holds one never resolves again."""
    if isinstance(name_or_path, EnvSource):
        return name_or_path
    return _lookup(str(name_or_path))


def env_ini_path(name_or_path) -> Path:
    """The env's ini (may not exist: the env then has only its kind's default [env] keys)."""
    return resolve(name_or_path).ini


def env_config(name_or_path) -> dict:
    """The [env] keys an env accepts, with their defaults (EnvSource.env_config)."""
    return resolve(name_or_path).env_config()


def make(name_or_path, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
         num_buffers=1):
    """Creates `total_agents` agents of an env: a name of envs/ocean/ (list_envs()), the path of a
    file of one of the KINDS (a C env header written to the PufferLib 5.0 contract, a p5.js-style
    JavaScript game, a server env's ini; compiled on first use, then cached), or an EnvSource.

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
    config = dict(config or {})
    options = dict(num_threads=num_threads, seed=seed, check_actions=check_actions, num_buffers=num_buffers)
    if source.kind.isolatable and wants_isolation(config):  # in server processes, over shared memory
        return isolated(source, total_agents, config, **options)
    return source.kind.make(source, total_agents, config, **options)
