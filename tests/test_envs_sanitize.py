"""Every env (and the 5.0-style test env) under AddressSanitizer + UndefinedBehaviorSanitizer,
stepped with random actions (1% garbage) for 160k agent steps: tools/sanitize_envs.sh, the one
command for it."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_sanitizer_build_of_every_env():
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to run tools/sanitize_envs.sh")
    names = ["platformer", "memory", "bandit", "tests/envs5/squares/squares.h"]
    res = subprocess.run(["bash", str(ROOT / "tools" / "sanitize_envs.sh"), *names], cwd=ROOT,
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, AGENTS="16", STEPS="10000", THREADS="2"))
    if res.returncode == 77:
        pytest.skip(f"the C compiler lacks the sanitizer runtime: {res.stderr.strip()}")
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    for name in ("platformer", "memory", "bandit", "squares"):
        assert f"== {name}: 16 agents x 10000 steps" in res.stdout
    assert res.stdout.count("160000 agent steps") >= 4
