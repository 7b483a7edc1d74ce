"""The ddnet env's throughput, in lockstep and in real time: K DDNet servers × B bots, random actions,
no policy.

    python tools/bench_ddnet.py [--servers 4] [--bots 32] [--ticks 5] [--seconds 20] [--mode lockstep]
    python tools/bench_ddnet.py --table        # 1-4 servers x 32/63 bots, lockstep beside real time

In real time the servers tick at 50 Hz whatever the trainer does, so the game's own pace, K·B·50/k
agent steps a second at k ticks a decision, is the most the env can deliver; in lockstep the trainer
drives the servers' clocks and the env runs as fast as the CPUs allow. For each run the bench
prints the agent steps a second (and the multiple of the game's pace), the share of decisions sent
after the next was due (missed ticks: 0 by construction in lockstep), the snapshot decode time of
the client's network thread (mean and worst), snapshot errors, the CPU the servers and this process
(the env's Python, the client's thread) used, as seconds a second and as microseconds per agent
step (the figure a busy machine disturbs least), and in lockstep the share of the wall time the env
waited for the servers and the decoding (the rest is this process: the env's Python, the sends).
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402

MODES = {"lockstep": 1, "realtime": 0}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc); 0 for one that is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(servers: int, bots: int, ticks: int, seconds: float, mode: str, map_name: str = "Tutorial") -> dict:
    n = servers * bots
    cfg = {"servers": servers, "bots_per_server": bots, "ticks_per_decision": ticks, "ddnet_map": map_name,
           "lockstep": MODES[mode]}
    with envs.make("ddnet", n, config=cfg, check_actions=False) as env:
        env.reset()
        rng = np.random.default_rng(0)
        sizes = np.array(env.act_sizes)

        def random_actions():
            return np.where(sizes == 1, rng.standard_normal((n, len(sizes))) * 2,
                            rng.integers(0, np.maximum(sizes, 2), (n, len(sizes)))).astype(np.float32)
        t0 = time.monotonic()
        while not env.active.all() and time.monotonic() - t0 < 30:
            env.step(random_actions())
        waited = [0.0]
        if env.lockstep:  # the wall time of the grants: the servers' ticks and snapshots, the decoding
            advance = env._advance

            def timed_advance():
                t = time.perf_counter()
                advance()
                waited[0] += time.perf_counter() - t
            env._advance = timed_advance
        env.epoch_metrics()  # start the counters here
        pids = env.server_pids()
        cpu0 = [cpu_seconds(pid) for pid in pids]
        me0 = time.process_time()
        steps, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            env.step(random_actions())
            steps += n
        wall = time.monotonic() - t0
        m = env.epoch_metrics()
        servers_cpu = sum(cpu_seconds(pid) - c for pid, c in zip(env.server_pids(), cpu0))
        me_cpu = time.process_time() - me0
    return dict(servers=servers, bots=bots, ticks=ticks, mode=mode, wall=wall, sps=steps / wall,
                pace=n * 50 / ticks, missed=m["missed_ticks"], decode_us=m["snapshot_decode_us"],
                decode_max_us=m["snapshot_decode_max_us"], errors=m["snapshot_errors"],
                servers_cpu=servers_cpu / wall, me_cpu=me_cpu / wall, servers_us=1e6 * servers_cpu / steps,
                me_us=1e6 * me_cpu / steps, waited=waited[0] / wall if mode == "lockstep" else float("nan"),
                restarts=m["server_restarts"], lost=m.get("lost_snapshots", 0.0))


def report(r: dict):
    print(f"ddnet: {r['servers']} servers x {r['bots']} bots, {r['ticks']} ticks a decision, {r['mode']}, "
          f"{r['wall']:.1f} s after every bot spawned")
    print(f"  agent steps/s: {r['sps']:,.0f} ({r['sps'] / r['pace']:.2f}x the game's pace of {r['pace']:,.0f})")
    print(f"  missed ticks: {r['missed']:.4f} of decisions sent after the next one was due")
    print(f"  snapshot decode: mean {r['decode_us']:.1f} us, worst {r['decode_max_us']:.0f} us (network thread); "
          f"snapshot errors {r['errors']:.0f}")
    print(f"  CPU: servers {r['servers_cpu']:.2f} s/s together ({r['servers_us']:.0f} us an agent step), this process "
          f"{r['me_cpu']:.2f} s/s ({r['me_us']:.0f} us an agent step: env, client thread, Python)")
    if r["mode"] == "lockstep":
        print(f"  waiting for the servers' ticks and the decoding: {r['waited']:.0%} of the wall time; "
              f"lost waits {r['lost']:.0f}")


def table(seconds: float, ticks: int, map_name: str):
    rows = []
    for servers in (1, 2, 3, 4):
        for bots in (32, 63):
            for mode in MODES:
                r = bench(servers, bots, ticks, seconds, mode, map_name)
                rows.append(r)
                print(f"  {servers} x {bots} {mode}: {r['sps']:,.0f} steps/s", file=sys.stderr, flush=True)
    print("| servers x bots | mode | agent steps/s | x game pace | CPU us/step servers | CPU us/step trainer | "
          "decode us | waited | missed ticks |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        waited = f"{r['waited']:.0%}" if r["mode"] == "lockstep" else "-"
        print(f"| {r['servers']} x {r['bots']} | {r['mode']} | {r['sps']:,.0f} | {r['sps'] / r['pace']:.2f} | "
              f"{r['servers_us']:.0f} | {r['me_us']:.0f} | {r['decode_us']:.1f} | {waited} | {r['missed']:.4f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", type=int, default=4)
    p.add_argument("--bots", type=int, default=32, help="bots per server")
    p.add_argument("--ticks", type=int, default=5, help="ticks per decision")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--mode", choices=list(MODES), default="lockstep")
    p.add_argument("--map", default="Tutorial")
    p.add_argument("--table", action="store_true",
                   help="every combination of 1-4 servers, 32/63 bots and both modes (--seconds each), as a table")
    args = p.parse_args()
    if args.table:
        table(args.seconds, args.ticks, args.map)
    else:
        report(bench(args.servers, args.bots, args.ticks, args.seconds, args.mode, args.map))


if __name__ == "__main__":
    main()
