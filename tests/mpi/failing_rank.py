"""Run by tests/test_mpi.py under `mpiexec -n 2`: trainer.run's command line, where rank 1's env
fails for good (an EnvError) at its 41st step, as a crashed game server would end it."""
import sys

import envs
import trainer.run as run
from trainer import distributed

real_make = envs.make


def make(*args, **kwargs):
    env = real_make(*args, **kwargs)
    if distributed.launch_rank() == 1:
        steps, step_buffer = [0], env.step_buffer

        def failing(b, actions):
            steps[0] += 1
            if steps[0] > 40:
                raise envs.EnvError("the env failed (injected by the test)")
            return step_buffer(b, actions)
        env.step_buffer = failing
    return env


envs.make = make
sys.exit(run.main(sys.argv[1:]))
