"""Go-Explore (envs/c/goexplore.h): archive insert/replace/select semantics on a 1-D test env,
routes that replay to their cells exactly on the real platformer, savestate vs replay starts,
thread counts and ThreadSanitizer, persistence, kill-and-resume, the exported route to the flag,
and the default platformer left as it was."""
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
from envs.c.goexplore import ArchiveError, archive_bytes, archive_path, read_archive, read_route
from golden.check import tolerance

ROOT = Path(__file__).resolve().parent.parent
CORRIDOR = ROOT / "tests" / "envs_ge" / "corridor" / "corridor.h"
STAY, LEFT, RIGHT = 0, 1, 2
SPARSE_GE = {"go_explore": 0.8}


def corridor(n=1, **config):
    # go_explore > 0 switches the archive on; a tiny value keeps every start the real one
    config = {"go_explore": 1e-9, **config}
    env = envs.make(CORRIDOR, n, config=config, num_threads=1)
    env.reset()
    return env


def cells_of(env):
    """{pos: cell} of the env's archive (via the file format, so the reader is tested too)."""
    a = read_archive_bytes(env.archive_bytes())
    return {c["key"]: c for c in a["cells"]}, a


def read_archive_bytes(data):
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".archive", delete=False) as f:
        f.write(data)
    try:
        return read_archive(f.name)
    finally:
        os.unlink(f.name)


def walk(env, actions):
    """Steps env 0 through `actions`; returns the rewards."""
    out = []
    for a in actions:
        env.step(np.array([[a]] * env.num_agents, np.float32))
        out.append(float(env.rewards[0]))
    return out


def finish_episode(env):
    for _ in range(100):
        env.step(np.zeros((env.num_agents, 1), np.float32))
        if env.terminals[0]:
            return
    raise AssertionError("episode did not end")


# ---- archive semantics ----

def test_insert_shortest_route_and_earliest_on_ties():
    env = corridor()
    walk(env, [RIGHT] * 3)
    cells, a = cells_of(env)
    assert {k: c["steps"] for k, c in cells.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert cells[3]["actions"].ravel().tolist() == [RIGHT] * 3
    first_found = cells[3]["found"]
    finish_episode(env)  # times out at tick 20
    walk(env, [STAY, STAY] + [RIGHT] * 4)  # cell 4 first by a 6-step route; 1-3 by longer ones
    cells, a = cells_of(env)
    assert cells[4]["steps"] == 6 and cells[3]["steps"] == 3 and cells[3]["found"] == first_found
    assert a["improved"] == 0
    finish_episode(env)
    walk(env, [RIGHT] * 4)  # a shorter route replaces it
    cells, a = cells_of(env)
    assert cells[4]["steps"] == 4 and cells[4]["actions"].ravel().tolist() == [RIGHT] * 4
    assert a["improved"] == 1
    found = cells[4]["found"]
    state = cells[4]["state"]
    finish_episode(env)
    walk(env, [RIGHT] * 4)  # equal length: the earlier route stays
    cells, a = cells_of(env)
    assert cells[4]["found"] == found and cells[4]["state"] == state and a["improved"] == 1
    # the savestate is (pos, tick, spawn): exactly where the route ends
    pos, tick, spawn = np.frombuffer(cells[4]["state"], "<i4")
    assert (pos, tick) == (4, 4)
    env.close()


def test_same_step_ties_go_to_the_lower_env():
    env = corridor(3)
    spawns = [int(np.frombuffer(env.probe(i)[2], "<u4")[2]) for i in range(3)]
    assert len(set(spawns)) == 3  # every env starts from its own rng
    walk(env, [RIGHT])  # all three reach cell 1 in one step, merged in env order
    cells, _ = cells_of(env)
    assert int(np.frombuffer(cells[1]["state"], "<u4")[2]) == spawns[0]
    assert cells[1]["seed"] == spawns[0]  # the route's seed is the rng its real start used
    env.close()


def test_goal_route_and_logs():
    env = corridor()
    walk(env, [RIGHT, LEFT, RIGHT, RIGHT, RIGHT, RIGHT, RIGHT])  # reaches 5 on step 7
    assert env.terminals[0] == 1 and env.rewards[0] == 1.0
    a = read_archive_bytes(env.archive_bytes())
    assert a["goal"]["steps"] == 7 and a["goal"]["actions"].ravel().tolist() == [2, 1, 2, 2, 2, 2, 2]
    log = env.log()
    assert log["perf"] == 1.0 and log["start_perf"] == 1.0
    assert env.archive_stats()["archive_goal_steps"] == 7 and env.archive_stats()["archive_progress"] == 1.0
    env.close()


def crafted(env, cells, goal=None):
    """An archive for `env` with the given cells: (pos, tick, episodes, steps)."""
    fp = env.archive_info()["fingerprint"]
    out = []
    for pos, tick, episodes, steps in cells:
        route = [STAY] * (steps - pos) + [RIGHT] * pos
        out.append({"key": pos, "seed": 99, "steps": steps, "progress": pos / 5, "episodes": episodes,
                    "found": 1, "state": np.array([pos, tick, 99], "<i4").tobytes(),
                    "actions": np.array(route, np.uint8).reshape(-1, 1)})
    return archive_bytes({"state_bytes": 12, "action_bytes": 1, "max_route": 20, "fingerprint": fp, "syncs": 5,
                          "inserted": len(cells), "improved": 0, "dropped": 0, "goal": goal, "cells": out})


def start_positions(env, resets):
    pos = []
    for _ in range(resets):
        env.reset()  # every env picks a start; no sync happens, so the counts stay as loaded
        pos.append(np.rint(env.observations[:, 0] * 5).astype(int))
    return np.concatenate(pos)


def test_start_selection_shares_rarity_and_frontier():
    cells = [(1, 1, 0, 1), (2, 2, 3, 2), (3, 3, 99, 3)]
    # every start from the archive, all rarity-weighted: P ∝ 1/sqrt(1 + episodes) = 1, 1/2, 1/10
    env = corridor(256, go_explore=1.0, go_explore_frontier=0.0)
    env.load_archive_bytes(crafted(env, cells))
    counts = np.bincount(start_positions(env, 40), minlength=6)
    n = counts.sum()
    expect = n * np.array([1, 0.5, 0.1]) / 1.6
    sigmas = tolerance("sampling")
    assert counts[0] == 0 and np.all(np.abs(counts[1:4] - expect) < sigmas * np.sqrt(expect)), counts
    env.close()
    # all from the frontier: the 2 cells with the most progress, uniformly
    env = corridor(256, go_explore=1.0, go_explore_frontier=1.0, go_explore_frontier_cells=2)
    env.load_archive_bytes(crafted(env, cells))
    counts = np.bincount(start_positions(env, 20), minlength=6)
    assert counts[0] == counts[1] == 0 and abs(counts[2] - counts[3]) < sigmas * np.sqrt(counts.sum() / 2), counts
    env.close()
    # go_explore = 0.3: 70% of starts are the real one (pos 0)
    env = corridor(256, go_explore=0.3, go_explore_frontier=0.5)
    env.load_archive_bytes(crafted(env, cells))
    starts = start_positions(env, 20)
    real = (starts == 0).mean()
    assert abs(real - 0.7) < sigmas * np.sqrt(0.7 * 0.3 / starts.size), real
    env.close()


def test_archive_start_keeps_the_clock():
    env = corridor(1, go_explore=1.0, go_explore_frontier=1.0, go_explore_frontier_cells=1)
    env.load_archive_bytes(crafted(env, [(2, 15, 0, 15)]))  # reached at tick 15 of 20
    env.reset()
    assert np.rint(env.observations[0, :2] * [5, 20]).tolist() == [2, 15]
    steps = 0
    while not env.terminals[0]:
        env.step(np.zeros((1, 1), np.float32))
        steps += 1
    assert steps == 5  # the real limit, not a fresh 20 ticks
    log = env.log()
    assert "start_perf" not in log  # no episode began at the real start
    env.close()


def test_ghost_reward_for_beating_a_route():
    env = corridor(1, go_explore_ghost=0.25)
    env.load_archive_bytes(crafted(env, [(2, 10, 0, 10)]))
    env.reset()
    rewards = walk(env, [RIGHT, RIGHT, RIGHT])
    # cell 1 is new (no ghost), cell 2 entered at step 2 < 10, cell 3 new
    assert rewards == [0.0, 0.25, 0.0]
    assert cells_of(env)[0][2]["steps"] == 2
    env.close()


def test_capacity_drops_new_cells_unless_they_advance_the_frontier():
    env = corridor(1, go_explore_cells=3, go_explore_frontier_cells=1)
    walk(env, [RIGHT, RIGHT])  # cells 0, 1, 2: full
    assert sorted(cells_of(env)[0]) == [0, 1, 2]
    walk(env, [RIGHT])  # cell 3 has more progress than any: the most-entered non-frontier cell goes
    cells, a = cells_of(env)
    assert sorted(cells) == [1, 2, 3] and a["dropped"] == 1  # cells 0 and 1 tie: the first goes
    finish_episode(env)  # a new real start enters cell 0 again: no room, no progress: dropped
    cells, a = cells_of(env)
    assert sorted(cells) == [1, 2, 3] and a["dropped"] == 2
    assert env.archive_stats()["archive_dropped"] == 2
    env.close()


# ---- the real env: routes replay exactly, in both start modes, for any thread count ----

def explore(steps, agents=256, threads=2, seed=1, **config):
    """Go-Explore with uniform random actions on platformer_sparse."""
    env = envs.make("platformer_sparse", agents, config={**SPARSE_GE, **config}, seed=seed, num_threads=1)
    env._lib.vec_set_threads(env._vec, threads)  # past the CPU cap: a stress, not a speed-up
    env.reset()
    rng = np.random.default_rng(seed)
    trace = []
    for _ in range(steps):
        env.step(rng.integers(0, 3, size=env.actions.shape).astype(np.float32))
        trace.append(env.observations[::17, -8:].copy())
    return env, np.stack(trace)


@pytest.fixture(scope="module")
def explored():
    env, _ = explore(300)
    data = env.archive_bytes()
    env.close()
    return data


def test_routes_replay_from_the_real_start_to_their_cells_exactly(explored, tmp_path):
    path = tmp_path / "a.archive"
    path.write_bytes(explored)
    a = read_archive(path)
    assert len(a["cells"]) > 300
    rng = np.random.default_rng(0)
    picks = [a["cells"][i] for i in rng.choice(len(a["cells"]), 40, replace=False)]
    picks.append(max(a["cells"], key=lambda c: c["steps"]))  # the longest route too
    env = envs.make("platformer_sparse", 1, num_threads=1)  # go_explore 0: plain env
    for c in picks:
        env.reset_real(0, c["seed"])
        for step in c["actions"]:
            env.step(step[None, :].astype(np.float32))
            assert not env.terminals[0]
        key, progress, state = env.probe(0)
        assert key == c["key"] and state == c["state"] and progress == pytest.approx(c["progress"])
    env.close()


def test_savestate_and_replay_starts_are_the_same_run():
    """go_explore_replay = 1 re-runs each start's route instead of restoring its savestate: the
    episodes, and the archive they build, must be identical to the byte."""
    a, ta = explore(250, agents=128)
    b, tb = explore(250, agents=128, go_explore_replay=1)
    assert b.archive_info()["replay_mismatches"] == 0
    np.testing.assert_array_equal(ta, tb)
    assert a.archive_bytes() == b.archive_bytes()
    a.close(), b.close()


def test_thread_count_does_not_change_the_archive():
    a, ta = explore(200, agents=128, threads=1)
    b, tb = explore(200, agents=128, threads=16)
    np.testing.assert_array_equal(ta, tb)
    assert a.archive_bytes() == b.archive_bytes()
    a.close(), b.close()


def _cc():
    cc = os.environ.get("CC", "cc")
    return cc if shutil.which(cc) else None


SPARSE_KEYS = ["level=1", "progress_reward=0", "frameskip=4", "max_ticks=2400", "fail_penalty=0", "go_explore=0.8",
               "go_explore_frontier=0.5"]


@pytest.mark.slow
def test_threadsanitizer_stress(tmp_path):
    """Pthreads stepping disjoint env ranges at once, merges between steps (tests/envs_ge/ge_stress.c)
    under ThreadSanitizer: no race, and the same archive for 1 and 8 threads, and for 2 host threads
    that each step their range on 3 of the vecenv's own pool threads (envs/c/threadpool.h, shared)."""
    cc = _cc()
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "ge_stress"
    res = subprocess.run([cc, "-g", "-O1", "-fsanitize=thread", f"-I{ROOT / 'envs' / 'ocean'}", f"-I{ROOT / 'envs' / 'c'}",
                          '-DENV_HEADER="platformer_sparse/platformer_sparse.h"',
                          str(ROOT / "tests" / "envs_ge" / "ge_stress.c"), "-lm", "-lpthread", "-o", str(exe)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"{cc} cannot build with -fsanitize=thread: {res.stderr[-300:]}")
    out = []
    for threads, pool in ((1, 1), (8, 1), (2, 3)):
        run = subprocess.run([str(exe), "--agents", "48", "--steps", "250", "--threads", str(threads),
                              "--pool-threads", str(pool), *SPARSE_KEYS],
                             capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, TSAN_OPTIONS="halt_on_error=1 exitcode=66"))
        if run.returncode != 0 and "FATAL: ThreadSanitizer" in run.stderr:
            pytest.skip(f"ThreadSanitizer does not run here: {run.stderr[:300]}")
        assert run.returncode == 0, run.stderr[-4000:]
        out.append(run.stdout.split("archive")[1])
    assert out[0] == out[1] == out[2], out


@pytest.mark.slow
def test_address_sanitizer_with_many_openmp_threads(tmp_path):
    """The OpenMP path (envs/c/vecenv_driver.c) with Go-Explore on, 8 threads, ASan + UBSan, 1% garbage actions."""
    cc = _cc()
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path / "drv"
    flags = ["-g", "-O1", "-fno-omit-frame-pointer", "-fopenmp", "-fsanitize=address,undefined,float-cast-overflow",
             "-fno-sanitize-recover=all"]
    res = subprocess.run([cc, *flags, f"-I{ROOT / 'envs' / 'ocean'}", f"-I{ROOT / 'envs' / 'c'}", '-DENV_HEADER="platformer_sparse/platformer_sparse.h"',
                          str(ROOT / "envs" / "c" / "vecenv_driver.c"), "-lm", "-o", str(exe)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"{cc} cannot build with the sanitizers: {res.stderr[-300:]}")
    run = subprocess.run([str(exe), "--agents", "64", "--steps", "600", "--threads", "8", "--garbage", *SPARSE_KEYS],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"))
    assert run.returncode == 0, run.stderr[-4000:]
    assert "38400 agent steps" in run.stdout


def test_two_env_buffers_stepped_at_once_share_one_archive():
    """num_buffers = 2: two host threads step the two halves at once, both reading the archive; what
    they find merges at log(). The archive is the same as with the halves stepped one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    def run(concurrent):
        env = envs.make("platformer_sparse", 128, config=SPARSE_GE, seed=3, num_threads=2, num_buffers=2)
        env.reset()
        rng = np.random.default_rng(3)
        with ThreadPoolExecutor(2) as pool:
            for t in range(240):
                a = rng.integers(0, 3, size=env.actions.shape).astype(np.float32)
                jobs = [(b, a[slice(*env.buffer_rows(b))]) for b in range(2)]
                if concurrent:
                    for f in [pool.submit(env.step_buffer, b, x) for b, x in jobs]:
                        f.result()
                else:
                    for b, x in jobs:
                        env.step_buffer(b, x)
                if t % 16 == 15:
                    env.log()  # once an "epoch": the merge
        data = env.archive_bytes()
        env.close()
        return data

    together = run(True)
    assert together == run(False)
    assert len(read_archive_bytes(together)["cells"]) > 300


@pytest.mark.slow
def test_training_with_two_env_buffers(tmp_path):
    from trainer import config
    from trainer.run import train
    flags = dict(zip(SMOKE[::2], SMOKE[1::2]))
    flags = {k[2:]: v for k, v in flags.items()}
    flags.update({"vec.num_buffers": "2", "train.total_timesteps": str(64 * 16 * 3),
                  "base.checkpoint_dir": str(tmp_path / "ck"), "base.log_dir": str(tmp_path / "logs")})
    cfg, _ = config.load("platformer_sparse", flags)
    res = train("platformer_sparse", cfg, live=False, run_id="b2")
    cells = res["metrics"]["env/archive_cells"]
    assert res["global_step"] == 3072 and cells > 50
    assert len(read_archive(archive_path(res["checkpoint"]))["cells"]) == cells


# ---- persistence ----

def test_save_load_round_trip_and_refusals(explored, tmp_path):
    env = envs.make("platformer_sparse", 16, config=SPARSE_GE, num_threads=1)
    path = tmp_path / "a.archive"
    path.write_bytes(explored)
    cells = env.load_archive(path)
    assert cells == len(read_archive(path)["cells"]) == env.archive_stats()["archive_cells"]
    env.save_archive(tmp_path / "b.archive")
    assert (tmp_path / "b.archive").read_bytes() == explored  # a loaded archive saves back bit for bit
    assert not list(tmp_path.glob(".*tmp*"))  # the temp file was renamed away
    bad = bytearray(explored)
    bad[len(bad) // 2] ^= 1
    with pytest.raises(ArchiveError, match="corrupt"):
        env.load_archive_bytes(bytes(bad))
    with pytest.raises(ArchiveError, match="truncated"):
        env.load_archive_bytes(explored[:len(explored) // 2])
    other = envs.make("platformer_sparse", 4, config={**SPARSE_GE, "frameskip": 2}, num_threads=1)
    with pytest.raises(ArchiveError, match="another env config"):
        other.load_archive(path)
    small = envs.make("platformer_sparse", 4, config={**SPARSE_GE, "go_explore_cells": 10}, num_threads=1)
    with pytest.raises(ArchiveError, match="go_explore_cells is 10"):
        small.load_archive(path)
    with pytest.raises(ValueError, match=r"go_explore = 1.5 is out of range"):
        envs.make("platformer_sparse", 4, config={"go_explore": 1.5})
    for e in (env, other, small):
        e.close()


def test_trainer_hooks_save_and_restore_the_archive_beside_a_checkpoint(tmp_path):
    """What the trainer calls (it names no env feature): epoch_metrics, save_extras, restore_extras."""
    env = envs.make("platformer_sparse", 16, config=SPARSE_GE, seed=4, num_threads=1)
    env.reset()
    rng = np.random.default_rng(4)
    for _ in range(50):
        env.step(rng.integers(0, 3, size=env.actions.shape).astype(np.float32))
    m = env.epoch_metrics()
    assert m["archive_cells"] == env.archive_stats()["archive_cells"] > 0
    ckpt = tmp_path / f"{800:016d}.bin"
    assert env.save_extras(ckpt) == [archive_path(ckpt)]
    fresh = envs.make("platformer_sparse", 16, config=SPARSE_GE, seed=4, num_threads=1)
    assert fresh.restore_extras(ckpt) == [f"restored the Go-Explore archive {archive_path(ckpt)}: "
                                          f"{int(m['archive_cells'])} cells"]
    assert "does not exist" in fresh.restore_extras(tmp_path / "none.bin")[0]
    plain = envs.make("platformer", 4, num_threads=1)
    assert plain.save_extras(ckpt) == [] and plain.restore_extras(ckpt) == []
    for e in (env, fresh, plain):
        e.close()


SMOKE = ["--vec.total_agents", "64", "--train.horizon", "16", "--train.minibatch_size", "256", "--policy.hidden_size",
         "16", "--policy.num_layers", "2", "--env.go_explore", "0.8", "--base.checkpoint_interval", "1"]


def _spawn(tmp_path, *extra):
    cmd = [sys.executable, "-m", "trainer.run", "--env", "platformer_sparse", "--plain", *SMOKE,
           "--base.checkpoint_dir", str(tmp_path / "ck"), "--base.log_dir", str(tmp_path / "logs"), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)


@pytest.mark.slow
def test_kill_and_resume_keeps_the_archive(tmp_path):
    proc = _spawn(tmp_path, "--train.total_timesteps", str(64 * 16 * 1000))
    read_until(proc, lambda line: line.startswith("epoch 4/"))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    from trainer import checkpoint as ckpt
    last = ckpt.latest(tmp_path / "ck", "platformer_sparse")
    saved = read_archive(archive_path(last))
    n = len(saved["cells"])
    log = [json.loads(line) for line in next((tmp_path / "logs" / "platformer_sparse").glob("*.jsonl")).read_text()
           .splitlines() if line.strip()]
    at_ckpt = [r for r in log if r.get("type") == "epoch" and r["global_step"] == int(last.stem)]
    assert at_ckpt and at_ckpt[0]["env/archive_cells"] == n > 0  # what was logged is what was saved
    proc = _spawn(tmp_path, "--train.total_timesteps", str(64 * 16 * 1000), "--base.load_model_path", "latest")
    lines = read_until(proc, lambda line: line.startswith(f"epoch {int(last.stem) // 1024 + 1}/"))
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert any(f"restored the Go-Explore archive {archive_path(last)}: {n} cells" in line for line in lines), "".join(lines)
    epochs = [json.loads(line) for line in next((tmp_path / "logs" / "platformer_sparse").glob("*.jsonl"))
              .read_text().splitlines() if '"epoch"' in line]
    resumed = [e for e in epochs if e["global_step"] > int(last.stem)]
    assert resumed and resumed[0]["env/archive_cells"] >= n  # it grows on from the saved cells


# ---- the best route to the flag, exported ----

@pytest.fixture(scope="module")
def reached(tmp_path_factory):
    """An archive that reached the flag: Go-Explore with random actions (about 0.5M env steps)."""
    env = envs.make("platformer_sparse", 1024, config=SPARSE_GE, seed=1)
    env.reset()
    rng = np.random.default_rng(1)
    for _ in range(2000):
        env.step(rng.integers(0, 3, size=env.actions.shape).astype(np.float32))
        if env.archive_stats()["archive_goal_steps"] > 0:
            break
    path = tmp_path_factory.mktemp("reached") / "run" / f"{1:016d}.archive"
    env.save_archive(path)
    env.close()
    assert read_archive(path)["goal"] is not None, "random Go-Explore did not reach the flag"
    return path


@pytest.mark.slow
def test_export_best_route_replays_to_the_flag_with_gif(reached, tmp_path):
    route_file, gif = tmp_path / "route.json", tmp_path / "route.gif"
    res = subprocess.run([sys.executable, "-m", "envs.archive", "export", "--env", "platformer_sparse", str(reached),
                          "--out", str(route_file), "--gif", str(gif)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    route = read_route(route_file)
    goal = read_archive(reached)["goal"]
    assert route["steps"] == goal["steps"] == len(route["actions"]) and route["seed"] == goal["seed"]
    assert f"the goal was reached at step {route['steps']}" in res.stdout
    assert gif.read_bytes()[:6] == b"GIF89a"
    Image = pytest.importorskip("PIL.Image")
    with Image.open(gif) as im:  # the start, then one frame per step but the last (the flag resets)
        assert im.n_frames == route["steps"]
    # the sparse reward: nothing until the flag, then 1
    env = envs.make("platformer_sparse", 1, num_threads=1)
    env.reset_real(0, route["seed"])
    rewards = []
    for a in route["actions"]:
        env.step(np.array([a], np.float32))
        rewards.append(float(env.rewards[0]))
    assert rewards[-1] == 1.0 and not any(rewards[:-1]) and env.terminals[0] == 1
    env.close()
    # envs.play replays route files too; one cut short does not reach the flag and says so
    cut = dict(route, actions=route["actions"][:30], steps=30)
    (tmp_path / "cut.json").write_text(json.dumps(cut))
    res = subprocess.run([sys.executable, "-m", "envs.play", "platformer_sparse", "--route", str(tmp_path / "cut.json"),
                          "--gif", str(tmp_path / "cut.gif")], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 1 and "30 steps from the real start" in res.stdout, res.stdout + res.stderr
    assert "did NOT reach the goal" in res.stdout and (tmp_path / "cut.gif").exists()


def test_export_refuses_another_config(reached, tmp_path):
    res = subprocess.run([sys.executable, "-m", "envs.archive", "export", "--env", "platformer_sparse", str(reached),
                          "--set", "frameskip=2", "--out", str(tmp_path / "r.json")], capture_output=True, text=True,
                         cwd=ROOT)
    assert res.returncode == 1 and "another platformer_sparse config" in res.stderr


# ---- the default platformer is untouched ----

def test_default_platformer_has_no_go_explore():
    env = envs.make("platformer", 8, num_threads=1)
    assert not env.archive_enabled and env.archive_stats() == {}
    env.reset()
    for _ in range(400):
        env.scripted_actions()
        env.step()
    assert set(env.log()) == {"perf", "score", "episode_return", "episode_length", "deaths", "timeouts", "n"}
    with pytest.raises(ArchiveError, match="no archive"):
        env.archive_bytes()
    with pytest.raises(ValueError, match="unknown \\[env\\] key 'go_explore'"):
        envs.make("platformer", 1, config={"go_explore": 0.5})
    env.close()


def test_sparse_level_without_go_explore_logs_start_perf():
    env = envs.make("platformer_sparse", 64, seed=2, num_threads=1)
    assert not env.archive_enabled
    env.reset()
    rng = np.random.default_rng(2)
    total = 0.0
    for _ in range(700):  # > one time limit (600 steps)
        env.step(rng.integers(0, 3, size=env.actions.shape).astype(np.float32))
        total += float(np.abs(env.rewards).sum())
    log = env.log()
    assert log["perf"] == 0 and log["start_perf"] == 0 and log["real_starts"] == 1.0 and total == 0.0
    assert 0 < log["score"] < 0.5  # progress along the route (the detour's, not x)
    env.close()
