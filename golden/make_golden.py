"""Golden numbers for puffgpu's kernels, computed by torch autograd in float64.

    pip install -e ".[golden]"          # torch 2.13.0, CPU build
    python golden/make_golden.py        # rewrites every golden/*.safetensors
    python golden/make_golden.py matmul # one family
    python golden/make_golden.py sample ppo_heads advantage_heads learner_heads   # the action-head files

The only file in puffgpu that imports torch. Each family writes golden/<family>.safetensors:
float32 inputs exactly as the GPU gets them, float32 results of the float64 reference computed
from those same inputs (backward via `(out·dout).sum()` with a random dout), and metadata
(schema version, seed, torch version, what was computed, the cases). Keys are
"<case>/<tensor>"; tests read them with safetensors.numpy. Shapes are chosen to break kernels:
1, the workgroup tile ±1, sizes that don't divide evenly, and the real policy widths (with fewer
rows where the row count does not matter), so the files stay small.
"""
from __future__ import annotations

import json
import math
import sys
import zlib
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

SCHEMA_VERSION = "1"
SEED = 1234
OUT = Path(__file__).resolve().parent
FAMILIES = {}


def family(fn):
    FAMILIES[fn.__name__] = fn
    return fn


def f32(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().to(torch.float32).cpu().numpy())


def rand(gen: torch.Generator, *shape, scale=1.0) -> torch.Tensor:
    """Uniform(-scale, scale) rounded to float32, then promoted to float64 for the reference."""
    t = (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale
    return t.to(torch.float32).to(torch.float64)


def write(name: str, tensors: dict[str, np.ndarray], computed: str, cases: dict):
    meta = {
        "schema_version": SCHEMA_VERSION,
        "seed": str(SEED),
        "torch_version": torch.__version__,
        "computed": computed,
        "cases": json.dumps(cases, sort_keys=True),
    }
    path = OUT / f"{name}.safetensors"
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(path)
    size = path.stat().st_size
    print(f"wrote {path.name}: {len(tensors)} tensors, {len(cases)} cases, {size / 1e6:.2f} MB")


# ---------------------------------------------------------------------------------------------- matmul

# (M rows, K in features, N out features). The tuned kernels compute 8×8 outputs per invocation in
# 64-invocation workgroups (64×64 outputs) and step K by 4, so edges sit at 1, 3/4/5, 7/8/9, 63/64/65.
MATMUL_CASES = {
    "one": (1, 1, 1),
    "tiny_uneven": (5, 7, 3),
    "k3": (9, 3, 12),
    "k5": (17, 5, 8),
    "tile_edges": (63, 9, 65),
    "tile_exact": (64, 8, 64),
    "tile_plus": (65, 7, 63),
    "uneven": (100, 37, 51),
    # the policy's real widths; the row count only sets the length of dW's reduction
    "encoder": (521, 413, 128),       # x·W_encᵀ, D = 413 (unaligned rows); dW_enc over 521 rows
    "mingru": (385, 128, 384),        # x·W_lᵀ; dW_l [384,128] over 385 rows
    "decoder": (257, 128, 7),         # y·W_decᵀ, A+1 = 7
}


@family
def matmul(gen):
    """y = x·Wᵀ with autograd's dx = dout·W and dW = doutᵀ·x."""
    tensors, cases = {}, {}
    for name, (M, K, N) in MATMUL_CASES.items():
        x = rand(gen, M, K).requires_grad_()
        w = rand(gen, N, K).requires_grad_()
        dout = rand(gen, M, N)
        y = x @ w.T
        (y * dout).sum().backward()
        for key, t in (("x", x), ("w", w), ("dout", dout), ("y", y), ("dx", x.grad), ("dw", w.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"M": M, "K": K, "N": N}
    write("matmul", tensors, "matmul: y = x @ w.T (x [M,K], w [N,K]); dx, dw from (y*dout).sum().backward()", cases)


# Split-K (matmul.wgsl's tile and wgmem kernels). Each case reduces over K (y), N (dx) and M
# (dW); the tests split those lengths 2, 3 and 16 ways (chunks of ceil4(ceil(len/splits)) values), so
# the last chunk is sometimes 1 long (65 = 8·8 + 1), exactly full (64), or ragged. Also the shapes of
# the Newton–Schulz Gram products (mingru X [384,128]: G = XᵀX over 384, update over 128; encoder
# X [128,413]: G = XXᵀ over 413; decoder [7,128]) and the decoder's dW over many rows. A file of its
# own so that matmul.safetensors stays bit for bit as it was.
MATMUL_SPLITK_CASES = {
    "one": (1, 1, 1),
    "k65": (17, 65, 9),            # y over 65: 16 splits → 9 chunks of 8, the last of 1
    "k64": (64, 64, 64),           # chunks exactly full; tile (32/64) edges exact
    "wg_edges": (33, 17, 31),      # one past / one short of the 32-wide tiles
    "k129": (45, 129, 66),         # wgmem's 16-deep stages: 8 full + 1; 64-wide tiles ±2
    "long_rows": (1031, 7, 5),     # dW over 1031 rows (16 splits: 15 chunks of 68 + 11)
    "decoder_rows": (1029, 128, 7),  # decoder: y [1029,7] over 128, dW [7,128] over 1029 rows
    "gram_mingru": (384, 128, 128),
    "gram_encoder": (128, 413, 128),
    "gram_decoder": (7, 128, 7),
}


@family
def matmul_splitk(gen):
    """y = x·Wᵀ with dx = dout·W and dW = doutᵀ·x at split-K chunk edges and Gram sides."""
    tensors, cases = {}, {}
    for name, (M, K, N) in MATMUL_SPLITK_CASES.items():
        x = rand(gen, M, K).requires_grad_()
        w = rand(gen, N, K).requires_grad_()
        dout = rand(gen, M, N)
        y = x @ w.T
        (y * dout).sum().backward()
        for key, t in (("x", x), ("w", w), ("dout", dout), ("y", y), ("dx", x.grad), ("dw", w.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"M": M, "K": K, "N": N}
    write("matmul_splitk", tensors, "matmul at split-K chunk edges and Gram shapes: y = x @ w.T (x [M,K], "
          "w [N,K]); dx, dw from (y*dout).sum().backward()", cases)


# ---------------------------------------------------------------------------------------------- MinGRU

def mingru_scan_ref(c, x, h0, terminals):
    """PufferLib 5.0's MinGRU (docs/design.md, "Numerics") over a horizon.
    c [R,T,3H], x [R,T,H], h0 [R,H], terminals [R,T] → (y, hs).

    The reset multiplies the carried state by (1 − terminal), so no gradient reaches the pre-reset state.
    """
    H = x.shape[-1]
    hh, g, pp = c[..., :H], c[..., H:2 * H], c[..., 2 * H:]
    z = torch.sigmoid(g)
    ht = torch.where(hh >= 0, hh + 0.5, torch.sigmoid(hh))
    s = torch.sigmoid(pp)
    h, ys, hs = h0, [], []
    for t in range(x.shape[1]):
        h = h * (1 - terminals[:, t:t + 1])
        h = (1 - z[:, t]) * h + z[:, t] * ht[:, t]
        hs.append(h)
        ys.append(s[:, t] * h + (1 - s[:, t]) * x[:, t])
    return torch.stack(ys, 1), torch.stack(hs, 1)


def rand_terminals(gen, R, T, p=0.15):
    d = (torch.rand(R, T, generator=gen) < p).to(torch.float64)
    if R > 1 and T > 2:
        d[0, T // 2] = 1.0  # always a reset mid-horizon
        d[1 % R, 0] = 1.0   # and one at t = 0 (overrides h0)
    return d


# (R agent rows, T horizon, H hidden). The scan runs one invocation per (row, unit) in workgroups of
# 64 units: H = 8 leaves most of a workgroup idle, H = 72 spills into a second one.
MINGRU_CASES = {
    "t1_h8_r1": (1, 1, 8),
    "t64_h8_r67": (67, 64, 8),
    "t64_h128_r3": (3, 64, 128),
    "t17_h72_r5": (5, 17, 72),
    "t2_h128_r2": (2, 2, 128),
}


@family
def mingru(gen):
    """MinGRU scan alone: y, hs forward; dc, dx (highway part) from (y*dy).sum().backward()."""
    tensors, cases = {}, {}
    for name, (R, T, H) in MINGRU_CASES.items():
        c = rand(gen, R, T, 3 * H, scale=3.0).requires_grad_()  # both branches of h̃
        x = rand(gen, R, T, H).requires_grad_()
        h0 = rand(gen, R, H)
        term = rand_terminals(gen, R, T)
        dy = rand(gen, R, T, H)
        y, hs = mingru_scan_ref(c, x, h0, term)
        (y * dy).sum().backward()
        for key, t in (("c", c), ("x", x), ("h0", h0), ("terminals", term), ("dy", dy), ("y", y), ("hs", hs),
                       ("dc", c.grad), ("dx", x.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"R": R, "T": T, "H": H}
    write("mingru", tensors, "MinGRU scan (docs/design.md, Numerics) with terminal resets from h0; "
          "dc, dx from (y*dy).sum().backward()", cases)


# ---------------------------------------------------------------------------------------------- policy

def policy_forward_ref(w, obs, h0, terminals, layers):
    """Encoder → L MinGRU scans → decoder. obs [R,T,D], h0 [L,R,H] → out [R,T,A+1]."""
    x = obs @ w["encoder"].T
    for l in range(layers):
        c = x @ w[f"mingru.{l}"].T
        x, _ = mingru_scan_ref(c, x, h0[l], terminals)
    return x @ w["decoder"].T


def init_policy(gen, D, H, L, A):
    """PufferLib's init bounds (gain √2 encoder, 1 elsewhere), from this file's generator."""
    shapes = {"encoder": (H, D), "decoder": (A + 1, H), **{f"mingru.{l}": (3 * H, H) for l in range(L)}}
    return {k: rand(gen, *s, scale=(2 ** 0.5 if k == "encoder" else 1.0) / s[1] ** 0.5) for k, s in shapes.items()}


# (D obs, H hidden, L layers, head sizes, R rows, T horizon)
POLICY_CASES = {
    "platformer": (413, 128, 4, (3, 3), 3, 16),  # the default policy at its real widths
    "small": (5, 8, 2, (2, 3, 4), 2, 7),
}


@family
def policy(gen):
    """Full policy forward and backward: out, dW for every tensor and d obs, from (out*dout).sum()."""
    tensors, cases = {}, {}
    for name, (D, H, L, heads, R, T) in POLICY_CASES.items():
        A = sum(heads)
        w = {k: v.requires_grad_() for k, v in init_policy(gen, D, H, L, A).items()}
        obs = rand(gen, R, T, D).requires_grad_()
        h0 = rand(gen, L, R, H, scale=0.5)
        term = rand_terminals(gen, R, T)
        dout = rand(gen, R, T, A + 1)
        out = policy_forward_ref(w, obs, h0, term, L)
        (out * dout).sum().backward()
        for key, t in (("obs", obs), ("h0", h0), ("terminals", term), ("dout", dout), ("out", out),
                       ("dobs", obs.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        for k, v in w.items():
            tensors[f"{name}/w.{k}"] = f32(v)
            tensors[f"{name}/dw.{k}"] = f32(v.grad)
        cases[name] = {"D": D, "H": H, "L": L, "act_sizes": list(heads), "R": R, "T": T}
    write("policy", tensors, "policy forward (encoder, MinGRU scans with resets from h0, decoder) and "
          "backward: dw.* and dobs from (out*dout).sum().backward()", cases)


# ---------------------------------------------------------------------------------------------- learner

# PufferLib 5.0 defaults (docs/design.md, "Numerics"); each golden file records the values it used
LEARN = dict(gamma=0.995, gae_lambda=0.90, clip_coef=0.2, vf_coef=2.0, vf_clip_coef=0.2, ent_coef=0.001,
             max_grad_norm=1.5, momentum=0.95, vtrace=0, vtrace_rho_clip=1.0, vtrace_c_clip=1.0)
NS_COEFFS = ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012))


def heads_logp_entropy(logits, actions, heads):
    """Summed log-prob of the taken actions and summed entropy over heads. logits [M, A], actions [M, K]."""
    logp, ent, o = 0, 0, 0
    for h, size in enumerate(heads):
        ls = torch.log_softmax(logits[:, o:o + size], -1)
        logp = logp + ls.gather(1, actions[:, h:h + 1].long()).squeeze(1)
        ent = ent - (ls.exp() * ls).sum(-1)
        o += size
    return logp, ent


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


def muon_ref(w, grads, mom, lr, cfg):
    """Global clip → Nesterov → per-matrix Frobenius normalisation → 5 NS iterations → W −= lr·scale·X."""
    norm = torch.sqrt(sum((g ** 2).sum() for g in grads.values()))
    clip = torch.clamp(cfg["max_grad_norm"] / (norm + 1e-6), max=1.0)
    new_w, new_m = {}, {}
    for k in w:
        g = grads[k] * clip
        m = cfg["momentum"] * mom[k] + g
        u = g + cfg["momentum"] * m
        X = u / torch.clamp(u.norm(), min=1e-7)
        R, C = X.shape
        for a, b, c in NS_COEFFS:
            if R <= C:
                G = X @ X.T
                X = a * X + (b * G + c * G @ G) @ X
            else:
                G = X.T @ X
                X = a * X + X @ (b * G + c * G @ G)
        new_w[k] = w[k] - lr * max(1.0, R / C) ** 0.5 * X
        new_m[k] = m
    return new_w, new_m, norm, clip


ADVANTAGE_CASES = {  # (R, T, heads, vtrace)
    "gae_t64": (3, 64, (3, 3), 0),
    "vtrace_t17": (5, 17, (2, 3, 4), 1),
    "gae_t1": (2, 1, (3, 3), 0),
    "vtrace_t2": (67, 2, (3,), 1),
}


def fake_rollout_outputs(gen, M, heads, actions_gen=True):
    A = sum(heads)
    out = rand(gen, M, A + 1, scale=2.0)
    acts = torch.stack([torch.randint(0, s, (M,), generator=gen) for s in heads], 1).to(torch.float64)
    logp, _ = heads_logp_entropy(out[:, :A], acts, heads)
    logp_old = (logp + rand(gen, M, scale=0.5)).to(torch.float32).to(torch.float64)  # ratios in ~[0.6, 1.6]
    return out, acts, logp_old


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


MUON_CASES = {  # (D, H, L, heads, grad scale): scale 1 clips (‖g‖ > 1.5), 1e-3 does not
    "platformer_clipped": (413, 128, 4, (3, 3), 1.0),
    "small_unclipped": (5, 8, 2, (2, 3, 4), 1e-3),
}


@family
def muon(gen):
    """One Muon step on every matrix from given weights, gradients and momentum."""
    tensors, cases = {}, {}
    lr = 0.015
    for name, (D, H, L, heads, gscale) in MUON_CASES.items():
        A = sum(heads)
        w = init_policy(gen, D, H, L, A)
        grads = {k: rand(gen, *v.shape, scale=gscale / v.shape[1] ** 0.5) for k, v in w.items()}
        mom = {k: rand(gen, *v.shape, scale=gscale / v.shape[1] ** 0.5) for k, v in w.items()}
        nw, nm, norm, clip = muon_ref(w, grads, mom, lr, LEARN)
        for k in w:
            tensors[f"{name}/w.{k}"] = f32(w[k])
            tensors[f"{name}/grad.{k}"] = f32(grads[k])
            tensors[f"{name}/momentum.{k}"] = f32(mom[k])
            tensors[f"{name}/new_w.{k}"] = f32(nw[k])
            if name.startswith("small"):  # elementwise; checked at small size to keep the file small
                tensors[f"{name}/new_momentum.{k}"] = f32(nm[k])
        tensors[f"{name}/grad_norm"] = f32(norm.reshape(1))
        tensors[f"{name}/clip"] = f32(clip.reshape(1))
        cases[name] = {"D": D, "H": H, "L": L, "act_sizes": list(heads), "lr": lr, **LEARN}
    write("muon", tensors, "Muon: global grad clip, Nesterov momentum, Frobenius normalisation, 5 Newton-Schulz "
          "iterations (PufferLib's coefficients, smaller Gram side), W -= lr*sqrt(max(1,R/C))*X", cases)


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


# ------------------------------------------------------------------------------------------ action heads
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


def init_policy_heads(gen, D, H, L, heads):
    """init_policy plus logstd [1, Kc] (random here, so that its update is not trivial) for continuous heads."""
    A, Kc = sum(heads), sum(1 for h in heads if h == 1)
    w = init_policy(gen, D, H, L, A)
    if Kc:
        w = {"encoder": w["encoder"], "decoder": w["decoder"], "logstd": rand(gen, 1, Kc, scale=0.5),
             **{k: v for k, v in w.items() if k.startswith("mingru")}}  # checkpoint order
    return w


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

# ---------------------------------------------------------------------------------------------- conv

CONV_LAYERS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))  # (filters, kernel, stride): trainer/kernels/conv.py CONVS
# Pre-activations within this fraction of their layer's RMS of 0 are rejected (the frame is redrawn), so
# the ReLU mask is never decided by f32 rounding (~1e-6 of the RMS): a flipped mask would move a
# gradient by a whole upstream value, not by rounding.
CONV_MARGIN = 1e-4

# name -> (height, width, channels, frames, features before the picture, packed uint8, extra row padding
# (words when packed, else floats), backward). Frames: 1, 3 and 32; 64×64×3 (the default), non-square
# 80 wide × 60 high, 84×84×1, and 39 high × 37 wide × 2, whose first layer leaves the last 3 rows and
# 1 column uncovered. Big pictures get few frames so the file stays small: layers 1–2 have one weight
# for all cases ("shared/w1", "shared/w2"), the 32-frame case keeps only the last layer's output (the
# others check every layer), and gradients are checked on four cases of 1–3 frames.
CONV_CASES = {
    "rgb64_b1_u8": (64, 64, 3, 1, 0, True, 0, False),
    "rgb64_b3_f32_features": (64, 64, 3, 3, 5, False, 2, True),    # row stride 12295: odd
    "rgb64_b32_u8": (64, 64, 3, 32, 0, True, 0, False),
    "wide80x60_b3_u8_features": (60, 80, 3, 3, 7, True, 1, True),  # picture at byte 7: mid-word
    "gray84_b3_f32": (84, 84, 1, 3, 0, False, 0, False),
    "gray84_b1_u8_features": (84, 84, 1, 1, 13, True, 0, True),
    "odd39x37_b3_f32_features": (39, 37, 2, 3, 3, False, 1, True),
}


def conv_stack_ref(x, ws):
    """Pre-activations of the three convs. x [B, H, W, C] (HWC), ws[i] [out, k, k, in] → list of [B, oh, ow, out]."""
    pres = []
    h = x.permute(0, 3, 1, 2)
    for (_, k, s), w in zip(CONV_LAYERS, ws):
        pre = torch.nn.functional.conv2d(h, w.permute(0, 3, 1, 2), stride=s).permute(0, 2, 3, 1)
        pres.append(pre)  # the next layer reads this very tensor, so its .grad is the pre-activation gradient
        h = torch.relu(pre).permute(0, 3, 1, 2)
    return pres


@family
def conv(gen):
    """The picture encoder's convs: forward (post-ReLU ys of each layer, HWC), and from a random gradient
    of the last output, every layer's pre-activation gradient (dpre) and weight gradient (dw)."""
    tensors, cases = {}, {}

    def weight(out, k, c):
        return rand(gen, out, k, k, c, scale=math.sqrt(6.0 / (k * k * c)))  # keeps activations O(1)

    (c1, k1, _), (c2, k2, _) = CONV_LAYERS[1:]
    shared = [weight(c1, k1, CONV_LAYERS[0][0]), weight(c2, k2, c1)]
    tensors["shared/w1"], tensors["shared/w2"] = (f32(w.reshape(w.shape[0], -1)) for w in shared)
    for name, (H, W, C, B, F, packed, pad, backward) in CONV_CASES.items():
        ws = [weight(CONV_LAYERS[0][0], CONV_LAYERS[0][1], C)] + shared

        def draw(n):
            if packed:
                return torch.randint(0, 256, (n, H, W, C), generator=gen, dtype=torch.uint8)
            return (torch.rand(n, H, W, C, generator=gen, dtype=torch.float64)).to(torch.float32).to(torch.float64)

        def value(pix):
            return pix.to(torch.float64) / 255 if packed else pix

        with torch.no_grad():
            rms = [p.pow(2).mean().sqrt() for p in conv_stack_ref(value(draw(8)), ws)]
            frames = []
            while len(frames) < B:
                pix = draw(1)
                pres = conv_stack_ref(value(pix), ws)
                if all(p.abs().min() >= CONV_MARGIN * r for p, r in zip(pres, rms)):
                    frames.append(pix)
        pix = torch.cat(frames)
        size = H * W * C
        feats = torch.randint(0, 256, (B, F), generator=gen, dtype=torch.uint8) if packed else rand(gen, B, F)
        if packed:
            words = -(-(F + size) // 4) + pad
            row = torch.zeros(B, 4 * words, dtype=torch.uint8)
            row[:, :F], row[:, F:F + size] = feats, pix.reshape(B, size)
            obs, row_stride = row.numpy(), words
        else:
            row_stride = F + size + pad
            row = torch.zeros(B, row_stride)
            row[:, :F], row[:, F:F + size] = feats, pix.reshape(B, size)
            obs = f32(row)
        x = value(pix)
        wg = [w.clone().requires_grad_() for w in ws]
        pres = conv_stack_ref(x, wg)
        for p in pres:
            p.retain_grad()
        ys = [torch.relu(p) for p in pres]
        tensors[f"{name}/obs"] = np.ascontiguousarray(obs)
        tensors[f"{name}/w0"] = f32(ws[0].reshape(ws[0].shape[0], -1))
        for i, y in enumerate(ys):
            if B < 32 or i == len(ys) - 1:
                tensors[f"{name}/y{i}"] = f32(y.reshape(B, -1))
        if backward:
            dout = rand(gen, *ys[-1].shape)
            (ys[-1] * dout).sum().backward()
            tensors[f"{name}/dy_last"] = f32(dout.reshape(B, -1))
            for i in range(len(CONV_LAYERS)):
                tensors[f"{name}/dpre{i}"] = f32(pres[i].grad.reshape(B, -1))
                tensors[f"{name}/dw{i}"] = f32(wg[i].grad.reshape(wg[i].shape[0], -1))
        cases[name] = {"height": H, "width": W, "channels": C, "frames": B, "features": F, "packed": packed,
                       "row_stride": row_stride, "offset": F, "backward": backward, "margin": CONV_MARGIN}
    write("conv", tensors, "conv encoder: 3 valid convs (32@8/4, 64@4/2, 64@3/1), no bias, ReLU each, HWC; obs rows "
          "[features | picture | padding] as uint8 bytes (packed 4 per u32, value = byte/255) or float32; "
          "weights w0 per case, shared/w1 and shared/w2 for all; y{i} post-ReLU [frames, out_size]; dpre{i} = d((y2*dy_last).sum())/d(pre-activation i); dw{i} "
          "[out, k*k*in] in (ky, kx, in) order", cases)


def main(argv):
    names = argv or list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        sys.exit(f"unknown golden families {unknown}; known: {sorted(FAMILIES)}")
    torch.set_default_dtype(torch.float64)
    for n in names:
        gen = torch.Generator().manual_seed(SEED + zlib.crc32(n.encode()))  # stable per family
        FAMILIES[n](gen)


if __name__ == "__main__":
    main(sys.argv[1:])
