"""heads.wgsl and sample.wgsl: the action heads' distributions (masked softmax, clamped Gaussian) and
the sampler's statistics.
"""
from __future__ import annotations

import math

import torch

from golden.ref.common import f32, family, rand, write


def heads_logp_entropy(logits, actions, heads):
    """Summed log-prob of the taken actions and summed entropy over heads. logits [M, A], actions [M, K]."""
    logp, ent, o = 0, 0, 0
    for h, size in enumerate(heads):
        ls = torch.log_softmax(logits[:, o:o + size], -1)
        logp = logp + ls.gather(1, actions[:, h:h + 1].long()).squeeze(1)
        ent = ent - (ls.exp() * ls).sum(-1)
        o += size
    return logp, ent


def fake_rollout_outputs(gen, M, heads, actions_gen=True):
    A = sum(heads)
    out = rand(gen, M, A + 1, scale=2.0)
    acts = torch.stack([torch.randint(0, s, (M,), generator=gen) for s in heads], 1).to(torch.float64)
    logp, _ = heads_logp_entropy(out[:, :A], acts, heads)
    logp_old = (logp + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)  # ratios in ~[0.6, 1.6]
    return out, acts, logp_old


# Masks, continuous (Gaussian) heads and hybrid mixes, in files of their own (sample, *_heads), so the
# discrete, mask-free files above keep checking the plain paths.
# A head of size 1 is a Gaussian: its decoder column is the mean μ, clamped to ±1e6, and logstd [Kc]
# (one entry per continuous head, in head order) is clamped to [−20, 2]. PufferLib evaluates its
# analytic gradients at the clamped values (the clamps pass the gradient through), so the reference
# uses straight-through clamps. Discrete logits of illegal choices are replaced by −1e4
# (torch.where: no gradient reaches them).

MASKED_LOGIT = -1e4

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def st_clamp(x, lo, hi):
    """clamp in the forward pass, identity in the backward pass (PufferLib's analytic gradients)."""
    return x + (x.clamp(lo, hi) - x).detach()


def masked_logits(out, o, size, mask):
    l = out[:, o:o + size]
    if mask is None:
        return l
    return torch.where(mask[:, o:o + size] != 0, l, torch.full_like(l, MASKED_LOGIT))


def heads_logp_entropy_any(out, actions, heads, logstd=None, mask=None):
    """Σ_h log p(a_h) and Σ_h H_h over any mix of discrete (size >= 2, masked) and Gaussian (size 1) heads.

    out [M, A] (head columns), actions [M, K], logstd [1, Kc], mask [M, A] (0 = illegal; ignored on
    the columns of continuous heads)."""
    logp, ent, o, kc = 0, torch.zeros(out.shape[0]), 0, 0
    for h, size in enumerate(heads):
        if size == 1:
            mu = st_clamp(out[:, o], -1e6, 1e6)
            s = st_clamp(logstd[0, kc], -20.0, 2.0)
            z = (actions[:, h].clamp(-1e6, 1e6) - mu) / s.exp()
            logp = logp - 0.5 * z ** 2 - HALF_LOG_2PI - s
            ent = ent + (0.5 + HALF_LOG_2PI) + s
            kc += 1
        else:
            ls = torch.log_softmax(masked_logits(out, o, size, mask), -1)
            logp = logp + ls.gather(1, actions[:, h:h + 1].long()).squeeze(1)
            ent = ent - (ls.exp() * ls).sum(-1)
        o += size
    return logp, ent


def rand_mask(gen, M, heads, p_illegal=0.3, full_rows=()):
    """uint8-valued [M, A] mask: each discrete choice illegal with p_illegal, at least one legal per head
    (except the heads listed in full_rows = ((row, head), ...), masked entirely); continuous heads'
    columns get random values too (the kernels must ignore them)."""
    A = sum(heads)
    m = (torch.rand(M, A, generator=gen) >= p_illegal).to(torch.float64)
    o = 0
    for h, size in enumerate(heads):
        if size >= 2:
            none = m[:, o:o + size].sum(1) == 0
            pick = torch.randint(0, size, (M,), generator=gen)
            m[none, o + pick[none]] = 1.0
            for row, hh in full_rows:
                if hh == h and row < M:
                    m[row, o:o + size] = 0.0
        o += size
    return m


def sample_legal(gen, M, heads, mask, mu=None, logstd=None):
    """Actions [M, K]: a legal choice per discrete head (any one if the head is fully masked); a Gaussian
    draw around mu for continuous heads."""
    cols, o, kc = [], 0, 0
    for h, size in enumerate(heads):
        if size == 1:
            cols.append(mu[:, o] + logstd[0, kc].clamp(-20, 2).exp() * torch.randn(M, generator=gen, dtype=torch.float64))
            kc += 1
        else:
            w = mask[:, o:o + size] if mask is not None else torch.ones(M, size)
            w = torch.where(w.sum(1, keepdim=True) > 0, w, torch.ones_like(w))
            cols.append(torch.multinomial(w, 1, generator=gen).squeeze(1).to(torch.float64))
        o += size
    return torch.stack(cols, 1).to(torch.float32).to(torch.float64)

SAMPLE_CASES = {  # (rows, heads, masked, logstd): each row is replicated over many agents by the test
    "masked_heads33": (6, (3, 3), True, None),
    "continuous_k3": (4, (1, 1, 1), False, (-0.5, 0.3, 2.5)),  # 2.5: the clamp to 2
    "hybrid_3121": (5, (3, 1, 2, 1), True, (-1.0, 0.25)),
}


@family
def sample(gen):
    """The sampling distributions: masked log-softmax per discrete column, clamped μ per continuous
    column, σ per continuous head, the deterministic action (first most likely legal choice; μ) and its
    log-probability. The test samples each row many times on the GPU and compares statistics."""
    tensors, cases = {}, {}
    for name, (M, heads, masked, ls) in SAMPLE_CASES.items():
        A = sum(heads)
        out = rand(gen, M, A + 1, scale=2.0)
        mask = rand_mask(gen, M, heads, p_illegal=0.4, full_rows=((M - 1, 0),)) if masked else None
        if masked:
            mask[0] = 1.0  # one row with every choice legal
        logstd = torch.tensor([ls], dtype=torch.float64) if ls else None
        table = torch.zeros(M, A)
        det, o, kc = [], 0, 0
        for h, size in enumerate(heads):
            if size == 1:
                table[:, o] = out[:, o].clamp(-1e6, 1e6)
                det.append(table[:, o])
                kc += 1
            else:
                l = masked_logits(out, o, size, mask)
                table[:, o:o + size] = torch.log_softmax(l, -1)
                det.append(l.argmax(1).to(torch.float64))  # torch: the first maximum
            o += size
        det = torch.stack(det, 1)
        det_logp, _ = heads_logp_entropy_any(out[:, :A], det, heads, logstd, mask)
        items = [("out", out), ("logp_table", table), ("det_actions", det), ("det_logprob", det_logp)]
        if logstd is not None:
            items += [("logstd", logstd), ("sigma", logstd.clamp(-20, 2).exp().reshape(-1))]
        for key, t in items:
            tensors[f"{name}/{key}"] = f32(t)
        if mask is not None:
            tensors[f"{name}/mask"] = mask.to(torch.uint8).numpy()
        cases[name] = {"M": M, "act_sizes": list(heads), "masked": masked}
    write("sample", tensors, "sampling distributions per head: masked log-softmax (illegal logits -> -1e4), "
          "clamped Gaussian means, sigma = exp(clamp(logstd, -20, 2)); deterministic actions and their logprob", cases)
