"""matmul.wgsl against torch goldens: all three products, every kernel version, edge and real shapes."""
import os
import subprocess
import sys

import numpy as np
import pytest

from golden_check import assert_close, case, golden
from trainer import ops
from trainer.gpu import GPUError

CASES = sorted({k.split("/")[0] for k in golden("matmul")})


def _pad(a: np.ndarray, ld: int) -> np.ndarray:
    """Rows of `a` placed at stride `ld` (zero padding), the layout the vec4 kernels need."""
    out = np.zeros((a.shape[0], ld), np.float32)
    out[:, :a.shape[1]] = a
    return out


def _ceil4(n):
    return -(-n // 4) * 4


@pytest.mark.parametrize("variant", ["ref", "plain", "vec4"])
@pytest.mark.parametrize("name", CASES)
def test_matmul_golden(gpu, name, variant):
    c = case("matmul", name)
    x, w, dout = c["x"], c["w"], c["dout"]
    M, K = x.shape
    N = w.shape[0]
    # vec4 needs rows holding whole vec4s: pad the operands' row strides (as puffgpu pads obs rows)
    ldk = _ceil4(K) if variant == "vec4" else K
    ldn = _ceil4(N) if variant == "vec4" else N
    # matmul_forward_vec4 needs K % 4 == 0; the encoder's D = 413 runs the plain forward kernel
    forward = not (variant == "vec4" and K % 4)
    xb = gpu.array(_pad(x, ldk), "x")
    wb = gpu.array(_pad(w, ldk), "w")
    db = gpu.array(_pad(dout, ldn), "dout")
    yb, dxb, dwb = gpu.buffer(4 * M * N, "y"), gpu.buffer(4 * M * K, "dx"), gpu.buffer(4 * N * K, "dw")
    plan = gpu.plan(f"matmul {name}")
    if forward:
        ops.matmul_forward(plan, xb.range(), wb.range(), yb.range(), M, N, K, ldx=ldk, ldw=ldk, variant=variant)
    ops.matmul_backward_input(plan, db.range(), wb.range(), dxb.range(), M, K, N, lddy=ldn, ldw=ldk, variant=variant)
    ops.matmul_backward_weight(plan, db.range(), xb.range(), dwb.range(), N, K, M, lddy=ldn, ldx=ldk, variant=variant)
    gpu.run(plan)
    shape = f"M={M} K={K} N={N}"
    if forward:
        assert_close(f"matmul_forward[{variant}] {name} {shape}", gpu.read(yb), c["y"], "matmul")
    assert_close(f"matmul_backward_input[{variant}] {name} {shape}", gpu.read(dxb), c["dx"], "matmul")
    assert_close(f"matmul_backward_weight[{variant}] {name} {shape}", gpu.read(dwb), c["dw"], "matmul")


@pytest.mark.parametrize("shape", [(3, 37, 20, 44), (2, 70, 12, 5)])  # the second is stored transposed
@pytest.mark.parametrize("variant", ["plain", "vec4"])
def test_matmul_offsets_accumulate_batch(gpu, variant, shape):
    """Operands inside one flat buffer at odd offsets, accumulate (beta=1), alpha, and a batch."""
    rng = np.random.default_rng(0)
    B, M, K, N = shape
    off = 4 * 13 + (0 if variant == "vec4" else 1)  # unaligned offsets exercise the plain kernel's *_off
    x = rng.standard_normal((B, M, K)).astype(np.float32)
    w = rng.standard_normal((B, N, K)).astype(np.float32)
    y0 = rng.standard_normal((B, M, N)).astype(np.float32)
    flat = np.concatenate([np.zeros(off, np.float32), x.ravel(), np.zeros(3, np.float32), w.ravel()])
    buf = gpu.array(np.concatenate([flat, np.zeros(1, np.float32)]), "flat")
    xr = buf.f32(off, x.size)
    wr = buf.f32(off + x.size + 3 if variant == "plain" else off + x.size, w.size)
    if variant == "vec4":  # keep w 16-byte aligned: rebuild without the 3-float gap
        flat = np.concatenate([np.zeros(off, np.float32), x.ravel(), w.ravel()])
        buf = gpu.array(flat, "flat")
        xr, wr = buf.f32(off, x.size), buf.f32(off + x.size, w.size)
    yb = gpu.array(y0, "y")
    plan = gpu.plan("offsets")
    ops.matmul_forward(plan, xr, wr, yb.range(), M, N, K, accumulate=True, alpha=0.5, batch=B,
                       x_bs=M * K, w_bs=N * K, y_bs=M * N, variant=variant)
    gpu.run(plan)
    want = y0 + 0.5 * np.einsum("bmk,bnk->bmn", x.astype(np.float64), w.astype(np.float64))
    assert_close(f"matmul_forward[{variant}] batched+accumulate B,M,K,N={shape}", gpu.read(yb), want, "matmul")


def test_matmul_shape_checks(gpu):
    small = gpu.buffer(4 * 10, "small")
    plan = gpu.plan("bad")
    with pytest.raises(GPUError, match=r"matmul_forward M=4 N=4 K=4: a needs 16 floats .* holds 10"):
        ops.matmul_forward(plan, small.range(), small.range(), small.range(), 4, 4, 4)
    big = gpu.buffer(4 * 64, "big")
    with pytest.raises(GPUError, match="vec4 kernel needs"):
        ops.matmul_forward(plan, big.f32(1), big.range(), big.range(), 3, 3, 4, variant="vec4")


def test_matmul_without_8_lane_subgroups(gpu):
    """The tuned kernels share rows through 8-lane subgroups and fall back to per-lane loads otherwise:
    run the goldens again on llvmpipe with 128-bit SIMD (4-lane subgroups), which takes the fallback."""
    if "llvmpipe" not in gpu.name:
        pytest.skip("needs llvmpipe to force 4-lane subgroups")
    env = dict(os.environ, LP_NATIVE_VECTOR_WIDTH="128")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__,
                        "-k", "(golden and not ref) or offsets"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
