"""Golden numbers for puffgpu's kernels, computed by torch autograd in float64.

    pip install -e ".[golden]"          # torch 2.13.0, CPU build
    python golden/make_golden.py        # rewrites every golden/*.safetensors
    python golden/make_golden.py matmul # one family

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


# Split-K (matmul.wgsl's tile and wgmem kernels; issue 9). Each case reduces over K (y), N (dx) and M
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
    """DESIGN.md's MinGRU over a horizon. c [R,T,3H], x [R,T,H], h0 [R,H], terminals [R,T] → (y, hs).

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
    write("mingru", tensors, "MinGRU scan (DESIGN.md Numerics) with terminal resets from h0; "
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

# PufferLib 5.0 defaults (DESIGN.md "Numerics"); each golden file records the values it used
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
    """Mean PPO loss over M elements and its logged stats (DESIGN.md). out [M, A+1]."""
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
    write("advantage", tensors, "advantage: GAE/V-trace (DESIGN.md) over [R,T] rows; A_{T-1}=0; returns = V + A", cases)


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
