"""advantage.wgsl: GAE and V-trace from the live values, plain and with masked/Gaussian heads.
"""
from __future__ import annotations

import torch

from golden.ref.common import LEARN, f32, family, rand, write
from golden.ref.mingru import rand_terminals
from golden.ref.heads import (fake_rollout_outputs, heads_logp_entropy, heads_logp_entropy_any, rand_mask,
                              sample_legal)


def advantage_ref(values, rewards, terminals, ratio, cfg):
    """GAE (vtrace=0: ρ = c = 1) or V-trace over [R, T]; A_{T−1} = 0; rewards clamped to [−1, 1]."""
    R, T = values.shape
    adv = torch.zeros_like(values)
    for t in range(T - 2, -1, -1):
        nd = 1 - terminals[:, t + 1]
        rho = ratio[:, t].clamp(max=cfg["vtrace_rho_clip"]) if cfg["vtrace"] else 1.0
        c = ratio[:, t].clamp(max=cfg["vtrace_c_clip"]) if cfg["vtrace"] else 1.0
        delta = rho * (rewards[:, t + 1].clamp(-1, 1) + cfg["gamma"] * values[:, t + 1] * nd - values[:, t])
        adv[:, t] = delta + cfg["gamma"] * cfg["gae_lambda"] * c * nd * adv[:, t + 1]
    return adv, values + adv

ADVANTAGE_CASES = {  # (R, T, heads, vtrace)
    "gae_t64": (3, 64, (3, 3), 0),
    "vtrace_t17": (5, 17, (2, 3, 4), 1),
    "gae_t1": (2, 1, (3, 3), 0),
    "vtrace_t2": (67, 2, (3,), 1),
}


@family
def advantage(gen):
    """GAE / V-trace per minibatch row from live values (decoder column A) and the live ratio."""
    tensors, cases = {}, {}
    for name, (R, T, heads, vtrace) in ADVANTAGE_CASES.items():
        cfg = dict(LEARN, vtrace=vtrace, vtrace_rho_clip=1.0, vtrace_c_clip=0.9 if vtrace else 1.0)
        A = sum(heads)
        out, acts, logp_old = fake_rollout_outputs(gen, R * T, heads)
        rewards = rand(gen, R * T, scale=2.0)  # beyond ±1: exercises the clamp
        term = rand_terminals(gen, R, T).reshape(-1)
        logp, _ = heads_logp_entropy(out[:, :A], acts, heads)
        ratio = (logp - logp_old).exp()
        adv, ret = advantage_ref(out[:, A].reshape(R, T), rewards.reshape(R, T), term.reshape(R, T),
                                 ratio.reshape(R, T), cfg)
        for key, t in (("out", out), ("actions", acts), ("logprobs", logp_old), ("rewards", rewards),
                       ("terminals", term), ("advantages", adv), ("returns", ret)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"R": R, "T": T, "act_sizes": list(heads), **cfg}
    write("advantage", tensors, "advantage: GAE/V-trace (docs/design.md) over [R,T] rows; A_{T-1}=0; returns = V + A", cases)

ADVANTAGE_HEADS_CASES = {  # (R, T, heads, masked): V-trace, whose ratio needs the live log-probabilities
    "vtrace_hybrid_t17": (5, 17, (3, 1, 2, 1), True),
    "vtrace_masked_t9": (3, 9, (4,), True),
    "vtrace_continuous_t6": (2, 6, (1, 1), False),
}


@family
def advantage_heads(gen):
    """V-trace advantages whose live ratio comes from masked / continuous / hybrid heads."""
    tensors, cases = {}, {}
    for name, (R, T, heads, masked) in ADVANTAGE_HEADS_CASES.items():
        cfg = dict(LEARN, vtrace=1, vtrace_rho_clip=1.0, vtrace_c_clip=0.9)
        A, Kc, M = sum(heads), sum(1 for h in heads if h == 1), R * T
        out = rand(gen, M, A + 1, scale=2.0)
        mask = rand_mask(gen, M, heads) if masked else None
        logstd = rand(gen, 1, Kc, scale=0.8) if Kc else None
        acts = sample_legal(gen, M, heads, mask, out, logstd)
        logp, _ = heads_logp_entropy_any(out[:, :A], acts, heads, logstd, mask)
        logp_old = (logp + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)
        rewards = rand(gen, M, scale=2.0)
        term = rand_terminals(gen, R, T).reshape(-1)
        ratio = (logp - logp_old).exp()
        adv, ret = advantage_ref(out[:, A].reshape(R, T), rewards.reshape(R, T), term.reshape(R, T),
                                 ratio.reshape(R, T), cfg)
        items = [("out", out), ("actions", acts), ("logprobs", logp_old), ("rewards", rewards), ("terminals", term),
                 ("advantages", adv), ("returns", ret)]
        if logstd is not None:
            items.append(("logstd", logstd))
        for key, t in items:
            tensors[f"{name}/{key}"] = f32(t)
        if mask is not None:
            tensors[f"{name}/mask"] = mask.to(torch.uint8).numpy()
        cases[name] = {"R": R, "T": T, "act_sizes": list(heads), "masked": masked, **cfg}
    write("advantage_heads", tensors, "V-trace over [R,T] rows with the live ratio from masked/continuous/hybrid "
          "heads; A_{T-1}=0; returns = V + A", cases)
