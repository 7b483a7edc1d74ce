"""Consecutive learner updates (policy, advantage, PPO loss, backward, Muon) over a golden rollout:
plain, with action heads, with pictures.
"""
from __future__ import annotations

import torch

from golden.ref.common import LEARN, f32, family, rand, write
from golden.ref.mingru import rand_terminals
from golden.ref.heads import heads_logp_entropy, heads_logp_entropy_any, rand_mask, sample_legal
from golden.ref.advantage import advantage_ref
from golden.ref.ppo import STAT_NAMES, ppo_loss_heads_ref, ppo_loss_ref
from golden.ref.muon import muon_ref
from golden.ref.policy import (RELU_MARGIN, init_picture_policy, init_policy, init_policy_heads, picture_obs,
                               picture_policy_forward_ref, policy_forward_ref)


LEARNER_CASES = {  # (D, H, L, heads, N agents, T, minibatch rows R, vtrace)
    "small_3mb": (13, 16, 2, (3, 2), 12, 8, 4, 0),
    "small_vtrace": (7, 8, 1, (2, 2), 6, 5, 3, 1),
    "platformer_1mb": (413, 128, 4, (3, 3), 2, 16, 2, 0),  # one update at the real widths
}


@family
def learner(gen):
    """End-to-end minibatch updates: rollout data + weights → new weights, momentum, logged stats.

    Minibatch m uses agent rows [m·R, m·R + R) for the whole horizon, starting from the rollout-start
    state; each update sees the weights left by the previous one (llm.c-style multi-step check).
    """
    tensors, cases = {}, {}
    lr = 0.015
    for name, (D, H, L, heads, N, T, R, vtrace) in LEARNER_CASES.items():
        cfg = dict(LEARN, vtrace=vtrace)
        A = sum(heads)
        w = init_policy(gen, D, H, L, A)
        obs = rand(gen, N, T, D)
        h0 = rand(gen, L, N, H, scale=0.5)
        term = rand_terminals(gen, N, T)
        with torch.no_grad():
            out0 = policy_forward_ref(w, obs, h0, term, L)
        acts = torch.stack([torch.randint(0, s, (N * T,), generator=gen) for s in heads], 1).to(torch.float64)
        logp0, _ = heads_logp_entropy(out0.reshape(N * T, -1)[:, :A], acts, heads)
        logp_old = (logp0 + rand(gen, N * T, scale=0.3)).to(torch.float32).to(torch.float64)
        v_old = (out0.reshape(N * T, -1)[:, A] + rand(gen, N * T, scale=0.3)).to(torch.float32).to(torch.float64)
        rewards = rand(gen, N * T, scale=1.5)
        for key, t in (("obs", obs), ("h0", h0), ("terminals", term), ("actions", acts), ("logprobs", logp_old),
                       ("values", v_old), ("rewards", rewards)):
            tensors[f"{name}/{key}"] = f32(t)
        for k in w:
            tensors[f"{name}/w0.{k}"] = f32(w[k])
        mom = {k: torch.zeros_like(v) for k, v in w.items()}
        all_stats = []
        for m in range(N // R):
            rows = slice(m * R, m * R + R)
            flat = slice(m * R * T, (m * R + R) * T)
            wg = {k: v.clone().requires_grad_() for k, v in w.items()}
            out = policy_forward_ref(wg, obs[rows], h0[:, rows], term[rows], L).reshape(R * T, -1)
            logp, _ = heads_logp_entropy(out[:, :A].detach(), acts[flat], heads)
            ratio = (logp - logp_old[flat]).exp()
            adv, ret = advantage_ref(out[:, A].detach().reshape(R, T), rewards[flat].reshape(R, T),
                                     term[rows], ratio.reshape(R, T), cfg)
            loss, stats = ppo_loss_ref(out, acts[flat], logp_old[flat], v_old[flat], adv.reshape(-1),
                                       ret.reshape(-1), heads, cfg)
            grads = torch.autograd.grad(loss, list(wg.values()))
            w, mom, norm, clip = muon_ref(w, dict(zip(wg, grads)), mom, lr, cfg)
            all_stats.append(torch.cat([stats, norm.reshape(1)]))
            for k in w:
                tensors[f"{name}/w{m + 1}.{k}"] = f32(w[k])
                tensors[f"{name}/momentum{m + 1}.{k}"] = f32(mom[k])
        tensors[f"{name}/stats"] = f32(torch.stack(all_stats))
        cases[name] = {"D": D, "H": H, "L": L, "act_sizes": list(heads), "N": N, "T": T, "R": R, "lr": lr,
                       "minibatches": N // R, **cfg, "stats": list(STAT_NAMES) + ["grad_norm"]}
    write("learner", tensors, "end-to-end minibatch updates (forward, advantage, PPO loss, autograd backward, "
          "Muon) over consecutive minibatches; w{m}/momentum{m} after update m", cases)

LEARNER_HEADS_CASES = {  # (D, H, L, heads, N, T, R, vtrace, masked, max_grad_norm)
    "continuous_2mb": (6, 16, 2, (1, 1, 1), 8, 8, 4, 0, False, 1.5),
    "hybrid_masked_3mb": (9, 16, 2, (3, 1, 2, 1), 6, 6, 2, 1, True, 1.5),
    "masked_clipped_1mb": (5, 8, 1, (4, 3), 4, 8, 4, 0, True, 0.05),  # the global grad clip is active
}


@family
def learner_heads(gen):
    """End-to-end minibatch updates with masked, continuous and hybrid heads (as `learner`), including
    logstd's gradient (summed over the minibatch) and its Muon step as a [1, Kc] matrix."""
    tensors, cases = {}, {}
    lr = 0.015
    for name, (D, H, L, heads, N, T, R, vtrace, masked, mgn) in LEARNER_HEADS_CASES.items():
        cfg = dict(LEARN, vtrace=vtrace, max_grad_norm=mgn)
        A, Kc = sum(heads), sum(1 for h in heads if h == 1)
        w = init_policy_heads(gen, D, H, L, heads)
        nets = {k: v for k, v in w.items() if k != "logstd"}
        obs = rand(gen, N, T, D)
        h0 = rand(gen, L, N, H, scale=0.5)
        term = rand_terminals(gen, N, T)
        mask = rand_mask(gen, N * T, heads) if masked else None
        with torch.no_grad():
            out0 = policy_forward_ref(nets, obs, h0, term, L).reshape(N * T, -1)
        acts = sample_legal(gen, N * T, heads, mask, out0, w.get("logstd"))
        logp0, _ = heads_logp_entropy_any(out0[:, :A], acts, heads, w.get("logstd"), mask)
        logp_old = (logp0 + rand(gen, N * T, scale=0.3)).to(torch.float32).to(torch.float64)
        v_old = (out0[:, A] + rand(gen, N * T, scale=0.3)).to(torch.float32).to(torch.float64)
        rewards = rand(gen, N * T, scale=1.5)
        items = [("obs", obs), ("h0", h0), ("terminals", term), ("actions", acts), ("logprobs", logp_old),
                 ("values", v_old), ("rewards", rewards)]
        for key, t in items:
            tensors[f"{name}/{key}"] = f32(t)
        if mask is not None:
            tensors[f"{name}/mask"] = mask.to(torch.uint8).numpy()
        for k in w:
            tensors[f"{name}/w0.{k}"] = f32(w[k])
        mom = {k: torch.zeros_like(v) for k, v in w.items()}
        all_stats, clips = [], []
        for m in range(N // R):
            rows = slice(m * R, m * R + R)
            flat = slice(m * R * T, (m * R + R) * T)
            wg = {k: v.clone().requires_grad_() for k, v in w.items()}
            nets = {k: v for k, v in wg.items() if k != "logstd"}
            ls = wg.get("logstd")
            mk = mask[flat] if mask is not None else None
            out = policy_forward_ref(nets, obs[rows], h0[:, rows], term[rows], L).reshape(R * T, -1)
            logp, _ = heads_logp_entropy_any(out[:, :A].detach(), acts[flat], heads,
                                             ls.detach() if ls is not None else None, mk)
            ratio = (logp - logp_old[flat]).exp()
            adv, ret = advantage_ref(out[:, A].detach().reshape(R, T), rewards[flat].reshape(R, T),
                                     term[rows], ratio.reshape(R, T), cfg)
            loss, stats, _, _ = ppo_loss_heads_ref(out, acts[flat], logp_old[flat], v_old[flat], adv.reshape(-1),
                                                   ret.reshape(-1), heads, cfg, ls, mk)
            grads = torch.autograd.grad(loss, list(wg.values()))
            w, mom, norm, clip = muon_ref(w, dict(zip(wg, grads)), mom, lr, cfg)
            all_stats.append(torch.cat([stats, norm.reshape(1)]))
            clips.append(float(clip))
            for k in w:
                tensors[f"{name}/w{m + 1}.{k}"] = f32(w[k])
                tensors[f"{name}/momentum{m + 1}.{k}"] = f32(mom[k])
        if mgn < 1.0:
            assert max(clips) < 1.0, f"{name}: the global grad clip must be active ({clips})"
        tensors[f"{name}/stats"] = f32(torch.stack(all_stats))
        cases[name] = {"D": D, "H": H, "L": L, "act_sizes": list(heads), "N": N, "T": T, "R": R, "lr": lr,
                       "minibatches": N // R, "masked": masked, "clip": clips, **cfg,
                       "stats": list(STAT_NAMES) + ["grad_norm"]}
    write("learner_heads", tensors, "end-to-end minibatch updates with masked/continuous/hybrid heads (forward, "
          "advantage, PPO loss, autograd backward incl. logstd, Muon on every matrix incl. logstd [1,Kc]); "
          "w{m}/momentum{m} after update m", cases)

# (picture, F, obs dtype, H, L, heads, N agents, T, minibatch rows R). After the first update the GPU's
# weights differ from the reference's by f32 rounding, so later updates need a wider ReLU margin
# (RELU_MARGIN_LATER) and pictures/frame counts small enough that a draw achieving it exists.
LEARNER_PICTURE_CASES = {
    "u8_feat3_36x36x3_2mb": ((36, 36, 3), 3, "uint8", 16, 1, (3, 2), 4, 2, 2),
    "f32_40x36x1_1mb": ((40, 36, 1), 0, "float32", 8, 2, (4,), 3, 2, 3),
}

RELU_MARGIN_LATER = 1e-4


def learner_picture_updates(gen, w, obs, h0, term, acts, logp_old, v_old, rewards, dims, cfg, lr):
    """The consecutive updates of one learner_picture case from weights w: (weights and momentum after
    each update, stats) or None when some conv pre-activation comes too close to 0."""
    picture, F, L, heads, N, T, R = dims
    A = sum(heads)
    mom = {k: torch.zeros_like(v) for k, v in w.items()}
    after, all_stats = [], []
    for m in range(N // R):
        rows = slice(m * R, m * R + R)
        flat = slice(m * R * T, (m * R + R) * T)
        wg = {k: v.clone().requires_grad_() for k, v in w.items()}
        pre = []
        out = picture_policy_forward_ref(wg, obs[rows], h0[:, rows], term[rows], L, picture, F, pre).reshape(R * T, -1)
        margin = RELU_MARGIN if m == 0 else RELU_MARGIN_LATER
        if any(float(z.abs().min()) < margin * float(z.abs().max()) for z in pre):
            return None
        logp, _ = heads_logp_entropy(out[:, :A].detach(), acts[flat], heads)
        ratio = (logp - logp_old[flat]).exp()
        adv, ret = advantage_ref(out[:, A].detach().reshape(R, T), rewards[flat].reshape(R, T),
                                 term[rows], ratio.reshape(R, T), cfg)
        loss, stats = ppo_loss_ref(out, acts[flat], logp_old[flat], v_old[flat], adv.reshape(-1),
                                   ret.reshape(-1), heads, cfg)
        grads = torch.autograd.grad(loss, list(wg.values()))
        w, mom, norm, clip = muon_ref(w, dict(zip(wg, grads)), mom, lr, cfg)
        all_stats.append(torch.cat([stats, norm.reshape(1)]))
        after.append((w, mom))
    return after, torch.stack(all_stats)


@family
def learner_picture(gen):
    """End-to-end minibatch updates of a picture policy (as `learner`): forward through the convs, advantage,
    PPO loss, autograd backward into every conv, Muon on each conv as its [out, ky·kx·in] matrix."""
    tensors, cases = {}, {}
    lr = 0.015
    for name, (picture, F, dtype, H, L, heads, N, T, R) in LEARNER_PICTURE_CASES.items():
        cfg = dict(LEARN)
        A = sum(heads)
        D = F + picture[0] * picture[1] * picture[2]
        raw, obs = picture_obs(gen, (N, T, D), dtype)
        h0 = rand(gen, L, N, H, scale=0.5)
        term = rand_terminals(gen, N, T)
        acts = torch.stack([torch.randint(0, s, (N * T,), generator=gen) for s in heads], 1).to(torch.float64)
        noise_logp, noise_v = rand(gen, N * T, scale=0.3), rand(gen, N * T, scale=0.3)
        rewards = rand(gen, N * T, scale=1.5)
        for _ in range(500):
            w = init_picture_policy(gen, picture, F, H, L, A)
            with torch.no_grad():
                out0 = picture_policy_forward_ref(w, obs, h0, term, L, picture, F).reshape(N * T, -1)
            logp0, _ = heads_logp_entropy(out0[:, :A], acts, heads)
            logp_old = (logp0 + noise_logp).to(torch.float32).to(torch.float64)
            v_old = (out0[:, A] + noise_v).to(torch.float32).to(torch.float64)
            res = learner_picture_updates(gen, w, obs, h0, term, acts, logp_old, v_old, rewards,
                                          (picture, F, L, heads, N, T, R), cfg, lr)
            if res is not None:
                break
        else:
            raise RuntimeError(f"{name}: no draw keeps the conv pre-activations away from 0; use fewer frames")
        after, stats = res
        tensors[f"{name}/obs"] = raw
        for key, t in (("h0", h0), ("terminals", term), ("actions", acts), ("logprobs", logp_old),
                       ("values", v_old), ("rewards", rewards)):
            tensors[f"{name}/{key}"] = f32(t)
        for k in w:
            tensors[f"{name}/w0.{k}"] = f32(w[k])
        for m, (wm, mm) in enumerate(after):
            for k in wm:
                tensors[f"{name}/w{m + 1}.{k}"] = f32(wm[k])
                tensors[f"{name}/momentum{m + 1}.{k}"] = f32(mm[k])
        tensors[f"{name}/stats"] = f32(stats)
        cases[name] = {"picture": list(picture), "features": F, "obs_dtype": dtype, "D": D, "H": H, "L": L,
                       "act_sizes": list(heads), "N": N, "T": T, "R": R, "lr": lr, "minibatches": N // R, **cfg,
                       "stats": list(STAT_NAMES) + ["grad_norm"]}
    write("learner_picture", tensors, "end-to-end minibatch updates of a picture policy (conv encoder forward, "
          "advantage, PPO loss, autograd backward, Muon with each conv as [out, ky*kx*in]) over consecutive "
          f"minibatches; w{{m}}/momentum{{m}} after update m; conv pre-activations >= {RELU_MARGIN} (first update), "
          f"{RELU_MARGIN_LATER} (later ones) of their layer's max away from 0", cases)
