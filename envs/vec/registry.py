"""Which env a name or path is: the one place that looks at a file's suffix or an env folder.

    resolve("platformer")                       # EnvSource(name, kind "header", path .../platformer.h, ini)
    resolve("catcher").kind                     # "js": envs/ocean/catcher/catcher.js
    resolve("path/to/my_env.h"), resolve("game.js"), resolve("server.ini")
    list_envs()                                 # every folder of envs/ocean/
    env_config("arena")                         # the [env] keys it accepts, with their defaults

An example env is a folder envs/ocean/<name>/ holding one of <name>.h (a C header), <name>.js (a
JavaScript game) or <name>.ini naming a server command or the blocks to attach (a server env),
with its ini beside it. A path names a file of one of those kinds anywhere. Running a header in
server processes (`[env] isolate = 1`) is a way to run a header, chosen by envs.make.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from puffbase.ini import read_ini


ENVS_DIR = Path(__file__).resolve().parent.parent
OCEAN_DIR = ENVS_DIR / "ocean"
KINDS = {"header": "C header", "js": "JavaScript game", "server": "game server", "ddnet": "DDNet bots"}
SUFFIXES = {".h": "header", ".js": "js", ".ini": "server"}

# PufferLib 5.0's default.ini [env] section: in every env's config, so a trainer can pass the
# merged [env] section and headers may read these keys with dict_get.
DEFAULT_ENV_KEYS = {"dr": 0, "num_agents": 1, "num_bots": 0}
# A JavaScript game's keys (envs/vec/jsvec.py): defaults of the [js] (or [env]) section of its ini.
DEFAULT_ACTIONS = "0 | 37 | 39 | 38 | 40 | p32 | 37 p32 | 39 p32"
JS_DEFAULTS = {"picture_width": 64, "picture_height": 64, "picture_channels": 3, "actions": DEFAULT_ACTIONS,
               "max_steps": 2000, "frameskip": 1, "memory_mb": 64, "step_mops": 100, "rasterize": 1,
               "native_p5": 1}
# the training settings (trainer/config.py) of a JS game with no ini beside it
JS_GAME_INI = ENVS_DIR / "js" / "default.ini"
# [env] keys of the shared-memory layer (envs/vec/shmvec.py), never passed to a C env's puf_init
SHM_KEYS = {"isolate": 0, "processes": 0, "timeout": 30.0, "reattach": 60.0}
# an ini is a server env's when its [env] section has one of these
SERVER_MARKS = ("command", "attach")
# ... and a DDNet env's (envs/vec/ddnetvec.py: bots on DDNet-Server processes) when it names a map
DDNET_MARK = "ddnet_map"
# a DDNet env's [env] keys and their defaults
DDNET_DEFAULTS = {
    "ddnet_map": "Tutorial", "ddnet_server": "/usr/games/DDNet-Server",
    # server commands run at start (tunes: bots pass through and cannot hook each other)
    "ddnet_settings": "tune player_collision 0; tune player_hooking 0",
    "servers": 0, "bots_per_server": 32, "ticks_per_decision": 5, "episode_seconds": 40.0, "stuck_seconds": 3.0,
    "window_width": 15, "window_height": 11, "tile_reward": 0.1, "freeze_penalty": 0.01, "finish_bonus": 10.0,
    "death_penalty": 1.0, "timeout": 5.0}


@dataclass(frozen=True)
class EnvSource:
    """What a name or path stands for: `kind` (a key of KINDS), the source file (`path`: the .h,
    the .js, or the server's .ini) and the env's ini (`ini`, which may not exist)."""
    name: str
    kind: str
    path: Path
    ini: Path

    @property
    def ini_sections(self) -> tuple:
        """The sections of its ini that hold [env] keys: a JS game's [js] section too."""
        return ("env", "js") if self.kind == "js" else ("env",)

    @property
    def has_browser_page(self) -> bool:
        """Whether `python -m envs.play --browser` can serve it (envs/js/web/: a JS game)."""
        return self.kind == "js"

    @property
    def kind_defaults(self) -> dict:
        """[env] keys every env of this kind has, without an ini."""
        return dict(JS_DEFAULTS) if self.kind == "js" else dict(DDNET_DEFAULTS) if self.kind == "ddnet" else {}


def _ini_kind(path: Path) -> str | None:
    """"ddnet" or "server" for an env ini that is one (by its [env] keys), else None."""
    env = read_ini(path).get("env", {})
    if DDNET_MARK in env:
        return "ddnet"
    return "server" if any(k in env for k in SERVER_MARKS) else None


def _header_ini(header: Path) -> Path:
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


def source_of(path) -> EnvSource:
    """The EnvSource of a file, by its suffix."""
    path = Path(path).expanduser().resolve()
    kind = SUFFIXES.get(path.suffix)
    if kind is None:
        raise ValueError(f"{path}: an env is a C header (.h), a JavaScript game (.js) or a server's "
                         f"ini (.ini), not a {path.suffix or 'suffix-less'} file")
    what = {"header": "env header", "js": "JS game", "server": "env ini"}[kind]
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist")
    if kind == "server":
        kind = _ini_kind(path)
        if kind is None:
            raise ValueError(f"{path}: an ini passed as the env must be a server env's: its [env] section "
                             f"needs command = ... (a server to start), attach = /name0,... (running "
                             f"servers) or {DDNET_MARK} = ... (bots on DDNet servers); for a C env pass its "
                             f"header (.h) instead")
    ini = _header_ini(path) if kind == "header" else path.with_suffix(".ini")
    return EnvSource(path.stem, kind, path, ini)


def _folder_source(folder: Path) -> EnvSource | None:
    name = folder.name
    for suffix, kind in SUFFIXES.items():
        p = folder / f"{name}{suffix}"
        if p.is_file() and kind == "server":
            kind = _ini_kind(p)
        if p.is_file() and kind is not None:
            return EnvSource(name, kind, p, p.with_suffix(".ini"))
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
    """'name (kind), ...' for --help."""
    return ", ".join(f"{s.name} ({KINDS[s.kind]})" for s in env_sources())


def env_headers(*folders) -> list:
    """The C env headers among the env folders under `folders` (default envs/ocean/)."""
    return [s.path for s in env_sources(*folders) if s.kind == "header"]


def resolve(name_or_path) -> EnvSource:
    """A name of envs/ocean/ or a path (anything with a folder separator or an env suffix)."""
    if isinstance(name_or_path, EnvSource):
        return name_or_path
    s = str(name_or_path)
    if "/" in s or os.sep in s or Path(s).suffix in SUFFIXES:
        return source_of(s)
    src = _folder_source(OCEAN_DIR / s) if (OCEAN_DIR / s).is_dir() else None
    if src is None:
        raise ValueError(f"unknown env {s!r}; built-in envs: {', '.join(list_envs())} (or pass the path of "
                         f"your own env: a header path/to/my_env.h, a game.js or a server's .ini)")
    return src


def env_ini_path(name_or_path) -> Path:
    """The env's ini (may not exist: the env then has only its kind's default [env] keys)."""
    return resolve(name_or_path).ini


def env_config(name_or_path) -> dict:
    """The [env] keys an env accepts, with their defaults: PufferLib's default [env] keys, its
    kind's (a JS game's picture and action table, a server's shared-memory keys), then those of
    its ini."""
    src = resolve(name_or_path)
    config = {**DEFAULT_ENV_KEYS, **src.kind_defaults, **(SHM_KEYS if src.kind == "server" else {})}
    if src.ini.is_file():
        data = read_ini(src.ini)
        for section in src.ini_sections:
            config.update(data.get(section, {}))
    return config
