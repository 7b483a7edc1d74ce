"""Golden checks as plain functions: run a kernel on a golden case, return what to compare.

Each function returns a list of checks (label, got, want, tolerance key) for
golden.check.assert_close / rel_error. The tests assert them; tools/gpu_report.py runs them on a
user's adapter without pytest (so nothing here imports pytest or torch).
"""
from __future__ import annotations

import numpy as np

from golden.check import case, golden, meta
from trainer.kernels import TR_WIDTH, Choice, conv, matmul, pack_transitions, tr_column
from trainer.kernels.advantage import compute_advantage
from trainer.kernels.mingru import mingru_scan_backward, mingru_scan_forward, mingru_step
from trainer.kernels.ppo import ppo_loss, reduce_logstd_grad, reduce_stats, stats_width
from trainer.kernels.sample import sample_actions
from trainer.learner import Learner, LearnerConfig, Muon
from trainer.metrics import PPO_STATS
from trainer.policy import Activations, Policy, Rollout, policy_backward, policy_forward
from trainer.spec import PolicySpec, ceil4, flatten, pack_mask, pack_obs, unflatten

SPLITS = (2, 3, 16)  # split-K checks: chunk edges of the matmul_splitk goldens (see golden/ref/matmul.py)


def cases(family: str) -> list[str]:
    return sorted({k.split("/")[0] for k in golden(family)} - {"shared"})  # conv's shared weights


def pad_rows(a: np.ndarray, ld: int) -> np.ndarray:
    """Rows of `a` placed at stride `ld` (zero padding), the layout the vec4 kernels need."""
    out = np.zeros((a.shape[0], ld), np.float32)
    out[:, :a.shape[1]] = a
    return out


def matmul_products(gpu, c: dict, variant: str, splits=(1,)):
    """All three products of golden case `c` with `variant`, once per entry of `splits`, in one plan."""
    x, w, dout = c["x"], c["w"], c["dout"]
    M, K = x.shape
    N = w.shape[0]
    vec = matmul.BY_NAME[variant].layout is not None  # vec4 loads
    # vec4 needs rows holding whole vec4s: pad the operands' row strides (as puffgpu pads obs rows)
    ldk = ceil4(K) if vec else K
    ldn = ceil4(N) if vec else N
    # matmul_forward_sg8_vec4 needs K % 4 == 0 (the encoder's D = 413 runs sg8); tile*_vec4 masks the tail
    forward = not (matmul.BY_NAME[variant].layout == "sg_vec4" and K % 4)
    xb, wb, db = gpu.array(pad_rows(x, ldk), "x"), gpu.array(pad_rows(w, ldk), "w"), gpu.array(pad_rows(dout, ldn), "dout")
    plan = gpu.plan(f"matmul {variant}")
    out = []
    shape = f"M={M} K={K} N={N}"
    for s in splits:
        kw = dict(variant=variant, splits=s)
        tag = f"[{Choice(matmul.BY_NAME[variant], s)}]"
        if forward:
            yb = gpu.buffer(4 * M * N, "y")
            matmul.matmul_forward(plan, xb.range(), wb.range(), yb.range(), M, N, K, ldx=ldk, ldw=ldk, **kw)
            out.append((f"matmul_forward{tag} {shape}", yb, c["y"]))
        dxb, dwb = gpu.buffer(4 * M * K, "dx"), gpu.buffer(4 * N * K, "dw")
        matmul.matmul_backward_input(plan, db.range(), wb.range(), dxb.range(), M, K, N, lddy=ldn, ldw=ldk, **kw)
        matmul.matmul_backward_weight(plan, db.range(), xb.range(), dwb.range(), N, K, M, lddy=ldn, ldx=ldk, **kw)
        out += [(f"matmul_backward_input{tag} {shape}", dxb, c["dx"]),
                (f"matmul_backward_weight{tag} {shape}", dwb, c["dw"])]
    gpu.run(plan)
    return [(label, gpu.read(b), want, "matmul") for label, b, want in out]


def mingru_scan(gpu, g: dict, variant: str):
    R, T, H = g["x"].shape
    buf = {k: gpu.array(g[k], k) for k in ("c", "x", "h0", "terminals", "dy")}
    out = {k: gpu.buffer(4 * R * T * H * (3 if k == "dc" else 1), k) for k in ("hs", "y", "dc", "dx")}
    plan = gpu.plan("mingru")
    mingru_scan_forward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                        out["hs"].range(), out["y"].range(), R, T, H, variant=variant)
    mingru_scan_backward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                         out["hs"].range(), buf["dy"].range(), out["dc"].range(), out["dx"].range(), R, T, H,
                         variant=variant)
    gpu.run(plan)
    label = f"[{variant}] R={R} T={T} H={H}"
    return [(f"mingru_scan_forward{label} y", gpu.read(out["y"]), g["y"], "mingru"),
            (f"mingru_scan_forward{label} hs", gpu.read(out["hs"]), g["hs"], "mingru"),
            (f"mingru_scan_backward{label} dc", gpu.read(out["dc"]), g["dc"], "mingru_grad"),
            (f"mingru_scan_backward{label} dx", gpu.read(out["dx"]), g["dx"], "mingru_grad")]


def mingru_steps(gpu, g: dict, variant: str):
    """T rollout steps from h0 (state carried in place, resets from the terminals): the scan's y and
    final state; the snapshot of step 0 must be the (reset) starting state, exactly."""
    R, T, H = g["x"].shape
    state = gpu.array(g["h0"], "state")
    snapshot = gpu.buffer(4 * R * H, "snapshot")
    c = [gpu.array(np.ascontiguousarray(g["c"][:, t]), f"c{t}") for t in range(T)]
    x = [gpu.array(np.ascontiguousarray(g["x"][:, t]), f"x{t}") for t in range(T)]
    term = [gpu.array(np.ascontiguousarray(g["terminals"][:, t]), f"term{t}") for t in range(T)]
    y = [gpu.buffer(4 * R * H, f"y{t}") for t in range(T)]
    plan = gpu.plan("mingru_step")
    for t in range(T):
        mingru_step(plan, c[t].range(), x[t].range(), state.range(), term[t].range(), y[t].range(), R, H,
                    snapshot=snapshot.range() if t == 0 else None, variant=variant)
    gpu.run(plan)
    label = f"mingru_step[{variant}] R={R} T={T} H={H}"
    got = np.stack([gpu.read(b).reshape(R, H) for b in y], 1)
    want0 = (g["h0"] * (1 - g["terminals"][:, :1])).astype(np.float32)
    return [(f"{label} y", got, g["y"], "mingru"),
            (f"{label} final state", gpu.read(state).reshape(R, H), g["hs"][:, -1], "mingru"),
            (f"{label} snapshot", gpu.read(snapshot).reshape(R, H), want0, "mingru")]


def policy_case(gpu, name: str, family: str = "policy"):
    """Full policy forward and backward (the tuner's kernel choice) against the `policy` goldens."""
    g, m = case(family, name), meta(family, name)
    R, T, D = g["obs"].shape
    L, _, H = g["h0"].shape
    spec = PolicySpec(obs_size=D, hidden=H, layers=L, act_sizes=tuple(m["act_sizes"]))
    policy = Policy(gpu, spec, flatten(spec, {k[2:]: v for k, v in g.items() if k.startswith("w.")}))
    act = Activations(gpu, spec, R, T)
    M, obs_stride = R * T, ceil4(D)
    obs = gpu.array(pad_rows(g["obs"].reshape(M, D), obs_stride), "obs")
    term = gpu.array(g["terminals"], "terminals")
    h0 = gpu.array(g["h0"], "h0")
    h0r = [h0.f32(l * R * H, R * H) for l in range(L)]
    gpu.upload(act.dout, pad_rows(g["dout"].reshape(M, spec.out), act.out_stride))
    dobs = gpu.buffer(4 * M * D, "dobs")
    plan = gpu.plan(f"policy {name}")
    policy_forward(plan, policy, act, obs.range(), obs_stride, term.range(), h0r)
    policy_backward(plan, policy, act, obs.range(), obs_stride, term.range(), h0r, dobs=dobs.range())
    gpu.run(plan)
    label = f"{name} D={D} H={H} L={L} R={R} T={T}"
    out = gpu.read(act.out).reshape(M, act.out_stride)[:, :spec.out]
    checks = [(f"policy_forward out {label}", out, g["out"].reshape(M, spec.out), "policy")]
    grads = unflatten(spec, gpu.read(policy.grads))
    checks += [(f"policy_backward d{t.name} {label}", grads[t.name], g[f"dw.{t.name}"], "policy_grad")
               for t in spec.tensors]
    checks.append((f"policy_backward dobs {label}", gpu.read(dobs), g["dobs"].reshape(M, D), "policy_grad"))
    return checks


def spec_of(m: dict) -> PolicySpec:
    """The PolicySpec of a golden case's meta (picture and obs dtype where the case has them)."""
    pic = m.get("picture")
    return PolicySpec(obs_size=m["D"], hidden=m["H"], layers=m["L"], act_sizes=tuple(m["act_sizes"]),
                      picture=tuple(pic) if pic else None, obs_dtype=m.get("obs_dtype", "float32"))


def policy_picture_case(gpu, name: str, family: str = "policy_picture"):
    """Picture policy forward and backward (convs, encoder.linear as two products, scans, decoder)
    against the `policy_picture` goldens; observations as the rollout stores them (uint8 packed)."""
    g, m = case(family, name), meta(family, name)
    spec = spec_of(m)
    R, T, D, L, H = m["R"], m["T"], m["D"], m["L"], m["H"]
    policy = Policy(gpu, spec, flatten(spec, {k[2:]: v for k, v in g.items() if k.startswith("w.")}))
    act = Activations(gpu, spec, R, T)
    M = R * T
    ro_stride = Rollout.stride_for(spec)
    obs = gpu.array(pack_obs(g["obs"].reshape(M, D), spec, ro_stride), "obs")
    term = gpu.array(g["terminals"], "terminals")
    h0 = gpu.array(g["h0"], "h0")
    h0r = [h0.f32(l * R * H, R * H) for l in range(L)]
    gpu.upload(act.dout, pad_rows(g["dout"].reshape(M, spec.out), act.out_stride))
    plan = gpu.plan(f"policy_picture {name}")
    policy_forward(plan, policy, act, obs.range(), ro_stride, term.range(), h0r)
    policy_backward(plan, policy, act, obs.range(), ro_stride, term.range(), h0r)
    gpu.run(plan)
    label = (f"{name} picture {'x'.join(map(str, spec.picture))} F={spec.features} {spec.obs_dtype} "
             f"H={H} L={L} R={R} T={T}")
    out = gpu.read(act.out).reshape(M, act.out_stride)[:, :spec.out]
    checks = [(f"policy_forward out {label}", out, g["out"].reshape(M, spec.out), "picture")]
    grads = unflatten(spec, gpu.read(policy.grads))
    checks += [(f"policy_backward d{t.name} {label}", grads[t.name], g[f"dw.{t.name}"], "picture_grad")
               for t in spec.tensors]
    return checks


def learner_config(m: dict) -> LearnerConfig:
    """The LearnerConfig a golden case was made with (its meta holds the fields it sets)."""
    return LearnerConfig.from_dict(m)


def head_spec(heads) -> PolicySpec:
    """The small policy shape of the per-element goldens (advantage, ppo, sample): only the heads matter."""
    return PolicySpec(obs_size=1, hidden=8, layers=1, act_sizes=tuple(heads))


def _head_inputs(gpu, g: dict, spec: PolicySpec):
    """A case's action mask and logstd as GPU ranges, or None where its heads have none
    (the `*_heads` families have them; the plain families run the mask-free path)."""
    mask = gpu.array(pack_mask(g["mask"], spec), "mask").range() if "mask" in g else None
    logstd = gpu.array(g["logstd"].reshape(-1), "logstd").range() if spec.Kc else None
    return mask, logstd


def advantage_case(gpu, name: str, family: str = "advantage"):
    """GAE / V-trace advantages and returns (masked and Gaussian heads in `advantage_heads`)."""
    g, m = case(family, name), meta(family, name)
    R, T, spec = m["R"], m["T"], head_spec(m["act_sizes"])
    out_stride = ceil4(spec.out)
    actions = gpu.array(g["actions"], "actions")
    tr = gpu.array(pack_transitions(R * T, logprob=g["logprobs"], reward=g["rewards"], terminal=g["terminals"]),
                   "transitions")
    out = gpu.array(pad_rows(g["out"], out_stride), "out")
    sizes = gpu.array(np.array(spec.act_sizes, np.uint32), "act_sizes")
    mask, logstd = _head_inputs(gpu, g, spec)
    plan = gpu.plan(name)
    compute_advantage(plan, out=out.range(), out_stride=out_stride, actions=actions.range(), transitions=tr.range(),
                      act_sizes=sizes.range(), R=R, T=T, spec=spec, cfg=learner_config(m), logstd=logstd, mask=mask)
    gpu.run(plan)
    label = f"compute_advantage {name} R={R} T={T} vtrace={m['vtrace']} heads {list(spec.act_sizes)}"
    got = gpu.read(tr).reshape(R * T, TR_WIDTH)
    return [(f"{label} advantages", got[:, tr_column("advantage")], g["advantages"].reshape(-1), "advantage"),
            (f"{label} returns", got[:, tr_column("return")], g["returns"].reshape(-1), "advantage")]


SAMPLE_REPS = 4096  # agents per row of a `sample` golden: its frequencies are checked statistically


def sample_run(gpu, spec, out_rows, logstd, mask_rows, deterministic, step=5, reps=SAMPLE_REPS):
    """sample_actions once on `reps` copies of every golden row; (actions [rows, reps, K], logprobs [rows, reps]).
    Structural failures (the env copy differs, a column other than logprob and value written) raise
    AssertionError; the statistics are tests/test_heads.py's."""
    M = out_rows.shape[0]
    N = M * reps
    ldo = ceil4(spec.out)
    out = gpu.array(pad_rows(np.repeat(out_rows, reps, axis=0), ldo), "out")
    sizes = gpu.array(np.array(spec.act_sizes, np.uint32), "act_sizes")
    glob = gpu.array(np.array([0, step, 99, int(deterministic)], np.uint32), "globals")
    ls = gpu.array(logstd.reshape(-1), "logstd") if logstd is not None else None
    mk = gpu.array(pack_mask(np.repeat(mask_rows, reps, axis=0), spec), "mask") if mask_rows is not None else None
    a_step, acts = gpu.buffer(4 * N * spec.K, "actions_step"), gpu.buffer(4 * N * spec.K, "actions")
    tr = gpu.array(pack_transitions(N), "transitions")
    plan = gpu.plan("sample")
    sample_actions(plan, out.range(), ldo, sizes.range(), glob.range(), a_step.range(), acts.range(), tr.range(),
                   N, 1, spec, logstd=ls.range() if ls else None, mask=mk.range() if mk else None)
    gpu.run(plan)
    a = gpu.read(acts).reshape(M, reps, spec.K)
    if not np.array_equal(gpu.read(a_step).reshape(M, reps, spec.K), a):
        raise AssertionError("sample_actions: the env copy and the rollout copy of the actions differ")
    rows = gpu.read(tr).reshape(M, reps, TR_WIDTH)
    if not np.array_equal(rows[..., tr_column("value")], np.repeat(out_rows[:, spec.A:spec.A + 1], reps, 1)):
        raise AssertionError("sample_actions: the value column is not the decoder's value")
    others = [c for c in range(TR_WIDTH) if c not in (tr_column("value"), tr_column("logprob"))]
    if not np.all(np.isnan(rows[..., others])):
        raise AssertionError("sample_actions writes only the log-prob and value columns")
    return a, rows[..., tr_column("logprob")]


def sample_case(gpu, name: str, family: str = "sample"):
    """A `sample` golden's deterministic actions and log-probabilities, after one stochastic draw of every
    row (whose frequencies tests/test_heads.py checks statistically; here only its structure)."""
    g, m = case(family, name), meta(family, name)
    spec = head_spec(m["act_sizes"])
    sample_run(gpu, spec, g["out"], g.get("logstd"), g.get("mask"), deterministic=False)
    det, det_lp = sample_run(gpu, spec, g["out"], g.get("logstd"), g.get("mask"), deterministic=True, reps=64)
    if not np.array_equal(det, np.repeat(g["det_actions"][:, None, :], 64, 1)):
        raise AssertionError(f"sample_actions {name} deterministic: not the argmax / μ")
    return [(f"sample_actions {name} deterministic logprob", det_lp[:, 0], g["det_logprob"], "sample")]


def ppo_case(gpu, name: str, family: str = "ppo"):
    """The fused PPO loss gradient, its stats and (Gaussian heads) the summed dlogstd. Structural
    failures (a padding column written, a masked logit with a gradient) raise AssertionError."""
    g, m = case(family, name), meta(family, name)
    M, spec = m["M"], head_spec(m["act_sizes"])
    out_stride = ceil4(spec.out)
    actions = gpu.array(g["actions"], "actions")
    tr = gpu.array(pack_transitions(M, logprob=g["logprobs"], value=g["values"], advantage=g["advantages"],
                                    **{"return": g["returns"]}), "transitions")  # reward, terminal: NaN, unread
    out = gpu.array(pad_rows(g["out"], out_stride), "out")
    sizes = gpu.array(np.array(spec.act_sizes, np.uint32), "act_sizes")
    mask, logstd = _head_inputs(gpu, g, spec)
    dout = gpu.array(np.full((M, out_stride), np.nan, np.float32), "dout")  # every element must be written
    dlogstd = gpu.buffer(4 * max(1, spec.Kc), "dlogstd")
    # two stat slots, written to slot 1: the reduction must address its slot; every stats column must be written
    width = stats_width(spec)
    stats = gpu.array(np.full(M * width, np.nan, np.float32), "stats")
    logs = gpu.buffer(4 * 2 * len(PPO_STATS), "logs")
    plan = gpu.plan(name)
    ppo_loss(plan, out=out.range(), out_stride=out_stride, actions=actions.range(), transitions=tr.range(),
             act_sizes=sizes.range(), dout=dout.range(), stats=stats.range(), M=M, spec=spec, cfg=learner_config(m),
             logstd=logstd, mask=mask)
    reduce_stats(plan, stats=stats.range(), logs=logs.range(), slot=1, M=M, Kc=spec.Kc)
    if spec.Kc:
        reduce_logstd_grad(plan, stats=stats.range(), dlogstd=dlogstd.range(), M=M, Kc=spec.Kc)
    gpu.run(plan)
    label = f"ppo_loss {name} M={M} heads {list(spec.act_sizes)}"
    d = gpu.read(dout).reshape(M, out_stride)
    if not np.all(d[:, spec.out:] == 0):
        raise AssertionError(f"{label}: padding columns of dout must be zero")
    if "mask" in g:  # an illegal logit was replaced by a constant: exactly no gradient
        cols = np.flatnonzero(np.array([s for s in spec.act_sizes for _ in range(s)]) >= 2)
        if not np.all(d[:, cols][g["mask"][:, cols] == 0] == 0):
            raise AssertionError(f"{label}: a masked-out logit got a gradient")
    checks = [(f"{label} dout", d[:, :spec.out], g["dout"], "ppo")]
    per = gpu.read(stats).reshape(M, width)
    if not np.all(np.isfinite(per)):
        raise AssertionError(f"{label}: every stats column (the statistics, then the logstd gradients) must be written")
    if "entropy" in g:
        checks.append((f"{label} entropy per element", per[:, 2], g["entropy"], "ppo"))
    if "logp" in g:
        checks.append((f"{label} logp per element", g["logprobs"] - per[:, 4], g["logp"], "ppo"))
    got = gpu.read(logs).reshape(2, len(PPO_STATS))[1]
    checks += [(f"reduce_stats {name} {k}", got[i:i + 1], g["stats"][i:i + 1], "ppo_stats")
               for i, k in enumerate(PPO_STATS)]
    if spec.Kc:
        checks.append((f"{label} dlogstd", gpu.read(dlogstd)[:spec.Kc], g["dlogstd"].reshape(-1), "ppo_logstd"))
    return checks


def muon_case(gpu, name: str, family: str = "muon"):
    """One Muon step (grad-norm clip, Nesterov momentum, Newton–Schulz, update) from golden state."""
    g, m = case(family, name), meta(family, name)
    spec = PolicySpec(obs_size=m["D"], hidden=m["H"], layers=m["L"], act_sizes=tuple(m["act_sizes"]))
    flat = lambda prefix: flatten(spec, {t.name: g[f"{prefix}.{t.name}"] for t in spec.tensors})  # noqa: E731
    w0 = flat("w")
    weights, grads = gpu.array(w0, "weights"), gpu.array(flat("grad"), "grads")
    muon = Muon(gpu, spec, learner_config(m))
    muon.reset_momentum(flat("momentum"))
    muon.set_lr(m["lr"])
    scalars = gpu.buffer(16, "scalars")
    plan = gpu.plan(name)
    muon.add(plan, weights.range(), grads.range(), scalars.range())
    gpu.run(plan)
    new, sc, w0t = unflatten(spec, gpu.read(weights)), gpu.read(scalars), unflatten(spec, w0)
    checks = [(f"grad_norm {name}", sc[1:2], g["grad_norm"], "muon"), (f"grad_norm clip {name}", sc[0:1], g["clip"], "muon")]
    for t in spec.tensors:
        want = g[f"new_w.{t.name}"]
        checks += [(f"muon {name} {t.name} new weights", new[t.name], want, "muon"),
                   (f"muon {name} {t.name} update", new[t.name] - w0t[t.name], want - w0t[t.name], "muon_step")]
    if f"new_momentum.{spec.tensors[0].name}" in g:
        mom = unflatten(spec, muon.read_momentum())
        checks += [(f"muon {name} {t.name} momentum", mom[t.name], g[f"new_momentum.{t.name}"], "muon")
                   for t in spec.tensors]
    return checks


def rank_agents(N: int, R: int, rank: int, size: int) -> np.ndarray:
    """The agent rows of a rollout of N that rank `rank` of `size` holds in a data-parallel update
    (trainer/distributed.py): minibatch m is rows [m·R, (m+1)·R) of the one-process rollout, and its
    rows [m·R + rank·R/K, … + R/K) are the rank's local minibatch m."""
    share = R // size
    return np.array([m * R + rank * share + j for m in range(N // R) for j in range(share)])


def learner_setup(gpu, name: str, family: str = "learner", masks: bool = True, world=None):
    """A Learner over a golden case's rollout (and its mask, if it has one), before any update:
    (golden, meta, spec, policy, learner). With a data-parallel `world` of K ranks, this rank's
    Learner holds its share of each minibatch (rank_agents), minibatches of R/K rows."""
    g, m = case(family, name), meta(family, name)
    spec = spec_of(m)
    N, T, R = m["N"], m["T"], m["R"]
    rows = np.arange(N) if world is None else rank_agents(N, R, world.rank, world.size)
    n = len(rows)
    r = R * n // N
    steps = (rows[:, None] * T + np.arange(T)).reshape(-1)  # the rows' elements of the [N·T] arrays
    policy = Policy(gpu, spec, flatten(spec, {t.name: g[f"w0.{t.name}"] for t in spec.tensors}))
    ro = Rollout(gpu, spec, n, T, row_multiple=r)
    ro.upload_obs(pack_obs(g["obs"][rows].reshape(n * T, -1), spec, ro.obs_stride))
    gpu.upload(ro.initial_state, np.ascontiguousarray(g["h0"][:, rows]))
    gpu.upload(ro.actions, g["actions"][steps])
    gpu.upload(ro.transitions, pack_transitions(n * T, logprob=g["logprobs"][steps], value=g["values"][steps],
                                                reward=g["rewards"][steps], terminal=g["terminals"][rows]))
    # (advantage, return: NaN until computed)
    if "mask" in g:
        gpu.upload(ro.mask, pack_mask(g["mask"][steps], spec))
    learner = Learner(policy, ro, minibatch_size=r * T, cfg=learner_config(m), masks=masks, world=world)
    return g, m, spec, policy, learner


def learner_case(gpu, name: str, family: str = "learner", world=None):
    """Consecutive minibatch updates (each sees the last one's weights) against the torch reference:
    weights, their change, Muon's momentum and the logged stats after every update. Where the
    reference clipped the global grad norm, the GPU's norm must exceed max_grad_norm too. With a
    data-parallel `world`, this rank's share of the rollout (learner_setup)."""
    g, m, spec, policy, learner = learner_setup(gpu, name, family, world=world)
    if learner.num_minibatches != m["minibatches"]:
        raise AssertionError(f"learner {name}: {learner.num_minibatches} minibatches, golden has {m['minibatches']}")
    checks = []
    prev = unflatten(spec, policy.read_weights())
    for mb in range(m["minibatches"]):
        res = learner.run(m["lr"], minibatches=[mb])
        w = unflatten(spec, policy.read_weights())
        mom = unflatten(spec, learner.muon.read_momentum())
        label = f"learner {name} after update {mb + 1}"
        for t in spec.tensors:
            want = g[f"w{mb + 1}.{t.name}"]
            checks += [(f"{label} {t.name}", w[t.name], want, "learner"),
                       (f"{label} {t.name} change", w[t.name] - prev[t.name], want - prev[t.name], "learner_step"),
                       (f"{label} {t.name} momentum", mom[t.name], g[f"momentum{mb + 1}.{t.name}"], "learner_step")]
        checks += [(f"{label} stat {k}", res["per_minibatch"][0, i:i + 1], g["stats"][mb, i:i + 1], "learner_stats")
                   for i, k in enumerate(PPO_STATS + ("grad_norm",))]
        if "clip" in m and m["clip"][mb] < 1.0 and not res["grad_norm"] > m["max_grad_norm"]:
            raise AssertionError(f"{label}: the reference clipped the gradient, the GPU's grad norm "
                                 f"{res['grad_norm']:.4g} <= max_grad_norm {m['max_grad_norm']}")
        prev = w
    return checks


class ConvNet:
    """Buffers of the picture encoder's convs for `frames` frames (weights, ys, dys, dw, the patch scratch)
    and its forward and backward passes, each one plan and one submit.

    packed_activations: every ys and dys in one buffer at offsets that are not all multiples of 4 floats,
    which takes the kernels' scalar paths and binds one buffer as both y and dy."""

    def __init__(self, gpu, layers, ws, obs: np.ndarray, src, frames: int, chunk=None, packed_activations=False):
        self.gpu, self.layers, self.frames, self.src = gpu, layers, frames, src
        self.obs = gpu.array(obs.view(np.uint32) if obs.dtype == np.uint8 else obs, "obs")
        self.w = [gpu.array(np.ascontiguousarray(w, np.float32), f"w{i}") for i, w in enumerate(ws)]
        sizes = [frames * layer.out_size for layer in layers]
        if packed_activations:
            offs = np.cumsum([1] + [n + 3 for n in sizes + sizes])
            act = gpu.buffer(4 * int(offs[-1]), "activations")
            self.ys = [act.f32(int(offs[i]), n) for i, n in enumerate(sizes)]
            self.dys = [act.f32(int(offs[len(sizes) + i]), n) for i, n in enumerate(sizes)]
        else:
            self.ys = [gpu.buffer(4 * n, f"ys{i}").range() for i, n in enumerate(sizes)]
            self.dys = [gpu.buffer(4 * n, f"dys{i}").range() for i, n in enumerate(sizes)]
        self.dw = [gpu.buffer(4 * layer.out_c * layer.patch, f"dw{i}").range() for i, layer in enumerate(layers)]
        self.scratch = conv.ConvScratch(gpu, layers, chunk or conv.conv_chunk(layers, frames))

    def forward(self) -> list[np.ndarray]:
        plan = self.gpu.plan("conv_forward")
        conv.conv_forward(plan, self.obs.range(), self.src, [w.range() for w in self.w], self.ys, self.frames,
                          self.layers, self.scratch)
        self.gpu.run(plan)
        return [self.gpu.read(r).reshape(self.frames, -1) for r in self.ys]

    def backward(self, dy_last: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        self.gpu.upload(self.dys[-1], np.ascontiguousarray(dy_last, np.float32))
        plan = self.gpu.plan("conv_backward")
        conv.conv_backward(plan, self.obs.range(), self.src, [w.range() for w in self.w], self.ys, self.dys,
                           self.dw, self.frames, self.layers, self.scratch)
        self.gpu.run(plan)
        return ([self.gpu.read(r).reshape(self.frames, -1) for r in self.dys],
                [self.gpu.read(r).reshape(layer.out_c, -1) for r, layer in zip(self.dw, self.layers)])


def conv_net(gpu, name: str, chunk=None, packed_activations=False):
    """(ConvNet, golden tensors, case metadata) of golden/conv.safetensors case `name`."""
    c, m = case("conv", name), meta("conv", name)
    layers = conv.conv_layers(m["height"], m["width"], m["channels"])
    ws = [c["w0"], golden("conv")["shared/w1"], golden("conv")["shared/w2"]]
    src = conv.PictureInput(bool(m["packed"]), m["row_stride"], m["offset"])
    return ConvNet(gpu, layers, ws, c["obs"], src, m["frames"], chunk, packed_activations), c, m


def conv_case(gpu, name: str, family: str = "conv", packed_activations=False):
    """Forward (every stored layer output) and, for cases with gradients, every dpre and dW."""
    net, c, m = conv_net(gpu, name, packed_activations=packed_activations)
    shape = f"{m['height']}x{m['width']}x{m['channels']} frames={m['frames']}"
    checks = [(f"conv_forward y{i} {name} {shape}", y, c[f"y{i}"], "conv")
              for i, y in enumerate(net.forward()) if f"y{i}" in c]
    if m["backward"]:
        dys, dws = net.backward(c["dy_last"])
        for i in range(len(dys)):
            checks += [(f"conv_backward dpre{i} {name} {shape}", dys[i], c[f"dpre{i}"], "conv_grad"),
                       (f"conv_backward dw{i} {name} {shape}", dws[i], c[f"dw{i}"], "conv_grad")]
    return checks


def all_runs(gpu) -> list[tuple[str, str, object]]:
    """Every golden run on this device, as (golden family, label, thunk returning its checks): every
    matmul variant the device can run (split-K ones also at SPLITS), every MinGRU variant, and each case
    of the other families with the kernels the device's chooser picks. tools/gpu_report.py runs them;
    tools/plan_export.py records them for a replay on another WebGPU implementation. Variants the device
    cannot run are left out (see matmul.Variant.unavailable)."""
    from trainer.kernels import matmul, mingru
    runs = []
    probe = matmul.MatmulShape("matmul_forward", 4, 4, 4, 1, True, True)
    for variant in matmul.VARIANTS:
        if variant.unavailable(probe, gpu) is None:
            runs += [("matmul", f"matmul[{variant.name}] {n}",
                      lambda n=n, v=variant.name: matmul_products(gpu, case("matmul", n), v)) for n in cases("matmul")]
    for v in [x.name for x in matmul.VARIANTS if x.splitk]:
        runs += [("matmul_splitk", f"matmul split-K[{v}] {n}",
                  lambda n=n, v=v: matmul_products(gpu, case("matmul_splitk", n), v, SPLITS))
                 for n in cases("matmul_splitk")]
    for v in [x.name for x in mingru.VARIANTS]:
        runs += [("mingru_scan", f"mingru scan[{v}] {n}", lambda n=n, v=v: mingru_scan(gpu, case("mingru", n), v))
                 for n in cases("mingru")]
        runs += [("mingru_step", f"mingru step[{v}] {n}", lambda n=n, v=v: mingru_steps(gpu, case("mingru", n), v))
                 for n in cases("mingru")]
    # the *_heads families run the masked and Gaussian paths of the same kernels
    for fam, fn in (("policy", policy_case), ("sample", sample_case), ("advantage", advantage_case),
                    ("advantage_heads", advantage_case),
                    ("ppo", ppo_case), ("ppo_heads", ppo_case), ("muon", muon_case), ("learner", learner_case),
                    ("learner_heads", learner_case), ("conv", conv_case), ("policy_picture", policy_picture_case),
                    ("learner_picture", learner_case)):
        runs += [(fam, f"{fam} {n}", lambda n=n, fn=fn, fam=fam: fn(gpu, n, fam)) for n in cases(fam)]
    return runs

