"""Matmul and conv GFLOP/s on the current adapter, per policy shape and kernel variant, with numpy as reference.

    python tools/bench_kernels.py [--reps 10] [--adapter NAME] [--conv-frames 512] [--conv-only]

Columns: each variant family (vec4 loads where they apply), the static GPU rule's choice (tile4x4
with split-K where a heavy product needs it), the tuner's choice on this adapter (its name in
brackets), numpy. Each figure is the best wall time of one submit holding up to `reps` dispatches
of the same product (fewer for slow ones; waited for by mapping a buffer), so per-dispatch overhead
is included, as in training. Also prints the CPU time to encode a 150-dispatch plan, then
`matmul 8192x128x384: <tuned GFLOP/s> GFLOP/s on <adapter>`.

Conv (the picture encoder's three convolutions at 64×64×3 unless --conv-picture says otherwise): the
forward pass (im2col + matmul + ReLU per chunk) and the backward pass (weight gradients of all three
layers, input gradients of layers 2–3) of a minibatch of --conv-frames frames from packed uint8 rows,
each one submit, beside numpy doing the same im2col + matmul (+ col2im) in float32. FLOPs count the
products only (2 per multiply-add): forward 2·Σ macs, backward 2·(Σ macs + macs of layers 2–3).
Last line: `conv 64x64x3 x512: forward <GFLOP/s>, backward <GFLOP/s> GFLOP/s (numpy ...) on <adapter>`.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from trainer.kernels import conv, matmul
from trainer.gpu import GPUError, get_gpu
from trainer.autotune import attach
from puffbase.console import safe_console

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
    a, y = gpu.buffer(4 * 64 * 64, "a"), gpu.buffer(4 * 64 * 64, "y")
    plan = gpu.plan("encode")
    for i in range(n):
        matmul.matmul_forward(plan, a.range(), a.range(), y.range(), 8, 8 + (i % 3) * 8, 8, variant="tile4x4")
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


def conv_flops(layers) -> tuple[int, int]:
    """FLOPs per frame of the conv forward and backward products (2 per multiply-add)."""
    macs = [layer.macs for layer in layers]
    return 2 * sum(macs), 2 * (sum(macs) + sum(macs[1:]))


def bench_conv(gpu, hwc, frames):
    """(forward, backward) GFLOP/s of conv_forward / conv_backward on `frames` packed uint8 frames, and the
    chunk used. Weights, pictures and upstream gradients are random; one submit per pass."""
    layers = conv.conv_layers(*hwc)
    rng = np.random.default_rng(0)
    size = layers[0].in_size
    words = -(-size // 4)
    obs = gpu.array(rng.integers(0, 256, (frames, 4 * words), dtype=np.uint8).view(np.uint32), "bench.obs")
    w = [gpu.array((rng.uniform(-1, 1, (l.out_c, l.patch)) * np.sqrt(6 / l.patch)).astype(np.float32), f"bench.w{i}")
         for i, l in enumerate(layers)]
    ys = [gpu.buffer(4 * frames * l.out_size, f"bench.ys{i}") for i, l in enumerate(layers)]
    dys = [gpu.buffer(4 * frames * l.out_size, f"bench.dys{i}") for i, l in enumerate(layers)]
    dw = [gpu.buffer(4 * l.out_c * l.patch, f"bench.dw{i}") for i, l in enumerate(layers)]
    chunk = conv.conv_chunk(layers, frames, max_binding=gpu.limits["max-storage-buffer-binding-size"])
    scratch = conv.ConvScratch(gpu, layers, chunk)
    src = conv.PictureInput(True, words)
    r = lambda bufs: [b.range() for b in bufs]  # noqa: E731
    fwd = gpu.plan("bench conv_forward")
    conv.conv_forward(fwd, obs.range(), src, r(w), r(ys), frames, layers, scratch)
    bwd = gpu.plan("bench conv_backward")
    conv.conv_backward(bwd, obs.range(), src, r(w), r(ys), r(dys), r(dw), frames, layers, scratch)
    f_flops, b_flops = conv_flops(layers)
    t_fwd = time_plan(gpu, fwd, repeats=3)
    gpu.upload(dys[-1], rng.uniform(-1, 1, (frames, layers[-1].out_size)).astype(np.float32))
    t_bwd = time_plan(gpu, bwd, repeats=3)  # dys[-1] is masked in place: later runs mask it again, same work
    return f_flops * frames / t_fwd / 1e9, b_flops * frames / t_bwd / 1e9, chunk


def _im2col_np(x, layer):
    """x [B, H, W, C] → patches [B·places, k·k·C] in (ky, kx, c) order (a copy, as the GPU's scratch)."""
    k, s = layer.kernel, layer.stride
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))[:, ::s, ::s]  # [B, oh, ow, C, k, k]
    return np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, layer.patch)


def bench_conv_numpy(hwc, frames, repeats=3):
    """(forward, backward) GFLOP/s of numpy float32 doing the same im2col + matmul (+ col2im) passes."""
    layers = conv.conv_layers(*hwc)
    rng = np.random.default_rng(0)
    pic = rng.integers(0, 256, (frames, *hwc), dtype=np.uint8)
    ws = [(rng.uniform(-1, 1, (l.out_c, l.patch)) * np.sqrt(6 / l.patch)).astype(np.float32) for l in layers]
    dy_last = rng.uniform(-1, 1, (frames, layers[-1].out_size)).astype(np.float32)

    def forward():
        x, ys = pic.astype(np.float32) / np.float32(255), []
        for layer, w in zip(layers, ws):
            y = np.maximum(_im2col_np(x, layer) @ w.T, 0)
            ys.append(y)
            x = y.reshape(frames, layer.out_h, layer.out_w, layer.out_c)
        return ys

    ys = forward()

    def backward():
        x0 = pic.astype(np.float32) / np.float32(255)
        dy = dy_last.reshape(-1, layers[-1].out_c) * (ys[-1] > 0)
        for i in reversed(range(len(layers))):
            layer = layers[i]
            x = x0 if i == 0 else ys[i - 1].reshape(frames, layer.in_h, layer.in_w, layer.in_c)
            _ = dy.T @ _im2col_np(x, layer)  # dW
            if i == 0:
                break
            dcols = (dy @ ws[i]).reshape(frames, layer.out_h, layer.out_w, layer.kernel, layer.kernel, layer.in_c)
            dx = np.zeros((frames, layer.in_h, layer.in_w, layer.in_c), np.float32)
            k, s = layer.kernel, layer.stride
            for ky in range(k):
                for kx in range(k):
                    dx[:, ky:ky + s * layer.out_h:s, kx:kx + s * layer.out_w:s] += dcols[:, :, :, ky, kx]
            dy = dx.reshape(-1, layer.in_c) * (ys[i - 1] > 0)

    def best(f):
        t = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            t = min(t, time.perf_counter() - t0)
        return t
    f_flops, b_flops = conv_flops(layers)
    return f_flops * frames / best(forward) / 1e9, b_flops * frames / best(backward) / 1e9


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=10, help="dispatches per timed submit (at most)")
    ap.add_argument("--adapter", default=None, help="adapter name/backend substring (default: best GPU)")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma list of variant families to time")
    ap.add_argument("--conv-frames", type=int, default=512, help="frames of the conv minibatch")
    ap.add_argument("--conv-picture", default="64x64x3", help="HxWxC of the conv benchmark's picture")
    ap.add_argument("--conv-only", action="store_true", help="time only the conv passes (and numpy's)")
    args = ap.parse_args()
    gpu = get_gpu(args.adapter)
    tuner = attach(gpu)
    try:
        hwc = tuple(int(v) for v in args.conv_picture.lower().split("x"))
        conv.conv_layers(*hwc)
    except (TypeError, ValueError) as e:
        ap.error(f"--conv-picture {args.conv_picture!r}: want HxWxC, at least 36x36xC ({e})")
    if not args.conv_only:
        run_matmuls(gpu, tuner, args)
    frames = args.conv_frames
    t0 = time.perf_counter()
    g_fwd, g_bwd, chunk = bench_conv(gpu, hwc, frames)
    n_fwd, n_bwd = bench_conv_numpy(hwc, frames)
    label = "x".join(map(str, hwc))
    print(f"conv {label} x{frames} (chunks of {chunk} frames): forward {g_fwd:.2f}, backward {g_bwd:.2f} GFLOP/s; "
          f"numpy im2col+matmul forward {n_fwd:.1f}, backward {n_bwd:.1f} GFLOP/s ({time.perf_counter() - t0:.0f} s)")
    if args.conv_only:
        print(tuner.summary())
    print(f"conv {label} x{frames}: forward {g_fwd:.2f}, backward {g_bwd:.2f} GFLOP/s (numpy {n_fwd:.1f}, "
          f"{n_bwd:.1f}) on {gpu.describe()}")


def run_matmuls(gpu, tuner, args):
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
