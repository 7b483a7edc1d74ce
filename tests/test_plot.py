"""tools/plot.py on synthetic logs: which panels and runs it draws, the smoothing, the time axis of a
resumed run, where the PNG goes, and the errors for logs that are not there."""
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from golden.check import assert_close

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("puffgpu_plot", ROOT / "tools" / "plot.py")
plot_tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plot_tool)


def write_log(path: Path, run_id: str, lr: float, epochs: int, extra_env=False, resumed_at=None, tail=""):
    cfg = {"base": {"seed": 73, "log_dir": str(path.parent.parent)}, "train": {"learning_rate": lr, "horizon": 64}}
    head = {"type": "config", "run_id": run_id, "env": "platformer", "adapter": "test adapter", "config": cfg}
    lines = [json.dumps(head)]
    t0 = 0.0
    for e in range(1, epochs + 1):
        if resumed_at == e:  # a resumed run: a second config line, and `elapsed` restarts
            lines.append(json.dumps(dict(head, resumed_from="x.bin")))
            t0 = -2.0 * (e - 1)
        step = e * 1000
        m = {"type": "epoch", "epoch": e, "epochs": epochs, "global_step": step, "elapsed": t0 + 2.0 * e,
             "sps": 500.0, "learning_rate": lr * 0.5 * (1 + math.cos(math.pi * (e - 1) / epochs)),
             "policy_loss": -0.01, "value_loss": 1 / e, "entropy": 1.0 - e / (2 * epochs), "approx_kl": 0.001,
             "old_approx_kl": 0.001, "clipfrac": 0.05, "grad_norm": 0.3, "env/perf": 1 - math.exp(-e * lr),
             "env/score": 0.5, "env/episode_length": 100.0, "env/n": 12.0}
        if extra_env:
            m["env/start_perf"] = 0.25
            m["env/archive_size"] = float(e)
        lines.append(json.dumps(m))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + tail)


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "logs" / "platformer"
    write_log(d / "a.jsonl", "a", 0.015, 40)
    write_log(d / "b-1.jsonl", "b-1", 0.03, 40, extra_env=True)
    write_log(d / "b-2.jsonl", "b-2", 0.1, 30, resumed_at=11, tail='{"type": "epoch", "epo')  # cut by a crash
    return tmp_path / "logs"


def test_ema_matches_tensorboard_smoothing():
    got = plot_tool.ema([1.0, 2.0, 3.0, float("nan"), 4.0], 0.5)
    # s_t = 0.5 s_{t-1} + 0.5 x_t, divided by 1 - 0.5^t: 1, 1.25/0.75, 2.125/0.875, (skip), 3.0625/0.9375
    assert_close("ema", got[:3] + got[4:], np.array([1.0, 1.25 / 0.75, 2.125 / 0.875, 3.0625 / 0.9375]), "float64")
    assert math.isnan(got[3])
    assert plot_tool.ema([5.0, 7.0], 0.0) == [5.0, 7.0]


def test_grid_of_several_runs(logs, tmp_path):
    runs = [plot_tool.read_run(p) for p in sorted((logs / "platformer").glob("*.jsonl"))]
    assert [len(r["epochs"]) for r in runs] == [40, 40, 30]  # the cut line is skipped
    out = tmp_path / "fig.png"
    drawn = plot_tool.plot(runs, out, smooth=0.6)
    assert list(drawn)[:5] == ["env/perf", "env/start_perf", "env/score", "env/episode_length", "env/archive_size"]
    assert {"policy loss", "value loss", "entropy", "approx KL", "clip fraction", "SPS", "learning rate"} <= set(drawn)
    assert "env/n" not in drawn
    labels = [lab for lab, _, _ in drawn["env/perf"]]
    assert labels == ["a · learning_rate=0.015", "b-1 · learning_rate=0.03", "b-2 · learning_rate=0.1"]
    assert [lab for lab, _, _ in drawn["env/start_perf"]] == ["b-1 · learning_rate=0.03"]
    _, xs, ys = drawn["env/perf"][0]
    raw = [1 - math.exp(-e * 0.015) for e in range(1, 41)]
    assert xs == [1000.0 * e for e in range(1, 41)]
    assert_close("plotted ema", ys, np.array(plot_tool.ema(raw, 0.6)), "float64")
    img = Image.open(out)
    assert img.format == "PNG" and img.size[0] >= 1600 and img.size[1] >= 1000


def test_time_axis_keeps_counting_across_a_resume(logs, tmp_path):
    run = plot_tool.read_run(logs / "platformer" / "b-2.jsonl")
    xs = plot_tool.xs_of(run["epochs"], "time")
    assert xs == [2.0 * e for e in range(1, 31)]
    drawn = plot_tool.plot([run], tmp_path / "t.png", x="time", smooth=0)
    assert drawn["SPS"][0][1] == xs  # under 120 s: seconds


@pytest.mark.slow
def test_cli_chooses_runs_and_writes_next_to_the_logs(logs, capsys):
    assert plot_tool.main(["platformer", "--log-dir", str(logs), "--runs", "a", "b-*"]) == 0
    assert (logs / "platformer" / "runs.png").is_file()
    assert "3 runs, 110 epochs" in capsys.readouterr().out
    assert plot_tool.main([str(logs / "platformer" / "a.jsonl"), "--x", "time"]) == 0
    assert (logs / "platformer" / "a.png").is_file()
    assert plot_tool.main(["platformer", "--log-dir", str(logs), "--runs", "zzz"]) == 1
    assert "--runs 'zzz': no log matches" in capsys.readouterr().err
    assert plot_tool.main(["bandit", "--log-dir", str(logs)]) == 1
    assert "no logs for env 'bandit'" in capsys.readouterr().err
