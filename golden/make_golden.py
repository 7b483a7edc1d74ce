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


def main(argv):
    names = argv or list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        sys.exit(f"unknown golden families {unknown}; known: {sorted(FAMILIES)}")
    torch.set_default_dtype(torch.float64)
    for n in names:
        gen = torch.Generator().manual_seed(SEED + sorted(FAMILIES).index(n))
        FAMILIES[n](gen)


if __name__ == "__main__":
    main(sys.argv[1:])
