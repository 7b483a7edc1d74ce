"""The ddnet env's real-time throughput: K DDNet servers × B bots, random actions, no policy.

    python tools/bench_ddnet.py [--servers 4] [--bots 32] [--ticks 5] [--seconds 20]

The servers tick at 50 Hz whatever the trainer does, so the reference is the game's own pace,
K·B·50/k agent steps a second at k ticks a decision; the bench prints it beside what the env
delivered, the share of decisions sent after the next was due (missed ticks), the snapshot decode
time of the client's network thread (mean and worst), snapshot errors, and the CPU the servers and
this process used (seconds of CPU per second).
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--servers", type=int, default=4)
    p.add_argument("--bots", type=int, default=32, help="bots per server")
    p.add_argument("--ticks", type=int, default=5, help="ticks per decision")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--map", default="Tutorial")
    args = p.parse_args()
    n = args.servers * args.bots
    cfg = {"servers": args.servers, "bots_per_server": args.bots, "ticks_per_decision": args.ticks,
           "ddnet_map": args.map}
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
        env.epoch_metrics()  # start the counters here
        pids = env.server_pids()
        cpu0 = [cpu_seconds(pid) for pid in pids]
        me0 = time.process_time()
        steps, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < args.seconds:
            env.step(random_actions())
            steps += n
        wall = time.monotonic() - t0
        m = env.epoch_metrics()
        servers_cpu = sum(cpu_seconds(pid) - c for pid, c in zip(env.server_pids(), cpu0)) / wall
        me_cpu = (time.process_time() - me0) / wall
        nominal = n * 50 / args.ticks
        print(f"ddnet on {args.map}: {args.servers} servers x {args.bots} bots, {args.ticks} ticks a decision, "
              f"{wall:.1f} s after every bot spawned")
        print(f"  agent steps/s: {steps / wall:,.0f} of the game's {nominal:,.0f} ({steps / wall / nominal:.3f}x)")
        print(f"  missed ticks: {m['missed_ticks']:.4f} of decisions sent after the next one was due")
        print(f"  snapshot decode: mean {m['snapshot_decode_us']:.1f} us, worst {m['snapshot_decode_max_us']:.0f} us "
              f"(network thread); snapshot errors {m['snapshot_errors']:.0f}")
        print(f"  CPU: servers {servers_cpu:.2f} s/s together, this process {me_cpu:.2f} s/s "
              f"(env, client thread, Python)")


if __name__ == "__main__":
    main()
