"""Action masks, continuous (Gaussian) and hybrid heads: sampling, PPO loss, V-trace and whole updates vs
the torch goldens (golden/sample, ppo_heads, advantage_heads, learner_heads); the mask path leaves an
unmasked run bit-identical; the freeze ablation; layout; clear errors for bad input."""
import numpy as np
import pytest

import golden.runs as gr
from golden.check import assert_close, case, meta, tolerance
from trainer.gpu import GPUError
from trainer.kernels import TR_WIDTH, pack_transitions
from trainer.kernels.advantage import compute_advantage
from trainer.kernels.ppo import ppo_loss, reduce_logstd_grad, stats_width
from trainer.kernels.sample import sample_actions
from trainer.learner import Learner, LearnerConfig
from trainer.policy import Policy, Rollout, RolloutStep
from trainer.spec import PolicySpec, ceil4, init_weights, pack_mask, unflatten

HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


# ------------------------------------------------------------------------------------------ sampling

REPS = gr.SAMPLE_REPS  # agents per golden row


def _sample(gpu, spec, out_rows, logstd, mask_rows, deterministic, step=5):
    return gr.sample_run(gpu, spec, out_rows, logstd, mask_rows, deterministic, step)


@pytest.mark.parametrize("name", gr.cases("sample"))
def test_sampling_statistics_golden(gpu, name):
    """Masked choices are never drawn, frequencies follow the masked softmax, Gaussian draws have the
    golden μ and σ, the logprob is the golden distribution's, and deterministic mode takes argmax / μ."""
    g, m = case("sample", name), meta("sample", name)
    spec = gr.head_spec(m["act_sizes"])
    M = m["M"]
    mask = g.get("mask")
    logstd = g.get("logstd")
    a, lp = _sample(gpu, spec, g["out"], logstd, mask, deterministic=False)
    table = g["logp_table"].astype(np.float64)
    want_lp = np.zeros((M, REPS))
    o, kc = 0, 0
    sigmas, floor = tolerance("sampling"), tolerance("sampling_floor")
    for h, size in enumerate(spec.act_sizes):
        x = a[:, :, h].astype(np.float64)
        if size == 1:
            mu, sigma = table[:, o:o + 1], float(g["sigma"][kc])
            z = (x - mu) / sigma
            assert np.all(np.abs(z.mean(1)) < sigmas / np.sqrt(REPS)), (name, h, z.mean(1))  # mean μ
            assert np.all(np.abs(z.std(1) - 1) < sigmas / np.sqrt(2 * REPS)), (name, h, z.std(1))  # std σ
            inside = (np.abs(z) < 1).mean(1)  # the shape too: P(|z| < 1) = 0.6827
            assert np.all(np.abs(inside - 0.6827) < sigmas * np.sqrt(0.6827 * 0.3173 / REPS)), (name, h, inside)
            want_lp += -0.5 * z ** 2 - HALF_LOG_2PI - np.log(sigma)
            kc += 1
        else:
            assert np.all(x == np.floor(x)) and x.min() >= 0 and x.max() < size
            idx = x.astype(int)
            for r in range(M):
                legal = mask[r, o:o + size] != 0 if mask is not None else np.ones(size, bool)
                freq = np.bincount(idx[r], minlength=size) / REPS
                if legal.any():
                    assert np.all(freq[~legal] == 0), f"{name} row {r} head {h}: drew a masked choice {freq}"
                p = np.exp(table[r, o:o + size])
                tol = sigmas * np.sqrt(p * (1 - p) / REPS) + floor
                assert np.all(np.abs(freq - p) < tol), (name, r, h, freq, p)
                want_lp[r] += table[r, o + idx[r]]
        o += size
    assert_close(f"sample_actions {name} logprob", lp, want_lp, "sample")

    det, det_lp = _sample(gpu, spec, g["out"], logstd, mask, deterministic=True)
    assert np.array_equal(det, np.repeat(g["det_actions"][:, None, :], REPS, 1)), "deterministic: argmax / μ"
    assert_close(f"sample_actions {name} deterministic logprob", det_lp[:, 0], g["det_logprob"], "sample")


# ------------------------------------------------------------------------------------- PPO, V-trace

@pytest.mark.parametrize("name", gr.cases("ppo_heads"))
def test_ppo_loss_heads_golden(gpu, name):
    """dout (masked logits get exactly no gradient), per-element entropy and logp, stats, dlogstd."""
    for check in gr.ppo_case(gpu, name, "ppo_heads"):
        assert_close(*check)


@pytest.mark.parametrize("name", gr.cases("advantage_heads"))
def test_vtrace_heads_golden(gpu, name):
    for check in gr.advantage_case(gpu, name, "advantage_heads"):
        assert_close(*check)


# ------------------------------------------------------------------------------------ whole updates

@pytest.mark.parametrize("name", gr.cases("learner_heads"))
def test_learner_heads_updates_golden(gpu, name):
    """Consecutive minibatch updates with masks / Gaussian heads / both, logstd included, vs torch."""
    if name == "masked_clipped_1mb":
        assert max(meta("learner_heads", name)["clip"]) < 1.0, "this case must clip the gradient"
    for check in gr.learner_case(gpu, name, "learner_heads"):
        assert_close(*check)


def test_learner_heads_deterministic(gpu):
    finals = []
    for _ in range(2):
        _, m, _, policy, learner = gr.learner_setup(gpu, "hybrid_masked_3mb", "learner_heads")
        res = learner.run(m["lr"])
        finals.append((policy.read_weights().tobytes(), learner.muon.read_momentum().tobytes(),
                       res["per_minibatch"].tobytes()))
    assert finals[0] == finals[1]


def test_freeze_continuous_ablation(gpu):
    """freeze_continuous: the Gaussian heads' means and logstd get no gradient; the rest is unchanged."""
    g, m = case("ppo_heads", "hybrid_m67"), meta("ppo_heads", "hybrid_m67")
    M, spec = m["M"], gr.head_spec(m["act_sizes"])
    ldo = ceil4(spec.out)
    results = []
    for frozen in (False, True):
        cfg = gr.learner_config(m)
        cfg.freeze_continuous = frozen
        actions = gpu.array(g["actions"], "actions")
        tr = gpu.array(pack_transitions(M, logprob=g["logprobs"], value=g["values"], advantage=g["advantages"],
                                        **{"return": g["returns"]}), "transitions")
        out, dout = gpu.array(gr.pad_rows(g["out"], ldo), "out"), gpu.buffer(4 * M * ldo, "dout")
        dls = gpu.buffer(4 * spec.Kc, "dlogstd")
        stats = gpu.buffer(4 * M * stats_width(spec), "stats")
        plan = gpu.plan("freeze")
        ppo_loss(plan, out=out.range(), out_stride=ldo, actions=actions.range(), transitions=tr.range(),
                 act_sizes=gpu.array(np.array(spec.act_sizes, np.uint32), "sizes").range(), dout=dout.range(),
                 stats=stats.range(), M=M, spec=spec, cfg=cfg, logstd=gpu.array(g["logstd"], "ls").range(),
                 mask=gpu.array(pack_mask(g["mask"], spec), "mask").range())
        reduce_logstd_grad(plan, stats=stats.range(), dlogstd=dls.range(), M=M, Kc=spec.Kc)
        gpu.run(plan)
        results.append((gpu.read(dout).reshape(M, ldo), gpu.read(dls)))
    (d0, l0), (d1, l1) = results
    mean_cols = [3, 6]  # heads (3, 1, 2, 1): the means sit at columns 3 and 6
    assert np.all(d1[:, mean_cols] == 0) and np.all(l1 == 0)
    assert np.abs(d0[:, mean_cols]).max() > 0 and np.abs(l0).max() > 0
    other = [c for c in range(spec.out) if c not in mean_cols]
    assert np.array_equal(d0[:, other], d1[:, other])


# ------------------------------------------------------------------- masks leave unmasked runs alone

def test_mask_path_is_bit_identical_when_all_legal(gpu):
    """An env that never writes its mask trains exactly as without the mask path: learner updates
    (mask bound and all ones vs no mask at all) and rollout steps agree to the bit."""
    finals = []
    for masks in (True, False):
        _, m, spec, policy, learner = gr.learner_setup(gpu, "small_vtrace")
        if not masks:
            learner = Learner(policy, learner.rollout, gr.learner_config(m), minibatch_size=learner.M, masks=False)
        res = [learner.run(m["lr"])["per_minibatch"].tobytes() for _ in range(2)]
        finals.append((policy.read_weights().tobytes(), learner.muon.read_momentum().tobytes(), res))
    assert finals[0] == finals[1]

    spec = PolicySpec(obs_size=11, hidden=16, layers=2, act_sizes=(3, 4, 2))
    N, T = 29, 6
    runs = []
    for masks in (True, False):
        rng = np.random.default_rng(4)
        policy = Policy(gpu, spec, seed=5)
        ro = Rollout(gpu, spec, N, T)
        step = RolloutStep(policy, ro, seed=8, masks=masks)
        acts = [step(t, 40 + t, rng.standard_normal((N, 11)), rng.standard_normal(N), (rng.random(N) < 0.2) * 1.0,
                     np.ones((N, spec.A), np.uint8)).tobytes() for t in range(T)]
        runs.append((acts, gpu.read(ro.transitions).tobytes()))
    assert runs[0] == runs[1]


def test_rollout_stores_mask_and_training_uses_it(gpu):
    """The env's mask goes to the GPU with the observations: masked choices are never sampled, the
    rollout stores the mask, and the logprob the learner recomputes from it equals the sampler's."""
    spec = PolicySpec(obs_size=5, hidden=16, layers=1, act_sizes=(4, 1, 3))
    N, T = 33, 4
    rng = np.random.default_rng(2)
    policy = Policy(gpu, spec, seed=1)
    ro = Rollout(gpu, spec, N, T)
    step = RolloutStep(policy, ro, seed=3)
    masks = []
    for t in range(T):
        mask = (rng.random((N, spec.A)) < 0.5).astype(np.uint8)
        mask[:, 0] = 1  # head 0 and head 2 keep one legal choice each
        mask[:, 5] = 1
        masks.append(mask)
        a = step(t, t, rng.standard_normal((N, 5)), np.zeros(N), np.zeros(N), mask)
        assert np.all(mask[np.arange(N), a[:, 0].astype(int)] == 1)
        assert np.all(mask[np.arange(N), 5 + a[:, 2].astype(int)] == 1)
        assert np.all(a[:, 1] != np.floor(a[:, 1])), "a Gaussian head draws floats"
    stored = gpu.read(ro.mask, dtype=np.uint32).reshape(N, T)
    want = np.stack([pack_mask(mk, spec)[:, 0] for mk in masks], 1)
    assert np.array_equal(stored, want)
    # the next step without a mask: back to all legal (uploaded once, then skipped)
    step(0, 9, rng.standard_normal((N, 5)), np.zeros(N), np.zeros(N), np.ones((N, spec.A), np.uint8))
    assert np.all(gpu.read(ro.mask, dtype=np.uint32).reshape(N, T)[:, 0] == 0xFFFFFFFF)
    # V-trace recomputes each stored action's logprob from the stored mask and logstd: ratio = 1 everywhere
    for t in range(T):
        step(t, 20 + t, rng.standard_normal((N, 5)), rng.uniform(-1, 1, N), np.zeros(N), masks[t])  # not clamped
    from trainer.policy import Activations, policy_forward
    act = Activations(gpu, spec, N, T)
    plan = gpu.plan("check")
    policy_forward(plan, policy, act, ro.obs_rows(0, N), ro.obs_stride, ro.column("terminal", 0, N),
                   [ro.state_of(ro.initial_state, 0)], terminals_stride=TR_WIDTH)
    cfg = LearnerConfig(vtrace=True, vtrace_rho_clip=1e9, vtrace_c_clip=1e9, gamma=1.0, gae_lambda=1.0)
    compute_advantage(plan, out=act.out.range(), out_stride=act.out_stride, actions=ro.actions.range(),
                      transitions=ro.transitions.range(), act_sizes=policy.act_sizes.range(), R=N, T=T, spec=spec,
                      cfg=cfg, logstd=policy.w("logstd"), mask=ro.mask.range())
    gpu.run(plan)
    out = gpu.read(act.out).reshape(N * T, act.out_stride)
    # with ρ = c = ratio unclipped and γ = λ = 1, A_{T−2} = ρ·(r + V' − V): recover ρ where r + V' − V ≠ 0
    r = ro.read_column("reward").reshape(N, T)
    v = out[:, spec.A].reshape(N, T)
    delta = r[:, T - 1] + v[:, T - 1] - v[:, T - 2]
    rho = ro.read_column("advantage").reshape(N, T)[:, T - 2] / delta
    assert_close("V-trace ratio of the stored actions", rho, np.ones_like(rho), "vtrace_ratio")


# ------------------------------------------------------------------------------ layout and errors

def test_continuous_layout_is_pufferlibs():
    """Encoder [H, D], decoder [K+1, H], logstd [1, K], layers [3H, H], each padded to 8 floats."""
    D, H, L, K = 27, 32, 3, 3
    spec = PolicySpec(obs_size=D, hidden=H, layers=L, act_sizes=(1,) * K)
    assert spec.action_space == "continuous" and spec.Kc == K
    assert [t.name for t in spec.tensors] == ["encoder", "decoder", "logstd", "mingru.0", "mingru.1", "mingru.2"]
    assert spec.decoder.shape == (K + 1, H) and spec.logstd.shape == (1, K)
    pad8 = lambda n: -(-n // 8) * 8  # noqa: E731
    want = pad8(H * D) + pad8((K + 1) * H) + pad8(K) + L * pad8(3 * H * H)
    assert spec.num_floats == want and spec.nbytes == 4 * want
    assert spec.logstd.offset == pad8(H * D) + pad8((K + 1) * H) and spec.mingru(0).offset == spec.logstd.offset + 8
    assert spec.pufferlib_notes() and "K % 8" in spec.pufferlib_notes()[0]  # K = 3: warned
    assert not PolicySpec(obs_size=D, hidden=H, layers=L, act_sizes=(1,) * 8).pufferlib_notes()
    hybrid = PolicySpec(obs_size=D, hidden=H, layers=L, act_sizes=(3, 1, 2))
    assert hybrid.action_space == "hybrid" and hybrid.logstd.shape == (1, 1) and hybrid.decoder.shape == (7, H)
    assert "puffgpu-only" in hybrid.pufferlib_notes()[0]
    w = unflatten(spec, init_weights(spec, 73))
    assert np.all(w["logstd"] == 0), "logstd starts at 0: σ = 1"


def test_bad_head_sizes_and_shapes_are_refused(gpu):
    with pytest.raises(ValueError, match=r"action head 1 has size 0 in ACT_SIZES \[3, 0\].*>= 1"):
        PolicySpec(obs_size=4, hidden=8, layers=1, act_sizes=(3, 0))
    with pytest.raises(ValueError, match="no action heads"):
        PolicySpec(obs_size=4, hidden=8, layers=1, act_sizes=())
    spec = PolicySpec(obs_size=4, hidden=8, layers=1, act_sizes=(3, 1))
    step = RolloutStep(Policy(gpu, spec, seed=0), Rollout(gpu, spec, 5, 2), seed=0)
    ok = dict(obs=np.zeros((5, 4)), rewards=np.zeros(5), terminals=np.zeros(5))
    with pytest.raises(ValueError, match=r"action_mask must have shape \(5, 4\).*got \(5, 3\)"):
        step(0, 0, **ok, action_mask=np.ones((5, 3), np.uint8))
    with pytest.raises(ValueError, match=r"observations must have shape \(5, 4\).*got \(5, 5\)"):
        step(0, 0, np.zeros((5, 5)), ok["rewards"], ok["terminals"])
    with pytest.raises(ValueError, match=r"action_mask must have shape \(agents, 4\)"):
        pack_mask(np.ones((5, 6), np.uint8), spec)
    r = gpu.buffer(4096, "b").range()
    with pytest.raises(GPUError, match="logstd is needed"):
        sample_actions(gpu.plan("x"), r, 4, r, r, r, r, r, 5, 1, spec)


# ------------------------------------------------------------------------------------- checkpoints

def test_continuous_checkpoint_size_and_export(gpu, tmp_path):
    """A continuous-only checkpoint is PufferLib's size (encoder, decoder [K+1, H], logstd [1, K], layers,
    each padded to 8 floats), round-trips bit-exactly, and exports with logstd named."""
    import subprocess
    import sys

    from safetensors.numpy import load_file

    from trainer import checkpoint as ckpt
    D, H, L, K = 11, 16, 2, 3
    spec = PolicySpec(obs_size=D, hidden=H, layers=L, act_sizes=(1,) * K)
    w = np.random.default_rng(0).standard_normal(spec.num_floats).astype(np.float32)
    path = ckpt.save(tmp_path / "c.bin", w, spec, "reach", 7)
    pad8 = lambda n: -(-n // 8) * 8  # noqa: E731
    assert path.stat().st_size == 4 * (pad8(H * D) + pad8((K + 1) * H) + pad8(K) + L * pad8(3 * H * H)) == 7136
    side = ckpt.read_sidecar(path)
    assert side["format"] == ckpt.FORMAT and side["action_space"] == "continuous" and "puffgpu_only" not in side
    assert "K % 8" in side["pufferlib_notes"][0]
    loaded, _ = ckpt.load(path, spec)
    assert loaded.tobytes() == w.tobytes()
    subprocess.run([sys.executable, "tools/export_safetensors.py", str(path)], check=True, capture_output=True)
    t = load_file(str(tmp_path / "c.safetensors"))
    assert sorted(t) == ["decoder.logstd", "decoder.weight", "encoder.weight", "mingru.0.weight", "mingru.1.weight"]
    ref = unflatten(spec, w)
    assert t["decoder.logstd"].shape == (1, K) and np.array_equal(t["decoder.logstd"], ref["logstd"])
    assert t["decoder.weight"].shape == (K + 1, H) and np.array_equal(t["mingru.1.weight"], ref["mingru.1"])
    # a PufferLib file (no sidecar) of that size loads as the continuous architecture
    raw = tmp_path / "0000000000000001.bin"
    w.astype("<f4").tofile(raw)
    assert np.array_equal(ckpt.load(raw, spec)[0], w)


def test_hybrid_checkpoint_sidecar_says_puffgpu_only(tmp_path):
    from trainer import checkpoint as ckpt
    spec = PolicySpec(obs_size=5, hidden=8, layers=1, act_sizes=(3, 1, 2))
    path = ckpt.save(tmp_path / "h.bin", np.zeros(spec.num_floats, np.float32), spec, "aimjump", 1)
    side = ckpt.read_sidecar(path)
    assert side["puffgpu_only"] is True and side["action_space"] == "hybrid" and side["format"] == ckpt.FORMAT_HYBRID
    assert "PufferLib 5.0 rejects mixed action spaces" in side["pufferlib_notes"][0]
    discrete = PolicySpec(obs_size=5, hidden=8, layers=1, act_sizes=(3, 2))
    side = ckpt.read_sidecar(ckpt.save(tmp_path / "d.bin", np.zeros(discrete.num_floats, np.float32), discrete, "x", 1))
    assert "puffgpu_only" not in side and "pufferlib_notes" not in side
