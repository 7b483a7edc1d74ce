"""Learning curve of a run: perf and score vs env steps, from its JSONL log, as a PNG.

    python tools/plot.py logs/platformer/<run_id>.jsonl [--out curve.png]
    python tools/plot.py platformer            # the newest log under logs/platformer/

Needs matplotlib (`pip install -e ".[plot]"`); the trainer itself does not.
"""
import argparse
import json
import sys
from pathlib import Path


def find_log(arg: str, log_dir: str) -> Path:
    p = Path(arg)
    if p.suffix == ".jsonl":
        return p
    logs = sorted((Path(log_dir) / arg).glob("*.jsonl"), key=lambda q: q.stat().st_mtime)
    if not logs:
        sys.exit(f"no logs under {Path(log_dir) / arg}")
    return logs[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("log", help="a .jsonl log, or an env name (newest log of that env)")
    ap.add_argument("--log-dir", default="logs")
    ap.add_argument("--out", help="PNG path (default: the log path with .png)")
    ap.add_argument("--metrics", default="env/perf,env/score", help="comma-separated metrics to plot")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit('tools/plot.py needs matplotlib: pip install -e ".[plot]"')
    path = find_log(args.log, args.log_dir)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    head = next((r for r in rows if r.get("type") == "config"), {})
    epochs = [r for r in rows if r.get("type") == "epoch"]
    if not epochs:
        sys.exit(f"{path} has no epoch lines yet")
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for m in args.metrics.split(","):
        pts = [(r["global_step"], r[m]) for r in epochs if m in r]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=m)
    ax.set_xlabel("env steps")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    last = epochs[-1]
    ax.set_title(f"{head.get('env', '?')} · run {head.get('run_id', path.stem)} · "
                 f"{last['global_step'] / 1e6:.1f}M steps · {head.get('adapter', '')}", fontsize=9)
    out = Path(args.out) if args.out else path.with_suffix(".png")
    fig.tight_layout()
    tmp = out.with_name(f".{out.name}.tmp.png")
    fig.savefig(tmp)
    tmp.replace(out)
    print(f"wrote {out} ({len(epochs)} epochs)")


if __name__ == "__main__":
    main()
