"""Pictures in the policy: the layout of a picture policy, uint8 observations packed 4 per u32 on the GPU,
the conv encoder's forward/backward and whole updates against torch, rollout ≡ training, Muon on conv
weights, checkpoints and safetensors export, and a blank picture that trains without NaN."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

import envs
import golden.runs as gr
from golden.check import assert_close, tolerance
from trainer import checkpoint as ckpt
from trainer.kernels import TR_WIDTH
from trainer.spec import CONVS, ConvLayer, PolicySpec, conv_layers, flatten, init_weights, pack_obs, pad8, unflatten

PIXELS = PolicySpec(obs_size=64 * 64 * 3, hidden=128, layers=4, act_sizes=(8,), picture=(64, 64, 3), obs_dtype="uint8")


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


# ------------------------------------------------------------------------------------------ layout, no GPU

def test_picture_layout_names_shapes_and_padding():
    spec = PolicySpec(obs_size=5 + 48 * 40, hidden=16, layers=2, act_sizes=(3, 1), picture=(48, 40, 1))
    names = [t.name for t in spec.tensors]
    assert names == ["encoder.convs.0", "encoder.convs.1", "encoder.convs.2", "encoder.linear", "decoder", "logstd",
                     "mingru.0", "mingru.1"]
    # 48x40 → 11x9 → 4x3 → 2x1 (x64): conv_out = 128
    assert spec.conv_out == 2 * 1 * 64 and spec.features == 5
    t = {v.name: v for v in spec.tensors}
    assert t["encoder.convs.0"].shape == (32, 8 * 8 * 1) and t["encoder.convs.0"].export_shape == (32, 8, 8, 1)
    assert t["encoder.convs.1"].export_shape == (64, 4, 4, 32) and t["encoder.convs.2"].export_shape == (64, 3, 3, 64)
    assert t["encoder.linear"].shape == (16, 5 + 128)
    off = 0
    for v in spec.tensors:  # checkpoint order, each tensor padded to a multiple of 8 floats
        assert v.offset == off
        off = pad8(off + v.size)
    assert spec.num_floats == off
    assert spec.encoders == spec.tensors[:4] and spec.encoder.name == "encoder.linear"
    assert spec.decoder.name == "decoder" and spec.logstd.name == "logstd" and spec.mingru(1).name == "mingru.1"
    assert PIXELS.conv_out == 1024  # 64x64 → 15x15x32 → 6x6x64 → 4x4x64


def test_picture_flops_and_errors():
    H = 128
    conv = 15 * 15 * 32 * 8 * 8 * 3 + 6 * 6 * 64 * 4 * 4 * 32 + 4 * 4 * 64 * 3 * 3 * 64  # ≈3.3M multiply-adds
    assert PIXELS.flops_per_step() == 2 * (conv + H * 1024 + 4 * 3 * H * H + 9 * H)
    assert conv == 3_151_872  # + encoder.linear 131,072 ≈ 3.3M per frame
    with pytest.raises(ValueError, match="too small.*at least 36x36"):
        PolicySpec(obs_size=35 * 40, hidden=8, layers=1, act_sizes=(2,), picture=(35, 40, 1))
    with pytest.raises(ValueError, match="needs 4800 values but the observation holds 4000"):
        PolicySpec(obs_size=4000, hidden=8, layers=1, act_sizes=(2,), picture=(40, 40, 3))
    with pytest.raises(ValueError, match="height, width, channels"):
        PolicySpec(obs_size=4800, hidden=8, layers=1, act_sizes=(2,), picture=(40, 40))
    assert PolicySpec(4, 8, 1, (2,), obs_dtype=np.int16).obs_dtype == "float32"  # other dtypes: float32 as before
    assert PolicySpec(4, 8, 1, (2,), obs_dtype=np.uint8).obs_words == 1


def test_conv_geometry_lives_once_in_the_spec():
    """The conv family computes no geometry of its own: its layers are the spec's, for every picture."""
    from trainer.kernels import conv
    assert conv.conv_layers is conv_layers and conv.ConvLayer is ConvLayer
    for pic in ((64, 64, 3), (80, 60, 3), (84, 84, 1), (36, 36, 1), (48, 40, 2)):
        spec = PolicySpec(obs_size=pic[0] * pic[1] * pic[2], hidden=8, layers=1, act_sizes=(2,), picture=pic)
        assert spec.convs == conv_layers(*pic)
        assert [(l.out_c, l.kernel, l.stride) for l in spec.convs] == list(CONVS)
        assert [(l.out_c, l.patch) for l in spec.convs] == [t.shape for t in spec.encoders[:3]]
        assert spec.convs[-1].out_size == spec.conv_out


def test_picture_init_kaiming_uniform_sqrt2():
    flat = init_weights(PIXELS, seed=73)
    for name, t in unflatten(PIXELS, flat).items():
        bound = (math.sqrt(2) if name.startswith("encoder") else 1.0) / math.sqrt(t.shape[1])
        assert np.abs(t).max() <= bound, name
        sigma = bound / math.sqrt(3)
        assert abs(t.std() - sigma) < tolerance("sampling") * sigma * math.sqrt(0.2 / t.size), name


def test_describe_round_trips_and_older_sidecars_read():
    assert PolicySpec.from_meta(PIXELS.describe()) == PIXELS
    assert PIXELS.describe()["picture"] == [64, 64, 3] and PIXELS.describe()["obs_dtype"] == "uint8"
    old = {"obs_size": 413, "hidden_size": 128, "num_layers": 4, "act_sizes": [3, 3]}  # before pictures
    assert PolicySpec.from_meta(old) == PolicySpec(413, 128, 4, (3, 3))


def test_pack_obs_little_endian_words():
    spec = PolicySpec(obs_size=6, hidden=8, layers=1, act_sizes=(2,), obs_dtype="uint8")
    words = pack_obs(np.array([[1, 2, 3, 4, 5, 255]], np.uint8), spec)
    assert words.dtype == np.dtype("<u4") and words.shape == (1, 2)
    assert [int(w) for w in words[0]] == [0x04030201, 0x0000FF05]  # value i = byte i%4 of word i/4, rows padded


# ------------------------------------------------------------------------------------------ rollout words

def test_rollout_store_copies_words_bit_exactly(gpu):
    """float32 rows are copied bit for bit (−0, NaN payloads, subnormals survive) and padded to ceil4(D);
    uint8 rows are stored packed, ceil(D/4) words: a 64×64×3 frame is 12,288 bytes per step."""
    from trainer.kernels.rollout import rollout_store
    from trainer.policy import Rollout
    rng = np.random.default_rng(0)
    for spec in (PolicySpec(obs_size=7, hidden=8, layers=1, act_sizes=(2,)),
                 PolicySpec(obs_size=13, hidden=8, layers=1, act_sizes=(2,), obs_dtype="uint8")):
        N, T = 5, 3
        ro = Rollout(gpu, spec, N, T)
        if spec.packed:
            obs = [rng.integers(0, 256, (N, spec.obs_size), dtype=np.uint8) for _ in range(T)]
            assert ro.obs_stride == 4
        else:
            obs = [rng.standard_normal((N, spec.obs_size)).astype(np.float32) for _ in range(T)]
            obs[1][0, :4] = np.array([0x80000000, 0x7FC01234, 0x00000001, 0xFF800000], np.uint32).view(np.float32)
            assert ro.obs_stride == 8
        step_obs = gpu.buffer(4 * N * spec.obs_words, "obs_step")
        zeros = gpu.array(np.zeros(N, np.float32), "zeros")
        glob = gpu.buffer(16, "globals")
        for t in range(T):
            plan = gpu.plan("store")
            rollout_store(plan, ro, step_obs.range(), zeros.range(), zeros.range(), glob.range())
            gpu.upload(step_obs, pack_obs(obs[t], spec))
            gpu.upload(glob, np.array([t, 0, 0, 0], np.uint32))
            gpu.run(plan.finalize())
        got = ro.read_obs().reshape(N, T, ro.obs_stride)
        for t in range(T):
            assert np.array_equal(got[:, t], pack_obs(obs[t], spec, ro.obs_stride)), (spec.obs_dtype, t)
    assert Rollout.stride_for(PIXELS) * 4 == 12_288


# ------------------------------------------------------------------------------------------ checkpoints, export

def test_picture_checkpoint_round_trip_and_export(gpu, tmp_path):
    from trainer.policy import Policy
    spec = PolicySpec(obs_size=3 + 36 * 40 * 2, hidden=16, layers=1, act_sizes=(3,), picture=(36, 40, 2),
                      obs_dtype="uint8")
    policy = Policy(gpu, spec, seed=5)
    w = policy.read_weights()
    path = ckpt.save(tmp_path / "a.bin", w, spec, "pixels", 9)
    meta = json.loads(ckpt.sidecar_path(path).read_text(encoding="utf-8"))
    assert meta["picture"] == [36, 40, 2] and meta["obs_dtype"] == "uint8"
    loaded, _ = ckpt.load(path, spec, env="pixels")
    assert loaded.tobytes() == w.tobytes()
    assert Policy(gpu, spec, loaded).read_weights().tobytes() == w.tobytes()
    other = PolicySpec(obs_size=3 + 40 * 36 * 2, hidden=16, layers=1, act_sizes=(3,), picture=(40, 36, 2),
                       obs_dtype="uint8")
    with pytest.raises(ckpt.CheckpointError, match=r"a 36x40x2 picture .* shows a 40x36x2 picture"):
        ckpt.load(path, other)
    with pytest.raises(ckpt.CheckpointError, match="no picture"):
        ckpt.load(path, PolicySpec(obs_size=spec.obs_size, hidden=16, layers=1, act_sizes=(3,)))
    subprocess.run([sys.executable, "tools/export_safetensors.py", str(path)], check=True, capture_output=True)
    t = load_file(str(tmp_path / "a.safetensors"))
    assert t["encoder.convs.0.weight"].shape == (32, 8, 8, 2)
    assert t["encoder.convs.1.weight"].shape == (64, 4, 4, 32)
    assert t["encoder.convs.2.weight"].shape == (64, 3, 3, 64)
    assert t["encoder.linear.weight"].shape == (16, 3 + spec.conv_out)
    back = flatten(spec, {k.removesuffix(".weight"): v for k, v in t.items()})  # loads back bit-exactly
    assert back.tobytes() == w.tobytes()
    with safe_open(str(tmp_path / "a.safetensors"), "np") as f:
        assert json.loads(f.metadata()["puffgpu"])["picture"] == [36, 40, 2]


# ------------------------------------------------------------------------------------------ Muon on convs

def _muon_ref(w, g, lr, cfg):
    """One Muon step from zero momentum in float64 (docs/design.md, Numerics), each tensor a matrix."""
    from trainer.learner import NS_COEFFS
    norm = math.sqrt(sum(float((v.astype(np.float64) ** 2).sum()) for v in g.values()))
    clip = min(cfg.max_grad_norm / (norm + 1e-6), 1.0)
    out = {}
    for k, v in w.items():
        gk = g[k].astype(np.float64) * clip
        m = gk
        u = gk + cfg.momentum * m
        X = u / max(np.linalg.norm(u), 1e-7)
        R, C = X.shape
        for a, b, c in NS_COEFFS:
            if R <= C:
                G = X @ X.T
                X = a * X + (b * G + c * G @ G) @ X
            else:
                G = X.T @ X
                X = a * X + X @ (b * G + c * G @ G)
        out[k] = v - lr * math.sqrt(max(1.0, R / C)) * X
    return out


def test_muon_treats_a_conv_weight_as_out_by_patch(gpu):
    from trainer.learner import LearnerConfig, Muon
    spec = PolicySpec(obs_size=36 * 36 * 1, hidden=16, layers=2, act_sizes=(4,), picture=(36, 36, 1))
    rng = np.random.default_rng(3)
    w0 = init_weights(spec, seed=1)
    gflat = flatten(spec, {t.name: rng.standard_normal(t.shape).astype(np.float32) * 0.01 for t in spec.tensors})
    cfg = LearnerConfig()
    weights, grads = gpu.array(w0, "weights"), gpu.array(gflat, "grads")
    muon = Muon(gpu, spec, cfg)
    muon.reset_momentum()
    muon.set_lr(0.015)
    scalars = gpu.buffer(16, "scalars")
    plan = gpu.plan("muon picture")
    muon.add(plan, weights.range(), grads.range(), scalars.range())
    gpu.run(plan)
    got, w = unflatten(spec, gpu.read(weights)), unflatten(spec, w0)
    want = _muon_ref(w, unflatten(spec, gflat), 0.015, cfg)
    for t in spec.tensors:
        assert_close(f"muon {t.name} {t.shape} update", got[t.name] - w[t.name], want[t.name] - w[t.name], "muon_step")
    # conv 0 is [32, 64]: wide, so no √(R/C) scale; its update is orthogonal-ish with singular values near 1
    X = (got["encoder.convs.0"] - w["encoder.convs.0"]) / -0.015
    s = np.linalg.svd(X, compute_uv=False)
    assert 0.5 < s.min() and s.max() < 1.5


# ------------------------------------------------------------------------------------------ GPU goldens

@pytest.mark.parametrize("name", gr.cases("policy_picture"))
def test_policy_picture_forward_backward_golden(gpu, name):
    """Forward output and every weight gradient (convs, encoder.linear's two column blocks, scans, decoder)."""
    for check in gr.policy_picture_case(gpu, name):
        assert_close(*check)


@pytest.mark.parametrize("name", gr.cases("learner_picture"))
def test_learner_picture_updates_golden(gpu, name):
    """Whole minibatch updates of a picture policy, packed uint8 rows at the minibatch's row offset."""
    for check in gr.learner_case(gpu, name, family="learner_picture"):
        assert_close(*check)


# ------------------------------------------------------------------------------------------ rollout ≡ training

def _rollout_vs_scan(gpu, spec, make_obs, N=7, T=5, seed=3):
    from trainer.policy import Activations, Policy, Rollout, RolloutStep, policy_forward
    rng = np.random.default_rng(seed)
    policy = Policy(gpu, spec, seed=seed)
    ro = Rollout(gpu, spec, N, T)
    step = RolloutStep(policy, ro, seed=11)
    for t in range(2):  # a nonzero starting state
        step(t + 1, t, make_obs(rng, N), np.zeros(N), np.zeros(N))
    terms = (rng.random((T, N)) < 0.2).astype(np.float32)
    for t in range(T):
        step(t, 100 + t, make_obs(rng, N), rng.standard_normal(N), terms[t])
    act = Activations(gpu, spec, N, T)
    h0 = [ro.state_of(ro.initial_state, l) for l in range(spec.layers)]
    plan = gpu.plan("scan")
    policy_forward(plan, policy, act, ro.obs_rows(0, N), ro.obs_stride, ro.column("terminal", 0, N), h0,
                   terminals_stride=TR_WIDTH)
    gpu.run(plan)
    out = gpu.read(act.out).reshape(N * T, act.out_stride)
    return policy, ro, out


def test_picture_rollout_steps_equal_training_scan(gpu):
    """N agents one step at a time (RolloutStep: conv on the step's packed rows) and the training layout
    (policy_forward over segments × T of the rollout's rows) give the same values and log-probs."""
    spec = PolicySpec(obs_size=4 + 40 * 36 * 3, hidden=16, layers=2, act_sizes=(3, 2), picture=(40, 36, 3),
                      obs_dtype="uint8")
    policy, ro, out = _rollout_vs_scan(gpu, spec, lambda rng, N: rng.integers(0, 256, (N, spec.obs_size), np.uint8))
    N, T = ro.N, ro.T
    assert_close("picture rollout values vs scan", ro.read_column("value"), out[:, spec.A], "rollout_scan")
    a = gpu.read(ro.actions).reshape(N * T, spec.K).astype(int)
    lp = _log_softmax(out[:, :3])[np.arange(N * T), a[:, 0]] + _log_softmax(out[:, 3:5])[np.arange(N * T), a[:, 1]]
    assert_close("picture rollout logprobs vs scan", ro.read_column("logprob"), lp, "rollout_scan")


def test_float_picture_rollout_steps_equal_training_scan(gpu):
    spec = PolicySpec(obs_size=36 * 36 * 2, hidden=8, layers=1, act_sizes=(4,), picture=(36, 36, 2))
    policy, ro, out = _rollout_vs_scan(gpu, spec, lambda rng, N: rng.random((N, spec.obs_size), np.float32), N=3, T=4)
    assert_close("float picture rollout values vs scan", ro.read_column("value"), out[:, spec.A], "rollout_scan")


def test_uint8_observations_without_picture_are_raw_floats(gpu):
    """A uint8 env without a picture: packed rows, unpacked to their raw values (PufferLib feeds a uint8
    env's 0–255 unscaled) before the encoder; the same policy fed the values as float32 gives the same
    outputs."""
    from trainer.policy import Policy, Rollout, RolloutStep
    u8 = PolicySpec(obs_size=13, hidden=16, layers=2, act_sizes=(3,), obs_dtype="uint8")
    f32 = PolicySpec(obs_size=13, hidden=16, layers=2, act_sizes=(3,))
    w = init_weights(f32, seed=2)
    rng = np.random.default_rng(4)
    N, T = 9, 3
    obs = [rng.integers(0, 256, (N, 13), dtype=np.uint8) for _ in range(T)]
    values = []
    for spec, conv in ((u8, lambda o: o), (f32, lambda o: o.astype(np.float32))):
        policy = Policy(gpu, spec, w)
        ro = Rollout(gpu, spec, N, T)
        step = RolloutStep(policy, ro, seed=1)
        for t in range(T):
            step(t, t, conv(obs[t]), np.zeros(N), np.zeros(N))
        values.append(ro.read_column("value"))
        assert ro.obs_stride == (4 if spec.packed else 16)
    assert_close("uint8 vs float values", values[0], values[1], "rollout_scan")
    _, ro, out = _rollout_vs_scan(gpu, u8, lambda rng, N: rng.integers(0, 256, (N, 13), np.uint8))
    assert_close("uint8 rollout values vs scan", ro.read_column("value"), out[:, u8.A], "rollout_scan")


# ------------------------------------------------------------------------------------------ blank frames

def test_blank_picture_trains_without_nan(gpu):
    """All-zero frames: every conv output is 0 (ReLU at exactly 0, no gradient into the convs), Muon's
    normalisation of a zero update must not divide by zero; a few updates stay finite."""
    from trainer.learner import Learner, LearnerConfig
    from trainer.policy import Policy, Rollout, RolloutStep
    spec = PolicySpec(obs_size=36 * 36 * 3, hidden=16, layers=2, act_sizes=(4,), picture=(36, 36, 3),
                      obs_dtype="uint8")
    N, T = 8, 4
    policy = Policy(gpu, spec, seed=1)
    ro = Rollout(gpu, spec, N, T)
    step = RolloutStep(policy, ro, seed=2)
    learner = Learner(policy, ro, LearnerConfig(minibatch_size=2 * T))
    rng = np.random.default_rng(0)
    blank = np.zeros((N, spec.obs_size), np.uint8)
    w0 = policy.read_weights()
    for epoch in range(3):
        for t in range(T):
            step(t, epoch * T + t, blank, rng.uniform(-1, 1, N), (rng.random(N) < 0.1).astype(np.float32))
        res = learner.run(0.015)
        assert all(np.isfinite(v) for k, v in res.items() if k != "per_minibatch"), res
    w = policy.read_weights()
    assert np.all(np.isfinite(w))
    conv0 = spec.view("encoder.convs.0")
    assert np.array_equal(w[conv0.offset:conv0.offset + conv0.size], w0[conv0.offset:conv0.offset + conv0.size])
    assert not np.array_equal(w, w0)  # the decoder and MinGRU layers still learn


# ------------------------------------------------------------------------------------------ dispatch shapes

def test_picture_policy_dispatch_shapes_under_the_gpu_rule(gpu):
    """The rollout step of 256 agents and a 2048-frame minibatch of a 64×64×3 uint8 policy, with the
    static GPU choice: every heavy dispatch (convs, unpacking, the two encoder.linear products and
    the rest) keeps >= 16K invocations in flight and <= 1K serial iterations."""
    sys.path.insert(0, "tools")
    from dispatch_report import default_plans, dispatch_rows
    spec = PolicySpec(obs_size=64 * 64 * 3, hidden=128, layers=4, act_sizes=(3, 3), picture=(64, 64, 3),
                      obs_dtype="uint8")
    rows = []
    for label, plan in default_plans(gpu, True, agents=256, horizon=16, minibatch=2048, spec=spec):
        rows += dispatch_rows(label, plan)
    assert sum(r["heavy"] for r in rows) > 100
    flagged = [r for r in rows if r["heavy"] and r["flags"]]
    assert not flagged, flagged


def test_eval_takes_the_picture_size_from_the_checkpoint(gpu, tmp_path, capsys, monkeypatch):
    """A run trained with --env.picture_* flags evaluates without repeating them."""
    monkeypatch.setenv("PUFFGPU_TUNE", "0")
    from trainer.eval import main as eval_main
    from trainer.policy import Policy
    env = envs.make("pixel_platformer_small", 1, config={"picture_height": 40, "picture_width": 44})
    spec = PolicySpec.for_env(env, 16, 1)
    env.close()
    assert spec.picture == (40, 44, 1)
    ckpt.save(tmp_path / "pixel_platformer_small" / "run" / f"{96:016d}.bin", Policy(gpu, spec, seed=1).read_weights(),
              spec, "pixel_platformer_small", 96)
    assert eval_main(["--env", "pixel_platformer_small", "--headless", "--episodes", "4", "--agents", "4",
                      "--base.checkpoint_dir", str(tmp_path), "--env.max_ticks", "60"]) == 0
    out = capsys.readouterr().out
    assert "trained on 40x44x1 pictures" in out and "over 4 episodes" in out
