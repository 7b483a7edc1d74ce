"""Launchers: one Python function per WGSL entry point, same name, adding a dispatch to a Plan.

Each launcher checks shapes against the ranges it is given (so an out-of-bounds plan fails at
build time with the kernel's name, not as garbage on the GPU), computes the grid and records the
dispatch's shape (invocations, longest serial loop, work) for the dispatch-shape report.

Matmul variants (docs/design-notes.md, issue 9). A variant is chosen per shape by the tuner
(trainer/tune.py) unless the caller names one; `splits` > 1 runs split-K (partial sums over chunks
of K into scratch, then `matmul_splitk_reduce` adds them in a fixed order and applies the epilogue).

    ref            matmul.wgsl *_ref: one output per invocation, 16×16 workgroups
    sg8, sg8_vec4  matmul_subgroup.wgsl: lavapipe's kernels, 8-lane subgroup-shared rows (needs 'subgroup')
    tile4x4[_vec4] matmul.wgsl *_tile BR=1: 64-invocation workgroups, 4×4 outputs per invocation
    tile8x4[_vec4] matmul.wgsl *_tile BR=2: 64-invocation workgroups, 8×4 outputs per invocation
    wgmem          matmul.wgsl *_wgmem: 256-invocation workgroups sharing 64×16 tiles in workgroup memory
    (tile*, wgmem take splits ≥ 1; *_vec4 need aligned operands whose rows hold whole vec4s)
"""
from __future__ import annotations

from dataclasses import dataclass

from .gpu import GPUError, Plan, Range

MATMUL_COLS = 64  # sg8: output columns per workgroup (8 lanes × 8; matmul_subgroup.wgsl)
MATMUL_ROW_GROUPS = (1, 2, 4)  # sg8: RG, rows per workgroup = 8·RG (fewer for short outputs)
MATMUL_MAX_LOOP = 60000  # lavapipe stops an invocation after 65,535 loop iterations
MATMUL_REF_WG = (16, 16)
MATMUL_VARIANTS = ("ref", "sg8", "sg8_vec4", "tile4x4", "tile4x4_vec4", "tile8x4", "tile8x4_vec4", "wgmem")
SUBGROUP_VARIANTS = ("sg8", "sg8_vec4")
SPLITK_VARIANTS = ("tile4x4", "tile4x4_vec4", "tile8x4", "tile8x4_vec4", "wgmem")
MATMUL_FORMS = ("matmul_forward", "matmul_backward_input", "matmul_backward_weight")
SPLITK_REDUCE_WG = 64

# The dispatch-shape rule for GPUs (docs/design-notes.md, issue 9): a dispatch is *heavy* when its work
# (multiply-adds of a matmul; state updates or elements read/written by the other kernels) is at
# least HEAVY_WORK; a heavy dispatch should keep >= GPU_MIN_INVOCATIONS invocations in flight and
# run <= GPU_MAX_SERIAL iterations of its longest loop per invocation.
HEAVY_WORK = 1 << 20
GPU_MIN_INVOCATIONS = 16 * 1024
GPU_MAX_SERIAL = 1024


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def need(label: str, name: str, r: Range, elems: int):
    """Fail unless range `r` holds at least `elems` float32 elements."""
    if r.count < elems:
        raise GPUError(f"{label}: {name} needs {elems} floats but its range in {r.buffer.label!r} holds {r.count}")


def _extent(rows: int, cols: int, ld: int, batch: int, bs: int) -> int:
    return (batch - 1) * bs + (rows - 1) * ld + cols


# ------------------------------------------------------------------------------------ variant geometry

@dataclass(frozen=True)
class MatmulShape:
    """What the tuner keys a choice on: the product, its sizes and which load widths apply."""
    form: str  # one of MATMUL_FORMS
    M: int
    N: int
    K: int
    batch: int
    vec4: bool  # operands aligned for vec4 loads with rows of whole vec4s (tile*_vec4)
    sg_vec4: bool  # sg8_vec4 applies (vec4 and the form's own condition, e.g. forward K % 4 == 0)

    @property
    def work(self) -> int:
        return self.M * self.N * self.K * self.batch

    def key(self) -> str:
        return (f"{self.form} M={self.M} N={self.N} K={self.K} batch={self.batch} "
                f"vec4={int(self.vec4)} sg_vec4={int(self.sg_vec4)}")

    def label(self) -> str:
        short = {"matmul_forward": "fwd", "matmul_backward_input": "dx", "matmul_backward_weight": "dW"}[self.form]
        return f"{short} {self.M}x{self.N} K={self.K}" + (f" x{self.batch}" if self.batch > 1 else "")


def parse_choice(choice: str) -> tuple[str, int]:
    """'tile4x4_vec4/s8' → ('tile4x4_vec4', 8); 'sg8' → ('sg8', 1)."""
    variant, _, s = choice.partition("/s")
    if variant not in MATMUL_VARIANTS or (s and not s.isdigit()) or (s and int(s) < 1):
        raise GPUError(f"matmul choice {choice!r}: expected VARIANT or VARIANT/sN (N splits of K) with VARIANT one of "
                       f"{', '.join(MATMUL_VARIANTS)}")
    if s and int(s) > 1 and variant not in SPLITK_VARIANTS:
        raise GPUError(f"matmul choice {choice!r}: split-K needs one of {', '.join(SPLITK_VARIANTS)}")
    return variant, int(s or 1)


def format_choice(variant: str, splits: int) -> str:
    return variant if splits <= 1 else f"{variant}/s{splits}"


def split_k(K: int, splits: int) -> tuple[int, int]:
    """(kc, S): chunks of kc values of k (a multiple of 4), S = ceil(K/kc) of them (≤ splits)."""
    kc = _ceil(_ceil(K, max(1, splits)), 4) * 4
    return kc, _ceil(K, kc)


def _tile_rows(variant: str) -> int:
    return 8 if variant.startswith("tile8x4") else 4


def matmul_serial(variant: str, form: str, K: int, kc: int) -> int:
    """Iterations of the longest loop one invocation runs."""
    if variant == "ref":
        return K
    if variant in SUBGROUP_VARIANTS:
        return K if form == "matmul_backward_weight" else _ceil(K, 4)
    if variant == "wgmem":
        return _ceil(kc, 16) * 16
    return _ceil(kc, 4)


def matmul_invocations(variant: str, shape: MatmulShape, S: int) -> int:
    """Invocations that own at least one output (per product, all splits)."""
    M, N, b = shape.M, shape.N, shape.batch
    if variant == "ref":
        return M * N * b
    if variant in SUBGROUP_VARIANTS:
        return _ceil(M, 8 * _row_groups(M)) * _ceil(N, MATMUL_COLS) * 8 * b
    return _ceil(M, _tile_rows(variant)) * _ceil(N, 4) * b * S


def gpu_splits(variant: str, shape: MatmulShape) -> int:
    """Splits of K the GPU rule uses: none for light products; else the fewest that give a heavy
    product >= GPU_MIN_INVOCATIONS invocations and <= GPU_MAX_SERIAL loop iterations per invocation."""
    if variant not in SPLITK_VARIANTS or shape.work < HEAVY_WORK:
        return 1
    for s in range(1, _ceil(shape.K, 4) + 1):
        kc, S = split_k(shape.K, s)
        if (matmul_invocations(variant, shape, S) >= GPU_MIN_INVOCATIONS
                and matmul_serial(variant, shape.form, shape.K, kc) <= GPU_MAX_SERIAL):
            return s
    return _ceil(shape.K, 4)


def matmul_gpu_rule(shape: MatmulShape) -> tuple[str, int]:
    """The static choice for a GPU (no timing): 4×4 register tiles, vec4 loads where they apply,
    split-K where a heavy product would otherwise leave the GPU idle or loop too long."""
    variant = "tile4x4_vec4" if shape.vec4 else "tile4x4"
    return variant, gpu_splits(variant, shape)


def matmul_applicable(variant: str, shape: MatmulShape, gpu) -> str | None:
    """None if `variant` can run this product on `gpu`, else the reason it cannot."""
    if variant not in MATMUL_VARIANTS:
        return f"variant must be one of {', '.join(MATMUL_VARIANTS)}, got {variant!r}"
    if variant in SUBGROUP_VARIANTS and not gpu.has("subgroup"):
        why = "disabled by PUFFGPU_DISABLE_FEATURES" if "subgroup" in gpu.disabled else "which this adapter lacks"
        return f"the {variant} kernels (matmul_subgroup.wgsl) need the 'subgroup' feature, {why}"
    if variant == "sg8_vec4" and not shape.sg_vec4:
        return ("the sg8_vec4 kernel needs 16-byte aligned operands whose strides are multiples of 4 and whose rows "
                "hold whole vec4s (forward: also K % 4 == 0); use variant='sg8'")
    if variant.endswith("_vec4") and not shape.vec4:
        return (f"the {variant} kernel needs 16-byte aligned operands whose strides are multiples of 4 and whose rows "
                f"hold whole vec4s; use variant={variant[:-5]!r}")
    return None


# ------------------------------------------------------------------------------------ the launcher

@dataclass(frozen=True)
class MatmulCall:
    """One product's layout, enough to rebuild it on scratch buffers (the tuner times candidates so)."""
    form: str
    M: int
    N: int
    K: int
    a_shape: tuple[int, int]
    b_shape: tuple[int, int]
    lda: int
    ldb: int
    ldy: int
    batch: int
    a_bs: int
    b_bs: int
    y_bs: int

    def bench_plan(self, gpu, variant: str, splits: int, reps: int, bufs=None):
        """A plan of `reps` copies of this product with (variant, splits) on scratch buffers
        (`bufs` = (a, b, y) to reuse; new zeroed ones otherwise). Returns (plan, bufs)."""
        if bufs is None:
            a = gpu.buffer(4 * (_extent(*self.a_shape, self.lda, self.batch, self.a_bs) + 4), "tune.a")
            b = gpu.buffer(4 * (_extent(*self.b_shape, self.ldb, self.batch, self.b_bs) + 4), "tune.b")
            y = gpu.buffer(4 * _extent(self.M, self.N, self.ldy, self.batch, self.y_bs), "tune.y")
            bufs = (a, b, y)
        a, b, y = bufs
        plan = gpu.plan(f"tune {self.form} {format_choice(variant, splits)}")
        for _ in range(reps):
            _matmul(plan, self.form, a.range(), b.range(), y.range(), self.M, self.N, self.K,
                    a_shape=self.a_shape, b_shape=self.b_shape, lda=self.lda, ldb=self.ldb, ldy=self.ldy,
                    batch=self.batch, a_bs=self.a_bs, b_bs=self.b_bs, y_bs=self.y_bs, alpha=1.0, beta=0.0,
                    z=None, ldz=None, z_bs=0, variant=variant, splits=splits, vec4_ok=None)
        return plan, bufs


def _matmul(plan: Plan, entry: str, a: Range, b: Range, y: Range, M: int, N: int, K: int, *,
            a_shape, b_shape, lda, ldb, ldy, batch, a_bs, b_bs, y_bs, alpha, beta, z, ldz, z_bs, variant,
            vec4_ok, splits=None):
    """`vec4_ok`: the form's own extra condition for sg8_vec4 (None: recompute from the layout)."""
    if min(M, N, K, batch) < 1:
        raise GPUError(f"{entry}: shapes must be positive, got M={M} N={N} K={K} batch={batch}")
    label = f"{entry} M={M} N={N} K={K}" + (f" batch={batch}" if batch > 1 else "")
    need(label, "a", a, _extent(*a_shape, lda, batch, a_bs))
    need(label, "b", b, _extent(*b_shape, ldb, batch, b_bs))
    need(label, "y", y, _extent(M, N, ldy, batch, y_bs))
    if z is None:
        z, ldz, z_bs = y, ldy, y_bs
    need(label, "z", z, _extent(M, N, ldz, batch, z_bs))
    aligned = (a.offset % 16 == 0 and b.offset % 16 == 0
               and all(v % 4 == 0 for v in (lda, ldb, a_bs, b_bs))
               and a.count >= _extent(a_shape[0], _ceil(a_shape[1], 4) * 4, lda, batch, a_bs)
               and b.count >= _extent(b_shape[0], _ceil(b_shape[1], 4) * 4, ldb, batch, b_bs))
    if vec4_ok is None:
        vec4_ok = {"matmul_forward": K % 4 == 0, "matmul_backward_input": ldb >= _ceil(N, 4) * 4,
                   "matmul_backward_weight": lda >= _ceil(M, 4) * 4 and ldb >= _ceil(N, 4) * 4}[entry]
    shape = MatmulShape(entry, M, N, K, batch, aligned, aligned and vec4_ok)
    gpu = plan.gpu
    if variant is None:
        call = MatmulCall(entry, M, N, K, tuple(a_shape), tuple(b_shape), lda, ldb, ldy, batch, a_bs, b_bs, y_bs)
        variant, splits = gpu.tuner.matmul(shape, call)
    splits = max(1, int(splits or 1))
    why = matmul_applicable(variant, shape, gpu)
    if why:
        raise GPUError(f"{label}: {why}")
    if splits > 1 and variant not in SPLITK_VARIANTS:
        raise GPUError(f"{label}: split-K (splits={splits}) needs one of {', '.join(SPLITK_VARIANTS)}, not {variant!r}")
    kc, S = split_k(K, splits)
    serial = matmul_serial(variant, entry, K, kc)
    loops = serial if variant != "wgmem" else serial // 16 * 17  # wgmem: a stage loads, then 16 updates
    if loops > MATMUL_MAX_LOOP:
        raise GPUError(f"{label}: K={K} needs {serial} loop iterations per invocation with {variant}, more than lavapipe "
                       f"runs ({MATMUL_MAX_LOOP}); split K (splits > 1) or into several accumulating products")
    params = dict(M=M, N=N, K=K, lda=lda, ldb=ldb, ldy=ldy, ldz=ldz,
                  a_bs=a_bs, b_bs=b_bs, y_bs=y_bs, z_bs=z_bs, alpha=alpha, beta=beta)
    work = M * N * K * batch
    if variant in SUBGROUP_VARIANTS:
        return _matmul_sg8(plan, entry, variant, a, b, y, z, params, shape, serial, work)
    params.update(batch=batch, splits=S, kc=kc)
    if variant == "ref":
        wx, wy = MATMUL_REF_WG
        kernel = gpu.kernel("matmul.wgsl", entry + "_ref", WG_X=wx, WG_Y=wy)
        return plan.add(kernel, (_ceil(N, wx), _ceil(M, wy), batch), params, a=a, b=b, y=y, z=z).note(
            invocations=M * N * batch, serial=serial, work=work)
    part = gpu.scratch(S * batch * M * N) if S > 1 else None
    if variant == "wgmem":
        kernel = gpu.kernel("matmul.wgsl", entry + "_wgmem")
        grid = (_ceil(N, 64), _ceil(M, 64), batch * S)
        operands = dict(a=a, b=b)
    else:
        br, vec = _tile_rows(variant) // 4, variant.endswith("_vec4")
        kernel = gpu.kernel("matmul.wgsl", entry + "_tile", BR=br, VEC4=int(vec))
        grid = (_ceil(N, 32), _ceil(M, 32 * br), batch * S)
        operands = dict(a4=a, b4=b, a=None, b=None) if vec else dict(a=a, b=b, a4=None, b4=None)
    plan.add(kernel, grid, params, y=y, z=z, part=part, **operands).note(
        invocations=matmul_invocations(variant, shape, S), serial=serial, work=work)
    if S > 1:
        matmul_splitk_reduce(plan, part, y, z, params, M, N, batch, S)
    return plan


def matmul_splitk_reduce(plan: Plan, part: Range, y: Range, z: Range, params: dict, M: int, N: int, batch: int,
                         S: int):
    """y = alpha·Σ_s part[s] + beta·z for every output, s in order (the second pass of split-K)."""
    need(f"matmul_splitk_reduce M={M} N={N} S={S}", "part", part, S * batch * M * N)
    blocks = _ceil(M * N, SPLITK_REDUCE_WG)
    gx = min(blocks, 32768)
    kernel = plan.gpu.kernel("matmul.wgsl", "matmul_splitk_reduce")
    return plan.add(kernel, (gx, _ceil(blocks, gx), batch), params, part=part, y=y, z=z).note(
        invocations=M * N * batch, serial=S, work=S * M * N * batch)


def _matmul_sg8(plan, entry, variant, a, b, y, z, params, shape, serial, work):
    gpu = plan.gpu
    M, N = shape.M, shape.N
    # forward is symmetric in its operands (y = a·bᵀ, yᵀ = b·aᵀ): for narrow outputs (the decoder's
    # A+1 columns) swap them and store transposed, so the 64-column side of the tile covers M
    if entry == "matmul_forward" and _padded(N, M) < _padded(M, N):
        M, N, a, b = N, M, b, a
        params.update(M=M, N=N, lda=params["ldb"], ldb=params["lda"], a_bs=params["b_bs"], b_bs=params["a_bs"], tr=1)
    rg = _row_groups(M)
    grid = (_ceil(N, MATMUL_COLS), _ceil(M, 8 * rg), shape.batch)
    inv = grid[0] * grid[1] * grid[2] * 8
    if variant == "sg8_vec4":
        kernel = gpu.kernel("matmul_subgroup.wgsl", entry + "_sg8_vec4", RG=rg)
        return plan.add(kernel, grid, params, a4=a, b4=b, y=y, z=z).note(invocations=inv, serial=serial, work=work)
    kernel = gpu.kernel("matmul_subgroup.wgsl", entry + "_sg8", RG=rg)
    return plan.add(kernel, grid, params, a=a, b=b, y=y, z=z).note(invocations=inv, serial=serial, work=work)


def _row_groups(M: int) -> int:
    """sg8: RG for an output of M rows: the smallest tile height 8·RG that is not mostly padding."""
    return next(rg for rg in MATMUL_ROW_GROUPS if 8 * rg >= M or rg == MATMUL_ROW_GROUPS[-1])


def _padded(M: int, N: int) -> int:
    """Outputs computed (including edge padding) by the sg8 kernels for an M×N product."""
    rows = 8 * _row_groups(M)
    return _ceil(M, rows) * rows * _ceil(N, MATMUL_COLS) * MATMUL_COLS


def matmul_forward(plan: Plan, x: Range, w: Range, y: Range, M: int, N: int, K: int, *,
                   accumulate=False, alpha=1.0, beta=None, z=None, ldx=None, ldw=None, ldy=None, ldz=None,
                   batch=1, x_bs=0, w_bs=0, y_bs=0, z_bs=0, variant=None, splits=None):
    """y[M,N] (+)= x[M,K] · w[N,K]ᵀ — a linear layer's forward."""
    ldx, ldw, ldy = ldx or K, ldw or K, ldy or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_forward", x, w, y, M, N, K, a_shape=(M, K), b_shape=(N, K),
                   lda=ldx, ldb=ldw, ldy=ldy, batch=batch, a_bs=x_bs, b_bs=w_bs, y_bs=y_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or ldy, z_bs=z_bs, variant=variant, splits=splits,
                   vec4_ok=K % 4 == 0)


def matmul_backward_input(plan: Plan, dy: Range, w: Range, dx: Range, M: int, N: int, K: int, *,
                          accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldw=None, lddx=None, ldz=None,
                          batch=1, dy_bs=0, w_bs=0, dx_bs=0, z_bs=0, variant=None, splits=None):
    """dx[M,N] (+)= dy[M,K] · w[K,N] — input gradient of y = x·wᵀ (K = out features, N = in features)."""
    lddy, ldw, lddx = lddy or K, ldw or N, lddx or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_input", dy, w, dx, M, N, K, a_shape=(M, K), b_shape=(K, N),
                   lda=lddy, ldb=ldw, ldy=lddx, batch=batch, a_bs=dy_bs, b_bs=w_bs, y_bs=dx_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddx, z_bs=z_bs, variant=variant, splits=splits,
                   vec4_ok=ldw >= _ceil(N, 4) * 4)


def matmul_backward_weight(plan: Plan, dy: Range, x: Range, dw: Range, M: int, N: int, K: int, *,
                           accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldx=None, lddw=None, ldz=None,
                           batch=1, dy_bs=0, x_bs=0, dw_bs=0, z_bs=0, variant=None, splits=None):
    """dw[M,N] (+)= dy[K,M]ᵀ · x[K,N] — weight gradient of y = x·wᵀ (K = rows of the batch)."""
    lddy, ldx, lddw = lddy or M, ldx or N, lddw or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_weight", dy, x, dw, M, N, K, a_shape=(K, M), b_shape=(K, N),
                   lda=lddy, ldb=ldx, ldy=lddw, batch=batch, a_bs=dy_bs, b_bs=x_bs, y_bs=dw_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddw, z_bs=z_bs, variant=variant, splits=splits,
                   vec4_ok=lddy >= _ceil(M, 4) * 4 and ldx >= _ceil(N, 4) * 4)
