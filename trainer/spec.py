"""The policy's architecture and flat layout, without a GPU: what config, checkpoints and export need.

PufferLib 5.0's default policy: encoder W_enc [H, D] (no activation) → L MinGRU layers W_l [3H, H]
→ decoder W_dec [A+1, H] (every head's columns in head order, then the value). Bias-free, y = x·Wᵀ.

Action heads: a head of size ≥ 2 is discrete (size_h logit columns), a head of size 1 is continuous
(one Gaussian mean column and a state-independent log std). A = Σ act_sizes decoder columns before
the value; Kc = the number of continuous heads.

The weights are ONE float32 array in PufferLib's checkpoint order and padding: encoder, decoder,
logstd [1, Kc] (only when there is a continuous head), MinGRU layers 0..L−1, each tensor
zero-padded to a multiple of 8 floats. `PolicySpec.tensors` is that parameter table; the GPU
buffers of weights, gradients and Muon's momentum all use it.

Imports numpy only: parsing a config, reading a checkpoint or printing --help never loads wgpu.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

PAD = 8  # floats: PufferLib aligns every tensor to 16 bytes of bf16 = 8 elements
MASK_BITS = 32  # action-mask entries per u32 word on the GPU (bit j of word w = column 32·w + j)


def pad8(n: int) -> int:
    return -(-n // PAD) * PAD


def ceil4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass(frozen=True)
class TensorView:
    name: str
    offset: int  # float32 elements into the flat buffer
    shape: tuple[int, int]  # [out, in] row-major

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def rows(self) -> int:
        return self.shape[0]

    @property
    def cols(self) -> int:
        return self.shape[1]

    def of(self, buf):
        """This tensor's range in a GPU buffer of the flat layout (weights, grads, momentum)."""
        return buf.f32(self.offset, self.size)


@dataclass(frozen=True)
class PolicySpec:
    """The architecture: everything a checkpoint must agree on."""
    obs_size: int  # D
    hidden: int  # H
    layers: int  # L
    act_sizes: tuple[int, ...]  # one entry per head: 1 = continuous (Gaussian), >= 2 = discrete choices

    def __post_init__(self):
        if self.hidden <= 0 or self.hidden % 8:
            raise ValueError(f"hidden_size must be a positive multiple of 8 (PufferLib's layout), got {self.hidden}")
        if self.layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {self.layers}")
        if self.obs_size < 1:
            raise ValueError(f"obs size must be >= 1, got {self.obs_size}")
        if not self.act_sizes:
            raise ValueError("the env declares no action heads (NUM_ATNS must be >= 1 with one ACT_SIZES entry each)")
        for h, a in enumerate(self.act_sizes):
            if int(a) != a or a < 1:
                raise ValueError(f"action head {h} has size {a} in ACT_SIZES {list(self.act_sizes)}: every head needs "
                                 f"size >= 1 (1 = a continuous Gaussian head, >= 2 = a discrete head with that many "
                                 f"choices)")

    @property
    def A(self) -> int:
        """Decoder columns before the value: logits of the discrete heads, one mean per continuous head."""
        return sum(self.act_sizes)

    @property
    def K(self) -> int:
        return len(self.act_sizes)

    @property
    def continuous_heads(self) -> tuple[int, ...]:
        return tuple(h for h, a in enumerate(self.act_sizes) if a == 1)

    @property
    def Kc(self) -> int:
        """Continuous heads: the logstd tensor is [1, Kc]."""
        return len(self.continuous_heads)

    @property
    def action_space(self) -> str:
        """'discrete', 'continuous' (PufferLib's two kinds) or 'hybrid' (a mix: puffgpu only)."""
        return "discrete" if self.Kc == 0 else "continuous" if self.Kc == self.K else "hybrid"

    @property
    def mask_words(self) -> int:
        """u32 words per agent of the GPU action mask (one bit per decoder column)."""
        return -(-self.A // MASK_BITS)

    @property
    def out(self) -> int:
        """Decoder outputs: A logits/means + 1 value."""
        return self.A + 1

    @cached_property
    def tensors(self) -> list[TensorView]:
        H, D = self.hidden, self.obs_size
        shapes = [("encoder", (H, D)), ("decoder", (self.out, H))]
        if self.Kc:
            shapes.append(("logstd", (1, self.Kc)))  # PufferLib: right after the decoder (continuous only)
        shapes += [(f"mingru.{l}", (3 * H, H)) for l in range(self.layers)]
        views, off = [], 0
        for name, shape in shapes:
            views.append(TensorView(name, off, shape))
            off = pad8(off + shape[0] * shape[1])
        return views

    @cached_property
    def num_floats(self) -> int:
        last = self.tensors[-1]
        return pad8(last.offset + last.size)

    @property
    def nbytes(self) -> int:
        return 4 * self.num_floats

    def view(self, name: str) -> TensorView:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(f"no tensor {name!r}; have {[t.name for t in self.tensors]}")

    @property
    def encoder(self) -> TensorView:
        return self.tensors[0]

    @property
    def decoder(self) -> TensorView:
        return self.tensors[1]

    @property
    def logstd(self) -> TensorView | None:
        return self.tensors[2] if self.Kc else None

    def mingru(self, l: int) -> TensorView:
        return self.tensors[2 + (self.Kc > 0) + l]

    def describe(self) -> dict:
        return {"obs_size": self.obs_size, "hidden_size": self.hidden, "num_layers": self.layers,
                "act_sizes": list(self.act_sizes)}

    def pufferlib_notes(self) -> list[str]:
        """Why PufferLib 5.0 would not train this layout as puffgpu does ([] when it would)."""
        if self.action_space == "hybrid":
            return [f"heads {list(self.act_sizes)} mix discrete and continuous heads: PufferLib 5.0 rejects mixed "
                    f"action spaces, so this policy and its checkpoints are puffgpu-only"]
        if self.action_space == "continuous" and self.Kc % PAD:
            return [f"{self.Kc} continuous heads: logstd [1, {self.Kc}] is padded to {pad8(self.Kc)} floats in the "
                    f"checkpoint (PufferLib's layout), but PufferLib's own Muon walks unpadded offsets, so inside "
                    f"PufferLib every tensor after logstd is misaligned when K % 8 != 0; the file loads there, "
                    f"training it there is not reliable"]
        return []

    def flops_per_step(self) -> int:
        """Forward multiply-adds ×2 for one agent-step."""
        H = self.hidden
        return 2 * (H * self.obs_size + self.layers * 3 * H * H + self.out * H)


def pack_mask(mask: np.ndarray, spec: PolicySpec, out: np.ndarray | None = None) -> np.ndarray:
    """uint8 action mask [N, A] (nonzero = legal) → the GPU's bit-packed [N, mask_words] u32.

    `out` (uint8 [N, 32·mask_words], zero beyond column A) is reusable scratch between calls."""
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.shape[1] != spec.A:
        raise ValueError(f"action_mask must have shape (agents, {spec.A}) = one entry per decoder column of heads "
                         f"{list(spec.act_sizes)}, got {mask.shape}")
    N, W = mask.shape[0], spec.mask_words
    if out is None or out.shape != (N, MASK_BITS * W):
        out = np.zeros((N, MASK_BITS * W), np.uint8)
    np.not_equal(mask, 0, out=out[:, :spec.A].view(bool))
    return np.packbits(out, axis=-1, bitorder="little").view("<u4")  # bit j of word w = column 32·w + j


def init_weights(spec: PolicySpec, seed: int) -> np.ndarray:
    """PufferLib's init: U(−b, b), b = gain/√fan_in; gain √2 for the encoder, 1 elsewhere; logstd 0 (σ = 1).

    The i-th randomly initialised tensor (in checkpoint order, logstd skipped) draws from its own
    generator seeded seed + i, as PufferLib seeds cuRAND with seed + 0, 1, 2, … (bit-exact
    reproduction of cuRAND is neither possible nor needed).
    """
    flat = np.zeros(spec.num_floats, np.float32)
    for i, t in enumerate(t for t in spec.tensors if t.name != "logstd"):
        gain = math.sqrt(2.0) if t.name == "encoder" else 1.0
        bound = gain / math.sqrt(t.cols)
        rng = np.random.default_rng(seed + i)
        flat[t.offset:t.offset + t.size] = rng.uniform(-bound, bound, t.size).astype(np.float32)
    return flat


def unflatten(spec: PolicySpec, flat: np.ndarray) -> dict[str, np.ndarray]:
    return {t.name: np.asarray(flat[t.offset:t.offset + t.size]).reshape(t.shape) for t in spec.tensors}


def flatten(spec: PolicySpec, tensors: dict[str, np.ndarray]) -> np.ndarray:
    flat = np.zeros(spec.num_floats, np.float32)
    for t in spec.tensors:
        a = np.asarray(tensors[t.name], np.float32)
        if a.shape != t.shape:
            raise ValueError(f"{t.name}: expected shape {t.shape}, got {a.shape}")
        flat[t.offset:t.offset + t.size] = a.ravel()
    return flat
