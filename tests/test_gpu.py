"""GPU runtime: adapter choice and its errors, plan checks, buffers, readback."""
import numpy as np
import pytest

from golden.check import assert_close
from trainer import gpu as gpu_mod
from trainer.kernels import matmul
from trainer.gpu import GPUError


def test_no_adapter_error_names_the_fix(monkeypatch):
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: [])
    with pytest.raises(GPUError, match="apt-get install mesa-vulkan-drivers"):
        gpu_mod.choose_adapter(force="")


def test_forced_adapter_must_exist(gpu):
    with pytest.raises(GPUError, match=r"matches no adapter\. Available:"):
        gpu_mod.choose_adapter("no-such-gpu-anywhere")
    assert gpu_mod.choose_adapter(gpu.backend.lower()).info["device"] == gpu.info["device"]


def test_cpu_adapter_only_when_no_gpu(monkeypatch):
    class A:
        def __init__(self, kind, name):
            self.info = {"adapter_type": kind, "device": name, "backend_type": "Vulkan"}
    fake = [A("CPU", "llvmpipe"), A("IntegratedGPU", "igpu"), A("DiscreteGPU", "dgpu")]
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: fake)
    monkeypatch.delenv("PUFFGPU_ADAPTER", raising=False)
    assert gpu_mod.choose_adapter().info["device"] == "dgpu"
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: fake[:1])
    assert gpu_mod.choose_adapter().info["device"] == "llvmpipe"
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: fake)
    monkeypatch.setenv("PUFFGPU_ADAPTER", "cpu")
    assert gpu_mod.choose_adapter().info["device"] == "llvmpipe"


def test_opengl_backend_only_as_the_last_resort(monkeypatch):
    class A:
        def __init__(self, kind, name, backend):
            self.info = {"adapter_type": kind, "device": name, "backend_type": backend}
    gl, vk_cpu = A("IntegratedGPU", "mesa-gl", "OpenGL"), A("CPU", "llvmpipe", "Vulkan")
    monkeypatch.delenv("PUFFGPU_ADAPTER", raising=False)
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: [gl, vk_cpu])
    assert gpu_mod.choose_adapter().info["device"] == "llvmpipe"  # even a CPU Vulkan adapter beats GL
    assert [a.info["device"] for a in gpu_mod.usable_adapters()] == ["llvmpipe"]
    monkeypatch.setattr(gpu_mod.wgpu.gpu, "enumerate_adapters_sync", lambda: [gl])
    assert gpu_mod.choose_adapter().info["device"] == "mesa-gl"  # nothing else: taken, not refused
    assert gpu_mod.is_gl(gl.info) and "last resort" in gpu_mod.GL_NOTE


def test_upload_readback_zero_subranges(gpu):
    buf = gpu.array(np.arange(100, dtype=np.float32), "x")
    gpu.upload(buf.f32(10, 5), np.full(5, -1, np.float32))
    gpu.zero(buf.f32(90, 10))
    got = gpu.read(buf)
    want = np.arange(100, dtype=np.float32)
    want[10:15] = -1
    want[90:] = 0
    assert np.array_equal(got, want)
    assert np.array_equal(gpu.read(buf.f32(10, 3)), [-1, -1, -1])
    with pytest.raises(GPUError, match="does not fit"):
        gpu.upload(buf.f32(95, 5), np.zeros(10, np.float32))
    with pytest.raises(GPUError, match="outside buffer"):
        buf.f32(99, 2)


def test_plan_checks_name_the_kernel(gpu):
    k = gpu.kernel("matmul.wgsl", "matmul_forward_ref", WG_X=16, WG_Y=16)
    buf = gpu.buffer(1024, "b")
    plan = gpu.plan("checks")
    with pytest.raises(GPUError, match=r"matmul.wgsl:matmul_forward_ref.*grid \(0, 1, 1\)"):
        plan.add(k, (0, 1), a=buf.range(), b=buf.range(), y=buf.range(), z=buf.range())
    with pytest.raises(GPUError, match=r"unknown bindings \['q'\]"):
        plan.add(k, 1, a=buf.range(), b=buf.range(), y=buf.range(), z=buf.range(), q=buf.range())
    with pytest.raises(GPUError, match=r"uses bindings \['z'\] but none were given"):
        plan.add(k, 1, a=buf.range(), b=buf.range(), y=buf.range())
    with pytest.raises(GPUError, match=r"unknown params \['MM'\]"):
        plan.add(k, 1, {"MM": 3}, a=buf.range(), b=buf.range(), y=gpu.buffer(64, "y").range(), z=buf.range())
    with pytest.raises(GPUError, match="no entry point 'nope'"):
        gpu.kernel("matmul.wgsl", "nope")
    with pytest.raises(GPUError, match="shader file 'nope.wgsl' not found"):
        gpu.kernel("nope.wgsl", "main")


def test_plan_refuses_bindings_webgpu_forbids(gpu):
    """What Dawn refuses when a dispatch is recorded (wgpu-native does not check it) is refused when the
    plan is built, naming the kernel, both bindings and their byte windows: a writable binding that
    overlaps another binding of its buffer (at WebGPU's 256-byte binding alignment, whatever the
    device's), and a buffer bound read-only and writable in one dispatch."""
    relu_bw = gpu.kernel("conv.wgsl", "conv_relu_backward", WG=64)
    buf = gpu.buffer(4096, "activations")
    plan = gpu.plan("overlaps")
    params = dict(total=16, wide=0)
    with pytest.raises(GPUError, match=r"conv.wgsl:conv_relu_backward\[WG=64\] in plan 'overlaps': read_write binding "
                                       r"y \[0, 64\) and read_write binding dy \[0, 96\) of buffer 'activations' "
                                       r"overlap \(byte windows at WebGPU's 256-byte"):
        plan.add(relu_bw, 1, params, y=buf.f32(0, 16), dy=buf.f32(8, 16), y4=None, dy4=None)
    # disjoint ranges, but dy (bytes 200..264) is bound from byte 0 on a device with 256-byte alignment
    with pytest.raises(GPUError, match=r"read_write binding y \[0, 64\) and read_write binding dy \[0, 264\) .* overlap"):
        plan.add(relu_bw, 1, params, y=buf.f32(0, 16), dy=buf.f32(50, 16), y4=None, dy4=None)
    plan.add(relu_bw, 1, params, y=buf.f32(0, 16), dy=buf.f32(64, 16), y4=None, dy4=None)  # 256 B apart: allowed
    mm = gpu.kernel("matmul.wgsl", "matmul_forward_ref", WG_X=16, WG_Y=16)
    with pytest.raises(GPUError, match=r"matmul_forward_ref.*: read binding a \[0, 64\) and read_write binding y "
                                       r"\[256, 320\) of buffer 'activations': WebGPU binds a buffer in one dispatch "
                                       r"either read-only or writable"):
        plan.add(mm, 1, a=buf.f32(0, 16), b=gpu.buffer(64, "b").range(), y=buf.f32(64, 16), z=None)
    # the matmul launchers say so in their own words, before the plan sees it
    with pytest.raises(GPUError, match=r"operand a and the output y are both in buffer 'activations'"):
        matmul.matmul_forward(plan, buf.f32(0, 16), gpu.buffer(64, "w").range(), buf.f32(64, 16), 4, 4, 4)
    # every binding a dispatch leaves empty gets a dummy range; writable ones never share one
    ref = gpu.kernel("matmul.wgsl", "matmul_forward_tile", BR=1, VEC4=1)
    assert {b for b, kind, _ in ref.bindings if kind == "read_write"} == {2, 6}  # y, part
    starts = {gpu.dummy_range(b, "read_write")[1] for b in range(32)}
    assert len(starts) == 32 and all(s % 256 == 0 for s in starts)
    assert gpu.dummy_range(0, "read")[0] is gpu.dummy_range(5, "read")[0]  # read-only ones may share


def test_plan_replays_and_counts(gpu):
    """A plan is encoded afresh each run (command buffers are single-use), so it can run many times."""
    x = gpu.array(np.ones((4, 4), np.float32), "x")
    y = gpu.array(np.zeros((4, 4), np.float32), "y")
    plan = gpu.plan("replay")
    matmul.matmul_forward(plan, x.range(), x.range(), y.range(), 4, 4, 4, accumulate=True)
    assert len(plan) == 1
    for _ in range(3):
        gpu.run(plan)
    assert np.array_equal(gpu.read(y), np.full(16, 12.0, np.float32))
    assert plan.encode_seconds > 0


def test_native_and_public_encoding_agree(gpu, monkeypatch):
    """Plan.encode calls wgpu-native directly when it can; wgpu-py's public path must give the same."""
    rng = np.random.default_rng(0)
    x = gpu.array(rng.standard_normal((9, 12)).astype(np.float32), "x")
    w = gpu.array(rng.standard_normal((5, 12)).astype(np.float32), "w")
    results = []
    for public in ("0", "1"):
        monkeypatch.setenv("PUFFGPU_PUBLIC_ENCODE", public)
        y = gpu.buffer(4 * 9 * 5, "y")
        plan = gpu.plan("encode path")
        matmul.matmul_forward(plan, x.range(), w.range(), y.range(), 9, 5, 12)
        matmul.matmul_forward(plan, x.range(), w.range(), y.range(), 9, 5, 12, accumulate=True, variant="ref")
        gpu.run(plan)
        results.append(gpu.read(y))
    monkeypatch.delenv("PUFFGPU_PUBLIC_ENCODE")
    assert gpu_mod._native_pass_functions(object()) is None  # not a wgpu-native pass: public methods
    assert np.array_equal(results[0], results[1])
    want = 2 * gpu.read(x).reshape(9, 12).astype(np.float64) @ gpu.read(w).reshape(5, 12).T
    assert_close("matmul_forward + accumulating ref, M=9 N=5 K=12", results[0].reshape(9, 5), want, "matmul")


def test_layouts_hold_only_the_bindings_an_entry_point_uses(gpu):
    """mingru.wgsl declares 21 storage bindings (vec4 and f32 views); no pipeline may need them all
    (WebGPU's default limit is 8 storage buffers per stage)."""
    k = gpu.kernel("mingru.wgsl", "mingru_scan_forward_scalar", WG_S=64)
    names = [n for _, kind, n in k.bindings if kind != "uniform"]
    assert sorted(names) == ["c_f", "h0_f", "hs_f", "terminals", "x_f", "y_f"]
    assert k.workgroup_size == 64
    assert gpu.kernel("matmul.wgsl", "matmul_forward_wgmem").workgroup_size == 256
    assert gpu.kernel("matmul.wgsl", "matmul_forward_ref", WG_X=16, WG_Y=4).workgroup_size == 64
    assert max(len(gpu.kernel("matmul.wgsl", e, **c).bindings) for e, c in (
        ("matmul_forward_tile", {"BR": 1, "VEC4": 1}), ("matmul_backward_weight_wgmem", {}),
        ("matmul_splitk_reduce", {}))) <= 8


def test_a_kernel_over_the_device_limits_is_a_clear_error(gpu, monkeypatch):
    """ppo_loss binds 8 storage buffers (WebGPU's floor): a device allowing fewer gets an error that names
    the kernel, the limit and both values, not a wgpu validation failure; so does a workgroup too large."""
    from trainer.gpu import GPUError, Kernel
    monkeypatch.setitem(gpu.limits, "max-storage-buffers-per-shader-stage", 7)
    with pytest.raises(GPUError, match=r"ppo.wgsl:ppo_loss.*max-storage-buffers-per-shader-stage 8 \(the device "
                                       r"allows 7\)"):
        Kernel(gpu, "ppo.wgsl", "ppo_loss", {"WG": 64})
    monkeypatch.setitem(gpu.limits, "max-compute-workgroup-storage-size", 4096)
    with pytest.raises(GPUError, match=r"matmul_forward_wgmem.*max-compute-workgroup-storage-size 8192 \(the "
                                       r"device allows 4096\)"):
        Kernel(gpu, "matmul.wgsl", "matmul_forward_wgmem", {})


def test_plan_records_dispatch_shapes(gpu):
    x = gpu.array(np.ones((64, 32), np.float32), "x")
    y = gpu.buffer(4 * 64 * 64, "y")
    plan = gpu.plan("shapes")
    matmul.matmul_forward(plan, x.range(), x.range(), y.range(), 64, 64, 32, variant="tile8x4_vec4", splits=2)
    a, b = plan.infos
    assert (a.invocations, a.serial, a.work, a.workgroup) == (8 * 16 * 2, 4, 64 * 64 * 32, 64)
    assert "matmul_splitk_reduce" in b.label and (b.invocations, b.serial) == (64 * 64, 2)
    plan.finalize()
    assert [d.info for d in plan.dispatches] == [a, b] and plan.infos == [a, b]


@pytest.mark.slow
def test_disable_features_env():
    """PUFFGPU_DISABLE_FEATURES makes the runtime act as if the adapter lacked a feature: the device is
    created without it and kernels that need it are refused with a message that says why."""
    import subprocess
    import sys
    code = ("from trainer.gpu import get_gpu; from trainer.kernels import matmul; g = get_gpu(quiet=True); "
            "print(sorted(g.features), 'subgroup' in g.adapter_features); "
            "b = g.buffer(256, 'b'); matmul.matmul_forward(g.plan('p'), b.range(), b.range(), b.range(), 2, 2, 2, "
            "variant='sg8')")
    env = dict(__import__("os").environ, PUFFGPU_DISABLE_FEATURES="subgroup, timestamp-query")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.stdout.startswith("[]"), r.stdout + r.stderr
    assert "disabled by PUFFGPU_DISABLE_FEATURES" in r.stderr


def test_shader_includes(tmp_path, monkeypatch):
    """`#include "file.wgsl"` pastes a file in (once); a missing file, a cycle, a second include and a
    stray # line are errors naming the file and line."""
    files = {"main.wgsl": 'fn a() {}\n#include "lib.wgsl"\n', "lib.wgsl": "fn lib_fn() -> f32 { return 1.0; }\n",
             "missing.wgsl": '#include "nope.wgsl"\n', "cyc1.wgsl": '#include "cyc2.wgsl"\n',
             "cyc2.wgsl": '#include "cyc1.wgsl"\n', "twice.wgsl": '#include "lib.wgsl"\n#include "lib.wgsl"\n',
             "stray.wgsl": "fn a() {}\n#define X 1\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(gpu_mod.wgsl, "SHADER_DIR", tmp_path)
    sf = gpu_mod.ShaderFile.load("main.wgsl")
    assert "fn lib_fn()" in sf.source and "#include" not in sf.source and "lib_fn" in sf.uses
    for name, msg in (("missing.wgsl", r"missing.wgsl:1: #include \"nope.wgsl\": no such file"),
                      ("cyc1.wgsl", r"cyc2.wgsl:1: .*include cycle cyc1.wgsl -> cyc2.wgsl -> cyc1.wgsl"),
                      ("twice.wgsl", r"twice.wgsl:2: .*already included at twice.wgsl:1"),
                      ("stray.wgsl", r"stray.wgsl:2: expected `#include")):
        with pytest.raises(GPUError, match=msg):
            gpu_mod.ShaderFile.load(name)
