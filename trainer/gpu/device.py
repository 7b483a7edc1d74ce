"""The device: one adapter, its device and queue, buffer helpers, the kernel cache and `run`."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import wgpu

from .adapters import OPTIONAL_FEATURES, _adapter_kind, choose_adapter, disabled_features, limits_mode, requested_limits
from .errors import GPUError
from .plan import STORAGE, Buffer, Kernel, Plan, Range
from .record import recorder_for
from .wgsl import ShaderFile

DUMMY_BYTES = 256  # one empty binding: WebGPU's offset alignment, so each starts where a binding may
DUMMY_SLOTS = 32  # writable empty bindings: one per binding number (mingru.wgsl declares 22 bindings)

class GPU:
    def __init__(self, adapter: str | None = None, quiet: bool = False, local_rank: int = 0):
        self.adapter = choose_adapter(adapter, local_rank)
        self.info = self.adapter.info
        self.adapter_features = set(self.adapter.features)
        self.disabled = disabled_features()
        features = [f for f in OPTIONAL_FEATURES if f in self.adapter_features and f not in self.disabled]
        limits = requested_limits(self.adapter.limits)
        self.limits_mode = limits_mode()
        self.device = self.adapter.request_device_sync(required_features=features, required_limits=limits,
                                                       label="puffgpu")
        self.queue = self.device.queue
        self.limits = dict(self.device.limits)
        self.features = set(features)
        self.is_cpu = _adapter_kind(self.info) == "cpu"
        self.name = str(self.info.get("device") or self.info.get("vendor") or "unknown adapter")
        self.backend = str(self.info.get("backend_type"))
        self.driver = str(self.info.get("description") or "")
        self._files: dict[str, ShaderFile] = {}
        self._scratch: list[Buffer] = []
        # Which variant a launcher uses when its caller names none (trainer/kernels): None = each kernel
        # family's static default; trainer.autotune.attach(gpu) installs the tuner here. The runtime never
        # imports the tuner: choosing is policy, and it lives above the runtime.
        self.chooser = None
        self._modules: dict[str, object] = {}
        self._kernels: dict[tuple, Kernel] = {}
        self._staging = None
        self._subgroup_size = None
        self.recorder = recorder_for(self)  # PUFFGPU_RECORD_PLAN: this GPU's work as a plan recording
        # bound where a dispatch leaves a binding its entry point uses empty (a matmul without z, a mask-free
        # plan): read-only bindings may share one range, each writable one gets its own (by binding number),
        # since WebGPU forbids a writable binding that overlaps another (plan.check_bindings)
        self.dummy = self.buffer(DUMMY_SLOTS * DUMMY_BYTES, "dummy (writable)")
        self.dummy_ro = self.buffer(DUMMY_BYTES, "dummy (read-only)")
        if not quiet:
            print(f"adapter: {self.describe()}", file=sys.stderr)

    def describe(self) -> str:
        return f"{self.name} [{self.backend}, {self.info.get('adapter_type')}]"

    def has(self, feature: str) -> bool:
        """Whether an optional feature is enabled on this device (present and not disabled)."""
        return feature in self.features

    @property
    def subgroup_size(self) -> int | None:
        """The subgroup size a 64-invocation workgroup runs with, measured once on the device (wgpu-py 0.32
        does not report the adapter's subgroup sizes); None without the subgroup feature."""
        if not self.has("subgroup"):
            return None
        if self._subgroup_size is None:
            out = self.buffer(16, "subgroup size probe")
            plan = self.plan("subgroup size")
            plan.add(self.kernel("matmul_subgroup.wgsl", "subgroup_size_probe"), 1, {}, y=out.range())
            self.run(plan)
            self._subgroup_size = int(self.read(out)[0])
        return self._subgroup_size

    def dummy_range(self, binding: int, kind: str) -> tuple[Buffer, int, int]:
        """(buffer, start, size) a dispatch binds for binding number `binding` when it leaves it empty."""
        if kind == "read":
            return self.dummy_ro, 0, DUMMY_BYTES
        if not 0 <= binding < DUMMY_SLOTS:
            raise GPUError(f"binding {binding}: the runtime keeps empty writable ranges for bindings 0..{DUMMY_SLOTS - 1}")
        return self.dummy, binding * DUMMY_BYTES, DUMMY_BYTES

    def scratch(self, count: int) -> Range:
        """`count` floats of scratch shared by every plan (split-K partial sums).

        Safe to share: dispatches run in order (one queue; each dispatch sees the writes of the
        previous ones), and a user writes its scratch before reading it within one product. A bigger
        request gets a new buffer; older plans keep theirs alive through their bind groups (and this list).
        """
        if not self._scratch or self._scratch[-1].nbytes < 4 * count:
            self._scratch.append(self.buffer(max(4 * count, 1 << 16), "scratch (split-K partial sums)"))
        return self._scratch[-1].f32(0, count)

    # shaders -----------------------------------------------------------------------------
    def shader_file(self, file: str) -> ShaderFile:
        """The parsed (include-expanded) shaders/ file `file`, loaded once."""
        if file not in self._files:
            self._files[file] = ShaderFile.load(file)
        return self._files[file]

    def _module(self, file: str):
        if file not in self._modules:
            self._modules[file] = self.device.create_shader_module(code=self.shader_file(file).code("naga"), label=file)
        return self._modules[file]

    def kernel(self, file: str, entry: str, **constants) -> Kernel:
        key = (file, entry, tuple(sorted(constants.items())))
        if key not in self._kernels:
            k = self._kernels[key] = Kernel(self, file, entry, constants)
            _record_kernel(file, entry, constants)
            if self.recorder:
                k.rid = self.recorder.kernel(k)
        return self._kernels[key]

    def plan(self, label: str) -> Plan:
        return Plan(self, label)

    # buffers -----------------------------------------------------------------------------
    def buffer(self, nbytes: int, label: str, usage=STORAGE) -> Buffer:
        return Buffer(self, nbytes, label, usage)

    def array(self, data: np.ndarray, label: str) -> Buffer:
        """A new storage buffer holding `data` (any dtype, uploaded as raw bytes)."""
        data = np.ascontiguousarray(data)
        buf = self.buffer(max(4, data.nbytes), label)
        if data.nbytes:
            self.write(buf, 0, data)
        return buf

    def upload(self, dst: Range | Buffer, data: np.ndarray):
        dst = dst if isinstance(dst, Range) else dst.range()
        data = np.ascontiguousarray(data)
        if data.nbytes > dst.nbytes:
            raise GPUError(f"upload of {data.nbytes} B does not fit range of {dst.nbytes} B in {dst.buffer.label!r}")
        self.write(dst.buffer, dst.offset, data)

    def write(self, buf: Buffer, offset: int, data):
        """queue.write_buffer of `data` (an array or bytes) at byte `offset` of `buf`, recorded if recording."""
        self.queue.write_buffer(buf.raw, offset, data)
        if self.recorder:
            self.recorder.write(buf, offset, data)

    def zero(self, dst: Range | Buffer):
        dst = dst if isinstance(dst, Range) else dst.range()
        if dst.offset % 4 or dst.nbytes % 4:
            raise GPUError("zero() needs 4-byte aligned ranges")
        enc = self.device.create_command_encoder(label="zero")
        enc.clear_buffer(dst.buffer.raw, dst.offset, dst.nbytes)
        self.queue.submit([enc.finish()])
        if self.recorder:
            self.recorder.clear(dst.buffer, dst.offset, dst.nbytes)

    def _staging_for(self, nbytes: int):
        if self._staging is None or self._staging.size < nbytes:
            size = max(nbytes, 1 << 16)
            self._staging = self.device.create_buffer(size=(size + 3) // 4 * 4, label="readback staging",
                                                      usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        return self._staging

    def read(self, src: Range | Buffer, dtype=np.float32) -> np.ndarray:
        return self.run(None, read=src, dtype=dtype)

    def run(self, plans, read: Range | Buffer | None = None, dtype=np.float32):
        """Encode `plans` into one compute pass, optionally copy `read` to staging, submit once.

        Returns the read data (a numpy copy) or None. Without a read, returns without waiting for the GPU.
        """
        enc = self.device.create_command_encoder(label="puffgpu.run")
        if plans is not None:
            plans = plans if isinstance(plans, (list, tuple)) else [plans]
            cpass = enc.begin_compute_pass(label="+".join(p.label for p in plans))
            for p in plans:
                p.finalize()
                p.encode(cpass)
            cpass.end()
        staging = None
        if read is not None:
            read = read if isinstance(read, Range) else read.range()
            if read.nbytes % 4:
                raise GPUError("readback size must be a multiple of 4 bytes")
            staging = self._staging_for(read.nbytes)
            enc.copy_buffer_to_buffer(read.buffer.raw, read.offset, staging, 0, read.nbytes)
        self.queue.submit([enc.finish()])
        if staging is None:
            if self.recorder:
                self.recorder.submit(plans)
            return None
        staging.map_sync(wgpu.MapMode.READ, 0, read.nbytes)
        try:
            data = np.frombuffer(staging.read_mapped(0, read.nbytes, copy=True), dtype=dtype).copy()
        finally:
            staging.unmap()
        if self.recorder:
            self.recorder.submit(plans, read, dtype, data)
        return data

    def sync(self):
        """Wait for all submitted work (wgpu-py 0.32's on_submitted_work_done_sync is broken: map instead)."""
        self.read(self.dummy.range(0, 4))


def _record_kernel(file: str, entry: str, constants: dict):
    """With PUFFGPU_RECORD_KERNELS=path, append every pipeline this process builds to that JSON-lines file
    (checks/wgsl_check.py compiles the recorded set with other WGSL compilers). One short write per line,
    in append mode, so the processes of a test run can share the file."""
    path = os.environ.get("PUFFGPU_RECORD_KERNELS")
    if not path:
        return
    line = json.dumps({"file": file, "entry": entry, "constants": constants}, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)


_DEFAULT: GPU | None = None


def get_gpu(adapter: str | None = None, quiet: bool = False, local_rank: int = 0) -> GPU:
    """The process-wide GPU (created on first use; `local_rank`: see choose_adapter)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = GPU(adapter, quiet=quiet, local_rank=local_rank)
    return _DEFAULT
