"""Every env in envs/ (and the test envs under tests/) under AddressSanitizer + UndefinedBehaviorSanitizer,
stepped with random actions (1% garbage) for 160k agent steps each: checks/sanitize_envs.sh, the one
command for it. The envs are discovered, so a new env is sanitized without editing this test."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import envs

ROOT = Path(__file__).resolve().parent.parent


def _test_env_headers():
    """tests/envs*/<name>/<name>.h: the test envs (the 5.0-style env, the Go-Explore corridor)."""
    return envs.env_headers(*sorted(ROOT.glob("tests/envs*")))


@pytest.mark.slow
def test_sanitizer_build_of_every_env():
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to run checks/sanitize_envs.sh")
    builtin, extra = [h.parent.name for h in envs.env_headers()], _test_env_headers()
    assert builtin and extra
    res = subprocess.run(["bash", str(ROOT / "checks" / "sanitize_envs.sh"), *builtin, *map(str, extra)], cwd=ROOT,
                         capture_output=True, text=True, timeout=900,
                         env=dict(os.environ, AGENTS="16", STEPS="10000", THREADS="2"))
    if res.returncode == 77:
        pytest.skip(f"the C compiler lacks the sanitizer runtime: {res.stderr.strip()}")
    assert res.returncode == 0, f"{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    names = builtin + [h.stem for h in extra]
    for name in names:
        assert f"== {name}: 16 agents x 10000 steps" in res.stdout, name
    assert res.stdout.count("160000 agent steps") == len(names)
    assert "sanitizers: all envs passed" in res.stdout
