"""Metric names, once: what the learner reports, the loop logs and the dashboard shows."""

# the per-element PPO statistics ppo.wgsl writes (its S columns, in order), averaged per minibatch
STATS = ("policy_loss", "value_loss", "entropy", "loss", "old_approx_kl", "approx_kl", "clipfrac", "importance")
