"""Nothing lost, nothing silent: each fault ends in a message of a line or two, no traceback, and
keeps every trained epoch. A C env crashing in process (every fatal signal, on any thread), a folder
that cannot be written (before any work, and later: the fallback folder), a full disk, two trainers
on one run folder, a killed save's leftovers, and config values outside their meaning. The servers
of an earlier protocol page are in tests/test_shm.py."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from childproc import read_until

import envs
from envs.errors import EnvCrashError
from puffbase.lock import Held, OwnedLock
from trainer import checkpoint as ckpt
from trainer import config, loggers
from trainer.spec import PolicySpec

ROOT = Path(__file__).resolve().parent.parent
CRASHY = ROOT / "tests" / "shm" / "crashy" / "crashy.h"
# 16 agents × 8 steps an epoch, a 1,648-float policy: an epoch in milliseconds on lavapipe
SMALL = {"vec.total_agents": "16", "train.horizon": "8", "train.minibatch_size": "64", "policy.hidden_size": "16",
         "policy.num_layers": "2"}
EPOCH = 16 * 8


def flags(tmp_path, **extra):
    out = dict(SMALL, **{"base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs")})
    out.update(extra)
    return [f"--{k}={v}" for k, v in out.items()]


def spec_for(env):
    return PolicySpec(obs_size={"memory": 4, "crashy": 2}[env], hidden=16, layers=2, act_sizes=(2,))


def run_main(argv, capsys):
    from trainer.run import main
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_loads(path, env):
    """A complete checkpoint: its sidecar, its hashes, the run's state to resume from."""
    weights, momentum, meta = ckpt.load(path, spec_for(env), env=env, with_momentum=True)
    assert np.isfinite(weights).all() and momentum is not None
    return meta["trainer_state"]


# ---- a C env that crashes in process ------------------------------------------------------

# crash_mode → what the message names
SIGNALS = {1: "SIGSEGV, an invalid memory access at address 0x0", 5: "SIGABRT: abort() was called",
           6: "SIGFPE, an integer division by zero", 7: "SIGILL, an illegal instruction",
           8: "SIGSEGV, an invalid memory access at address 0x", 9: "SIGBUS"}


@pytest.mark.parametrize("mode", sorted(SIGNALS))
def test_a_fatal_signal_in_puf_step_is_an_error_on_any_thread(mode):
    """The crash lands on an OpenMP worker thread (env 7 of 8 on 2 threads), in this very process."""
    env = envs.make(str(CRASHY), 8, config={"crash_mode": mode, "crash_step": 3, "crash_env": 7}, num_threads=2)
    env.reset()
    env.step()
    env.step()
    with pytest.raises(EnvCrashError) as info:
        env.step()
    e = info.value
    assert e.what.startswith(f"crashy: the env's C code crashed: {SIGNALS[mode]}") and "in puf_step of env 7" in e.what
    assert "--env.isolate 1 runs the env in a process that is restarted after a crash" in e.advice
    assert "gdb -batch -ex run -ex bt --args" in e.advice and "sanitize_envs.sh" in e.advice
    with pytest.raises(EnvCrashError, match="in puf_step of env 7"):  # never called again
        env.log()
    env.close()  # leaves the dead envs' memory alone


@pytest.mark.parametrize("mode,where", [(10, "puf_init of env 3"), (11, "puf_reset of env 3")])
def test_a_crash_in_puf_init_or_puf_reset_is_an_error(mode, where):
    with pytest.raises(EnvCrashError, match=f"SIGSEGV, an invalid memory access at address 0x0, in {where}"):
        env = envs.make(str(CRASHY), 4, config={"crash_mode": mode, "crash_env": 3}, num_threads=1)
        env.reset()


def test_the_vecenvs_own_threads_catch_it_too(monkeypatch):
    """Without OpenMP (a Mac without libomp, MSVC) the envs step on threadpool.h's workers."""
    monkeypatch.setenv("PUFFGPU_OPENMP", "0")
    env = envs.make(str(CRASHY), 8, config={"crash_mode": 1, "crash_step": 2, "crash_env": 7}, num_threads=2)
    assert env.threads_kind == "pthreads"
    env.reset()
    env.step()
    with pytest.raises(EnvCrashError, match="SIGSEGV, an invalid memory access at address 0x0, in puf_step of env 7"):
        env.step()


_FAULTHANDLER_LATER = f"""
import ctypes, faulthandler, sys
sys.path.insert(0, {str(ROOT)!r})
import envs
env = envs.make({str(CRASHY)!r}, 4, config={{"crash_mode": 1, "crash_step": 2}}, num_threads=2)
faulthandler.enable()  # after the env: it is the handler now, until the env's next call
env.reset()
try:
    env.step(); env.step()
except envs.EnvError as e:
    print("caught:", str(e).splitlines()[0], flush=True)
ctypes.string_at(0)  # a crash outside env code still ends the process, through faulthandler
"""


def test_faulthandler_does_not_preempt_the_guard_and_still_reports_other_crashes():
    res = subprocess.run([sys.executable, "-c", _FAULTHANDLER_LATER], capture_output=True, text=True, timeout=120)
    assert "caught: crashy: the env's C code crashed: SIGSEGV" in res.stdout, res.stdout + res.stderr
    assert res.stderr.count("Fatal Python error: Segmentation fault") == 1  # the second crash only
    assert "in string_at" in res.stderr or "ctypes" in res.stderr
    assert res.returncode == -signal.SIGSEGV


@pytest.mark.slow
def test_training_through_a_crash_keeps_the_last_epoch_and_resumes(tmp_path, capsys):
    """trainer.run on a header whose puf_step dereferences NULL in epoch 3, in process: exit 1 with
    two lines, the checkpoint of epoch 2 written from the GPU's weights, and it resumes."""
    argv = ["--env", str(CRASHY), "--plain", *flags(tmp_path, **{"train.total_timesteps": str(10 * EPOCH),
            "env.crash_mode": "1", "env.crash_step": "20", "env.crash_env": "9"})]
    code, out, err = run_main(argv, capsys)
    assert code == 1 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines[-2].startswith("error: crashy: the env's C code crashed: SIGSEGV, an invalid memory access at address "
                                "0x0, in puf_step of env 9 (")
    last = ckpt.latest(tmp_path / "ck", "crashy")
    assert lines[-1].startswith(f"the run stopped; kept: checkpoint {last} (step 256); --env.isolate 1 runs the env in "
                                f"a process that is restarted after a crash; to find the bug: gdb ")
    assert last.name == f"{2 * EPOCH:016d}.bin" and assert_loads(last, "crashy")["epoch"] == 2
    code, out, err = run_main(argv[:-3] + ["--env.crash_mode=0", "--base.load_model_path=latest"], capsys)
    assert code == 0 and f"loaded {last} (epoch 2, step 256)" in out, out + err
    assert assert_loads(ckpt.latest(tmp_path / "ck", "crashy"), "crashy")["epoch"] == 10


# ---- folders that cannot be written ---------------------------------------------------------

def _unprivileged():
    """A command prefix under which a folder's permissions hold: root without CAP_DAC_OVERRIDE (as
    the tests run as root here and in CI), or nothing for a user who is not root."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) drops root's permission override")
    return ["setpriv", "--bounding-set=-dac_override"]


@pytest.mark.slow
@pytest.mark.parametrize("key,what", [("checkpoint_dir", "checkpoint folder"), ("log_dir", "log folder")])
def test_an_unwritable_folder_is_refused_before_any_work(tmp_path, key, what):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    argv = flags(tmp_path, **{f"base.{key}": str(locked), "train.total_timesteps": str(3 * EPOCH)})
    res = subprocess.run([*_unprivileged(), sys.executable, "-m", "trainer.run", "--env", "memory", "--plain", *argv],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 1 and res.stdout == "", res.stdout  # no adapter, no tuning, no env: nothing ran
    assert res.stderr == (f"error: cannot write to the {what} {locked / 'memory'} (Permission denied): choose another "
                          f"with --base.{key} DIR, or make it writable\n")


@pytest.mark.slow
def test_a_folder_that_turns_unwritable_sends_checkpoints_to_the_fallback(tmp_path):
    """The run folder loses its write permission after epoch 2 (as a non-root user would see it):
    the next save goes to the fallback folder, said once, training goes on; Ctrl-C saves there too
    and exits 130; every checkpoint is complete and the fallback's resumes."""
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    argv = flags(tmp_path, **{"train.total_timesteps": str(1000 * EPOCH), "base.checkpoint_interval": "1"})
    proc = subprocess.Popen([*_unprivileged(), sys.executable, "-m", "trainer.run", "--env", "memory", "--plain", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env)
    read_until(proc, lambda line: line.startswith("epoch 2/"), timeout=300)
    run_dir = next((tmp_path / "ck" / "memory").iterdir())
    run_dir.chmod(0o555)
    lines = read_until(proc, lambda line: line.startswith("  resume with"), timeout=120)
    read_until(proc, lambda line: line.startswith("epoch "), timeout=60)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    run_dir.chmod(0o755)
    fallback = tmp_path / "tmp" / f"puffgpu-fallback-{os.getuid()}" / "checkpoints"
    warning = next(line for line in lines if line.startswith("warning:"))
    assert warning.startswith(f"warning: cannot write the checkpoint {run_dir}/") and "(Permission denied): saved it in " \
        f"{fallback / 'memory' / run_dir.name} instead, where this run's checkpoints go from now on; training goes on" \
        in warning, warning
    assert lines[-1] == f"  resume with --base.checkpoint_dir {fallback} --base.load_model_path latest\n"
    assert proc.returncode == 130 and "stopped (Ctrl-C)" in out and "Traceback" not in "".join(lines) + out
    kept = ckpt.list_checkpoints(tmp_path / "ck", "memory")
    moved = ckpt.list_checkpoints(fallback, "memory")
    assert kept and moved and int(kept[-1].stem) < int(moved[0].stem)  # nothing lost in between
    assert int(moved[0].stem) - int(kept[-1].stem) == EPOCH
    for path in kept + moved:
        assert_loads(path, "memory")
    res = subprocess.run([sys.executable, "-m", "trainer.run", "--env", "memory", "--plain", *argv,
                          f"--base.checkpoint_dir={fallback}", "--base.load_model_path=latest",
                          f"--train.total_timesteps={int(moved[-1].stem) + EPOCH}"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert res.returncode == 0 and f"loaded {moved[-1]}" in res.stdout, res.stdout + res.stderr


_FULL_DISK = """set -e
mount -t tmpfs -o size=200k tmpfs "$DISK"
status=0
"$PY" -m trainer.run --env memory --plain "$@" || status=$?
cp -a "$DISK/." "$COPY"
exit $status
"""


@pytest.mark.slow
def test_a_full_disk_sends_checkpoints_to_the_fallback(tmp_path):
    """A real 200 KB tmpfs (in a mount namespace of its own) holds the checkpoints: once a checkpoint
    no longer fits, the free-space check sends it to the fallback folder before anything is written."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("mounting a tmpfs needs root and unshare")
    disk, copy, tmp = tmp_path / "disk", tmp_path / "copy", tmp_path / "tmp"
    for d in (disk, copy, tmp):
        d.mkdir()
    argv = flags(tmp_path, **{"base.checkpoint_dir": str(disk), "train.total_timesteps": str(12 * EPOCH),
                              "base.checkpoint_interval": "1"})
    res = subprocess.run(["unshare", "-m", "sh", "-c", _FULL_DISK, "sh", *argv], capture_output=True, text=True,
                         timeout=300, cwd=ROOT, env=dict(os.environ, DISK=str(disk), COPY=str(copy), TMPDIR=str(tmp),
                                                         PY=sys.executable))
    if "mount:" in res.stderr and res.returncode and "trainer" not in res.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stdout + res.stderr
    fallback = tmp / f"puffgpu-fallback-{os.getuid()}" / "checkpoints"
    warning = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "not enough space for a checkpoint in " in warning[0] and "bytes free, a " \
        f"checkpoint needs {ckpt.checkpoint_bytes(spec_for('memory')):,}: saved it in {fallback / 'memory'}" in warning[0]
    kept, moved = ckpt.list_checkpoints(copy, "memory"), ckpt.list_checkpoints(fallback, "memory")
    assert kept and moved and [int(p.stem) for p in kept + moved] == [EPOCH * (i + 1) for i in range(12)]
    for path in kept + moved:
        assert_loads(path, "memory")


@pytest.mark.slow
def test_a_write_that_fails_anyway_goes_to_the_fallback(tmp_path, monkeypatch, capsys):
    """ENOSPC from the write itself (the free-space check passed: another process filled the disk
    meanwhile), from the third checkpoint on: nothing half-written stays, the run goes on."""
    from trainer.run import train
    fallback = tmp_path / "fb" / "checkpoints"
    monkeypatch.setattr(ckpt, "fallback_dir", lambda: fallback)
    real = ckpt.atomic_write_many

    def full_disk(items):  # the weights' temp file fills the disk, from the third checkpoint on
        items = list(items)
        path = Path(items[0][0])
        if path.is_relative_to(tmp_path / "ck") and path.name >= f"{3 * EPOCH:016d}.bin":
            tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}.1")
            tmp.write_bytes(items[0][1][:100])
            tmp.unlink()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp))
        return real(items)
    monkeypatch.setattr(ckpt, "atomic_write_many", full_disk)
    cfg, _ = config.load("memory", dict(SMALL, **{"base.checkpoint_dir": str(tmp_path / "ck"),
                                                  "base.log_dir": str(tmp_path / "logs"), "base.checkpoint_interval": "1",
                                                  "train.total_timesteps": str(5 * EPOCH)}))
    res = train("memory", cfg, live=False, run_id="full")
    err = capsys.readouterr().err
    assert f"warning: cannot write the checkpoint {tmp_path / 'ck' / 'memory' / 'full'}/{3 * EPOCH:016d}.bin " \
           f"(No space left on device): saved it in {fallback / 'memory' / 'full'} instead" in err
    assert [p.name for p in sorted((tmp_path / "ck" / "memory" / "full").glob("*"))] == [".trainer.lock"] + [
        f"{s * EPOCH:016d}.{x}" for s in (1, 2) for x in ("bin", "json", "momentum")]  # nothing of the third
    assert res["checkpoint"] == fallback / "memory" / "full" / f"{5 * EPOCH:016d}.bin"
    assert [int(p.stem) for p in ckpt.list_checkpoints(fallback, "memory")] == [3 * EPOCH, 4 * EPOCH, 5 * EPOCH]
    epochs = [json.loads(line).get("epoch") for line in Path(res["log"]).read_text().splitlines()[1:]]
    assert epochs == [1, 2, 3, 4, 5]


def test_the_log_moves_to_its_fallback_with_its_lines(tmp_path, monkeypatch, capsys):
    path, fallback = tmp_path / "logs" / "run.jsonl", tmp_path / "fallback" / "run.jsonl"
    log = loggers.JsonlLogger({"run_id": "r"}, path, fallback)
    log.log({"epoch": 1})
    real_open = open

    def full(p, *a, **k):
        if Path(p) == path and a and a[0] == "a":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(p, *a, **k)
    monkeypatch.setattr(loggers, "open", full, raising=False)
    log.log({"epoch": 2})
    log.log({"epoch": 3})
    assert capsys.readouterr().err == (f"warning: cannot write the log {path} (No space left on device); it goes on in "
                                       f"{fallback}, with its lines so far\n")
    rows = [json.loads(line) for line in fallback.read_text().splitlines()]
    assert [r.get("epoch") for r in rows] == [None, 1, 2, 3] and log.path == fallback


# ---- one trainer per run folder ----------------------------------------------------------------

_HOLD = """
import sys, time
sys.path.insert(0, {root!r})
from trainer import checkpoint as ckpt
lock = ckpt.lock_run({run!r}, "a test")
print("held", flush=True)
time.sleep(60)
"""


def test_a_run_folder_is_held_by_one_process_until_it_ends(tmp_path):
    run = tmp_path / "ck" / "memory" / "r"
    child = subprocess.Popen([sys.executable, "-c", _HOLD.format(root=str(ROOT), run=str(run))], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline() == "held\n"
        with pytest.raises(ckpt.CheckpointError) as info:
            ckpt.lock_run(run)
        assert str(info.value) == (f"the run folder {run} is in use by another trainer (pid {child.pid} (a test)): two "
                                   f"trainers in one run would overwrite each other's checkpoints and log; wait for it to "
                                   f"end, or stop it")
    finally:
        child.kill()  # SIGKILL: no clean-up of its own, the OS drops the lock
        child.wait()
    ckpt.lock_run(run).release()
    with OwnedLock(tmp_path / "x.lock", "first"):  # within one process too
        with pytest.raises(Held, match=f"held by pid {os.getpid()} \\(first\\)"):
            OwnedLock(tmp_path / "x.lock").acquire()


@pytest.mark.slow
def test_a_second_trainer_resuming_a_running_run_is_refused(tmp_path, capsys):
    """Trainer A runs; B resumes `latest` (A's run): refused naming A's pid, A unharmed. A fresh run
    beside them gets its own folder. A is killed; what its kill left (a save's temporary file, an
    epoch logged but not saved) does not survive the resume, and the log holds each epoch once."""
    argv = flags(tmp_path, **{"train.total_timesteps": str(1000 * EPOCH), "base.checkpoint_interval": "2"})
    a = subprocess.Popen([sys.executable, "-m", "trainer.run", "--env", "memory", "--plain", *argv],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        read_until(a, lambda line: line.startswith("epoch 3/"), timeout=300)
        run_dir = ckpt.latest(tmp_path / "ck", "memory").parent
        code, out, err = run_main(["--env", "memory", "--plain", *argv, "--base.load_model_path=latest"], capsys)
        assert code == 1 and err.startswith(f"error: the run folder {run_dir} is in use by another trainer (pid {a.pid} "
                                            f"(trainer.run since "), err
        assert len(err.strip().splitlines()) == 1 and a.poll() is None
        code, out, err = run_main(["--env", "memory", "--plain", *flags(tmp_path, **{"train.total_timesteps":
                                                                                   str(EPOCH)})], capsys)  # a fresh run
        assert code == 0
        assert [p.name for p in (tmp_path / "ck" / "memory").iterdir()].count(run_dir.name) == 1
        assert len(list((tmp_path / "ck" / "memory").iterdir())) == 2
    finally:
        a.kill()
        a.wait()
    last = ckpt.latest(tmp_path / "ck", "memory")
    epoch = assert_loads(last, "memory")["epoch"]
    stray = run_dir / f".{epoch + 2:016d}.bin.tmp.{a.pid}.1"  # what a SIGKILL inside a save leaves
    stray.write_bytes(b"half")
    log = tmp_path / "logs" / "memory" / f"{run_dir.name}.jsonl"
    with open(log, "a", encoding="utf-8") as f:  # the kill came after the log line, before the save
        f.write(json.dumps({"type": "epoch", "epoch": epoch + 1}) + "\n" + '{"type": "epoch", "ep')
    code, out, err = run_main(["--env", "memory", "--plain", *argv, "--base.load_model_path=latest",
                               f"--train.total_timesteps={(epoch + 2) * EPOCH}"], capsys)
    assert code == 0 and f"note: removed {stray}, a temporary file of a save that did not finish" in out, out + err
    assert f"line(s) past epoch {epoch} (logged after the last checkpoint; trained again now)" in out
    assert not stray.exists()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["epoch"] for r in rows if r["type"] == "epoch"] == list(range(1, epoch + 3))


def test_clean_strays_and_drop_epochs_after(tmp_path):
    (tmp_path / ".0000000000000128.bin.tmp.1.2").write_bytes(b"x")
    (tmp_path / "0000000000000128.bin").write_bytes(b"keep")
    assert ckpt.clean_strays(tmp_path) == [".0000000000000128.bin.tmp.1.2"]
    assert [p.name for p in tmp_path.iterdir()] == ["0000000000000128.bin"]
    log = tmp_path / "r.jsonl"
    rows = [{"type": "config"}, {"type": "epoch", "epoch": 1}, {"type": "epoch", "epoch": 2}, {"type": "config"},
            {"type": "epoch", "epoch": 3}]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert loggers.drop_epochs_after(log, 2) == 1 and loggers.drop_epochs_after(log, 2) == 0
    assert [json.loads(line).get("epoch") for line in log.read_text().splitlines()] == [None, 1, 2, None]


# ---- every bad value a message ------------------------------------------------------------------

@pytest.mark.parametrize("flag,message", [
    ("--train.minibatch_size=0", "train.minibatch_size = 0 must be a finite number >= 1 (samples per minibatch)"),
    ("--train.minibatch_size=-512", "train.minibatch_size = -512 must be a finite number >= 1 (samples per minibatch)"),
    ("--train.gamma=2", "train.gamma = 2.0 must be in [0, 1] (a discount factor)"),
    ("--train.gae_lambda=-0.1", "train.gae_lambda = -0.1 must be in [0, 1] (GAE's lambda)"),
    ("--train.learning_rate=nan", "train.learning_rate = nan must be a finite number >= 0 (Muon's step size)"),
    ("--train.learning_rate=inf", "train.learning_rate = inf must be a finite number >= 0 (Muon's step size)"),
    ("--train.momentum=1", "train.momentum = 1.0 must be in [0, 1) (Muon's momentum)"),
    ("--train.max_grad_norm=0", "train.max_grad_norm = 0.0 must be a finite number > 0 (the gradient norm's cap)"),
    ("--train.ent_coef=-inf", "train.ent_coef = -inf must be a finite number (the entropy bonus)"),
    ("--vec.num_threads=0", "vec.num_threads = 0 must be a finite number >= 1 (threads)"),
    ("--base.seed=-1", "base.seed = -1 must be in [0, 4294967296) (an unsigned 32-bit seed)"),
])
def test_a_value_outside_its_meaning_is_refused_at_start(flag, message, capsys):
    code, out, err = run_main(["--env", "memory", flag], capsys)
    assert code == 1 and out == "" and err == f"error: invalid config:\n  {message}\n"


def test_learner_rules_blame_the_right_key():
    with pytest.raises(ValueError, match=r"^train.minibatch_size must be a positive multiple of train.horizon \(8\), "
                                         r"got -512$"):
        config.LearnerConfig(minibatch_size=-512).check_minibatching(16, 8)


def test_a_folder_or_a_missing_file_as_load_model_path(tmp_path, capsys):
    folder = tmp_path / "runs"
    folder.mkdir()
    for path, message in [(folder, f"error: {folder} is a folder: --base.load_model_path takes a checkpoint's .bin file, "
                                   f"or latest (the newest under --base.checkpoint_dir); it holds no complete checkpoint "
                                   f"(a .bin with its .json sidecar)\n"),
                          (folder / "x.bin", f"error: checkpoint {folder / 'x.bin'} does not exist (--base.load_model_path"
                                             f" takes a checkpoint's .bin file, or latest)\n")]:
        code, out, err = run_main(["--env", "memory", *flags(tmp_path), f"--base.load_model_path={path}"], capsys)
        assert code == 1 and out == "" and err == message
    spec = spec_for("memory")
    saved = ckpt.save(folder / "memory" / "r" / f"{EPOCH:016d}.bin", np.zeros(spec.num_floats, np.float32), spec,
                      "memory", EPOCH)
    with pytest.raises(ckpt.CheckpointError, match=f"the newest checkpoint in it is {saved}$"):
        ckpt.resolve(str(folder), tmp_path, "memory")


def test_a_bin_of_another_policy_is_not_called_truncated(tmp_path):
    spec, other = spec_for("memory"), PolicySpec(obs_size=4, hidden=64, layers=3, act_sizes=(2,))
    path = tmp_path / "pufferlib.bin"  # no sidecar, as PufferLib writes them
    path.write_bytes(np.zeros(other.num_floats, np.float32).tobytes())
    with pytest.raises(ckpt.CheckpointError) as info:
        ckpt.load(path, spec)
    assert str(info.value) == (f"{path} is {other.nbytes:,} bytes but the run's policy (obs size 4, heads [2], "
                               f"hidden_size 16, num_layers 2) takes {spec.nbytes:,}: it was saved for another policy: "
                               f"it fits --policy.hidden_size 64 --policy.num_layers 3")
    saved = ckpt.save(tmp_path / "r" / "1.bin", np.zeros(spec.num_floats, np.float32), spec, "memory", 1)
    saved.write_bytes(saved.read_bytes()[:-8])  # cut: its sidecar says what it was
    with pytest.raises(ckpt.CheckpointError, match=r"\(truncated: its sidecar names this architecture\)"):
        ckpt.load(saved, spec)


@pytest.mark.parametrize("argv,message", [
    (["--episodes", "0"], "error: --episodes must be >= 1, got 0\n"),
    (["--agents", "-1"], "error: --agents must be >= 1, got -1\n"),
])
def test_eval_counts_must_be_positive(argv, message, capsys):
    from trainer.eval import main
    assert main(["--env", "memory", "--headless", *argv]) == 2
    assert capsys.readouterr().err == message


@pytest.mark.slow
def test_eval_takes_the_checkpoint_folder_trainer_run_writes(tmp_path, capsys):
    """`--checkpoint-dir DIR` in both commands; `latest` looks there, and says so when it is empty."""
    from trainer.eval import main
    argv = [f"--{k}={v}" for k, v in SMALL.items()] + [f"--train.total_timesteps={EPOCH}",
                                                       f"--base.log_dir={tmp_path / 'logs'}"]
    code, _, _ = run_main(["--env", "memory", "--plain", *argv, f"--checkpoint-dir={tmp_path / 'mine'}"], capsys)
    assert code == 0
    assert main(["--env", "memory", "--headless", "--episodes", "4", "--agents", "4", "--checkpoint-dir",
                 str(tmp_path / "mine")]) == 0
    assert f"checkpoint {ckpt.latest(tmp_path / 'mine', 'memory')}" in capsys.readouterr().out
    assert main(["--env", "memory", "--headless", "--checkpoint-dir", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err == (f"error: no checkpoints under {tmp_path / 'none' / 'memory'}: `latest` looks "
                                       f"there; another folder: --checkpoint-dir DIR (--base.checkpoint_dir)\n")


def test_an_endless_loop_in_a_js_game_names_its_line(tmp_path):
    game = tmp_path / "loops.js"
    game.write_text("function setup() {}\nfunction resetGame() {}\nfunction getGameState() { return {score: 0}; }\n"
                    "let ball = {x: 0, y: 0};\nfunction draw() {\n  background(0);\n  if (frameCount > 1) {\n"
                    "    while (ball.y < 10) {\n      ball.x += 1;\n    }\n  }\n}\n", encoding="utf-8")
    (tmp_path / "loops.ini").write_text("[js]\nstep_mops = 5\n", encoding="utf-8")
    env = envs.make(str(game), 2, num_threads=1)
    env.reset()
    with pytest.raises(envs.EnvError, match=r"^loops\.js:8: a step \(keyPressed\(\), draw\(\), getGameState\(\)\) ran "
                                            r"more than 5 million JS operations without returning \(an endless loop\?\)"):
        for _ in range(3):
            env.step(np.zeros_like(env.actions))
