"""The JavaScript-game kind's declaration: one p5.js-style .js file."""
from pathlib import Path

from ..kind import SHM_KEYS, Kind, wants_isolation
from .browser import serve
from .env import JS_DEFAULTS, JsEnv

# the training settings of a JS game with no ini beside it (trainer/config.py reads it in its place)
TRAINING_INI = Path(__file__).resolve().parent / "default.ini"


def make(source, total_agents, config, **options):
    if wants_isolation(config):
        raise ValueError(f"{source.path}: [env] isolate is for C env headers; a JS game runs in its own "
                         f"JS runtime per env already")
    for k in SHM_KEYS:
        config.pop(k, None)
    return JsEnv(source, total_agents, config=config, **options)


# a game's own keys live in the [js] section of its ini (or [env])
KIND = Kind(name="js", title="JavaScript game", suffix=".js", noun="JS game", make=make, defaults=JS_DEFAULTS,
            sections=("env", "js"), training=TRAINING_INI, browser=serve)
