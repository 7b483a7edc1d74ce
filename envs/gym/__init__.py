"""The Gymnasium env kind: `--env gym:ID` or a Python file with a factory; the space mapping
(spaces.py) that the PettingZoo kind (envs/pz/) and others reuse; the runner that steps Python envs
(runner.py) in worker processes (worker.py) or in the trainer's process (env.py)."""
