"""Training throughput: the default platformer config for a few epochs, end to end.

    python tools/bench_train.py [--epochs 3] [--env platformer] [--section.key value ...]

Runs trainer.run's loop (rollout with the GPU policy, env stepping, minibatch updates) with logs
and checkpoints in a temporary folder. The first epoch (pipeline compilation, warm-up) is not
counted. Prints SPS and the time split; last line `train <env>: <SPS> SPS on <adapter>`.
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from trainer import config  # noqa: E402
from trainer.run import train  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="platformer")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs (one more runs first as warm-up)")
    ap.add_argument("--adapter", default=None)
    args, rest = ap.parse_known_args()
    flags = config.parse_flags(rest)
    cfg, _ = config.load(args.env, flags)
    with tempfile.TemporaryDirectory(prefix="puffgpu-bench-") as tmp:
        cfg["base"]["checkpoint_dir"] = f"{tmp}/checkpoints"
        cfg["base"]["log_dir"] = f"{tmp}/logs"
        cfg["base"]["checkpoint_interval"] = 10 ** 9  # only the final save
        epoch_steps = cfg["vec"]["total_agents"] * cfg["train"]["horizon"]
        cfg["train"]["total_timesteps"] = (args.epochs + 1) * epoch_steps
        res = train(args.env, cfg, adapter=args.adapter, live=False)
        rows = [json.loads(line) for line in Path(res["log"]).read_text().splitlines()]
        head = rows[0]
        epochs = [r for r in rows if r["type"] == "epoch"][1:]
    secs = sum(e["epoch_seconds"] for e in epochs)
    steps = sum(e["global_step"] - p["global_step"] for p, e in zip([{"global_step": epoch_steps}] + epochs, epochs))
    split = {k: sum(e[f"time/{k}"] * e["epoch_seconds"] for e in epochs) / secs for k in ("env", "inference", "learn")}
    print(f"{len(epochs)} timed epochs of {epoch_steps:,} steps ({head['num_agents']} agents x "
          f"{cfg['train']['horizon']}): {secs:.1f} s")
    print("time split: " + ", ".join(f"{k} {v:.0%} ({v * secs / len(epochs):.2f} s/epoch)" for k, v in split.items()))
    print(f"train {args.env}: {steps / secs:,.0f} SPS on {head['adapter']}")


if __name__ == "__main__":
    main()
