"""A DDNet demo of a trained ddnet policy: the server records its own demo (console `record`) while
the bots play, and the file is copied out; DDNet's client plays it back (drop it into its demos/
folder, or `ddnet "play demos/NAME.demo"`).

    python tools/ddnet_demo.py [CHECKPOINT|latest] --out docs/ddnet-tutorial.demo [--seconds 30] [--bots 8]

One server, --bots bots of the checkpoint's policy (sampling, as in training), --seconds of game
time after every bot has spawned. Config flags (--env.ddnet_map Gold_Mine, ...) apply.
"""
import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from trainer import config as config_mod  # noqa: E402
from trainer.eval import Evaluator  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", nargs="?", default="latest")
    p.add_argument("--out", required=True, help="the .demo file to write")
    p.add_argument("--seconds", type=float, default=30.0, help="game seconds to record")
    p.add_argument("--bots", type=int, default=8)
    p.add_argument("--env", default="ddnet")
    flags, rest = config_mod.split_section_flags(sys.argv[1:] if argv is None else argv)
    args = p.parse_args(rest)
    cfg, _ = config_mod.load(args.env, {**config_mod.parse_flags(flags), "env.servers": "1",
                                        "env.bots_per_server": str(args.bots)})
    ev = Evaluator(args.env, cfg, args.checkpoint, args.bots, seed=1)
    env = ev.env
    try:
        deadline = time.monotonic() + 30
        while not env.active.all() and time.monotonic() < deadline:
            ev.step()
        name = f"puffgpu-{int(time.time())}"
        if not env.console(0, f"record {name}"):
            raise SystemExit("error: no bot is in the game to send the console command through")
        for _ in range(int(args.seconds * 50 / env.k)):
            ev.step()
        env.console(0, "stoprecord")
        demo = env.server_home(0) / "demos" / f"{name}.demo"
        for _ in range(100):  # the server writes it on its next tick
            if demo.is_file() and demo.stat().st_size > 0:
                break
            time.sleep(0.05)
        time.sleep(0.2)
        if not demo.is_file():
            raise SystemExit(f"error: the server wrote no demo at {demo}")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        shutil.copyfile(demo, tmp)
        tmp.replace(out)  # atomic: a half-written demo never carries the final name
        log = env.log()
        print(f"wrote {out} ({out.stat().st_size:,} bytes): {args.bots} bots of {ev.path} on {env.map.name}, "
              f"{args.seconds:g} s; episodes {log.get('n', 0):.0f}, progress {log.get('progress', float('nan')):.4f}")
    finally:
        env.close()


if __name__ == "__main__":
    main()
