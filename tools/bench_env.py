"""Env-only throughput: agent steps per second of the C vecenv, with 1 thread and with all.

    python tools/bench_env.py --env platformer [--agents 1024] [--seconds 2]
    python tools/bench_env.py --env envs/ocean/catcher/catcher.js     # a JS game, with the split
    python tools/bench_env.py --shm [--env platformer] [--rounds 3]   # envs in other processes
    python tools/bench_env.py --ale breakout.js=BreakoutNoFrameskip-v4 [more.js=...] [--js other.js] [--against DIR]

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

--ale measures JS games side by side with their Arcade Learning Environment originals, with
PlayTrain's protocol (64x64x3 pictures, frameskip 1, random actions drawn before each trial, for
both, so that the timing is the envs' steps, resets included, steps per CPU second, the median of
7 trials), on both paths a game runs on: one env (200 warm-up steps, then 1,500 frames, an action
and a step() from Python each: PlayTrain's single-core figure) and the training path (64 envs on
one thread stepped in C by the vecenv, as `--env GAME --agents 64` does: what a training run
gets per core). Every trial of a game alternates between its columns, so all see the same load.
ALE runs through ale-py and gymnasium (`pip install -e ".[atari]"`)
at its own 210x160x3. It prints a table (steps per CPU second of both paths, their ratio, ALE's
and the ratios to it; the geometric mean of the ratios), then a per-primitive cost table (ns per
call with the C p5 layer and with the prelude's JS alone, `native_p5 = 0`); per game the share of
a step spent in game logic, in p5 calls and in rasterizing; and env-only steps/s of 256 envs (a
JS game's default.ini) at 1 and 2 threads, OpenMP's threads waiting passively as trainer.run has
them. --js adds JS games without an ALE pair; --against CHECKOUT adds columns measured
with the envs of another checkout (a `git worktree` of an earlier commit, say), each trial
alternating with this one's: a before/after table from one command. The games are stepped in a
child process per checkout that uses only `envs.make`.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402
from puffbase.console import safe_console  # noqa: E402
from envs.interface import usable_cpus  # noqa: E402


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


# ---- --ale: JS games next to their ALE originals --------------------------------------------------
PROTOCOL = {"picture_width": 64, "picture_height": 64, "picture_channels": 3, "frameskip": 1}


class _JsRunner:
    """One JS env stepped with random actions (resets are the vecenv's own)."""

    def __init__(self, path, config=None, seed=0):
        self.env = envs.make(str(path), 1, num_threads=1, seed=seed, config=dict(PROTOCOL, **(config or {})),
                             check_actions=False)
        self.env.reset()
        self.rng = np.random.default_rng(seed)
        self.n = self.env.act_sizes[0]

    def run(self, actions):
        env = self.env
        for a in actions:
            env.actions[0, 0] = a
            env.step()

    def close(self):
        self.env.close()


class _AleRunner:
    def __init__(self, env_id, seed=0):
        try:
            import ale_py
            import gymnasium as gym
        except ImportError as e:
            raise SystemExit(f'--ale needs ale-py and gymnasium: pip install -e ".[atari]" ({e})')
        gym.register_envs(ale_py)
        self.env = gym.make(env_id, obs_type="rgb")
        self.env.reset(seed=seed)
        self.rng = np.random.default_rng(seed)
        self.n = self.env.action_space.n

    def run(self, actions):
        env = self.env
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()

    def close(self):
        self.env.close()


def _actions(runner, frames):
    """`frames` random actions of `runner`, drawn before the timing starts (as Python ints)."""
    return runner.rng.integers(runner.n, size=frames).tolist()


def _cpu_rate(runner, frames):
    actions = _actions(runner, frames)
    t = time.process_time()
    runner.run(actions)
    return frames / (time.process_time() - t)


def _side_by_side(runners, warmup, frames, trials):
    """Median steps per CPU second of each runner, trials alternating between them."""
    for r in runners:
        r.run(_actions(r, warmup))
    return _alternate([lambda t, r=r: _cpu_rate(r, frames) for r in runners], trials)


def _ale_id(spec):
    path, _, ale = spec.partition("=")
    if not ale:
        ale = Path(path).stem.split("_")[0].capitalize() + "NoFrameskip-v4"
    return path, ale


# The JS games of the table are stepped in a child process per checkout (this one, and with
# --against another, e.g. a checkout of an earlier commit), which uses nothing but envs.make, so
# that two versions of the envs run side by side, their trials alternating. It answers one JSON
# line per request; the game's output goes to stderr.
MEASURER = r"""
import json, sys, time
import numpy as np
reply, sys.stdout = sys.stdout, sys.stderr
import envs
made = {}
for line in sys.stdin:
    q = json.loads(line)
    try:
        if q["op"] == "open":
            env = envs.make(q["path"], q["agents"], num_threads=1, seed=0, config=q["config"], check_actions=False)
            env.reset()
            made[q["id"]] = env
            out = {"ok": True}
        else:
            env = made[q["id"]]
            rng = np.random.default_rng(q["seed"])
            n = env.act_sizes[0]
            if env.num_agents == 1:  # one env: an action and a step() from Python per frame
                acts = rng.integers(n, size=q["steps"]).tolist()
                t = time.process_time()
                for a in acts:
                    env.actions[0, 0] = a
                    env.step()
            else:  # the training path: all envs stepped in C, random actions from a pool
                pool = [rng.integers(0, n, size=env.actions.shape).astype(np.float32) for _ in range(16)]
                t = time.process_time()
                for i in range(q["steps"]):
                    env.actions[:] = pool[i % 16]
                    env.step()
            out = {"rate": q["steps"] * env.num_agents / (time.process_time() - t)}
    except Exception as e:
        out = {"error": f"{type(e).__name__}: {e}"}
    reply.write(json.dumps(out) + "\n")
    reply.flush()
"""


class _Measurer:
    """A child process that steps JS games with the envs of the checkout at `root`."""

    def __init__(self, root):
        import subprocess
        env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.root = root
        self.proc = subprocess.Popen([sys.executable, "-c", MEASURER], cwd=str(root), env=env, text=True,
                                     encoding="utf-8", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.count = 0

    def ask(self, **q):
        import json
        self.proc.stdin.write(json.dumps(q) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the measuring process for {self.root} ended (its output is above)")
        out = json.loads(line)
        if "error" in out:
            raise SystemExit(f"{self.root}: {q.get('path', '')}: {out['error']}")
        return out

    def open(self, path, agents):
        self.count += 1
        self.ask(op="open", id=self.count, path=str(path), agents=agents, config=PROTOCOL)
        return self.count

    def trial(self, handle, steps, seed):
        return self.ask(op="trial", id=handle, steps=steps, seed=seed)["rate"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _alternate(runs, trials):
    """Median of each run (a function of the trial's index returning a rate), trials alternating
    between the runs and reversing their order every other trial."""
    rates = [[] for _ in runs]
    for t in range(trials):
        order = list(range(len(runs)))
        if t % 2:
            order.reverse()
        for i in order:
            rates[i].append(runs[i](t))
    return [float(np.median(r)) for r in rates]


def both_paths(games, args, roots):
    """Per game and checkout: (one env, training path) steps per CPU second, and ALE's where the
    game has a pair; all trials alternate."""
    measurers = [_Measurer(r) for r in roots]
    table = []
    try:
        for path, ale_id in games:
            runs = []
            for m in measurers:
                one, train = m.open(path, 1), m.open(path, args.agents)
                m.trial(one, args.warmup, 0)
                m.trial(train, 20, 0)
                runs.append(lambda t, m=m, h=one: m.trial(h, args.frames, 1000 + t))
                runs.append(lambda t, m=m, h=train: m.trial(h, args.train_steps, 1000 + t))
            ale = None
            if ale_id:
                ale = _AleRunner(ale_id)
                ale.run(_actions(ale, args.warmup))
                runs.append(lambda t: _cpu_rate(ale, args.frames))
            try:
                rates = _alternate(runs, args.trials)
            finally:
                if ale is not None:
                    ale.close()
            per_root = [rates[2 * i:2 * i + 2] for i in range(len(measurers))]
            table.append((path, ale_id, per_root, rates[-1] if ale_id else None))
    finally:
        for m in measurers:
            m.close()
    return table


def print_both_paths(table, args, roots):
    cols = ["one env", f"training path ({args.agents} envs, one thread)", "training / one env"]
    head = ["game", *cols]
    if len(roots) > 1:
        head += [f"before: {c}" for c in cols[:2]]
    head += ["ALE", "vs ALE: one env, training path"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ratios = []
    for path, ale_id, per_root, ale in table:
        (one, train), rest = per_root[0], per_root[1:]
        row = [Path(path).name, f"{one:,.0f}", f"{train:,.0f}", f"{train / one:.2f}x"]
        for b_one, b_train in rest:
            row += [f"{b_one:,.0f}", f"{b_train:,.0f}"]
        if ale:
            ratios.append((one / ale, train / ale))
            row += [f"{ale:,.0f} ({ale_id})", f"{one / ale:.2f}x, {train / ale:.2f}x"]
        else:
            row += ["", ""]
        print("| " + " | ".join(row) + " |")
    if ratios:
        g = np.exp(np.mean(np.log(np.array(ratios)), axis=0))
        print(f"geometric mean over {len(ratios)} ALE pair(s): one env {g[0]:.2f}x ALE, training path {g[1]:.2f}x ALE")


# Per-primitive costs: a game whose draw() makes one call K times a frame, minus the same game
# with an empty loop; `setup` runs once a frame before the loop.
PRIMITIVES = [
    ("rect (1 px)", "", "rect((i % 60) * 6.25, 6.25, 6.25, 6.25);"),  # 400 units = 64 pixels
    ("ellipse (1 px)", "", "ellipse((i % 60) * 6.25 + 3.125, 9.375, 6.25, 6.25);"),
    ("fill", "", "fill(i & 255, 20, 30);"),
    ("push + pop", "", "push(); pop();"),
    ("translate", "", "translate(0.001, 0);"),  # draw() starts from the identity each frame
    ("rotate", "", "rotate(0.001);"),
    ("text (no-op here)", "", "text('hi', 10, 10);"),
    ("line (1 px)", "stroke(255);", "line(3, 3, 3.1, 3);"),
]
K = 200


def _primitive_game(folder, name, setup, body, k=K):
    text = ("function setup() { createCanvas(400, 400); }\nfunction resetGame() {}\n"
            "function getGameState() { return { score: 0 }; }\n"
            f"function draw() {{ background(0); noStroke(); {setup} for (let i = 0; i < {k}; i++) {{ {body} }} }}\n")
    path = Path(folder) / f"{name}.js"
    path.write_text(text, encoding="utf-8")
    return path


def _rate(path, config=None, frames=1500, trials=5):
    return _rates([(path, config)], frames, trials)[0]


def _rates(games, frames, trials, warmup=100):
    """Median steps per CPU second of each (path, config), their trials alternating."""
    runners = []
    try:
        for path, config in games:
            runners.append(_JsRunner(path, config))
        return _side_by_side(runners, warmup, frames, trials)
    finally:
        for r in runners:
            r.close()


def primitive_table(frames=600, trials=5):
    import tempfile
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for native in (1, 0):
            cfg = {"native_p5": native}
            games = [(_primitive_game(tmp, f"base{native}", "", ""), cfg)]
            games += [(_primitive_game(tmp, f"p{j}_{native}", setup, body), cfg)
                      for j, (_, setup, body) in enumerate(PRIMITIVES)]
            # per filled pixel: a 400x400 rect (the whole 64x64 picture) against a 1-pixel one
            games += [(_primitive_game(tmp, f"big{native}", "", "rect(0, 0, 400, 400);", k=20), cfg),
                      (_primitive_game(tmp, f"small{native}", "", "rect(0, 0, 6.25, 6.25);", k=20), cfg)]
            ns = [1e9 / r for r in _rates(games, frames, trials)]
            costs = [(t - ns[0]) / K for t in ns[1:-2]]
            costs.append((ns[-2] - ns[-1]) / 20 / (64 * 64 - 1))
            rows.append(costs)
    print(f"{'primitive':<22}{'C p5 layer, ns':>16}{'JS prelude, ns':>16}")
    for i, label in enumerate([p[0] for p in PRIMITIVES] + ["per filled pixel"]):
        print(f"{label:<22}{rows[0][i]:>16.1f}{rows[1][i]:>16.1f}")


NOOP_DRAWING = ("\n;(function (G) { const f = function () {}; for (const k of ['background', 'fill', 'stroke', 'noFill', "
                "'noStroke', 'strokeWeight', 'rect', 'square', 'ellipse', 'circle', 'arc', 'line', 'point', 'triangle', "
                "'quad', 'beginShape', 'vertex', 'endShape', 'image', 'text', 'push', 'pop', 'translate', 'rotate', "
                "'scale', 'rectMode', 'ellipseMode', 'textSize', 'textAlign', 'colorMode']) G[k] = f; })(globalThis);\n")


def step_split(path, frames=1500, trials=7):
    """(total, game logic, p5 calls, rasterizing) in us per step on one thread, trials
    alternating: logic is the game with every drawing call an empty JS function (so it holds the
    calls' own cost), p5 calls what the real calls cost beyond that without pixels
    (`rasterize = 0`), rasterizing what drawing the pixels adds."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / Path(path).name
        bare.write_text(Path(path).read_text(encoding="utf-8") + NOOP_DRAWING, encoding="utf-8")
        total, no_pixels, logic = (1e6 / r for r in _rates([(path, None), (path, {"rasterize": 0}), (bare, None)],
                                                           frames, trials))
    return total, logic, max(no_pixels - logic, 0.0), max(total - no_pixels, 0.0)


def threads_rates(path, agents=256, seconds=1.0):
    """[(steps/s by wall time, steps per CPU second, threads, kind)] at 1 and 2 threads: the
    second stays the first's when the threads share nothing (no lock, no false sharing)."""
    out = []
    for threads in (1, 2):
        wall, used, kind = steps_per_second(str(path), agents, threads, seconds, dict(PROTOCOL))
        cpu, _, _ = steps_per_second(str(path), agents, threads, seconds, dict(PROTOCOL), cpu=True)
        out.append((wall, cpu, used, kind))
    return out


def ale_benchmarks(args):
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads do not spin on the CPU clock
    pairs = [_ale_id(s) for s in args.ale or []]
    # a name (catcher) is its game file, which the per-game split reads and rewrites
    try:
        args.js = [p if Path(p).is_file() else str(envs.resolve(p).path) for p in args.js or []]
        pairs = [(p if Path(p).is_file() else str(envs.resolve(p).path), a) for p, a in pairs]
    except (FileNotFoundError, ValueError) as e:  # a game named by a path that is not there
        raise SystemExit(f"error: {e} (name a JS game by its path, or a built-in one by its name)") from None
    roots = [Path(__file__).resolve().parent.parent] + [Path(r).resolve() for r in args.against or []]
    print(f"protocol: 64x64x3 (ALE: 210x160x3), frameskip 1, random actions drawn before each trial, resets "
          f"included, steps per CPU second, median of {args.trials} trials, every trial of a game alternating "
          f"between the columns; one env: {args.warmup} warm-up steps, then {args.frames} frames, an action and "
          f"a step() from Python each; training path: {args.agents} envs on one thread stepped in C, "
          f"{args.train_steps} steps of all of them")
    if len(roots) > 1:
        print(f"before: the envs of {', '.join(str(r) for r in roots[1:])}")
    table = both_paths([(p, a) for p, a in pairs] + [(p, None) for p in args.js], args, roots)
    print_both_paths(table, args, roots)
    if args.table_only:
        return
    games = [p for p, _ in pairs] + list(args.js or [])
    print()
    primitive_table()
    print()
    for path in games:
        total, logic, calls, raster = step_split(path, args.frames)
        print(f"{Path(path).name}: {total:.1f} us a step = game logic {logic:.1f} us ({100 * logic / total:.0f}%) + "
              f"p5 calls {calls:.1f} us ({100 * calls / total:.0f}%) + rasterizing {raster:.1f} us "
              f"({100 * raster / total:.0f}%)")
    print()
    for path in games:
        (one, one_cpu, _, _), (two, two_cpu, used, kind) = threads_rates(path)
        print(f"{Path(path).name}: env-only, 256 envs: 1 thread {one:,.0f} steps/s ({one_cpu:,.0f} per CPU second), "
              f"{used} threads ({kind}) {two:,.0f} steps/s ({two_cpu:,.0f} per CPU second); wall {two / one:.2f}x, "
              f"per CPU second {two_cpu / one_cpu:.2f}x")


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
    p.add_argument("--ale", nargs="+", metavar="GAME.js=ALE_ID", default=None,
                   help="JS games side by side with their ALE originals (see above); without =ID: the game's "
                   "name + NoFrameskip-v4")
    p.add_argument("--js", nargs="+", default=None, help="--ale: more JS games, without an ALE pair")
    p.add_argument("--trials", type=int, default=7, help="--ale: trials (the median is printed)")
    p.add_argument("--frames", type=int, default=1500, help="--ale: timed frames per trial")
    p.add_argument("--warmup", type=int, default=200, help="--ale: warm-up steps")
    p.add_argument("--train-steps", type=int, default=200, help="--ale: timed steps of all envs per trial of "
                   "the training path")
    p.add_argument("--against", nargs="+", default=None, metavar="CHECKOUT",
                   help="--ale: also measure the JS games with the envs of another checkout (the folder holding "
                   "its envs/, e.g. a `git worktree` of an earlier commit), every trial alternating with this one's")
    p.add_argument("--table-only", action="store_true", help="--ale: the table alone (not the per-call costs, "
                   "the split of a step and the threads)")
    args = p.parse_args()
    if args.ale or (args.js and args.env is None):
        args.agents = args.agents or 64
        ale_benchmarks(args)
        return
    if args.shm:
        shm_benchmarks(args)
        return
    if args.env is None:
        p.error("--env is required (or --shm)")

    source = envs.resolve(args.env)  # once: every run below takes the source
    ini, env_config = source.ini, source.env_config()
    agents = args.agents or (envs.read_ini(ini).get("vec", {}).get("total_agents", 1024)
                             if ini.is_file() else 1024)
    threads = args.threads or usable_cpus()
    one, _, kind = steps_per_second(source, agents, 1, args.seconds, None)
    print(f"{args.env}: {agents} agents, 1 thread: {one:,.0f} steps/s")
    all_rate, used, kind = steps_per_second(source, agents, threads, args.seconds, None)
    print(f"{args.env}: {agents} agents, {used} threads ({kind}): {all_rate:,.0f} steps/s "
          f"({all_rate / one:.2f}x one thread)")
    name = source.name
    if "rasterize" in env_config:  # game logic vs drawing; CPU time: the split should not depend on the load
        total, _, _ = steps_per_second(source, agents, 1, args.seconds, None, cpu=True)
        logic, _, _ = steps_per_second(source, agents, 1, args.seconds, {"rasterize": 0}, cpu=True)
        total_us, logic_us = 1e6 / total, 1e6 / logic
        fs = int(env_config["frameskip"])  # a step draws fs frames
        print(f"{name}: one thread, per CPU second {total:,.0f} steps/s: {total_us:.1f} us/step = game logic (JS) "
              f"{logic_us:.1f} us + rasterizing {max(total_us - logic_us, 0.0):.1f} us"
              + (f"; frameskip {fs}: {total * fs:,.0f} frames/s, {total_us / fs:.1f} us/frame" if fs > 1 else ""))
    print(f"{name}: {all_rate / used:.0f} steps/s per core")


if __name__ == "__main__":
    main()
