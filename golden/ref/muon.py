"""muon.wgsl: one Muon step (grad-norm clip, Nesterov momentum, Newton–Schulz, update).
"""
from __future__ import annotations

import torch

from golden.ref.common import LEARN, f32, family, rand, write
from golden.ref.policy import init_policy


NS_COEFFS = ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012))


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
