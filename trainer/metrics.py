"""The names of what a training run logs, defined once.

Each epoch the trainer writes one flat dict (a JSONL line, the dashboard, TensorBoard, W&B, a
sweep's reporter all read the same dict):

    epoch, epochs, global_step, eta           PROGRESS: where the run is (x axis and bookkeeping)
    sps, elapsed, learning_rate, epoch_seconds RUN: the trainer's own figures
    policy_loss, ..., grad_norm               LOSSES: the learner's, averaged over the epoch's minibatches
    env/<key>                                 what the env reports at rollout end (episode stats, ...)
    time/<phase>                              share of the epoch spent in each phase (PHASES)

"global_step" is the env steps the run has taken so far (agents × steps, across resumes).

Pure Python: no imports from trainer, so any layer (and tools) may use it.
"""

# The per-minibatch statistics row the PPO kernel writes, in the order of its columns: the
# learner reads the row by this order, so reordering it reorders the kernel's output.
PPO_STATS = ("policy_loss", "value_loss", "entropy", "loss", "old_approx_kl", "approx_kl", "clipfrac", "importance")
# The learner's figures of an epoch: the PPO stats and the gradient norm before clipping.
LOSSES = PPO_STATS + ("grad_norm",)
PROGRESS = ("epoch", "epochs", "global_step", "eta")
RUN = ("sps", "elapsed", "learning_rate", "epoch_seconds")
PHASES = ("env", "inference", "learn")  # logged as time/<phase>

ENV_PREFIX = "env/"
TIME_PREFIX = "time/"
# data-parallel runs (trainer/distributed.py) also log rank/sps_<r> (each rank's own agents' steps
# per second), allreduce_ms (the mean time one minibatch's gradient average took) and
# time/allreduce (the epoch's share spent in it, a part of time/learn)
RANK_PREFIX = "rank/"
ALLREDUCE_MS = "allreduce_ms"
