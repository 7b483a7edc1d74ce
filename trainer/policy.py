"""The policy on the GPU: its buffers, the rollout storage, the per-step inference plan, and the
training forward/backward over a minibatch.

The architecture and the flat layout are trainer/spec.py's PolicySpec; the weights live in ONE
float32 buffer in that layout (saving a checkpoint is copying it), and the gradients and Muon's
momentum use the same layout in their own buffers. The kernels are the families in
trainer/kernels/.

Observations travel and are stored as u32 words: float32 values bit for bit, or uint8 values packed
4 per word (a picture env's scaled by 1/255 where a kernel reads them; a uint8 env without a picture
is fed its raw values, as in PufferLib). The encoder (encoder_forward /
encoder_backward) is the one place that reads them:
  float32, no picture: encoder matmul straight from the rows (as before pictures existed)
  uint8, no picture:   obs_unpack → float rows → encoder matmul
  picture:             conv_forward reads the picture straight from the rows (packed or not);
                       x0 = features·W[:, :F]ᵀ + conv·W[:, F:]ᵀ, two products into one output of
                       encoder.linear (the features product only when F > 0; uint8 features unpacked
                       first, float32 ones read in place)
"""
from __future__ import annotations

import numpy as np

from .gpu import GPU, Buffer, GPUError, Plan, Range
from .kernels import TR_WIDTH, tr_column
from .kernels.conv import ConvScratch, PictureInput, conv_backward, conv_chunk, conv_forward, conv_layers, obs_unpack
from .kernels.matmul import matmul_backward_input, matmul_backward_weight, matmul_forward
from .kernels.mingru import mingru_scan_backward, mingru_scan_forward, mingru_step
from .kernels.rollout import rollout_store
from .kernels.sample import sample_actions
from .spec import MASK_BITS, PolicySpec, ceil4, init_weights, pack_mask, pack_obs


# ------------------------------------------------------------------------ encoder: observations → x0

class EncoderScratch:
    """What the encoder needs besides x0 for `rows` observation rows: the unpacked uint8 values it
    multiplies (all D without a picture, the F features with one), the conv outputs (and, for
    training, their gradients) and the conv family's bounded patch scratch."""

    def __init__(self, gpu: GPU, spec: PolicySpec, rows: int, grads: bool, label: str):
        self.unpacked = (spec.features if spec.packed else 0)  # values per row unpacked to float32
        self.ld = ceil4(self.unpacked)
        self.feats = gpu.buffer(4 * rows * self.ld, f"{label}.features") if self.unpacked else None
        self.layers, self.ys, self.dys, self.scratch, self.src = [], [], [], None, None
        if not spec.picture:
            return
        self.layers = conv_layers(*spec.picture)
        limit = gpu.limits["max-storage-buffer-binding-size"]
        for i, l in enumerate(self.layers):
            # the convolutions bind their outputs a chunk of frames at a time, so each output must fit one
            # buffer; the last one feeds the linear layer whole, so it must fit one binding
            cap, what = ((limit, "one binding") if i == len(self.layers) - 1 else
                         (gpu.limits["max-buffer-size"], "one buffer"))
            if 4 * rows * l.out_size > cap:
                raise GPUError(f"{rows} frames of a {'x'.join(map(str, spec.picture))} picture: conv {i}'s output "
                               f"({l.out_h}x{l.out_w}x{l.out_c} per frame) needs {4 * rows * l.out_size:,} bytes, "
                               f"more than {what} holds on this adapter ({cap:,}); use a smaller "
                               f"train.minibatch_size (at most {cap // (4 * l.out_size):,} frames)")
        self.ys = [gpu.buffer(4 * rows * l.out_size, f"{label}.conv{i}") for i, l in enumerate(self.layers)]
        if grads:
            self.dys = [gpu.buffer(4 * rows * l.out_size, f"{label}.dconv{i}") for i, l in enumerate(self.layers)]
        # the conv family's bounded patch scratch (32 MiB: ~190 frames at 64×64×3), never a whole minibatch's
        self.chunk = conv_chunk(self.layers, rows, max_binding=limit)
        self.scratch = ConvScratch(gpu, self.layers, self.chunk)
        self.src = lambda stride: PictureInput(packed=spec.packed, row_stride=stride, offset=spec.features)

    @property
    def nbytes(self) -> int:
        return buffers_nbytes(self)


def buffers_nbytes(*objs) -> int:
    """Bytes of the GPU buffers held by `objs` (attributes, lists of them, nested scratch objects), each
    counted once."""
    seen, total, stack = set(), 0, list(objs)
    while stack:
        o = stack.pop()
        if id(o) in seen or o is None:
            continue
        seen.add(id(o))
        if isinstance(o, Buffer):
            total += o.nbytes
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
        elif hasattr(o, "__dict__") and not isinstance(o, (GPU, Plan, type)):
            stack.extend(v for k, v in vars(o).items() if k not in ("gpu", "policy", "rollout", "spec"))
    return total


def encoder_forward(plan: Plan, p: "Policy", enc: EncoderScratch, obs: Range, obs_stride: int, rows: int, x0: Range):
    """x0 [rows, H] from observation rows obs [rows, obs_stride] u32 words (see the module docstring)."""
    spec, H, F = p.spec, p.spec.hidden, p.spec.features
    if spec.packed and enc.unpacked:
        obs_unpack(plan, obs, obs_stride, enc.unpacked, enc.feats.range(), enc.ld, rows,
                   divisor=255.0 if spec.picture else 1.0)
    feats, ldf = (enc.feats.range(), enc.ld) if enc.unpacked else (obs, obs_stride)
    if not spec.picture:
        matmul_forward(plan, feats, p.w("encoder"), x0, rows, H, spec.obs_size, ldx=ldf)
        return plan
    conv_forward(plan, obs, enc.src(obs_stride), [p.w(f"encoder.convs.{i}") for i in range(len(enc.layers))],
                 [y.range() for y in enc.ys], rows, enc.layers, enc.scratch)
    lin, co = spec.encoder, spec.conv_out
    if F:
        matmul_forward(plan, feats, p.w("encoder.linear"), x0, rows, H, F, ldx=ldf, ldw=lin.cols)
    matmul_forward(plan, enc.ys[-1].range(), p.weights.f32(lin.offset + F, lin.size - F), x0, rows, H, co,
                   ldw=lin.cols, accumulate=F > 0)
    return plan


def encoder_backward(plan: Plan, p: "Policy", enc: EncoderScratch, obs: Range, obs_stride: int, rows: int,
                     dx0: Range, dobs: Range | None = None):
    """The encoder's weight gradients (overwritten) from dx0 [rows, H]; dobs [rows, D] only for float
    observations without a picture (the picture's own gradient is never needed)."""
    spec, H, F = p.spec, p.spec.hidden, p.spec.features
    feats, ldf = (enc.feats.range(), enc.ld) if enc.unpacked else (obs, obs_stride)
    if dobs is not None and (spec.picture or spec.packed):
        raise GPUError("policy_backward: d obs exists only for float32 observations without a picture")
    if not spec.picture:
        matmul_backward_weight(plan, dx0, feats, p.g("encoder"), H, spec.obs_size, rows, ldx=ldf)
        if dobs is not None:
            matmul_backward_input(plan, dx0, p.w("encoder"), dobs, rows, spec.obs_size, H)
        return plan
    lin, co, n = spec.encoder, spec.conv_out, len(enc.layers)
    if F:
        matmul_backward_weight(plan, dx0, feats, p.grads.f32(lin.offset, lin.size), H, F, rows, ldx=ldf,
                               lddw=lin.cols)
    matmul_backward_weight(plan, dx0, enc.ys[-1].range(), p.grads.f32(lin.offset + F, lin.size - F), H, co, rows,
                           lddw=lin.cols)
    matmul_backward_input(plan, dx0, p.weights.f32(lin.offset + F, lin.size - F), enc.dys[-1].range(), rows, co, H,
                          ldw=lin.cols)
    conv_backward(plan, obs, enc.src(obs_stride), [p.w(f"encoder.convs.{i}") for i in range(n)],
                  [y.range() for y in enc.ys], [d.range() for d in enc.dys],
                  [p.g(f"encoder.convs.{i}") for i in range(n)], rows, enc.layers, enc.scratch)
    return plan


# ------------------------------------------------------------------------------------ GPU policy

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


# ------------------------------------------------------------------------------ rollout storage

class Rollout:
    """Agent-major rollout buffers for N agents × T steps (row = n·T + t), plus the recurrent state.

    obs rows are u32 words: float32 observations padded to obs_stride = ceil4(D) so the encoder's
    weight gradient can use vec4 loads; uint8 observations packed 4 per word, obs_stride = ceil(D/4)
    (a 64×64×3 frame: 12,288 bytes per step instead of 49,152).
    The action mask is stored bit-packed, [N·T, mask_words] u32, all legal until written.

    Observations are the one rollout buffer that grows past a device's largest buffer (4096 agents ×
    64 steps × 416 floats is 436 MB; WebGPU guarantees 256 MiB), so they live in pages of `page_rows`
    agents each (one page when they fit). A page holds a whole number of `row_multiple` agent rows
    (the trainer passes a minibatch's rows), so a minibatch never straddles two pages.
    """

    def __init__(self, gpu: GPU, spec: PolicySpec, N: int, T: int, row_multiple: int = 1):
        self.gpu, self.spec, self.N, self.T = gpu, spec, N, T
        self.obs_stride = self.stride_for(spec)
        H, L = spec.hidden, spec.layers
        self.page_rows = self._page_rows(gpu.limits["max-buffer-size"], row_multiple)
        self.obs_pages = [gpu.buffer(4 * min(self.page_rows, N - r0) * T * self.obs_stride,
                                     "rollout.obs" if self.page_rows >= N else f"rollout.obs[{i}]")
                          for i, r0 in enumerate(range(0, N, self.page_rows))]
        self.actions = gpu.buffer(4 * N * T * spec.K, "rollout.actions")  # discrete indices or Gaussian samples
        # [N·T, TR_WIDTH]: log-prob, value, reward, terminal, advantage, return (kernels.TRANSITION)
        self.transitions = gpu.buffer(4 * N * T * TR_WIDTH, "rollout.transitions")
        self.mask = gpu.array(np.full(N * T * spec.mask_words, 0xFFFFFFFF, np.uint32), "rollout.mask")
        self.state = gpu.buffer(4 * L * N * H, "rollout.state")  # [L][N][H], carried across rollouts
        self.initial_state = gpu.buffer(4 * L * N * H, "rollout.initial_state")  # snapshot at t = 0

    def _page_rows(self, max_buffer: int, row_multiple: int) -> int:
        """Agent rows per observation page: all N if they fit in one buffer, else the most that fit,
        rounded down to a multiple of row_multiple."""
        per_row = 4 * self.T * self.obs_stride
        if self.N * per_row <= max_buffer:
            return self.N
        fit = max_buffer // per_row
        if fit < row_multiple:
            raise GPUError(f"rollout: a minibatch of {row_multiple} agent rows × {self.T} steps of observations "
                           f"({row_multiple * per_row:,} B) is more than this device's largest buffer "
                           f"({max_buffer:,} B); choose a minibatch_size of at most {fit * self.T} "
                           f"(= {fit} rows × horizon {self.T})")
        return fit // row_multiple * row_multiple

    def obs_rows(self, row0: int, rows: int) -> Range:
        """Observation rows of agents [row0, row0+rows), which must lie in one page (obs_pieces splits)."""
        page, r = divmod(row0, self.page_rows)
        if r + rows > self.page_rows or row0 + rows > self.N:
            raise GPUError(f"rollout: agent rows [{row0}, {row0 + rows}) cross an observation page of "
                           f"{self.page_rows} rows; take them piece by piece (Rollout.obs_pieces)")
        return self.rows(self.obs_pages[page], r, rows, self.obs_stride)

    def obs_pieces(self, row0: int, rows: int) -> list[tuple[int, int]]:
        """Agent rows [row0, row0+rows) split where observation pages end: [(first row, rows), ...]."""
        out, r = [], row0
        while r < row0 + rows:
            n = min(row0 + rows, (r // self.page_rows + 1) * self.page_rows) - r
            out.append((r, n))
            r += n
        return out

    def upload_obs(self, words: np.ndarray):
        """Write every observation row: words [N·T, obs_stride] (u32 words or float32), across the pages."""
        words = np.ascontiguousarray(words).reshape(self.N, self.T * self.obs_stride)
        for i, page in enumerate(self.obs_pages):
            self.gpu.upload(page, words[i * self.page_rows:(i + 1) * self.page_rows])

    def read_obs(self) -> np.ndarray:
        """Every observation row as u32 words, [N·T, obs_stride] (tests and tools)."""
        return np.concatenate([self.gpu.read(p, dtype=np.uint32) for p in self.obs_pages]).reshape(-1, self.obs_stride)

    @staticmethod
    def stride_for(spec: PolicySpec) -> int:
        """u32 words per rollout observation row: ceil(D/4) packed uint8, else ceil4(D) floats (vec4 loads)."""
        return spec.obs_words if spec.packed else ceil4(spec.obs_size)

    def state_of(self, buf: Buffer, l: int, row0: int = 0, rows: int | None = None) -> Range:
        N, H = self.N, self.spec.hidden
        rows = N - row0 if rows is None else rows
        return buf.f32((l * N + row0) * H, rows * H)

    def rows(self, buf: Buffer, row0: int, rows: int, width: int = 1) -> Range:
        """Agent rows [row0, row0+rows) of a [N·T, width] rollout buffer."""
        return buf.f32(row0 * self.T * width, rows * self.T * width)

    def column(self, name: str, row0: int, rows: int) -> Range:
        """Transition column `name` of agent rows [row0, row0+rows): a range that starts at the column of
        the first row and ends at the column of the last, read at a stride of TR_WIDTH."""
        return self.transitions.f32(row0 * self.T * TR_WIDTH + tr_column(name), (rows * self.T - 1) * TR_WIDTH + 1)

    def read_column(self, name: str) -> np.ndarray:
        """Transition column `name` of every rollout row, [N·T] (tests and tools)."""
        return self.gpu.read(self.transitions).reshape(-1, TR_WIDTH)[:, tr_column(name)].copy()

    def write_column(self, name: str, values):
        """Set transition column `name` of every rollout row to `values` [N·T] (tests and tools)."""
        rows = self.gpu.read(self.transitions).reshape(-1, TR_WIDTH)
        rows[:, tr_column(name)] = np.asarray(values, np.float32).reshape(-1)
        self.gpu.upload(self.transitions, rows)

    @property
    def nbytes(self) -> int:
        """GPU memory of the rollout's buffers (observations, per-step data, mask, recurrent state)."""
        return buffers_nbytes(self)


class RolloutStep:
    """The per-step inference plan: store env data → encoder → L MinGRU steps → decoder → sample.

    Two prebuilt plans: one for t = 0 (which also snapshots the reset state for training) and one
    for t > 0. Python writes obs/rewards/terminals (and the action mask, only when it is not all
    legal) and the globals (t, rng_step, seed, flags), runs one plan in one submit, and reads back the
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
        self.obs_step = gpu.buffer(4 * N * spec.obs_words, "step.obs")  # u32 words (uint8 packed 4 per word)
        self._obs_bytes = (np.zeros((N, 4 * spec.obs_words), np.uint8)  # packing scratch when D % 4 != 0
                           if spec.packed and D % 4 else None)
        self.enc = EncoderScratch(gpu, spec, N, grads=False, label="step")
        self.rewards_step = gpu.buffer(4 * N, "step.rewards")
        self.terminals_step = gpu.buffer(4 * N, "step.terminals")
        self.mask_step = gpu.array(np.full(N * spec.mask_words, 0xFFFFFFFF, np.uint32), "step.mask")
        self._mask_all_legal = True  # what mask_step holds now: skip the upload while the env writes no mask
        self._mask_bytes = np.zeros((N, MASK_BITS * spec.mask_words), np.uint8)  # pack_mask's scratch
        self.globals = gpu.buffer(16, "step.globals")
        self.x = [gpu.buffer(4 * N * H, f"step.x{l}") for l in range(L + 1)]
        self.c = gpu.buffer(4 * N * 3 * H, "step.c")
        self.out_stride = ceil4(spec.out)
        self.out = gpu.buffer(4 * N * self.out_stride, "step.out")
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
        encoder_forward(plan, p, self.enc, self.obs_step.range(), spec.obs_words, N, self.x[0].range())
        for l in range(spec.layers):
            matmul_forward(plan, self.x[l].range(), p.w(f"mingru.{l}"), self.c.range(), N, 3 * H, H)
            mingru_step(plan, self.c.range(), self.x[l].range(), ro.state_of(ro.state, l, r0, N),
                        self.terminals_step.range(), self.x[l + 1].range(), N, H,
                        snapshot=ro.state_of(ro.initial_state, l, r0, N) if snapshot else None)
        matmul_forward(plan, self.x[spec.layers].range(), p.w("decoder"), self.out.range(), N, spec.out, H,
                           ldy=self.out_stride)
        sample_actions(plan, self.out.range(), self.out_stride, p.act_sizes.range(), self.globals.range(),
                       self.actions_step.range(), ro.rows(ro.actions, r0, N, spec.K),
                       ro.rows(ro.transitions, r0, N, TR_WIDTH), N, ro.T, spec,
                       logstd=p.w("logstd") if spec.Kc else None, mask=mask)
        return plan.finalize()

    def _check(self, name: str, a, shape: tuple) -> np.ndarray:
        a = np.asarray(a)
        if a.shape != shape:
            raise ValueError(f"rollout step: {name} must have shape {shape} for {self.N} agents "
                             f"(obs size {self.policy.spec.obs_size}, heads {list(self.policy.spec.act_sizes)}), "
                             f"got {a.shape}")
        return a

    def _upload_obs(self, obs):
        """uint8 observations packed 4 per u32 (value i = byte i%4 of word i/4, rows padded to whole
        words); any other dtype as float32, as before pictures existed."""
        spec = self.policy.spec
        obs = self._check("observations", obs, (self.N, spec.obs_size))
        if not spec.packed:
            self.policy.gpu.upload(self.obs_step, np.asarray(obs, np.float32))
            return
        if obs.dtype != np.uint8:
            raise ValueError(f"rollout step: this policy takes uint8 observations (obs_dtype uint8), got {obs.dtype}")
        self.policy.gpu.upload(self.obs_step, pack_obs(obs, spec, out=self._obs_bytes))

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

    def __call__(self, t: int, rng_step: int, obs: np.ndarray, rewards: np.ndarray, terminals: np.ndarray,
                 action_mask: np.ndarray | None = None) -> np.ndarray:
        """Run step t of the rollout (`rng_step`, a counter that never repeats within a run, feeds the sampler's RNG); returns actions [N, K].

        action_mask: the env's uint8 [N, A] (nonzero = legal), or None for all legal.
        """
        gpu, spec = self.policy.gpu, self.policy.spec
        N = self.N
        self._upload_obs(obs)
        gpu.upload(self.rewards_step, np.asarray(self._check("rewards", rewards, (N,)), np.float32))
        gpu.upload(self.terminals_step, np.asarray(self._check("terminals", terminals, (N,)), np.float32))
        self._upload_mask(action_mask)
        self._globals[:] = (t, rng_step & 0xFFFFFFFF, self.seed & 0xFFFFFFFF, int(self.deterministic))
        gpu.upload(self.globals, self._globals)
        out = gpu.run(self.plans[0 if t == 0 else 1], read=self.actions_step)
        return out.reshape(N, spec.K)


# ------------------------------------------------------------------------ training forward/backward

class Activations:
    """Scratch for one minibatch of R agent rows × T steps (M = R·T rows): what backward needs."""

    def __init__(self, gpu: GPU, spec: PolicySpec, R: int, T: int):
        H, L = spec.hidden, spec.layers
        M = R * T
        self.R, self.T, self.M = R, T, M
        self.out_stride = ceil4(spec.out)
        self.x = [gpu.buffer(4 * M * H, f"act.x{l}") for l in range(L + 1)]  # layer inputs; x[L] feeds the decoder
        self.c = [gpu.buffer(4 * M * 3 * H, f"act.c{l}") for l in range(L)]  # pre-activations
        self.hs = [gpu.buffer(4 * M * H, f"act.hs{l}") for l in range(L)]  # states h_t
        self.out = gpu.buffer(4 * M * self.out_stride, "act.out")  # [M, out_stride]: logits, value
        self.dout = gpu.buffer(4 * M * self.out_stride, "act.dout")  # written by the loss (ppo.wgsl) or a test
        self.dx = [gpu.buffer(4 * M * H, "act.dx_a"), gpu.buffer(4 * M * H, "act.dx_b")]  # ping-pong
        self.dc = gpu.buffer(4 * M * 3 * H, "act.dc")
        self.dx_highway = gpu.buffer(4 * M * H, "act.dx_highway")
        self.enc = EncoderScratch(gpu, spec, M, grads=True, label="act")  # conv outputs/grads, unpacked uint8

    @property
    def nbytes(self) -> int:
        return buffers_nbytes(self)


def policy_forward(plan: Plan, p: Policy, act: Activations, obs: Range, obs_stride: int, terminals: Range,
                   h0: list[Range], terminals_stride: int = 1):
    """Training forward over a minibatch: encoder → L scans from h0 → decoder (act.out).
    obs: the minibatch's rollout rows [M, obs_stride] u32 words; row i's terminal flag is
    terminals[i·terminals_stride] (Rollout.column("terminal", …) with TR_WIDTH)."""
    spec, M, H = p.spec, act.M, p.spec.hidden
    encoder_forward(plan, p, act.enc, obs, obs_stride, M, act.x[0].range())
    for l in range(spec.layers):
        matmul_forward(plan, act.x[l].range(), p.w(f"mingru.{l}"), act.c[l].range(), M, 3 * H, H)
        mingru_scan_forward(plan, act.c[l].range(), act.x[l].range(), h0[l], terminals, act.hs[l].range(),
                            act.x[l + 1].range(), act.R, act.T, H, terminals_stride=terminals_stride)
    matmul_forward(plan, act.x[spec.layers].range(), p.w("decoder"), act.out.range(), M, spec.out, H,
                       ldy=act.out_stride)
    return plan


def policy_backward(plan: Plan, p: Policy, act: Activations, obs: Range, obs_stride: int, terminals: Range,
                    h0: list[Range], dobs: Range | None = None, terminals_stride: int = 1):
    """Backward from act.dout [M, out_stride] into p.grads (every tensor, overwritten) and optionally dobs [M, D]
    (float32 observations without a picture only)."""
    spec, M, H, L = p.spec, act.M, p.spec.hidden, p.spec.layers
    matmul_backward_weight(plan, act.dout.range(), act.x[L].range(), p.g("decoder"), spec.out, H, M,
                               lddy=act.out_stride)
    dy = act.dx[L % 2]
    matmul_backward_input(plan, act.dout.range(), p.w("decoder"), dy.range(), M, H, spec.out, lddy=act.out_stride)
    for l in reversed(range(L)):
        mingru_scan_backward(plan, act.c[l].range(), act.x[l].range(), h0[l], terminals, act.hs[l].range(),
                             dy.range(), act.dc.range(), act.dx_highway.range(), act.R, act.T, H,
                             terminals_stride=terminals_stride)
        matmul_backward_weight(plan, act.dc.range(), act.x[l].range(), p.g(f"mingru.{l}"), 3 * H, H, M)
        dx = act.dx[l % 2]
        matmul_backward_input(plan, act.dc.range(), p.w(f"mingru.{l}"), dx.range(), M, H, 3 * H,
                                  z=act.dx_highway.range(), beta=1.0)
        dy = dx
    encoder_backward(plan, p, act.enc, obs, obs_stride, M, dy.range(), dobs)
    return plan
