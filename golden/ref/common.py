"""What every golden family shares: the output folder, the seed, float32 rounding, the writer, the
family registry and the learner's parameters (trainer/default.ini's [train], the values
LearnerConfig defaults to).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.numpy import save_file

from trainer import config


SCHEMA_VERSION = "1"
SEED = 1234
OUT = Path(__file__).resolve().parent.parent  # golden/: the .safetensors files beside make_golden.py
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

# The learner's parameters: trainer/default.ini's [train] (PufferLib 5.0's defaults, docs/design.md,
# "Numerics"), where LearnerConfig takes its defaults too; each golden file records the values it used
LEARN = {k: config.defaults()["train"][k] for k in ("gamma", "gae_lambda", "clip_coef", "vf_coef", "vf_clip_coef",
                                                     "ent_coef", "max_grad_norm", "momentum", "vtrace",
                                                     "vtrace_rho_clip", "vtrace_c_clip")}
