"""Checkpoints: PufferLib size and layout, bit-exact round trip through the GPU, clear refusals, atomic writes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from trainer import checkpoint as ckpt
from trainer.policy import Policy
from trainer.spec import PolicySpec, unflatten

SPEC = PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))


def test_roundtrip_bit_exact_and_pufferlib_size(gpu, tmp_path):
    policy = Policy(gpu, SPEC, seed=73)
    w = policy.read_weights()
    path = ckpt.save(ckpt.checkpoint_path(tmp_path, "platformer", "run1", 65536), w, SPEC, "platformer", 65536,
                     config={"train": {"learning_rate": 0.015}})
    assert path.name == "0000000000065536.bin"
    assert path.stat().st_size == 1_001_472
    loaded, meta = ckpt.load(path, SPEC, env="platformer")
    assert loaded.tobytes() == w.tobytes()
    policy2 = Policy(gpu, SPEC, loaded)
    assert policy2.read_weights().tobytes() == w.tobytes()
    assert meta["global_step"] == 65536 and meta["hidden_size"] == 128 and meta["act_sizes"] == [3, 3]
    # raw little-endian float32, encoder first: PufferLib reads it without the sidecar
    raw = np.fromfile(path, dtype="<f4")
    assert np.array_equal(raw[:413], w[:413])


def test_truncated_file_refused_and_untouched(tmp_path):
    path = ckpt.save(tmp_path / "a.bin", np.zeros(SPEC.num_floats, np.float32), SPEC, "platformer", 1)
    data = path.read_bytes()[:-100]
    path.write_bytes(data)
    with pytest.raises(ckpt.CheckpointError, match=r"1,001,372 bytes \(truncated: its sidecar names this architecture\)"
                                                  r".*needs exactly 1,001,472"):
        ckpt.load(path, SPEC)
    assert path.read_bytes() == data


def test_wrong_architecture_refused(tmp_path):
    path = ckpt.save(tmp_path / "a.bin", np.zeros(SPEC.num_floats, np.float32), SPEC, "platformer", 1)
    other = PolicySpec(obs_size=413, hidden=64, layers=4, act_sizes=(3, 3))
    with pytest.raises(ckpt.CheckpointError, match="'hidden_size': 128.*needs.*'hidden_size': 64"):
        ckpt.load(path, other)
    with pytest.raises(ckpt.CheckpointError, match="trained on env 'platformer', not 'memory'"):
        ckpt.load(path, SPEC, env="memory")


def test_corrupt_file_refused(tmp_path):
    path = ckpt.save(tmp_path / "a.bin", np.zeros(SPEC.num_floats, np.float32), SPEC, "platformer", 1)
    b = bytearray(path.read_bytes())
    b[10] ^= 1
    path.write_bytes(bytes(b))
    with pytest.raises(ckpt.CheckpointError, match="sha256"):
        ckpt.load(path, SPEC)


def test_pufferlib_file_without_sidecar_loads_by_size(tmp_path):
    w = np.arange(SPEC.num_floats, dtype=np.float32)
    path = tmp_path / "0000000000000001.bin"
    w.astype("<f4").tofile(path)
    loaded, meta = ckpt.load(path, SPEC)
    assert np.array_equal(loaded, w) and meta == {}
    with pytest.raises(ckpt.CheckpointError, match=r"is 1,001,472 bytes but the run's policy \(obs size 412, heads "
                                                  r"\[3, 3\], hidden_size 128, num_layers 4\) takes 1,000,960: it was saved "
                                                  r"for another policy \(no hidden_size and num_layers fit"):
        ckpt.load(path, PolicySpec(obs_size=412, hidden=128, layers=4, act_sizes=(3, 3)))


def test_failed_write_keeps_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "a.bin"
    old = np.ones(SPEC.num_floats, np.float32)
    ckpt.save(path, old, SPEC, "platformer", 1)

    calls = []

    def boom(fd):  # the weights' and the momentum's temp files are written; the sidecar's fails
        calls.append(fd)
        if len(calls) == 3:
            raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(ckpt.CheckpointWriteError, match=r"cannot write the checkpoint .*a\.bin \(disk full\)"):
        ckpt.save(path, np.zeros(SPEC.num_floats, np.float32), SPEC, "platformer", 2, momentum=old)
    monkeypatch.undo()
    loaded, meta = ckpt.load(path, SPEC)
    assert np.array_equal(loaded, old) and meta["global_step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.json"]  # no temp files left


def test_latest_is_highest_step_with_sidecar(tmp_path):
    z = np.zeros(SPEC.num_floats, np.float32)
    for run, step in (("r1", 10), ("r2", 300), ("r1", 20)):
        ckpt.save(ckpt.checkpoint_path(tmp_path, "platformer", run, step), z, SPEC, "platformer", step)
    (tmp_path / "platformer" / "r1" / f"{999:016d}.bin").write_bytes(b"partial")  # no sidecar: incomplete
    assert ckpt.latest(tmp_path, "platformer").name == f"{300:016d}.bin"
    with pytest.raises(ckpt.CheckpointError, match="no checkpoints"):
        ckpt.latest(tmp_path, "memory")


def test_momentum_roundtrip(tmp_path, monkeypatch):
    w = np.random.default_rng(0).standard_normal(SPEC.num_floats).astype(np.float32)
    m = -w
    written = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (written.append(Path(b).name), real_replace(a, b))[1])
    path = ckpt.save(tmp_path / "a.bin", w, SPEC, "platformer", 5, momentum=m, state={"epoch": 3})
    assert written == ["a.bin", "a.momentum", "a.json"]  # renamed into place, the sidecar last: complete once it exists
    assert [p.name for p in tmp_path.glob("*.bin")] == ["a.bin"]  # no *.bin glob picks the momentum
    w2, m2, meta = ckpt.load(path, SPEC, with_momentum=True)
    assert np.array_equal(w2, w) and np.array_equal(m2, m) and meta["trainer_state"] == {"epoch": 3}


def test_momentum_of_older_checkpoints_still_loads(tmp_path):
    """Older checkpoints name the momentum <step>.momentum.bin (their sidecar says so)."""
    w = np.random.default_rng(2).standard_normal(SPEC.num_floats).astype(np.float32)
    path = ckpt.save(ckpt.checkpoint_path(tmp_path, "platformer", "old", 7), w, SPEC, "platformer", 7,
                     momentum=2 * w, state={"epoch": 1})
    side = ckpt.sidecar_path(path)
    meta = json.loads(side.read_text())
    old = path.with_suffix(".momentum.bin")
    ckpt.momentum_path(path).rename(old)
    meta["momentum"]["file"] = old.name
    side.write_text(json.dumps(meta))
    _, m, _ = ckpt.load(path, SPEC, with_momentum=True)
    assert np.array_equal(m, 2 * w)
    assert ckpt.latest(tmp_path, "platformer") == path  # the old momentum file is not a checkpoint


def test_export_safetensors(tmp_path):
    w = np.random.default_rng(1).standard_normal(SPEC.num_floats).astype(np.float32)
    path = ckpt.save(tmp_path / "a.bin", w, SPEC, "platformer", 5)
    subprocess.run([sys.executable, "tools/export_safetensors.py", str(path)], check=True, capture_output=True)
    t = load_file(str(tmp_path / "a.safetensors"))
    ref = unflatten(SPEC, w)
    assert sorted(t) == sorted(f"{k}.weight" for k in ref)
    for k, v in ref.items():
        assert np.array_equal(t[f"{k}.weight"], v)
