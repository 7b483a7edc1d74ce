"""matmul.wgsl and matmul_subgroup.wgsl: the three bias-free products of a linear layer y = x·Wᵀ.

    matmul_forward          y[M,N]  (+)= x[M,K] · w[N,K]ᵀ
    matmul_backward_input   dx[M,N] (+)= dy[M,K] · w[K,N]
    matmul_backward_weight  dw[M,N] (+)= dy[K,M]ᵀ · x[K,N]
    with the epilogue Y = alpha·(product) + beta·Z, batched (grid z) and optionally split along K.

The variant table (`FAMILY`): every variant computes the same products and passes the same
goldens; they differ in how work maps onto a device.

    ref            one output per invocation, 16×16 workgroups: the obviously correct version
    sg8, sg8_vec4  lavapipe's: 8-lane workgroups sharing rows of A through subgroup broadcasts
                   (needs the 'subgroup' feature; matmul_subgroup.wgsl)
    tile4x4[_vec4] 64-invocation workgroups, a 4×4 register block per invocation
    tile8x4[_vec4] 64-invocation workgroups, an 8×4 register block per invocation
    wgmem          256-invocation workgroups sharing 64×16 tiles staged in workgroup memory
    (tile*, wgmem take splits ≥ 1; *_vec4 need aligned operands whose rows hold whole vec4s)

Split-K (splits > 1): partial sums over chunks of K go to the device's scratch buffer, then
`matmul_splitk_reduce` adds them in a fixed order (bit-identical run to run) and applies the
epilogue.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..gpu import GPUError, Plan, Range
from . import (GPU_MAX_SERIAL, GPU_MIN_INVOCATIONS, HEAVY_WORK, MAX_LOOP, Choice, Family, Geometry, Variant, ceil_div,
               choose, need)

FORMS = ("matmul_forward", "matmul_backward_input", "matmul_backward_weight")
SG_COLS = 64  # sg8: output columns per workgroup (8 lanes × 8)
SG_ROW_GROUPS = (1, 2, 4)  # sg8: RG, rows per workgroup = 8·RG (fewer for short outputs)
SPLITK_REDUCE_WG = 64
REF_MAX_WORK = 1 << 20  # `ref` is a timing candidate only for products this small


def _extent(rows: int, cols: int, ld: int, batch: int, bs: int) -> int:
    return (batch - 1) * bs + (rows - 1) * ld + cols


def split_k(K: int, splits: int) -> tuple[int, int]:
    """(kc, S): chunks of kc values of k (a multiple of 4), S = ceil(K/kc) of them (≤ splits)."""
    kc = ceil_div(ceil_div(K, max(1, splits)), 4) * 4
    return kc, ceil_div(K, kc)


@dataclass(frozen=True)
class MatmulShape:
    """What a choice is keyed on: the product, its sizes and which load widths its layout allows."""
    form: str  # one of FORMS
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


# ------------------------------------------------------------------------------------ geometries

class RefGeometry(Geometry):
    """One output per invocation (x → n, y → m)."""

    def grid(self, shape, splits):
        return ceil_div(shape.N, 16), ceil_div(shape.M, 16), shape.batch

    def invocations(self, shape, splits):
        return shape.M * shape.N * shape.batch

    def serial(self, shape, kc):
        return shape.K

    def add(self, plan, variant, shape, operands, params, splits, constants=None):
        kc, S = split_k(shape.K, splits)
        params.update(batch=shape.batch, splits=S, kc=kc)
        return plan.add(variant.kernel(plan.gpu, shape.form, **(constants or {})), self.grid(shape, S), params,
                        **variant.bind(operands)).note(invocations=self.invocations(shape, S),
                                                        serial=self.serial(shape, kc), work=shape.work)


def _row_groups(M: int) -> int:
    """sg8: RG for an output of M rows: the smallest tile height 8·RG that is not mostly padding."""
    return next(rg for rg in SG_ROW_GROUPS if 8 * rg >= M or rg == SG_ROW_GROUPS[-1])


def _sg_padded(M: int, N: int) -> int:
    """Outputs computed (including edge padding) by the sg8 kernels for an M×N product."""
    rows = 8 * _row_groups(M)
    return ceil_div(M, rows) * rows * ceil_div(N, SG_COLS) * SG_COLS


class SubgroupGeometry(Geometry):
    """8-lane workgroups, 8·RG rows × 64 columns each; forward swaps its operands for narrow outputs."""

    def grid(self, shape, splits):
        return ceil_div(shape.N, SG_COLS), ceil_div(shape.M, 8 * _row_groups(shape.M)), shape.batch

    def invocations(self, shape, splits):
        gx, gy, gz = self.grid(shape, splits)
        return gx * gy * gz * 8

    def serial(self, shape, kc):
        return shape.K if shape.form == "matmul_backward_weight" else ceil_div(shape.K, 4)

    def add(self, plan, variant, shape, operands, params, splits, constants=None):
        # forward is symmetric in its operands (y = a·bᵀ, yᵀ = b·aᵀ): for narrow outputs (the decoder's
        # A+1 columns) swap them and store transposed, so the 64-column side of the tile covers M
        M, N = shape.M, shape.N
        if shape.form == "matmul_forward" and _sg_padded(N, M) < _sg_padded(M, N):
            operands = dict(operands, a=operands["b"], b=operands["a"])
            params.update(M=N, N=M, lda=params["ldb"], ldb=params["lda"], a_bs=params["b_bs"], b_bs=params["a_bs"],
                          tr=1)
            M, N = N, M
        rg = _row_groups(M)
        grid = (ceil_div(N, SG_COLS), ceil_div(M, 8 * rg), shape.batch)
        kernel = plan.gpu.kernel(variant.file, variant.entry_for(shape.form), RG=rg, **(constants or {}))
        return plan.add(kernel, grid, params, **variant.bind(operands)).note(
            invocations=grid[0] * grid[1] * grid[2] * 8, serial=self.serial(shape, shape.K), work=shape.work)


class TileGeometry(Geometry):
    """8×8 workgroups, a rows×4 register block per invocation: 32·rows/4 rows × 32 columns a workgroup."""

    def __init__(self, rows: int):
        self.rows = rows

    def grid(self, shape, splits):
        return ceil_div(shape.N, 32), ceil_div(shape.M, 8 * self.rows), shape.batch * splits

    def invocations(self, shape, splits):
        return ceil_div(shape.M, self.rows) * ceil_div(shape.N, 4) * shape.batch * splits

    def serial(self, shape, kc):
        return ceil_div(kc, 4)

    def add(self, plan, variant, shape, operands, params, splits, constants=None):
        return _add_blocked(self, plan, variant, shape, operands, params, splits, constants or {})


class WgmemGeometry(Geometry):
    """16×16 workgroups sharing 64×16 tiles in workgroup memory; a 4×4 block per invocation."""

    def grid(self, shape, splits):
        return ceil_div(shape.N, 64), ceil_div(shape.M, 64), shape.batch * splits

    def invocations(self, shape, splits):
        return ceil_div(shape.M, 4) * ceil_div(shape.N, 4) * shape.batch * splits

    def serial(self, shape, kc):
        return ceil_div(kc, 16) * 16

    def loops(self, serial):
        return serial // 16 * 17  # a stage loads, then 16 updates

    def add(self, plan, variant, shape, operands, params, splits, constants=None):
        return _add_blocked(self, plan, variant, shape, operands, params, splits, constants or {})


def _add_blocked(geo, plan, variant, shape, operands, params, splits, constants):
    """The tile and wgmem kernels: one dispatch, plus the split-K reduction when K is split."""
    kc, S = split_k(shape.K, splits)
    params.update(batch=shape.batch, splits=S, kc=kc)
    part = plan.gpu.scratch(S * shape.batch * shape.M * shape.N) if S > 1 else None
    plan.add(variant.kernel(plan.gpu, shape.form, **constants), geo.grid(shape, S), params, part=part,
             **variant.bind(operands)).note(invocations=geo.invocations(shape, S), serial=geo.serial(shape, kc),
                                            work=shape.work)
    if S > 1:
        matmul_splitk_reduce(plan, part, operands["y"], operands["z"], params, shape.M, shape.N, shape.batch, S,
                             constants)
    return plan


_VEC4_HINT = ("needs 16-byte aligned operands whose strides are multiples of 4 and whose rows hold whole vec4s; "
              "use its scalar sibling")
_SG_VEC4_HINT = ("needs 16-byte aligned operands whose strides are multiples of 4 and whose rows hold whole vec4s "
                 "(forward: also K % 4 == 0); use variant='sg8'")
_VEC4_OPERANDS = (("a", "a4"), ("b", "b4"))


def _tile(base: str, rows: int, vec4: bool) -> Variant:
    """tile4x4 / tile8x4 (rows × 4 outputs per invocation), with scalar or vec4 loads."""
    return Variant("matmul", base + ("_vec4" if vec4 else ""), "matmul.wgsl", "{form}_tile", (8, 8, 1), (rows, 4),
                   TileGeometry(rows), constants=(("BR", rows // 4), ("VEC4", int(vec4))), splitk=True,
                   layout="vec4" if vec4 else None, layout_hint=_VEC4_HINT, base=base,
                   bindings=_VEC4_OPERANDS if vec4 else (), unbound=("a", "b") if vec4 else ("a4", "b4"))


# Subgroup sizes 4 to 128 (Mali/SwiftShader 4, lavapipe 8, Intel 8–32, Apple and NVIDIA 32, AMD 32/64,
# some 128): only sg8 and sg8_vec4 use subgroup operations. Their 8-invocation workgroup shares rows of A
# with subgroupBroadcast only when the subgroup is exactly 8 lanes wide, i.e. the workgroup is one whole
# subgroup; at any other size (4: two subgroups per workgroup; 16–128: one partial subgroup) a uniform
# branch takes the per-lane path, which uses no subgroup operation, so the sums are the same at every
# size (tested at 4 on SwiftShader and on llvmpipe with 128-bit SIMD, at 8 on lavapipe). The static
# default picks them only where the subgroup is 8 wide; the tuner may still time them anywhere.
# Every other variant uses no subgroup operation at all.
VARIANTS = (
    Variant("matmul", "ref", "matmul.wgsl", "{form}_ref", (16, 16, 1), (1, 1), RefGeometry(),
            constants=(("WG_X", 16), ("WG_Y", 16)), max_work=REF_MAX_WORK),
    Variant("matmul", "sg8", "matmul_subgroup.wgsl", "{form}_sg8", (8, 1, 1), (8, 8), SubgroupGeometry(),
            features=("subgroup",), base="sg8"),
    Variant("matmul", "sg8_vec4", "matmul_subgroup.wgsl", "{form}_sg8_vec4", (8, 1, 1), (8, 8), SubgroupGeometry(),
            features=("subgroup",), layout="sg_vec4", layout_hint=_SG_VEC4_HINT, base="sg8", bindings=_VEC4_OPERANDS),
    _tile("tile4x4", 4, False),
    _tile("tile4x4", 4, True),
    _tile("tile8x4", 8, False),
    _tile("tile8x4", 8, True),
    Variant("matmul", "wgmem", "matmul.wgsl", "{form}_wgmem", (16, 16, 1), (4, 4), WgmemGeometry(), splitk=True),
)
BY_NAME = {v.name: v for v in VARIANTS}


def gpu_splits(variant: Variant, shape: MatmulShape) -> int:
    """Splits of K the GPU rule uses: none for light products; else the fewest that give a heavy
    product >= GPU_MIN_INVOCATIONS invocations and <= GPU_MAX_SERIAL loop iterations per invocation."""
    if not variant.splitk or shape.work < HEAVY_WORK:
        return 1
    geo = variant.geometry
    for s in range(1, ceil_div(shape.K, 4) + 1):
        kc, S = split_k(shape.K, s)
        if geo.invocations(shape, S) >= GPU_MIN_INVOCATIONS and geo.serial(shape, kc) <= GPU_MAX_SERIAL:
            return s
    return ceil_div(shape.K, 4)


def _widest(base: str, shape: MatmulShape) -> Variant:
    """The variant of `base` with the widest loads this shape's layout allows (features not checked)."""
    group = [v for v in VARIANTS if (v.base or v.name) == base]
    return next(v for v in sorted(group, key=lambda v: v.layout is None) if not v.layout or getattr(shape, v.layout))


def gpu_rule(shape: MatmulShape) -> Choice:
    """The static choice for a GPU (no timing): 4×4 register tiles, vec4 loads where they apply,
    split-K where a heavy product would otherwise leave the GPU idle or loop too long."""
    v = _widest("tile4x4", shape)
    return Choice(v, gpu_splits(v, shape))


def default(shape: MatmulShape, gpu) -> Choice:
    """Without timing: lavapipe's subgroup kernels on a CPU adapter with 8-lane subgroups (the shape they
    are made for), else the GPU rule (SwiftShader's 4-lane subgroups would take their slow per-lane path)."""
    if gpu.is_cpu and gpu.has("subgroup") and gpu.subgroup_size == 8:
        return Choice(_widest("sg8", shape))
    return gpu_rule(shape)


def candidates(shape: MatmulShape, gpu) -> list[Choice]:
    """Every applicable choice worth timing: the widest loads of each base (never slower), each
    split-K variant also with the GPU rule's splits, a variant with max_work (`ref`) only below it."""
    out = []
    for base in dict.fromkeys(v.base or v.name for v in VARIANTS):
        v = _widest(base, shape)
        if v.unavailable(shape, gpu) or (v.max_work is not None and shape.work > v.max_work):
            continue
        out.append(Choice(v))
        if (s := gpu_splits(v, shape)) > 1:
            out.append(Choice(v, s))
    return out


FAMILY = Family("matmul", VARIANTS, default=default, gpu_rule=gpu_rule, candidates=candidates,
                rule_splits=gpu_splits)


# ------------------------------------------------------------------------------------ launchers

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

    def bench(self, gpu, choice: Choice, reps: int, bufs=None):
        """A plan of `reps` copies of this product with `choice` on scratch buffers (`bufs` = (a, b, y)
        to reuse; new zeroed ones otherwise). Returns (plan, bufs)."""
        if bufs is None:
            a = gpu.buffer(4 * (_extent(*self.a_shape, self.lda, self.batch, self.a_bs) + 4), "tune.a")
            b = gpu.buffer(4 * (_extent(*self.b_shape, self.ldb, self.batch, self.b_bs) + 4), "tune.b")
            y = gpu.buffer(4 * _extent(self.M, self.N, self.ldy, self.batch, self.y_bs), "tune.y")
            bufs = (a, b, y)
        a, b, y = bufs
        plan = gpu.plan(f"tune {self.form} {choice}")
        for _ in range(reps):
            _matmul(plan, self.form, a.range(), b.range(), y.range(), self.M, self.N, self.K,
                    a_shape=self.a_shape, b_shape=self.b_shape, lda=self.lda, ldb=self.ldb, ldy=self.ldy,
                    batch=self.batch, a_bs=self.a_bs, b_bs=self.b_bs, y_bs=self.y_bs, alpha=1.0, beta=0.0,
                    z=None, ldz=None, z_bs=0, choice=choice, form_vec4=None)
        return plan, bufs


def _choice(variant, splits) -> Choice | None:
    """A caller's explicit variant (a name or a Variant) and splits, or None to ask the chooser."""
    if variant is None:
        return None
    v = variant if isinstance(variant, Variant) else FAMILY.variant(variant)
    s = max(1, int(splits or 1))
    if s > 1 and not v.splitk:
        raise GPUError(f"split-K (splits={s}) needs one of {', '.join(x.name for x in VARIANTS if x.splitk)}, "
                       f"not {v.name!r}")
    return Choice(v, s)


def _matmul(plan: Plan, form: str, a: Range, b: Range, y: Range, M: int, N: int, K: int, *,
            a_shape, b_shape, lda, ldb, ldy, batch, a_bs, b_bs, y_bs, alpha, beta, z, ldz, z_bs, choice,
            form_vec4):
    """`form_vec4`: the form's own extra condition for sg8_vec4 (None: recompute from the layout)."""
    if min(M, N, K, batch) < 1:
        raise GPUError(f"{form}: shapes must be positive, got M={M} N={N} K={K} batch={batch}")
    label = f"{form} M={M} N={N} K={K}" + (f" batch={batch}" if batch > 1 else "")
    need(label, "a", a, _extent(*a_shape, lda, batch, a_bs))
    need(label, "b", b, _extent(*b_shape, ldb, batch, b_bs))
    need(label, "y", y, _extent(M, N, ldy, batch, y_bs))
    if z is None:
        z, ldz, z_bs = y, ldy, y_bs
    need(label, "z", z, _extent(M, N, ldz, batch, z_bs))
    aligned = (a.offset % 16 == 0 and b.offset % 16 == 0
               and all(v % 4 == 0 for v in (lda, ldb, a_bs, b_bs))
               and a.count >= _extent(a_shape[0], ceil_div(a_shape[1], 4) * 4, lda, batch, a_bs)
               and b.count >= _extent(b_shape[0], ceil_div(b_shape[1], 4) * 4, ldb, batch, b_bs))
    if form_vec4 is None:
        form_vec4 = {"matmul_forward": K % 4 == 0, "matmul_backward_input": ldb >= ceil_div(N, 4) * 4,
                     "matmul_backward_weight": lda >= ceil_div(M, 4) * 4 and ldb >= ceil_div(N, 4) * 4}[form]
    shape = MatmulShape(form, M, N, K, batch, aligned, aligned and form_vec4)
    gpu = plan.gpu
    if choice is None:
        call = MatmulCall(form, M, N, K, tuple(a_shape), tuple(b_shape), lda, ldb, ldy, batch, a_bs, b_bs, y_bs)
        choice = choose(gpu, FAMILY, shape, lambda c, reps, bufs: call.bench(gpu, c, reps, bufs))
    variant, splits = choice.variant, choice.splits
    why = variant.unavailable(shape, gpu)
    if why:
        raise GPUError(f"{label}: {why}")
    kc, _ = split_k(K, splits)
    serial = variant.geometry.serial(shape, kc)
    loops = variant.geometry.loops(serial)
    if loops > MAX_LOOP:
        raise GPUError(f"{label}: K={K} needs {serial} loop iterations per invocation with {variant.name}, more than "
                       f"lavapipe runs ({MAX_LOOP}); split K (splits > 1) or into several accumulating products")
    params = dict(M=M, N=N, K=K, lda=lda, ldb=ldb, ldy=ldy, ldz=ldz,
                  a_bs=a_bs, b_bs=b_bs, y_bs=y_bs, z_bs=z_bs, alpha=alpha, beta=beta)
    z, constants = _epilogue_input(label, params, a, b, y, z)
    return variant.geometry.add(plan, variant, shape, dict(a=a, b=b, y=y, z=z), params, splits, constants)


def _epilogue_input(label: str, params: dict, a: Range, b: Range, y: Range, z: Range) -> tuple[Range | None, dict]:
    """The range to bind as z (None: unbound) and the epilogue's override constants. The operands and z
    are bound read-only and y writable, and WebGPU binds a buffer in one dispatch either read-only or
    writable, so none of them may share y's buffer; Z = Y (accumulating in place) is read through y
    instead (Z_IS_Y = 1, a pipeline of its own: epilogue.wgsl)."""
    for name, r in (("a", a), ("b", b)):
        if r.buffer is y.buffer:
            raise GPUError(f"{label}: operand {name} and the output y are both in buffer {y.buffer.label!r}; a "
                           f"dispatch binds a buffer either read-only or writable (WebGPU): keep the output in "
                           f"another buffer")
    if params["beta"] == 0:
        return None, {}  # Z is not read
    if z.buffer is y.buffer:
        if z.offset != y.offset:
            raise GPUError(f"{label}: the epilogue's z starts at byte {z.offset} of {y.buffer.label!r}, the output y at "
                           f"byte {y.offset} of the same buffer; z must be y itself (accumulate) or in another buffer")
        return None, {"Z_IS_Y": 1}
    return z, {}


def matmul_splitk_reduce(plan: Plan, part: Range, y: Range, z: Range | None, params: dict, M: int, N: int, batch: int,
                         S: int, constants=None):
    """y = alpha·Σ_s part[s] + beta·z for every output, s in order (the second pass of split-K)."""
    need(f"matmul_splitk_reduce M={M} N={N} S={S}", "part", part, S * batch * M * N)
    blocks = ceil_div(M * N, SPLITK_REDUCE_WG)
    gx = min(blocks, 32768)
    kernel = plan.gpu.kernel("matmul.wgsl", "matmul_splitk_reduce", **(constants or {}))
    return plan.add(kernel, (gx, ceil_div(blocks, gx), batch), params, part=part, y=y, z=z).note(
        invocations=M * N * batch, serial=S, work=S * M * N * batch)


def matmul_forward(plan: Plan, x: Range, w: Range, y: Range, M: int, N: int, K: int, *,
                   accumulate=False, alpha=1.0, beta=None, z=None, ldx=None, ldw=None, ldy=None, ldz=None,
                   batch=1, x_bs=0, w_bs=0, y_bs=0, z_bs=0, variant=None, splits=None):
    """y[M,N] (+)= x[M,K] · w[N,K]ᵀ — a linear layer's forward. `variant` (a name from the table)
    and `splits` pin the implementation; None asks gpu.chooser."""
    ldx, ldw, ldy = ldx or K, ldw or K, ldy or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_forward", x, w, y, M, N, K, a_shape=(M, K), b_shape=(N, K),
                   lda=ldx, ldb=ldw, ldy=ldy, batch=batch, a_bs=x_bs, b_bs=w_bs, y_bs=y_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or ldy, z_bs=z_bs, choice=_choice(variant, splits),
                   form_vec4=K % 4 == 0)


def matmul_backward_input(plan: Plan, dy: Range, w: Range, dx: Range, M: int, N: int, K: int, *,
                          accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldw=None, lddx=None, ldz=None,
                          batch=1, dy_bs=0, w_bs=0, dx_bs=0, z_bs=0, variant=None, splits=None):
    """dx[M,N] (+)= dy[M,K] · w[K,N] — input gradient of y = x·wᵀ (K = out features, N = in features)."""
    lddy, ldw, lddx = lddy or K, ldw or N, lddx or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_input", dy, w, dx, M, N, K, a_shape=(M, K), b_shape=(K, N),
                   lda=lddy, ldb=ldw, ldy=lddx, batch=batch, a_bs=dy_bs, b_bs=w_bs, y_bs=dx_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddx, z_bs=z_bs, choice=_choice(variant, splits),
                   form_vec4=ldw >= ceil_div(N, 4) * 4)


def matmul_backward_weight(plan: Plan, dy: Range, x: Range, dw: Range, M: int, N: int, K: int, *,
                           accumulate=False, alpha=1.0, beta=None, z=None, lddy=None, ldx=None, lddw=None, ldz=None,
                           batch=1, dy_bs=0, x_bs=0, dw_bs=0, z_bs=0, variant=None, splits=None):
    """dw[M,N] (+)= dy[K,M]ᵀ · x[K,N] — weight gradient of y = x·wᵀ (K = rows of the batch)."""
    lddy, ldx, lddw = lddy or M, ldx or N, lddw or N
    beta = (1.0 if accumulate else 0.0) if beta is None else beta
    return _matmul(plan, "matmul_backward_weight", dy, x, dw, M, N, K, a_shape=(K, M), b_shape=(K, N),
                   lda=lddy, ldb=ldx, ldy=lddw, batch=batch, a_bs=dy_bs, b_bs=x_bs, y_bs=dw_bs,
                   alpha=alpha, beta=beta, z=z, ldz=ldz or lddw, z_bs=z_bs, choice=_choice(variant, splits),
                   form_vec4=lddy >= ceil_div(M, 4) * 4 and ldx >= ceil_div(N, 4) * 4)
