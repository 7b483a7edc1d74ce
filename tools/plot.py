"""Training curves of one or several runs from their JSONL logs, as one PNG grid of panels.

    python tools/plot.py platformer                        # every run of an env, overlaid
    python tools/plot.py platformer --runs A B C           # these runs (run ids, globs such as 'sweep-*', or .jsonl paths)
    python tools/plot.py logs/platformer/<run_id>.jsonl    # one run
    python tools/plot.py platformer --x time --smooth 0.9 --out fig.png

Panels: every env/* metric the runs log (perf, score, episode return and length, and any extra an
env adds), then the policy and value loss, entropy, KL, clip fraction, gradient norm, SPS and the
learning rate. Each run is one colour: its smoothed curve (an exponential moving average with
TensorBoard's bias correction) over its raw data drawn faint. x is env steps or wall time. Runs are
labelled by run id and by the config keys in which they differ. The PNG goes next to the log (one
run: <log>.png; several: <log_dir>/<env>/runs.png) unless --out says otherwise.

Needs matplotlib (`pip install -e ".[plot]"`); the trainer itself does not.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from pathlib import Path
from puffbase.console import safe_console

# panels after the env/* ones: (title, [metric keys drawn in it], y label)
TRAIN_PANELS = [
    ("policy loss", ["policy_loss"], ""),
    ("value loss", ["value_loss"], ""),
    ("entropy", ["entropy"], "nats"),
    ("approx KL", ["approx_kl"], ""),
    ("clip fraction", ["clipfrac"], ""),
    ("gradient norm", ["grad_norm"], "before clipping"),
    ("SPS", ["sps"], "env steps / s"),
    ("learning rate", ["learning_rate"], ""),
]
ENV_ORDER = ["env/perf", "env/start_perf", "env/score", "env/episode_return", "env/episode_length",
             "env/archive_cells", "env/archive_progress"]  # Go-Explore: start_perf (real start only) beside perf
ENV_SKIP = {"env/n"}  # episodes counted per epoch: bookkeeping, not a curve
UNIT_RANGE = {"env/perf", "env/score", "env/start_perf", "env/real_starts",
              "env/archive_progress", "env/frontier"}  # fractions: fixed 0..1 axis so runs and figures compare (when in 0..1)
LABEL_SKIP = {"base.log_dir", "base.checkpoint_dir", "base.load_model_path", "base.wandb_name", "base.wandb_mode",
              "base.tensorboard", "base.wandb", "vec.num_threads"}


class PlotError(Exception):
    pass


def read_run(path: Path) -> dict:
    """{'path', 'run_id', 'head' (first config line), 'epochs' (epoch lines)}. A resumed run appends a
    new config line and continues; a line cut short by a crash is skipped."""
    head, epochs = {}, []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("type") == "config" and not head:
            head = row
        elif row.get("type") == "epoch":
            epochs.append(row)
    return {"path": Path(path), "run_id": head.get("run_id", Path(path).stem), "head": head, "epochs": epochs}


def find_logs(target: str, runs: list[str] | None, log_dir: str) -> tuple[list[Path], Path]:
    """The logs to plot and the folder they share."""
    p = Path(target)
    if p.suffix == ".jsonl":
        if not p.is_file():
            raise PlotError(f"no such log: {p}")
        return [p], p.parent
    folder = Path(log_dir) / target
    if not folder.is_dir():
        raise PlotError(f"no logs for env {target!r}: {folder} does not exist (pass --log-dir, or a .jsonl path)")
    every = sorted(folder.glob("*.jsonl"), key=lambda q: q.stat().st_mtime)
    if not runs:
        if not every:
            raise PlotError(f"no .jsonl logs under {folder}")
        return every, folder
    chosen = []
    for r in runs:
        if r.endswith(".jsonl"):
            hits = [Path(r)] if Path(r).is_file() else []
        else:
            hits = [q for q in every if fnmatch.fnmatchcase(q.stem, r)]
        if not hits:
            names = ", ".join(q.stem for q in every[-10:]) or "(none)"
            raise PlotError(f"--runs {r!r}: no log matches under {folder}; newest runs there: {names}")
        chosen += [h for h in hits if h not in chosen]
    return chosen, folder


def ema(values: list[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: s_t = w·s_{t-1} + (1 − w)·x_t from s = 0, divided by 1 − w^t (bias
    correction, so the start is not pulled toward 0). Non-finite values are skipped."""
    out, s, n = [], 0.0, 0
    for v in values:
        if not math.isfinite(v):
            out.append(float("nan"))
            continue
        n += 1
        s = weight * s + (1 - weight) * v
        out.append(s / (1 - weight ** n) if weight > 0 else v)
    return out


def xs_of(epochs: list[dict], x: str) -> list[float]:
    if x == "steps":
        return [float(e["global_step"]) for e in epochs]
    out, offset, prev = [], 0.0, 0.0
    for e in epochs:  # `elapsed` restarts at 0 when a run is resumed: keep the clock running
        t = float(e.get("elapsed", 0.0))
        if t < prev:
            offset += prev
        prev = t
        out.append(offset + t)
    return out


def flat_config(head: dict) -> dict:
    return {f"{s}.{k}": v for s, kv in (head.get("config") or {}).items() for k, v in kv.items()}


def run_labels(runs: list[dict]) -> list[str]:
    """Run id plus the config keys whose values differ between the runs (the swept ones)."""
    flats = [flat_config(r["head"]) for r in runs]
    keys = sorted({k for f in flats for k in f})
    differ = [k for k in keys if k not in LABEL_SKIP and len({json.dumps(f.get(k)) for f in flats}) > 1]
    labels = []
    for r, f in zip(runs, flats):
        parts = [f"{k.split('.', 1)[1]}={fmt_value(f.get(k))}" for k in differ[:3]]
        labels.append(r["run_id"] + (" · " + ", ".join(parts) if parts else ""))
    return labels


def fmt_value(v) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def fmt_num(v: float, _pos=None) -> str:
    a = abs(v)
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if a >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.3g}"


def panels_for(runs: list[dict]) -> list[tuple[str, list[str], str]]:
    env_keys = {k for r in runs for e in r["epochs"] for k in e if k.startswith("env/") and k not in ENV_SKIP}
    ordered = [k for k in ENV_ORDER if k in env_keys] + sorted(env_keys - set(ENV_ORDER))
    out = [(k, [k], "") for k in ordered]
    for title, keys, unit in TRAIN_PANELS:
        if any(k in e for r in runs for e in r["epochs"] for k in keys):
            out.append((title, keys, unit))
    return out


def auto_smooth(n: int) -> float:
    """An EMA weight for n points: a window of ~n/30 points (TensorBoard's 0.6 at 80 epochs, 0.97 at 1000)."""
    return max(0.0, 1 - 30 / n) if n > 30 else 0.0


def plot(runs: list[dict], out: Path, x: str = "steps", smooth: float | None = None, title: str | None = None,
         dpi: int = 150) -> dict:
    """Draw the grid; returns {panel title: [(label, xs, smoothed ys)]} for tests and callers."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    runs = [r for r in runs if r["epochs"]]
    if not runs:
        raise PlotError("none of the logs has an epoch line yet")
    panels = panels_for(runs)
    labels = run_labels(runs)
    ncols = 4
    nrows = math.ceil(len(panels) / ncols)
    colors = plt.get_cmap("tab10").colors if len(runs) <= 10 else plt.get_cmap("tab20").colors
    use_minutes = x == "time" and max(xs_of(r["epochs"], "time")[-1] for r in runs) >= 120
    rc = {"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "legend.fontsize": 8, "axes.spines.top": False,
          "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25, "grid.linewidth": 0.6,
          "xtick.labelsize": 7, "ytick.labelsize": 7, "font.family": "DejaVu Sans"}
    drawn: dict = {}
    with plt.rc_context(rc):
        legend_rows_guess = math.ceil(len(runs) / 2)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 2.25 * nrows + 0.5 + 0.19 * legend_rows_guess),
                                 dpi=150, squeeze=False)
        for ax, (ptitle, keys, unit) in zip(axes.flat, panels):
            drawn[ptitle] = []
            for i, (run, label) in enumerate(zip(runs, labels)):
                color = colors[i % len(colors)]
                for j, key in enumerate(keys):
                    pts = [(xv, float(e[key])) for xv, e in zip(xs_of(run["epochs"], x), run["epochs"]) if key in e]
                    if not pts:
                        continue
                    xv = [p[0] / 60 if use_minutes else p[0] for p in pts]
                    yv = [p[1] for p in pts]
                    w = auto_smooth(len(yv)) if smooth is None else smooth
                    sm = ema(yv, w)
                    style = "-" if j == 0 else "--"
                    if w > 0:
                        ax.plot(xv, yv, style, color=color, alpha=0.22, linewidth=0.8)
                    ax.plot(xv, sm, style, color=color, linewidth=1.5, label=label if ptitle == panels[0][0] else None)
                    drawn[ptitle].append((label, xv, sm))
            ax.set_title(ptitle, loc="left", fontweight="bold")
            if unit:
                ax.set_ylabel(unit)
            # a fraction's fixed axis; a score that counts (a JS game's) keeps its own
            if keys[0] in UNIT_RANGE and all(max(abs(x) for x in v) <= 1.0001 for _, _, v in drawn[ptitle] if len(v)):
                ax.set_ylim(-0.02, 1.02)
            if keys[0] == "learning_rate" or keys[0] == "sps" or "loss" in keys[0]:
                ax.yaxis.set_major_formatter(FuncFormatter(fmt_num))
            ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.xaxis.set_major_formatter(FuncFormatter(fmt_num))
        for ax in axes.flat[len(panels):]:
            ax.set_visible(False)
        xlabel = "env steps" if x == "steps" else ("wall time (min)" if use_minutes else "wall time (s)")
        for ax in axes[-1]:
            ax.set_xlabel(xlabel)
        for c in range(ncols):  # the bottom visible panel of each column carries the x label
            col = [axes[r][c] for r in range(nrows) if axes[r][c].get_visible()]
            if col:
                col[-1].set_xlabel(xlabel)
        handles, labs = axes.flat[0].get_legend_handles_labels()
        longest = max(len(s) for s in labs)
        ncol = max(1, min(len(labs), 4, int(12.4 * 13 / max(longest, 10))))  # ~13 legend characters per inch
        legend_rows = math.ceil(len(labs) / ncol)
        figh = fig.get_figheight()
        title_h, row_h = 0.32, 0.19  # inches
        fig.legend(handles, labs, loc="upper left", ncol=ncol, frameon=False, handlelength=1.8,
                   bbox_to_anchor=(0.005, 1 - title_h / figh), borderaxespad=0.2)
        heads = [r["head"] for r in runs]
        env = heads[0].get("env", "?")
        adapters = sorted({h.get("adapter", "") for h in heads if h.get("adapter")})
        top = title or (f"{env} · {len(runs)} run{'s' if len(runs) > 1 else ''}"
                        + (f" · {adapters[0]}" if len(adapters) == 1 else ""))
        fig.suptitle(top, x=0.01, y=1 - 0.06 / figh, ha="left", va="top", fontsize=10, fontweight="bold")
        fig.tight_layout(rect=(0, 0, 1, 1 - (title_h + row_h * legend_rows) / figh))
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp.png")
        fig.savefig(tmp, dpi=dpi)
        plt.close(fig)
    tmp.replace(out)  # atomic: a viewer never sees a half-written PNG
    return drawn


def main(argv: list[str] | None = None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("target", help="an env name (its runs under --log-dir) or a .jsonl log")
    ap.add_argument("--runs", nargs="+", help="run ids, globs ('sweep-*') or .jsonl paths (default: every run)")
    ap.add_argument("--log-dir", default="logs")
    ap.add_argument("--x", choices=("steps", "time"), default="steps", help="x axis: env steps or wall time")
    ap.add_argument("--smooth", type=float, default=None,
                    help="EMA weight in [0, 1) (0: raw data only; default: a window of ~1/30 of the run)")
    ap.add_argument("--out", help="PNG path (default: next to the log)")
    ap.add_argument("--title")
    ap.add_argument("--dpi", type=int, default=150, help="resolution (the figure is 12.4 inches wide)")
    args = ap.parse_args(argv)
    if args.smooth is not None and not 0 <= args.smooth < 1:
        ap.error(f"--smooth must be in [0, 1), got {args.smooth}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print('tools/plot.py needs matplotlib: pip install -e ".[plot]"', file=sys.stderr)
        return 1
    try:
        paths, folder = find_logs(args.target, args.runs, args.log_dir)
        runs = [read_run(p) for p in paths]
        if args.out:
            out = Path(args.out)
        else:
            out = paths[0].with_suffix(".png") if len(paths) == 1 else folder / "runs.png"
        plot(runs, out, x=args.x, smooth=args.smooth, title=args.title, dpi=args.dpi)
    except PlotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    n = sum(len(r["epochs"]) for r in runs)
    print(f"wrote {out} ({len(runs)} run{'s' if len(runs) > 1 else ''}, {n} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
