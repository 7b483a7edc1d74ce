"""matmul.wgsl / matmul_subgroup.wgsl against torch goldens: all three products, every variant,
split-K at chunk edges, edge and real shapes; determinism of split-K; the GPU dispatch-shape rule."""
import os
import subprocess
import sys

import numpy as np
import pytest

from golden.check import assert_close, case, golden
from golden.runs import SPLITS, matmul_products
from trainer.kernels import GPU_MAX_SERIAL, GPU_MIN_INVOCATIONS, matmul
from trainer.gpu import GPUError

CASES = sorted({k.split("/")[0] for k in golden("matmul")})
SPLITK_CASES = [("matmul_splitk", n) for n in sorted({k.split("/")[0] for k in golden("matmul_splitk")})] + [
    ("matmul", n) for n in ("encoder", "mingru", "decoder")]  # the policy's real widths, split too
# The encoder's and the MinGRU's real widths take seconds per variant on lavapipe: marked slow, while the
# edge shapes run every variant in `-m "not slow"`.
REAL_WIDTHS = ("encoder", "mingru")


def slow(*values):
    return pytest.param(*values, marks=pytest.mark.slow)


def needs_variant(gpu, variant):
    if "subgroup" in matmul.BY_NAME[variant].features and not gpu.has("subgroup"):
        pytest.skip(f"{variant} needs the 'subgroup' feature (absent or disabled by PUFFGPU_DISABLE_FEATURES)")


@pytest.mark.parametrize("variant", [v.name for v in matmul.VARIANTS])
@pytest.mark.parametrize("name", [slow(n) if n in REAL_WIDTHS else n for n in CASES])
def test_matmul_golden(gpu, name, variant):
    needs_variant(gpu, variant)
    for label, got, want, tol in matmul_products(gpu, case("matmul", name), variant):
        assert_close(f"{label} {name}", got, want, tol)


@pytest.mark.parametrize("variant", [v.name for v in matmul.VARIANTS if v.splitk])
@pytest.mark.parametrize("family,name", [slow(f, n) if n in REAL_WIDTHS else (f, n) for f, n in SPLITK_CASES])
def test_matmul_splitk_golden(gpu, family, name, variant):
    """Split 2, 3 and 16 ways along each product's reduced length (K for y, N for dx, M for dW)."""
    for label, got, want, tol in matmul_products(gpu, case(family, name), variant, SPLITS):
        assert_close(f"{label} {name}", got, want, tol)


def test_splitk_cases_hit_chunk_edges():
    """The split-K goldens must put a chunk boundary at the end (exactly full), leave a last chunk of 1,
    and leave a ragged last chunk, or the chunk arithmetic is untested."""
    lengths = set()
    for family, name in SPLITK_CASES:
        c = case(family, name)
        lengths |= {c["x"].shape[0], c["x"].shape[1], c["w"].shape[0]}
    last = {(n, s): n - (matmul.split_k(n, s)[1] - 1) * matmul.split_k(n, s)[0] for n in lengths for s in SPLITS}
    kc = {(n, s): matmul.split_k(n, s)[0] for n in lengths for s in SPLITS}
    assert any(v == 1 and kc[k] > 1 for k, v in last.items())
    assert any(v == kc[k] and matmul.split_k(*k)[1] > 1 for k, v in last.items())
    assert any(1 < v < kc[k] for k, v in last.items())


@pytest.mark.parametrize("shape", [(3, 37, 20, 44), (2, 70, 12, 5)])  # the second is stored transposed by sg8
@pytest.mark.parametrize("choice", ["sg8", "sg8_vec4", "tile4x4", "tile8x4_vec4", "tile4x4_vec4/s3", "wgmem/s2",
                                    "ref"])
def test_matmul_offsets_accumulate_batch(gpu, choice, shape):
    """Operands inside one flat buffer at odd offsets, accumulate (beta=1), alpha, and a batch."""
    chosen = matmul.FAMILY.parse(choice)
    variant, splits = chosen.variant.name, chosen.splits
    needs_variant(gpu, variant)
    rng = np.random.default_rng(0)
    B, M, K, N = shape
    vec = chosen.variant.layout is not None  # vec4 loads: aligned operands
    off = 4 * 13 + (0 if vec else 1)  # unaligned offsets exercise the scalar kernels' *_off
    x = rng.standard_normal((B, M, K)).astype(np.float32)
    w = rng.standard_normal((B, N, K)).astype(np.float32)
    y0 = rng.standard_normal((B, M, N)).astype(np.float32)
    if vec:  # keep w 16-byte aligned: no gap
        flat = np.concatenate([np.zeros(off, np.float32), x.ravel(), w.ravel(), np.zeros(4, np.float32)])
        buf = gpu.array(flat, "flat")
        xr, wr = buf.f32(off, x.size), buf.f32(off + x.size, w.size)
    else:
        flat = np.concatenate([np.zeros(off, np.float32), x.ravel(), np.zeros(3, np.float32), w.ravel(),
                               np.zeros(1, np.float32)])
        buf = gpu.array(flat, "flat")
        xr, wr = buf.f32(off, x.size), buf.f32(off + x.size + 3, w.size)
    yb = gpu.array(y0, "y")
    plan = gpu.plan("offsets")
    matmul.matmul_forward(plan, xr, wr, yb.range(), M, N, K, accumulate=True, alpha=0.5, batch=B,
                       x_bs=M * K, w_bs=N * K, y_bs=M * N, variant=variant, splits=splits)
    gpu.run(plan)
    want = y0 + 0.5 * np.einsum("bmk,bnk->bmn", x.astype(np.float64), w.astype(np.float64))
    assert_close(f"matmul_forward[{choice}] batched+accumulate B,M,K,N={shape}", gpu.read(yb), want, "matmul")


def test_splitk_is_bit_identical_run_to_run(gpu):
    """A fixed split gives the same bits every run; another split adds in another order (close, not equal)."""
    c = case("matmul_splitk", "gram_mingru")
    runs = [[got for _, got, _, _ in matmul_products(gpu, c, "tile4x4_vec4", (5, 1))] for _ in range(2)]
    for a, b in zip(runs[0], runs[1]):
        assert np.array_equal(a, b)
    assert not all(np.array_equal(runs[0][i], runs[0][i + 3]) for i in range(3))


def test_matmul_shape_checks(gpu):
    small = gpu.buffer(4 * 10, "small")
    plan = gpu.plan("bad")
    with pytest.raises(GPUError, match=r"matmul_forward M=4 N=4 K=4: a needs 16 floats .* holds 10"):
        matmul.matmul_forward(plan, small.range(), small.range(), small.range(), 4, 4, 4)
    big = gpu.buffer(4 * 64, "big")
    with pytest.raises(GPUError, match="tile4x4_vec4 kernel needs"):
        matmul.matmul_forward(plan, big.f32(1), big.range(), big.range(), 3, 3, 4, variant="tile4x4_vec4")
    with pytest.raises(GPUError, match="split-K .* needs one of"):
        matmul.matmul_forward(plan, big.range(), big.range(), big.range(), 3, 3, 4, variant="ref", splits=2)
    with pytest.raises(GPUError, match="/sN needs a positive number"):
        matmul.FAMILY.parse("tile4x4/sx")
    with pytest.raises(GPUError, match="variant must be one of"):
        matmul.FAMILY.parse("tile4x5")


def test_subgroup_variants_refused_without_the_feature(gpu, monkeypatch):
    monkeypatch.setattr(gpu, "features", gpu.features - {"subgroup"})
    buf = gpu.buffer(4 * 64, "b")
    with pytest.raises(GPUError, match="need the 'subgroup' feature"):
        matmul.matmul_forward(gpu.plan("x"), buf.range(), buf.range(), buf.range(), 4, 4, 4, variant="sg8")


def test_gpu_rule_fills_a_gpu_at_the_default_shapes():
    """The static GPU choice keeps every heavy product of the default config at >= 16K invocations and
    <= 1K loop iterations (the dispatch-shape rule), e.g. dW over 8192 rows by split-K."""
    shapes = [("matmul_backward_weight", 384, 128, 8192, 1), ("matmul_backward_weight", 7, 128, 8192, 1),
              ("matmul_backward_weight", 128, 413, 8192, 1), ("matmul_forward", 8192, 7, 128, 1),
              ("matmul_forward", 128, 128, 413, 1), ("matmul_backward_weight", 128, 128, 384, 4),
              ("matmul_backward_input", 384, 128, 128, 4), ("matmul_forward", 1024, 128, 413, 1)]
    for form, M, N, K, b in shapes:
        shape = matmul.MatmulShape(form, M, N, K, b, vec4=True, sg_vec4=True)
        choice = matmul.gpu_rule(shape)
        kc, S = matmul.split_k(K, choice.splits)
        geo = choice.variant.geometry
        assert geo.invocations(shape, S) >= GPU_MIN_INVOCATIONS, (shape, choice.splits)
        assert geo.serial(shape, kc) <= GPU_MAX_SERIAL
    assert matmul.gpu_rule(matmul.MatmulShape("matmul_backward_weight", 384, 128, 8192, 1, True, True)).splits > 1


@pytest.mark.slow
def test_sg8_without_8_lane_subgroups(gpu):
    """The sg8 kernels share rows through 8-lane subgroups and fall back to per-lane loads otherwise:
    run their goldens again on llvmpipe with 128-bit SIMD (4-lane subgroups), which takes the fallback."""
    if "llvmpipe" not in gpu.name or not gpu.has("subgroup"):
        pytest.skip("needs llvmpipe with subgroups to force 4-lane subgroups")
    env = dict(os.environ, LP_NATIVE_VECTOR_WIDTH="128")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", __file__,
                        "-k", "(golden and sg8) or (offsets and sg8)"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout.split("\n")[-2], r.stdout[-500:]
