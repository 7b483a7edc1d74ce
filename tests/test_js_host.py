"""The host contract in C (envs/js/jsenv.h, js_frame: keys, frameCount, draw(), getGameState())
against the prelude's JS (__puf.step/hold in envs/js/p5.js, which native_p5 = 0 runs): the same
observations, rewards, ends and errors, including what a game can do to the globals the contract
writes and the shapes getGameState() may return."""

import hashlib
import textwrap
from pathlib import Path

import numpy as np
import pytest

import test_js  # noqa: F401  (sets the engine's cache folder before envs is imported)
import envs
from envs.js.env import JsGameError

CONTRACT = Path(__file__).resolve().parent / "js" / "contract.js"


def _trace(path, config, agents=3, steps=700):
    """Per step: the observations' digest, rewards, terminals and each env's (score, lives, code)."""
    env = envs.make(str(path), agents, num_threads=1, seed=11, config=config)
    env.reset()
    rng = np.random.default_rng(4)
    out = []
    for _ in range(steps):
        env.step(rng.integers(0, env.act_sizes[0], (agents, 1)).astype(np.float32))
        out.append((hashlib.sha256(env.observations.tobytes()).hexdigest(), env.rewards.tolist(),
                    env.terminals.tolist(), [env.game_state(i) for i in range(agents)]))
    env.close()
    return out


@pytest.mark.parametrize("config", [
    {},
    {"frameskip": 3, "actions": "0 | 37 39 | p32 p65 | 38 p49 | p13 p27 | 40 37 p9 p8 | 90 48"},
])
def test_the_c_host_gives_the_prelude_s_steps(config):
    c = _trace(CONTRACT, dict(config, native_p5=1))
    js = _trace(CONTRACT, dict(config, native_p5=0))
    assert c == js
    # the game reached its ends (GAMEOVER after frame 170) and its rewards moved
    assert sum(sum(t) for _, _, t, _ in c) >= 3
    assert len({tuple(r) for _, r, _, _ in c}) > 50


def _write(tmp_path, name, source):
    path = tmp_path / f"{name}.js"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return str(path)


def _thrown(path, native, steps=40):
    with pytest.raises(JsGameError) as e:
        env = envs.make(path, 1, num_threads=1, config={"native_p5": native, "actions": "p32 | 37"})
        env.reset()
        for i in range(steps):
            env.step(np.full((1, 1), i % 2, np.float32))
    return str(e.value)


@pytest.mark.parametrize("draw, state, match", [
    ("if (frameCount > 3) globalThis.draw = 5;", "{score: 0}", r"defines no draw\(\) function"),
    ("if (frameCount > 3) globalThis.getGameState = null;", "{score: 0}", r"defines no getGameState\(\)"),
    ("", "frameCount > 3 ? null : {score: 0}", r"getGameState\(\) must return"),
    ("", "frameCount > 3 ? (() => 1) : {score: 0}", r"getGameState\(\) must return"),
    ("", "{score: frameCount > 3 ? NaN : 0}", r"score must be a finite number, got NaN"),
    ("", "{score: frameCount > 3 ? 'abc' : 0}", r"score must be a finite number, got abc"),
    ("", "{get score() { if (frameCount > 3) throw new Error('score getter'); return 0; }}", r"score getter"),
    ("if (frameCount > 3) Object.defineProperty(globalThis, 'keyCode', {value: 1, writable: false});",
     "{score: 0}", r"TypeError"),
    ("if (frameCount > 3) Object.defineProperty(globalThis, 'frameCount', {get() { throw new Error('fc'); }});",
     "{score: 0}", r"fc"),
])
def test_the_c_host_raises_the_prelude_s_errors(tmp_path, draw, state, match):
    src = (f"function resetGame() {{}}\nfunction keyPressed() {{}}\n"
           f"function getGameState() {{ return {state}; }}\n"
           f"function draw() {{ {draw} }}\n")
    path = _write(tmp_path, "bad", src)
    c, js = _thrown(path, 1), _thrown(path, 0)
    first = lambda s: s.splitlines()[0]  # file, line, message (the stacks differ)
    assert first(c) == first(js)
    assert __import__("re").search(match, first(c))


def test_keypressed_sees_each_pressed_key_in_order(tmp_path):
    src = """\
        let seen = [];
        function resetGame() { seen = []; }
        function keyPressed() { seen.push(key + ':' + keyCode + ':' + keyIsDown(keyCode) + ':' + keyIsPressed); }
        function draw() {}
        function getGameState() { return {score: seen.length ? seen.join('|').length * 1000 + seen.length : 0}; }
        """
    path = _write(tmp_path, "keys", src)
    for native in (1, 0):
        env = envs.make(path, 1, num_threads=1, config={"native_p5": native, "actions": "0 | 37 p32 p65"})
        env.reset()
        env.step(np.ones((1, 1), np.float32))
        # " :32:true:true|a:65:true:true": 29 characters, two presses
        assert env.game_state(0)[0] == 29 * 1000 + 2, native
        env.close()
