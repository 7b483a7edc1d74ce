"""The envs' CPU threads: OpenMP's where the compiler has it, else the vecenv's own pool
(envs/c/threadpool.h; PUFFGPU_OPENMP=0 forces it on any OS, the path a Mac without libomp takes).
Same seed -> the same bytes either way. The pool under ThreadSanitizer is
tests/test_goexplore.py::test_threadsanitizer_stress."""
import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import envs
from envs.build import toolchain


def _has_openmp(monkeypatch):
    monkeypatch.delenv("PUFFGPU_OPENMP", raising=False)
    return bool(toolchain.openmp_flags(toolchain.compiler()))


def _rollout(monkeypatch, openmp, name="platformer", agents=256, threads=2, buffers=1, steps=120):
    """Digest of every step's observations, rewards and terminals under fixed random actions."""
    monkeypatch.setenv("PUFFGPU_OPENMP", "1" if openmp else "0")
    env = envs.make(name, agents, seed=11, num_threads=threads, num_buffers=buffers)
    kind = env.threads_kind
    rng = np.random.default_rng(5)
    digest = hashlib.sha256()
    env.reset()
    with ThreadPoolExecutor(2) as pool:
        for _ in range(steps):
            actions = rng.integers(0, env.act_sizes, size=env.actions.shape).astype(np.float32)
            if buffers == 1:
                env.actions[:] = actions
                env.step()
            else:  # both buffers at once from two host threads, as the trainer's env buffers
                jobs = [pool.submit(env.step_buffer, b, actions[slice(*env.buffer_rows(b))])
                        for b in range(buffers)]
                for job in jobs:
                    job.result()
            for array in (env.observations, env.rewards, env.terminals):
                digest.update(array.tobytes())
    env.close()
    return digest.hexdigest(), kind


def test_pool_reports_itself_and_steps_as_openmp_does(monkeypatch):
    pool, kind = _rollout(monkeypatch, openmp=False)
    assert kind in ("pthreads", "win32")
    assert pool == _rollout(monkeypatch, openmp=False, threads=1)[0]
    if not _has_openmp(monkeypatch):
        pytest.skip("this compiler has no OpenMP to compare with")
    omp, kind = _rollout(monkeypatch, openmp=True)
    assert kind == "openmp"
    assert pool == omp


def test_pool_with_two_buffers_stepped_at_once(monkeypatch):
    together, _ = _rollout(monkeypatch, openmp=False, buffers=2, agents=128)
    assert together == _rollout(monkeypatch, openmp=False, buffers=1, agents=128, threads=1)[0]


def test_openmp_probe_runs_once_per_compiler_and_is_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("PUFFGPU_ENV_CACHE", str(tmp_path))
    monkeypatch.delenv("PUFFGPU_OPENMP", raising=False)
    cc = toolchain.compiler()
    first = toolchain.openmp_flags(cc)
    assert list(tmp_path.glob("_openmp_*.json"))

    def no_compiler(*a, **k):
        raise AssertionError("the OpenMP probe ran again")
    monkeypatch.setattr(toolchain.subprocess, "run", no_compiler)
    toolchain._versions[tuple(cc)] = toolchain._versions.get(tuple(cc), "")
    assert toolchain.openmp_flags(cc) == first
    monkeypatch.setenv("PUFFGPU_OPENMP", "0")
    assert toolchain.openmp_flags(cc) == []


def test_homebrew_libomp_is_a_candidate_on_macos(monkeypatch, tmp_path):
    omp = tmp_path / "opt" / "libomp"
    (omp / "include").mkdir(parents=True)
    (omp / "include" / "omp.h").write_text("", encoding="utf-8")
    monkeypatch.setattr(toolchain.sys, "platform", "darwin")
    monkeypatch.setenv("HOMEBREW_PREFIX", str(tmp_path))
    assert list(toolchain._openmp_candidates()) == [
        ["-fopenmp"],
        ["-Xpreprocessor", "-fopenmp", f"-I{omp / 'include'}", f"-L{omp / 'lib'}", "-lomp"]]


@pytest.mark.slow
def test_same_seed_same_checkpoint_with_the_pool_as_with_openmp(monkeypatch, tmp_path):
    from trainer import config
    from trainer.run import train
    monkeypatch.setenv("PUFFGPU_TUNE", "0")  # no timing: the same kernels in both runs
    if not _has_openmp(monkeypatch):
        pytest.skip("this compiler has no OpenMP to compare with")
    for openmp in ("1", "0"):
        monkeypatch.setenv("PUFFGPU_OPENMP", openmp)
        flags = {"vec.total_agents": "64", "vec.num_threads": "2", "train.horizon": "16",
                 "train.minibatch_size": "512", "policy.hidden_size": "32", "policy.num_layers": "1",
                 "train.total_timesteps": str(64 * 16 * 3), "base.checkpoint_dir": str(tmp_path / openmp),
                 "base.log_dir": str(tmp_path / f"logs{openmp}")}
        cfg, _ = config.load("platformer", flags)
        train("platformer", cfg, live=False, run_id="same")
    bins = {k: sorted((tmp_path / k).rglob("*.bin")) for k in ("1", "0")}
    assert bins["1"] and [p.name for p in bins["1"]] == [p.name for p in bins["0"]]
    for a, b in zip(bins["1"], bins["0"]):
        assert a.read_bytes() == b.read_bytes(), a.name
