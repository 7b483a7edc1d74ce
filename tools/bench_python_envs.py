"""Python envs, env-only throughput side by side: puffgpu's worker processes (the shared-memory
protocol) against Gymnasium's own AsyncVectorEnv and PufferLib 3.0's Multiprocessing vecenv, on
the same Gymnasium env, at 1 core and at all cores.

    python tools/bench_python_envs.py                                # puffgpu and AsyncVectorEnv
    python tools/bench_python_envs.py --pufferlib-python /path/to/venv/bin/python [--pufferlib-path SRC]
    python tools/bench_python_envs.py --env CartPole-v1 --env LunarLander-v3 --envs 32 --rounds 5

Each trial is a process of its own, pinned to the first C usable CPUs (its workers inherit the
pin), that makes `--envs` envs with its contender, steps them with random valid actions (a pool
drawn beforehand and cycled, so that the timing is the envs'), 100 warm-up steps, then as many as
fit in `--seconds`; it reports agent steps per second of wall time and the CPU time of its whole
process tree (itself and every worker, from /proc) per step, which other load on a shared machine
does not inflate the way it inflates wall time. The contenders alternate within each round (in a
rotating order), so all see the same load; the table gives the median over rounds.

The contenders, each the library's own multi-core path:
- puffgpu: envs.make("gym:ID", N, processes = C): C worker processes over the shared-memory
  protocol, N / C envs each, stepped in a plain loop (envs/gym/runner.py).
- gymnasium AsyncVectorEnv: one process per env (its only layout), shared memory on, the default
  next-step autoreset.
- PufferLib 3.0 Multiprocessing: pufferlib.vector.make(GymnasiumPufferEnv, num_envs=N,
  num_workers=C, batch_size=N): its emulation layer and shared-memory workers. PufferLib is no
  dependency of puffgpu: pass the Python of a separate environment that has it
  (`pip install pufferlib==3.0.0` there; its pure-Python vector and emulation modules are all this
  uses, so `--pufferlib-path` may point at the unpacked source instead of an installed copy).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CONTENDERS = ("puffgpu", "gymnasium-async", "pufferlib3")
TITLES = {"puffgpu": "puffgpu workers", "gymnasium-async": "Gymnasium AsyncVectorEnv",
          "pufferlib3": "PufferLib 3.0 Multiprocessing"}


def tree_cpu_seconds(root_pid: int) -> float:
    """User + system CPU seconds of a process and all its live descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after the command name, which may hold spaces
        pid = int(entry)
        parents[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [root_pid]
    children = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return total


# ---- one trial (in its own process) ----

def _random_pool(space, n, count, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    return [rng.integers(0, space.n, n) for _ in range(count)]


def trial(contender, env_id, n, cores, seconds, warmup=100):
    import numpy as np
    import gymnasium as gym
    cpus = sorted(os.sched_getaffinity(0))[:cores]
    os.sched_setaffinity(0, cpus)  # the workers started below inherit it
    space = gym.make(env_id).action_space
    pool = _random_pool(space, n, 256, 0)
    if contender == "puffgpu":
        import envs
        env = envs.make(f"gym:{env_id}", n, config={"processes": cores}, seed=1, check_actions=False)
        env.reset()
        acts = [a.reshape(n, 1).astype(np.float32) for a in pool]

        def step(a):
            env.step(a)
        close = env.close
    elif contender == "gymnasium-async":
        acts = pool
        env = gym.vector.AsyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
        env.reset(seed=1)

        def step(a):
            env.step(a)
        close = env.close
    else:
        import pufferlib.emulation
        import pufferlib.vector
        acts = pool

        def creator(buf=None, seed=0):
            return pufferlib.emulation.GymnasiumPufferEnv(env_creator=lambda: gym.make(env_id), buf=buf, seed=seed)
        env = pufferlib.vector.make(creator, num_envs=n, num_workers=cores, batch_size=n,
                                    backend=pufferlib.vector.Multiprocessing)
        env.async_reset(1)
        env.recv()

        def step(a):
            env.send(a)
            env.recv()
        close = env.close
    for i in range(warmup):
        step(acts[i % len(acts)])
    me = os.getpid()
    c0, t0, steps = tree_cpu_seconds(me), time.perf_counter(), 0
    while True:
        for a in acts[:32]:
            step(a)
        steps += 32
        t1 = time.perf_counter()
        if t1 - t0 >= seconds:
            break
    c1 = tree_cpu_seconds(me)
    close()
    return {"sps": steps * n / (t1 - t0), "cpu_us_per_step": 1e6 * (c1 - c0) / (steps * n), "steps": steps * n,
            "wall": t1 - t0}


# ---- the side-by-side run ----

def run_trial(python, contender, env_id, n, cores, seconds, extra_path=None):
    cmd = [python, str(Path(__file__).resolve()), "--trial", contender, "--env", env_id, "--envs", str(n),
           "--cores", str(cores), "--seconds", str(seconds)]
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = extra_path + os.pathsep + env.get("PYTHONPATH", "")
    # PufferLib 3.0 links a 'resources' folder into the working directory on import: keep it in a temp one
    with tempfile.TemporaryDirectory() as cwd:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not line:
        tail = "\n    ".join((out.stderr or out.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"{contender} on {env_id} ({cores} cores) failed (exit {out.returncode}):\n    {tail}")
    return json.loads(line[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", action="append", help="Gymnasium ids (default: CartPole-v1 and LunarLander-v3)")
    ap.add_argument("--envs", type=int, default=32, help="envs per vecenv (default 32)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of alternating trials (default 5)")
    ap.add_argument("--seconds", type=float, default=3.0, help="timed seconds per trial (default 3)")
    ap.add_argument("--cores", default=None, help="core counts, comma-separated (default: 1 and all usable)")
    ap.add_argument("--pufferlib-python", default=None, help="a Python with pufferlib 3.0 (and gymnasium) installed")
    ap.add_argument("--pufferlib-path", default=None, help="PYTHONPATH entry for that Python: an unpacked pufferlib 3.0")
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--trial", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.trial:  # inside one trial's process
        print(json.dumps(trial(args.trial, args.env[0], args.envs, int(args.cores), args.seconds)), flush=True)
        return 0
    ids = args.env or ["CartPole-v1", "LunarLander-v3"]
    usable = len(os.sched_getaffinity(0))
    cores = [int(c) for c in args.cores.split(",")] if args.cores else sorted({1, usable})
    contenders = ["puffgpu", "gymnasium-async"] + (["pufferlib3"] if args.pufferlib_python else [])
    python = {"puffgpu": sys.executable, "gymnasium-async": sys.executable, "pufferlib3": args.pufferlib_python}
    results = {}
    for env_id in ids:
        for c in cores:
            for r in range(args.rounds):
                order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
                for who in order:
                    res = run_trial(python[who], who, env_id, args.envs, c, args.seconds,
                                    args.pufferlib_path if who == "pufferlib3" else None)
                    results.setdefault((env_id, c, who), []).append(res)
                    print(f"  {env_id} {c} core(s) round {r + 1}: {who} {res['sps']:,.0f} steps/s, "
                          f"{res['cpu_us_per_step']:.1f} CPU-us/step", file=sys.stderr, flush=True)
    print(f"\n{args.envs} envs, random actions, median of {args.rounds} alternating rounds of {args.seconds:g} s "
          f"(CPU: the whole process tree's user + system time per agent step)\n")
    print("| env | cores | " + " | ".join(TITLES[c] for c in contenders) + " |")
    print("|---|---|" + "---|" * len(contenders))
    for env_id in ids:
        for c in cores:
            cells = []
            for who in contenders:
                rs = results[(env_id, c, who)]
                sps = statistics.median(r["sps"] for r in rs)
                cpu = statistics.median(r["cpu_us_per_step"] for r in rs)
                cells.append(f"{sps:,.0f} steps/s, {cpu:.1f} CPU-µs/step")
            print(f"| {env_id} | {c} | " + " | ".join(cells) + " |")
    if args.json:
        from puffbase.atomic import atomic_write
        atomic_write(args.json, json.dumps({f"{k[0]}|{k[1]}|{k[2]}": v for k, v in results.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
