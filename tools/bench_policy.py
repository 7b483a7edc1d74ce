"""Policy timings on the current adapter: one rollout step, and the training scan forward+backward.

    python tools/bench_policy.py [--agents 4096] [--horizon 64] [--minibatch 8192]

Default policy (D=413, H=128, L=4, heads [3,3]). The rollout step is the whole per-step plan
(store → encoder → 4 MinGRU steps → decoder → sample → read back actions) for all agents. The
training pass covers agents × horizon rows in minibatches of `minibatch` rows (the learner's
shape); each minibatch is one plan (forward + backward into the gradient buffer).
"""
import argparse
import time

import numpy as np

from trainer.gpu import get_gpu
from trainer.kernels import TR_WIDTH
from trainer.autotune import attach
from trainer.policy import Activations, Policy, Rollout, RolloutStep, policy_backward, policy_forward
from trainer.spec import PolicySpec
from puffbase.console import safe_console


def best_of(fn, n=3):
    fn()
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=4096)
    ap.add_argument("--horizon", type=int, default=64)
    ap.add_argument("--minibatch", type=int, default=8192)
    ap.add_argument("--adapter", default=None)
    args = ap.parse_args()
    gpu = get_gpu(args.adapter)
    attach(gpu)  # the tuned kernel variants
    spec = PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))
    N, T = args.agents, args.horizon
    R = args.minibatch // T
    policy = Policy(gpu, spec, seed=73)
    ro = Rollout(gpu, spec, N, T, row_multiple=R)
    step = RolloutStep(policy, ro, seed=1)
    rng = np.random.default_rng(0)
    obs = rng.random((N, 413), dtype=np.float32)
    zeros = np.zeros(N, np.float32)
    t_step = best_of(lambda: step(1, 0, obs, zeros, zeros))
    fl_step = spec.flops_per_step() * N
    print(f"rollout step ({N} agents, {len(step.plans[1])} dispatches): {t_step * 1e3:.1f} ms "
          f"({N / t_step:,.0f} agent-steps/s, {fl_step / t_step / 1e9:.1f} GFLOP/s)")

    act = Activations(gpu, spec, R, T)
    h0 = [ro.state_of(ro.initial_state, l, 0, R) for l in range(spec.layers)]
    plans = []
    for m in range(N // R):
        plan = gpu.plan(f"train mb{m}")
        obs_r, term_r = ro.obs_rows(m * R, R), ro.column("terminal", m * R, R)
        h0 = [ro.state_of(ro.initial_state, l, m * R, R) for l in range(spec.layers)]
        policy_forward(plan, policy, act, obs_r, ro.obs_stride, term_r, h0, terminals_stride=TR_WIDTH)
        policy_backward(plan, policy, act, obs_r, ro.obs_stride, term_r, h0, terminals_stride=TR_WIDTH)
        plans.append(plan.finalize())

    def run_all():
        for p in plans:
            gpu.run(p)
        gpu.sync()
    t_train = best_of(run_all, n=1)
    t_mb = best_of(lambda: (gpu.run(plans[0]), gpu.sync()))
    fl_train = 3 * spec.flops_per_step() * N * T  # forward + backward ≈ 3× forward
    print(f"training scan fwd+bwd ({N} agents x {T} steps, {len(plans)} minibatches of {R}x{T}, "
          f"{len(plans[0])} dispatches each): {t_train:.2f} s total, {t_mb * 1e3:.0f} ms per minibatch, "
          f"{fl_train / t_train / 1e9:.1f} GFLOP/s")
    print(f"policy: rollout step {t_step * 1e3:.1f} ms, train fwd+bwd {t_train:.2f} s on {gpu.describe()}")


if __name__ == "__main__":
    main()
