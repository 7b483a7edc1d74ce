"""The C p5 layer (envs/js/p5native.h) against the prelude's JS (envs/js/p5.js): the same math bit
for bit on edge inputs, the same errors, and the frames recorded before the C layer existed."""

import hashlib
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import test_js  # noqa: F401  (sets the engine's cache folder before envs is imported)
import envs
from envs.js.env import JsGameError

ROOT = Path(__file__).resolve().parent.parent
GAMES = ROOT / "envs" / "ocean"

# Each function over edge inputs; step i reports result i's bits as score (high word; -1 NaN, -2
# not a number) and lives (low word).
MATH = r"""
const f = new Float64Array(1), u = new Uint32Array(f.buffer);
function bits(v) {
  if (typeof v !== "number") return [-2, 0];
  if (v !== v) return [-1, 0];
  f[0] = v; return [u[1], u[0]];
}
const X = [0, -0, NaN, Infinity, -Infinity, 1e300, -1e300, 1.7976931348623157e308, 5e-324, -5e-324,
  2.2250738585072014e-308, 2.225073858507201e-308, 1e-17, -1e-17, 1e17, 1e18, 0.4375, 0.6875, 1.1875, 2.4375,
  0.5, 1, -1, 2, 10, 100, -0.7, 12345.678, 709.782712893384, 709.79, -745.1332191019412, -746, 1e6 * Math.PI,
  "1", null, undefined, true, [2]];
for (let k = -16; k <= 16; k++) X.push(k * PI / 4, k * PI / 4 + 1e-12, k * HALF_PI);
const Y = [0, -0, NaN, Infinity, -Infinity, 1, -1, 0.5, 2, 3, -3, 1 / 3, 1e-300, 1e300, 1024, 1025, -1024.5];
function run() {
  const out = [];
  for (const name of ["sin", "cos", "tan", "asin", "acos", "atan", "exp", "log"])
    for (const x of X) out.push(bits(Math[name](x)), bits(globalThis[name](x)));
  for (const name of ["atan2", "pow"])
    for (const x of X) for (const y of Y) out.push(bits(Math[name](x, y)), bits(globalThis[name](y, x)));
  for (const s of [0, 1, 12345, 4294967295, -1, 2 ** 31]) {
    randomSeed(s);
    for (let i = 0; i < 20; i++) out.push(bits(Math.random()), bits(random()), bits(random(7)), bits(random(-3, 5)),
      bits(random([4, 5, 6])), bits(random("9")));
  }
  return out;
}
let results = [];
function resetGame() { results = run(); }
function draw() {}
function getGameState() {
  const r = results[frameCount - 2] || [0, 0];
  return { score: r[0], lives: r[1], gameState: frameCount - 2 >= results.length ? "WIN" : "PLAYING" };
}
"""


def _write(tmp_path, name, source):
    path = tmp_path / f"{name}.js"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return str(path)


def _thrown(path, native):
    with pytest.raises(JsGameError) as e:
        env = envs.make(path, 1, num_threads=1, config={"native_p5": native})
        env.reset()
        env.step(np.zeros((1, 1), np.float32))
    return str(e.value)


def _results(path, native):
    env = envs.make(path, 1, num_threads=1, config={"native_p5": native, "max_steps": 100_000})
    env.reset()
    out = []
    while True:
        env.step(np.zeros((1, 1), np.float32))
        if env.terminals[0]:
            return out
        score, lives, _ = env.game_state()
        out.append((int(score), int(lives)))


def test_math_and_random_are_the_prelude_s_bit_for_bit(tmp_path):
    path = _write(tmp_path, "math", MATH)
    c, js = _results(path, 1), _results(path, 0)
    assert len(c) == len(js) == 2 * (8 * 137 + 2 * 137 * 17) + 6 * 20 * 6
    assert c == js
    # fixed values, so that both cannot drift together: sin(pi) = 1.2246467991473532e-16 and
    # log(2) = 0.6931471805599453 as libm's, exp(1) one ulp above libm's; NaN for sin(Infinity)
    sin_x, exp_x, log_x = (8 * 0 + 0) * 137, 2 * 6 * 137, 2 * 7 * 137
    pi_at = 38 + 3 * (16 + 4) + 0  # X index of 4 * PI / 4
    assert c[sin_x + 2 * pi_at] == (0x3CA1A626, 0x33145C07)
    assert c[exp_x + 2 * 21] == (0x4005BF0A, 0x8B14576A)
    assert c[log_x + 2 * 23] == (0x3FE62E42, 0xFEFA39EF)
    assert c[sin_x + 2 * 3] == (-1, 0)


@pytest.mark.parametrize("body, match", [
    ("fill('nosuchcolor');", r"cannot read the color string \"nosuchcolor\""),
    ("background('#12');", r"cannot read the color string \"#12\""),
    ("rect(Symbol('x'), 1, 2, 3);", r"TypeError"),
    ("translate({ valueOf() { throw new Error('boom in valueOf'); } }, 1);", r"boom in valueOf"),
    ("for (let i = 0; i < 300; i++) push();", r"push\(\) nested more than 256 deep"),
    ("stroke([1, 2]); line(0, 0, 'a', {});", r"PASS"),
])
def test_bad_input_gives_the_js_error(tmp_path, body, match):
    src = (f"function resetGame() {{}}\nfunction getGameState() {{ return {{score: 0}}; }}\n"
           f"function draw() {{ if (frameCount > 1) {{ {body} throw new Error('PASS'); }} }}\n")
    path = _write(tmp_path, "bad", src)
    c, js = _thrown(path, 1), _thrown(path, 0)
    strip = lambda s: re.sub(r"\n.*", "", s)  # the first line: file, line, message (the stacks differ)
    assert strip(c) == strip(js)
    assert re.search(match, strip(c))


def frames_digest(path, config, agents=4, steps=400):
    """sha256 over every step's observation digest, rewards and terminals (seed 5, fixed actions)."""
    env = envs.make(str(path), agents, num_threads=1, seed=5, config=config)
    env.reset()
    rng = np.random.default_rng(2)
    h = hashlib.sha256()
    for _ in range(steps):
        env.step(rng.integers(0, env.act_sizes[0], (agents, 1)).astype(np.float32))
        h.update(hashlib.sha256(env.observations.tobytes()).hexdigest().encode())
        h.update(np.asarray(env.rewards).tobytes())
        h.update(np.asarray(env.terminals).tobytes())
    env.close()
    return h.hexdigest()


RGB64 = {"picture_width": 64, "picture_height": 64, "picture_channels": 3, "frameskip": 1, "max_steps": 150}
# recorded with the prelude before the C layer (and before its state moved into typed arrays)
REFERENCE = {
    "catcher/ini": "dc4567cd354ec1adfb6925847712bec11b65ed3be119026dbea7a0b5cff0e841",
    "catcher/rgb64": "d9e40f5562cb6e01bdc9f1e762280c06c77b42e21f4da504e025a0410659ae8e",
    "flappy/ini": "fd6fc8be4b83c9e38aead6440946b54029cf782878b2dd32ffb67713e81bc331",
    "flappy/rgb64": "200b3c793dcf5628ad89582920b21733da71f0d12a7fb149031675009f019478",
    "breakout_js/ini": "d2f2a1928e1d421c25814840f2f883a1a748d71bce4bb5b2ccf4f474ccc5abaa",
    "breakout_js/rgb64": "aa094111581f7462dc2710f723d592d52803f490f25b4976ca0be6f971af8c36",
    "kitchen/ini": "df7b21b1dc026422aaaf7b81d4fb9a244d36c1affe1d12d96f34c939a8db2c54",
    "kitchen/rgb64": "64664cd378947d73cc78c02e7eed29159b082a5458ec7e1caeed5f1359358a2d",
    # PlayTrain's examples/games/js (breakout.js at 298d7369, flappy_bird.js at a7b75683,
    # aim_trainer.js at 2e49c569), when $PUFFGPU_PLAYTRAIN_DIR holds them
    "breakout/ini": "303221b53c01bcad72ea2d738c14082aecc62c6ed7f8277ad6c99ed711058c11",
    "breakout/rgb64": "850da6e4a4c5e8aa3657246d3a2c5b738d1aa0783ec0865a32f8e1007721da37",
    "flappy_bird/ini": "7df6888418233badfec244ca8b23e3718c377a6f5edc2cb958427342179cd07b",
    "flappy_bird/rgb64": "7df6888418233badfec244ca8b23e3718c377a6f5edc2cb958427342179cd07b",
    "aim_trainer/ini": "d0c98f45699f22e81b40b8721d5953aaa0d08463d51135adb81c26020b0fd43f",
    "aim_trainer/rgb64": "b78f1fec28fbd712d0e0710a72f8bffcbb57ccd92b75f2886b4d591ac3265e18",
}


def _game(name):
    if name == "kitchen":
        return ROOT / "tests" / "js" / "kitchen.js"
    if (GAMES / name / f"{name}.js").is_file():
        return GAMES / name / f"{name}.js"
    folder = os.environ.get("PUFFGPU_PLAYTRAIN_DIR")
    if not folder or not (Path(folder) / f"{name}.js").is_file():
        pytest.skip(f"{name}.js: PlayTrain's examples/games/js not in $PUFFGPU_PLAYTRAIN_DIR")
    return Path(folder) / f"{name}.js"


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_frames_equal_the_recorded_references(key):
    name, cfg = key.split("/")
    path = _game(name)
    assert frames_digest(path, RGB64 if cfg == "rgb64" else None) == REFERENCE[key]


@pytest.mark.parametrize("name", ["breakout_js", "kitchen"])
def test_the_js_prelude_alone_draws_the_same_frames(name):
    path = _game(name)
    assert frames_digest(path, dict(RGB64, native_p5=0), steps=150) == frames_digest(path, RGB64, steps=150)


@pytest.mark.parametrize("name", ["flappy", "breakout_js"])
def test_prefetching_the_next_env_changes_nothing(name):
    """With at least JS_PF_MIN_ENVS (24) envs on a thread, each step prefetches the next env's
    recorded lines (jsenv.h): every env has recorded some, and the first envs of 32 on one thread
    step exactly as 4 alone, which prefetch nothing (the vecenv seeds an env by its index)."""
    path = _game(name)
    runs = []
    for agents in (32, 4):
        env = envs.make(str(path), agents, num_threads=1, seed=5, config=RGB64)
        env.reset()
        rng = np.random.default_rng(2)
        steps = []
        for _ in range(120):
            actions = rng.integers(0, env.act_sizes[0], (32, 1)).astype(np.float32)
            env.step(actions[:agents])
            steps.append((env.observations[:4].copy(), np.asarray(env.rewards)[:4].copy(),
                          np.asarray(env.terminals)[:4].copy()))
        lines = [env._lib.js_vec_prefetch_lines(env._live(), i) for i in range(agents)]
        env.close()
        assert min(lines) > 20, lines  # the functions, arenas and host lines of a step
        runs.append(steps)
    for (o1, r1, t1), (o2, r2, t2) in zip(*runs):
        assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(t1, t2)
