"""Envs in PufferLib 5.0's style (tests/envs5: named structs, dict_get as a double, several agents
per env, uint8 observations, raylib drawing, an ini with PufferLib's keys) build, step, train with
two env buffers and render; and puffgpu's envs compile against PufferLib 5.0's declarations
(tests/compat), so the compatibility holds both ways."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.build import STRICT_FLAGS
from trainer import config
from trainer.run import train

ROOT = Path(__file__).resolve().parent.parent
SQUARES = str(ROOT / "tests" / "envs5" / "squares" / "squares.h")


def test_squares_layout_uint8_and_multi_agent():
    env = envs.make(SQUARES, 12, num_threads=2, num_buffers=3)
    assert (env.num_envs, env.num_agents, env.obs_dtype, env.act_sizes) == (3, 12, np.uint8, (3,))
    assert env.buffers == [(0, 1, 0, 4), (1, 2, 4, 8), (2, 3, 8, 12)]
    env.reset()
    obs = env.observations
    assert (obs.sum(1) == 2).all() and set(np.unique(obs)) == {0, 1}
    pos, target = obs[:, :8].argmax(1), obs[:, 8:].argmax(1)
    assert (pos != target).all()
    # the optimal policy reaches a target every few steps and always moves toward it
    for _ in range(64):
        pos, target = env.observations[:, :8].argmax(1), env.observations[:, 8:].argmax(1)
        d = (target - pos) % 8
        env.actions[:, 0] = np.where(d <= 4, 2, 0)
        env.step()
    log = env.log()
    assert log["n"] == 24 and log["perf"] == 1.0 and log["score"] > 5, log


def test_buffers_step_independently_and_match_a_whole_step():
    a = envs.make(SQUARES, 16, seed=4, num_threads=1, num_buffers=2)
    b = envs.make(SQUARES, 16, seed=4, num_threads=1)
    a.reset(), b.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        act = rng.integers(0, 3, size=(16, 1)).astype(np.float32)
        a.step_buffer(1, act[8:])
        a.step_buffer(0, act[:8])
        b.step(act)
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.rewards, b.rewards)
    with pytest.raises(ValueError, match="must divide the 12 agents"):
        envs.make(SQUARES, 12, num_buffers=5)
    with pytest.raises(ValueError, match="would split an env"):
        envs.make(SQUARES, 8, num_buffers=4)  # 2 envs of 4 agents into 4 buffers


def small_cfg(tmp_path, **flags):
    base = {"policy.hidden_size": "16", "policy.num_layers": "1", "train.total_timesteps": str(64 * 16 * 3),
            "base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs")}
    cfg, _ = config.load(SQUARES, dict(base, **flags), warn=lambda text: None)
    return cfg


@pytest.mark.slow
def test_squares_trains_with_two_buffers_same_function_of_the_seed(tmp_path):
    from trainer.checkpoint import load
    from trainer.spec import PolicySpec
    runs = []
    for i in range(2):
        res = train(SQUARES, small_cfg(tmp_path / str(i)), live=False, run_id="r")
        assert res["global_step"] == 64 * 16 * 3 and np.isfinite(res["metrics"]["env/perf"])
        spec = PolicySpec(obs_size=16, hidden=16, layers=1, act_sizes=(3,))
        w, _ = load(res["checkpoint"], spec, env="squares")
        runs.append((w, {k: v for k, v in res["metrics"].items() if k.startswith("env/") or k.endswith("loss")}))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    # one buffer is a different (equally valid) run: buffers sample with their own seeds
    one = train(SQUARES, small_cfg(tmp_path / "one", **{"vec.num_buffers": "1"}), live=False, run_id="r")
    w1, _ = load(one["checkpoint"], PolicySpec(16, 16, 1, (3,)), env="squares")
    assert not np.array_equal(w1, runs[0][0])
    # the trained policy renders through trainer.eval --gif (raylib drawing, no display)
    from trainer.eval import main as eval_main
    gif = tmp_path / "eval.gif"
    assert eval_main(["--env", SQUARES, str(res["checkpoint"]), "--gif", str(gif),
                      "--policy.hidden_size", "16", "--policy.num_layers", "1"]) == 0
    assert gif.read_bytes()[:6] == b"GIF89a"


def test_squares_renders_a_gif(tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="pillow decodes the GIF")
    out = tmp_path / "squares.gif"
    res = subprocess.run([sys.executable, "-m", "envs.play", SQUARES, "--random", "--gif", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    im = Image.open(out)
    assert im.n_frames == 32 and im.size == (96, 60)  # one episode: 32 steps; 8 cells x 4 agents + text
    frame = np.asarray(im.convert("RGB"))
    colors = {tuple(c) for c in frame.reshape(-1, 3)}
    assert {(6, 24, 24), (255, 203, 0), (245, 245, 245)} <= colors  # background, GOLD target, text


@pytest.mark.parametrize("header", ["envs/ocean/platformer/platformer.h", "envs/ocean/memory/memory.h",
                                    "envs/ocean/bandit/bandit.h", "tests/envs5/squares/squares.h"])
def test_envs_compile_against_pufferlib_declarations(header):
    """tests/compat restates PufferLib 5.0's pufferenv.h/ini.h and raylib's prototypes; nothing
    of puffgpu's envs/ folder is on the include path."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler {cc}")
    src = f'#include "{ROOT / header}"\n'
    res = subprocess.run([cc, "-fsyntax-only", "-std=gnu11", "-Wall", "-Werror", "-Wno-unused-function",
                          *STRICT_FLAGS, f"-I{ROOT / 'tests' / 'compat'}", "-x", "c", "-"],
                         input=src, capture_output=True, text=True, cwd="/")
    assert res.returncode == 0, res.stderr[:3000]
