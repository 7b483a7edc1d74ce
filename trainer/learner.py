"""The learner of PufferLib 5.0 on the GPU: one prebuilt plan per minibatch.

A minibatch is R = minibatch_size / T contiguous agent rows × the whole horizon, in order, no
shuffling: minibatch m uses rows [(m·R) mod N, … + R). Its plan, built once, is

    scan forward from the rollout-start state → decoder                (policy_forward)
    → GAE / V-trace from the live values                               (advantage.wgsl)
    → fused PPO loss writing dL/dlogits, dL/dmeans, dL/dvalue + logged stats, then dL/dlogstd
      summed over the minibatch                                        (ppo.wgsl)
    → backward through decoder, scans and encoder into the gradients   (policy_backward)
    → global grad-norm clip → Nesterov momentum → per-matrix Frobenius normalisation
    → 5 Newton–Schulz iterations on the smaller Gram side (matmul.wgsl) → W −= lr·scale·X (muon.wgsl)

All minibatch plans of an epoch go into one compute pass and one submit; only the logged stats
(8 floats per minibatch) and the grad norm are read back. The learning rate lives in a small GPU
buffer written once per epoch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ops
from .config import check_minibatching, num_minibatches
from .gpu import GPU, GPUError, Plan, Range
from .metrics import PPO_STATS as STATS
from .policy import Activations, Policy, PolicySpec, Rollout, need_heads, policy_backward, policy_forward

# PufferLib's per-iteration Newton–Schulz coefficients (a, b, c): X ← aX + (bG + cG²)X
NS_COEFFS = ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012))
MUON_CHUNK = 4096  # floats per workgroup in the first pass of Muon's two-pass norms (256 invocations × 16)


@dataclass
class LearnerConfig:
    gamma: float = 0.995
    gae_lambda: float = 0.90
    clip_coef: float = 0.2
    vf_coef: float = 2.0
    vf_clip_coef: float = 0.2
    ent_coef: float = 0.001
    max_grad_norm: float = 1.5
    momentum: float = 0.95
    vtrace: bool = False
    vtrace_rho_clip: float = 1.0
    vtrace_c_clip: float = 1.0
    freeze_continuous: bool = False  # an ablation: no gradient from the continuous heads (means, logstd)


# ------------------------------------------------------------------------------------ launchers

def compute_advantage(plan: Plan, *, out: Range, ldo: int, actions: Range, logprobs: Range, rewards: Range,
                      terminals: Range, act_sizes: Range, advantages: Range, returns: Range, R: int, T: int,
                      spec: PolicySpec, cfg: LearnerConfig, logstd: Range | None = None, mask: Range | None = None):
    """GAE / V-trace for R rows × T steps (advantage.wgsl); one invocation per row.

    logstd [Kc] and the bit-packed mask [R·T, mask_words] feed V-trace's live log-probabilities."""
    label = f"compute_advantage R={R} T={T}"
    for name, r, n in (("out", out, (R * T - 1) * ldo + spec.out), ("actions", actions, R * T * spec.K),
                       ("logprobs", logprobs, R * T), ("rewards", rewards, R * T), ("terminals", terminals, R * T),
                       ("advantages", advantages, R * T), ("returns", returns, R * T)):
        ops.need(label, name, r, n)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=R * T)
    k = plan.gpu.kernel("advantage.wgsl", "compute_advantage", WG=64)
    return plan.add(k, -(-R // 64),
                    dict(R=R, T=T, K=spec.K, A=spec.A, ldo=ldo, W=spec.mask_words, masked=int(mask is not None),
                         vtrace=int(cfg.vtrace), gamma=cfg.gamma, rho_clip=cfg.vtrace_rho_clip,
                         c_clip=cfg.vtrace_c_clip, **{"lambda": cfg.gae_lambda}),
                    out=out, actions=actions, logprobs=logprobs, rewards=rewards, terminals=terminals,
                    act_sizes=act_sizes, logstd=logstd, mask=mask, advantages=advantages, returns=returns)


def _ppo_params(M, spec, ldo, cfg, slot, masked=False):
    return dict(M=M, K=spec.K, A=spec.A, ldo=ldo, slot=slot, W=spec.mask_words, masked=int(masked), Kc=spec.Kc,
                freeze_continuous=int(cfg.freeze_continuous), clip_coef=cfg.clip_coef, vf_coef=cfg.vf_coef,
                vf_clip_coef=cfg.vf_clip_coef, ent_coef=cfg.ent_coef)


def ppo_loss(plan: Plan, *, out: Range, ldo: int, actions: Range, logprobs: Range, values: Range,
             advantages: Range, returns: Range, act_sizes: Range, dout: Range, stats: Range, M: int,
             spec: PolicySpec, cfg: LearnerConfig, logstd: Range | None = None, mask: Range | None = None,
             dlogstd_rows: Range | None = None):
    """Fused PPO loss over M elements: dout [M, ldo], per-element stats [M, 8] and, with continuous
    heads, the per-element logstd gradients dlogstd_rows [M, Kc] (ppo.wgsl)."""
    label = f"ppo_loss M={M}"
    for name, r, n in (("out", out, (M - 1) * ldo + spec.out), ("actions", actions, M * spec.K),
                       ("logprobs", logprobs, M), ("values", values, M), ("advantages", advantages, M),
                       ("returns", returns, M), ("dout", dout, M * ldo), ("stats", stats, M * len(STATS))):
        ops.need(label, name, r, n)
    need_heads(label, spec, logstd=logstd, mask=mask, rows=M)
    if spec.Kc:
        if dlogstd_rows is None:
            raise GPUError(f"{label}: heads {list(spec.act_sizes)} have continuous heads, so dlogstd_rows is needed")
        ops.need(label, "dlogstd_rows", dlogstd_rows, M * spec.Kc)
    k = plan.gpu.kernel("ppo.wgsl", "ppo_loss", WG=64)
    return plan.add(k, -(-M // 64), _ppo_params(M, spec, ldo, cfg, 0, masked=mask is not None), out=out,
                    actions=actions, logprobs=logprobs, values=values, advantages=advantages, returns=returns,
                    act_sizes=act_sizes, logstd=logstd, mask=mask, dout=dout, dlogstd_rows=dlogstd_rows,
                    stats=stats)


def reduce_stats(plan: Plan, *, stats: Range, logs: Range, slot: int, M: int):
    """logs[slot] = column means of stats [M, 8], in a fixed order (deterministic)."""
    ops.need(f"reduce_stats M={M}", "stats", stats, M * len(STATS))
    ops.need(f"reduce_stats M={M}", "logs", logs, (slot + 1) * len(STATS))
    k = plan.gpu.kernel("ppo.wgsl", "reduce_stats", WG_REDUCE=256)
    return plan.add(k, len(STATS), dict(M=M, slot=slot), stats=stats, logs=logs)


def reduce_logstd_grad(plan: Plan, *, dlogstd_rows: Range, dlogstd: Range, M: int, Kc: int):
    """dlogstd [Kc] = Σ over the minibatch of dlogstd_rows [M, Kc], in a fixed order (deterministic)."""
    ops.need(f"reduce_logstd_grad M={M}", "dlogstd_rows", dlogstd_rows, M * Kc)
    ops.need(f"reduce_logstd_grad M={M}", "dlogstd", dlogstd, Kc)
    k = plan.gpu.kernel("ppo.wgsl", "reduce_logstd_grad", WG_REDUCE=256)
    return plan.add(k, Kc, dict(M=M, Kc=Kc), dlogstd_rows=dlogstd_rows, dlogstd=dlogstd)


class Muon:
    """Muon on every matrix of the flat layout: its momentum, Newton–Schulz scratch and the lr buffer."""

    def __init__(self, gpu: GPU, spec: PolicySpec, cfg: LearnerConfig):
        self.gpu, self.spec, self.cfg = gpu, spec, cfg
        n = spec.num_floats
        self.momentum = gpu.buffer(4 * n, "muon.momentum")
        self.ns = [gpu.buffer(4 * n, "muon.ns_a"), gpu.buffer(4 * n, "muon.ns_b")]  # X ping-pong
        self.globals = gpu.buffer(16, "muon.globals")  # (lr, _, _, _) f32, written once per epoch
        table = [(t.offset, t.size, t.rows, t.cols) for t in spec.tensors]
        self.mats = gpu.array(np.array(table, np.uint32), "muon.mats")
        self.norms = gpu.buffer(4 * len(table), "muon.norms")
        # two-pass norms (muon.wgsl): first-pass sums per chunk of MUON_CHUNK floats
        biggest = max(t.size for t in spec.tensors)
        self.chunks = (-(-n // MUON_CHUNK), -(-biggest // MUON_CHUNK))  # (grad_norm, matrix_norms per matrix)
        self.partials = gpu.buffer(4 * max(self.chunks[0], len(table) * self.chunks[1]), "muon.partials")
        # Gram scratch: G and B = bG + cG² per matrix, side min(rows, cols), consecutive per tensor
        sides = [min(t.rows, t.cols) for t in spec.tensors]
        # (each padded to 64 floats, so every Gram matrix starts 256-byte aligned: vec4 loads apply)
        self.gram_off = [int(v) for v in np.concatenate([[0], np.cumsum([-(-s * s // 64) * 64 for s in sides])])]
        self.gram = [gpu.buffer(4 * self.gram_off[-1], "muon.gram_g"), gpu.buffer(4 * self.gram_off[-1], "muon.gram_b")]

    def set_lr(self, lr: float):
        self.gpu.upload(self.globals, np.array([lr, 0, 0, 0], np.float32))

    def add(self, plan: Plan, weights: Range, grads: Range, scalars: Range):
        """One optimizer step: clip, momentum, normalise, Newton–Schulz, update. scalars ← (clip, ‖g‖)."""
        gpu, cfg, spec = self.gpu, self.cfg, self.spec
        n, count = spec.num_floats, len(spec.tensors)
        for name, r in (("weights", weights), ("grads", grads)):
            ops.need("muon", name, r, n)
        ops.need("muon", "scalars", scalars, 4)
        prm = dict(n=n, count=count, max_grad_norm=cfg.max_grad_norm, mu=cfg.momentum)
        parts, biggest = self.partials.range(), max(t.size for t in spec.tensors)
        g_chunks, m_chunks = self.chunks
        wg = MUON_CHUNK // 16  # WG_REDUCE: 16 values per invocation in the first passes
        plan.add(gpu.kernel("muon.wgsl", "grad_norm_partial", WG_REDUCE=wg), g_chunks, dict(prm, chunks=g_chunks),
                 grads=grads, partials=parts).note(invocations=min(n, g_chunks * wg), serial=16, work=n)
        plan.add(gpu.kernel("muon.wgsl", "grad_norm", WG_REDUCE=wg), 1, dict(prm, chunks=g_chunks), partials=parts,
                 scalars=scalars).note(serial=-(-g_chunks // wg) + 8, work=g_chunks)
        plan.add(gpu.kernel("muon.wgsl", "muon_momentum", WG=64), -(-n // 64), prm, grads=grads,
                 scalars=scalars, momentum=self.momentum.range(), update=self.ns[0].range()).note(
            invocations=n, serial=1, work=n)
        plan.add(gpu.kernel("muon.wgsl", "matrix_norms_partial", WG_REDUCE=wg), (m_chunks, count),
                 dict(prm, chunks=m_chunks), mats=self.mats.range(), update=self.ns[0].range(), partials=parts).note(
            invocations=min(n, m_chunks * count * wg), serial=16, work=n)
        plan.add(gpu.kernel("muon.wgsl", "matrix_norms", WG_REDUCE=wg), count, dict(prm, chunks=m_chunks),
                 partials=parts, norms=self.norms.range()).note(serial=-(-m_chunks // wg) + 8, work=count * m_chunks)
        plan.add(gpu.kernel("muon.wgsl", "muon_normalize", WG=64), (-(-biggest // 64), count), prm,
                 mats=self.mats.range(), update=self.ns[0].range(), norms=self.norms.range()).note(
            invocations=n, serial=1, work=n)
        final = self._newton_schulz(plan)
        plan.add(gpu.kernel("muon.wgsl", "muon_update", WG=64), (-(-biggest // 64), count), prm,
                 mats=self.mats.range(), globals=self.globals.range(), update=self.ns[final].range(),
                 weights=weights).note(invocations=n, serial=1, work=n)
        return plan

    def _matrix_groups(self):
        """(first tensor, batch count, batch stride, index) — the L MinGRU layers share a shape and a
        stride, so their Newton–Schulz matmuls run batched (grid z); encoder, decoder and logstd
        (a [1, Kc] matrix, as in PufferLib) alone. index = the first tensor's position in the layout."""
        spec = self.spec
        index = {t.name: i for i, t in enumerate(spec.tensors)}
        layers = [spec.mingru(l) for l in range(spec.layers)]
        stride = layers[1].offset - layers[0].offset if len(layers) > 1 else layers[0].size
        single = [spec.encoder, spec.decoder] + ([spec.logstd] if spec.Kc else [])
        return [(t, 1, t.size, index[t.name]) for t in single] + [(layers[0], len(layers), stride,
                                                                    index[layers[0].name])]

    def _newton_schulz(self, plan: Plan) -> int:
        """5 NS iterations on every matrix, X ping-ponging between ns[0] and ns[1]; returns the final one."""
        cur = 0
        for a, b, c in NS_COEFFS:
            x, xn = self.ns[cur], self.ns[1 - cur]
            for t, batch, stride, index in self._matrix_groups():
                rows, cols = t.shape
                s = min(rows, cols)
                xr, xo = x.f32(t.offset), xn.f32(t.offset)
                G, B = self.gram[0].f32(self.gram_off[index]), self.gram[1].f32(self.gram_off[index])
                gram = dict(x_bs=s * s, w_bs=s * s, y_bs=s * s, z_bs=s * s, batch=batch)
                if rows > cols:  # G = XᵀX [C,C]; X ← aX + X·(bG + cG²)
                    ops.matmul_backward_weight(plan, xr, xr, G, cols, cols, rows, dy_bs=stride, x_bs=stride,
                                               dw_bs=s * s, batch=batch)
                    ops.matmul_forward(plan, G, G, B, s, s, s, alpha=c, beta=b, z=G, **gram)
                    ops.matmul_backward_input(plan, xr, B, xo, rows, cols, cols, beta=a, z=xr, dy_bs=stride,
                                              w_bs=s * s, dx_bs=stride, z_bs=stride, batch=batch)
                else:  # G = XXᵀ [R,R]; X ← aX + (bG + cG²)·X
                    ops.matmul_forward(plan, xr, xr, G, rows, rows, cols, x_bs=stride, w_bs=stride, y_bs=s * s,
                                       batch=batch)
                    ops.matmul_forward(plan, G, G, B, s, s, s, alpha=c, beta=b, z=G, **gram)
                    ops.matmul_backward_input(plan, B, xr, xo, rows, cols, rows, beta=a, z=xr, dy_bs=s * s,
                                              w_bs=stride, dx_bs=stride, z_bs=stride, batch=batch)
            cur = 1 - cur
        return cur

    def reset_momentum(self, momentum: np.ndarray | None = None):
        n = self.spec.num_floats
        m = np.zeros(n, np.float32) if momentum is None else np.asarray(momentum, np.float32)
        if m.shape != (n,):
            raise GPUError(f"momentum holds {m.size} floats; the policy has {n}")
        self.gpu.upload(self.momentum, m)

    def read_momentum(self) -> np.ndarray:
        return self.gpu.read(self.momentum)


# ------------------------------------------------------------------------------------ the learner

class Learner:
    """`masks=False` leaves the rollout's action mask out of the plans (all legal): a test reference."""

    def __init__(self, policy: Policy, rollout: Rollout, minibatch_size: int, cfg: LearnerConfig | None = None,
                 replay_ratio: float = 1.0, masks: bool = True):
        self.gpu, self.policy, self.rollout = policy.gpu, policy, rollout
        self.cfg = cfg or LearnerConfig()
        spec, N, T = policy.spec, rollout.N, rollout.T
        check_minibatching(N, T, minibatch_size, replay_ratio)
        self.R = minibatch_size // T
        self.M = minibatch_size
        self.num_minibatches = num_minibatches(N, T, minibatch_size, replay_ratio)
        gpu = self.gpu
        self.act = Activations(gpu, spec, self.R, T)
        self.advantages = gpu.buffer(4 * self.M, "learn.advantages")
        self.returns = gpu.buffer(4 * self.M, "learn.returns")
        self.stats = gpu.buffer(4 * self.M * len(STATS), "learn.stats")
        self.logs = gpu.buffer(4 * self.num_minibatches * len(STATS), "learn.logs")
        self.masks = masks
        self.dlogstd_rows = gpu.buffer(4 * self.M * spec.Kc, "learn.dlogstd_rows") if spec.Kc else None
        self.scalars = gpu.buffer(16 * self.num_minibatches, "learn.scalars")  # (clip, ‖g‖, _, _) per minibatch
        self.muon = Muon(gpu, spec, self.cfg)
        self.plans = [self._build(m) for m in range(self.num_minibatches)]

    def _build(self, m: int) -> Plan:
        """The whole update of minibatch m: rows [(m·R) mod N, … + R) of the rollout."""
        gpu, p, ro, act, cfg = self.gpu, self.policy, self.rollout, self.act, self.cfg
        spec, T, R, M = p.spec, ro.T, self.R, self.M
        row0 = (m * R) % ro.N
        plan = gpu.plan(f"minibatch {m}")
        obs = ro.rows(ro.obs, row0, R, ro.ldo)
        terminals = ro.rows(ro.terminals, row0, R)
        actions, logprobs = ro.rows(ro.actions, row0, R, spec.K), ro.rows(ro.logprobs, row0, R)
        h0 = [ro.state_of(ro.initial_state, l, row0, R) for l in range(spec.layers)]
        mask = ro.rows(ro.mask, row0, R, spec.mask_words) if self.masks else None
        logstd = p.w("logstd") if spec.Kc else None
        dlogstd_rows = self.dlogstd_rows.range() if spec.Kc else None
        policy_forward(plan, p, act, obs, ro.ldo, terminals, h0)
        compute_advantage(plan, out=act.out.range(), ldo=act.ldo, actions=actions, logprobs=logprobs,
                          rewards=ro.rows(ro.rewards, row0, R), terminals=terminals, act_sizes=p.act_sizes.range(),
                          advantages=self.advantages.range(), returns=self.returns.range(), R=R, T=T, spec=spec,
                          cfg=cfg, logstd=logstd, mask=mask)
        ppo_loss(plan, out=act.out.range(), ldo=act.ldo, actions=actions, logprobs=logprobs,
                 values=ro.rows(ro.values, row0, R), advantages=self.advantages.range(),
                 returns=self.returns.range(), act_sizes=p.act_sizes.range(), dout=act.dout.range(),
                 stats=self.stats.range(), M=M, spec=spec, cfg=cfg, logstd=logstd, mask=mask,
                 dlogstd_rows=dlogstd_rows)
        reduce_stats(plan, stats=self.stats.range(), logs=self.logs.range(), slot=m, M=M)
        if spec.Kc:  # the logstd gradient: the per-element terms summed over the minibatch
            reduce_logstd_grad(plan, dlogstd_rows=dlogstd_rows, dlogstd=p.g("logstd"), M=M, Kc=spec.Kc)
        policy_backward(plan, p, act, obs, ro.ldo, terminals, h0)
        self.muon.add(plan, p.weights.range(), p.grads.range(), self.scalars.f32(4 * m, 4))
        return plan.finalize()

    def run(self, lr: float, minibatches=None) -> dict:
        """Run the given minibatch plans (default: all of an epoch) in one submit; return mean stats.

        Returns {stat: mean over the minibatches}, 'grad_norm' (mean pre-clip norm) and
        'per_minibatch' (array [count, 9]: the 8 stats and the grad norm).
        """
        idx = list(range(self.num_minibatches)) if minibatches is None else list(minibatches)
        self.muon.set_lr(lr)
        self.gpu.run([self.plans[m] for m in idx])
        logs = self.gpu.read(self.logs).reshape(self.num_minibatches, len(STATS))[idx]
        scal = self.gpu.read(self.scalars).reshape(self.num_minibatches, 4)[idx]
        out = {k: float(logs[:, i].mean()) for i, k in enumerate(STATS)}
        out["grad_norm"] = float(scal[:, 1].mean())
        out["per_minibatch"] = np.concatenate([logs, scal[:, 1:2]], axis=1)
        return out

    def dispatches_per_minibatch(self) -> int:
        return len(self.plans[0])


def cosine_lr(lr: float, epoch: int, total_epochs: int, min_lr_ratio: float = 0.0) -> float:
    """PufferLib's per-epoch cosine: lr_e = lr_min + ½(lr − lr_min)(1 + cos(π·e/E)); epoch 0 → lr."""
    lr_min = lr * min_lr_ratio
    e = min(epoch, total_epochs)
    return lr_min + 0.5 * (lr - lr_min) * (1.0 + float(np.cos(np.pi * e / max(1, total_epochs))))
