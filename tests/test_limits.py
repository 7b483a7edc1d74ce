"""WebGPU's default limits: every kernel fits them, PUFFGPU_LIMITS=webgpu asks for exactly them, and
work that grows with the config (the rollout's observations) is split to fit the device."""
import re

import numpy as np
import pytest

from trainer.gpu import SHADER_DIR, WEBGPU_LIMITS, GPUError, ShaderFile, requested_limits
from trainer.kernels import TR_WIDTH, TRANSITION, pack_transitions
from trainer.kernels.catalog import entry_points
from trainer.learner import Learner, LearnerConfig
from trainer.policy import Policy, Rollout, RolloutStep
from trainer.spec import PolicySpec, pack_obs


def test_every_kernel_fits_webgpus_default_limits():
    entries = entry_points()
    assert len(entries) >= 40, len(entries)
    over = []
    for file, entry, constants in entries:
        needs = ShaderFile.load(file).needs(entry, constants)
        over += [f"{file}:{entry} {k} {v} > {WEBGPU_LIMITS[k]}" for k, v in needs.items() if v > WEBGPU_LIMITS[k]]
    assert not over, over
    ppo = ShaderFile.load("ppo.wgsl").needs("ppo_loss", {})
    assert ppo["max-storage-buffers-per-shader-stage"] == 8 and ppo["max-compute-invocations-per-workgroup"] == 64
    assert ShaderFile.load("matmul.wgsl").needs("matmul_forward_wgmem", {})["max-compute-workgroup-storage-size"] == 8192


def test_limits_mode(monkeypatch):
    adapter = {k: (1 if k.startswith("min-") else 1 << 31) for k in WEBGPU_LIMITS}
    monkeypatch.setenv("PUFFGPU_LIMITS", "webgpu")
    assert requested_limits(adapter) == WEBGPU_LIMITS
    poor = dict(adapter, **{"max-storage-buffers-per-shader-stage": 4})
    with pytest.raises(GPUError, match="max-storage-buffers-per-shader-stage 4 \\(WebGPU guarantees 8\\)"):
        requested_limits(poor)
    monkeypatch.setenv("PUFFGPU_LIMITS", "tiny")
    with pytest.raises(GPUError, match="PUFFGPU_LIMITS='tiny': use 'webgpu'"):
        requested_limits(adapter)
    monkeypatch.delenv("PUFFGPU_LIMITS")
    assert requested_limits(adapter)["max-storage-buffers-per-shader-stage"] == 1 << 31


def test_transition_columns_agree_between_wgsl_and_python():
    src = (SHADER_DIR / "transitions.wgsl").read_text(encoding="utf-8")
    consts = {m.group(1).lower(): int(m.group(2)) for m in re.finditer(r"const TR_(\w+): u32 = (\d+)u;", src)}
    assert consts.pop("width") == TR_WIDTH == len(TRANSITION)
    assert consts == {name: i for i, name in enumerate(TRANSITION)}


def _paged_rollout(gpu, monkeypatch, spec, N, T, R, rows_per_page):
    per_row = 4 * T * Rollout.stride_for(spec)
    monkeypatch.setitem(gpu.limits, "max-buffer-size", per_row * rows_per_page + per_row // 2)
    ro = Rollout(gpu, spec, N, T, row_multiple=R)
    monkeypatch.undo()
    return ro


def test_observations_past_the_largest_buffer_live_in_pages(gpu, monkeypatch):
    """A rollout whose observations exceed the device's largest buffer is stored in pages of whole
    minibatches: the rollout step writes every row where it belongs, and the learner's updates are
    bit-identical to those over one buffer."""
    spec = PolicySpec(obs_size=200, hidden=8, layers=2, act_sizes=(3, 2))  # obs: the largest buffer
    N, T, R = 12, 4, 2
    one = Rollout(gpu, spec, N, T, row_multiple=R)
    paged = _paged_rollout(gpu, monkeypatch, spec, N, T, R, rows_per_page=5)  # 5 rows fit: pages of 4
    assert (one.page_rows, len(one.obs_pages)) == (N, 1)
    assert (paged.page_rows, len(paged.obs_pages)) == (4, 3)
    assert paged.obs_pieces(2, 8) == [(2, 2), (4, 4), (8, 2)]
    with pytest.raises(GPUError, match=r"rows \[2, 6\) cross an observation page of 4 rows"):
        paged.obs_rows(2, 4)

    rng = np.random.default_rng(1)
    obs = [rng.standard_normal((N, 200)).astype(np.float32) for _ in range(T)]
    rewards = rng.uniform(-1, 1, N * T)
    results = []
    for ro in (one, paged):
        policy = Policy(gpu, spec, seed=2)
        step = RolloutStep(policy, ro, seed=3)
        for t in range(T):
            step(t, t, obs[t], np.zeros(N), (np.arange(N) == t).astype(np.float32))
        stored = ro.read_obs().reshape(N, T, ro.obs_stride)
        for t in range(T):
            assert np.array_equal(stored[:, t], pack_obs(obs[t], spec, ro.obs_stride).view(np.uint32))
        ro.write_column("reward", rewards)
        learner = Learner(policy, ro, LearnerConfig(minibatch_size=R * T))
        stats = [learner.run(0.01)["per_minibatch"].tobytes() for _ in range(2)]
        results.append((policy.read_weights().tobytes(), stats))
    assert results[0] == results[1]


def test_a_minibatch_larger_than_the_largest_buffer_is_a_clear_error(gpu, monkeypatch):
    spec = PolicySpec(obs_size=200, hidden=8, layers=1, act_sizes=(3,))
    with pytest.raises(GPUError, match=r"a minibatch of 4 agent rows × 4 steps .* choose a minibatch_size of at most 8"):
        _paged_rollout(gpu, monkeypatch, spec, 12, 4, 4, rows_per_page=2)


def test_pack_transitions_names_its_columns():
    rows = pack_transitions(3, reward=[1, 2, 3])
    assert rows.shape == (3, TR_WIDTH) and np.array_equal(rows[:, 2], [1, 2, 3]) and np.isnan(rows[:, 0]).all()
    with pytest.raises(ValueError, match="unknown transition columns \\['rewards'\\]"):
        pack_transitions(3, rewards=[1, 2, 3])


def test_a_minibatch_of_pictures_needs_one_buffer_per_conv_output_not_one_binding(gpu, monkeypatch):
    """The convolutions bind their outputs a chunk of frames at a time: a minibatch whose first conv
    output is larger than one binding builds; one larger than a buffer is a clear error."""
    from trainer.policy import EncoderScratch
    spec = PolicySpec(obs_size=36 * 36, hidden=8, layers=1, act_sizes=(3,), picture=(36, 36, 1), obs_dtype="uint8")
    conv0 = 4 * 8 * 8 * 32  # bytes of conv 0's output per 36x36 frame (8x8x32)
    monkeypatch.setitem(gpu.limits, "max-storage-buffer-binding-size", 100 * conv0)
    monkeypatch.setitem(gpu.limits, "max-buffer-size", 300 * conv0)
    scratch = EncoderScratch(gpu, spec, 200, grads=True, label="t")
    assert scratch.chunk < 200 and scratch.ys[0].nbytes == 200 * conv0
    with pytest.raises(GPUError, match=r"conv 0's output .* more than one buffer holds .*at most 300 frames"):
        EncoderScratch(gpu, spec, 400, grads=True, label="t")
