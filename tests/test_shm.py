"""The shared-memory env protocol (docs/protocol.md): the block round trip, a server in C (the arena)
and in Python (Reacher), faults (kill -9, a hang, a crash inside an isolated C env), mismatched
headers, and no /dev/shm block left behind by any test (the autouse fixture checks)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.shm import protocol as shm
from envs.build import build_executable
from envs.shm import env as shm_env
from envs.shm.env import ServerError, ShmVecEnv

ROOT = Path(__file__).resolve().parent.parent
CRASHY = ROOT / "tests" / "shm" / "crashy" / "crashy.h"
BAD_SERVER = ROOT / "tests" / "shm" / "bad_server.py"

pytestmark = pytest.mark.skipif(shm.supported() is not None or not Path("/dev/shm").is_dir(),
                                reason="POSIX shared memory with /dev/shm (Linux)")


_PIDS = {os.getpid()}  # this process and the trainer processes the tests start


def _blocks():
    """Blocks of this test session (names carry the creating trainer's pid), so that other
    processes' blocks on the same machine do not count."""
    out = set()
    for p in Path("/dev/shm").iterdir():
        m = re.match(r"puf-?(?:test-|attach-)?(\d+)-", p.name)
        if m and int(m[1]) in _PIDS:
            out.add(p.name)
    return out


@pytest.fixture(autouse=True)
def no_leaked_blocks():
    before = _blocks()
    yield
    for _ in range(100):  # servers killed by their parent's death may take a moment
        if not _blocks() - before:
            break
        time.sleep(0.02)
    assert not _blocks() - before, f"shared-memory blocks left behind: {sorted(_blocks() - before)}"


@pytest.fixture
def pythonpath(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _server_ini(tmp_path, command, processes=2, timeout=30.0, extra=""):
    ini = tmp_path / "game.ini"
    ini.write_text(f"[env]\ncommand = {command}\nprocesses = {processes}\ntimeout = {timeout}\n{extra}",
                   encoding="utf-8")
    return ini


def _random_steps(env, steps, rng=None):
    rng = rng or np.random.default_rng(0)
    for _ in range(steps):
        env.actions[:] = rng.integers(0, np.maximum(np.array(env.act_sizes), 2), size=env.actions.shape)
        env.step()


# ---- the block, both halves in this process ----

def test_block_round_trip_through_the_c_helpers():
    """A Python server in a thread and the trainer's C link: actions in, arrays out, reset seed,
    an unsupported command, quit; the layout is the C header's."""
    name = f"/puf-test-{os.getpid()}-rt"
    srv_block = shm.Block.create(name, 5, 3, (3, 1), np.float32, masks=True, log_names=("score", "n"))
    try:
        lib, ffi = shm.native().lib, shm.native().ffi
        words = ffi.cast("uint32_t*", srv_block.address)
        lib.puf_py_store(words + shm.WORD_FLAGS, shm.FLAG_READY)
        trainer = shm.Block.attach_ready(name)
        assert trainer.spec()["act_sizes"] == (3, 1) and trainer.spec()["masks"]
        assert trainer.spec()["log_names"] == ["score", "n"]
        off, size = shm.layout(5, 3, np.float32, 2, 4, 2)
        assert size == int(trainer.h["block_size"]) and all(o % 64 == 0 for o in off.values())

        def server():
            base, seen = ffi.cast("unsigned char*", srv_block.address), 0
            while True:
                while not lib.puf_py_server_wait(base, seen, 100_000_000, 100):
                    pass
                seen = lib.puf_py_load(words + shm.WORD_REQUEST_SEQ)
                cmd, arg = int(srv_block.h["command"]), int(srv_block.h["arg"])
                status = shm.OK
                if cmd == shm.CMD_QUIT:
                    lib.puf_py_server_reply(base, seen, status)
                    return
                if cmd == shm.CMD_STEP:
                    srv_block.observations[:] = srv_block.actions.sum(1, keepdims=True) + np.arange(3)
                    srv_block.rewards[:] = srv_block.actions[:, 1]
                    srv_block.terminals[:] = [1, 0, 0, 0, 0]
                    srv_block.truncations[:] = [0, 1, 0, 0, 0]
                    srv_block.masks[:, 0] = 0
                    srv_block.log[:] += (2.0, 1.0)
                elif cmd == shm.CMD_RESET:
                    srv_block.observations[:] = arg
                else:
                    status = shm.UNSUPPORTED
                lib.puf_py_server_reply(base, seen, status)

        t = threading.Thread(target=server, daemon=True)
        t.start()
        obs, acts = np.zeros((5, 3), np.float32), np.zeros((5, 2), np.float32)
        rew, term, trunc = (np.zeros(5, np.float32) for _ in range(3))
        masks = np.ones((5, 4), np.uint8)
        link = ffi.new("PufLink*")
        link.base = ffi.cast("unsigned char*", trainer.address)
        link.actions = ffi.cast("float*", ffi.from_buffer(acts))
        link.observations = ffi.from_buffer(obs)
        link.rewards, link.terminals = ffi.from_buffer("float[]", rew), ffi.from_buffer("float[]", term)
        link.truncations = ffi.from_buffer("float[]", trunc)
        link.masks = ffi.from_buffer("unsigned char[]", masks)

        def call(cmd, arg=0):
            lib.puf_client_ring(link, cmd, arg)
            assert lib.puf_client_wait_all(link, 1, 5_000_000_000, 100, 1) == 0
            return int(trainer.h["status"])

        assert call(shm.CMD_RESET, 42) == shm.OK and (obs == 42).all()
        acts[:] = [[0, 0.5], [1, -1], [2, 3], [0, 0], [1, 1]]
        assert call(shm.CMD_STEP) == shm.OK
        np.testing.assert_array_equal(obs, acts.sum(1, keepdims=True) + np.arange(3))
        np.testing.assert_array_equal(rew, acts[:, 1])
        np.testing.assert_array_equal(term, [1, 1, 0, 0, 0])  # terminal OR truncated
        np.testing.assert_array_equal(trunc, [0, 1, 0, 0, 0])
        assert (masks[:, 0] == 0).all() and (masks[:, 1:] == 1).all()
        assert call(shm.CMD_SAVE) == shm.UNSUPPORTED
        assert call(shm.CMD_QUIT) == shm.OK
        t.join(5)
        assert list(trainer.log) == [2.0, 1.0]
        trainer.close()
    finally:
        shm.shm_unlink(name)
        srv_block.close()


def test_header_offsets_are_the_c_headers():
    """Every field offset of the Python header mirror is the C struct's (compiled and printed)."""
    fields = [n for n in shm.HEADER.names]
    src = ('#include "puffer_server.h"\nint main(void){\n'
           + "".join(f'printf("%zu\\n", offsetof(PufShmHeader, {f}));\n' for f in fields)
           + 'printf("%zu\\n", sizeof(PufShmHeader)); return 0;}\n')
    out = _compile_and_run(src, "gcc", ["-std=c99"])
    assert [int(x) for x in out.split()] == [shm.HEADER.fields[f][1] for f in fields] + [shm.HEADER_SIZE]


def _compile_and_run(src, cc, flags, tmp=None):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        c = Path(d) / "t.c"
        c.write_text(src, encoding="utf-8")
        exe = Path(d) / "t"
        r = subprocess.run([cc, *flags, "-Wall", "-Wextra", "-Werror", f"-I{shm.SHM_DIR}",
                            *(["-x", "c++"] if cc.endswith("++") else []), str(c), "-o", str(exe)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("cc,flags", [("gcc", ["-std=c99"]), ("g++", ["-std=c++11"])])
def test_the_arena_server_compiles_as_c_and_cpp(cc, flags, tmp_path):
    if shutil.which(cc) is None:
        pytest.skip(f"no {cc}")
    r = subprocess.run([cc, *flags, "-O1", "-Wall", "-Wextra", "-Werror", *(["-x", "c++"] if cc == "g++" else []),
                        f"-I{shm.SHM_DIR}", str(ROOT / "envs" / "ocean" / "arena" / "arena_server.c"), "-lm", "-o", str(tmp_path / "a")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_windows_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(NotImplementedError, match="not supported on Windows yet"):
        shm.check_supported()


# ---- servers in other processes ----

def test_c_server_arena_steps_logs_and_cleans_up():
    env = envs.make("arena", 64, config={"processes": 2, "max_steps": 8}, seed=3)
    try:
        assert isinstance(env, ShmVecEnv) and env.num_agents == 64 and env.act_sizes == (3, 2, 1)
        assert env.obs_size == 16 and env.obs_dtype == np.float32 and env.frameskip == 3
        env.reset()
        _random_steps(env, 8)
        assert np.isfinite(env.observations).all()
        assert (env.truncations == 1).all() and (env.terminals == 1).all()  # max_steps 8: all truncated now
        log = env.log()
        assert log["n"] == 64 and log["episode_length"] == 8 and 0 <= log["perf"] <= 1
        assert env.log() == {}  # read and cleared
        assert env.epoch_metrics()["server_restarts"] == 0
    finally:
        env.close()


def test_save_and_load_state_through_the_protocol(tmp_path):
    with envs.make("arena", 32, config={"processes": 2}, seed=1) as env:
        env.reset()
        _random_steps(env, 5)
        paths = env.save_state(tmp_path / "state")
        assert [Path(p).is_file() for p in paths] == [True, True]
        rng = np.random.default_rng(7)
        _random_steps(env, 10, rng)
        after = env.observations.copy()
        env.load_state(tmp_path / "state")
        _random_steps(env, 10, np.random.default_rng(7))
        np.testing.assert_array_equal(env.observations, after)


def test_a_server_without_save_state_says_so(tmp_path, pythonpath):
    ini = _server_ini(tmp_path, "{python} -m envs.shm.server --agents {agents} --shm {name}", processes=1)
    with envs.make(str(ini), 2) as env:
        env.reset()
        with pytest.raises(NotImplementedError, match="does not offer the save-state command"):
            env.save_state(tmp_path / "s")
        env.step()  # still serving


def test_same_seed_same_episodes():
    def run():
        with envs.make("arena", 32, config={"processes": 2}, seed=5) as env:
            env.reset()
            _random_steps(env, 20, np.random.default_rng(1))
            return env.observations.copy()
    np.testing.assert_array_equal(run(), run())


def test_python_server(tmp_path, pythonpath):
    ini = _server_ini(tmp_path, "{python} -m envs.shm.server --agents {agents} --shm {name} --seed {seed} "
                      "--max-steps 16", processes=2)
    with envs.make(str(ini), 10) as env:
        assert env.num_agents == 10 and env.obs_size == 6 and env.act_sizes == (3, 3)
        assert [s.declared for s in env._servers] == [5, 5]
        env.reset()
        np.testing.assert_allclose(env.observations[:, 4:6], env.observations[:, 2:4] - env.observations[:, 0:2],
                                   atol=1e-6)
        pos = env.observations[:, :2].copy()
        env.actions[:] = 2  # +x, +y
        env.step()
        moved = env.observations[:, :2] - pos
        done = env.terminals == 1
        np.testing.assert_allclose(moved[~done], np.minimum(0.05, 1 - pos[~done]), atol=1e-6)
        _random_steps(env, 20)
        assert env.log()["n"] >= 10


def test_kill9_of_a_server_mid_rollout_restarts_it():
    env = envs.make("arena", 48, config={"processes": 3})
    try:
        env.reset()
        _random_steps(env, 3)
        victim = env.server_pids()[1]
        os.kill(victim, signal.SIGKILL)
        _random_steps(env, 1)
        assert env.restarts == 1 and env.server_pids()[1] != victim
        assert "server 1" in env.faults[0] and "killed by SIGKILL" in env.faults[0]
        rows = slice(16, 32)
        assert (env.terminals[rows] == 1).all() and (env.truncations[rows] == 1).all()
        assert (env.rewards[rows] == 0).all()
        assert not env.truncations[:16].any()  # the others go on
        _random_steps(env, 3)
        assert np.isfinite(env.observations).all()
        assert env.epoch_metrics()["server_restarts"] == 1
    finally:
        env.close()


def test_a_hung_server_times_out_and_restarts():
    env = envs.make("arena", 32, config={"processes": 2, "timeout": 0.5})
    try:
        env.reset()
        victim = env.server_pids()[0]
        os.kill(victim, signal.SIGSTOP)  # alive, never answers
        t = time.monotonic()
        _random_steps(env, 1)
        assert 0.5 <= time.monotonic() - t < 10
        assert env.restarts == 1 and "did not answer within 0.5 s" in env.faults[0]
        assert "by the trainer" in env.faults[0]
        assert (env.truncations[:16] == 1).all()
        _random_steps(env, 2)
    finally:
        env.close()


def test_mismatched_sizes_name_both_sides(tmp_path):
    ini = _server_ini(tmp_path, f"{{python}} {BAD_SERVER} --agents {{agents}} --shm {{name}} --index {{index}} "
                      "--obs-size 7 --bad-index 1", processes=2)
    with pytest.raises(ServerError, match=r"server 1 .* has obs_size = 7, but server 0 has 6"):
        envs.make(str(ini), 4)


def test_a_server_with_other_agents_than_asked_is_refused(tmp_path):
    ini = _server_ini(tmp_path, f"{{python}} {BAD_SERVER} --agents {{agents}} --shm {{name}} --extra-agents 1",
                      processes=2)
    with pytest.raises(ServerError, match=r"server 0 \(block /puf.*\) declares num_agents = 5, but it was asked for 4 "
                                          r"\(8 agents over 2 server\(s\)\); a server must create exactly"):
        envs.make(str(ini), 8)


def test_attach_to_no_server_says_so_within_the_timeout(tmp_path):
    ini = tmp_path / "nobody.ini"
    ini.write_text(f"[env]\nattach = /puf-nobody-{os.getpid()}\ntimeout = 1\n", encoding="utf-8")
    t0 = time.monotonic()
    with pytest.raises(ServerError, match=r"no server has created the block /puf-nobody-\d+ yet \(waited 1 s, "
                                          r"\[env\] timeout\); attach mode maps blocks of servers started beforehand"):
        envs.make(str(ini), 4)
    assert time.monotonic() - t0 < 3.0  # the timeout asked for, no hidden minimum


def test_a_server_fault_is_one_message_from_the_trainer(tmp_path, capsys):
    """trainer.run prints `error: ...` and returns 1: no traceback."""
    from trainer.run import main
    ini = _server_ini(tmp_path, f"{{python}} {BAD_SERVER} --agents {{agents}} --shm {{name}} --extra-agents 1",
                      processes=1)
    assert main(["--env", str(ini), "--plain", "--vec.total_agents", "8", "--base.checkpoint_dir", str(tmp_path / "ck"),
                 "--base.log_dir", str(tmp_path / "logs")]) == 1
    err = capsys.readouterr().err
    assert "error: game: server 0" in err and "declares num_agents = 9, but it was asked for 8" in err
    assert "Traceback" not in err


@pytest.mark.slow
def test_a_server_error_mid_run_stops_with_the_last_epoch_saved(tmp_path, capsys):
    """A step answered with status -2 after two epochs: one message naming the server and its
    message, and the second epoch's checkpoint kept."""
    from trainer import checkpoint as ckpt
    from trainer.run import main
    ini = _server_ini(tmp_path, f"{{python}} {BAD_SERVER} --agents {{agents}} --shm {{name}} --fail-at-step 40",
                      processes=1)
    assert main(["--env", str(ini), "--plain", "--vec.total_agents", "16", "--train.horizon", "16",
                 "--train.minibatch_size", "128", "--policy.hidden_size", "16", "--policy.num_layers", "1",
                 "--train.total_timesteps", "4096", "--base.checkpoint_dir", str(tmp_path / "ck"),
                 "--base.log_dir", str(tmp_path / "logs")]) == 1
    err = capsys.readouterr().err
    assert re.search(r"error: game: server 0 \(pid \d+, block /puf\S+\) answered a step "
                     r"with status -2: the map file went away", err), err
    assert "the run stopped; kept: checkpoint" in err and "(step 512)" in err and "Traceback" not in err
    found = list((tmp_path / "ck").rglob("*.bin"))
    assert len(found) == 1 and ckpt.read_sidecar(found[0])["global_step"] == 512


def test_another_protocol_version_is_a_clear_error(tmp_path):
    ini = _server_ini(tmp_path, f"{{python}} {BAD_SERVER} --agents {{agents}} --shm {{name}} --version 2",
                      processes=1)
    with pytest.raises(ServerError, match="protocol version 2, this trainer version 1"):
        envs.make(str(ini), 4)


def test_a_server_that_cannot_start_shows_its_output(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nprint('no map file here')\nsys.exit(4)\n", encoding="utf-8")
    ini = _server_ini(tmp_path, f"{{python}} {script} {{name}}", processes=1)
    with pytest.raises(ServerError, match=r"(?s)exit status 4.*no map file here"):
        envs.make(str(ini), 4)


def test_attach_to_servers_someone_else_started(tmp_path):
    names = [f"/puf-attach-{os.getpid()}-{i}" for i in range(2)]
    procs = [_arena_server(n) for n in names]
    try:
        ini = tmp_path / "attached.ini"
        ini.write_text(f"[env]\nattach = {names[0]}, {names[1]}\n", encoding="utf-8")
        with envs.make(str(ini), 16) as env:
            assert env.num_agents == 16 and env.server_pids() == [None, None]
            assert [int(s.block.h["trainer_pid"]) for s in env._servers] == [os.getpid()] * 2
            env.reset()
            _random_steps(env, 4)
            assert env.log()["n"] == 16
        # the trainer sent quit: each server exits and unlinks its own name
        assert [p.wait(5) for p in procs] == [0, 0]
        assert not any(shm.shm_exists(n) for n in names)
    finally:
        _stop(*procs)


def _stop(*servers, block=None):
    """A test's servers that still run get SIGTERM (each then unlinks its own block); `block` is
    unlinked too, in case its server died without doing so."""
    for p in servers:
        if p is not None and p.poll() is None:
            p.terminate()
            p.wait(5)
    if block is not None:
        shm.shm_unlink(block)


def _arena_server(name, agents=8):
    exe = build_executable(ROOT / "envs" / "ocean" / "arena" / "arena_server.c", includes=[shm.SHM_DIR])
    proc = subprocess.Popen([str(exe), "--agents", str(agents), "--shm", name, "--max-steps", "4"])
    for _ in range(500):
        if shm.shm_exists(name):
            break
        time.sleep(0.01)
    return proc


@pytest.mark.slow
def test_an_attached_server_killed_and_started_again_costs_only_truncated_episodes(tmp_path):
    name = f"/puf-attach-{os.getpid()}-again"
    first = _arena_server(name)
    second = None
    try:
        ini = tmp_path / "attached.ini"
        ini.write_text(f"[env]\nattach = {name}\nreattach = 20\n", encoding="utf-8")
        with envs.make(str(ini), 8) as env:
            env.reset()
            _random_steps(env, 3)
            first.kill()  # SIGKILL: its block stays behind
            first.wait()
            # started again 3 s later, as a user would from a shell (from this thread: Linux's
            # parent-death signal follows the thread that forked, and the servers ask for it)
            exe = build_executable(ROOT / "envs" / "ocean" / "arena" / "arena_server.c", includes=[shm.SHM_DIR])
            second = subprocess.Popen(["sh", "-c", f"sleep 3 && exec {exe} --agents 8 --shm {name} --max-steps 4"])
            t0 = time.monotonic()
            env.step(np.zeros_like(env.actions))  # waits for the new server, which resets
            assert 2.5 < time.monotonic() - t0 < 15
            assert env.restarts == 1 and (env.terminals == 1).all() and (env.truncations == 1).all()
            assert f"exited (pid {first.pid} is gone)" in env.faults[0]
            _random_steps(env, 4)
            assert env.epoch_metrics()["server_restarts"] == 1.0
        assert second.wait(5) == 0 and not shm.shm_exists(name)
    finally:
        _stop(first, second, block=name)


# Like trainer.run, the child handles Ctrl-C whatever it inherited: a test run started as a background
# job of a script (`pytest &`) has SIGINT ignored, and a child would inherit that.
_ATTACHED_TRAINER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
import envs
env = envs.make({ini!r}, 8)
env.reset()
env.step()
print("stepping", flush=True)
time.sleep(60)
"""


def test_an_attached_server_outlives_its_killed_trainer_and_serves_the_next(tmp_path):
    name = f"/puf-attach-{os.getpid()}-orphan"
    server = _arena_server(name)
    try:
        ini = tmp_path / "attached.ini"
        ini.write_text(f"[env]\nattach = {name}\n", encoding="utf-8")
        child = subprocess.Popen([sys.executable, "-c", _ATTACHED_TRAINER.format(root=str(ROOT), ini=str(ini))],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline().strip() == "stepping"
        block = shm.Block.attach_ready(name)
        assert int(block.h["trainer_pid"]) == child.pid
        child.kill()
        child.wait()
        for _ in range(100):  # the server checks every 200 ms
            if int(block.h["trainer_pid"]) == 0:
                break
            time.sleep(0.05)
        assert int(block.h["trainer_pid"]) == 0 and server.poll() is None
        block.close()
        with envs.make(str(ini), 8) as env:  # the next trainer
            env.reset()
            _random_steps(env, 3)
            assert env.log() == {} or env.log()["n"] >= 0
        assert server.wait(5) == 0 and not shm.shm_exists(name)
    finally:
        _stop(server, block=name)


_TRAINER_CHILD = """
import os, sys, time
sys.path.insert(0, {root!r})
import envs
env = envs.make("arena", 32, config={{"processes": 2}})
env.reset()
print(" ".join(map(str, env.server_pids())), flush=True)
while True:
    env.step()
"""


def test_no_leak_or_orphan_after_sigkill_of_the_trainer():
    child = subprocess.Popen([sys.executable, "-c", _TRAINER_CHILD.format(root=str(ROOT))], stdout=subprocess.PIPE,
                             text=True)
    _PIDS.add(child.pid)
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) == 2
    time.sleep(0.2)
    child.kill()
    child.wait()
    for _ in range(200):
        if not any(Path(f"/proc/{p}").exists() and "zombie" not in _state(p) for p in pids):
            break
        time.sleep(0.02)
    assert not any(Path(f"/proc/{p}").exists() and "zombie" not in _state(p) for p in pids), "servers outlived the trainer"


def test_sigterm_of_the_trainer_stops_its_servers():
    child = subprocess.Popen([sys.executable, "-c", _TRAINER_CHILD.format(root=str(ROOT))], stdout=subprocess.PIPE,
                             text=True)
    _PIDS.add(child.pid)
    pids = [int(p) for p in child.stdout.readline().split()]
    child.terminate()
    assert child.wait(10) == -signal.SIGTERM
    for _ in range(200):
        if not any(Path(f"/proc/{p}").exists() and "zombie" not in _state(p) for p in pids):
            break
        time.sleep(0.02)
    assert not any(Path(f"/proc/{p}").exists() and "zombie" not in _state(p) for p in pids)


def _state(pid):
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split("\n")[0]
    except (OSError, IndexError):
        return "zombie"


# ---- servers of an earlier protocol page: they leave their block behind ----

def _old_server(name, agents=4):
    """A server written to the protocol page of two versions ago (bad_server.py --old): it does not
    unlink its block when it quits, and fails with 'File exists' on a name that holds a block."""
    proc = subprocess.Popen([sys.executable, str(BAD_SERVER), "--agents", str(agents), "--shm", name, "--old"])
    for _ in range(1000):
        if shm.shm_exists(name) and shm.Block.attach_ready(name) is not None:
            break
        time.sleep(0.01)
    return proc


def _attach_ini(tmp_path, name, extra=""):
    ini = tmp_path / "attached.ini"
    ini.write_text(f"[env]\nattach = {name}\n{extra}", encoding="utf-8")
    return str(ini)


def test_after_a_quit_the_trainer_removes_the_block_an_old_server_left(tmp_path):
    name = f"/puf-attach-{os.getpid()}-oldquit"
    server = _old_server(name)
    try:
        with envs.make(_attach_ini(tmp_path, name), 4) as env:
            env.reset()
            _random_steps(env, 3)
        assert server.wait(5) == 0 and not shm.shm_exists(name)  # it quit; the trainer removed what it left
    finally:
        _stop(server, block=name)


def test_a_block_whose_server_has_exited_is_reported_at_attach_at_once(tmp_path):
    name = f"/puf-attach-{os.getpid()}-stale"
    server = _old_server(name)
    server.kill()  # its block stays, with its server's pid
    server.wait()
    again = None
    try:
        assert shm.stale(name)
        t0 = time.monotonic()
        with pytest.raises(ServerError) as info:
            envs.make(_attach_ini(tmp_path, name, "timeout = 30\n"), 4)
        assert time.monotonic() - t0 < 2  # not the 30 s of [env] timeout
        assert str(info.value) == (
            f"attached: the block {name} belongs to server pid {server.pid}, which has exited (a server written to an "
            f"earlier version of docs/protocol.md leaves its block behind when it quits or dies, and a server started "
            f"again on the name then fails with 'File exists'); the trainer removed it: start the server again, then "
            f"the trainer")
        assert not shm.shm_exists(name)
        again = _old_server(name)  # what the message says to do: the old server starts, and the trainer attaches
        with envs.make(_attach_ini(tmp_path, name), 4) as env:
            env.reset()
            _random_steps(env, 2)
        assert again.wait(5) == 0
    finally:
        _stop(server, again, block=name)


def test_reattach_removes_the_block_of_a_hung_server_that_died(tmp_path, capsys):
    """An attached server hangs (SIGSTOP): the trainer waits for a successor. The hung one is
    killed, leaving its block; the trainer removes it at once, so that an old-page server can create
    the name again, and training goes on."""
    name = f"/puf-attach-{os.getpid()}-hung"
    first, second = _old_server(name), None
    try:
        with envs.make(_attach_ini(tmp_path, name, "timeout = 1\nreattach = 20\n"), 4) as env:
            env.reset()
            _random_steps(env, 2)
            first.send_signal(signal.SIGSTOP)
            second = subprocess.Popen(["sh", "-c", f"sleep 2 && kill -9 {first.pid} && sleep 0.3 && exec "
                                                   f"{sys.executable} {BAD_SERVER} --agents 4 --shm {name} --old"])
            env.step(np.zeros_like(env.actions))
            assert env.restarts == 1 and "did not answer within 1 s" in env.faults[0]
            err = capsys.readouterr().err
            assert (f"note: attached: removed the block {name} of server pid {first.pid}, which has exited without "
                    f"removing it (") in err and f"start the server again on {name}" in err, err
            assert "a server (pid " in err and f"attached again on {name}; training goes on" in err
            _random_steps(env, 2)
        assert second.wait(5) == 0 and not shm.shm_exists(name)
    finally:
        first.kill()
        first.wait()
        _stop(second, block=name)


# ---- isolation of an ordinary C env ----

def test_isolated_env_matches_in_process():
    a = envs.make("platformer", 16, seed=2, num_threads=1)
    b = envs.make("platformer", 16, seed=2, config={"isolate": 1, "processes": 1})
    try:
        assert isinstance(b, ShmVecEnv) and b.obs_size == a.obs_size and b.act_sizes == a.act_sizes
        a.reset()
        b.reset()
        np.testing.assert_array_equal(a.observations, b.observations)
        rng = np.random.default_rng(0)
        for _ in range(200):
            act = rng.integers(0, 3, size=a.actions.shape).astype(np.float32)
            a.step(act)
            b.step(act)
            np.testing.assert_array_equal(a.observations, b.observations)
            np.testing.assert_array_equal(a.rewards, b.rewards)
            np.testing.assert_array_equal(a.terminals, b.terminals)
        la, lb = a.log(), b.log()
        assert la.keys() == lb.keys()
        for k in la:
            assert la[k] == pytest.approx(lb[k], rel=1e-5), k
    finally:
        a.close()
        b.close()


def _environ(pid):
    return dict(kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in kv)


@pytest.mark.parametrize("cpus,processes,user,want", [
    (2, 1, None, (shm_env.LONG_SPIN, shm_env.SHORT_SPIN)),   # server + trainer fit on 2 cores
    (2, 2, None, (shm_env.SHORT_SPIN, shm_env.SHORT_SPIN)),  # oversubscribed: nobody spins long
    (16, 8, None, (shm_env.LONG_SPIN, shm_env.SHORT_SPIN)),
    (2, 1, "0", (0, 0)),                                   # the user's PUFFER_SHM_SPIN wins, both sides
])
def test_spin_before_sleeping_is_chosen_per_side(monkeypatch, cpus, processes, user, want):
    monkeypatch.setattr(shm_env, "usable_cpus", lambda: cpus)
    if user is None:
        monkeypatch.delenv("PUFFER_SHM_SPIN", raising=False)
    else:
        monkeypatch.setenv("PUFFER_SHM_SPIN", user)
    with envs.make("arena", 8, config={"processes": processes}) as env:
        assert (env.spin, env.server_spin) == want
        for s in env._servers:  # what the server itself reads (puf_default_spin)
            assert _environ(s.child.pid)["PUFFER_SHM_SPIN"] == str(want[1])
        env.reset()
        _random_steps(env, 5)
        assert np.isfinite(env.observations).all()


@pytest.mark.parametrize("mode,text", [(1, "SIGSEGV"), (2, "exit status 3")])
def test_isolation_turns_a_crash_into_a_restart(mode, text):
    env = envs.make(str(CRASHY), 4, config={"isolate": 1, "processes": 1, "crash_mode": mode, "crash_step": 12})
    try:
        env.reset()
        env.actions[:] = 1
        for _ in range(30):
            env.step()
        assert env.restarts == 2  # step 12, then 12 steps after the restart
        # one process: the observations are read in place, from the newest server's block
        assert np.shares_memory(env.observations, env._servers[0].block.observations)
        assert (env.observations[:, 0] == 6 / 100).all()  # step 30 = 6 steps into the third server's life
        assert text in env.faults[0] and f"crashy: crash_mode {mode} at step 12" in env.faults[0]
        assert env.log()["perf"] == 1.0
    finally:
        env.close()


def test_isolation_turns_a_hang_into_a_restart():
    env = envs.make(str(CRASHY), 2, config={"isolate": 1, "processes": 1, "crash_mode": 3, "crash_step": 3,
                                            "timeout": 0.5})
    try:
        env.reset()
        for _ in range(4):
            env.step()
        assert env.restarts == 1 and "did not answer" in env.faults[0]
    finally:
        env.close()


def test_exit_in_puf_init_is_an_error_not_an_exit():
    with pytest.raises(ServerError, match=r"(?s)exit status 7.*crashy: crash_mode 4 exits in puf_init"):
        envs.make(str(CRASHY), 2, config={"isolate": 1, "processes": 1, "crash_mode": 4})


# ---- through the trainer ----

@pytest.mark.slow
def test_training_survives_a_killed_server_and_logs_the_restart(tmp_path, gpu, monkeypatch):
    """trainer.run.train on the arena (4 servers) with a server killed mid-rollout: the run ends
    normally with its checkpoint, and the JSONL log counts the restart."""
    from trainer import config as config_mod
    from trainer import run
    monkeypatch.setenv("PUFFGPU_TUNE", "0")
    cfg, _ = config_mod.load("arena", {"vec.total_agents": "64", "train.horizon": "16", "train.minibatch_size": "512",
                                       "train.total_timesteps": str(64 * 16 * 8), "base.checkpoint_dir": str(tmp_path / "ck"),
                                       "base.log_dir": str(tmp_path / "logs")})
    real = run.collect_rollout
    calls = []

    def rollout(env, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            os.kill(env.server_pids()[2], signal.SIGKILL)
        return real(env, *a, **k)
    monkeypatch.setattr(run, "collect_rollout", rollout)
    out = run.train("arena", cfg, live=False)
    assert out["global_step"] == 64 * 16 * 8 and Path(out["checkpoint"]).is_file()
    lines = [json.loads(l) for l in Path(out["log"]).read_text(encoding="utf-8").splitlines()]
    restarts = [l["env/server_restarts"] for l in lines if "env/server_restarts" in l]
    assert restarts[-1] == 1 and restarts[0] == 0


@pytest.mark.slow
def test_agents_learn_through_the_arena_servers(tmp_path, gpu, monkeypatch):
    """A short run on 4 arena servers: coins per episode rise well above the first epoch's (about 1.5,
    a near-uniform policy's; this run ends near 3, the full 1.5M-step run of arena.ini near 10.7)."""
    from trainer import config as config_mod
    from trainer import run
    monkeypatch.setenv("PUFFGPU_TUNE", "0")
    cfg, _ = config_mod.load("arena", {"train.total_timesteps": "400_000", "base.checkpoint_dir": str(tmp_path / "ck"),
                                       "base.log_dir": str(tmp_path / "logs")})
    out = run.train("arena", cfg, live=False)
    lines = [json.loads(l) for l in Path(out["log"]).read_text(encoding="utf-8").splitlines()]
    scores = [l["env/score"] for l in lines if "env/score" in l]
    assert scores[-1] > 1.6 * scores[0], scores


def test_a_layout_mismatch_names_the_field_and_both_values():
    from envs.shm.server import Server
    name = f"/puf-test-{os.getpid()}-layout"
    srv = Server(name, 4, 6, (3, 3), log_names=("n",), ready=False)
    try:
        want = int(srv.block.h["off_rewards"])
        srv.block.h["off_rewards"] = want + 64
        srv.set_ready()
        with pytest.raises(shm.ProtocolError, match=rf"off_rewards = {want + 64}, but the sizes put rewards at {want} "
                                                    r"\(header sizes: num_agents 4, obs_size 6 \(float32\), 2 heads"):
            shm.Block.attach_ready(name)
    finally:
        srv.close()


@pytest.mark.slow
def test_training_survives_an_attached_server_killed_and_started_again(tmp_path):
    """trainer.run on an attached arena server; SIGKILL of the server, started again 3 s later:
    training goes on to its end and the log counts the restart."""
    name = f"/puf-attach-{os.getpid()}-train"
    exe = build_executable(ROOT / "envs" / "ocean" / "arena" / "arena_server.c", includes=[shm.SHM_DIR])
    first = subprocess.Popen([str(exe), "--agents", "64", "--shm", name])
    second = None
    try:
        for _ in range(500):
            if shm.shm_exists(name):
                break
            time.sleep(0.01)
        ini = tmp_path / "attached.ini"
        ini.write_text(f"[env]\nattach = {name}\nreattach = 30\n", encoding="utf-8")
        trainer = subprocess.Popen(
            [sys.executable, "-m", "trainer.run", "--env", str(ini), "--plain", "--vec.total_agents", "64",
             "--train.horizon", "16", "--train.minibatch_size", "256", "--policy.hidden_size", "16",
             "--policy.num_layers", "1", "--train.total_timesteps", str(64 * 16 * 40), "--base.checkpoint_dir",
             str(tmp_path / "ck"), "--base.log_dir", str(tmp_path / "logs")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in trainer.stdout:
            lines.append(line)
            if line.startswith("epoch 3/"):
                break
        first.kill()
        first.wait()
        second = subprocess.Popen(["sh", "-c", f"sleep 3 && exec {exe} --agents 64 --shm {name}"])
        out = "".join(lines) + trainer.stdout.read()
        assert trainer.wait(120) == 0, out
        assert f"attached server 0 (pid {first.pid}, block {name}) exited" in out and "attached again" in out, out
        records = [json.loads(x) for x in next((tmp_path / "logs").rglob("*.jsonl")).read_text().splitlines()]
        assert records[-1]["epoch"] == 40 and records[-1]["env/server_restarts"] == 1.0
        assert second.wait(10) == 0 and not shm.shm_exists(name)  # quit at the end: nothing left
    finally:
        _stop(first, second, block=name)


def _protocol_servers():
    """The example servers of docs/protocol.md: {file name: code}, from the blocks after
    `<!-- server: NAME -->`."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in re.finditer(r"<!-- server: (\S+) -->\n```\w+\n(.*?)```", text, re.S)}


@pytest.mark.slow
@pytest.mark.parametrize("server", ["catch.c", "catch.py"])
def test_the_protocol_documents_servers_build_and_train(server, tmp_path, monkeypatch):
    files = _protocol_servers()
    assert set(files) == {"catch.c", "catch.ini", "catch.py"}
    for name, code in files.items():
        (tmp_path / name).write_text(code, encoding="utf-8")
    if server == "catch.py":  # the same ini, with the Python server's command
        ini = files["catch.ini"].replace("build = catch.c\n", "").replace("{build}", "{python} catch.py")
        (tmp_path / "catch.ini").write_text(ini, encoding="utf-8")
        monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the server imports envs.shm.server
    from trainer.run import main
    logs = tmp_path / "logs"
    assert main(["--env", str(tmp_path / "catch.ini"), "--plain", "--vec.total_agents", "256", "--train.horizon", "32",
                 "--train.minibatch_size", "2048", "--policy.hidden_size", "32", "--policy.num_layers", "1",
                 "--train.total_timesteps", str(256 * 32 * 12), "--base.checkpoint_dir", str(tmp_path / "ck"),
                 "--base.log_dir", str(logs)]) == 0
    records = [json.loads(x) for x in next(logs.rglob("*.jsonl")).read_text().splitlines()]
    epochs = [r for r in records if "epoch" in r]
    assert epochs[-1]["epoch"] == 12 and epochs[-1]["env/server_restarts"] == 0
    # every episode lasts exactly 10 steps: an epoch of 32 steps ends 3 or 4 per agent, as the protocol's
    # log semantics count them (n = episodes, perf their mean catch rate)
    assert {r["env/n"] for r in epochs} <= {768.0, 1024.0} and all(0 < r["env/perf"] < 1 for r in epochs)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_of_an_attached_trainer_quits_its_servers(sig, tmp_path):
    name = f"/puf-attach-{os.getpid()}-sig{int(sig)}"
    server = _arena_server(name)
    try:
        ini = tmp_path / "attached.ini"
        ini.write_text(f"[env]\nattach = {name}\n", encoding="utf-8")
        child = subprocess.Popen([sys.executable, "-c", _ATTACHED_TRAINER.format(root=str(ROOT), ini=str(ini))],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert child.stdout.readline().strip() == "stepping"
        child.send_signal(sig)
        child.wait(10)
        assert server.wait(5) == 0 and not shm.shm_exists(name)  # quit by the trainer on its way out
    finally:
        _stop(server, block=name)
