"""advantage.wgsl: GAE / V-trace for one minibatch, from the live values.

    compute_advantage   one invocation per agent row, the recursion running backwards over T;
                        V-trace's importance ratio uses the live log-probability of the stored action
"""
from __future__ import annotations

from ..gpu import Plan, Range
from . import TR_WIDTH, ceil_div, need, need_heads

WG = 64


def compute_advantage(plan: Plan, *, out: Range, out_stride: int, actions: Range, transitions: Range,
                      act_sizes: Range, R: int, T: int, spec, cfg, logstd: Range | None = None,
                      mask: Range | None = None):
    """GAE / V-trace for R rows × T steps; `cfg` is a LearnerConfig (gamma, gae_lambda, vtrace, clips).
    Reads the old log-prob, reward and terminal columns of transitions [R·T, TR_WIDTH] and writes its
    advantage and return columns.

    logstd [Kc] and the bit-packed mask [R·T, mask_words] feed V-trace's live log-probabilities."""
    label = f"compute_advantage R={R} T={T}"
    for name, r, n in (("out", out, (R * T - 1) * out_stride + spec.out), ("actions", actions, R * T * spec.K),
                       ("transitions", transitions, R * T * TR_WIDTH)):
        need(label, name, r, n)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=R * T)
    k = plan.gpu.kernel("advantage.wgsl", "compute_advantage", WG=WG)
    vt = int(cfg.vtrace)
    return plan.add(k, ceil_div(R, WG),
                    dict(R=R, T=T, K=spec.K, A=spec.A, out_stride=out_stride, W=spec.mask_words,
                         masked=int(mask is not None), vtrace=vt, gamma=cfg.gamma, rho_clip=cfg.vtrace_rho_clip,
                         c_clip=cfg.vtrace_c_clip, **{"lambda": cfg.gae_lambda}),
                    out=out, actions=actions, transitions=transitions, act_sizes=act_sizes, logstd=logstd,
                    mask=mask).note(
        invocations=R, serial=T * (1 + 3 * spec.A * vt), work=R * T * (1 + spec.A * vt))
