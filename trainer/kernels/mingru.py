"""mingru.wgsl: the MinGRU layer's elementwise part — one rollout step, the training scan and its backward.

    mingru_step           one step for N agents: state [N,H] updated in place, y [N,H]
    mingru_scan_forward   R agent rows over T steps from h0 [R,H]: hs (states) and y, [R·T, H] each
    mingru_scan_backward  dc [R·T, 3H] and the highway part of dx [R·T, H] from dy [R·T, H]

Variants (`FAMILY`), the same math:
    vec4    4 hidden units per invocation, tensors read as vec4 (16-byte aligned offsets):
            on lavapipe a load costs the same per lane whether it moves one float or four
    scalar  1 hidden unit per invocation on the f32 views of the same tensors: on a GPU the scan
            keeps R·H invocations in flight instead of R·H/4
"""
from __future__ import annotations

from dataclasses import dataclass

from ..gpu import GPUError, Plan, Range
from . import Choice, Family, Geometry, Variant, ceil_div, choose, need

MAX_SCAN_T = 4096  # the scan loops over T inside one invocation; lavapipe stops at 65,535 iterations
FORMS = ("mingru_step", "mingru_scan_forward", "mingru_scan_backward")  # the entry points (with _scalar: the scalar variant)
_F32_VIEWS = tuple((n, n + "_f") for n in ("c", "x", "h0", "dy", "state", "y", "hs", "dc", "dx", "snapshot"))


@dataclass(frozen=True)
class MingruShape:
    entry: str  # mingru_step | mingru_scan_forward | mingru_scan_backward
    R: int
    T: int
    H: int

    @property
    def work(self) -> int:
        return self.R * self.T * self.H

    def key(self) -> str:
        return f"{self.entry} R={self.R} T={self.T} H={self.H}"

    def label(self) -> str:
        return self.key()


class UnitsGeometry(Geometry):
    """`units` hidden units per invocation, `wg` invocations per workgroup along H; grid (·, R)."""

    def __init__(self, units: int, wg: int):
        self.units, self.wg = units, wg

    def grid(self, shape, splits=1):
        return ceil_div(shape.H // self.units, self.wg), shape.R, 1

    def invocations(self, shape, splits=1):
        return shape.R * shape.H // self.units

    def serial(self, shape, kc=None):
        return shape.T

    def add(self, plan, variant, shape, operands, params, splits=1):
        kernel = variant.kernel(plan.gpu, shape.entry)
        return plan.add(kernel, self.grid(shape)[:2], params, **variant.bind(operands)).note(
            invocations=self.invocations(shape), serial=self.serial(shape), work=shape.work)


VARIANTS = (
    Variant("mingru", "vec4", "mingru.wgsl", "{form}", (32, 1, 1), (1, 4), UnitsGeometry(4, 32),
            constants=(("WG", 32),)),
    Variant("mingru", "scalar", "mingru.wgsl", "{form}_scalar", (64, 1, 1), (1, 1), UnitsGeometry(1, 64),
            constants=(("WG_S", 64),), bindings=_F32_VIEWS),
)


def default(shape, gpu) -> Choice:
    return Choice(VARIANTS[0] if gpu.is_cpu else VARIANTS[1])


def gpu_rule(shape) -> Choice:
    return Choice(VARIANTS[1])


def candidates(shape, gpu) -> list[Choice]:
    return [Choice(v) for v in VARIANTS]


FAMILY = Family("mingru", VARIANTS, default=default, gpu_rule=gpu_rule, candidates=candidates)


def _add(plan: Plan, shape: MingruShape, label: str, params: dict, ranges: dict, variant, sizes: dict):
    """Add one mingru kernel: the caller's variant or gpu.chooser's (timed on scratch buffers of
    `sizes` floats per binding), its grid, and its dispatch shape."""
    gpu = plan.gpu
    if variant is None:
        def bench(choice, reps, bufs):
            if bufs is None:
                bufs = {k: gpu.buffer(4 * n, f"tune.{k}") for k, n in sizes.items()}
            p = gpu.plan(f"tune {shape.entry} {choice}")
            for _ in range(reps):
                _add(p, shape, label, params, {k: bufs[k].range() if k in bufs else None for k in ranges},
                     choice.variant, {})
            return p, bufs
        variant = choose(gpu, FAMILY, shape, bench).variant
    elif not isinstance(variant, Variant):
        variant = FAMILY.variant(variant)
    if variant.geometry.units > 1:
        for name, r in ranges.items():  # tensors are read as vec4: offsets must be 16-byte aligned
            if r is not None and name != "terminals" and r.offset % 16:
                raise GPUError(f"{label}: {name} starts at byte {r.offset} of {r.buffer.label!r}; the vec4 mingru "
                               f"kernels read vec4s and need 16-byte aligned tensors (variant='scalar' does not)")
    return variant.geometry.add(plan, variant, shape, ranges, params)


def mingru_step(plan: Plan, c: Range, x: Range, state: Range, terminals: Range, y: Range, N: int, H: int,
                snapshot: Range | None = None, variant=None):
    """One MinGRU step for N agents: state [N,H] updated in place, y [N,H]; terminals [N] reset first.
    snapshot (optional) receives the state before the step, after the reset."""
    label = f"mingru_step N={N} H={H}"
    sizes = {"c": 3 * N * H, "x": N * H, "state": N * H, "terminals": N, "y": N * H}
    if snapshot is not None:
        sizes["snapshot"] = N * H
    ranges = dict(c=c, x=x, state=state, terminals=terminals, y=y, snapshot=snapshot)  # None: a dummy
    for name, n in sizes.items():
        need(label, name, ranges[name], n)
    return _add(plan, MingruShape("mingru_step", N, 1, H), label,
                dict(R=N, T=1, H=H, snapshot=int(snapshot is not None), terminals_stride=1), ranges, variant, sizes)


def _check_scan(label, R, T, H, ranges, terminals_stride):
    if T > MAX_SCAN_T:
        raise GPUError(f"{label}: horizon T={T} exceeds {MAX_SCAN_T} (loop limit of one invocation)")
    if terminals_stride < 1:
        raise GPUError(f"{label}: terminals_stride must be at least 1, got {terminals_stride}")
    all_sizes = {"c": 3 * R * T * H, "x": R * T * H, "h0": R * H, "terminals": (R * T - 1) * terminals_stride + 1,
                 "hs": R * T * H,
                 "y": R * T * H, "dy": R * T * H, "dc": 3 * R * T * H, "dx": R * T * H}
    sizes = {n: all_sizes[n] for n in ranges}
    for name, r in ranges.items():
        need(label, name, r, sizes[name])
    return sizes


def mingru_scan_forward(plan: Plan, c: Range, x: Range, h0: Range, terminals: Range, hs: Range, y: Range,
                        R: int, T: int, H: int, variant=None, terminals_stride: int = 1):
    """Scan R agent rows over T steps from h0 [R,H]: hs (states) and y (outputs), [R·T, H] each.
    Row i's terminal flag is terminals[i·terminals_stride] (the rollout's transition rows: TR_WIDTH)."""
    label = f"mingru_scan_forward R={R} T={T} H={H}"
    ranges = dict(c=c, x=x, h0=h0, terminals=terminals, hs=hs, y=y)
    sizes = _check_scan(label, R, T, H, ranges, terminals_stride)
    return _add(plan, MingruShape("mingru_scan_forward", R, T, H), label,
                dict(R=R, T=T, H=H, terminals_stride=terminals_stride), ranges, variant, sizes)


def mingru_scan_backward(plan: Plan, c: Range, x: Range, h0: Range, terminals: Range, hs: Range, dy: Range,
                         dc: Range, dx: Range, R: int, T: int, H: int, variant=None, terminals_stride: int = 1):
    """Backward of the scan: dc [R·T, 3H] and the highway part of dx [R·T, H] from dy [R·T, H]; terminals
    as in mingru_scan_forward."""
    label = f"mingru_scan_backward R={R} T={T} H={H}"
    ranges = dict(c=c, x=x, h0=h0, terminals=terminals, hs=hs, dy=dy, dc=dc, dx=dx)
    sizes = _check_scan(label, R, T, H, ranges, terminals_stride)
    return _add(plan, MingruShape("mingru_scan_backward", R, T, H), label,
                dict(R=R, T=T, H=H, terminals_stride=terminals_stride), ranges, variant, sizes)
