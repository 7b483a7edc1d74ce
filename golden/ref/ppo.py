"""ppo.wgsl: the fused PPO loss, its gradient and logged statistics, plain and with masked/Gaussian
heads.
"""
from __future__ import annotations

import torch

from golden.ref.common import LEARN, f32, family, rand, write
from golden.ref.heads import (fake_rollout_outputs, heads_logp_entropy, heads_logp_entropy_any, rand_mask,
                              sample_legal)


STAT_NAMES = ("policy_loss", "value_loss", "entropy", "loss", "old_approx_kl", "approx_kl", "clipfrac", "importance")


def ppo_loss_ref(out, actions, logp_old, v_old, adv, ret, heads, cfg):
    """Mean PPO loss over M elements and its logged stats (docs/design.md, "Numerics"). out [M, A+1]."""
    A = sum(heads)
    logp, ent = heads_logp_entropy(out[:, :A], actions, heads)
    v = out[:, A]
    logratio = logp - logp_old
    ratio = logratio.exp()
    eps = cfg["clip_coef"]
    pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - eps, 1 + eps))
    v_clip = v_old + (v - v_old).clamp(-cfg["vf_clip_coef"], cfg["vf_clip_coef"])
    vl = 0.5 * torch.maximum((v - ret) ** 2, (v_clip - ret) ** 2)
    total = pg + cfg["vf_coef"] * vl - cfg["ent_coef"] * ent
    loss = total.mean()
    stats = torch.stack([pg.mean(), vl.mean(), ent.mean(), loss, (-logratio).mean(),
                         ((ratio - 1) - logratio).mean(), ((ratio - 1).abs() > eps).double().mean(), ratio.mean()])
    return loss, stats.detach()

PPO_CASES = {  # (M elements, heads)
    "heads33_m517": (517, (3, 3)),
    "heads234_m64": (64, (2, 3, 4)),
    "head5_m1": (1, (5,)),
}


@family
def ppo(gen):
    """Fused PPO loss: d loss / d out by autograd, and the 8 logged means."""
    tensors, cases = {}, {}
    for name, (M, heads) in PPO_CASES.items():
        A = sum(heads)
        out, acts, logp_old = fake_rollout_outputs(gen, M, heads)
        out.requires_grad_()
        v_old = (out[:, A].detach() + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)
        adv = rand(gen, M, scale=1.0)
        ret = rand(gen, M, scale=1.0)
        loss, stats = ppo_loss_ref(out, acts, logp_old, v_old, adv, ret, heads, LEARN)
        loss.backward()
        for key, t in (("out", out), ("actions", acts), ("logprobs", logp_old), ("values", v_old),
                       ("advantages", adv), ("returns", ret), ("dout", out.grad), ("stats", stats)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"M": M, "act_sizes": list(heads), **LEARN, "stats": list(STAT_NAMES)}
    write("ppo", tensors, "PPO loss (clipped policy and value, entropy per head) and its gradient "
          "d mean-loss / d out by autograd; stats = means of the logged terms", cases)


def ppo_loss_heads_ref(out, actions, logp_old, v_old, adv, ret, heads, cfg, logstd=None, mask=None):
    """ppo_loss_ref for any head mix; also returns the per-element logp and entropy."""
    A = sum(heads)
    logp, ent = heads_logp_entropy_any(out[:, :A], actions, heads, logstd, mask)
    v = out[:, A]
    logratio = logp - logp_old
    ratio = logratio.exp()
    eps = cfg["clip_coef"]
    pg = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - eps, 1 + eps))
    v_clip = v_old + (v - v_old).clamp(-cfg["vf_clip_coef"], cfg["vf_clip_coef"])
    vl = 0.5 * torch.maximum((v - ret) ** 2, (v_clip - ret) ** 2)
    total = pg + cfg["vf_coef"] * vl - cfg["ent_coef"] * ent
    loss = total.mean()
    stats = torch.stack([pg.mean(), vl.mean(), ent.mean(), loss, (-logratio).mean(),
                         ((ratio - 1) - logratio).mean(), ((ratio - 1).abs() > eps).double().mean(), ratio.mean()])
    return loss, stats.detach(), logp.detach(), ent.detach()

PPO_HEADS_CASES = {  # (M, heads, masked, ent_coef)
    "masked_m517": (517, (3, 3), True, 0.001),
    "continuous_m64": (64, (1, 1, 1), False, 0.001),
    "hybrid_m67": (67, (3, 1, 2, 1), True, 0.01),
    "hybrid_m1": (1, (2, 1), True, 0.01),
}


@family
def ppo_heads(gen):
    """Fused PPO loss with masked, continuous and hybrid heads: d loss / d out (logits, means, value),
    d loss / d logstd, the per-element logp and entropy, and the 8 logged means."""
    tensors, cases = {}, {}
    for name, (M, heads, masked, ent_coef) in PPO_HEADS_CASES.items():
        cfg = dict(LEARN, ent_coef=ent_coef)
        A, Kc = sum(heads), sum(1 for h in heads if h == 1)
        out = rand(gen, M, A + 1, scale=2.0)
        mask = rand_mask(gen, M, heads, full_rows=((min(3, M - 1), 0),)) if masked else None
        logstd = rand(gen, 1, Kc, scale=0.8) if Kc else None
        if name == "continuous_m64":  # the clamps: logstd above 2, a mean beyond 1e6
            logstd[0, 2] = 2.5
            out[5, 1] = 1.5e6
        acts = sample_legal(gen, M, heads, mask, out, logstd)
        if name == "continuous_m64":
            acts[5, 1] = 1e6 + 0.5  # exact in f32: the action is 0.5 above the clamped mean
        logp, _ = heads_logp_entropy_any(out[:, :A], acts, heads, logstd, mask)
        logp_old = (logp + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)
        v_old = (out[:, A] + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)
        adv = rand(gen, M, scale=1.0)
        ret = rand(gen, M, scale=1.0)
        out.requires_grad_()
        if logstd is not None:
            logstd.requires_grad_()
        loss, stats, lp, ent = ppo_loss_heads_ref(out, acts, logp_old, v_old, adv, ret, heads, cfg, logstd, mask)
        loss.backward()
        items = [("out", out), ("actions", acts), ("logprobs", logp_old), ("values", v_old), ("advantages", adv),
                 ("returns", ret), ("dout", out.grad), ("stats", stats), ("logp", lp), ("entropy", ent)]
        if logstd is not None:
            items += [("logstd", logstd), ("dlogstd", logstd.grad)]
        for key, t in items:
            tensors[f"{name}/{key}"] = f32(t)
        if mask is not None:
            tensors[f"{name}/mask"] = mask.to(torch.uint8).numpy()
        cases[name] = {"M": M, "act_sizes": list(heads), "masked": masked, **cfg, "stats": list(STAT_NAMES)}
    write("ppo_heads", tensors, "PPO loss with masked discrete heads (illegal logits -> -1e4 via torch.where), "
          "Gaussian heads (straight-through clamps of mean and logstd, as PufferLib's analytic gradient) and hybrid "
          "mixes; dout, dlogstd by autograd; per-element logp and entropy; stats = means of the logged terms", cases)
