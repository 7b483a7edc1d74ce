"""tools/bench_env.py's table of JS games on both paths (one env; the training path, many envs on
one thread) measured in child processes per checkout, with --against a second checkout."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import test_js  # noqa: F401  (sets the engine's cache folder before envs is imported)

ROOT = Path(__file__).resolve().parent.parent
GAME = ROOT / "envs" / "ocean" / "catcher" / "catcher.js"


@pytest.mark.slow  # two child processes that build the env module (a CLI process)
def test_the_table_has_both_paths_and_the_other_checkout(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench_env.py"), "--js", str(GAME), "--table-only", "--trials", "2",
         "--frames", "30", "--warmup", "5", "--train-steps", "3", "--agents", "4", "--against", str(ROOT)],
        capture_output=True, text=True, encoding="utf-8", timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    head = next(line for line in out.stdout.splitlines() if line.startswith("| game"))
    assert "training path (4 envs, one thread)" in head and "before: one env" in head
    row = next(line for line in out.stdout.splitlines() if line.startswith("| catcher.js"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # one env, training path, their ratio, and the same two for the other checkout: positive rates
    rates = [float(c.replace(",", "")) for c in (cells[1], cells[2], cells[4], cells[5])]
    assert all(r > 100 for r in rates), row
    assert re.fullmatch(r"\d+\.\d\dx", cells[3]) and abs(float(cells[3][:-1]) - rates[1] / rates[0]) < 0.01
