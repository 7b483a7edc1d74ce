"""muon.wgsl: PufferLib 5.0's optimizer steps around the Newton–Schulz products (which are matmuls).

    grad_norm_partial, grad_norm      ‖g‖₂ of every gradient, two-pass and in a fixed order; the clip
    muon_momentum                     g ← clip·g; m ← μ·m + g; u = g + μ·m (Nesterov, updated m)
    matrix_norms_partial, matrix_norms  ‖u‖_F per matrix, two-pass and in a fixed order
    muon_normalize                    X = u / max(‖u‖_F, 1e−7) per matrix
    muon_update                       W ← W − lr·√max(1, rows/cols)·X per matrix

`mats` [count, 4] u32 holds (offset, size, rows, cols) of every matrix of the flat layout; the
launchers take the shapes they need (n floats, count matrices, the biggest matrix's size).
"""
from __future__ import annotations

from ..gpu import Plan, Range
from . import ceil_div

CHUNK = 4096  # floats per workgroup in the first pass of the two-pass norms
PER_THREAD = 16  # squares each invocation adds in a first pass (CHUNK = PER_THREAD · WG_REDUCE)
WG_REDUCE = CHUNK // PER_THREAD
WG = 64


def chunks(n: int) -> int:
    """First-pass workgroups over n floats."""
    return ceil_div(n, CHUNK)


def grad_norm_partial(plan: Plan, *, grads: Range, partials: Range, params: dict):
    n = params["n"]
    k = plan.gpu.kernel("muon.wgsl", "grad_norm_partial", WG_REDUCE=WG_REDUCE)
    return plan.add(k, chunks(n), dict(params, chunks=chunks(n)), grads=grads, partials=partials).note(
        invocations=min(n, chunks(n) * WG_REDUCE), serial=PER_THREAD, work=n)


def grad_norm(plan: Plan, *, partials: Range, scalars: Range, params: dict):
    c = chunks(params["n"])
    k = plan.gpu.kernel("muon.wgsl", "grad_norm", WG_REDUCE=WG_REDUCE)
    return plan.add(k, 1, dict(params, chunks=c), partials=partials, scalars=scalars).note(
        serial=ceil_div(c, WG_REDUCE) + 8, work=c)


def muon_momentum(plan: Plan, *, grads: Range, scalars: Range, momentum: Range, update: Range, params: dict):
    n = params["n"]
    k = plan.gpu.kernel("muon.wgsl", "muon_momentum", WG=WG)
    return plan.add(k, ceil_div(n, WG), params, grads=grads, scalars=scalars, momentum=momentum,
                    update=update).note(invocations=n, serial=1, work=n)


def matrix_norms_partial(plan: Plan, *, mats: Range, update: Range, partials: Range, biggest: int, params: dict):
    n, count, c = params["n"], params["count"], chunks(biggest)
    k = plan.gpu.kernel("muon.wgsl", "matrix_norms_partial", WG_REDUCE=WG_REDUCE)
    return plan.add(k, (c, count), dict(params, chunks=c), mats=mats, update=update, partials=partials).note(
        invocations=min(n, c * count * WG_REDUCE), serial=PER_THREAD, work=n)


def matrix_norms(plan: Plan, *, partials: Range, norms: Range, biggest: int, params: dict):
    count, c = params["count"], chunks(biggest)
    k = plan.gpu.kernel("muon.wgsl", "matrix_norms", WG_REDUCE=WG_REDUCE)
    return plan.add(k, count, dict(params, chunks=c), partials=partials, norms=norms).note(
        serial=ceil_div(c, WG_REDUCE) + 8, work=count * c)


def muon_normalize(plan: Plan, *, mats: Range, update: Range, norms: Range, biggest: int, params: dict):
    k = plan.gpu.kernel("muon.wgsl", "muon_normalize", WG=WG)
    return plan.add(k, (ceil_div(biggest, WG), params["count"]), params, mats=mats, update=update,
                    norms=norms).note(invocations=params["n"], serial=1, work=params["n"])


def muon_update(plan: Plan, *, mats: Range, globals_: Range, update: Range, weights: Range, biggest: int,
                params: dict):
    k = plan.gpu.kernel("muon.wgsl", "muon_update", WG=WG)
    return plan.add(k, (ceil_div(biggest, WG), params["count"]), params, mats=mats, globals=globals_, update=update,
                    weights=weights).note(invocations=params["n"], serial=1, work=params["n"])
