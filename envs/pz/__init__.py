"""The PettingZoo env kind: `--env pz:module.path[:env_fn]` or a Python file defining parallel_env;
every possible agent a row, agents that left masked (runner.py); built on envs/gym/."""
