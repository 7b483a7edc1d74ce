"""Matmul GFLOP/s on the current adapter, per policy shape and kernel version, with numpy as reference.

    python tools/bench_kernels.py [--reps 10] [--adapter NAME]

Each figure is best-of-3 wall time of one submit holding `reps` dispatches of the same product
(waited for by mapping a buffer), so per-dispatch overhead is included, as in training.
Also prints the CPU time to encode a 150-dispatch plan. Last line:
`matmul 8192x128x384: <tuned GFLOP/s> GFLOP/s on <adapter>`.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from trainer import ops
from trainer.gpu import get_gpu

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


def time_plan(gpu, plan, repeats=3):
    gpu.run(plan)
    gpu.sync()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        gpu.run(plan)
        gpu.sync()
        best = min(best, time.perf_counter() - t)
    return best


def bench_matmul(gpu, launcher, M, N, K, variant, reps):
    fn = getattr(ops, launcher)
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
    plan = gpu.plan(f"bench {launcher}")
    kw = {"matmul_forward": dict(ldx=lda, ldw=ldb), "matmul_backward_input": dict(lddy=lda, ldw=ldb),
          "matmul_backward_weight": dict(lddy=lda, ldx=ldb)}[launcher]
    try:
        for _ in range(reps):
            fn(plan, a.range(), b.range(), y.range(), M, N, K, variant=variant, **kw)
    except Exception:
        return None  # variant not applicable to this shape
    return 2.0 * M * N * K * reps / time_plan(gpu, plan) / 1e9


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
        ops.matmul_forward(plan, a.range(), a.range(), a.range(), 8, 8 + (i % 3) * 8, 8, variant="plain")
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="dispatches per timed submit")
    ap.add_argument("--adapter", default=None, help="adapter name/backend substring (default: best GPU)")
    args = ap.parse_args()
    gpu = get_gpu(args.adapter)
    print(f"{'shape':32s} {'ref':>8s} {'plain':>8s} {'vec4':>8s} {'numpy':>8s}   GFLOP/s")
    tuned_main = None
    for label, launcher, M, N, K in SHAPES:
        row = {}
        for variant in ("ref", "plain", "vec4"):
            row[variant] = bench_matmul(gpu, launcher, M, N, K, variant, 1 if variant == "ref" else args.reps)
        row["numpy"] = bench_numpy(launcher, M, N, K)
        cells = " ".join(f"{row[v]:8.2f}" if row[v] is not None else f"{'-':>8s}" for v in ("ref", "plain", "vec4", "numpy"))
        print(f"{label:32s} {cells}")
        if label.startswith("mingru fwd"):
            tuned_main = max(v for v in (row["plain"], row["vec4"]) if v is not None)
    best, median = bench_encode(gpu)
    print(f"encode 150-dispatch plan: {best * 1e3:.3f} ms best, {median * 1e3:.3f} ms median (CPU, Python)")
    print(f"matmul 8192x128x384: {tuned_main:.1f} GFLOP/s on {gpu.describe()}")


if __name__ == "__main__":
    main()
