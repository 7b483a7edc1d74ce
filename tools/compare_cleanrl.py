"""Side by side: a puffgpu run and a CleanRL ppo_atari.py run on the same Atari game, at equal env steps.

    python tools/compare_cleanrl.py --puffgpu logs/ale_breakout/RUN.jsonl --cleanrl cleanrl.log \\
        [--puffgpu-time time.txt --cleanrl-time time.txt] [--out docs/atari-breakout-vs-cleanrl.png]

Returns are whole games (every life), as both log them: puffgpu's env/score (the ALE kind counts a
game, not a life) and CleanRL's `episodic_return` lines (its RecordEpisodeStatistics sits inside
EpisodicLifeEnv, so it sees whole games too). The table gives, at each step mark both runs reached,
the mean return of the last --window games that ended by then; the figure, that mean along each run. --*-time take the
output of `/usr/bin/time -v` around each run: wall-clock and CPU time (user + system), whole runs.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

CLEANRL_GAME = re.compile(r"global_step=(\d+), episodic_return=\[?([-\d.e+]+)\]?")


def cleanrl_games(path) -> tuple[np.ndarray, np.ndarray]:
    """(global step, return) of every game ppo_atari.py printed."""
    rows = [(int(m[1]), float(m[2])) for m in CLEANRL_GAME.finditer(Path(path).read_text(encoding="utf-8"))]
    steps, returns = (np.array(c) for c in zip(*rows)) if rows else (np.zeros(0), np.zeros(0))
    return steps, returns


def puffgpu_games(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(global step, mean score, games) of every epoch of a puffgpu run log that ended games."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash or a run still writing
        if row.get("type") == "epoch" and row.get("env/n"):
            out.append((row["global_step"], row["env/score"], row["env/n"]))
    steps, scores, n = (np.array(c, float) for c in zip(*out)) if out else (np.zeros(0),) * 3
    return steps, scores, n


def last_games_mean(steps, values, weights, at, window):
    """Mean of the last `window` games that ended at or before step `at` (weights: games per value)."""
    k = np.searchsorted(steps, at, side="right")
    total, acc, i = 0.0, 0.0, k - 1
    while i >= 0 and total < window:
        take = min(weights[i], window - total)
        acc += take * values[i]
        total += take
        i -= 1
    return acc / total if total else float("nan"), int(total)


def read_time(path):
    """(wall seconds, CPU seconds) from `/usr/bin/time -v` output."""
    text = Path(path).read_text(encoding="utf-8")
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", text)[1])
    system = float(re.search(r"System time \(seconds\): ([\d.]+)", text)[1])
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)[1]
    seconds = sum(float(p) * 60 ** i for i, p in enumerate(reversed(wall.split(":"))))
    return seconds, user + system


def hms(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/compare_cleanrl.py", description=__doc__.split("\n")[0])
    ap.add_argument("--puffgpu", required=True, help="the run's JSONL log (logs/<env>/<run_id>.jsonl)")
    ap.add_argument("--cleanrl", required=True, help="ppo_atari.py's standard output")
    ap.add_argument("--puffgpu-time", help="`/usr/bin/time -v` output of the puffgpu run")
    ap.add_argument("--cleanrl-time", help="`/usr/bin/time -v` output of the CleanRL run")
    ap.add_argument("--window", type=int, default=100, help="games averaged at each mark (default 100)")
    ap.add_argument("--marks", default="250000,500000,1000000,1500000,2000000", help="env steps to compare at")
    ap.add_argument("--out", help="write the curves to this PNG")
    args = ap.parse_args(argv)
    c_steps, c_ret = cleanrl_games(args.cleanrl)
    p_steps, p_score, p_n = puffgpu_games(args.puffgpu)
    if not len(c_steps) or not len(p_steps):
        print("error: no finished games in " + (args.cleanrl if not len(c_steps) else args.puffgpu), file=sys.stderr)
        return 1
    reach = min(c_steps[-1], p_steps[-1])
    print(f"whole-game returns, mean of the last {args.window} games by each mark (both runs reached {reach:,.0f} steps)")
    print("| env steps | puffgpu | CleanRL ppo_atari.py |\n|---|---|---|")
    for mark in (int(m) for m in args.marks.split(",")):
        if mark > reach:
            continue
        p, pn = last_games_mean(p_steps, p_score, p_n, mark, args.window)
        c, cn = last_games_mean(c_steps, c_ret, np.ones_like(c_ret), mark, args.window)
        print(f"| {mark:,} | {p:.1f} ({pn} games) | {c:.1f} ({cn} games) |")
    if args.puffgpu_time and args.cleanrl_time:
        (pw, pc), (cw, cc) = read_time(args.puffgpu_time), read_time(args.cleanrl_time)
        print(f"wall-clock: puffgpu {hms(pw)}, CleanRL {hms(cw)} ({cw / pw:.2f}x); CPU time (user + system): "
              f"puffgpu {hms(pc)}, CleanRL {hms(cc)} ({cc / pc:.2f}x)")
    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
        for name, (s, v, w) in (("puffgpu", (p_steps, p_score, p_n)),
                                ("CleanRL ppo_atari.py", (c_steps, c_ret, np.ones_like(c_ret)))):
            grid = np.linspace(0, s[-1], 200)[1:]  # each run as far as it went
            ax.plot(grid, [last_games_mean(s, v, w, g, args.window)[0] for g in grid], label=name)
        ax.set_xlabel("env steps (agent decisions, 4 frames each)")
        ax.set_ylabel(f"game score (mean of last {args.window} games)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
