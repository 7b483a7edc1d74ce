"""Env-only throughput: agent steps per second of the C vecenv, with 1 thread and with all.

    python tools/bench_env.py --env platformer [--agents 1024] [--seconds 2]
    python tools/bench_env.py --env envs/ocean/catcher/catcher.js     # a JS game, with the split
    python tools/bench_env.py --shm [--env platformer] [--rounds 3]   # envs in other processes

--shm measures, side by side in one run: the env in-process vs isolated in server processes
(`isolate = 1`, the shared-memory protocol) at the same agent count, alternating rounds so that
both see the same machine load; a DDNet-shaped server benchmark (8 servers x 127 agents x 1,397
f32 observations, no learning: steps/s and the time of one lockstep round); and the bare round
trip of one 1-agent server with each wait mechanism (spin only, futex only, a short spin then
futex, and what ShmVecEnv picks by itself: a long spin then futex when the servers and the
trainer fit on the usable cores, the short spin when they do not).

Random valid actions (a pool cycled through, so the timing excludes random number generation),
no action validation, no policy. The last line reads `NAME: <steps/s per core> steps/s per core`,
where per core = the all-threads rate divided by the thread count. The threads are OpenMP's, or
the vecenv's own where the compiler has no OpenMP or PUFFGPU_OPENMP=0 (the line says which).
For a JS game (a .js path) two more one-thread runs, timed by the process's CPU time (so that
other load on the machine does not change them), one with `rasterize = 0` (the drawing primitives
do nothing), split a step's time into the game logic (the game's JS and the p5 prelude's) and
rasterizing (the C primitives); with a frameskip (the game's ini) a step is that many frames, and
the line gives frames/s too.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402
from trainer.util.console import safe_console  # noqa: E402
from envs.vec.cvec import usable_cpus  # noqa: E402


def steps_per_second(name, agents, threads, seconds, config, with_env=False, cpu=False):
    """(agent steps per second, threads, thread kind); cpu=True divides by the process's CPU
    time instead of the wall time (a one-thread rate that other load on the machine does not
    change)."""
    env = envs.make(name, agents, config=config, num_threads=threads, check_actions=False)
    if with_env:
        return _timed(env, seconds)
    rng = np.random.default_rng(0)
    pool = [rng.integers(0, env.act_sizes, size=env.actions.shape).astype(np.float32)
            for _ in range(16)]
    env.reset()
    for i in range(20):  # warm up caches and the OpenMP thread team
        env.actions[:] = pool[i % 16]
        env.step()
    steps, start, cpu_start = 0, time.perf_counter(), time.process_time()
    while True:
        for i in range(50):
            env.actions[:] = pool[i % 16]
            env.step()
        steps += 50
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
    if cpu:
        elapsed = time.process_time() - cpu_start
    env.close()
    return steps * env.num_agents / elapsed, env.num_threads, env.threads_kind


def _timed(env, seconds, warmup=20):
    """(agent steps/s, seconds per lockstep round: median, p90) of env with random actions."""
    rng = np.random.default_rng(0)
    hi = np.maximum(np.array(env.act_sizes), 2)
    pool = [rng.integers(0, hi, size=env.actions.shape).astype(np.float32) for _ in range(16)]
    env.reset()
    for i in range(warmup):
        env.actions[:] = pool[i % 16]
        env.step()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds:
        for i in range(20):
            env.actions[:] = pool[i % 16]
            t = time.perf_counter()
            env.step()
            times.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - start
    n = env.num_agents
    env.close()
    times = np.array(times)
    return len(times) * n / elapsed, float(np.median(times)), float(np.percentile(times, 90))


def _bench_ini(folder, agents_per_server, obs_size, processes):
    ini = Path(folder) / "bench.ini"
    src = Path(envs.__file__).resolve().parent / "shm" / "bench_server.c"
    text = (f"[env]\nbuild = {src}\ncommand = {{build}} --agents {{agents}} --obs-size {obs_size} "
            f"--shm {{name}}\nprocesses = {processes}\n")
    ini.write_text(text, encoding="utf-8")
    return str(ini)


def shm_benchmarks(args):
    import os
    import tempfile
    # as trainer.run does: OpenMP threads that wait passively leave busy cores to others
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    cpus = usable_cpus()
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    print(f"machine: {cpus} usable CPUs, load average {load[0]}; env-only, no GPU")
    name, agents = args.env or "platformer", args.agents or 1024
    procs = args.processes or cpus
    modes = {"in-process": None, "isolate, 1 process": {"isolate": 1, "processes": 1},
             f"isolate, {procs} processes": {"isolate": 1, "processes": procs}}
    rates = {m: [] for m in modes}
    for r in range(args.rounds):  # each round measures every mode back to back, in rotating order
        names = list(modes)
        for mode in names[r % len(names):] + names[:r % len(names)]:
            rates[mode].append(steps_per_second(name, agents, cpus, args.seconds, modes[mode], with_env=True)[0])
    base = rates["in-process"]
    print(f"{name}: {agents} agents, in-process ({cpus} threads): {float(np.median(base)):,.0f} steps/s (median)")
    for mode in list(modes)[1:]:
        # the ratio within each round (both saw about the same machine load), then the median
        ratios = [a / b for a, b in zip(rates[mode], base)]
        print(f"{name}: {agents} agents, {mode}: {float(np.median(rates[mode])):,.0f} steps/s; / in-process = "
              f"{float(np.median(ratios)):.2f}x (median of {args.rounds} rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    with tempfile.TemporaryDirectory() as tmp:
        ini = _bench_ini(tmp, 127, 1397, 8)
        rate, med_t, p90 = _timed(envs.make(ini, 8 * 127, check_actions=False), args.seconds)
        print(f"DDNet-shaped: 8 servers x 127 agents x 1,397 f32 obs: {rate:,.0f} agent steps/s, "
              f"{rate / (8 * 127):,.0f} lockstep rounds/s; one round (actions in, 8 servers step, "
              f"observations out) {med_t * 1e3:.3f} ms median, {p90 * 1e3:.3f} ms p90")
        ini = _bench_ini(tmp, 1, 1, 1)
        for label, spin in (("spin only", "-1"), ("futex only", "0"), ("spin 100, then futex", "100"),
                            ("the automatic choice", "")):
            old = os.environ.get("PUFFER_SHM_SPIN")
            if spin:
                os.environ["PUFFER_SHM_SPIN"] = spin
            else:
                os.environ.pop("PUFFER_SHM_SPIN", None)
            try:
                _, med_t, p90 = _timed(envs.make(ini, 1, check_actions=False), min(args.seconds, 1.0))
            finally:
                if old is None:
                    os.environ.pop("PUFFER_SHM_SPIN", None)
                else:
                    os.environ["PUFFER_SHM_SPIN"] = old
            print(f"round trip, 1 server x 1 agent, {label}: {med_t * 1e6:.1f} us median, {p90 * 1e6:.1f} us p90")


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default=None, help=f"env name ({envs.describe_envs()}), or the path of a C header, JS game or server ini")
    p.add_argument("--shm", action="store_true", help="in-process vs isolated servers, a DDNet-shaped server "
                   "benchmark and the wait mechanisms' round trips (see above)")
    p.add_argument("--rounds", type=int, default=5, help="--shm: alternating rounds of in-process vs isolate")
    p.add_argument("--processes", type=int, default=None, help="--shm: server processes of the second isolate "
                   "measurement (default: usable CPUs; the first uses 1)")
    p.add_argument("--agents", type=int, default=None, help="total agents (default: the env's .ini [vec] total_agents, else 1024)")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    p.add_argument("--threads", type=int, default=None, help="the 'all threads' count (default: usable CPUs)")
    args = p.parse_args()
    if args.shm:
        shm_benchmarks(args)
        return
    if args.env is None:
        p.error("--env is required (or --shm)")

    ini = envs.env_ini_path(args.env)
    agents = args.agents or (envs.read_ini(ini).get("vec", {}).get("total_agents", 1024)
                             if ini.is_file() else 1024)
    threads = args.threads or usable_cpus()
    one, _, kind = steps_per_second(args.env, agents, 1, args.seconds, None)
    print(f"{args.env}: {agents} agents, 1 thread: {one:,.0f} steps/s")
    all_rate, used, kind = steps_per_second(args.env, agents, threads, args.seconds, None)
    print(f"{args.env}: {agents} agents, {used} threads ({kind}): {all_rate:,.0f} steps/s "
          f"({all_rate / one:.2f}x one thread)")
    name = Path(args.env).stem
    if "rasterize" in envs.env_config(args.env):  # game logic vs drawing; CPU time: the split should not depend on the load
        total, _, _ = steps_per_second(args.env, agents, 1, args.seconds, None, cpu=True)
        logic, _, _ = steps_per_second(args.env, agents, 1, args.seconds, {"rasterize": 0}, cpu=True)
        total_us, logic_us = 1e6 / total, 1e6 / logic
        fs = int(envs.env_config(args.env)["frameskip"])  # a step draws fs frames
        print(f"{name}: one thread, per CPU second {total:,.0f} steps/s: {total_us:.1f} us/step = game logic (JS) "
              f"{logic_us:.1f} us + rasterizing {max(total_us - logic_us, 0.0):.1f} us"
              + (f"; frameskip {fs}: {total * fs:,.0f} frames/s, {total_us / fs:.1f} us/frame" if fs > 1 else ""))
    print(f"{name}: {all_rate / used:.0f} steps/s per core")


if __name__ == "__main__":
    main()
