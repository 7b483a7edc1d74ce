"""Golden numbers for puffgpu's kernels, computed by torch autograd in float64.

    pip install -e ".[golden]"          # torch 2.13.0, CPU build
    python golden/make_golden.py        # rewrites every golden/*.safetensors
    python golden/make_golden.py matmul # one family
    python golden/make_golden.py sample ppo_heads advantage_heads learner_heads   # the action-head files

The only place in puffgpu that imports torch (this driver and golden/ref/). golden/ref/<family>.py
holds each kernel family's torch float64 reference and its cases side by side (matmul, mingru, heads
and the sampler, advantage, ppo, muon, conv, the whole policy, the learner); common.py what they
share. Each family writes golden/<family>.safetensors:
float32 inputs exactly as the GPU gets them, float32 results of the float64 reference computed
from those same inputs (backward via `(out·dout).sum()` with a random dout), and metadata
(schema version, seed, torch version, what was computed, the cases). Keys are
"<case>/<tensor>"; tests read them with safetensors.numpy. Shapes are chosen to break kernels:
1, the workgroup tile ±1, sizes that don't divide evenly, and the real policy widths (with fewer
rows where the row count does not matter), so the files stay small.
"""
from __future__ import annotations

import sys
import zlib
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout: golden.ref, trainer

from golden.ref import advantage, conv, heads, learner, matmul, mingru, muon, policy, ppo  # noqa: E402,F401 (register)
from golden.ref.common import FAMILIES, SEED  # noqa: E402


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
