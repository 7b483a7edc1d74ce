"""End-to-end smoke runs of the trainer: loop, logs, checkpoints, resume, Ctrl-C, SIGKILL, NaN, eval."""
import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from childproc import read_until

from trainer import checkpoint as ckpt
from trainer import config
from trainer.run import TrainingError, train
from trainer.spec import PolicySpec

pytestmark = pytest.mark.slow  # every test here runs the trainer end to end

# seconds on lavapipe: 16 agents × 8 steps per epoch, 2 minibatches of 8 rows, a small policy
SMOKE = {"vec.total_agents": "16", "train.horizon": "8", "train.minibatch_size": "64", "policy.hidden_size": "16",
         "policy.num_layers": "2", "train.total_timesteps": str(16 * 8 * 3), "base.checkpoint_interval": "2"}


def smoke_cfg(tmp_path, **extra):
    flags = dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs")})
    flags.update(extra)
    cfg, _ = config.load("memory", flags)
    return cfg


def read_log(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_smoke_run_logs_and_checkpoints(tmp_path):
    res = train("memory", smoke_cfg(tmp_path), live=False, run_id="smoke")
    assert res["global_step"] == 384 and res["epoch"] == 3
    lines = read_log(res["log"])
    assert lines[0]["type"] == "config" and lines[0]["config"]["train"]["horizon"] == 8
    epochs = [l for l in lines if l["type"] == "epoch"]
    assert [e["epoch"] for e in epochs] == [1, 2, 3]
    for e in epochs:
        assert all(np.isfinite(e[k]) for k in ("policy_loss", "value_loss", "entropy", "sps", "approx_kl"))
        assert "env/perf" in e and e["learning_rate"] <= 0.015
    run_dir = tmp_path / "ck" / "memory" / "smoke"
    assert sorted(p.name for p in run_dir.glob("*.bin")) == [f"{256:016d}.bin", f"{384:016d}.bin"]
    assert sorted(p.name for p in run_dir.glob("*.momentum")) == [f"{256:016d}.momentum", f"{384:016d}.momentum"]
    spec = PolicySpec(obs_size=4, hidden=16, layers=2, act_sizes=(2,))
    assert (run_dir / f"{384:016d}.bin").stat().st_size == spec.nbytes
    w, meta = ckpt.load(run_dir / f"{384:016d}.bin", spec, env="memory")
    assert meta["trainer_state"] == {"epoch": 3, "global_step": 384, "run_id": "smoke"}


def test_resume_latest_continues_the_run(tmp_path):
    train("memory", smoke_cfg(tmp_path), live=False, run_id="r")
    cfg = smoke_cfg(tmp_path, **{"base.load_model_path": "latest", "train.total_timesteps": str(16 * 8 * 5)})
    res = train("memory", cfg, live=False)
    assert res["run_id"] == "r" and res["global_step"] == 640 and res["epoch"] == 5
    epochs = [l["epoch"] for l in read_log(res["log"]) if l["type"] == "epoch"]
    assert epochs == [1, 2, 3, 4, 5]  # the resumed run appends epochs 4 and 5 to the same log


def test_nan_stops_and_keeps_last_good_checkpoint(tmp_path):
    spec = PolicySpec(obs_size=4, hidden=16, layers=2, act_sizes=(2,))
    bad = np.full(spec.num_floats, np.nan, np.float32)
    path = ckpt.save(tmp_path / "ck" / "memory" / "old" / f"{1:016d}.bin", bad, spec, "memory", 1)
    before = {p: p.read_bytes() for p in (tmp_path / "ck").rglob("*")  if p.is_file()}
    with pytest.raises(TrainingError, match=r"NaN/Inf in .* at epoch 0 .*Last good checkpoint"):
        train("memory", smoke_cfg(tmp_path, **{"base.load_model_path": str(path)}), live=False, run_id="nan")
    after = {p: p.read_bytes() for p in (tmp_path / "ck").rglob("*") if p.is_file()}
    assert after == before  # nothing written, nothing overwritten


def _spawn(tmp_path, extra):
    cmd = [sys.executable, "-m", "trainer.run", "--env", "memory", "--plain"]
    for k, v in dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs"),
                               "train.total_timesteps": str(16 * 8 * 1000), "base.checkpoint_interval": "1"},
                     **extra).items():
        cmd += [f"--{k}", v]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=Path(__file__).resolve().parent.parent)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_kill_and_resume(tmp_path, sig):
    proc = _spawn(tmp_path, {})
    read_until(proc, lambda line: line.startswith("epoch 2/"), timeout=120)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    if sig != signal.SIGKILL:  # stops at the next env step and saves; exits 128 + the signal (Ctrl-C: 130)
        how = "Ctrl-C" if sig == signal.SIGINT else "SIGTERM"
        assert proc.returncode == 128 + sig and f"stopped ({how})" in out, out
    else:
        assert proc.returncode == -signal.SIGKILL
    last = ckpt.latest(tmp_path / "ck", "memory")
    step = int(last.stem)
    assert step >= 128  # SIGKILL may land before epoch 2's checkpoint is written
    proc = _spawn(tmp_path, {"base.load_model_path": "latest"})
    lines = read_until(proc, lambda line: line.startswith(f"epoch {step // 128 + 1}/"), timeout=120)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert any(f"loaded {last}" in l for l in lines), "".join(lines)


def test_stop_request_first_signal_asks_second_quits():
    from trainer.run import StopRequest
    before = signal.getsignal(signal.SIGTERM)
    with StopRequest() as stop:
        assert not stop.requested
        signal.raise_signal(signal.SIGTERM)
        assert stop.requested and stop.reason == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGTERM) is before  # handlers restored
    # off the main thread (a Ray Tune trial) no handler is installed, and none is needed
    import threading
    seen = {}

    def worker():
        with StopRequest() as s:
            seen["handler"] = signal.getsignal(signal.SIGTERM)
            seen["requested"] = s.requested
    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert seen == {"handler": before, "requested": False}


def test_eval_headless_counts_first_episodes_fairly(tmp_path):
    res = train("memory", smoke_cfg(tmp_path), live=False, run_id="ev")
    from trainer.eval import Evaluator
    cfg = smoke_cfg(tmp_path)
    ev = Evaluator("memory", cfg, "latest", num_agents=10, seed=3)
    out = ev.measure(25)
    assert out["episodes"] == 30  # 10 envs × their first 3 episodes
    assert 0.0 <= out["perf"] <= 1.0 and out["episode_length"] == 5.0  # memory: delay 4 + answer step
    assert ev.path == res["checkpoint"]


def test_eval_counts_every_episode_a_server_process_ends(tmp_path):
    """An env in server processes is one "env" of many agents to the evaluator: a log of n episodes
    counts n (memory's episodes are 5 steps, so each of 2 servers of 5 envs ends 5 every 5 steps)."""
    from trainer.eval import Evaluator
    cfg = smoke_cfg(tmp_path, **{"env.isolate": "1", "env.processes": "2"})
    ev = Evaluator("memory", cfg, None, num_agents=10, seed=3)
    try:
        out = ev.measure(25)
        assert ev.env.num_envs == 2
    finally:
        ev.env.close()
    assert out["episodes"] == 30  # each server's first 15: every env's first 3
    assert out["episode_length"] == 5.0 and 0.0 <= out["perf"] <= 1.0
    assert ev.steps == 15


def test_run_and_eval_resolve_the_env_once(tmp_path, monkeypatch):
    """`trainer.run --env NAME` turns the name into its EnvSource once: the config, the env, its kind
    and the run's messages all take that object (and `trainer.eval` the same)."""
    from envs import registry
    from trainer import eval as eval_mod
    from trainer.run import main
    looked_up = []
    real = registry._lookup
    monkeypatch.setattr(registry, "_lookup", lambda text: looked_up.append(text) or real(text))
    flags = [f"--{k}={v}" for k, v in dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"),
                                                     "base.log_dir": str(tmp_path / "logs")}).items()]
    assert main(["--env", "memory", "--plain", *flags]) == 0
    assert looked_up == ["memory"]
    looked_up.clear()
    assert eval_mod.main(["--env", "memory", "--headless", "--episodes", "4", "--agents", "4", *flags]) == 0
    assert looked_up == ["memory"]
