"""Sweeps: the [sweep] config reader, and a real tiny sweep on Ray Tune (envs/ocean/memory/sweep.ini: 3
trials of memory's learning rate over [1e-6, 1], a range whose low end cannot learn in the budget),
interrupted with Ctrl-C during its second trial and resumed by running the same command again."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trainer import sweep

ROOT = Path(__file__).resolve().parent.parent


def test_reads_pufferlib_style_sections(tmp_path):
    ini = tmp_path / "s.ini"
    ini.write_text("[policy]\nhidden_size = 32\n[sweep]\nmetric = score\nmax_runs = 7\ndownsample = 5\n"
                   "sweep_only = learning_rate, gamma, hidden_size\n"
                   "[sweep.train.learning_rate]\ndistribution = log_normal\nmin = 1e-4\nmax = 0.1\nscale = 0.5\n"
                   "[sweep.policy.hidden_size]\ndistribution = uniform_pow2\nmin = 24\nmax = 256\n")
    sw = sweep.load_sweep("memory", str(ini), ["--sweep.goal", "minimize", "--train.horizon", "16"])
    assert sw.settings["metric"] == "env/score" and sw.settings["max_runs"] == 7 and sw.mode == "min"
    assert sw.cfg["policy"]["hidden_size"] == 32 and sw.cfg["train"]["horizon"] == 16
    assert sw.flags == {"policy.hidden_size": "32", "train.horizon": "16"}
    by = {p.name: p for p in sw.params}
    assert sorted(by) == ["policy.hidden_size", "train.gamma", "train.learning_rate"]  # default.ini's gamma too
    lr, h, g = by["train.learning_rate"], by["policy.hidden_size"], by["train.gamma"]
    assert (lr.min, lr.max, lr.integer) == (1e-4, 0.1, False)
    assert sweep.pow2_values(h.min, h.max) == [32, 64, 128, 256] and h.sample_of(32) == 32
    assert h.value(64) == 64 and isinstance(h.value(64), int)
    # logit_normal searches 1 - x log-uniformly: gamma 0.995 is the point 0.005
    assert g.distribution == "logit_normal" and g.sample_of(0.995) == pytest.approx(0.005)
    assert g.value(0.005) == pytest.approx(0.995)
    assert lr.sample_of(0.5) == 0.1  # the first trial's value is clipped into the range


@pytest.mark.parametrize("text, message", [
    ("[sweep.train.learning_rate]\ndistribution = normal\nmin = 1\nmax = 2\n", r"distribution = 'normal'; valid: uniform"),
    ("[sweep.train.learning_rate]\ndistribution = log_normal\nmin = 0\nmax = 2\n", r"needs min > 0"),
    ("[sweep.train.learning_rate]\ndistribution = uniform\nmin = 2\nmax = 1\n", r"min < max"),
    ("[sweep.train.gamma]\ndistribution = logit_normal\nmin = 0.5\nmax = 1.5\n", r"inside \(0, 1\)"),
    ("[sweep.train.nope]\ndistribution = uniform\nmin = 1\nmax = 2\n", r"names no config key"),
    ("[sweep.train.clip_coef]\ndistribution = uniform\nmin = 0.1\n", r"missing max"),
    ("[sweep]\nmethod = Protein\n", r"Protein is PufferLib's own method"),
    ("[sweep]\nmax_trials = 3\n", r"unknown key \[sweep\] max_trials; valid keys: .*max_runs"),
    ("[sweep]\nsweep_only = nothing_here\n", r"nothing to sweep"),
    ("[sweep]\neval_episodes = -1\n", r"eval_episodes must be >= 0"),
    ("[sweep]\nmetric = policy_loss\neval_episodes = 10\n", r"metric = policy_loss is a trainer metric"),
])
def test_bad_sweep_config_is_explained(tmp_path, text, message):
    ini = tmp_path / "bad.ini"
    ini.write_text(text)
    with pytest.raises(sweep.SweepError, match=message):
        sweep.load_sweep("memory", str(ini))


def test_reporter_repeats_the_metric_through_epochs_without_episodes(monkeypatch):
    """Tune needs the metric in every report: before the first episode ends nothing is sent, then an
    epoch in which none ended repeats the last value."""
    from ray import tune
    sent = []
    monkeypatch.setattr(tune, "report", lambda out: sent.append(out))
    rep = sweep.TuneReporter(400, "env/perf")
    rep.log({"global_step": 100, "sps": 5.0})
    rep.log({"global_step": 200, "env/perf": 0.25})
    rep.log({"global_step": 300, "sps": 6.0})
    assert [(r["progress"], r["env/perf"]) for r in sent] == [(50, 0.25), (75, 0.25)] and rep.count == 2


def test_evaluation_scores_a_checkpoint_on_another_seed(tmp_path):
    """[sweep] eval_episodes: the trial's figure is trainer.eval's measure of its checkpoint."""
    import envs
    from trainer import checkpoint as ckpt, config as config_mod
    from trainer.spec import PolicySpec, init_weights
    from trainer.eval import Evaluator
    cfg, _ = config_mod.load("memory", {"policy.hidden_size": "16", "policy.num_layers": "1"})
    with envs.make("memory", 1, num_threads=1) as e:
        spec = PolicySpec.for_env(e, 16, 1)
    path = ckpt.save(tmp_path / "0000000000000001.bin", init_weights(spec, 0), spec, "memory", 1)
    out = sweep.evaluate({"env": "memory", "metric": "env/score", "eval_episodes": 64}, cfg, path, None)
    assert out["eval/episodes"] == 64 and out["env/score"] == out["eval/score"]
    want = Evaluator("memory", cfg, str(path), 64, cfg["base"]["seed"] + sweep.EVAL_SEED_OFFSET).measure(64)
    assert out["eval/score"] == want["score"]  # the same measure, the held-out seed
    with pytest.raises(sweep.SweepError, match=r"logged no 'nope'"):
        sweep.evaluate({"env": "memory", "metric": "env/nope", "eval_episodes": 8}, cfg, path, None)


def _epochs(log: Path):
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    return [r for r in rows if r["type"] == "config"], [r["epoch"] for r in rows if r["type"] == "epoch"]


@pytest.mark.slow
def test_tiny_sweep_on_memory_resumes_after_ctrl_c(tmp_path):
    logs, ck = tmp_path / "logs", tmp_path / "ck"
    cmd = [sys.executable, "-m", "trainer.sweep", "--env", "memory", "--config", "envs/ocean/memory/sweep.ini",
           "--base.log_dir", str(logs), "--base.checkpoint_dir", str(ck)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # Ctrl-C during the second trial, once it has saved its epoch-20 checkpoint (one every 20 epochs)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    out, t0 = [], time.time()
    try:
        while time.time() - t0 < 300:
            line = proc.stdout.readline()
            out.append(line)
            if "trial 2/3 started" in line or not line:
                break
        assert "trial 2/3 started" in out[-1], "".join(out)
        second = re.search(r"started: (\S+) ", out[-1]).group(1)
        while time.time() - t0 < 300 and not list((ck / "memory" / second).glob("*.json")):
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = "".join(out) + rest
    assert proc.returncode == 130 and "run the same command again to resume" in out, out

    # the same command resumes: trial 1 is kept, trial 2 continues from its checkpoint, trial 3 runs
    res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "resuming the sweep" in res.stdout and "trial 1/3 started" not in res.stdout, res.stdout
    summary = next((logs / "memory" / "sweeps").glob("*/summary.md")).read_text()
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in summary.splitlines() if re.match(r"\| \d", ln)]
    print(summary)
    assert len(rows) == 3
    rank, run, status, score, steps, _, lr = rows[0]  # best first
    assert status == "done" and float(score) >= 0.95 and float(lr) == 0.015 and steps == "327,680"
    bad = [r for r in rows if float(r[3]) < 0.6]  # a rate that did not learn
    assert bad and all(r[2] == "stopped early by ASHA at 50%" and r[4] == "163,840" for r in bad), summary
    assert summary in res.stdout
    assert (logs / "memory" / "sweeps" / run.rsplit("-", 1)[0] / "sweep.png").is_file()
    # --report runs nothing: the same table from Tune's saved state
    rep = subprocess.run(cmd + ["--report"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0 and summary in rep.stdout and "started" not in rep.stdout, rep.stdout + rep.stderr
    # each trial is a normal run with its own log and checkpoints
    heads, epochs = _epochs(logs / "memory" / f"{run}.jsonl")
    assert len(heads) == 1 and epochs == list(range(1, 81))
    heads, epochs = _epochs(logs / "memory" / f"{second}.jsonl")
    assert len(heads) == 2 and Path(heads[1]["resumed_from"]).parent.name == second
    assert epochs[-1] == 40  # trial 2 learns too slowly: ASHA, which kept its rungs across the resume, stops it
    assert (ck / "memory" / run / f"{327680:016d}.bin").is_file()
