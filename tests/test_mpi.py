"""Data-parallel training over MPI (trainer/distributed.py), with 2 ranks on this machine's adapter:
the split update against the learner goldens, bit-identical ranks, a 2-rank run that learns and is
seen once, checkpoints that move between 2 ranks and 1 process, a killed rank, Ctrl-C, a config that
does not split; and, without a launcher, that MPI is never imported."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from childproc import read_until

from trainer import checkpoint as ckpt
from trainer import distributed
from trainer.run import average_metrics

ROOT = Path(__file__).resolve().parent.parent


def mpiexec() -> str:
    """The launcher of the MPI mpi4py runs on: the venv's (PyPI's mpich), else one on PATH."""
    pytest.importorskip("mpi4py", reason='data-parallel training needs pip install -e ".[mpi]"')
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if not found:
        pytest.skip("no mpiexec (pip install -e \".[mpi]\" installs MPICH's)")
    return found


def no_launcher_env(**extra) -> dict:
    """This process's environment without a launcher's world-size variables (a test run started by
    mpiexec must not make its children look like ranks)."""
    sizes = {size_var for size_var, _, _ in distributed.LAUNCHERS}
    return {**{k: v for k, v in os.environ.items() if k not in sizes}, **extra}


def launch(args, n=2, **kw):
    return subprocess.Popen([mpiexec(), "-n", str(n), sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=no_launcher_env(PYTHONPATH=str(ROOT)),
                            **kw)


def run(args, n=2, timeout=300):
    proc = launch(args, n)
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


MEMORY = {"vec.total_agents": 256, "policy.hidden_size": 32, "policy.num_layers": 2, "train.horizon": 16,
          "train.minibatch_size": 1024}


def train_args(tmp_path, **flags):
    args = ["-m", "trainer.run", "--env", "memory", "--plain"]
    for k, v in dict(MEMORY, **{"base.checkpoint_dir": tmp_path / "ck", "base.log_dir": tmp_path / "logs"},
                     **flags).items():
        args += [f"--{k}", str(v)]
    return args


def one_process(args, timeout=300):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=no_launcher_env(),
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def log_rows(tmp_path):
    logs = sorted((tmp_path / "logs" / "memory").glob("*.jsonl"))
    return logs, [[json.loads(line) for line in p.read_text().splitlines()] for p in logs]


# ------------------------------------------------------------------------------- the update itself

@pytest.mark.slow
def test_split_update_matches_the_goldens_and_ranks_stay_identical():
    """Each golden minibatch split over 2 ranks (R/2 rows each, gradients averaged) updates as the
    torch reference of the whole minibatch does, within the one-process goldens' tolerances; after 4
    more epochs both ranks hold the same weights and momentum bit for bit."""
    code, out = run(["tests/mpi/split_learner.py"])
    print(out)  # the ranks' output, so that checks/vulkan_validation.py (pytest -s) sees their layer messages
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert code == 0 and lines, out
    res = json.loads(lines[-1])
    assert res["ranks"] == 2 and res["failures"] == [], out
    assert res["checks"] >= 250  # 5 cases × every tensor, its change and momentum, and the stats, per update
    assert res["worst"]["learner"] <= 1e-5 and res["worst"]["learner_step"] <= 1e-3


# ------------------------------------------------------------------------------- whole runs

@pytest.mark.slow
def test_two_ranks_learn_log_once_and_checkpoints_move_between_2_ranks_and_1_process(tmp_path):
    code, out = run(train_args(tmp_path, **{"train.total_timesteps": 327680}), timeout=600)
    assert code == 0, out
    assert out.count("done: 327,680 steps") == 1 and "data-parallel over 2 ranks" in out, out
    logs, rows = log_rows(tmp_path)
    assert len(logs) == 1, logs  # rank 0 logs; the other rank writes nothing
    header, epochs = rows[0][0], rows[0][1:]
    assert header["num_agents"] == 256 and len(header["ranks"]) == 2
    assert len(epochs) == 80 and epochs[-1]["global_step"] == 327680
    assert epochs[-1]["env/perf"] >= 0.95, epochs[-1]  # the memory task learned (random play: 0.5)
    assert {"rank/sps_0", "rank/sps_1", "allreduce_ms", "time/allreduce"} <= set(epochs[-1])
    run_dir = tmp_path / "ck" / "memory" / header["run_id"]
    assert sorted(p.name for p in run_dir.iterdir()) == [".trainer.lock"] + [  # rank 0's lock on the run folder
        f"{327680:016d}.{s}" for s in ("bin", "json", "momentum")]

    # the 2-rank checkpoint evaluates in one process as any checkpoint does
    code, ev = one_process(["-m", "trainer.eval", "--env", "memory", "latest", "--headless", "--episodes", "200",
                            "--base.checkpoint_dir", str(tmp_path / "ck"), "--policy.hidden_size", "32",
                            "--policy.num_layers", "2"])
    assert code == 0, ev
    perf = float(ev.strip().splitlines()[-1].split()[1])  # its last line: "perf X"
    assert perf >= 0.95, ev

    # ... resumes in one process (2 more epochs of 4096 steps) ...
    code, out1 = one_process(train_args(tmp_path, **{"train.total_timesteps": 327680 + 2 * 4096,
                                                     "base.load_model_path": "latest"}))
    assert code == 0 and f"step {327680}" in out1 and "done: 335,872 steps" in out1, out1
    # ... and that one resumes on 2 ranks again
    code, out2 = run(train_args(tmp_path, **{"train.total_timesteps": 327680 + 3 * 4096,
                                             "base.load_model_path": "latest"}))
    assert code == 0 and "(epoch 82, step 335872)" in out2 and out2.count("done: 339,968 steps") == 1, out2
    _, rows = log_rows(tmp_path)
    assert max(r[-1]["env/perf"] for r in rows if len(r) > 1) >= 0.95


@pytest.mark.slow
def test_a_killed_rank_stops_every_rank_and_the_checkpoint_is_intact(tmp_path):
    proc = launch(train_args(tmp_path, **{"train.total_timesteps": 4096 * 2000, "base.checkpoint_interval": 1}))
    head = "".join(read_until(proc, lambda line: "epoch 3/" in line))
    pid = int(head.split("1: pid ")[1].split()[0])  # the start line names every rank's pid
    os.kill(pid, signal.SIGKILL)
    t0 = time.time()
    out, _ = proc.communicate(timeout=60)
    assert time.time() - t0 < 30 and proc.returncode != 0, out
    assert str(pid) in out, out  # the launcher's report names the dead process, the start line its rank
    last = ckpt.latest(tmp_path / "ck", "memory")
    assert int(last.stem) >= 3 * 4096 - 4096 and int(last.stem) % 4096 == 0
    spec_args = ["--policy.hidden_size", "32", "--policy.num_layers", "2"]
    code, ev = one_process(["-m", "trainer.eval", "--env", "memory", str(last), "--headless", "--episodes", "10",
                            *spec_args])
    assert code == 0, ev  # the last checkpoint loads and plays


@pytest.mark.slow
def test_a_rank_whose_env_fails_names_itself_and_stops_every_rank(tmp_path):
    args = train_args(tmp_path, **{"train.total_timesteps": 4096 * 2000, "base.checkpoint_interval": 1})
    t0 = time.time()
    code, out = run(["tests/mpi/failing_rank.py", *args[2:]], timeout=120)
    assert time.time() - t0 < 60 and code != 0, out
    assert "rank 1 of 2: error: the env failed (injected by the test)" in out, out
    assert "stopping every rank" in out and "kept: checkpoint" in out, out
    last = ckpt.latest(tmp_path / "ck", "memory")
    assert int(last.stem) == 8192  # 40 steps of 16 per epoch: epochs 1 and 2 completed and saved


@pytest.mark.slow
def test_ctrl_c_to_the_launcher_stops_every_rank_and_saves_once(tmp_path):
    proc = launch(train_args(tmp_path, **{"train.total_timesteps": 4096 * 2000}))
    read_until(proc, lambda line: "epoch 2/" in line)
    proc.send_signal(signal.SIGINT)  # mpiexec forwards it to every rank
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130 and out.count("stopped (Ctrl-C)") == 1, out  # saved, not finished: 128 + SIGINT
    files = list((tmp_path / "ck" / "memory").rglob("*.bin"))
    assert len(files) == 1, files
    _, rows = log_rows(tmp_path)
    assert int(files[0].stem) == rows[0][-1]["global_step"]  # the last completed epoch


def test_a_config_that_does_not_split_is_refused_before_any_work(tmp_path):
    code, out = run(train_args(tmp_path, **{"vec.total_agents": 255, "train.minibatch_size": 1040}), timeout=120)
    assert code != 0
    assert "vec.total_agents (255) must split evenly over 2 ranks: try 254 or 256" in out, out
    assert "train.minibatch_size (1040) must split over 2 ranks into whole horizons (2 × train.horizon 16 = 32): " \
           "try 1024 or 1056" in out, out
    assert out.count("cannot be split over the ranks") == 1  # said once, by rank 0
    assert not (tmp_path / "ck").exists() and not (tmp_path / "logs").exists()


# ------------------------------------------------------------------------------- without a launcher

def test_without_a_launcher_mpi_is_never_imported():
    code = ("import sys, trainer.distributed as d, trainer.run; w = d.connect(); "
            "assert w.size == 1 and w.average is not None and 'mpi4py' not in sys.modules; print('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=no_launcher_env())
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr


def test_launcher_detection_and_the_install_hint(monkeypatch):
    for size_var, _, _ in distributed.LAUNCHERS:
        monkeypatch.delenv(size_var, raising=False)
    assert distributed.launched_size() == 1
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")  # an srun step of one task is one process
    assert distributed.launched_size() == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    assert distributed.launched_size() == 4 and distributed.launch_rank() == 3
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # as if not installed
    with pytest.raises(distributed.DistributedError, match=r"OMPI_COMM_WORLD_SIZE=4.*pip install -e \"\.\[mpi\]\""):
        distributed.connect()


def test_split_config_and_metric_averages():
    cfg = {"vec": {"total_agents": 1024}, "train": {"minibatch_size": 8192, "horizon": 64}, "base": {}}
    local = distributed.split_config(cfg, 4)
    assert local["vec"]["total_agents"] == 256 and local["train"]["minibatch_size"] == 2048
    assert cfg["vec"]["total_agents"] == 1024  # the run's config is left whole
    assert distributed.split_config(cfg, 1) is cfg
    with pytest.raises(distributed.DistributedError, match=r"total_agents \(1024\) must split evenly over 3 ranks: "
                                                           r"try 1023 or 1026"):
        distributed.split_config(cfg, 3)
    assert average_metrics([{"perf": 1.0, "n": 2.0}, {"perf": 0.0}, {}]) == {"perf": 0.5, "n": 2.0}


def test_one_world_is_the_identity():
    w = distributed.World()
    a = np.arange(5, dtype=np.float32)
    assert w.average(a) is a and w.gather(3) == [3] and w.share("x") == "x" and w.any(True) and not w.any(False)
    w.check_identical("weights", a)  # nothing to compare against


def test_the_average_sums_in_rank_order_on_every_rank():
    """3 ranks (slices of uneven length): the all-to-all/sum/all-gather average is the plain sum in rank
    order 0, 1, 2 divided by 3, the same bits everywhere."""
    code, out = run(["tests/mpi/average.py"], n=3, timeout=120)
    assert code == 0 and out.count("ok") == 3, out  # one per rank (their lines may interleave)


def test_an_adapter_list_names_one_adapter_per_local_rank():
    """--adapter / PUFFGPU_ADAPTER "A,B": local rank 0 takes A, 1 takes B, 2 takes A again."""
    from trainer.gpu import GPUError, choose_adapter
    assert "llvmpipe" in str(choose_adapter("no-such-gpu,llvmpipe", local_rank=1).info.get("device")).lower()
    assert "llvmpipe" in str(choose_adapter("no-such-gpu,llvmpipe", local_rank=3).info.get("device")).lower()
    with pytest.raises(GPUError, match="'no-such-gpu' matches no adapter"):
        choose_adapter("no-such-gpu,llvmpipe", local_rank=2)
    assert choose_adapter(None, local_rank=5) is not None  # wraps around the best kind's adapters
