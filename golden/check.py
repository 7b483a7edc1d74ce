"""Golden-file access and the one tolerance table every test that compares floats uses.

Errors are measured relative to the reference tensor's scale: max|got − want| / max(max|want|, floor).
A failure names the check, the shape, the max error and where it is. The table's rows are such relative
errors, except the two statistical rows (`sampling`, `sampling_floor`), whose reasons name their unit.
Tests that expect the same bits compare exactly and have no row.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

GOLDEN_DIR = Path(__file__).resolve().parent  # the *.safetensors files sit beside this module

# name -> (tolerance, why)
TOLERANCES = {
    "matmul": (1e-5, "f32 dot products of ≤ 1031 terms of O(1) values: rounding grows ~√K·2⁻²⁴ ≈ 2e-6 of the scale"),
    "mingru": (1e-5, "elementwise f32 recurrence; exp/sigmoid differ from float64 by a few ulp per step, 64 steps"),
    "mingru_grad": (1e-4, "gradients carried back through ≤ 64 steps of products of f32 gates"),
    "policy": (1e-5, "f32 matmuls (K ≤ 413) feeding 4 recurrent layers: ~1e-6 of the output scale"),
    "policy_grad": (1e-4, "dW sums ≤ 48 rows of products through 4 layers and 16 steps; d obs through all of them"),
    "picture": (1e-5, "three f32 convolutions (K ≤ 576) and encoder.linear (K ≤ 1031) feeding the recurrent "
                      "layers: float32 torch measures ~2e-7 of the output scale"),
    "picture_grad": (1e-4, "conv weight gradients sum frames × places (≤ 3,375) products through the ReLU masks "
                           "(pre-activations kept ≥ 2e-5 of their scale from 0); float32 torch measures ≤ 2e-6"),
    "conv": (1e-5, "three convs: f32 dot products of ≤ 576 terms of O(1) values per layer, ~1e-6 of the scale"),
    "conv_grad": (2e-5, "dW sums ≤ 1,200 rows of products (≤ 3 frames × 400 places), ~√1200·2⁻²⁴ ≈ 2e-6 of the "
                        "scale, and dpre carries f32 rounding back through 1–2 layers; pre-activations are ≥ 1e-4 "
                        "of their RMS from 0, so no ReLU mask is decided by rounding"),
    "advantage": (1e-5, "a 64-step f32 recursion of O(1) terms; exp/log of the V-trace ratio to a few ulp"),
    "ppo": (1e-5, "per-element softmax/exp in f32 of O(1) logits"),
    "ppo_logstd": (1e-5, "logstd's gradient: a fixed-order f32 sum of ≤ 517 per-element terms of O(1)"),
    "sample": (1e-5, "sampled log-probabilities: f32 log-softmax / Gaussian log-density of O(1) values"),
    "sample_draw": (2e-3, "sampled actions and their log-probabilities on another WebGPU implementation: WGSL lets "
                          "cos and sin err by 2^-11 absolute, so a Box–Muller draw ε = r·cos(2πu) moves by up to ~5e-4 "
                          "of the largest draw and its log-density −½ε² by up to ~1e-3 of the largest; a discrete "
                          "draw must not change (a flip moves an index by ≥ 1)"),
    "ppo_stats": (1e-4, "means of ≤ 517 f32 terms of either sign (the KLs): the mean can be 100× below its terms"),
    "muon": (1e-5, "new weights: W changes by lr·X ≈ 1e-3 of W, so f32 NS error is far below this"),
    "muon_step": (2e-4, "the update X alone: 5 Newton–Schulz iterations amplify f32 rounding (a ≈ 4 per step near 0)"),
    "learner": (1e-5, "new weights after 1–3 full updates; relative to the weights' scale"),
    "learner_step": (1e-3, "the weight change: forward, backward and 5 NS iterations in f32, compounded over updates"),
    "learner_stats": (1e-4, "logged means; the KL terms are differences of nearby f32 log-probs"),
    "rollout_scan": (1e-5, "the same forward pass by the rollout's per-step kernels and the training scan, or in "
                           "another row of a tile: other summation orders, f32 rounding of O(1) values"),
    "vtrace_ratio": (2e-4, "ρ = exp(logp_new − logp_old) = 1 recovered as A/(r + V' − V): the division by a "
                           "difference of f32 values amplifies their rounding"),
    "env_f32": (1e-4, "env state, observations and rewards are f32 in C: a decimal like 0.55 is a few ulp off, and "
                      "an episode's return sums ≤ 900 f32 rewards of either sign, which can be 10× its result"),
    "frameskip": (0.02, "mean episode lengths of the scripted run at frameskip 1 and 3 (×3): the policy acts every "
                        "3 ticks, so its path differs by a few of ~640 ticks, and the last step rounds up"),
    "float64": (1e-12, "the same float64 arithmetic in another order, or a float64 written and read back"),
    "sampling": (5.0, "in standard errors: sampled frequencies and moments against their probabilities; "
                      "5σ fails by chance about once in 2·10⁶ comparisons, and the seeds are fixed"),
    "sampling_floor": (1e-3, "added to a sampled frequency's bound: where p is 0 or 1 in f32 the binomial "
                             "standard error vanishes, but p itself is computed from f32 logits"),
}


def tolerance(name: str) -> float:
    """A row's value, for the comparisons assert_close does not make (the statistical rows)."""
    return TOLERANCES[name][0]


_cache: dict[str, dict] = {}
_meta: dict[str, dict] = {}


def golden(family: str) -> dict[str, np.ndarray]:
    if family not in _cache:
        path = GOLDEN_DIR / f"{family}.safetensors"
        if not path.exists():
            raise FileNotFoundError(f"{path} missing: run `python golden/make_golden.py {family}` (needs the [golden] extra)")
        _cache[family] = load_file(str(path))
    return _cache[family]


def meta(family: str, name: str) -> dict:
    """The case's parameters as recorded by make_golden.py (shapes, hyperparameters)."""
    if family not in _meta:
        import json
        from safetensors import safe_open
        with safe_open(str(GOLDEN_DIR / f"{family}.safetensors"), "np") as f:
            _meta[family] = json.loads(f.metadata()["cases"])
    return _meta[family][name]


def case(family: str, name: str) -> dict[str, np.ndarray]:
    g = golden(family)
    prefix = name + "/"
    out = {k[len(prefix):]: v for k, v in g.items() if k.startswith(prefix)}
    if not out:
        raise KeyError(f"no case {name!r} in golden/{family}.safetensors")
    return out


def rel_error(got: np.ndarray, want: np.ndarray) -> tuple[float, tuple]:
    got = np.asarray(got, np.float64).reshape(want.shape)
    want = np.asarray(want, np.float64)
    scale = max(float(np.abs(want).max()) if want.size else 0.0, 1e-30)
    diff = np.abs(got - want)
    if not np.all(np.isfinite(got)):
        idx = np.unravel_index(np.argmax(~np.isfinite(got)), got.shape)
        return float("inf"), idx
    idx = np.unravel_index(np.argmax(diff), diff.shape) if diff.size else ()
    return float(diff.max() / scale) if diff.size else 0.0, idx


def assert_close(label: str, got, want, tol_key: str):
    tol, why = TOLERANCES[tol_key]
    want = np.asarray(want)
    err, idx = rel_error(got, want)
    if err > tol:
        g = np.asarray(got, np.float64).reshape(want.shape)
        raise AssertionError(
            f"{label} shape {tuple(want.shape)}: max relative error {err:.3e} > {tol:.0e} ({tol_key}: {why}) "
            f"at index {tuple(int(i) for i in idx)}: got {g[idx]:.8g}, want {want[idx]:.8g}")
    return err
