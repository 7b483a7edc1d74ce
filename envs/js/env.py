"""JavaScript games as envs: one p5.js-style file, stepped in QuickJS-ng runtimes on the vecenv's
threads, observed as the picture it draws.

    env = envs.make("envs/ocean/catcher/catcher.js", total_agents=64)   # any path ending in .js
    env.reset(); env.step(np.zeros((64, 1)))
    env.picture      # (64, 64, 3): observations are that picture, uint8, HWC

The game file defines setup() and draw() (p5.js) and resetGame(seed) and getGameState() ->
{score, lives, gameState}. Each env holds one JS runtime (envs/js/jsenv.h); the p5 subset and
the host contract live in envs/js/p5.js. Settings come from the `[js]` (or `[env]`) section of
the .ini beside the game, else the defaults below (JS_DEFAULTS):

    picture_width, picture_height  the observation's size in pixels (the game's canvas is scaled
                                   to it; default 64 x 64)
    picture_channels               3 (RGB) or 1 (grayscale)
    actions                        the action table: actions separated by `|`, each a list of key
                                   codes held for the step, a `p` before a code for a key pressed
                                   for that frame only (keyPressed() is called), `0` for none
    frameskip                      frames (draw() calls) per step, default 1: the action's held
                                   keys stay down for all of them, its press keys are pressed on
                                   the first only; the reward is the score's change over them and
                                   an end stops them early
    max_steps                      steps before an episode is truncated (default 2000)
    memory_mb                      the JS heap limit of each env (default 64)
    step_mops                      million JS operations one call into the game may run (default 100)
    rasterize                      0: draw nothing (tools/bench_env.py times the game logic alone)
    native_p5                      0: every p5 call in the prelude's JS, none in C (the same frames,
                                   slower; tests compare the two)
"""

import hashlib
from pathlib import Path

import numpy as np

from puffbase.atomic import atomic_write
from puffbase.cache import cache_root

from ..build import ModuleExtras, c_string, load_module
from ..c.env import VecEnv
from ..errors import EnvError
from ..interface import merge_config
from . import engine

JS_DIR = Path(__file__).resolve().parent  # the engine's C side (jsenv.h, jsvec.c) and the p5 prelude
PRELUDE = JS_DIR / "p5.js"
INTERNAL_KEYS = ("js_game", "js_prelude", "js_actions")
# A game's keys: defaults of the [js] (or [env]) section of its ini.
DEFAULT_ACTIONS = "0 | 37 | 39 | 38 | 40 | p32 | 37 p32 | 39 p32"
JS_DEFAULTS = {"picture_width": 64, "picture_height": 64, "picture_channels": 3, "actions": DEFAULT_ACTIONS,
               "max_steps": 2000, "frameskip": 1, "memory_mb": 64, "step_mops": 100, "rasterize": 1,
               "native_p5": 1}

CDEF = """
int js_vec_failed(VecEnv* vec);
const char* js_vec_message(VecEnv* vec, int index);
void js_vec_reset_seed(VecEnv* vec, int index, unsigned int seed);
void js_vec_state(VecEnv* vec, int index, double* out);
void js_vec_final(VecEnv* vec, int index, unsigned char* frame, double* out);
void js_vec_frame(VecEnv* vec, int index, unsigned char* frame);
int js_vec_prefetch_lines(VecEnv* vec, int index);
"""


class JsGameError(EnvError):
    """The game failed: a syntax error, an exception, an endless loop, runaway allocation."""


def parse_actions(text):
    """The action table: [(held key codes, pressed key codes)] per action. Raises ValueError
    naming what is wrong."""
    out = []
    for i, part in enumerate(str(text).split("|")):
        held, pressed = [], []
        for tok in part.split():
            if tok in ("0", "-"):
                continue
            code = tok[1:] if tok[0] == "p" else tok
            if not code.isdigit() or not 0 < int(code) < 256:
                raise ValueError(f"[js] actions: action {i} has {tok!r}; each action lists key codes (1-255), "
                                 f"a 'p' before a code for a key pressed for one frame, 0 for none, actions "
                                 f"separated by '|' (default {DEFAULT_ACTIONS!r})")
            (pressed if tok[0] == "p" else held).append(int(code))
        out.append((held, pressed))
    if len(out) < 2:
        raise ValueError(f"[js] actions = {text!r} names {len(out)} action(s); a policy needs at least 2")
    return out


def actions_text(table):
    return " | ".join(" ".join([str(k) for k in h] + [f"p{k}" for k in p]) or "0" for h, p in table)


def _check(config, path):
    w, h, c = config["picture_width"], config["picture_height"], config["picture_channels"]
    for key, v in (("picture_width", w), ("picture_height", h)):
        if not isinstance(v, int) or not 8 <= v <= 1024:
            raise ValueError(f"{path}: [js] {key} = {v!r} must be an integer in [8, 1024]")
    if c not in (1, 3):
        raise ValueError(f"{path}: [js] picture_channels = {c!r} must be 3 (RGB) or 1 (grayscale)")
    ms = config["max_steps"]
    if not isinstance(ms, int) or ms < 1:
        raise ValueError(f"{path}: [js] max_steps = {ms!r} must be a positive integer")
    fs = config["frameskip"]
    if not isinstance(fs, int) or not 1 <= fs <= 64:
        raise ValueError(f"{path}: [js] frameskip = {fs!r} must be an integer in [1, 64] (frames per step)")
    for key in ("memory_mb", "step_mops"):
        if not isinstance(config[key], (int, float)) or not config[key] > 0:
            raise ValueError(f"{path}: [js] {key} = {config[key]!r} must be a positive number")
    return parse_actions(config["actions"])


def env_header(config):
    """The header for this picture size and action count: a few macros around jsenv.h, written
    into the cache (one module each)."""
    w, h, c = config["picture_width"], config["picture_height"], config["picture_channels"]
    n = len(parse_actions(config["actions"]))
    folder = cache_root() / "js"
    folder.mkdir(parents=True, exist_ok=True)
    # named after the checkout too: two checkouts sharing the cache must not rewrite each other's
    where = hashlib.sha256(str(JS_DIR).encode()).hexdigest()[:8]
    path = folder / f"jsenv_{w}x{h}x{c}_a{n}_{where}.h"
    text = (f"/* generated by envs/js/env.py */\n#define JS_PICTURE_WIDTH {w}\n#define JS_PICTURE_HEIGHT {h}\n"
            f"#define JS_PICTURE_CHANNELS {c}\n#define JS_NUM_ACTIONS {n}\n"
            f"#include {c_string(JS_DIR / 'jsenv.h')}\n")
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        atomic_write(path, text)
    return path


def load_js_module(header):
    objects, include = engine.engine_objects()
    extra = ModuleExtras(objects=objects, include_dirs=[include], cdef=CDEF,
                               source=f"#include {c_string(JS_DIR / 'jsvec.c')}\n")
    return load_module(header, extra)


class JsEnv(VecEnv):
    """A VecEnv of a JavaScript game (see the module docstring). Errors of the game raise
    JsGameError from make(), reset() and step() with the game's file, line and JS stack."""

    def __init__(self, source, total_agents, config=None, **kw):
        self.game = source.path
        self.actions_table = None
        super().__init__(source, total_agents, config=config, **kw)
        try:
            self._raise_failed()  # the game did not load (syntax error, setup() threw, ...)
        except JsGameError:
            self.close()
            raise
        c = self.config
        self.picture = (c["picture_height"], c["picture_width"], c["picture_channels"])
        self.actions_table = parse_actions(c["actions"])

    # ---- VecEnv hooks ----
    @staticmethod
    def _merge_config(source, overrides):
        config = merge_config(source.env_config(), overrides, source.name, source.ini, skip=INTERNAL_KEYS)
        _check(config, source.path)
        config["actions"] = actions_text(parse_actions(config["actions"]))
        config["js_game"] = str(source.path)
        config["js_prelude"] = str(PRELUDE)
        config["js_actions"] = config["actions"]
        return config

    def _env_header(self):
        return env_header(self.config)

    def _load_module(self, header):
        return load_js_module(header)

    # ---- the game's errors become exceptions ----
    def _raise_failed(self):
        vec = self._live()
        e = self._lib.js_vec_failed(vec)
        if e >= 0:
            raise JsGameError(self._ffi.string(self._lib.js_vec_message(vec, e)).decode("utf-8", "replace"))

    def reset(self):
        out = super().reset()
        self._raise_failed()
        return out

    def step(self, actions=None):
        super().step(actions)
        self._raise_failed()

    def step_buffer(self, b, actions=None, threads=None):
        super().step_buffer(b, actions, threads)
        self._raise_failed()

    def reset_seed(self, index, seed):
        """Starts env `index`'s next episode with the given seed (its observation row is the
        first frame)."""
        self._lib.js_vec_reset_seed(self._live(), int(index), int(seed) & 0xFFFFFFFF)
        self._raise_failed()

    def game_state(self, index=0):
        """(score, lives, state code: 0 playing, 1 WIN, 2 GAMEOVER, 3 EXIT) after env `index`'s
        last draw."""
        out = self._ffi.new("double[3]")
        self._lib.js_vec_state(self._live(), int(index), out)
        return float(out[0]), float(out[1]), int(out[2])

    def frame(self, index=0):
        """Env `index`'s picture as np.uint8 [H, W, 3] (RGB also for grayscale observations)."""
        out = np.zeros((self.picture[0], self.picture[1], 3), np.uint8)
        self._lib.js_vec_frame(self._live(), int(index), self._ffi.cast("unsigned char*", self._ffi.from_buffer(out)))
        return out

    def final(self, index=0):
        """(RGB picture [H, W, 3], (score, lives, state code)) at the end of env `index`'s last
        finished episode: the observation already shows the next one."""
        frame = np.zeros((self.picture[0], self.picture[1], 3), np.uint8)
        out = self._ffi.new("double[3]")
        self._lib.js_vec_final(self._live(), int(index), self._ffi.cast("unsigned char*", self._ffi.from_buffer(frame)), out)
        return frame, (float(out[0]), float(out[1]), int(out[2]))
