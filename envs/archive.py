"""Go-Explore archives on the command line: summarize one, export its best route to the goal.

    python -m envs.archive show checkpoints/platformer_sparse/<run>/<step>.archive
    python -m envs.archive export --env platformer_sparse latest --out route.json --gif route.gif
    python -m envs.play platformer_sparse --route route.json --gif route.gif    # replay it again

export writes the shortest route that reached the goal as an input list (JSON: the env rng seed
of the real start, then one row of action indices per step), replays it in a fresh env from the
real start with Go-Explore off, and exits 1 unless the replay reaches the goal on its last step.
An archive only replays under the [env] config it was made with (level, frameskip, time limit):
pass a run's non-default keys with --set KEY=VALUE.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from puffbase.console import safe_console

from .c.goexplore import ArchiveError, fingerprint, latest_archive, read_archive, replay, route_from_archive, write_route
from .registry import make, resolve


def _config_of(args_set: list[str]) -> dict:
    out = {}
    for item in args_set:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def replay_env(route: dict, overrides: dict | None = None, source=None):
    """A one-agent env with the route's config and Go-Explore off, for replaying it (`source`: the
    route's env as envs.resolve gave it, else resolved from its name)."""
    config = dict(route.get("config") or {})
    config.update(overrides or {})
    if "go_explore" in config:
        config["go_explore"] = 0
    return make(source or route["env"], 1, config=config, num_threads=1)


def cmd_show(args):
    a = read_archive(args.archive)
    cells = a["cells"]
    goal = a["goal"]
    print(f"{args.archive}: {len(cells)} cells, {a['syncs']} syncs, {a['inserted']} inserted, "
          f"{a['improved']} improved, {a['dropped']} dropped; fingerprint {a['fingerprint']:016x}")
    if cells:
        prog = np.array([c["progress"] for c in cells])
        steps = np.array([c["steps"] for c in cells])
        print(f"progress max {prog.max():.3f} mean {prog.mean():.3f}; route steps max {steps.max()} "
              f"mean {steps.mean():.1f}")
    print(f"goal: {'none yet' if goal is None else str(goal['steps']) + ' steps, seed ' + str(goal['seed'])}")
    return 0


def cmd_export(args):
    from puffbase.image import write_gif
    path = latest_archive(args.checkpoint_dir, args.env) if args.archive == "latest" else Path(args.archive)
    archive = read_archive(path)
    source = resolve(args.env)
    config = source.env_config()
    config.update(_config_of(args.set))
    config["go_explore"] = 0
    route = route_from_archive(archive, args.env, config, path)
    env = replay_env(route, source=source)
    try:
        fp = fingerprint(env)
        if fp != archive["fingerprint"]:
            raise ArchiveError(f"{path} was made with another {args.env} config (fingerprint "
                               f"{archive['fingerprint']:016x}, this config {fp:016x}): pass the run's "
                               f"[env] keys with --set KEY=VALUE")
        res = replay(env, route, frames=bool(args.gif))
    finally:
        env.close()
    out = Path(args.out or path.with_suffix(".route.json"))
    write_route(out, route)
    print(f"wrote {out}: {route['steps']} steps from the real start (seed {route['seed']}) out of {path}")
    if args.gif:
        write_gif(args.gif, res["frames"], fps=args.fps)
        print(f"wrote {args.gif}: {len(res['frames'])} frames")
    if not res["reached"]:
        print(f"error: the replay did not reach the goal on its last step (ended at step {res['ended_at']}, "
              f"log {res['log']})", file=sys.stderr)
        return 1
    print(f"replayed from the real start: the goal was reached at step {res['ended_at']} "
          f"(perf {res['log'].get('perf')})")
    return 0


def main(argv=None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(prog="python -m envs.archive", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("show", help="summarize an archive file")
    s.add_argument("archive")
    e = sub.add_parser("export", help="the best route to the goal as an input list, replayed and checked")
    e.add_argument("archive", help="an .archive file, or latest (newest under --checkpoint-dir/<env>)")
    e.add_argument("--env", required=True, help="the env the archive belongs to")
    e.add_argument("--checkpoint-dir", default="checkpoints")
    e.add_argument("--out", help="route JSON (default: beside the archive, .route.json)")
    e.add_argument("--gif", help="also write the replay as a GIF")
    e.add_argument("--fps", type=float, default=15)
    e.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="[env] keys of the run, if they differ from the env's ini")
    args = ap.parse_args(argv)
    try:
        return cmd_show(args) if args.cmd == "show" else cmd_export(args)
    except (ArchiveError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
