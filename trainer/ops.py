"""Launchers: one Python function per WGSL entry point, same name, adding a dispatch to a Plan.

Each launcher checks shapes against the ranges it is given (so an out-of-bounds plan fails at
build time with the kernel's name, not as garbage on the GPU) and computes the grid.
"""
from __future__ import annotations

from .gpu import GPUError, Plan, Range

MATMUL_COLS = 64  # output columns per workgroup of the tuned kernels (8 lanes × 8; matmul.wgsl)
MATMUL_ROW_GROUPS = (1, 2, 4)  # RG: rows per workgroup = 8·RG (fewer for short outputs)
MATMUL_MAX_LOOP = 60000  # lavapipe stops an invocation after 65,535 loop iterations
MATMUL_REF_WG = (16, 16)
MATMUL_VARIANTS = ("ref", "plain", "vec4")


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def need(label: str, name: str, r: Range, elems: int):
    """Fail unless range `r` holds at least `elems` float32 elements."""
    if r.count < elems:
        raise GPUError(f"{label}: {name} needs {elems} floats but its range in {r.buffer.label!r} holds {r.count}")


def _extent(rows: int, cols: int, ld: int, batch: int, bs: int) -> int:
    return (batch - 1) * bs + (rows - 1) * ld + cols


def _matmul(plan: Plan, entry: str, a: Range, b: Range, y: Range, M: int, N: int, K: int, *,
            a_shape, b_shape, lda, ldb, ldy, batch, a_bs, b_bs, y_bs, alpha, beta, z, ldz, z_bs, variant,
            vec4_ok):
    """`vec4_ok`: the form's own condition for the vec4 kernel (see each launcher). The vec4 kernels
    read whole vec4s along the contiguous dimension, so rows are checked to hold a multiple of 4."""
    if min(M, N, K, batch) < 1:
        raise GPUError(f"{entry}: shapes must be positive, got M={M} N={N} K={K} batch={batch}")
    label = f"{entry} M={M} N={N} K={K}" + (f" batch={batch}" if batch > 1 else "")
    need(label, "a", a, _extent(*a_shape, lda, batch, a_bs))
    need(label, "b", b, _extent(*b_shape, ldb, batch, b_bs))
    need(label, "y", y, _extent(M, N, ldy, batch, y_bs))
    if z is None:
        z, ldz, z_bs = y, ldy, y_bs
    need(label, "z", z, _extent(M, N, ldz, batch, z_bs))
    aligned = (vec4_ok and a.offset % 16 == 0 and b.offset % 16 == 0
               and all(v % 4 == 0 for v in (lda, ldb, a_bs, b_bs))
               and a.count >= _extent(a_shape[0], _ceil(a_shape[1], 4) * 4, lda, batch, a_bs)
               and b.count >= _extent(b_shape[0], _ceil(b_shape[1], 4) * 4, ldb, batch, b_bs))
    if variant is None:
        variant = "vec4" if aligned else "plain"
    if variant not in MATMUL_VARIANTS:
        raise GPUError(f"{entry}: variant must be one of {MATMUL_VARIANTS}, got {variant!r}")
    if variant == "vec4" and not aligned:
        raise GPUError(f"{label}: the vec4 kernel needs 16-byte aligned operands whose strides are "
                       f"multiples of 4 and whose rows hold whole vec4s; use variant='plain'")
    params = dict(M=M, N=N, K=K, lda=lda, ldb=ldb, ldy=ldy, ldz=ldz,
                  a_bs=a_bs, b_bs=b_bs, y_bs=y_bs, z_bs=z_bs, alpha=alpha, beta=beta)
    gpu = plan.gpu
    if "subgroup" not in gpu.features:
        raise GPUError(f"{label}: matmul.wgsl needs the adapter's 'subgroup' feature, which {gpu.describe()} lacks")
    if variant == "ref":
        wx, wy = MATMUL_REF_WG
        kernel = gpu.kernel("matmul.wgsl", entry + "_ref", WG_X=wx, WG_Y=wy)
        return plan.add(kernel, (_ceil(N, wx), _ceil(M, wy), batch), params, a=a, b=b, y=y, z=z)
    steps = K if entry == "matmul_backward_weight" else _ceil(K, 4)  # loop iterations per invocation
    if steps > MATMUL_MAX_LOOP:
        raise GPUError(f"{label}: K={K} needs {steps} loop iterations per invocation, more than lavapipe runs "
                       f"({MATMUL_MAX_LOOP}); split K into several accumulating products")
    # forward is symmetric in its operands (y = a·bᵀ, yᵀ = b·aᵀ): for narrow outputs (the decoder's
    # A+1 columns) swap them and store transposed, so the 64-column side of the tile covers M
    if entry == "matmul_forward" and _padded(N, M) < _padded(M, N):
        M, N, a, b = N, M, b, a
        params.update(M=M, N=N, lda=ldb, ldb=lda, a_bs=b_bs, b_bs=a_bs, tr=1)
    rg = _row_groups(M)
    grid = (_ceil(N, MATMUL_COLS), _ceil(M, 8 * rg), batch)
    if variant == "vec4":
        kernel = gpu.kernel("matmul.wgsl", entry + "_vec4", RG=rg)
        return plan.add(kernel, grid, params, a4=a, b4=b, y=y, z=z)
    kernel = gpu.kernel("matmul.wgsl", entry, RG=rg)
    return plan.add(kernel, grid, params, a=a, b=b, y=y, z=z)


def _row_groups(M: int) -> int:
    """RG for an output of M rows: the smallest tile height 8·RG that is not mostly padding."""
    return next(rg for rg in MATMUL_ROW_GROUPS if 8 * rg >= M or rg == MATMUL_ROW_GROUPS[-1])


def _padded(M: int, N: int) -> int:
    """Outputs computed (including edge padding) by the tuned kernels for an M×N product."""
    rows = 8 * _row_groups(M)
    return _ceil(M, rows) * rows * _ceil(N, MATMUL_COLS) * MATMUL_COLS


def matmul_forward(plan: Plan, x: Range, w: Range, y: Range, M: int, N: int, K: int, *,
                   accumulate=False, alpha=1.0, beta=None, z=None, ldx=None, ldw=None, ldy=None, ldz=None,
                   batch=1, x_bs=0, w_bs=0, y_bs=0, z_bs=0, variant=None):
    """y[M,N] (+)= x[M,K] · w[N,K]ᵀ — a linear layer's forward."""
    ldx, ldw, ldy = ldx or K, ldw or K, ldy or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_forward", x, w, y, M, N, K, a_shape=(M, K), b_shape=(N, K),
                   lda=ldx, ldb=ldw, ldy=ldy, batch=batch, a_bs=x_bs, b_bs=w_bs, y_bs=y_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or ldy, z_bs=z_bs, variant=variant,
                   vec4_ok=K % 4 == 0)


def matmul_backward_input(plan: Plan, dy: Range, w: Range, dx: Range, M: int, N: int, K: int, *,
                          accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldw=None, lddx=None, ldz=None,
                          batch=1, dy_bs=0, w_bs=0, dx_bs=0, z_bs=0, variant=None):
    """dx[M,N] (+)= dy[M,K] · w[K,N] — input gradient of y = x·wᵀ (K = out features, N = in features)."""
    lddy, ldw, lddx = lddy or K, ldw or N, lddx or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_input", dy, w, dx, M, N, K, a_shape=(M, K), b_shape=(K, N),
                   lda=lddy, ldb=ldw, ldy=lddx, batch=batch, a_bs=dy_bs, b_bs=w_bs, y_bs=dx_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddx, z_bs=z_bs, variant=variant,
                   vec4_ok=ldw >= _ceil(N, 4) * 4)


def matmul_backward_weight(plan: Plan, dy: Range, x: Range, dw: Range, M: int, N: int, K: int, *,
                           accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldx=None, lddw=None, ldz=None,
                           batch=1, dy_bs=0, x_bs=0, dw_bs=0, z_bs=0, variant=None):
    """dw[M,N] (+)= dy[K,M]ᵀ · x[K,N] — weight gradient of y = x·wᵀ (K = rows of the batch)."""
    lddy, ldx, lddw = lddy or M, ldx or N, lddw or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_weight", dy, x, dw, M, N, K, a_shape=(K, M), b_shape=(K, N),
                   lda=lddy, ldb=ldx, ldy=lddw, batch=batch, a_bs=dy_bs, b_bs=x_bs, y_bs=dw_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddw, z_bs=z_bs, variant=variant,
                   vec4_ok=lddy >= _ceil(M, 4) * 4 and ldx >= _ceil(N, 4) * 4)
