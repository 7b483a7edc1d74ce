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
    "mingru": (769, 128, 384),        # x·W_lᵀ; dW_l [384,128] over 769 rows
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
