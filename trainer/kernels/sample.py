"""sample.wgsl: sample every action head of N agents from the decoder output during the rollout.

    sample_actions   per agent: each head's action (inverse-CDF over the masked softmax, or a
                     Gaussian sample), Σ_h log p(a_h) and the value; written for the env
                     (actions_step) and the rollout (actions; the log-prob and value columns of
                     transitions, at step t)
"""
from __future__ import annotations

from ..gpu import Plan, Range
from . import TR_WIDTH, ceil_div, need, need_heads

WG = 64


def sample_actions(plan: Plan, out: Range, out_stride: int, act_sizes: Range, globals_: Range, actions_step: Range,
                   actions: Range, transitions: Range, N: int, T: int, spec,
                   logstd: Range | None = None, mask: Range | None = None):
    """Sample every head of N agents; out [N, out_stride]; mask [N, mask_words] u32 bits (None: all legal);
    globals [4] u32 = (t, rng_step, seed, flags); actions [N·T, K] and transitions [N·T, TR_WIDTH] are
    the rollout's rows of these agents."""
    label = f"sample_actions N={N}"
    need(label, "out", out, (N - 1) * out_stride + spec.out)
    need(label, "actions_step", actions_step, N * spec.K)
    need(label, "actions", actions, N * T * spec.K)
    need(label, "transitions", transitions, N * T * TR_WIDTH)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=N)
    k = plan.gpu.kernel("sample.wgsl", "sample_actions", WG=WG)
    return plan.add(k, ceil_div(N, WG), dict(N=N, K=spec.K, A=spec.A, out_stride=out_stride, T=T, W=spec.mask_words,
                                             masked=int(mask is not None)),
                    out=out, act_sizes=act_sizes, globals=globals_, logstd=logstd, mask=mask,
                    actions_step=actions_step, actions=actions, transitions=transitions).note(
        invocations=N, serial=3 * spec.A, work=N * spec.A)
