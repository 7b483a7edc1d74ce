"""A worker process of Python envs: a shared-memory server (envs/shm/server.py) whose agents are
the rows of a runner's envs (envs/gym/runner.py, envs/pz/runner.py).

The trainer starts it (envs/gym/env.py: PythonWorkerEnv) with its spec as JSON: the runner, the
env's id or file, the [env] keys passed through, the block's name, how many envs and the seed. It
makes its envs, creates its block with their layout, resets them, marks the block ready and
answers steps and resets until the trainer quits or dies.
"""
from __future__ import annotations

import sys

from ..shm.server import Server
from .runner import LOG_NAMES, make_runner


def main(spec):
    runner = make_runner(spec, int(spec["envs"]))
    srv = Server(spec["shm"], runner.num_agents, runner.obs_size, runner.act_sizes, obs_dtype=runner.obs_dtype,
                 masks=runner.has_masks, picture=runner.picture, log_names=LOG_NAMES, ready=False)

    def on_episode(_env, values):
        srv.log_episode(values)
    runner.bind(srv.observations, srv.rewards, srv.terminals, srv.truncations, srv.masks if runner.has_masks else None,
                on_episode)
    runner.reset(int(spec["seed"]))
    srv.set_ready()
    try:
        srv.serve(lambda s: runner.step(s.actions), lambda s, seed: runner.reset(seed))
    finally:
        runner.close()
    return 0


if __name__ == "__main__":
    import json
    sys.exit(main(json.loads(sys.argv[1])))
