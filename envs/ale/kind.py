"""The Atari kind's declaration: `--env ale:<Game>` (ale:Breakout, ale:Pong, ale:MsPacman or the ROM
id ale:ms_pacman), any game whose ROM ale-py ships; optional extra [atari].

A game's settings: envs/ale/<rom>.ini when the game has its own (breakout.ini), else the family's,
envs/ale/atari.ini (every Atari game: the Gymnasium v5 game settings and CleanRL's preprocessing)."""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from ..kind import EnvSource, Kind, wants_isolation
from .env import ALE_DEFAULTS, AleEnv, ale_module

HERE = Path(__file__).resolve().parent
FAMILY_INI = HERE / "atari.ini"


def rom_id(game: str) -> str:
    """ALE's ROM id of a game as users write it: Breakout and breakout -> breakout, MsPacman ->
    ms_pacman, SpaceInvaders -> space_invaders (Gymnasium's ids are CamelCase, ALE's snake_case)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", game.strip()).lower()


def game_ini(rom: str) -> Path:
    own = HERE / f"{rom}.ini"
    return own if own.is_file() else FAMILY_INI


def lookup(game: str) -> EnvSource:
    """The EnvSource of `ale:<game>`: its ROM file (ale-py's) and its ini."""
    if not game:
        raise ValueError("ale: needs a game: --env ale:Breakout, ale:Pong, ale:MsPacman, ...")
    ale_py = ale_module(f"--env ale:{game}")
    rom = rom_id(game)
    known = ale_py.roms.get_all_rom_ids()
    if rom not in known:
        close = difflib.get_close_matches(rom, known, n=5)
        raise ValueError(f"ale:{game}: no such Atari game in ale-py {ale_py.__version__} (ROM id {rom!r}); "
                         + (f"did you mean {', '.join(close)}? " if close else "")
                         + f"{len(known)} games: {', '.join(sorted(known))}")
    return EnvSource(f"ale_{rom}", KIND, Path(ale_py.roms.get_rom_path(rom)), game_ini(rom))


def make(source, total_agents, config, **options):
    """The games in ale-py's C++ vector env; the shared-memory layer's keys do not apply."""
    if wants_isolation(config):
        raise ValueError(f"ale:{source.name}: [env] isolate is for C env headers; ALE's emulators run in its own "
                         f"C++ vector env")
    for k in ("isolate", "processes", "timeout", "reattach"):
        config.pop(k, None)
    return AleEnv(source, total_agents, config, **options)


KIND = Kind(name="ale", title="Atari game (ALE)", suffix=None, noun="Atari game", make=make,
            defaults=ALE_DEFAULTS, prefix="ale:", lookup=lookup)
