"""A Python server that declares something wrong on purpose (tests/test_shm.py): --version V
writes another protocol version; --obs-size D makes server --bad-index declare another observation
size. Otherwise it serves envs.shm.server's Reacher."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from envs.shm.server import Reacher, Server  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agents", type=int, required=True)
    p.add_argument("--shm", required=True)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--version", type=int, default=0)
    p.add_argument("--obs-size", type=int, default=0)
    p.add_argument("--bad-index", type=int, default=-1)
    args = p.parse_args()
    bad = args.index == args.bad_index
    obs = args.obs_size if bad and args.obs_size else Reacher.OBS
    srv = Server(args.shm, args.agents, obs, Reacher.ACTS, log_names=("perf", "score", "n"), ready=False)
    if args.version:
        srv.block.h["version"] = args.version
    srv.set_ready()
    game = Reacher(args.agents)
    srv.serve(game.step, game.reset)


if __name__ == "__main__":
    main()
