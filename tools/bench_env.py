"""Env-only throughput: agent steps per second of the C vecenv, with 1 thread and with all.

    python tools/bench_env.py --env platformer [--agents 1024] [--seconds 2]
    python tools/bench_env.py --env envs/games/catcher/catcher.js     # a JS game, with the split


Random valid actions (a pool cycled through, so the timing excludes random number generation),
no action validation, no policy. The last line reads `NAME: <steps/s per core> steps/s per core`,
where per core = the all-threads rate divided by the thread count. The threads are OpenMP's, or
the vecenv's own where the compiler has no OpenMP or PUFFGPU_OPENMP=0 (the line says which).
For a JS game (a .js path) two more one-thread runs, timed by the process's CPU time (so that
other load on the machine does not change them), one with `rasterize = 0` (the drawing primitives
do nothing), split a step's time into the game logic (the game's JS and the p5 prelude's) and
rasterizing (the C primitives).
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402
from envs.console import safe_console  # noqa: E402
from envs.vecenv import usable_cpus  # noqa: E402


def steps_per_second(name, agents, threads, seconds, config, cpu=False):
    """(agent steps per second, threads, thread kind); cpu=True divides by the process's CPU
    time instead of the wall time (a one-thread rate that other load on the machine does not
    change)."""
    env = envs.make(name, agents, config=config, num_threads=threads, check_actions=False)
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


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", required=True, help=f"env name ({', '.join(envs.list_envs())}) or header path")
    p.add_argument("--agents", type=int, default=None, help="total agents (default: the env's .ini [vec] total_agents, else 1024)")
    p.add_argument("--seconds", type=float, default=2.0, help="timed seconds per measurement")
    p.add_argument("--threads", type=int, default=None, help="the 'all threads' count (default: usable CPUs)")
    args = p.parse_args()

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
    if str(args.env).endswith(".js"):  # CPU time: the split should not depend on the machine's load
        total, _, _ = steps_per_second(args.env, agents, 1, args.seconds, None, cpu=True)
        logic, _, _ = steps_per_second(args.env, agents, 1, args.seconds, {"rasterize": 0}, cpu=True)
        total_us, logic_us = 1e6 / total, 1e6 / logic
        print(f"{name}: one thread, per CPU second {total:,.0f} steps/s: {total_us:.1f} us/step = game logic (JS) "
              f"{logic_us:.1f} us + rasterizing {max(total_us - logic_us, 0.0):.1f} us")
    print(f"{name}: {all_rate / used:.0f} steps/s per core")


if __name__ == "__main__":
    main()
