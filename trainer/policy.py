"""PufferLib 5.0's default policy on the GPU: one flat weight buffer, rollout step, training scan.

Architecture (DESIGN.md "Numerics"): encoder W_enc [H, D] (no activation) → L MinGRU layers
W_l [3H, H] → decoder W_dec [A+1, H] (every head's columns in head order, then the value).
Bias-free, y = x·Wᵀ.

Action heads (docs/design-notes.md, issue 11): a head of size ≥ 2 is discrete (size_h logit
columns), a head of size 1 is continuous (one Gaussian mean column, and a state-independent log
std). A = Σ act_sizes decoder columns before the value; Kc = the number of continuous heads.

The weights live in ONE float32 buffer in PufferLib's checkpoint order and padding: encoder,
decoder, logstd [1, Kc] (only when there is a continuous head), MinGRU layers 0..L−1, each tensor
zero-padded to a multiple of 8 floats. Saving a checkpoint is copying that buffer
(trainer/checkpoint.py). Gradients and Muon's momentum use the same layout in their own buffers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import ops
from .gpu import GPU, Buffer, GPUError, Plan, Range

PAD = 8  # floats: PufferLib aligns every tensor to 16 bytes of bf16 = 8 elements
MASK_BITS = 32  # action-mask entries per u32 word on the GPU (bit j of word w = column 32·w + j)


def _pad8(n: int) -> int:
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

    def of(self, buf: Buffer) -> Range:
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
            off = _pad8(off + shape[0] * shape[1])
        return views

    @cached_property
    def num_floats(self) -> int:
        last = self.tensors[-1]
        return _pad8(last.offset + last.size)

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
            return [f"{self.Kc} continuous heads: logstd [1, {self.Kc}] is padded to {_pad8(self.Kc)} floats in the "
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


# ------------------------------------------------------------------------------------ GPU policy

MAX_SCAN_T = 4096  # the scan loops over T inside one invocation; lavapipe stops at 65,535 iterations


class Policy:
    """The policy's GPU buffers: weights, gradients (same layout) and the head sizes."""

    def __init__(self, gpu: GPU, spec: PolicySpec, weights: np.ndarray | None = None, seed: int = 73):
        self.gpu, self.spec = gpu, spec
        flat = init_weights(spec, seed) if weights is None else np.asarray(weights, np.float32)
        if flat.shape != (spec.num_floats,):
            raise GPUError(f"weights hold {flat.size} floats; this architecture needs {spec.num_floats}")
        self.weights = gpu.array(flat, "weights")
        self.grads = gpu.buffer(spec.nbytes, "grads")
        self.act_sizes = gpu.array(np.array(spec.act_sizes, np.uint32), "act_sizes")

    def w(self, name: str) -> Range:
        return self.spec.view(name).of(self.weights)

    def g(self, name: str) -> Range:
        return self.spec.view(name).of(self.grads)

    def read_weights(self) -> np.ndarray:
        return self.gpu.read(self.weights)

    def write_weights(self, flat: np.ndarray):
        flat = np.asarray(flat, np.float32)
        if flat.shape != (self.spec.num_floats,):
            raise GPUError(f"weights hold {flat.size} floats; this architecture needs {self.spec.num_floats}")
        self.gpu.upload(self.weights, flat)


MINGRU_WG = 32  # vec4 variant: invocations per workgroup along the hidden units (4 units each)
MINGRU_WG_SCALAR = 64  # scalar variant: one unit per invocation
MINGRU_VARIANTS = ("vec4", "scalar")

_MINGRU_F32 = {"c": "c_f", "x": "x_f", "h0": "h0_f", "dy": "dy_f", "state": "state_f", "y": "y_f", "hs": "hs_f",
               "dc": "dc_f", "dx": "dx_f", "snapshot": "snapshot_f"}  # the scalar kernels' f32 views


def _mingru_add(plan: Plan, entry: str, label: str, R: int, T: int, H: int, params: dict, ranges: dict,
                variant: str | None, bench_sizes: dict):
    """Add one mingru kernel: the variant from the caller or the tuner (timed on scratch buffers of
    `bench_sizes` floats per binding), its grid, and its dispatch shape."""
    gpu = plan.gpu
    if variant is None:
        def bench(choice, reps, bufs):
            if bufs is None:
                bufs = {k: gpu.buffer(4 * n, f"tune.{k}") for k, n in bench_sizes.items()}
            p = gpu.plan(f"tune {entry} {choice}")
            for _ in range(reps):
                _mingru_add(p, entry, label, R, T, H, params,
                            {k: bufs[k].range() if k in bufs else None for k in ranges}, choice, {})
            return p, bufs
        variant = gpu.tuner.mingru(entry, R, T, H, bench)
    if variant not in MINGRU_VARIANTS:
        raise GPUError(f"{label}: variant must be one of {MINGRU_VARIANTS}, got {variant!r}")
    if variant == "vec4":
        for name, r in ranges.items():  # tensors are read as vec4: offsets must be 16-byte aligned
            if r is not None and name != "terminals" and r.offset % 16:
                raise GPUError(f"{label}: {name} starts at byte {r.offset} of {r.buffer.label!r}; the vec4 mingru "
                               f"kernels read vec4s and need 16-byte aligned tensors (variant='scalar' does not)")
        k = gpu.kernel("mingru.wgsl", entry, WG=MINGRU_WG)
        grid, inv, bindings = (-(-(H // 4) // MINGRU_WG), R), R * H // 4, ranges
    else:
        k = gpu.kernel("mingru.wgsl", entry + "_scalar", WG_S=MINGRU_WG_SCALAR)
        grid, inv = (-(-H // MINGRU_WG_SCALAR), R), R * H
        bindings = {(_MINGRU_F32.get(n, n)): r for n, r in ranges.items()}
    return plan.add(k, grid, params, **bindings).note(invocations=inv, serial=T, work=R * T * H)


def mingru_step(plan: Plan, c: Range, x: Range, state: Range, terminals: Range, y: Range, N: int, H: int,
                snapshot: Range | None = None, variant: str | None = None):
    """One MinGRU step for N agents: state [N,H] updated in place, y [N,H]; terminals [N] reset first."""
    label = f"mingru_step N={N} H={H}"
    sizes = {"c": 3 * N * H, "x": N * H, "state": N * H, "terminals": N, "y": N * H}
    if snapshot is not None:
        sizes["snapshot"] = N * H
    for name, r, n in (("c", c, 3 * N * H), ("x", x, N * H), ("state", state, N * H), ("terminals", terminals, N),
                       ("y", y, N * H)) + ((("snapshot", snapshot, N * H),) if snapshot is not None else ()):
        ops.need(label, name, r, n)
    return _mingru_add(plan, "mingru_step", label, N, 1, H, dict(R=N, T=1, H=H, snapshot=int(snapshot is not None)),
                       dict(c=c, x=x, state=state, terminals=terminals, y=y, snapshot=snapshot),  # None: a dummy
                       variant, sizes)


def _check_scan(label, R, T, H, **ranges):
    if T > MAX_SCAN_T:
        raise GPUError(f"{label}: horizon T={T} exceeds {MAX_SCAN_T} (loop limit of one invocation)")
    sizes = _scan_sizes(R, T, H, ranges)
    for name, r in ranges.items():
        ops.need(label, name, r, sizes[name])
    return sizes


def _scan_sizes(R, T, H, names):
    sizes = {"c": 3 * R * T * H, "x": R * T * H, "h0": R * H, "terminals": R * T, "hs": R * T * H,
             "y": R * T * H, "dy": R * T * H, "dc": 3 * R * T * H, "dx": R * T * H}
    return {n: sizes[n] for n in names}


def mingru_scan_forward(plan: Plan, c: Range, x: Range, h0: Range, terminals: Range, hs: Range, y: Range,
                        R: int, T: int, H: int, variant: str | None = None):
    """Scan R agent rows over T steps from h0 [R,H]: hs (states) and y (outputs), [R·T, H] each."""
    label = f"mingru_scan_forward R={R} T={T} H={H}"
    ranges = dict(c=c, x=x, h0=h0, terminals=terminals, hs=hs, y=y)
    sizes = _check_scan(label, R, T, H, **ranges)
    return _mingru_add(plan, "mingru_scan_forward", label, R, T, H, dict(R=R, T=T, H=H), ranges, variant, sizes)


def mingru_scan_backward(plan: Plan, c: Range, x: Range, h0: Range, terminals: Range, hs: Range, dy: Range,
                         dc: Range, dx: Range, R: int, T: int, H: int, variant: str | None = None):
    """Backward of the scan: dc [R·T, 3H] and the highway part of dx [R·T, H] from dy [R·T, H]."""
    label = f"mingru_scan_backward R={R} T={T} H={H}"
    ranges = dict(c=c, x=x, h0=h0, terminals=terminals, hs=hs, dy=dy, dc=dc, dx=dx)
    sizes = _check_scan(label, R, T, H, **ranges)
    return _mingru_add(plan, "mingru_scan_backward", label, R, T, H, dict(R=R, T=T, H=H), ranges, variant, sizes)


def sample_actions(plan: Plan, out: Range, ldo: int, act_sizes: Range, globals_: Range, actions_step: Range,
                   actions: Range, logprobs: Range, values: Range, N: int, T: int, spec: PolicySpec,
                   logstd: Range | None = None, mask: Range | None = None):
    """Sample every head of N agents (sample.wgsl); mask [N, mask_words] u32 bits (None: all legal)."""
    label = f"sample_actions N={N}"
    ops.need(label, "out", out, (N - 1) * ldo + spec.out)
    ops.need(label, "actions_step", actions_step, N * spec.K)
    ops.need(label, "actions", actions, N * T * spec.K)
    ops.need(label, "logprobs", logprobs, N * T)
    ops.need(label, "values", values, N * T)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=N)
    k = plan.gpu.kernel("sample.wgsl", "sample_actions", WG=64)
    return plan.add(k, -(-N // 64), dict(N=N, K=spec.K, A=spec.A, ldo=ldo, T=T, W=spec.mask_words,
                                        masked=int(mask is not None)),
                    out=out, act_sizes=act_sizes, globals=globals_, logstd=logstd, mask=mask,
                    actions_step=actions_step, actions=actions, logprobs=logprobs, values=values)


def need_heads(label: str, spec: PolicySpec, *, logstd: Range | None, mask: Range | None, rows: int):
    """Shape checks shared by the launchers that read the action heads (sample, advantage, ppo)."""
    if spec.Kc and logstd is None:
        raise GPUError(f"{label}: heads {list(spec.act_sizes)} have {spec.Kc} continuous heads, so logstd is needed")
    if logstd is not None:
        ops.need(label, "logstd", logstd, spec.Kc)
    if mask is not None:
        ops.need(label, "mask", mask, rows * spec.mask_words)


# ------------------------------------------------------------------------------ rollout storage

class Rollout:
    """Agent-major rollout buffers for N agents × T steps (row = n·T + t), plus the recurrent state.

    obs rows are padded to ldo = ceil4(D) floats so the encoder's weight gradient can use vec4 loads.
    The action mask is stored bit-packed, [N·T, mask_words] u32, all legal until written.
    """

    def __init__(self, gpu: GPU, spec: PolicySpec, N: int, T: int):
        self.gpu, self.spec, self.N, self.T = gpu, spec, N, T
        self.ldo = ceil4(spec.obs_size)
        H, L = spec.hidden, spec.layers
        self.obs = gpu.buffer(4 * N * T * self.ldo, "rollout.obs")
        self.actions = gpu.buffer(4 * N * T * spec.K, "rollout.actions")  # discrete indices or Gaussian samples
        self.logprobs = gpu.buffer(4 * N * T, "rollout.logprobs")
        self.values = gpu.buffer(4 * N * T, "rollout.values")
        self.rewards = gpu.buffer(4 * N * T, "rollout.rewards")
        self.terminals = gpu.buffer(4 * N * T, "rollout.terminals")
        self.mask = gpu.array(np.full(N * T * spec.mask_words, 0xFFFFFFFF, np.uint32), "rollout.mask")
        self.state = gpu.buffer(4 * L * N * H, "rollout.state")  # [L][N][H], carried across rollouts
        self.initial_state = gpu.buffer(4 * L * N * H, "rollout.initial_state")  # snapshot at t = 0

    def state_of(self, buf: Buffer, l: int, row0: int = 0, rows: int | None = None) -> Range:
        N, H = self.N, self.spec.hidden
        rows = N - row0 if rows is None else rows
        return buf.f32((l * N + row0) * H, rows * H)

    def rows(self, buf: Buffer, row0: int, rows: int, width: int = 1) -> Range:
        """Agent rows [row0, row0+rows) of a [N·T, width] rollout buffer."""
        return buf.f32(row0 * self.T * width, rows * self.T * width)


class RolloutStep:
    """The per-step inference plan: store env data → encoder → L MinGRU steps → decoder → sample.

    Two prebuilt plans: one for t = 0 (which also snapshots the reset state for training) and one
    for t > 0. Python writes obs/rewards/terminals (and the action mask, only when it is not all
    legal) and the globals (t, step, seed, flags), runs one plan in one submit, and reads back the
    actions. `deterministic`: discrete heads take their most likely legal choice and Gaussian heads
    their mean μ (eval); `masks=False` leaves the mask out of the plan (all legal, a test reference).

    row0/rows: the agent range [row0, row0 + rows) of the rollout this step serves (default: all),
    so that each of PufferLib's env buffers gets its own plan over its own rows.
    """

    def __init__(self, policy: Policy, rollout: Rollout, seed: int, deterministic: bool = False, masks: bool = True,
                 row0: int = 0, rows: int | None = None):
        gpu, spec = policy.gpu, policy.spec
        self.policy, self.rollout, self.seed = policy, rollout, seed
        self.deterministic, self.masks = deterministic, masks
        N = rollout.N - row0 if rows is None else rows
        if row0 < 0 or N < 1 or row0 + N > rollout.N:
            raise GPUError(f"RolloutStep rows [{row0}, {row0 + N}) outside the rollout's {rollout.N} agents")
        H, L, D = spec.hidden, spec.layers, spec.obs_size
        self.N, self.row0 = N, row0
        self.obs_step = gpu.buffer(4 * N * D, "step.obs")
        self.rewards_step = gpu.buffer(4 * N, "step.rewards")
        self.terminals_step = gpu.buffer(4 * N, "step.terminals")
        self.mask_step = gpu.array(np.full(N * spec.mask_words, 0xFFFFFFFF, np.uint32), "step.mask")
        self._mask_all_legal = True  # what mask_step holds now: skip the upload while the env writes no mask
        self._mask_bytes = np.zeros((N, MASK_BITS * spec.mask_words), np.uint8)  # pack_mask's scratch
        self.globals = gpu.buffer(16, "step.globals")
        self.x = [gpu.buffer(4 * N * H, f"step.x{l}") for l in range(L + 1)]
        self.c = gpu.buffer(4 * N * 3 * H, "step.c")
        self.ldo = ceil4(spec.out)
        self.out = gpu.buffer(4 * N * self.ldo, "step.out")
        self.actions_step = gpu.buffer(4 * N * spec.K, "step.actions")
        self.plans = [self._build(snapshot=True), self._build(snapshot=False)]
        self._globals = np.zeros(4, np.uint32)

    def _build(self, snapshot: bool) -> Plan:
        p, spec, ro = self.policy, self.policy.spec, self.rollout
        gpu, N, H = p.gpu, self.N, spec.hidden
        r0 = self.row0
        plan = gpu.plan("rollout_step" + (" t=0" if snapshot else "") + (f" rows {r0}+{N}" if N != ro.N else ""))
        mask = self.mask_step.range() if self.masks else None
        rollout_store(plan, ro, self.obs_step.range(), self.rewards_step.range(), self.terminals_step.range(),
                      self.globals.range(), mask_step=mask, row0=r0, rows=N)
        ops.matmul_forward(plan, self.obs_step.range(), p.w("encoder"), self.x[0].range(), N, H, spec.obs_size)
        for l in range(spec.layers):
            ops.matmul_forward(plan, self.x[l].range(), p.w(f"mingru.{l}"), self.c.range(), N, 3 * H, H)
            mingru_step(plan, self.c.range(), self.x[l].range(), ro.state_of(ro.state, l, r0, N),
                        self.terminals_step.range(), self.x[l + 1].range(), N, H,
                        snapshot=ro.state_of(ro.initial_state, l, r0, N) if snapshot else None)
        ops.matmul_forward(plan, self.x[spec.layers].range(), p.w("decoder"), self.out.range(), N, spec.out, H,
                           ldy=self.ldo)
        sample_actions(plan, self.out.range(), self.ldo, p.act_sizes.range(), self.globals.range(),
                       self.actions_step.range(), ro.rows(ro.actions, r0, N, spec.K), ro.rows(ro.logprobs, r0, N),
                       ro.rows(ro.values, r0, N), N, ro.T, spec, logstd=p.w("logstd") if spec.Kc else None,
                       mask=mask)
        return plan.finalize()

    def _check(self, name: str, a, shape: tuple) -> np.ndarray:
        a = np.asarray(a)
        if a.shape != shape:
            raise ValueError(f"rollout step: {name} must have shape {shape} for {self.N} agents "
                             f"(obs size {self.policy.spec.obs_size}, heads {list(self.policy.spec.act_sizes)}), "
                             f"got {a.shape}")
        return a

    def _upload_mask(self, mask):
        """Bit-pack and upload the env's mask, or nothing while it stays all legal (the common case)."""
        if mask is None or not self.masks:
            return
        mask = self._check("action_mask", mask, (self.N, self.policy.spec.A))
        if mask.all():
            if not self._mask_all_legal:
                self.policy.gpu.upload(self.mask_step, np.full(self.mask_step.nbytes // 4, 0xFFFFFFFF, np.uint32))
                self._mask_all_legal = True
            return
        self.policy.gpu.upload(self.mask_step, pack_mask(mask, self.policy.spec, out=self._mask_bytes))
        self._mask_all_legal = False

    def __call__(self, t: int, step: int, obs: np.ndarray, rewards: np.ndarray, terminals: np.ndarray,
                 action_mask: np.ndarray | None = None) -> np.ndarray:
        """Run step t of the rollout (global step counter `step` feeds the RNG); returns actions [N, K].

        action_mask: the env's uint8 [N, A] (nonzero = legal), or None for all legal.
        """
        gpu, spec = self.policy.gpu, self.policy.spec
        N = self.N
        gpu.upload(self.obs_step, np.asarray(self._check("observations", obs, (N, spec.obs_size)), np.float32))
        gpu.upload(self.rewards_step, np.asarray(self._check("rewards", rewards, (N,)), np.float32))
        gpu.upload(self.terminals_step, np.asarray(self._check("terminals", terminals, (N,)), np.float32))
        self._upload_mask(action_mask)
        self._globals[:] = (t, step & 0xFFFFFFFF, self.seed & 0xFFFFFFFF, int(self.deterministic))
        gpu.upload(self.globals, self._globals)
        out = gpu.run(self.plans[0 if t == 0 else 1], read=self.actions_step)
        return out.reshape(N, spec.K)


def rollout_store(plan: Plan, ro: Rollout, obs_step: Range, rewards_step: Range, terminals_step: Range,
                  globals_: Range, mask_step: Range | None = None, row0: int = 0, rows: int | None = None):
    """Copy one step's env data (rows agents) into rollout rows [row0, row0 + rows) at t = globals[0],
    in agent chunks that fit a binding.

    mask_step [rows, mask_words] u32 is copied too when given (otherwise the rollout mask stays as is)."""
    gpu, D, T, ldo, W = plan.gpu, ro.spec.obs_size, ro.T, ro.ldo, ro.spec.mask_words
    rows = ro.N - row0 if rows is None else rows
    k = gpu.kernel("rollout.wgsl", "rollout_store", WG=64)
    per_agent = 4 * T * ldo
    chunk = max(1, (gpu.limits["max-storage-buffer-binding-size"] - 256) // per_agent)
    if mask_step is not None:
        ops.need("rollout_store", "mask_step", mask_step, rows * W)
    for a0 in range(0, rows, chunk):
        n = min(chunk, rows - a0)
        plan.add(k, (-(-max(ldo, W) // 64), n), dict(N=n, D=D, T=T, ldo=ldo, agent0=a0, W=W,
                                                     masked=int(mask_step is not None)),
                 obs_step=obs_step, rewards_step=rewards_step, terminals_step=terminals_step, globals=globals_,
                 mask_step=mask_step, obs=ro.rows(ro.obs, row0 + a0, n, ldo),
                 rewards=ro.rows(ro.rewards, row0 + a0, n), terminals=ro.rows(ro.terminals, row0 + a0, n),
                 mask=ro.rows(ro.mask, row0 + a0, n, W) if mask_step is not None else None)
    return plan


# ------------------------------------------------------------------------ training forward/backward

class Activations:
    """Scratch for one minibatch of R agent rows × T steps (M = R·T rows): what backward needs."""

    def __init__(self, gpu: GPU, spec: PolicySpec, R: int, T: int):
        H, L = spec.hidden, spec.layers
        M = R * T
        self.R, self.T, self.M = R, T, M
        self.ldo = ceil4(spec.out)
        self.x = [gpu.buffer(4 * M * H, f"act.x{l}") for l in range(L + 1)]  # layer inputs; x[L] feeds the decoder
        self.c = [gpu.buffer(4 * M * 3 * H, f"act.c{l}") for l in range(L)]  # pre-activations
        self.hs = [gpu.buffer(4 * M * H, f"act.hs{l}") for l in range(L)]  # states h_t
        self.out = gpu.buffer(4 * M * self.ldo, "act.out")  # [M, ldo]: logits, value
        self.dout = gpu.buffer(4 * M * self.ldo, "act.dout")  # written by the loss (ppo.wgsl) or a test
        self.dx = [gpu.buffer(4 * M * H, "act.dx_a"), gpu.buffer(4 * M * H, "act.dx_b")]  # ping-pong
        self.dc = gpu.buffer(4 * M * 3 * H, "act.dc")
        self.dx_highway = gpu.buffer(4 * M * H, "act.dx_highway")


def policy_forward(plan: Plan, p: Policy, act: Activations, obs: Range, ldo_obs: int, terminals: Range,
                   h0: list[Range]):
    """Training forward over a minibatch: encoder → L scans from h0 → decoder (act.out)."""
    spec, M, H = p.spec, act.M, p.spec.hidden
    ops.matmul_forward(plan, obs, p.w("encoder"), act.x[0].range(), M, H, spec.obs_size, ldx=ldo_obs)
    for l in range(spec.layers):
        ops.matmul_forward(plan, act.x[l].range(), p.w(f"mingru.{l}"), act.c[l].range(), M, 3 * H, H)
        mingru_scan_forward(plan, act.c[l].range(), act.x[l].range(), h0[l], terminals, act.hs[l].range(),
                            act.x[l + 1].range(), act.R, act.T, H)
    ops.matmul_forward(plan, act.x[spec.layers].range(), p.w("decoder"), act.out.range(), M, spec.out, H,
                       ldy=act.ldo)
    return plan


def policy_backward(plan: Plan, p: Policy, act: Activations, obs: Range, ldo_obs: int, terminals: Range,
                    h0: list[Range], dobs: Range | None = None):
    """Backward from act.dout [M, ldo] into p.grads (every tensor, overwritten) and optionally dobs [M, D]."""
    spec, M, H, L = p.spec, act.M, p.spec.hidden, p.spec.layers
    ops.matmul_backward_weight(plan, act.dout.range(), act.x[L].range(), p.g("decoder"), spec.out, H, M,
                               lddy=act.ldo)
    dy = act.dx[L % 2]
    ops.matmul_backward_input(plan, act.dout.range(), p.w("decoder"), dy.range(), M, H, spec.out, lddy=act.ldo)
    for l in reversed(range(L)):
        mingru_scan_backward(plan, act.c[l].range(), act.x[l].range(), h0[l], terminals, act.hs[l].range(),
                             dy.range(), act.dc.range(), act.dx_highway.range(), act.R, act.T, H)
        ops.matmul_backward_weight(plan, act.dc.range(), act.x[l].range(), p.g(f"mingru.{l}"), 3 * H, H, M)
        dx = act.dx[l % 2]
        ops.matmul_backward_input(plan, act.dc.range(), p.w(f"mingru.{l}"), dx.range(), M, H, 3 * H,
                                  z=act.dx_highway.range(), beta=1.0)
        dy = dx
    ops.matmul_backward_weight(plan, dy.range(), obs, p.g("encoder"), H, spec.obs_size, M, ldx=ldo_obs)
    if dobs is not None:
        ops.matmul_backward_input(plan, dy.range(), p.w("encoder"), dobs, M, spec.obs_size, H)
    return plan
