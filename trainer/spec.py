"""The policy's architecture and flat layout, without a GPU: what config, checkpoints and export need.

PufferLib 5.0's default policy: encoder W_enc [H, D] (no activation) → L MinGRU layers W_l [3H, H]
→ decoder W_dec [A+1, H] (every head's columns in head order, then the value). Bias-free, y = x·Wᵀ.

Pictures: an env that shows one declares picture = (height, width, channels); the picture is the
LAST height·width·channels values of each observation row (rows from the top, channels last), the
F = D − h·w·c values before it are plain features. Its encoder is three convolutions (CONVS: 32@8×8
stride 4, 64@4×4 s2, 64@3×3 s1; valid, no bias, ReLU each), their output flattened (oy, ox, c),
then encoder.linear [H, F + conv_out] (no bias, no activation) applied to [features, conv output]
as two products into one output. A conv weight is stored (out, ky, kx, in): a matrix of `out` rows
× ky·kx·in columns, which is how Muon treats it too.

Observation dtype: uint8 observations (0–255) reach the GPU packed 4 per u32 word; a picture env's
are scaled by 1/255 there, a uint8 env without a picture is fed its raw values (as PufferLib does);
every other dtype is converted to float32 on upload, as before.

Action heads: a head of size ≥ 2 is discrete (size_h logit columns), a head of size 1 is continuous
(one Gaussian mean column and a state-independent log std). A = Σ act_sizes decoder columns before
the value; Kc = the number of continuous heads.

The weights are ONE float32 array in PufferLib's checkpoint order and padding: encoder (or, with a
picture, encoder.convs.0..2 then encoder.linear), decoder, logstd [1, Kc] (only when there is a
continuous head), MinGRU layers 0..L−1, each tensor zero-padded to a multiple of 8 floats.
`PolicySpec.tensors` is that parameter table; the GPU buffers of weights, gradients and Muon's
momentum all use it.

Imports numpy only: parsing a config, reading a checkpoint or printing --help never loads wgpu.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

PAD = 8  # floats: PufferLib aligns every tensor to 16 bytes of bf16 = 8 elements
MASK_BITS = 32  # action-mask entries per u32 word on the GPU (bit j of word w = column 32·w + j)
CONVS = ((32, 8, 4), (64, 4, 2), (64, 3, 1))  # the picture encoder: (out channels, kernel, stride) per layer
MIN_PICTURE = 36  # the smallest side the three valid convolutions accept (36 → 8 → 3 → 1)
OBS_DTYPES = ("float32", "uint8")  # how observations reach the GPU: float32, or uint8 packed 4 per u32


def pad8(n: int) -> int:
    return -(-n // PAD) * PAD


def ceil4(n: int) -> int:
    return -(-n // 4) * 4


@dataclass(frozen=True)
class ConvLayer:
    """One valid-padded, bias-free convolution: input [in_h, in_w, in_c] → output [out_h, out_w, out_c]."""
    in_h: int
    in_w: int
    in_c: int
    out_c: int
    kernel: int
    stride: int

    @property
    def out_h(self) -> int:
        return (self.in_h - self.kernel) // self.stride + 1

    @property
    def out_w(self) -> int:
        return (self.in_w - self.kernel) // self.stride + 1

    @property
    def places(self) -> int:
        return self.out_h * self.out_w

    @property
    def patch(self) -> int:
        return self.kernel * self.kernel * self.in_c

    @property
    def in_size(self) -> int:
        return self.in_h * self.in_w * self.in_c

    @property
    def out_size(self) -> int:
        return self.places * self.out_c

    @property
    def macs(self) -> int:
        """Multiply-adds of this layer's forward pass per frame."""
        return self.places * self.patch * self.out_c

    def label(self) -> str:
        return (f"{self.in_h}x{self.in_w}x{self.in_c} -> {self.out_h}x{self.out_w}x{self.out_c} "
                f"(k={self.kernel} s={self.stride})")


def conv_layers(height: int, width: int, channels: int, convs=CONVS) -> list[ConvLayer]:
    """The encoder's convolutions for a picture of height × width × channels (HWC): the one place their
    geometry is computed (the spec's tensors, the conv kernels and the golden generator read it)."""
    if min(height, width, channels) < 1:
        raise ValueError(f"picture (height, width, channels) = ({height}, {width}, {channels}): all must be positive")
    layers, h, w, c = [], height, width, channels
    for out_c, k, s in convs:
        if h < k or w < k:
            raise ValueError(f"picture {height}x{width}x{channels} (height x width x channels) is too small for the "
                             f"conv encoder: the three convolutions (8x8 stride 4, 4x4 stride 2, 3x3 stride 1) need "
                             f"at least {MIN_PICTURE}x{MIN_PICTURE} (layer {len(layers)} gets {h}x{w}, kernel {k})")
        layers.append(ConvLayer(h, w, c, out_c, k, s))
        h, w, c = layers[-1].out_h, layers[-1].out_w, out_c
    return layers


def obs_dtype_name(dtype) -> str:
    """'uint8' for uint8 observations (packed on the GPU), 'float32' for every other dtype."""
    if isinstance(dtype, str) and dtype in OBS_DTYPES:
        return dtype
    return "uint8" if np.dtype(dtype) == np.uint8 else "float32"


@dataclass(frozen=True)
class TensorView:
    name: str
    offset: int  # float32 elements into the flat buffer
    shape: tuple[int, int]  # [out, in] row-major (a conv: [out, ky·kx·in], the matrix Muon sees)
    dims: tuple[int, ...] | None = None  # a conv's own shape (out, ky, kx, in), for export; None: `shape`

    @property
    def export_shape(self) -> tuple[int, ...]:
        return self.dims or self.shape

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
    picture: tuple[int, int, int] | None = None  # (height, width, channels) of the row's last values, or None
    obs_dtype: str = "float32"  # 'uint8' (packed 4 per u32 on the GPU; ÷255 with a picture) or 'float32'

    def __post_init__(self):
        object.__setattr__(self, "obs_dtype", obs_dtype_name(self.obs_dtype))
        if self.picture is not None:
            pic = tuple(self.picture)
            if len(pic) != 3 or any(int(v) != v or v < 1 for v in pic):
                raise ValueError(f"picture must be (height, width, channels), three positive integers, "
                                 f"got {self.picture}")
            pic = tuple(int(v) for v in pic)
            object.__setattr__(self, "picture", pic)
            conv_layers(*pic)  # too small: a clear error
            if pic[0] * pic[1] * pic[2] > self.obs_size:
                raise ValueError(f"picture {pic[0]}x{pic[1]}x{pic[2]} (height x width x channels) needs "
                                 f"{pic[0] * pic[1] * pic[2]} values but the observation holds {self.obs_size}: the "
                                 f"picture is the last height*width*channels values of each observation row")
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
    def packed(self) -> bool:
        """uint8 observations: stored on the GPU 4 per u32 word (value i = byte i%4 of word i/4)."""
        return self.obs_dtype == "uint8"

    @property
    def obs_words(self) -> int:
        """u32 words (packed) or floats of one observation row as uploaded."""
        return -(-self.obs_size // 4) if self.packed else self.obs_size

    @property
    def features(self) -> int:
        """F: observation values before the picture (all of them without one)."""
        return self.obs_size - (self.picture[0] * self.picture[1] * self.picture[2] if self.picture else 0)

    @cached_property
    def convs(self) -> list[ConvLayer]:
        """The picture encoder's convolutions (conv_layers); [] without a picture."""
        return conv_layers(*self.picture) if self.picture else []

    @property
    def conv_out(self) -> int:
        """Values of the flattened last conv output (0 without a picture)."""
        return self.convs[-1].out_size if self.picture else 0

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
        if self.picture:
            shapes = [(f"encoder.convs.{i}", (l.out_c, l.patch), (l.out_c, l.kernel, l.kernel, l.in_c))
                      for i, l in enumerate(self.convs)]
            shapes.append(("encoder.linear", (H, self.features + self.conv_out), None))
        else:
            shapes = [("encoder", (H, D), None)]
        shapes.append(("decoder", (self.out, H), None))
        if self.Kc:
            shapes.append(("logstd", (1, self.Kc), None))  # PufferLib: right after the decoder (continuous only)
        shapes += [(f"mingru.{l}", (3 * H, H), None) for l in range(self.layers)]
        views, off = [], 0
        for name, shape, dims in shapes:
            views.append(TensorView(name, off, shape, dims))
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
    def encoders(self) -> list[TensorView]:
        """The tensors before the decoder: [encoder], or the three convs and encoder.linear."""
        return self.tensors[:4] if self.picture else self.tensors[:1]

    @property
    def encoder(self) -> TensorView:
        """The linear layer that produces the first hidden vector (encoder or encoder.linear)."""
        return self.encoders[-1]

    @property
    def decoder(self) -> TensorView:
        return self.tensors[len(self.encoders)]

    @property
    def logstd(self) -> TensorView | None:
        return self.tensors[len(self.encoders) + 1] if self.Kc else None

    def mingru(self, l: int) -> TensorView:
        return self.tensors[len(self.encoders) + 1 + (self.Kc > 0) + l]

    def describe(self) -> dict:
        """The architecture as the sidecar and the run log record it (PolicySpec.from_meta reads it back)."""
        return {"obs_size": self.obs_size, "hidden_size": self.hidden, "num_layers": self.layers,
                "act_sizes": list(self.act_sizes), "picture": list(self.picture) if self.picture else None,
                "obs_dtype": self.obs_dtype}

    @classmethod
    def for_env(cls, env, hidden: int, layers: int) -> "PolicySpec":
        """The spec of a policy for `env` (a vecenv: obs_size, act_sizes, obs_dtype and picture, which is
        (height, width, channels) or None)."""
        return cls(env.obs_size, hidden, layers, tuple(env.act_sizes), picture=getattr(env, "picture", None),
                   obs_dtype=getattr(env, "obs_dtype", "float32"))

    @classmethod
    def from_meta(cls, meta: dict) -> "PolicySpec":
        """The spec a sidecar describes (one written before pictures existed has neither picture nor obs_dtype)."""
        pic = meta.get("picture")
        return cls(int(meta["obs_size"]), int(meta["hidden_size"]), int(meta["num_layers"]),
                   tuple(int(a) for a in meta["act_sizes"]), picture=tuple(pic) if pic else None,
                   obs_dtype=meta.get("obs_dtype") or "float32")

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
        """Forward multiply-adds ×2 for one agent-step (with a picture: the convolutions, then encoder.linear)."""
        H = self.hidden
        enc = self.encoder.size
        enc += sum(l.macs for l in self.convs)
        return 2 * (enc + self.layers * 3 * H * H + self.out * H)


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


def pack_obs(obs: np.ndarray, spec: PolicySpec, stride: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """Observation rows [rows, D] → the GPU's u32 words [rows, stride]: uint8 values packed 4 per word,
    little-endian (value i = byte i%4 of word i/4), or float32 values one per word; zero padding up to
    `stride` words (default spec.obs_words). uint8 rows that are whole words already come back as a
    view; `out` (uint8 [rows, 4·stride], zero past D) is the packing scratch of a caller that packs
    every step, so nothing is allocated."""
    obs = np.asarray(obs)
    stride = spec.obs_words if stride is None else stride
    if obs.ndim != 2 or obs.shape[1] != spec.obs_size:
        raise ValueError(f"observations must have shape (rows, {spec.obs_size}), got {obs.shape}")
    if spec.packed:
        if obs.dtype != np.uint8:
            raise ValueError(f"this policy takes uint8 observations (obs_dtype uint8), got {obs.dtype}")
        if spec.obs_size == 4 * stride:
            return np.ascontiguousarray(obs).view("<u4")
        out = np.zeros((obs.shape[0], 4 * stride), np.uint8) if out is None else out
        out[:, :spec.obs_size] = obs
        return out.view("<u4")
    out = np.zeros((obs.shape[0], stride), np.float32)
    out[:, :spec.obs_size] = obs
    return out.view("<u4")


def init_weights(spec: PolicySpec, seed: int) -> np.ndarray:
    """PufferLib's init: U(−b, b), b = gain/√fan_in (fan_in = columns); gain √2 for the encoder (with a
    picture: each conv and encoder.linear), 1 elsewhere; logstd 0 (σ = 1).

    The i-th randomly initialised tensor (in checkpoint order, logstd skipped) draws from its own
    generator seeded seed + i, as PufferLib seeds cuRAND with seed + 0, 1, 2, … (bit-exact
    reproduction of cuRAND is neither possible nor needed).
    """
    flat = np.zeros(spec.num_floats, np.float32)
    for i, t in enumerate(t for t in spec.tensors if t.name != "logstd"):
        gain = math.sqrt(2.0) if t.name.startswith("encoder") else 1.0
        bound = gain / math.sqrt(t.cols)
        rng = np.random.default_rng(seed + i)
        flat[t.offset:t.offset + t.size] = rng.uniform(-bound, bound, t.size).astype(np.float32)
    return flat


def unflatten(spec: PolicySpec, flat: np.ndarray) -> dict[str, np.ndarray]:
    """{name: [rows, cols] view}; a conv as its matrix [out, ky·kx·in] (reshape to t.export_shape for 4-D)."""
    return {t.name: np.asarray(flat[t.offset:t.offset + t.size]).reshape(t.shape) for t in spec.tensors}


def flatten(spec: PolicySpec, tensors: dict[str, np.ndarray]) -> np.ndarray:
    flat = np.zeros(spec.num_floats, np.float32)
    for t in spec.tensors:
        a = np.asarray(tensors[t.name], np.float32)
        if a.shape not in (t.shape, t.export_shape):
            raise ValueError(f"{t.name}: expected shape {t.export_shape}, got {a.shape}")
        flat[t.offset:t.offset + t.size] = a.ravel()
    return flat
