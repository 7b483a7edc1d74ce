"""JavaScript games as envs (envs/js): the host contract, key semantics, determinism, errors,
threads and the rasterizer's rules on frames checked by hand."""

import hashlib
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _default_cache_root():
    """The OS cache folder as envs.build would pick it without $PUFFGPU_CACHE (which conftest
    points at a fresh folder per session)."""
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "puffgpu"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "puffgpu"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "puffgpu"


# The engine (a pinned sdist and its objects) is the same for every session: keep it in the
# user's cache instead of fetching and compiling it again for each fresh test cache.
os.environ.setdefault("PUFFGPU_QUICKJS_DIR", str(_default_cache_root() / "quickjs"))

import envs  # noqa: E402
from envs.js.env import DEFAULT_ACTIONS, JsGameError, parse_actions  # noqa: E402

GAMES = ROOT / "envs" / "ocean"

# A probe game: its score encodes the key state of each frame, lives count frames since
# resetGame, and it records setup/resetGame/keyPressed calls.
PROBE = """
let score = 0, frames = 0, presses = 0, setups = 0, resets = 0, lastSeed = -1, firstRandom = 0, state = 'PLAYING';
function setup() { setups++; createCanvas(400, 400); }
function resetGame(seed) { resets++; lastSeed = seed; frames = 0; firstRandom = Math.random(); state = 'PLAYING'; }
function keyPressed() { presses++; }
function draw() {
  frames++;
  score = (keyIsDown(LEFT_ARROW) ? 1 : 0) + (keyIsDown(RIGHT_ARROW) ? 2 : 0) + (keyIsDown(32) ? 4 : 0) + 8 * presses;
  background(0);
}
function getGameState() { return { score: score, lives: frames, gameState: state }; }
"""


def game(tmp_path, source, name="game", ini=None):
    path = tmp_path / f"{name}.js"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    if ini is not None:
        path.with_suffix(".ini").write_text(textwrap.dedent(ini), encoding="utf-8")
    return str(path)


def step(env, action):
    env.step(np.full((env.num_agents, 1), action, np.float32))


def mulberry32(seed):
    t = seed & 0xFFFFFFFF

    def imul(a, b):
        return ((a & 0xFFFFFFFF) * (b & 0xFFFFFFFF)) & 0xFFFFFFFF

    def nxt():
        nonlocal t
        t = (t + 0x6D2B79F5) & 0xFFFFFFFF
        n = imul(t ^ (t >> 15), t | 1)
        n ^= (n + imul(n ^ (n >> 7), n | 61)) & 0xFFFFFFFF
        return ((n ^ (n >> 14)) & 0xFFFFFFFF) / 4294967296
    return nxt


def test_lifecycle_and_key_semantics(tmp_path):
    env = envs.make(game(tmp_path, PROBE), 1, num_threads=1)
    assert env.picture == (64, 64, 3) and env.obs_dtype == np.uint8 and env.act_sizes == (8,)
    env.reset()
    score, frames, _ = env.game_state()
    assert (score, frames) == (0, 1)  # resetGame(seed), then one draw with no key down
    step(env, 5)  # press SPACE: down for this frame, keyPressed() once
    assert env.game_state()[0] == 4 + 8
    step(env, 0)  # released: the key set is replaced every step
    assert env.game_state()[0] == 8
    step(env, 1)  # hold LEFT: no keyPressed
    assert env.game_state()[0] == 1 + 8
    step(env, 2)  # RIGHT replaces LEFT
    assert env.game_state()[0] == 2 + 8
    step(env, 6)  # LEFT + press SPACE
    assert env.game_state()[0] == 1 + 4 + 16
    step(env, 7)  # RIGHT + press SPACE
    assert env.game_state()[0] == 2 + 4 + 24
    assert env.rewards[0] == (2 + 4 + 24) - (1 + 4 + 16)  # reward = change of score
    assert env.game_state()[1] == 7  # frames since resetGame: 1 + 6 steps


def test_frameskip_presses_on_the_first_frame_and_holds_the_rest(tmp_path):
    path = game(tmp_path, PROBE, ini="[js]\nframeskip = 3\nmax_steps = 4\n")
    env = envs.make(path, 1, num_threads=1)
    env.reset()
    step(env, 6)  # LEFT + press SPACE: 3 frames, SPACE down and keyPressed() on the first only
    score, frames, _ = env.game_state()
    assert (score, frames) == (1 + 8, 1 + 3)  # the last frame: LEFT held, one press so far
    assert env.rewards[0] == 9  # the score's change over the 3 frames
    step(env, 5)
    assert env.game_state()[:2] == (16, 7)
    # the same frames as frameskip 1 stepping the action, then its held keys twice (LEFT: action 1)
    one = envs.make(path, 1, num_threads=1, config={"frameskip": 1, "max_steps": 100})
    one.reset()
    for a in (6, 1, 1, 5, 0, 0):
        step(one, a)
    assert one.game_state() == env.game_state() and one.observations.tobytes() == env.observations.tobytes()
    step(env, 0)
    step(env, 0)
    assert env.terminals[0] == 1 and env.log()["episode_length"] == 4  # max_steps counts steps, not frames
    with pytest.raises(ValueError, match=r"frameskip = 0 must be an integer in \[1, 64\]"):
        envs.make(path, 1, config={"frameskip": 0})


def test_frameskip_stops_at_the_end_of_a_game(tmp_path):
    src = PROBE.replace("frames++;", "frames++; if (frames == 5) state = 'WIN';")
    env = envs.make(game(tmp_path, src, ini="[js]\nframeskip = 3\n"), 1, num_threads=1)
    env.reset()
    step(env, 0)  # frames 2, 3, 4
    step(env, 0)  # frame 5 wins: frames 6 and 7 are not drawn
    assert env.terminals[0] == 1 and env.final(0)[1][1] == 5 and env.log()["wins"] == 1


def test_seeded_random_is_mulberry32(tmp_path):
    src = PROBE.replace("function getGameState() { return { score: score,",
                        "function getGameState() { return { score: Math.floor(firstRandom * 1e9) * 1000 + resets,")
    env = envs.make(game(tmp_path, src), 2, num_threads=1)
    env.reset_seed(1, 12345)
    score = env.game_state(1)[0]
    assert score % 1000 == 2  # load: resetGame(0), then resetGame(seed)
    assert score // 1000 == int(mulberry32(12345)() * 1e9)


def test_actions_table_from_ini(tmp_path):
    path = game(tmp_path, PROBE, ini="""
        [js]
        actions = 0 | 37 39 | p32 p37
        max_steps = 3
    """)
    env = envs.make(path, 1, num_threads=1)
    assert env.act_sizes == (3,)
    env.reset()
    step(env, 1)
    assert env.game_state()[0] == 3
    step(env, 2)
    assert env.game_state()[0] == 1 + 4 + 16  # both pressed keys down, keyPressed twice
    step(env, 0)
    assert env.terminals[0] == 1  # truncated at max_steps
    assert env.log()["episode_length"] == 3
    with pytest.raises(ValueError, match="key codes"):
        parse_actions("0 | left")


def test_reward_and_terminal_mapping(tmp_path):
    src = """
    let t = 0, score = 0, end = 'PLAYING', lives = 3;
    function resetGame(seed) { t = 0; score = 10; lives = 3; end = ['WIN', 'GAMEOVER', 'EXIT', 'PLAYING'][seed % 4]; }
    function draw() { t++; }
    function getGameState() {
      if (t >= 2) score = t < 4 ? score + 3 : score - 5;
      return { score: score, lives: lives, gameState: t >= 4 ? end : 'PLAYING' };
    }
    """
    env = envs.make(game(tmp_path, src, ini="[js]\nmax_steps = 6\n"), 1, num_threads=1)
    results = {}
    for seed, want in ((0, 1), (1, 2), (2, 3), (3, 0)):
        env.reset_seed(0, seed)
        rewards = []
        for _ in range(6):
            step(env, 0)
            rewards.append(float(env.rewards[0]))
            if env.terminals[0]:
                break
        results[seed] = (rewards, env.log())
    # t counts draws: reset drew once (t = 1), so steps see t = 2, 3, 4...
    assert results[0][0] == [3, 3, -5]
    assert results[0][1]["wins"] == 1 and results[0][1]["perf"] == 1 and results[0][1]["episode_length"] == 3
    assert results[1][1]["wins"] == 0 and results[1][1]["lives"] == 3
    assert len(results[2][0]) == 3  # EXIT ends the episode too
    assert len(results[3][0]) == 6 and results[3][1]["episode_length"] == 6  # truncated at max_steps


def frame_hashes(path, seed, actions, agents=4, threads=1):
    env = envs.make(path, agents, num_threads=threads, seed=seed)
    env.reset()
    out = []
    for a in actions:
        env.step(a)
        out.append(hashlib.sha256(env.observations.tobytes()).hexdigest())
    env.close()
    return out


def test_same_seed_and_actions_give_identical_frames():
    path = str(GAMES / "breakout_js" / "breakout_js.js")
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 4, (8, 1)).astype(np.float32) for _ in range(300)]
    a = frame_hashes(path, 7, actions, agents=8)
    b = frame_hashes(path, 7, actions, agents=8)
    assert a == b
    assert len(set(a)) > 100  # the frames do change
    c = frame_hashes(path, 8, actions, agents=8)
    assert c != a  # another seed, other episodes


def test_two_threads_give_the_frames_of_one():
    path = str(GAMES / "catcher" / "catcher.js")
    rng = np.random.default_rng(1)
    actions = [rng.integers(0, 3, (16, 1)).astype(np.float32) for _ in range(200)]
    assert frame_hashes(path, 3, actions, agents=16, threads=2) == frame_hashes(path, 3, actions, agents=16, threads=1)


@pytest.mark.parametrize("source, match", [
    ("function draw() {\n  let x = ;\n}\n", r"game\.js:2: SyntaxError"),
    ("function setup() {}\nfunction resetGame() {}\nfunction getGameState() { return {score: 0} }\n"
     "function draw() {\n  if (frameCount > 1) undefinedThing.x = 1;\n}\n",
     r"game\.js:5: ReferenceError: undefinedThing is not defined during a step(.|\n)*at draw"),
    ("function resetGame() {}\nfunction draw() {}\n", r"defines no getGameState\(\)"),
    ("function resetGame() {}\nfunction getGameState() { return {score: 0} }\n"
     "function draw() { if (frameCount > 1) loadImage('x.png'); }\n", r"loadImage\(\) is not supported"),
    ("function resetGame() {}\nfunction getGameState() { return {score: 0} }\n"
     "function draw() { if (frameCount > 1) while (true) {} }\n", r"endless loop"),
    ("function resetGame() {}\nfunction getGameState() { return {score: 0} }\nlet hoard = [];\n"
     "function draw() { if (frameCount > 1) for (;;) hoard.push(new Array(10000).fill(1)); }\n", r"ran out of its 8 MB"),
    ("function resetGame() {}\nfunction getGameState() { return {score: 'many'} }\nfunction draw() {}\n",
     r"score must be a finite number"),
])
def test_game_errors_are_clear(tmp_path, source, match):
    path = game(tmp_path, source, ini="[js]\nmemory_mb = 8\nstep_mops = 5\n")
    with pytest.raises(JsGameError, match=match):
        env = envs.make(path, 2, num_threads=1)
        env.reset()
        step(env, 0)
        step(env, 0)


def test_a_game_file_that_does_not_exist():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        envs.make("/nonexistent/game.js", 1)


def draw_frame(tmp_path, body, canvas=64):
    """The first frame of a game whose draw() is `body` on a canvas of `canvas` pixels (the
    picture is 64 x 64, so canvas 64 draws 1:1)."""
    src = (f"function setup() {{ createCanvas({canvas}, {canvas}); }}\nfunction resetGame() {{}}\n"
           f"function getGameState() {{ return {{score: 0}}; }}\nfunction draw() {{ background(0); noStroke(); {body} }}\n")
    env = envs.make(game(tmp_path, src, name=f"f{abs(hash(body))}"), 1, num_threads=1)
    env.reset()
    return env.frame(0)


def covered(frame, channel=0):
    return {(int(y), int(x)) for y, x in np.argwhere(frame[:, :, channel] > 0)}


def test_rasterizer_rect_covers_pixel_centers(tmp_path):
    # x in [1.4, 4.4): centers 1.5, 2.5, 3.5; y in [2.6, 4.6): centers 3.5, 4.5
    f = draw_frame(tmp_path, "fill(255, 0, 0); rect(1.4, 2.6, 3, 2);")
    assert covered(f) == {(y, x) for y in (3, 4) for x in (1, 2, 3)}
    # a 400 x 400 canvas scaled onto 64 x 64: the left half is exactly columns 0..31
    f = draw_frame(tmp_path, "fill(255, 0, 0); rect(0, 0, 200, 400);", canvas=400)
    assert covered(f) == {(y, x) for y in range(64) for x in range(32)}


def test_rasterizer_circle(tmp_path):
    # radius 4 around (32, 32): offsets ±0.5..±3.5 with a² + b² <= 16: 2·(8 + 8 + 6 + 4) = 52
    f = draw_frame(tmp_path, "fill(0, 255, 0); circle(32, 32, 8);")
    c = covered(f, 1)
    assert len(c) == 52
    assert (28, 31) in c and (27, 31) not in c and (31, 28) in c and (31, 27) not in c


def test_rasterizer_line_alpha_transform_graphics(tmp_path):
    # a 1-pixel line on y = 10.5 from x 2.5 to 8.5, square caps: columns 2..8 of row 10
    f = draw_frame(tmp_path, "stroke(255, 255, 255); line(2.5, 10.5, 8.5, 10.5);")
    assert covered(f) == {(10, x) for x in range(2, 9)}
    # fill(255, 0, 0, 128) over blue: (255·128 + 127) // 255 = 128, (255·127 + 127) // 255 = 127
    f = draw_frame(tmp_path, "background(0, 0, 255); fill(255, 0, 0, 128); rect(0, 0, 4, 4);")
    assert tuple(f[0, 0]) == (128, 0, 127) and tuple(f[10, 10]) == (0, 0, 255)
    # rotate a quarter turn around (20, 20): a 10 x 2 bar becomes a 2 x 10 bar
    f = draw_frame(tmp_path, "fill(255, 0, 0); translate(20, 20); rotate(HALF_PI); rect(0, 0, 10, 2);")
    assert covered(f) == {(y, x) for y in range(20, 30) for x in (18, 19)}
    # a createGraphics buffer drawn with image(): its pixels land where the image is put
    f = draw_frame(tmp_path, "const g = createGraphics(64, 64); g.noStroke(); g.fill(0, 255, 0); g.rect(0, 0, 5, 3);"
                   " image(g, 20, 30);")
    assert covered(f, 1) == {(y, x) for y in range(30, 33) for x in range(20, 25)}


def test_deterministic_math_matches_libm_closely(tmp_path):
    # the fixed sin/cos/atan2/exp/log/pow stay within a few ulps of the platform's
    src = """
    const xs = [0.1, 0.5, 1, 2, 3, 10, 100, -0.7, 1e-5, 12345.678];
    let err = 0;
    function resetGame() {
      err = 0;
      for (const x of xs) {
        err = Math.max(err, Math.abs(Math.sin(x) - REF.sin[xs.indexOf(x)]), Math.abs(Math.cos(x) - REF.cos[xs.indexOf(x)]),
                       Math.abs(Math.atan2(x, 0.3) - REF.atan2[xs.indexOf(x)]),
                       Math.abs(Math.exp(x / 100) / REF.exp[xs.indexOf(x)] - 1),
                       Math.abs(Math.log(Math.abs(x)) - REF.log[xs.indexOf(x)]),
                       Math.abs(Math.pow(Math.abs(x), 0.37) / REF.pow[xs.indexOf(x)] - 1));
      }
    }
    function draw() {}
    function getGameState() { return { score: err * 1e15 }; }
    """
    import math
    xs = [0.1, 0.5, 1, 2, 3, 10, 100, -0.7, 1e-5, 12345.678]
    ref = {"sin": [math.sin(x) for x in xs], "cos": [math.cos(x) for x in xs],
           "atan2": [math.atan2(x, 0.3) for x in xs], "exp": [math.exp(x / 100) for x in xs],
           "log": [math.log(abs(x)) for x in xs], "pow": [abs(x) ** 0.37 for x in xs]}
    import json
    env = envs.make(game(tmp_path, f"const REF = {json.dumps(ref)};\n" + src), 1, num_threads=1)
    env.reset()
    assert env.game_state()[0] < 20  # < 2e-14 absolute / relative


def test_grayscale_and_picture_size(tmp_path):
    path = game(tmp_path, PROBE.replace("background(0);", "background(255, 0, 0);"),
                ini="[js]\npicture_width = 40\npicture_height = 36\npicture_channels = 1\n")
    env = envs.make(path, 1, num_threads=1)
    env.reset()
    assert env.picture == (36, 40, 1) and env.obs_size == 36 * 40
    assert (env.observations[0] == (255 * 77 + 128) >> 8).all()


def test_trainer_config_reads_the_js_section(tmp_path):
    from trainer import config
    path = game(tmp_path, PROBE, ini="[js]\npicture_width = 48\n[train]\ntotal_timesteps = 1000\n")
    cfg, _ = config.load(path, {"env.max_steps": "500"})
    assert cfg["env"]["picture_width"] == 48 and cfg["env"]["max_steps"] == 500
    env = envs.make(path, 2, config=cfg["env"], num_threads=1)
    assert env.picture == (64, 48, 3) and env.config["max_steps"] == 500


@pytest.mark.parametrize("name", ["catcher", "breakout_js", "flappy"])
def test_shipped_games_step(name):
    env = envs.make(str(GAMES / name / f"{name}.js"), 8, num_threads=1)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(500):
        env.step(rng.integers(0, env.act_sizes[0], (8, 1)).astype(np.float32))
    assert env.observations.std() > 0


def _chromium():
    import shutil
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["breakout_js", "flappy", "kitchen"])
def test_browser_page_plays_and_the_c_env_replays(tmp_path, name):
    """Headless Chromium plays a scripted episode in the page (the same p5 prelude, the JS
    rasterizer), saves a screenshot and posts the recording; the C env replays it to the same
    score and the same last frame."""
    import subprocess
    import threading
    import time
    from envs.js import browser
    chrome = _chromium()
    if chrome is None:
        pytest.skip("no chromium (Debian: apt-get install chromium)")
    # kitchen: every drawing path of the subset (strokes, modes, arcs, transforms, shape kinds,
    # createGraphics with alpha, HSB, the fixed math) must come out the same in both
    game_file = GAMES / name / f"{name}.js" if name != "kitchen" else ROOT / "tests" / "js" / "kitchen.js"
    rng = np.random.default_rng(3)
    n = envs.make(str(game_file), 1, num_threads=1).act_sizes[0]
    script = [int(a) for a in rng.integers(0, n, 600)]
    rec_path = tmp_path / "rec.json"
    browser.serve.url = None
    t = threading.Thread(target=browser.serve, kwargs=dict(source=envs.resolve(game_file), port=0, seed=11,
                                                          record=rec_path, script=script, open_browser=False,
                                                          once=True, quiet=True),
                         daemon=True)
    t.start()
    for _ in range(100):
        if getattr(browser.serve, "url", None):
            break
        time.sleep(0.05)
    shot = tmp_path / "shot.png"
    cmd = [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
           f"--screenshot={shot}", "--window-size=560,640", "--virtual-time-budget=60000", browser.serve.url]
    subprocess.run(cmd, capture_output=True, timeout=240)
    t.join(timeout=60)
    assert rec_path.is_file(), "the page posted no recording"
    assert shot.is_file() and shot.stat().st_size > 1000
    rec = browser.read_recording(rec_path)
    assert rec["seed"] == 11 and rec["actions"] == script[:len(rec["actions"])] and len(rec["actions"]) > 10
    res = browser.replay(rec_path, envs.resolve(rec["game_path"]))
    assert res["score"] == rec["score"]
    assert res["frame_sha256"] == rec["frame_sha256"]
    assert res["match"]


def test_engine_source_missing_or_wrong_is_a_clear_error(tmp_path, monkeypatch):
    from envs.js import engine
    monkeypatch.setenv("PUFFGPU_QUICKJS_DIR", str(tmp_path))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # as on a machine that cannot reach the index
    monkeypatch.delenv("PUFFGPU_QUICKJS_SDIST", raising=False)
    with pytest.raises(engine.EngineError, match=r"(?s)pip download quickjs-ng==0\.17\.0\.2.*" + str(tmp_path)):
        engine.sdist_path()
    (tmp_path / engine.SDIST).write_bytes(b"not the sdist")
    with pytest.raises(engine.EngineError, match="not the pinned"):
        engine.sdist_path()


def _js_number(x):
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 and str(x).startswith("-"):
        return "-0"
    return repr(int(x)) if float(x).is_integer() and abs(x) < 2 ** 31 else repr(float(x))


def test_engine_edits_keep_the_semantics(tmp_path):
    # envs/js/engine_patches.py: comparisons with a double compared inline, property and global
    # lookups by a checked guess, string equality by identity and atoms, object literal fields. The same bytecode sites see ints, doubles, NaN, -0, non-numbers,
    # objects of other shapes, prototypes, getters, setters, frozen and deleted properties, Proxy,
    # global lets and global properties; each result is what the language defines (the numbers'
    # expected results from Python's IEEE comparisons)
    import json
    import operator
    nums = [1, 1.5, 3, 0.1 + 0.2, 0.3, float("nan"), 0.0, -0.0, float("inf"), float("-inf"), 2.0 ** 31,
            2 ** 31 - 1, -7, -7.25, 1e308]
    ops = [("<", operator.lt), ("<=", operator.le), (">", operator.gt), (">=", operator.ge),
           ("==", operator.eq), ("!=", operator.ne), ("===", operator.eq), ("!==", operator.ne)]
    want = [[[f(a, b) for _, f in ops] for b in nums] for a in nums]
    fns = ", ".join(f"(a, b) => a {o} b" for o, _ in ops)
    src = f"""
    const NUMS = [{", ".join(_js_number(x) for x in nums)}];
    const WANT = {json.dumps(want)};
    const OPS = [{fns}];
    let failed = 0, checks = 0;
    function check(got, want) {{ checks++; if (got !== want) failed++; }}
    function read(o) {{ return o.x; }}
    function write(o, v) {{ o.x = v; }}
    function call(o) {{ return o.f(); }}
    function readGlobal() {{ return gname; }}
    let shadow = "lexical";
    function readShadow() {{ return shadow; }}
    function resetGame() {{
      failed = 0; checks = 0;
      for (let i = 0; i < NUMS.length; i++)
        for (let j = 0; j < NUMS.length; j++)
          for (let k = 0; k < OPS.length; k++) check(OPS[k](NUMS[i], NUMS[j]), WANT[i][j][k]);
      // non-numbers at the same sites: the slow path's conversions
      check(OPS[0]("2", 1.5), false); check(OPS[2]("2", 1.5), true); check(OPS[4]("1.5", 1.5), true);
      check(OPS[6]("1.5", 1.5), false); check(OPS[0](true, 1.5), true); check(OPS[1](null, 0.5), true);
      check(OPS[4](null, 0), false); check(OPS[0](undefined, 1.5), false); check(OPS[5](undefined, 1.5), true);
      check(OPS[0](10n, 10.5), true); check(OPS[4](10n, 10), true); check(OPS[6](10n, 10), false);
      // one read site, objects of many shapes
      const proto = {{ x: "proto" }};
      const getter = {{}}; Object.defineProperty(getter, "x", {{ get() {{ return "getter"; }} }});
      const deleted = {{ x: 1, y: 2 }}; delete deleted.x;
      const readded = {{ x: 1, y: 2 }}; delete readded.x; readded.x = "again";
      const cases = [[{{ x: 1 }}, 1], [{{ y: 2, x: 3 }}, 3], [{{ x: 4, y: 5 }}, 4], [{{ x: 1.5 }}, 1.5],
                     [Object.create(proto), "proto"], [getter, "getter"], [deleted, undefined],
                     [readded, "again"], [[1, 2], undefined], [{{ y: 1 }}, undefined],
                     [new Proxy({{}}, {{ get: () => "proxy" }}), "proxy"], [{{ x: 1 }}, 1]];
      for (let r = 0; r < 3; r++) for (const [o, v] of cases) check(read(o), v);
      // one write site: plain, frozen (ignored), setter, prototype setter, new property
      const plain = {{ x: 0 }}, frozen = Object.freeze({{ x: 0 }});
      let seen = 0; const setter = {{ set x(v) {{ seen = v; }} }};
      const child = Object.create(setter), fresh = {{ y: 0 }};
      for (let r = 0; r < 3; r++) {{
        write(plain, r); write(frozen, r); write(setter, r + 10); write(child, r + 20); write(fresh, r + 30);
        check(plain.x, r); check(frozen.x, 0); check(seen, r + 20); check(child.hasOwnProperty("x"), false);
        check(fresh.x, r + 30);
      }}
      // method calls: own function, prototype method, replaced method
      const m = {{ f() {{ return 1; }} }};
      check(call(m), 1); check(call({{ f: () => 2 }}), 2); m.f = () => 3; check(call(m), 3);
      check(call({{ __proto__: {{ f: () => 4 }} }}), 4);
      // global names: a property of the global object (an eval's let stays the eval's own), a
      // global let that shadows a property of its name, a let read before its declaration ran
      globalThis.gname = "property"; globalThis.shadow = "property";
      check(readGlobal(), "property"); check(readGlobal(), "property");
      (0, eval)("let gname = 'lexical';");
      check(readGlobal(), "property"); check(readShadow(), "lexical");
      let tdz = false; try {{ (0, eval)("tdzRead(); let later = 1; function tdzRead() {{ return later; }}"); }}
      catch (e) {{ tdz = e instanceof ReferenceError; }}
      check(tdz, true);
      // string equality: literals (atoms), the same string, strings built at run time, ropes
      const eq = (a, b) => a === b, ne = (a, b) => a !== b;
      const built = ["PLAY", "ING"].join(""), rope = "x".repeat(40) + "y".repeat(40);
      check(eq("PLAYING", "PLAYING"), true); check(eq("PLAYING", "GAMEOVER"), false);
      check(eq(built, "PLAYING"), true); check(eq("PLAYING", built), true); check(ne(built, "PLAYIN"), true);
      check(eq(typeof gname, "string"), true); check(eq(typeof nope, "undefined"), true);
      check(eq(rope, "x".repeat(40) + "y".repeat(40)), true); check(eq(rope, rope.slice(1)), false);
      check(eq("", ""), true); check(eq("a", "a".concat("")), true); check(eq("\u00e9", "e\u0301"), false);
      // object literal fields: new, repeated, computed, numeric, on a null prototype; class fields
      // on an instance made non-extensible or given an accessor by its base class
      const dup = {{ a: 1, a: 2 }}, num = {{ 0: "zero", 1.5: "x" }}, bare = {{ __proto__: null, f: 3 }};
      check(dup.a, 2); check(Object.keys(dup).length, 1); check(num[0], "zero"); check(num["1.5"], "x");
      check(Object.getPrototypeOf(bare), null); check(bare.f, 3);
      class Field {{ x = 1; y = this.x + 1; }}
      const fobj = new Field(); check(fobj.y, 2); check(Object.getOwnPropertyDescriptor(fobj, "x").writable, true);
      class Sealed {{ constructor() {{ Object.preventExtensions(this); }} }}
      class Late extends Sealed {{ z = 1; }}
      let sealedThrew = false; try {{ new Late(); }} catch (e) {{ sealedThrew = e instanceof TypeError; }}
      check(sealedThrew, true);
      class Getter {{ constructor() {{ Object.defineProperty(this, "w", {{ get: () => 5, configurable: true }}); }} }}
      class Over extends Getter {{ w = 6; }}
      check(new Over().w, 6);
    }}
    function draw() {{}}
    function getGameState() {{ return {{ score: failed, lives: checks }}; }}
    """
    env = envs.make(game(tmp_path, src), 1, num_threads=1)
    env.reset()
    failed, checks = env.game_state()[:2]
    assert checks == len(nums) ** 2 * len(ops) + 12 + 36 + 15 + 4 + 5 + 12 + 10 and failed == 0


def test_engine_edits_must_find_their_text():
    from envs.js import engine
    source = "".join(old for _, old, _ in engine.PATCHES)
    assert engine.patch_source(source) == "".join(new for _, _, new in engine.PATCHES)
    with pytest.raises(engine.EngineError, match="expects its text once in quickjs.c, found it 0 times"):
        engine.patch_source(source.replace(engine.PATCHES[-1][1], ""))
    with pytest.raises(engine.EngineError, match="found it 2 times"):
        engine.patch_source(source + engine.PATCHES[0][1])


def test_a_game_without_an_ini_trains_with_the_js_defaults(tmp_path):
    from trainer import config
    lone = game(tmp_path, PROBE, name="lone")
    cfg, _ = config.load(lone)
    source = envs.resolve(lone)
    assert source.training_ini == ROOT / "envs" / "js" / "default.ini" and not source.ini.is_file()
    env_keys = {k: cfg["env"][k] for k in ("picture_width", "picture_height", "picture_channels", "frameskip")}
    assert env_keys == {"picture_width": 36, "picture_height": 36, "picture_channels": 1, "frameskip": 8}
    assert (cfg["vec"]["total_agents"], cfg["train"]["minibatch_size"], cfg["policy"]["num_layers"]) == (256, 2048, 2)
    assert cfg["env"]["actions"] == DEFAULT_ACTIONS
    # a game with an ini uses that ini alone
    own = game(tmp_path, PROBE, name="own", ini="[js]\npicture_width = 48\n")
    cfg, _ = config.load(own)
    assert (cfg["env"]["picture_width"], cfg["env"]["picture_height"], cfg["env"]["frameskip"]) == (48, 64, 1)
    assert cfg["vec"]["total_agents"] == config.defaults()["vec"]["total_agents"]
    # the env library's own defaults are unchanged: the trainer's choice, not the env's
    env = envs.make(lone, 1, num_threads=1)
    assert env.picture == (64, 64, 3)
