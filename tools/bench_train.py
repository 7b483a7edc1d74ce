"""Training throughput: an env's default config for a few epochs, end to end.

    python tools/bench_train.py [--epochs 3] [--env platformer] [--section.key value ...]
    python tools/bench_train.py --env pixel_platformer --epochs 1   # a picture env: SPS and GPU memory
    python tools/bench_train.py --env bandit --env.wait_us 50 --vec.num_threads 1 --buffers 1,2   # 1 vs 2 env buffers
    python tools/bench_train.py --kernels "tuned;matmul=sg8,mingru=vec4"   # the tuner's choice vs pinned kernels

Runs trainer.run's loop (rollout with the GPU policy, env stepping, minibatch updates) with logs
and checkpoints in a temporary folder. The first epoch (pipeline compilation, warm-up) is not
counted. Prints SPS, the time split (with 2+ buffers "env" is the time spent waiting for env
steps that inference did not hide) and the GPU memory the run's buffers hold (policy: weights and
gradients; rollout: observations — uint8 pictures packed 4 per u32 — and per-step data; inference:
the per-step plans' scratch, conv outputs included; learner: a minibatch's activations, conv
outputs and their gradients, the conv patch scratch, Muon's state; total); last line per run
`train <env>: <SPS> SPS on <adapter>`.
--buffers runs the same config once per vec.num_buffers value, one after the other in this
process, and ends with a side-by-side line. bandit's [env] knobs make each env step slow: spin adds
busy CPU work (10000: ~23 µs), wait_us a sleep (50: ~145 µs with Linux's timer slack); the line
`env cost` states what was measured. On lavapipe inference runs on the same CPU cores as the envs,
so only an env cost that leaves the cores free (wait_us; on a real GPU, any env) can be hidden.
--against REV runs the same command from git revision REV (a temporary worktree) and from this
checkout, alternating for --rounds rounds, each run in a fresh process; it prints each round's SPS and
ratio, then `train <env> against rev <hash>: ...; mean <ratio>x on <adapter>`.
Under `mpiexec -n K` the run is data-parallel (trainer/distributed.py); rank 0 prints, adding each
rank's SPS and the all-reduce: milliseconds per minibatch update (the gradient's all-gather and sum,
including the wait for the slowest rank) and its share of the epoch.
--kernels runs the same config once per kernel choice (`;`-separated: `tuned` = the tuner's choice
from the cache or by timing, anything else a PUFFGPU_KERNELS pin such as `matmul=sg8,mingru=vec4`,
lavapipe's kernels before the tuner existed); repeat entries to alternate them against drift.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import numpy as np  # noqa: E402

import envs  # noqa: E402
from trainer import config, distributed  # noqa: E402
from trainer.run import train  # noqa: E402
from puffbase.console import safe_console  # noqa: E402


def env_cost_us(env_name, cfg, agents=64, steps=100):
    """Microseconds of one agent step of the env alone, on one thread."""
    env = envs.make(env_name, agents, config=cfg["env"], num_threads=1, check_actions=False)
    env.reset()
    env.step()
    t = time.perf_counter()
    for _ in range(steps):
        env.step()
    dt = time.perf_counter() - t
    env.close()
    return dt / (steps * agents) * 1e6


def rollout_obs_bytes(head) -> int:
    """Bytes of the rollout's observation buffer: agents × horizon × the row's u32 words."""
    from trainer.policy import Rollout
    from trainer.spec import PolicySpec
    spec = PolicySpec.from_meta(head["policy"])
    agents = head["num_agents"] // len(head.get("ranks", [0]))  # one rank's share in a data-parallel run
    return 4 * agents * head["config"]["train"]["horizon"] * Rollout.stride_for(spec)


_WORLD = None


def the_world():
    """This process's rank (trainer/distributed.py), connected once for all the runs of a bench."""
    global _WORLD
    if _WORLD is None:
        _WORLD = distributed.connect()
    return _WORLD


def allreduce_alone(world, n: int, reps: int = 20):
    """Median ms of one gradient average of n floats with every rank ready (a barrier before each):
    the transfer and sum alone, without waiting for a slower rank. None in one process."""
    if world.size == 1:
        return None
    grad, times = np.ones(n, np.float32), []
    for _ in range(reps):
        world.barrier()
        t = time.perf_counter()
        world.average(grad)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def bench(env_name, cfg, epochs, adapter):
    with tempfile.TemporaryDirectory(prefix="puffgpu-bench-") as tmp:
        cfg["base"]["checkpoint_dir"] = f"{tmp}/checkpoints"
        cfg["base"]["log_dir"] = f"{tmp}/logs"
        cfg["base"]["checkpoint_interval"] = 10 ** 9  # only the final save
        epoch_steps = cfg["vec"]["total_agents"] * cfg["train"]["horizon"]
        cfg["train"]["total_timesteps"] = (epochs + 1) * epoch_steps
        res = train(env_name, cfg, adapter=adapter, live=False, world=the_world())
        alone = allreduce_alone(the_world(), res["num_floats"])
        if not the_world().is_root:  # a data-parallel rank other than 0: rank 0 reports
            return None, None
        rows = [json.loads(line) for line in Path(res["log"]).read_text(encoding="utf-8").splitlines()]
    head = rows[0]
    timed = [r for r in rows if r["type"] == "epoch"][1:]
    secs = sum(e["epoch_seconds"] for e in timed)
    steps = len(timed) * head["num_agents"] * cfg["train"]["horizon"]
    split = {k: sum(e.get(f"time/{k}", 0.0) * e["epoch_seconds"] for e in timed) / secs
             for k in ("env", "inference", "learn")}
    print(f"{len(timed)} timed epochs of {epoch_steps:,} steps ({head['num_agents']} agents x "
          f"{cfg['train']['horizon']}, num_buffers {cfg['vec']['num_buffers']}): {secs:.1f} s")
    print("time split: " + ", ".join(f"{k} {v:.0%} ({v * secs / len(timed):.2f} s/epoch)" for k, v in split.items()))
    mem = head.get("gpu_bytes")
    if mem:
        print(("gpu memory (rank 0): " if "ranks" in head else "gpu memory: ") + ", ".join(f"{k} {v / 2 ** 20:,.1f} MiB" for k, v in mem.items())
              + f" (rollout obs {rollout_obs_bytes(head) / 2 ** 20:,.1f} MiB)", flush=True)
    ranks = sorted((k for k in timed[0] if k.startswith("rank/sps_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    if ranks:
        def mean(k):
            return sum(e[k] for e in timed) / len(timed)
        print(f"{len(ranks)} ranks: " + ", ".join(f"rank {k.rsplit('_', 1)[1]} {mean(k):,.0f} SPS" for k in ranks)
              + f"; all-reduce {mean('allreduce_ms'):.1f} ms per minibatch update, {mean('time/allreduce'):.0%} "
              f"of the epoch (waits for the slowest rank included)", flush=True)
    if alone is not None:
        print(f"all-reduce alone (after a barrier, median of 20): {alone:.2f} ms for the policy's "
              f"{res['num_floats']:,} float32 gradient", flush=True)
    sps = steps / secs
    print(f"train {Path(env_name).stem}: {sps:,.0f} SPS on {head['adapter']}", flush=True)
    return sps, head["adapter"]


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="platformer")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs (one more runs first as warm-up)")
    ap.add_argument("--adapter", default=None)
    ap.add_argument("--buffers", default=None, help="comma list of vec.num_buffers values to run side by side, e.g. 1,2")
    ap.add_argument("--kernels", default=None, help="`;`-separated kernel choices to run side by side: `tuned` "
                    "or a PUFFGPU_KERNELS pin, e.g. \"tuned;matmul=sg8,mingru=vec4\"")
    ap.add_argument("--against", default=None, metavar="REV",
                    help="also run this bench from git revision REV (a temporary worktree), alternating with this "
                         "checkout for --rounds rounds, and print each round's ratio")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of --against (each runs both sides once)")
    args, rest = ap.parse_known_args()
    if args.against:
        bench_against(args, rest)
        return
    flags = config.parse_flags(rest)
    cfg, _ = config.load(args.env, flags)
    if args.kernels is not None:
        bench_kernels(args, cfg)
        return
    if args.buffers is None:
        bench(args.env, cfg, args.epochs, args.adapter)
        return
    counts = [int(b) for b in args.buffers.split(",")]
    print(f"env cost: {env_cost_us(args.env, cfg):.1f} us per agent step ({Path(args.env).stem}, one thread)")
    results = {}
    for b in counts:
        run_cfg = json.loads(json.dumps(cfg))  # a fresh copy per run
        run_cfg["vec"]["num_buffers"] = b
        results[b], adapter = bench(args.env, run_cfg, args.epochs, args.adapter)
    print(f"train {Path(args.env).stem} by num_buffers: "
          + ", ".join(f"{b}: {sps:,.0f} SPS" for b, sps in results.items()) + f" on {adapter}")


def bench_against(args, rest):
    """This checkout and git revision `args.against`, alternating (this first, then the revision, per round),
    each in a fresh process with the same arguments: per-round SPS, ratios, and the mean ratio."""
    import re
    import subprocess
    root = Path(__file__).resolve().parent.parent
    argv = ["--env", args.env, "--epochs", str(args.epochs), *(["--adapter", args.adapter] if args.adapter else []),
            *rest]
    with tempfile.TemporaryDirectory() as tmp:
        other = Path(tmp) / "rev"
        subprocess.run(["git", "-C", str(root), "worktree", "add", "--detach", "-q", str(other), args.against], check=True)
        try:
            rev = subprocess.run(["git", "-C", str(other), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, check=True).stdout.strip()
            sides = {"this checkout": root, f"rev {rev}": other}
            results = {k: [] for k in sides}
            for r in range(args.rounds):
                for name, where in sides.items():
                    out = subprocess.run([sys.executable, str(where / "tools" / "bench_train.py"), *argv], cwd=where,
                                         capture_output=True, text=True, encoding="utf-8")
                    m = re.findall(r"^train \S+: ([\d,]+) SPS on (.+)$", out.stdout, re.M)
                    if out.returncode or not m:
                        sys.exit(f"bench_train --against: the run of {name} failed (exit {out.returncode}):\n"
                                 f"{out.stdout[-2000:]}{out.stderr[-2000:]}")
                    results[name].append(float(m[-1][0].replace(",", "")))
                    adapter = m[-1][1]
                    print(f"round {r + 1}: {name}: {results[name][-1]:,.0f} SPS", flush=True)
        finally:
            subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(other)], check=False)
    (a, av), (b, bv) = results.items()
    ratios = [x / y for x, y in zip(av, bv)]
    print(f"train {args.env} against {b}: " + ", ".join(f"{x:,.0f} vs {y:,.0f} ({q:.2f}x)" for x, y, q in
                                                    zip(av, bv, ratios))
          + f"; mean {sum(ratios) / len(ratios):.2f}x on {adapter}")


def bench_kernels(args, cfg):
    """One run per kernel choice, in this process; each run attaches a new tuner, which reads PUFFGPU_KERNELS."""
    choices = [c.strip() for c in args.kernels.split(";") if c.strip()]
    results = []
    for choice in choices:
        if choice == "tuned":
            os.environ.pop("PUFFGPU_KERNELS", None)
        else:
            os.environ["PUFFGPU_KERNELS"] = choice
        print(f"--- kernels: {choice}", flush=True)
        sps, adapter = bench(args.env, json.loads(json.dumps(cfg)), args.epochs, args.adapter)
        results.append((choice, sps))
    by = {}
    for choice, sps in results:
        by.setdefault(choice, []).append(sps)
    print(f"train {Path(args.env).stem} by kernels: " + "; ".join(
        f"{c}: " + ", ".join(f"{v:,.0f}" for v in vals) + (f" (mean {sum(vals) / len(vals):,.0f})" if len(vals) > 1 else "")
        + " SPS" for c, vals in by.items()) + f" on {adapter}")


if __name__ == "__main__":
    main()
