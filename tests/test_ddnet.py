"""The ddnet env: bots on real DDNet-Server processes (CI installs ddnet-server). The protocol pieces
against twnet-parser (the protocol's Python implementation), then the bots in the game, in both
modes (`mode`: lockstep, the servers' clocks driven by the trainer, and real time): they join and
decode every snapshot (CRC-checked), inputs move them, episodes reset through the server's console,
a killed, frozen or reloaded server comes back, and nothing is left behind. Lockstep alone: exactly
the granted ticks, a game that stands still between steps, the same episode twice from the same
seed, and curriculum starts placed exactly."""
import math
import os
import signal
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import envs
from envs.ddnet.server import DEFAULT_SERVER

pytestmark = pytest.mark.skipif(not os.access(DEFAULT_SERVER, os.X_OK),
                                reason="DDNet's server is missing: sudo apt-get install ddnet-server")
twnet = pytest.importorskip("twnet_parser", reason="pip install -e '.[ddnet]'")

MOVE, JUMP, HOOK, FIRE, AIM = range(5)
NONE = 1  # move head: 0 left, 1 none, 2 right
MODES = {"lockstep": 1, "realtime": 0}


@pytest.fixture(params=list(MODES))
def mode(request):
    """The [env] lockstep value of the test's run: each test that takes it runs in both modes."""
    return MODES[request.param]


def actions(n, move=NONE, jump=0, hook=0, fire=0, aim=0.0):
    a = np.zeros((n, 5), np.float32)
    a[:, MOVE], a[:, JUMP], a[:, HOOK], a[:, FIRE], a[:, AIM] = move, jump, hook, fire, aim
    return a


def field(env, name, i=0):
    return int(env._state[i, env._F[name]])


@pytest.fixture
def one_bot(mode):
    with envs.make("ddnet", 1, config={"servers": 1, "bots_per_server": 1, "episode_seconds": 30,
                                       "lockstep": mode}) as env:
        env.reset()
        for _ in range(100):  # until the first episode begins (a fresh server spawns players after a few seconds)
            env.step(actions(1))
            if env.active[0]:
                break
        assert env.active[0]
        yield env


def test_huffman_and_ints_match_the_reference():
    """Our C decoder inverts twnet-parser's Huffman compressor (the protocol's fixed tree) and reads
    its variable-length ints, on random and skewed bytes, empty to a full packet."""
    from twnet_parser.huffman_twnet_parser import huffman
    from twnet_parser.packer import pack_int
    from envs.ddnet import net
    mod = net.native()
    ffi, lib = mod.ffi, mod.lib
    freq = net.huffman_frequencies()
    rng = np.random.default_rng(0)
    out = ffi.new("uint8_t[4096]")
    for n in (0, 1, 2, 7, 100, 1000, 1396):
        for skew in (256, 4):
            data = bytes(rng.integers(0, skew, n, dtype=np.uint8))
            packed = huffman.compress(data)
            k = lib.ddc_test_huffman(ffi.cast("unsigned *", ffi.from_buffer(freq)), packed, len(packed), out, 4096)
            assert bytes(ffi.buffer(out, k)) == data, (n, skew)
    ints = [0, 1, -1, 63, 64, -64, -65, 8191, 2**31 - 1, -2**31, 123456789, -987654]
    blob = b"".join(pack_int(v) for v in ints)
    got = ffi.new("int32_t[64]")
    assert lib.ddc_test_unpack_ints(blob, len(blob), got, 64) == len(ints)
    assert list(got[0:len(ints)]) == ints


def test_bots_join_and_decode_every_snapshot(mode):
    with envs.make("ddnet", 4, config={"servers": 2, "bots_per_server": 2, "lockstep": mode}) as env:
        assert (env.obs_size, env.act_sizes) == (36 + 7 * 15 * 11, (3, 2, 2, 2, 1))
        env.reset()
        for _ in range(100):  # a fresh server spawns its first players after a few seconds
            env.step(actions(4))
            if env.active.all():
                break
        st, F = env._state, env._F
        assert (st[:, F["phase"]] == 5).all()
        # real time: a snapshot a tick (sv_high_bandwidth); lockstep: one a decision (the join, 3 s
        # of game time, then a step at least)
        assert (st[:, F["snaps"]] >= (10 if mode else 50)).all()
        assert (st[:, F["snap_errors"]] == 0).all()     # every delta applied, every CRC matched
        assert sorted(st[:2, F["cid"]]) == [0, 1] and sorted(st[2:, F["cid"]]) == [0, 1]
        assert (st[:, F["ddnet"]] == 1).all()           # DDNet's extended character item, found by UUID
        m = env.epoch_metrics()
        assert m["snapshot_errors"] == 0 and 0 < m["snapshot_decode_us"] < 1000
        assert m["missed_ticks"] == 0 if mode else 0 <= m["missed_ticks"] < 0.5
        # decisions are ticks_per_decision ticks apart
        t0 = field(env, "tick")
        env.step(actions(4))
        assert field(env, "tick") - t0 == env.k


def test_moving_right_raises_x_and_left_lowers_it(one_bot):
    env = one_bot
    x0 = field(env, "x")
    for _ in range(8):
        env.step(actions(1, move=2))
    x1 = field(env, "x")
    assert x1 - x0 > 2 * 32  # more than two tiles in 0.8 s
    assert env.rewards[0] > 0 or env.observations[0, 1] > 0  # progress toward the finish on Tutorial
    for _ in range(8):
        env.step(actions(1, move=0))
    assert field(env, "x") < x1


def test_jump_and_hook_change_the_state(one_bot):
    env = one_bot
    for _ in range(5):
        env.step(actions(1))
    y0 = field(env, "y")
    assert field(env, "jumped") & 1 == 0
    env.step(actions(1, jump=1))
    assert field(env, "vy") < 0 and field(env, "y") < y0   # going up
    assert field(env, "jumped") & 1 == 1                   # the ground jump is used while held
    for _ in range(10):
        env.step(actions(1))
    # hook straight up: it flies, then grabs the ceiling or comes back; the observation shows it
    seen = set()
    for _ in range(6):
        env.step(actions(1, hook=1, aim=-math.pi / 2))
        seen.add(field(env, "hook_state"))
    assert seen & {4, 5}, seen
    env.step(actions(1, hook=0))
    env.step(actions(1, hook=0))
    assert field(env, "hook_state") <= 0


def test_episode_ends_and_the_server_resets_the_bot(mode):
    with envs.make("ddnet", 1, config={"servers": 1, "bots_per_server": 1, "episode_seconds": 1.0,
                                       "lockstep": mode}) as env:
        env.reset()
        ends, spawn_x = [], None
        for _ in range(120):
            env.step(actions(1, move=2))
            if env.active[0] and spawn_x is None:
                spawn_x = field(env, "x")
            if env.terminals[0]:
                ends.append((float(env.truncations[0]), field(env, "x")))
        assert len(ends) >= 2
        assert all(trunc == 1.0 for trunc, _ in ends)  # the time limit: a truncation
        log = env.log()
        assert log["n"] >= 2 and log["tiles"] > 1 and log["finished"] == 0
        # after each reset (kill_pl over rcon) the bot starts again at the spawn
        assert abs(field(env, "x") - spawn_x) < 20 * 32


def test_a_killed_server_is_restarted_and_its_bots_come_back(capsys, mode):
    with envs.make("ddnet", 4, config={"servers": 2, "bots_per_server": 2, "timeout": 1.5, "lockstep": mode}) as env:
        env.reset()
        for _ in range(100):
            env.step(actions(4))
            if env.active.all():
                break
        victim = env.server_pids()[1]
        os.kill(victim, signal.SIGKILL)
        truncated = np.zeros(4)
        for _ in range(60):
            env.step(actions(4))
            truncated += env.truncations
            if env.pool.restarts and (env._state[:, env._F["phase"]] == 5).all() and env.active.all():
                break
        assert env.pool.restarts == 1 and env.server_pids()[1] != victim
        assert truncated[2:].min() >= 1 and truncated[:2].sum() == 0  # only the dead server's bots
        assert (env._state[:, env._F["phase"]] == 5).all() and env.active.all()
        assert "exited" in capsys.readouterr().err
        # a server that stops answering (SIGSTOP) counts as hung after `timeout` seconds
        os.kill(env.server_pids()[0], signal.SIGSTOP)
        for _ in range(40):
            env.step(actions(4))
            if env.pool.restarts == 2:
                break
        assert env.pool.restarts == 2
        assert ("did not run its 5 ticks within 1.5 s" if mode else "sent nothing for 1.5 s") in capsys.readouterr().err
        for _ in range(100):  # and its bots play again
            env.step(actions(4))
            if env.active.all():
                break
        assert env.active.all()


def test_a_map_reload_brings_the_bots_back(mode):
    """The server's `reload` sends every client the map again and restarts the ticks at 0: the bots
    join again and their episodes end as truncated, not stranded on the old ticks."""
    with envs.make("ddnet", 2, config={"servers": 1, "bots_per_server": 2, "lockstep": mode}) as env:
        env.reset()
        for _ in range(100):
            env.step(actions(2))
            if env.active.all():
                break
        old_tick = field(env, "tick")
        assert env.console(0, "reload")
        truncated = np.zeros(2)
        for _ in range(150):
            env.step(actions(2))
            truncated += env.truncations
            if truncated.all() and env.active.all():
                break
        assert truncated.all() and env.active.all() and field(env, "tick") < old_tick
        assert (env._state[:, env._F["snap_errors"]] == 0).all() and env.pool.restarts == 0


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def new_shm_names(before):
    """Names in /dev/shm that were not in `before`, less another trainer's shared-memory blocks
    (/puf<its pid>-...: a suite or a run beside this one)."""
    def others(name):
        pid = name[3:].split("-", 1)[0]
        return name.startswith("puf") and pid.isdigit() and int(pid) != os.getpid()
    return {n for n in set(os.listdir("/dev/shm")) - before if not others(n)}


def test_close_leaves_no_process_port_or_folder(mode):
    shm, fds = set(os.listdir("/dev/shm")), open_fds()
    env = envs.make("ddnet", 2, config={"servers": 2, "bots_per_server": 1, "lockstep": mode})
    env.reset()
    pids, ports, home = env.server_pids(), list(env.pool.ports), Path(env.pool._tmp)
    assert home.is_dir()
    env.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    for port in ports:  # free again
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", port))
    assert not home.exists()
    assert not new_shm_names(shm)                   # the lockstep blocks are memfds: no names anywhere
    assert open_fds() <= fds                        # nor descriptors: memfds, eventfds, sockets


def test_missing_server_and_map_are_clear_errors(tmp_path):
    with pytest.raises(RuntimeError, match=r"DDNet-Server not found at '/nope/DDNet-Server': install DDNet's server: "
                                           r"sudo apt-get install ddnet-server"):
        envs.make("ddnet", 1, config={"ddnet_server": "/nope/DDNet-Server"})
    with pytest.raises(FileNotFoundError, match=r"ddnet_map = 'Nowhere': no such map"):
        envs.make("ddnet", 1, config={"ddnet_map": "Nowhere"})
    with pytest.raises(ValueError, match=r"no spawn point reaches a finish tile"):
        envs.make("ddnet", 1, config={"ddnet_map": "dm1"})


def test_freeze_is_seen_and_a_stuck_bot_is_reset(mode):
    """The bot moved into a block of freeze tiles (the server's test command `move`, run by the bot
    itself over rcon) is frozen in its observation, penalized, and its episode ends as stuck."""
    from envs.ddnet.env import STATE
    cfg = {"servers": 1, "bots_per_server": 1, "stuck_seconds": 1.0, "lockstep": mode}
    with envs.make("ddnet", 1, config=cfg) as env:
        env.reset()
        for _ in range(100):
            env.step(actions(1))
            if env.active[0]:
                break
        # the route's first freeze: the freeze tile on the route (finite distance) nearest the spawn
        here_x, here_y = field(env, "x") // 32, field(env, "y") // 32
        fy, fx = np.nonzero(env.map.freeze & np.isfinite(env.dist))
        k = np.argmin(np.abs(fx - here_x) + np.abs(fy - here_y))
        x, y = fx[k], fy[k] - 1  # the tile above it: the tee falls in
        # `move` is relative, in tiles
        assert env._lib.ddc_rcon(env._client, 0, f"move {x - here_x} {y - here_y}".encode()) == 0
        frozen, ended = [], None
        for t in range(30):
            env.step(actions(1))
            frozen.append((env.observations[0, STATE.index("frozen")], env.rewards[0]))
            if env.terminals[0]:
                ended = t
                break
        assert any(f == 1 and r < 0 for f, r in frozen), frozen  # frozen, and the freeze penalty
        assert ended is not None and env.truncations[0] == 0
        log = env.log()
        assert log["stuck"] == 1 and log["frozen_share"] > 0.5 and log["died"] == 0


def spawned(env, n):
    env.reset()
    for _ in range(100):
        env.step(actions(n))
        if env.active.all():
            break
    assert env.active.all()


def test_lockstep_runs_exactly_the_granted_ticks_and_waits_between_steps():
    """Each step is exactly ticks_per_decision ticks of every server, whatever the wall clock does:
    no tick passes while the trainer sleeps, none is missed, and the game runs faster than 50 Hz."""
    with envs.make("ddnet", 4, config={"servers": 2, "bots_per_server": 2, "ticks_per_decision": 3}) as env:
        spawned(env, 4)
        env.epoch_metrics()
        for pause in (0.0, 0.3, 0.0):
            t0 = env._state[:, env._F["tick"]].copy()
            time.sleep(pause)
            env.step(actions(4, move=2))
            assert (env._state[:, env._F["tick"]] - t0 == 3).all(), pause
        t0, tick0, steps = time.monotonic(), field(env, "tick"), 200
        for _ in range(steps):
            env.step(actions(4, move=2))
        game_seconds = (field(env, "tick") - tick0) / 50
        assert game_seconds == steps * 3 / 50
        assert game_seconds / (time.monotonic() - t0) > 2  # faster than real time, even on a busy machine
        m = env.epoch_metrics()
        assert m["missed_ticks"] == 0 and m["lost_snapshots"] == 0 and m["snapshot_errors"] == 0


def run_episodes(seed, steps):
    """Observations, rewards and terminals of `steps` steps of 2 bots under seeded random actions."""
    cfg = {"servers": 1, "bots_per_server": 2, "episode_seconds": 1.5}
    out = []
    with envs.make("ddnet", 2, config=cfg, seed=seed) as env:
        env.reset()
        rng = np.random.default_rng(seed)
        for _ in range(steps):
            a = np.concatenate([rng.integers(0, [3, 2, 2, 2], (2, 4)), rng.normal(0, 2, (2, 1))], axis=1)
            env.step(a.astype(np.float32))
            out.append((env.observations.copy(), env.rewards.copy(), env.terminals.copy()))
        log = env.log()
    return out, log


@pytest.mark.parametrize("new_tiles", [0, 1])
def test_reward_new_tiles_pays_each_tile_once(new_tiles):
    """A bot that runs right, then back left until the episode ends: with reward_new_tiles = 1 only
    the tiles beyond its best pay, so no reward is below 0 and the episode's rewards add up to its
    logged score (its best, tiles × tile_reward); with 0 going back costs what going forward paid."""
    with envs.make("ddnet", 1, config={"servers": 1, "bots_per_server": 1, "episode_seconds": 4.0,
                                       "reward_new_tiles": new_tiles}) as env:
        env.reset()
        for _ in range(100):
            env.step(actions(1))
            if env.active[0]:
                break
        env.log()  # nothing before this episode
        rewards = []
        for k in range(60):  # 4 s of game time: 40 decisions
            env.step(actions(1, move=2 if k < 16 else 0))
            rewards.append(float(env.rewards[0]))
            if env.terminals[0]:
                break
        assert env.terminals[0] and env.truncations[0] == 1.0
        log = env.log()
    assert log["n"] == 1 and log["tiles"] > 5
    if new_tiles:
        assert min(rewards) >= 0 and sum(rewards) == pytest.approx(log["score"], abs=1e-6)
    else:
        assert min(rewards) < 0 and sum(rewards) < log["score"] - 0.05  # what going back cost


def test_the_same_seed_plays_the_same_episodes_twice():
    """Lockstep makes a run a function of its seed: two fresh sets of servers and bots, the same
    seeded actions, the same observations, rewards and episode ends, bit for bit, over several
    episodes (resets through kill_pl included)."""
    a, log_a = run_episodes(11, 160)
    b, log_b = run_episodes(11, 160)
    assert log_a["n"] >= 6 and log_a == log_b
    for t, ((oa, ra, da), (ob, rb, db)) in enumerate(zip(a, b)):
        assert np.array_equal(oa, ob) and np.array_equal(ra, rb) and np.array_equal(da, db), f"step {t}"
    assert sum(float(np.abs(o[0]).sum()) for o, _, _ in a) > 0  # it played (observations are not all zero)


def test_curriculum_starts_a_bot_exactly_where_one_stood():
    """A curriculum start puts the respawned bot on a place an earlier episode stood on (move_raw,
    exact in lockstep) for an episode of curriculum_seconds; start_perf counts the episodes from the
    spawn only, real_starts their share."""
    with envs.make("ddnet", 1, config={"servers": 1, "bots_per_server": 1, "episode_seconds": 1.0,
                                       "curriculum": 1.0, "curriculum_seconds": 0.6}) as env:
        spawned(env, 1)
        for _ in range(30):  # walk right along the route, recording places to stand on
            env.step(actions(1, move=2))
        # a place 30 tiles along the floor from the spawn, grounded: where an earlier episode stood
        x0, y0 = field(env, "x"), field(env, "y")
        ground = [(x, y0) for x in range(x0 - 40 * 32, x0 + 40 * 32, 32) if env._grounded(np.array([x]), np.array([y0]))[0]
                  and np.isfinite(env._distance_at(np.array([x]), np.array([y0]))[0])]
        tx, ty = max(ground, key=lambda p: 1 - env._distance_at(np.array([p[0]]), np.array([p[1]]))[0])
        progress = 1 - env._distance_at(np.array([tx]), np.array([ty]))[0] / env.spawn_distance
        env.curriculum.buffer.clear()
        env.curriculum.record(True, progress, [(progress, tx, ty)])
        env.log()
        starts = []
        for _ in range(200):
            target = env.placing[0]  # set at the decision that sent move_raw; the episode begins at the next
            env.step(actions(1))
            if target is not None and env.active[0]:
                starts.append((target, (field(env, "x"), field(env, "y")), bool(env.from_start[0])))
            if sum(t == (tx, ty) for t, _, _ in starts) >= 3:
                break
        assert all(not from_start for _, _, from_start in starts)
        assert all(t == at for t, at, _ in starts), starts             # exactly there
        assert sum(t == (tx, ty) for t, _, _ in starts) >= 3, starts    # the place recorded
        log = env.log()
        assert log["real_starts"] == 0 and "start_perf" not in log and log["progress"] >= progress - 0.01
        assert log["episode_seconds"] == 0.6  # curriculum_seconds, not episode_seconds
        m = env.epoch_metrics()
        assert m["curriculum_starts"] >= 3 and m["placement_misses"] == 0


def test_evaluation_starts_every_episode_at_the_spawn():
    """trainer.eval turns the curriculum off whatever the run's ini says (the kind's evaluation
    values), so its progress is measured from the map's spawn."""
    from trainer import config as config_mod
    from trainer.eval import Evaluator
    source = envs.resolve("ddnet")
    cfg, _ = config_mod.load(source, config_mod.parse_flags(["--env.curriculum", "0.8", "--env.episode_seconds", "1"]))
    assert cfg["env"]["curriculum"] == 0.8
    ev = Evaluator(source, cfg, None, 2, seed=3)
    try:
        assert ev.env.curriculum.share == 0.0
        res = ev.measure(4)
        assert res["episodes"] == 4 and "start_perf" not in res and 0 <= res["progress"] < 0.1
    finally:
        ev.env.close()
