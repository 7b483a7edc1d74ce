"""A Python server that declares something wrong on purpose (tests/test_shm.py): --version V
writes another protocol version; --obs-size D makes server --bad-index declare another observation
size; --extra-agents N declares N agents more than asked; --fail-at-step N answers its N-th step
with status -2 (FAILED) and a message; --old behaves as a server written to the protocol page of two
versions ago: it fails with 'File exists' when its name holds a block (even a dead server's), and
leaves its block behind when it quits. Otherwise it serves envs.shm.server's Reacher."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from envs.shm.protocol import CMD_QUIT, CMD_RESET, CMD_STEP, FAILED, OK, shm_exists  # noqa: E402
from envs.shm.server import Reacher, Server  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--agents", type=int, required=True)
    p.add_argument("--shm", required=True)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--version", type=int, default=0)
    p.add_argument("--obs-size", type=int, default=0)
    p.add_argument("--bad-index", type=int, default=-1)
    p.add_argument("--extra-agents", type=int, default=0)
    p.add_argument("--fail-at-step", type=int, default=0)
    p.add_argument("--old", action="store_true")
    args = p.parse_args()
    if args.old and shm_exists(args.shm):
        sys.exit(f"bad_server: shm_open {args.shm}: File exists")
    bad = args.index == args.bad_index
    obs = args.obs_size if bad and args.obs_size else Reacher.OBS
    args.agents += args.extra_agents
    srv = Server(args.shm, args.agents, obs, Reacher.ACTS, log_names=("perf", "score", "n"), ready=False)
    if args.version:
        srv.block.h["version"] = args.version
    srv.set_ready()
    game = Reacher(args.agents)
    if args.old:
        srv.close = srv.block.close  # quits without unlinking its name
    if not args.fail_at_step:
        srv.serve(game.step, game.reset)
        return
    steps = 0
    while True:
        cmd, arg = srv.wait()
        if cmd == CMD_QUIT:
            break
        if cmd == CMD_STEP:
            steps += 1
            if steps == args.fail_at_step:
                srv.block.h["message"] = b"the map file went away"
                srv.reply(FAILED)
                continue
            game.step(srv)
        elif cmd == CMD_RESET:
            game.reset(srv, arg)
        srv.reply(OK)
    srv.close()


if __name__ == "__main__":
    main()
