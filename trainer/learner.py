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

An epoch's minibatch plans go into as few submits as a work budget allows (see SUBMIT_WORK); only
the logged stats (8 floats per minibatch) and the grad norm are read back. The learning rate lives
in a small GPU buffer written once per epoch.

Data-parallel (a `world` of K > 1 ranks, trainer/distributed.py): each rank's minibatch is its R/K
rows, and its plan is cut after the backward pass into a gradient plan and a step plan (clip →
Muon → update); between them the gradient is read back, averaged over the ranks and written back.
"""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from .config import LearnerConfig
from .gpu import GPU, GPUError, Plan, Range
from .kernels import muon as muon_kernels
from .kernels import TR_WIDTH, need
from .kernels.advantage import compute_advantage
from .kernels.matmul import matmul_backward_input, matmul_backward_weight, matmul_forward
from .kernels.ppo import ppo_loss, reduce_logstd_grad, reduce_stats, stats_width
from .metrics import PPO_STATS
from .policy import Activations, Policy, Rollout, policy_backward, policy_forward
from .spec import PolicySpec

# PufferLib's per-iteration Newton–Schulz coefficients (a, b, c): X ← aX + (bG + cG²)X
NS_COEFFS = ((4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
             (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012))


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
        # two-pass norms (muon.wgsl): first-pass sums per chunk of muon_kernels.CHUNK floats
        self.biggest = max(t.size for t in spec.tensors)
        self.partials = gpu.buffer(4 * max(muon_kernels.chunks(n), len(table) * muon_kernels.chunks(self.biggest)),
                                   "muon.partials")
        # Gram scratch: G and B = bG + cG² per matrix, side min(rows, cols), consecutive per tensor
        sides = [min(t.rows, t.cols) for t in spec.tensors]
        # (each padded to 64 floats, so every Gram matrix starts 256-byte aligned: vec4 loads apply)
        self.gram_off = [int(v) for v in np.concatenate([[0], np.cumsum([-(-s * s // 64) * 64 for s in sides])])]
        self.gram = [gpu.buffer(4 * self.gram_off[-1], "muon.gram_g"), gpu.buffer(4 * self.gram_off[-1], "muon.gram_b")]

    def set_lr(self, lr: float):
        self.gpu.upload(self.globals, np.array([lr, 0, 0, 0], np.float32))

    def add(self, plan: Plan, weights: Range, grads: Range, scalars: Range):
        """One optimizer step: clip, momentum, normalise, Newton–Schulz, update. scalars ← (clip, ‖g‖)."""
        cfg, spec = self.cfg, self.spec
        n, count = spec.num_floats, len(spec.tensors)
        for name, r in (("weights", weights), ("grads", grads)):
            need("muon", name, r, n)
        need("muon", "scalars", scalars, 4)
        prm = dict(n=n, count=count, max_grad_norm=cfg.max_grad_norm, mu=cfg.momentum)
        parts, biggest, mats, u = self.partials.range(), self.biggest, self.mats.range(), self.ns[0].range()
        mk = muon_kernels
        mk.grad_norm_partial(plan, grads=grads, partials=parts, params=prm)
        mk.grad_norm(plan, partials=parts, scalars=scalars, params=prm)
        mk.muon_momentum(plan, grads=grads, scalars=scalars, momentum=self.momentum.range(), update=u, params=prm)
        mk.matrix_norms_partial(plan, mats=mats, update=u, partials=parts, biggest=biggest, params=prm)
        mk.matrix_norms(plan, partials=parts, norms=self.norms.range(), biggest=biggest, params=prm)
        mk.muon_normalize(plan, mats=mats, update=u, norms=self.norms.range(), biggest=biggest, params=prm)
        final = self._newton_schulz(plan)
        mk.muon_update(plan, mats=mats, globals_=self.globals.range(), update=self.ns[final].range(), weights=weights,
                       biggest=biggest, params=prm)
        return plan

    def _matrix_groups(self):
        """(first tensor, batch count, batch stride, index) — the L MinGRU layers share a shape and a
        stride, so their Newton–Schulz matmuls run batched (grid z); encoder (with a picture: each conv
        as its [out, ky·kx·in] matrix, and encoder.linear), decoder and logstd (a [1, Kc] matrix, as in
        PufferLib) alone. index = the first tensor's position in the layout."""
        spec = self.spec
        index = {t.name: i for i, t in enumerate(spec.tensors)}
        layers = [spec.mingru(l) for l in range(spec.layers)]
        stride = layers[1].offset - layers[0].offset if len(layers) > 1 else layers[0].size
        single = spec.encoders + [spec.decoder] + ([spec.logstd] if spec.Kc else [])
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
                    matmul_backward_weight(plan, xr, xr, G, cols, cols, rows, dy_bs=stride, x_bs=stride,
                                               dw_bs=s * s, batch=batch)
                    matmul_forward(plan, G, G, B, s, s, s, alpha=c, beta=b, z=G, **gram)
                    matmul_backward_input(plan, xr, B, xo, rows, cols, cols, beta=a, z=xr, dy_bs=stride,
                                              w_bs=s * s, dx_bs=stride, z_bs=stride, batch=batch)
                else:  # G = XXᵀ [R,R]; X ← aX + (bG + cG²)·X
                    matmul_forward(plan, xr, xr, G, rows, rows, cols, x_bs=stride, w_bs=stride, y_bs=s * s,
                                       batch=batch)
                    matmul_forward(plan, G, G, B, s, s, s, alpha=c, beta=b, z=G, **gram)
                    matmul_backward_input(plan, B, xr, xo, rows, cols, rows, beta=a, z=xr, dy_bs=s * s,
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

# Work (multiply-adds and element operations, as the launchers record it for the dispatch-shape
# report) one submission may hold: the budget is by work, not measured time. A submission that runs
# for seconds can trip a desktop OS's GPU watchdog (Windows resets a GPU whose work packet runs
# about 2 s: TDR) and the device is lost. 8e9 is about half a second at 16 G work/s, a low-end
# integrated GPU's rate on these small shapes (lavapipe on 2 cores does less, but has no watchdog).
# Consecutive minibatch plans are grouped greedily under it; a minibatch is never split, so one
# larger than the budget is submitted alone. Queue order keeps the results bit-identical to one
# submission, and nothing waits between submissions. The default platformer plans (8 minibatches
# of 6.1e9 each) go as 8 submissions; PUFFGPU_SUBMIT_WORK sets the budget, 0 for one submission.
SUBMIT_WORK = 8_000_000_000


def submit_work_budget() -> int:
    value = os.environ.get("PUFFGPU_SUBMIT_WORK", "").strip()
    return int(float(value)) if value else SUBMIT_WORK


def plan_work(plan: Plan) -> int:
    """The plan's work: each dispatch's recorded work, else its invocation count."""
    return sum(i.work if i.work is not None else i.invocations for i in plan.infos)


def submission_groups(works: list[int], budget: int) -> list[list[int]]:
    """Indices of `works` grouped in order, each group's sum <= budget (a single item may exceed it);
    budget 0: one group."""
    groups, cur, total = [], [], 0
    for i, w in enumerate(works):
        if cur and budget > 0 and total + w > budget:
            groups.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += w
    return groups + [cur] if cur else groups


class Learner:
    """One object of settings, `cfg` (config.LearnerConfig: the update, the learning-rate schedule,
    the minibatches); `minibatch_size` replaces its minibatch size (a golden case's or a
    benchmark's shape). learn_epoch() runs an epoch at the rate the schedule gives it.
    `masks=False` leaves the rollout's action mask out of the plans (all legal): a test reference.
    `submit_work`: the work budget per submission (default SUBMIT_WORK or PUFFGPU_SUBMIT_WORK; 0: one
    submission per run). `world` (trainer/distributed.py): with more than one rank, each minibatch is
    two plans, its gradient and its optimizer step, and between them the gradient is read back,
    averaged across ranks and written back; the logged stats are averaged too. One rank: one plan per
    minibatch, as without a world."""

    def __init__(self, policy: Policy, rollout: Rollout, cfg: LearnerConfig | None = None, *,
                 minibatch_size: int | None = None, masks: bool = True, submit_work: int | None = None, world=None):
        self.gpu, self.policy, self.rollout = policy.gpu, policy, rollout
        self.cfg = cfg = cfg or LearnerConfig()
        if minibatch_size is not None:
            self.cfg = cfg = replace(cfg, minibatch_size=minibatch_size)
        spec, N, T = policy.spec, rollout.N, rollout.T
        cfg.check_minibatching(N, T)
        self.R = cfg.minibatch_size // T
        self.M = cfg.minibatch_size
        self.num_minibatches = cfg.num_minibatches(N, T)
        gpu = self.gpu
        self.act = Activations(gpu, spec, self.R, T)
        self.stats = gpu.buffer(4 * self.M * stats_width(spec), "learn.stats")  # + per-element logstd gradients
        self.logs = gpu.buffer(4 * self.num_minibatches * len(PPO_STATS), "learn.logs")
        self.masks = masks
        self.scalars = gpu.buffer(16 * self.num_minibatches, "learn.scalars")  # (clip, ‖g‖, _, _) per minibatch
        self.muon = Muon(gpu, spec, self.cfg)
        self.world = world
        if self.distributed:
            self.grad_plans = [self._gradient(gpu.plan(f"minibatch {m} gradient"), m).finalize()
                               for m in range(self.num_minibatches)]
            self.step_plans = [self._step(gpu.plan(f"minibatch {m} step"), m).finalize()
                               for m in range(self.num_minibatches)]
            self.plans = [None] * self.num_minibatches
        else:
            self.plans = [self._step(self._gradient(gpu.plan(f"minibatch {m}"), m), m).finalize()
                          for m in range(self.num_minibatches)]
        self.plan_work = [plan_work(p) for p in self.plans] if not self.distributed else []
        self.submit_work = submit_work_budget() if submit_work is None else int(submit_work)

    @property
    def distributed(self) -> bool:
        return self.world is not None and self.world.size > 1

    def _gradient(self, plan: Plan, m: int) -> Plan:
        """Minibatch m's loss and gradient (into the policy's grads): rows [(m·R) mod N, … + R) of the
        rollout."""
        p, ro, act, cfg = self.policy, self.rollout, self.act, self.cfg
        spec, T, R, M = p.spec, ro.T, self.R, self.M
        row0 = (m * R) % ro.N
        obs = ro.obs_rows(row0, R)
        terminals = ro.column("terminal", row0, R)
        transitions = ro.rows(ro.transitions, row0, R, TR_WIDTH)
        actions = ro.rows(ro.actions, row0, R, spec.K)
        h0 = [ro.state_of(ro.initial_state, l, row0, R) for l in range(spec.layers)]
        mask = ro.rows(ro.mask, row0, R, spec.mask_words) if self.masks else None
        logstd = p.w("logstd") if spec.Kc else None
        policy_forward(plan, p, act, obs, ro.obs_stride, terminals, h0, terminals_stride=TR_WIDTH)
        compute_advantage(plan, out=act.out.range(), out_stride=act.out_stride, actions=actions,
                          transitions=transitions, act_sizes=p.act_sizes.range(), R=R, T=T, spec=spec, cfg=cfg,
                          logstd=logstd, mask=mask)
        ppo_loss(plan, out=act.out.range(), out_stride=act.out_stride, actions=actions, transitions=transitions,
                 act_sizes=p.act_sizes.range(), dout=act.dout.range(), stats=self.stats.range(), M=M, spec=spec,
                 cfg=cfg, logstd=logstd, mask=mask)
        reduce_stats(plan, stats=self.stats.range(), logs=self.logs.range(), slot=m, M=M, Kc=spec.Kc)
        if spec.Kc:  # the logstd gradient: the per-element terms summed over the minibatch
            reduce_logstd_grad(plan, stats=self.stats.range(), dlogstd=p.g("logstd"), M=M, Kc=spec.Kc)
        policy_backward(plan, p, act, obs, ro.obs_stride, terminals, h0, terminals_stride=TR_WIDTH)
        return plan

    def _step(self, plan: Plan, m: int) -> Plan:
        """Minibatch m's optimizer step from the policy's grads (scalars slot m ← clip, ‖g‖)."""
        p = self.policy
        self.muon.add(plan, p.weights.range(), p.grads.range(), self.scalars.f32(4 * m, 4))
        return plan

    def run(self, lr: float, minibatches=None) -> dict:
        """Run the given minibatch plans (default: all of an epoch), in order, in as few submits as the
        work budget allows (see SUBMIT_WORK); return mean stats.

        Returns {stat: mean over the minibatches}, 'grad_norm' (mean pre-clip norm) and
        'per_minibatch' (array [count, 9]: the 8 stats and the grad norm).
        """
        idx = list(range(self.num_minibatches)) if minibatches is None else list(minibatches)
        self.muon.set_lr(lr)
        if self.distributed:
            grads = self.policy.grads
            for m in idx:
                local = self.gpu.run([self.grad_plans[m]], read=grads)
                self.gpu.upload(grads, self.world.average(local))
                self.gpu.run([self.step_plans[m]])
        else:
            for group in submission_groups([self.plan_work[m] for m in idx], self.submit_work):
                self.gpu.run([self.plans[idx[g]] for g in group])
        logs = self.gpu.read(self.logs).reshape(self.num_minibatches, len(PPO_STATS))
        if self.distributed:  # each rank's means over its share: their average is the minibatch's mean
            logs = self.world.average(logs)
        logs = logs[idx]
        scal = self.gpu.read(self.scalars).reshape(self.num_minibatches, 4)[idx]
        out = {k: float(logs[:, i].mean()) for i, k in enumerate(PPO_STATS)}
        out["grad_norm"] = float(scal[:, 1].mean())
        out["per_minibatch"] = np.concatenate([logs, scal[:, 1:2]], axis=1)
        return out

    def learn_epoch(self, epoch: int, total_epochs: int) -> dict:
        """Every minibatch of epoch `epoch` of `total_epochs` at the rate the schedule gives that epoch
        (cfg.learning_rate_at): run()'s stats and 'learning_rate'."""
        lr = self.cfg.learning_rate_at(epoch, total_epochs)
        return {**self.run(lr), "learning_rate": lr}

    def dispatches_per_minibatch(self) -> int:
        if self.distributed:
            return len(self.grad_plans[0]) + len(self.step_plans[0])
        return len(self.plans[0])
