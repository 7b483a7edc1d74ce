"""ppo.wgsl: the fused PPO loss with its analytic gradient, and the deterministic reductions of its outputs.

    ppo_loss             per minibatch element: the clipped policy loss, clipped value loss and
                         entropy; writes dL/dlogits, dL/dmeans, dL/dvalue into dout and a stats row:
                         the logged statistics (metrics.PPO_STATS columns), then the per-element
                         logstd gradient of each continuous head
    reduce_stats         column means of the statistics, fixed summation order
    reduce_logstd_grad   the logstd gradient summed over the minibatch, fixed summation order
"""
from __future__ import annotations

from ..gpu import Plan, Range
from ..metrics import PPO_STATS
from . import TR_WIDTH, ceil_div, need, need_heads

WG = 64
WG_REDUCE = 256


def stats_width(spec) -> int:
    """Columns of a ppo_loss stats row: the logged statistics, then one logstd gradient per continuous head."""
    return len(PPO_STATS) + spec.Kc


def ppo_loss(plan: Plan, *, out: Range, out_stride: int, actions: Range, transitions: Range, act_sizes: Range,
             dout: Range, stats: Range, M: int, spec, cfg, logstd: Range | None = None, mask: Range | None = None):
    """Fused PPO loss over M elements (their old log-prob, value, advantage and return read from
    transitions [M, TR_WIDTH]): dout [M, out_stride] and per-element stats [M, stats_width(spec)].
    `cfg` is a LearnerConfig."""
    label = f"ppo_loss M={M}"
    for name, r, n in (("out", out, (M - 1) * out_stride + spec.out), ("actions", actions, M * spec.K),
                       ("transitions", transitions, M * TR_WIDTH), ("dout", dout, M * out_stride),
                       ("stats", stats, M * stats_width(spec))):
        need(label, name, r, n)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=M)
    k = plan.gpu.kernel("ppo.wgsl", "ppo_loss", WG=WG)
    params = dict(M=M, K=spec.K, A=spec.A, out_stride=out_stride, slot=0, W=spec.mask_words,
                  masked=int(mask is not None), Kc=spec.Kc, freeze_continuous=int(cfg.freeze_continuous),
                  clip_coef=cfg.clip_coef, vf_coef=cfg.vf_coef, vf_clip_coef=cfg.vf_clip_coef, ent_coef=cfg.ent_coef)
    return plan.add(k, ceil_div(M, WG), params, out=out, actions=actions, transitions=transitions,
                    act_sizes=act_sizes, logstd=logstd, mask=mask, dout=dout, stats=stats).note(
        invocations=M, serial=8 * spec.A, work=M * spec.A)


def reduce_stats(plan: Plan, *, stats: Range, logs: Range, slot: int, M: int, Kc: int = 0):
    """logs[slot] = means of the PPO_STATS columns of stats [M, len(PPO_STATS) + Kc], in a fixed order
    (deterministic)."""
    S = len(PPO_STATS)
    need(f"reduce_stats M={M}", "stats", stats, M * (S + Kc))
    need(f"reduce_stats M={M}", "logs", logs, (slot + 1) * S)
    k = plan.gpu.kernel("ppo.wgsl", "reduce_stats", WG_REDUCE=WG_REDUCE)
    return plan.add(k, S, dict(M=M, slot=slot, Kc=Kc), stats=stats, logs=logs).note(
        serial=ceil_div(M, WG_REDUCE) + 8, work=S * M)


def reduce_logstd_grad(plan: Plan, *, stats: Range, dlogstd: Range, M: int, Kc: int):
    """dlogstd [Kc] = Σ over the minibatch of the logstd columns of stats [M, len(PPO_STATS) + Kc], in a
    fixed order (deterministic)."""
    need(f"reduce_logstd_grad M={M}", "stats", stats, M * (len(PPO_STATS) + Kc))
    need(f"reduce_logstd_grad M={M}", "dlogstd", dlogstd, Kc)
    k = plan.gpu.kernel("ppo.wgsl", "reduce_logstd_grad", WG_REDUCE=WG_REDUCE)
    return plan.add(k, Kc, dict(M=M, Kc=Kc), stats=stats, dlogstd=dlogstd).note(
        serial=ceil_div(M, WG_REDUCE) + 8, work=M * Kc)
