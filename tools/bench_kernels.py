"""Matmul GFLOP/s on the current adapter, per policy shape and kernel variant, with numpy as reference.

    python tools/bench_kernels.py [--reps 10] [--adapter NAME]

Columns: each variant family (vec4 loads where they apply), the static GPU rule's choice (tile4x4
with split-K where a heavy product needs it), the tuner's choice on this adapter (its name in
brackets), numpy. Each figure is the best wall time of one submit holding up to `reps` dispatches
of the same product (fewer for slow ones; waited for by mapping a buffer), so per-dispatch overhead
is included, as in training. Also prints the CPU time to encode a 150-dispatch plan. Last line:
`matmul 8192x128x384: <tuned GFLOP/s> GFLOP/s on <adapter>`.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from trainer.kernels import matmul
from trainer.gpu import GPUError, get_gpu
from trainer.tune import attach
from envs.console import safe_console

# (label, launcher, M, N, K): M×N output, K reduced. Row strides are padded to a multiple of 4
# (as the trainer pads observation rows), so the vec4 kernels apply wherever the weights allow.
SHAPES = [
    ("encoder fwd   8192x413->128", "matmul_forward", 8192, 128, 413),
    ("mingru fwd    8192x128->384", "matmul_forward", 8192, 384, 128),
    ("decoder fwd   8192x128->7", "matmul_forward", 8192, 7, 128),
    ("mingru dx     8192x384->128", "matmul_backward_input", 8192, 128, 384),
    ("mingru dW     384x128 (8192)", "matmul_backward_weight", 384, 128, 8192),
    ("encoder dW    128x413 (8192)", "matmul_backward_weight", 128, 413, 8192),
    ("decoder dW    7x128 (8192)", "matmul_backward_weight", 7, 128, 8192),
]


def ceil4(n):
    return -(-n // 4) * 4


def time_plan(gpu, plan, repeats=3, warm=True):
    if warm:
        gpu.run(plan)
        gpu.sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        gpu.run(plan)
        gpu.sync()
        best = min(best, time.perf_counter() - t)
    return best


def bench_matmul(gpu, launcher, M, N, K, variant, reps, splits=None, target=0.05):
    """GFLOP/s of `variant` (None: the tuner's choice) with `splits`; None if it does not apply.
    Runs up to `reps` dispatches per submit, fewer when one takes longer than target/reps seconds."""
    fn = getattr(matmul, launcher)
    if launcher == "matmul_forward":  # x [M,K] (padded rows), W [N,K] (PufferLib rows, unpadded)
        lda, ldb = ceil4(K), K
        a_rows, b_rows = M, N
    elif launcher == "matmul_backward_input":  # dy [M,K], W [K,N]
        lda, ldb = ceil4(K), ceil4(N)
        a_rows, b_rows = M, K
    else:  # dy [K,M], x [K,N]
        lda, ldb = ceil4(M), ceil4(N)
        a_rows, b_rows = K, K
    a = gpu.buffer(4 * a_rows * lda, "a")
    b = gpu.buffer(4 * b_rows * ldb, "b")
    y = gpu.buffer(4 * M * N, "y")
    kw = {"matmul_forward": dict(ldx=lda, ldw=ldb), "matmul_backward_input": dict(lddy=lda, ldw=ldb),
          "matmul_backward_weight": dict(lddy=lda, ldx=ldb)}[launcher]

    def build(n):
        plan = gpu.plan(f"bench {launcher}")
        for _ in range(n):
            fn(plan, a.range(), b.range(), y.range(), M, N, K, variant=variant, splits=splits, **kw)
        return plan
    try:
        one = build(1)
    except GPUError:
        return None  # variant not applicable to this shape
    t1 = time_plan(gpu, one, repeats=1)  # after a warm-up run
    n = max(1, min(reps, math.ceil(target / max(t1, 1e-7))))
    best = min(t1, time_plan(gpu, one, 1, warm=False)) if n == 1 else time_plan(gpu, build(n), 2) / n
    return 2.0 * M * N * K / best / 1e9


def family_variant(gpu, launcher, M, N, K, family):
    """The variant of `family` (a base name of the table) with the widest loads this layout allows."""
    return matmul.FAMILY.pin(family, bench_shape(launcher, M, N, K), gpu).variant.name


def bench_shape(launcher, M, N, K):
    """The MatmulShape bench_matmul's layout gives (rows padded to whole vec4s, buffers 16-byte aligned)."""
    lda, ldb = {"matmul_forward": (ceil4(K), K), "matmul_backward_input": (ceil4(K), ceil4(N)),
                "matmul_backward_weight": (ceil4(M), ceil4(N))}[launcher]
    vec4 = lda % 4 == 0 and ldb % 4 == 0
    sg = {"matmul_forward": K % 4 == 0, "matmul_backward_input": True, "matmul_backward_weight": True}[launcher]
    return matmul.MatmulShape(launcher, M, N, K, 1, vec4, vec4 and sg)


def bench_numpy(launcher, M, N, K, reps=5):
    rng = np.random.default_rng(0)
    if launcher == "matmul_forward":
        a, b = rng.standard_normal((M, K), np.float32), rng.standard_normal((N, K), np.float32)
        f = lambda: a @ b.T  # noqa: E731
    elif launcher == "matmul_backward_input":
        a, b = rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32)
        f = lambda: a @ b  # noqa: E731
    else:
        a, b = rng.standard_normal((K, M), np.float32), rng.standard_normal((K, N), np.float32)
        f = lambda: a.T @ b  # noqa: E731
    f()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return 2.0 * M * N * K / best / 1e9


def bench_encode(gpu, n=150):
    """CPU time to encode a plan of n small dispatches (the minibatch plan's order of size)."""
    a = gpu.buffer(4 * 64 * 64, "a")
    plan = gpu.plan("encode")
    for i in range(n):
        matmul.matmul_forward(plan, a.range(), a.range(), a.range(), 8, 8 + (i % 3) * 8, 8, variant="tile4x4")
    plan.finalize()
    times = []
    for _ in range(20):
        enc = gpu.device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        plan.encode(cpass)
        cpass.end()
        enc.finish()  # never submitted
        times.append(plan.encode_seconds)
    return min(times), float(np.median(times))


FAMILIES = ("ref", "sg8", "tile4x4", "tile8x4", "wgmem")


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="dispatches per timed submit (at most)")
    ap.add_argument("--adapter", default=None, help="adapter name/backend substring (default: best GPU)")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma list of variant families to time")
    args = ap.parse_args()
    gpu = get_gpu(args.adapter)
    tuner = attach(gpu)
    families = [f for f in args.families.split(",") if f]
    print(f"{'shape':30s} " + " ".join(f"{f:>8s}" for f in families) + f" {'gpu-rule':>17s} {'tuned':>22s} "
          f"{'numpy':>7s}   GFLOP/s")
    tuned_main = None
    for label, launcher, M, N, K in SHAPES:
        cells = []
        for fam in families:
            try:
                v = family_variant(gpu, launcher, M, N, K, fam)
            except GPUError:  # e.g. sg8 without the subgroup feature
                cells.append(f"{'-':>8s}")
                continue
            slow = matmul.BY_NAME[v].max_work is not None  # the plain kernel: one dispatch per submit
            g = bench_matmul(gpu, launcher, M, N, K, v, 1 if slow else args.reps)
            cells.append(f"{g:8.2f}" if g is not None else f"{'-':>8s}")
        rule = matmul.gpu_rule(bench_shape(launcher, M, N, K))
        g_rule = bench_matmul(gpu, launcher, M, N, K, rule.variant.name, args.reps, splits=rule.splits)
        cells.append(f"{g_rule:7.2f} {str(rule):>9s}")
        g_tuned = bench_matmul(gpu, launcher, M, N, K, None, args.reps)
        chosen = tuner.memo[bench_shape(launcher, M, N, K).key()]["choice"]
        cells.append(f"{g_tuned:7.2f} {'[' + chosen + ']':>14s}")
        cells.append(f"{bench_numpy(launcher, M, N, K):7.1f}")
        print(f"{label:30s} " + " ".join(cells), flush=True)
        if label.startswith("mingru fwd"):
            tuned_main = g_tuned
    best, median = bench_encode(gpu)
    print(f"encode 150-dispatch plan: {best * 1e3:.3f} ms best, {median * 1e3:.3f} ms median (CPU, Python)")
    print(tuner.summary())
    print(f"matmul 8192x128x384: {tuned_main:.1f} GFLOP/s on {gpu.describe()}")


if __name__ == "__main__":
    main()
