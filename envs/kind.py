"""An env kind's declaration (Kind) and what a name or path resolves to (EnvSource).

Each kind is a package of envs/ (envs/c/ C headers, envs/js/ JavaScript games, envs/shm/ game
servers, envs/ddnet/ DDNet bots, envs/ale/ Atari games) whose kind.py declares it with one Kind,
registered by one line in envs/registry.py. The registry is the only place that asks which kind a file is; everything
downstream holds the EnvSource it returned and asks the source, never the kind's name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from puffbase.ini import parse_value, read_ini

# PufferLib 5.0's default.ini [env] section: in every env's config, so a trainer can pass the
# merged [env] section and headers may read these keys with dict_get.
DEFAULT_ENV_KEYS = {"dr": 0, "num_agents": 1, "num_bots": 0}
# [env] keys of the shared-memory layer (envs/shm/), never passed to a C env's puf_init. The
# trainer's default.ini carries isolate, processes and timeout for every env: each kind's make
# takes out those it has no use for.
SHM_KEYS = {"isolate": 0, "processes": 0, "timeout": 30.0, "reattach": 60.0}


def wants_isolation(config) -> bool:
    """Whether [env] isolate asks for the env in server processes."""
    value = config.get("isolate", 0)
    return bool(parse_value(value) if isinstance(value, str) else value)


def beside(path: Path) -> Path:
    """The ini beside an env's file (<name>.ini): where most kinds keep their settings."""
    return path.with_suffix(".ini")


@dataclass(frozen=True, eq=False)  # one object per kind: compared by identity
class Kind:
    """How one kind of env is recognised, configured and made.

    name      its key ("header", "js", ...), for messages and `--help`
    title     what it is, in words ("C header")
    suffix    the suffix of the file that is such an env (".h"); a folder envs/ocean/<name>/ holding
              <name><suffix> is one; None for a kind named by its prefix alone
    noun      how a message names that file ("env header")
    make      make(source, total_agents, config, **options) -> Env: the kind's env class, given the
              EnvSource and the [env] overrides (envs.make's options: num_threads, seed,
              check_actions, num_buffers); it takes out the trainer's [env] keys it has no use for
    claims    whether a file with the suffix is this kind's (several kinds may share a suffix: an
              ini is a game server's or a DDNet env's by its [env] keys); None: every such file
    mark      what `claims` looks for, in words, for the message when no kind claims a file
    ini_of    the env's ini, given its file (default: <name>.ini beside it; it need not exist)
    defaults  [env] keys every env of this kind has, with their defaults, without an ini
    sections  the sections of its ini that hold [env] keys (a JS game's [js] too)
    training  the ini the trainer reads in place of the env's own when it has none (None: none)
    browser   serve(source, **options): plays the env in a browser page (`envs.play --browser`),
              or None
    isolatable  with `[env] isolate = 1` its env runs in server processes over the shared-memory
              protocol (envs/shm/ builds its generic server around the env's file); False: the
              kind's make answers that key itself
    evaluation  [env] values an evaluation (trainer.eval) sets over the run's: what only shapes
              training turned off (a DDNet env's curriculum starts), so it measures from the real start;
              a Python env's steps in the evaluator's process, which counts each env's own episodes
    prefix    a name starting with it ("gym:", "ale:") is this kind's, whatever follows (an id, a module
              path: it may hold '/' or a suffix); "" for kinds named only by files and folders
    lookup    lookup(rest) -> EnvSource for a prefixed name, given what follows the prefix
    open_keys its [env] takes keys its ini does not name (a Python env's factory's keyword
              arguments): `--env.KEY value` adds one instead of being refused
    """
    name: str
    title: str
    suffix: str | None
    noun: str
    make: Callable
    claims: Callable[[Path], bool] | None = None
    mark: str = ""
    ini_of: Callable[[Path], Path] = beside
    defaults: dict = field(default_factory=dict)
    sections: tuple = ("env",)
    training: Path | None = None
    browser: Callable | None = None
    isolatable: bool = False
    evaluation: dict = field(default_factory=dict)
    prefix: str = ""
    lookup: Callable | None = None
    open_keys: bool = False

    def __repr__(self):
        return f"Kind({self.name!r})"

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class EnvSource:
    """What a name or path stands for: its kind, the file that is the env (`path`: the .h, the .js,
    the server's .ini) and the env's ini (`ini`, which may not exist). Resolved once, by
    envs.resolve(); config loading, envs.make, the kind and the env class all take this object.
    `target`: what a prefixed name names beyond a file (a Gymnasium id, a module:function), else ""."""
    name: str
    kind: Kind
    path: Path
    ini: Path
    target: str = ""

    def env_config(self) -> dict:
        """The [env] keys the env accepts, with their defaults: PufferLib's default [env] keys, its
        kind's, then those of its ini (its kind's sections of it)."""
        config = {**DEFAULT_ENV_KEYS, **self.kind.defaults}
        if self.ini.is_file():
            data = read_ini(self.ini)
            for section in self.kind.sections:
                config.update(data.get(section, {}))
        return config

    def for_evaluation(self, config: dict) -> dict:
        """The [env] section `config` as an evaluation runs it: its kind's evaluation values over it."""
        return {**config, **self.kind.evaluation}

    @property
    def training_ini(self) -> Path:
        """The ini the trainer layers over its defaults: the env's own, or where it has none and its
        kind names one, the kind's (a JS game without a game.ini: envs/js/default.ini). The path
        may not exist (a C env without an ini)."""
        if self.kind.training is not None and not self.ini.is_file():
            return self.kind.training
        return self.ini
