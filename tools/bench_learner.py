"""Learner timings for one minibatch of the default config on the current adapter.

    python tools/bench_learner.py [--agents 1024] [--minibatches 3]

Default config: minibatch 8192 = 128 rows × 64 steps, H=128, L=4, D=413, heads [3,3]. Prints the
dispatches per minibatch, the CPU time to encode one minibatch's plan, the GPU time per minibatch
(wall time of submits waited on by mapping a buffer: the GPU-side time on a dedicated device, all of
it on lavapipe), the achieved GFLOP/s and its fraction of the tuned matmul's GFLOP/s measured here.
Kernel variants come from the tuner (trainer/autotune.py; pin them with PUFFGPU_KERNELS, e.g. matmul=sg8).
"""
import argparse
import time

import numpy as np

from bench_kernels import bench_matmul  # tools/ is on sys.path when run as a script
from trainer.gpu import get_gpu
from trainer.kernels import pack_transitions
from trainer.learner import Learner, LearnerConfig
from trainer.autotune import attach
from trainer.policy import Policy, Rollout
from trainer.spec import PolicySpec
from puffbase.console import safe_console


def matmul_gflops(gpu, reps=10):
    """The tuner's matmul on the policy's main shape (8192×128 → 384), the reference rate (bench_kernels' figure)."""
    return bench_matmul(gpu, "matmul_forward", 8192, 384, 128, None, reps)


def profile(gpu, plan, reps=3):
    """Time each dispatch of `plan` alone (one submit each, best of `reps`), grouped by kernel."""
    from trainer.gpu import Plan
    totals = {}
    for d in plan.dispatches:
        single = Plan(gpu, "profile")
        single.arena = plan.arena  # finalized: bind groups already point into the arena
        single.dispatches = [d]
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            gpu.run(single)
            gpu.sync()
            best = min(best, time.perf_counter() - t)
        totals[d.kernel.label] = totals.get(d.kernel.label, 0.0) + best
    print("per-kernel time of one minibatch (each dispatch alone, incl. ~0.2 ms submit+sync):")
    for label, sec in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {sec * 1e3:8.1f} ms  {label}")


class TimingWorld:
    """Two ranks as far as the learner's plans go (a gradient plan and a step plan per minibatch), one
    process: the average is the identity, so the split can be timed without MPI."""
    size, rank = 2, 0

    def average(self, a):
        return a


def split_times(gpu, policy, ro, minibatch, reps):
    """ms per minibatch of the gradient plan and of the step plan, each submitted and waited for alone."""
    learner = Learner(policy, ro, LearnerConfig(minibatch_size=minibatch), world=TimingWorld())
    times = []
    for plans in (learner.grad_plans, learner.step_plans):
        gpu.run(plans[0])
        gpu.sync()
        t = time.perf_counter()
        for m in range(reps):
            gpu.run(plans[m])
            gpu.sync()
        times.append((time.perf_counter() - t) / reps * 1e3)
    return times


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=1024)
    ap.add_argument("--horizon", type=int, default=64)
    ap.add_argument("--minibatch", type=int, default=8192)
    ap.add_argument("--minibatches", type=int, default=3, help="timed minibatches")
    ap.add_argument("--adapter", default=None)
    ap.add_argument("--profile", action="store_true", help="also time every dispatch of one minibatch alone")
    args = ap.parse_args()
    gpu = get_gpu(args.adapter)
    tuner = attach(gpu)
    spec = PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))
    N, T = args.agents, args.horizon
    policy = Policy(gpu, spec, seed=73)
    ro = Rollout(gpu, spec, N, T, row_multiple=args.minibatch // T)
    rng = np.random.default_rng(0)
    ro.upload_obs(rng.random((N * T, ro.obs_stride), dtype=np.float32))
    gpu.upload(ro.actions, rng.integers(0, 3, (N * T, 2)).astype(np.float32))
    gpu.upload(ro.transitions, pack_transitions(N * T, fill=0.0, logprob=-2.2,
                                                reward=rng.standard_normal(N * T).astype(np.float32) * 0.1))
    t = time.perf_counter()
    learner = Learner(policy, ro, LearnerConfig(minibatch_size=args.minibatch))
    build = time.perf_counter() - t
    print(tuner.summary())
    plan = learner.plans[0]
    encodes = []
    for _ in range(20):
        enc = gpu.device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        plan.encode(cpass)
        cpass.end()
        enc.finish()
        encodes.append(plan.encode_seconds)
    learner.run(0.01, minibatches=[0])
    k = min(args.minibatches, learner.num_minibatches)
    t = time.perf_counter()
    learner.run(0.01, minibatches=range(k))
    per_mb = (time.perf_counter() - t) / k
    flops = 3 * spec.flops_per_step() * args.minibatch  # forward + backward ≈ 3× forward (Muon excluded)
    rate = flops / per_mb / 1e9
    ref = matmul_gflops(gpu)
    print(f"config: minibatch {args.minibatch} = {learner.R} rows x {T} steps, H={spec.hidden}, L={spec.layers}, "
          f"D={spec.obs_size}, heads {list(spec.act_sizes)}; {learner.num_minibatches} minibatches/epoch "
          f"(plans built in {build:.2f} s)")
    print(f"dispatches per minibatch: {learner.dispatches_per_minibatch()}")
    print(f"CPU encode per minibatch: {min(encodes) * 1e3:.3f} ms best, {np.median(encodes) * 1e3:.3f} ms median")
    print(f"GPU time per minibatch: {per_mb * 1e3:.0f} ms ({args.minibatch / per_mb:,.0f} samples/s)")
    print(f"achieved: {rate:.1f} GFLOP/s = {rate / ref:.0%} of the tuned matmul's {ref:.1f} GFLOP/s")
    grad_ms, step_ms = split_times(gpu, policy, ro, args.minibatch, k)
    print(f"split as a data-parallel rank runs it: gradient {grad_ms:.0f} ms + optimizer step (clip, Muon, "
          f"update) {step_ms:.0f} ms per minibatch; with K ranks the gradient's share shrinks with the "
          f"minibatch per rank, the step does not")
    if args.profile:
        profile(gpu, plan)
    print(f"learner minibatch: {per_mb * 1e3:.0f} ms, {learner.dispatches_per_minibatch()} dispatches on {gpu.describe()}")


if __name__ == "__main__":
    main()
