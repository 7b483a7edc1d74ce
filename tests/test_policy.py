"""The policy on the GPU: PufferLib layout, init, full forward/backward vs torch, rollout == scan, sampling."""
import math

import numpy as np
import pytest

import golden.runs as gr
from golden.check import assert_close, tolerance
from trainer.kernels import TR_WIDTH
from trainer.policy import Activations, Policy, Rollout, RolloutStep, policy_forward
from trainer.spec import PolicySpec, flatten, init_weights, unflatten

PLATFORMER = PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))


def test_layout_matches_pufferlib_checkpoint_size():
    assert PLATFORMER.nbytes == 1_001_472
    names = [t.name for t in PLATFORMER.tensors]
    assert names == ["encoder", "decoder", "mingru.0", "mingru.1", "mingru.2", "mingru.3"]
    assert [t.offset % 8 for t in PLATFORMER.tensors] == [0] * 6
    assert PLATFORMER.decoder.shape == (7, 128) and PLATFORMER.mingru(3).shape == (384, 128)


def test_layout_pads_each_tensor_to_8_floats():
    spec = PolicySpec(obs_size=3, hidden=8, layers=1, act_sizes=(2,))  # encoder 24, decoder 24: aligned
    assert [t.offset for t in spec.tensors] == [0, 24, 48]
    odd = PolicySpec(obs_size=413, hidden=8, layers=1, act_sizes=(2, 2))  # decoder 5·8 = 40, encoder 3304
    assert all(t.offset % 8 == 0 for t in odd.tensors)
    with pytest.raises(ValueError, match="multiple of 8"):
        PolicySpec(obs_size=4, hidden=12, layers=1, act_sizes=(2,))


def test_init_bounds_and_seed():
    flat = init_weights(PLATFORMER, seed=73)
    w = unflatten(PLATFORMER, flat)
    for name, t in w.items():
        bound = (math.sqrt(2) if name == "encoder" else 1.0) / math.sqrt(t.shape[1])
        assert np.abs(t).max() <= bound
        # uniform(−b, b) has std σ = b/√3; a sample std of n draws has standard error σ·√(0.2/n) (kurtosis 9/5)
        sigma = bound / math.sqrt(3)
        assert abs(t.std() - sigma) < tolerance("sampling") * sigma * math.sqrt(0.2 / t.size), name
    assert np.array_equal(flat, init_weights(PLATFORMER, seed=73))
    assert not np.array_equal(flat, init_weights(PLATFORMER, seed=74))
    assert np.array_equal(flatten(PLATFORMER, w), flat)


# the platformer's real widths take seconds on lavapipe: slow; the small case runs in `-m "not slow"`
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "platformer" else n
                                  for n in gr.cases("policy")])
def test_policy_forward_backward_golden(gpu, name):
    """Forward output, every weight gradient and d obs, with resets mid-horizon and a nonzero h0."""
    for check in gr.policy_case(gpu, name):
        assert_close(*check)


def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def test_rollout_steps_equal_training_scan(gpu):
    """T rollout steps (carried state, resets) and one training scan over the stored data agree."""
    spec = PolicySpec(obs_size=13, hidden=16, layers=3, act_sizes=(3, 2))
    N, T = 37, 9
    rng = np.random.default_rng(5)
    policy = Policy(gpu, spec, seed=3)
    ro = Rollout(gpu, spec, N, T)
    step = RolloutStep(policy, ro, seed=11)
    # warm the recurrent state up so the rollout starts from a nonzero state
    for t in range(3):
        step(t + 1, t, rng.standard_normal((N, 13)), np.zeros(N), np.zeros(N))
    terms = (rng.random((T, N)) < 0.2).astype(np.float32)
    for t in range(T):
        step(t, 100 + t, rng.standard_normal((N, 13)).astype(np.float32), rng.standard_normal(N), terms[t])
    act = Activations(gpu, spec, N, T)
    h0 = [ro.state_of(ro.initial_state, l) for l in range(spec.layers)]
    plan = gpu.plan("scan")
    policy_forward(plan, policy, act, ro.obs_rows(0, N), ro.obs_stride, ro.column("terminal", 0, N), h0,
                   terminals_stride=TR_WIDTH)
    gpu.run(plan)
    out = gpu.read(act.out).reshape(N * T, act.out_stride)
    values = ro.read_column("value")
    assert_close("rollout values vs scan", values, out[:, spec.A], "rollout_scan")
    actions = gpu.read(ro.actions).reshape(N * T, spec.K).astype(int)
    lp = _log_softmax(out[:, :3])[np.arange(N * T), actions[:, 0]] + _log_softmax(out[:, 3:5])[np.arange(N * T), actions[:, 1]]
    assert_close("rollout logprobs vs log-softmax of the scan", ro.read_column("logprob"), lp, "rollout_scan")
    assert np.array_equal(ro.read_column("terminal").reshape(N, T), terms.T)


def test_sampling_frequencies_logprob_and_determinism(gpu):
    """Inverse-CDF sampling matches softmax frequencies; logprob is the summed log-softmax; seeded."""
    spec = PolicySpec(obs_size=4, hidden=8, layers=1, act_sizes=(3, 4))
    N = 20000
    policy = Policy(gpu, spec, seed=0)
    # zero weights except the decoder, and a constant input → identical logits for every agent
    flat = np.zeros(spec.num_floats, np.float32)
    w = unflatten(spec, flat)
    w["encoder"][:, 0] = 1.0
    dec = np.zeros((spec.out, 8), np.float32)
    dec[:, 0] = [0.5, -1.0, 2.0, 0.0, 1.0, -2.0, 0.3, 0.7]
    w["decoder"] = dec
    policy.write_weights(flatten(spec, w))
    ro = Rollout(gpu, spec, N, 1)
    step = RolloutStep(policy, ro, seed=123)
    obs = np.zeros((N, 4), np.float32)
    obs[:, 0] = 1.0
    reset = np.ones(N)  # terminal every step: the state restarts from 0, so the logits repeat exactly
    a1 = step(0, 7, obs, np.zeros(N), reset)
    a2 = step(0, 7, obs, np.zeros(N), reset)
    a3 = step(0, 8, obs, np.zeros(N), reset)
    assert np.array_equal(a1, a2), "same seed and step must give the same actions"
    assert not np.array_equal(a1, a3)
    out = gpu.read(step.out).reshape(N, step.out_stride)[0]
    for h, (lo, hi) in enumerate(((0, 3), (3, 7))):
        p = np.exp(_log_softmax(out[lo:hi]))
        freq = np.bincount(a3[:, h].astype(int), minlength=hi - lo) / N
        tol = tolerance("sampling") * np.sqrt(p * (1 - p) / N) + tolerance("sampling_floor")
        assert np.all(np.abs(freq - p) < tol), (h, freq, p)
    lp = _log_softmax(out[0:3])[a3[:, 0].astype(int)] + _log_softmax(out[3:7])[a3[:, 1].astype(int)]
    assert_close("sampled logprobs", ro.read_column("logprob"), lp, "sample")
    assert_close("rollout values of identical agents", ro.read_column("value"), np.full(N, out[7]), "rollout_scan")
