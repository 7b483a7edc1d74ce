"""Plan recordings (trainer/gpu/record.py, PUFFGPU_RECORD_PLAN), their tolerances (tools/plan_export.py)
and their replay on Dawn, Chrome's WebGPU (tools/dawn_replay.mjs). The replay tests need Node.js and
npm's `webgpu` package under PUFFGPU_DAWN_DIR (or <puffgpu cache>/dawn; CI installs it) and skip
without them."""
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import golden.runs as gr
from golden.check import case
from trainer.gpu import GPU, record
from trainer.kernels import matmul
from trainer.kernels.conv import conv_relu_backward
from puffbase.cache import cache_root

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import plan_export  # noqa: E402

DAWN = Path(os.environ.get("PUFFGPU_DAWN_DIR") or cache_root() / "dawn")
needs_dawn = pytest.mark.skipif(
    shutil.which("node") is None or not (DAWN / "node_modules" / "webgpu" / "index.js").is_file(),
    reason=f"needs Node.js and npm's webgpu package in {DAWN} (npm install --prefix DIR webgpu@0.6.2; PUFFGPU_DAWN_DIR=DIR)")


def recording_gpu(tmp_path, monkeypatch, subgroups=False) -> GPU:
    """A second GPU on this adapter that records into tmp_path/rec, under WebGPU's default limits
    (without subgroups unless asked: SwiftShader takes seconds to compile the subgroup matmuls)."""
    monkeypatch.setenv("PUFFGPU_RECORD_PLAN", str(tmp_path / "rec"))
    monkeypatch.setenv("PUFFGPU_LIMITS", "webgpu")
    if not subgroups:
        monkeypatch.setenv("PUFFGPU_DISABLE_FEATURES", "subgroup")
    gpu = GPU(quiet=True)
    monkeypatch.delenv("PUFFGPU_RECORD_PLAN")
    return gpu


def finish(gpu, tmp_path, family="matmul") -> Path:
    """Close the GPU's recording and give its reads tolerances as `family`'s."""
    gpu.recorder.close()
    (path,) = (tmp_path / "rec").glob("*.plan")
    plan_export.annotate(path, family)
    return path


def test_a_recording_holds_the_run_in_order(tmp_path, monkeypatch):
    """Buffers with sizes, the module once, kernels with file, entry, constants and layout, uploads and
    Params bytes, a plan's bind groups as buffer ranges and grids, submissions and the bytes read back."""
    gpu = recording_gpu(tmp_path, monkeypatch)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((9, 12)).astype(np.float32), rng.standard_normal((5, 12)).astype(np.float32)
    xb, wb = gpu.array(x, "x"), gpu.array(w, "w")
    y = gpu.buffer(4 * 9 * 5, "y")
    plan = gpu.plan("record me")
    matmul.matmul_forward(plan, xb.range(), wb.range(), y.range(), 9, 5, 12, variant="ref")
    matmul.matmul_forward(plan, xb.range(), wb.range(), y.range(), 9, 5, 12, variant="tile4x4", accumulate=True)
    got = gpu.run(plan, read=y)
    gpu.zero(y)
    gpu.recorder.close()
    (path,) = (tmp_path / "rec").glob("*.plan")
    header, events, data = record.load(path)
    assert header["limits"]["min-storage-buffer-offset-alignment"] == 256 and "subgroup" not in header["features"]
    kinds = [e["e"] for e in events]
    assert kinds.count("module") == 1 and kinds.count("kernel") == 2 and kinds.count("plan") == 1
    buffers = {e["id"]: e for e in events if e["e"] == "buffer"}
    ids = {e["label"]: e["id"] for e in buffers.values()}
    assert buffers[ids["y"]]["size"] == 180 and buffers[ids["y"]]["usage"] == ["storage", "copy_src", "copy_dst"]
    assert buffers[ids["record me.params"]]["usage"] == ["uniform", "copy_dst"]
    module = next(e for e in events if e["e"] == "module")
    assert module["file"] == "matmul.wgsl" and "fn matmul_forward_ref" in module["code"]
    ref, tile = [e for e in events if e["e"] == "kernel"]
    assert (ref["entry"], ref["constants"]) == ("matmul_forward_ref", {"WG_X": 16, "WG_Y": 16})
    assert [2, "read_write"] in tile["bindings"] and [0, "read"] in tile["bindings"]
    writes = {e["buffer"]: e for e in events if e["e"] == "write"}
    assert np.array_equal(np.frombuffer(data(writes[ids["x"]]["data"]), np.float32), x.reshape(-1))
    (p,) = [e for e in events if e["e"] == "plan"]
    assert p["label"] == "record me" and [d["kernel"] for d in p["dispatches"]] == [ref["id"], tile["id"]]
    assert p["dispatches"][0]["grid"] == [1, 1, 1]
    bind = {b: (buf, off, size) for b, buf, off, size in p["dispatches"][1]["bind"]}
    assert bind[2] == (ids["y"], 0, 180) and bind[0] == (ids["x"], 0, 432) and bind[3][0] == ids["dummy (read-only)"]
    assert tile["constants"]["Z_IS_Y"] == 1 and [3, "read"] in tile["bindings"]  # accumulating: Z read through y
    assert [e for e in events if e["e"] == "write"]
    params = np.frombuffer(data(writes[ids["record me.params"]]["data"]), np.uint32)
    names = [f for f, _ in gpu.kernel("matmul.wgsl", "matmul_forward_tile", BR=1, VEC4=0).param_fields]
    assert params[names.index("M")] == 9 and params[256 // 4 + names.index("N")] == 5  # one 256-byte slot each
    submit = next(e for e in events if e["e"] == "submit")
    assert submit["plans"] == [p["id"]] and submit["read"]["label"] == "y" and submit["read"]["prev"] is None
    assert np.array_equal(np.frombuffer(data(submit["read"]["data"]), np.float32), got)
    assert {"e": "clear", "buffer": ids["y"], "offset": 0, "size": 180} in events


def test_every_read_needs_a_tolerance(tmp_path, monkeypatch):
    """A read of a buffer READS does not name for its run is an error naming it: the table stays complete."""
    gpu = recording_gpu(tmp_path, monkeypatch)
    gpu.read(gpu.array(np.ones(4, np.float32), "mystery"))
    with pytest.raises(SystemExit, match=r"no tolerance for reads of matmul: mystery"):
        finish(gpu, tmp_path)


@needs_dawn
def test_dawn_replays_a_recording_within_the_tolerances(tmp_path, monkeypatch):
    """A matmul golden (all three products, split-K) and two learner updates recorded here replay on Dawn
    with no validation error, every read within the golden tolerances (the weights also by their change)."""
    gpu = recording_gpu(tmp_path, monkeypatch)
    gpu.recorder.mark("a matmul golden", "matmul")
    gr.matmul_products(gpu, case("matmul", gr.cases("matmul")[0]), "tile4x4", (1, 3))
    gpu.recorder.mark("a learner golden", "learner")
    name = min(gr.cases("learner"), key=lambda n: case("learner", n)["obs"].size)
    checks = gr.learner_case(gpu, name)
    assert checks
    gpu.recorder.close()
    (path,) = (tmp_path / "rec").glob("*.plan")
    plan_export.annotate(path)
    rc = plan_export.replay(DAWN, [path], tmp_path / "result.json")
    (res,) = json.loads((tmp_path / "result.json").read_text())
    assert rc == 0 and res["errors"] == 0 and res["failed_reads"] == 0, res
    assert res["dispatches"] > 100 and res["worst"]["learner_step"]["reads"] >= 4 and res["worst"]["matmul"]["reads"] == 6


@needs_dawn
def test_dawn_rejects_what_the_runtime_check_refuses(tmp_path, monkeypatch):
    """With the runtime's check switched off, a dispatch whose writable bindings overlap is recorded and
    Dawn rejects it when the replay records it, naming the kernel; the runtime refuses the same dispatch."""
    import trainer.gpu.plan as plan_mod
    gpu = recording_gpu(tmp_path, monkeypatch)
    buf = gpu.array(np.linspace(-1, 1, 64).astype(np.float32), "activations")
    plan = gpu.plan("aliasing")
    with pytest.raises(Exception, match="overlap"):
        conv_relu_backward(plan, buf.f32(0, 16), buf.f32(8, 16), 16)
    monkeypatch.setattr(plan_mod, "check_bindings", lambda *a: None)
    conv_relu_backward(plan, buf.f32(0, 16), buf.f32(8, 16), 16)
    gpu.run(plan)
    path = finish(gpu, tmp_path, "conv")
    rc = plan_export.replay(DAWN, [path], tmp_path / "result.json")
    (res,) = json.loads((tmp_path / "result.json").read_text())
    assert rc == 1 and res["rejected_dispatches"] == 1
    assert any("aliasing" in m and "conv_relu_backward" in m for m in res["messages"]), res["messages"]


@needs_dawn
def test_dawn_replay_fails_a_read_out_of_tolerance(tmp_path, monkeypatch):
    """A recorded read whose bytes do not match what Dawn computes fails, naming the buffer and the row."""
    gpu = recording_gpu(tmp_path, monkeypatch)
    x = gpu.array(np.ones((4, 4), np.float32), "x")
    y = gpu.buffer(64, "y")
    plan = gpu.plan("tampered")
    matmul.matmul_forward(plan, x.range(), x.range(), y.range(), 4, 4, 4, variant="ref")
    gpu.run(plan, read=y)  # 16 fours
    path = finish(gpu, tmp_path)
    _, events, _ = record.load(path)
    at = next(e for e in events if e["e"] == "submit" and e["read"])["read"]["data"][0]
    with open(path / "data.bin", "r+b") as f:  # the recording says y[0] = 4.001
        f.seek(at)
        f.write(np.float32(4.001).tobytes())
    rc = plan_export.replay(DAWN, [path], tmp_path / "result.json")
    (res,) = json.loads((tmp_path / "result.json").read_text())
    assert rc == 1 and res["failed_reads"] == 1 and res["errors"] == 0
    assert "read of y" in res["failures"][0] and "(matmul)" in res["failures"][0]
