"""rollout.wgsl: store one step of env data into the agent-major rollout buffers.

    rollout_store   obs, reward, terminal (and the bit-packed action mask) of every agent of a
                    step into rollout row n·T + t (obs, transitions, mask), the obs row (u32 words: float32 values, or uint8
                    values packed 4 per word) copied bit for bit and padded to obs_stride words
"""
from __future__ import annotations

from ..gpu import Plan, Range
from . import TR_WIDTH, ceil_div, need

WG = 64


def rollout_store(plan: Plan, ro, obs_step: Range, rewards_step: Range, terminals_step: Range,
                  globals_: Range, mask_step: Range | None = None, row0: int = 0, rows: int | None = None):
    """Copy one step's env data (rows agents) into rollout `ro`'s rows [row0, row0 + rows) at
    t = globals[0], in agent chunks that fit one binding. `ro` is a trainer.policy.Rollout.

    mask_step [rows, mask_words] u32 is copied too when given (otherwise the rollout mask stays as is)."""
    gpu, Dw, T, stride, W = plan.gpu, ro.spec.obs_words, ro.T, ro.obs_stride, ro.spec.mask_words
    rows = ro.N - row0 if rows is None else rows
    k = gpu.kernel("rollout.wgsl", "rollout_store", WG=WG)
    per_agent = 4 * T * stride
    chunk = max(1, (gpu.limits["max-storage-buffer-binding-size"] - 256) // per_agent)
    need("rollout_store", "obs_step", obs_step, rows * Dw)
    if mask_step is not None:
        need("rollout_store", "mask_step", mask_step, rows * W)
    pieces = [(r0 + c0, min(chunk, n0 - c0)) for r0, n0 in ro.obs_pieces(row0, rows) for c0 in range(0, n0, chunk)]
    for r, n in pieces:  # agent chunks that fit one binding and lie in one observation page
        a0 = r - row0
        plan.add(k, (ceil_div(max(stride, W), WG), n), dict(N=n, Dw=Dw, T=T, obs_stride=stride, agent0=a0, W=W,
                                                            masked=int(mask_step is not None)),
                 obs_step=obs_step, rewards_step=rewards_step, terminals_step=terminals_step, globals=globals_,
                 mask_step=mask_step, obs=ro.obs_rows(r, n),
                 transitions=ro.rows(ro.transitions, row0 + a0, n, TR_WIDTH),
                 mask=ro.rows(ro.mask, row0 + a0, n, W) if mask_step is not None else None).note(
            invocations=n * max(stride, W), serial=1, work=n * stride)
    return plan
