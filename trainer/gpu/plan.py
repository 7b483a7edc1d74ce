"""Buffers, ranges, kernels and plans: what the kernel launchers build dispatches from."""
from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass, field

import wgpu

from .errors import GPUError

STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
PARAMS_SLOT = 256  # bytes per dispatch in a plan's uniform arena (>= every adapter's uniform offset alignment)


# --------------------------------------------------------------------------------------------
# buffers

class Buffer:
    """A GPU storage buffer with a label and a size in bytes."""

    def __init__(self, gpu, nbytes: int, label: str, usage=STORAGE):
        if nbytes <= 0:
            raise GPUError(f"buffer {label!r}: size must be positive, got {nbytes}")
        if nbytes > gpu.limits["max-buffer-size"]:
            raise GPUError(f"buffer {label!r}: {nbytes} bytes exceeds the adapter's max buffer size "
                           f"{gpu.limits['max-buffer-size']}")
        self.gpu, self.nbytes, self.label = gpu, nbytes, label
        self.raw = gpu.device.create_buffer(size=(nbytes + 3) // 4 * 4, usage=usage, label=label)
        self.rid = gpu.recorder.buffer(self) if gpu.recorder else None  # its id in a plan recording

    def range(self, offset: int = 0, nbytes: int | None = None) -> "Range":
        return Range(self, offset, self.nbytes - offset if nbytes is None else nbytes)

    def f32(self, offset: int = 0, count: int | None = None) -> "Range":
        """Range in float32 elements: `buf.f32(off, n)` = elements [off, off+n)."""
        return self.range(4 * offset, None if count is None else 4 * count)

    def __repr__(self):
        return f"Buffer({self.label!r}, {self.nbytes} B)"


@dataclass(frozen=True)
class Range:
    buffer: Buffer
    offset: int  # bytes
    nbytes: int

    def __post_init__(self):
        if self.offset < 0 or self.nbytes < 0 or self.offset + self.nbytes > self.buffer.nbytes:
            raise GPUError(f"range [{self.offset}, {self.offset + self.nbytes}) B is outside buffer "
                           f"{self.buffer.label!r} of {self.buffer.nbytes} B")
        if self.offset % 4:
            raise GPUError(f"range offset {self.offset} in {self.buffer.label!r} is not 4-byte aligned")

    def f32(self, offset: int = 0, count: int | None = None) -> "Range":
        """Sub-range in float32 elements relative to this range."""
        n = self.nbytes // 4 - offset if count is None else count
        return Range(self.buffer, self.offset + 4 * offset, 4 * n)

    @property
    def count(self) -> int:
        return self.nbytes // 4


# --------------------------------------------------------------------------------------------
# kernels

class Kernel:
    """One compute entry point with its pipeline and explicit bind-group layout."""

    def __init__(self, gpu, file: str, entry: str, constants: dict | None = None):
        self.gpu, self.file, self.entry = gpu, file, entry
        self.constants = dict(constants or {})
        sf = gpu.shader_file(file)
        if entry not in sf.uses:
            raise GPUError(f"{file}: no entry point {entry!r}")
        self.shader = sf
        self.label = f"{file}:{entry}" + ("" if not self.constants else
                                          "[" + ",".join(f"{k}={v}" for k, v in sorted(self.constants.items())) + "]")
        self.used = sf.uses[entry]
        # only the bindings this entry point uses (and Params) are in its layout: a file may declare
        # more storage bindings than an adapter allows per stage, no single entry point uses them all
        self.bindings = [(b, kind, name) for b, kind, name in sf.bindings if kind == "uniform" or name in self.used]
        self.workgroup_size = sf.workgroup_size(entry, self.constants)
        self.needs = sf.needs(entry, self.constants)
        over = [f"{k} {v} (the device allows {gpu.limits[k]})" for k, v in self.needs.items() if v > gpu.limits[k]]
        if over:
            raise GPUError(f"{self.label} needs " + ", ".join(over) + f" on {gpu.describe()}; every kernel is meant to "
                           f"fit WebGPU's default limits: please report it with the output of tools/gpu_report.py")
        entries = []
        for b, kind, name in self.bindings:
            t = {"uniform": wgpu.BufferBindingType.uniform,
                 "read": wgpu.BufferBindingType.read_only_storage,
                 "read_write": wgpu.BufferBindingType.storage}[kind]
            entries.append({"binding": b, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": t}})
        dev = gpu.device
        self.layout = dev.create_bind_group_layout(entries=entries, label=self.label)
        module = gpu._module(file)
        stage = {"module": module, "entry_point": entry}
        if self.constants:
            stage["constants"] = {k: float(v) for k, v in self.constants.items()}
        self.pipeline = dev.create_compute_pipeline(
            layout=dev.create_pipeline_layout(bind_group_layouts=[self.layout], label=self.label),
            compute=stage, label=self.label)
        self.rid = None  # its id in a plan recording (GPU.kernel sets it)
        self.param_fields = sf.params
        self.param_names = [f for f, _ in sf.params]

    def pack_params(self, params: dict) -> bytes:
        unknown = set(params) - set(self.param_names)
        if unknown:
            raise GPUError(f"{self.label}: unknown params {sorted(unknown)}; Params has {self.param_names}")
        out = bytearray()
        for name, typ in self.param_fields:
            v = params.get(name, 0)
            if typ == "f32":
                out += struct.pack("<f", float(v))
            else:
                iv = int(v)
                if iv != v:
                    raise GPUError(f"{self.label}: param {name} must be an integer, got {v!r}")
                if typ == "u32" and not (0 <= iv < 2 ** 32):
                    raise GPUError(f"{self.label}: param {name}={iv} does not fit u32")
                out += struct.pack("<I" if typ == "u32" else "<i", iv)
        return bytes(out) or b"\0" * 4

    def __repr__(self):
        return f"Kernel({self.label})"


# WebGPU's default min-storage-buffer-offset-alignment: the coarsest binding window any conformant
# device uses, so the overlap check below sees what every device (Dawn in a browser included) would see.
WEBGPU_OFFSET_ALIGNMENT = 256


@dataclass(frozen=True)
class Bound:
    """One storage binding of a dispatch: the binding window [start, start + size) of `buffer` (the range
    widened down to the device's offset alignment; the kernel gets the rest as `<name>_off`)."""
    name: str
    access: str  # 'read' | 'read_write', as the shader declares it
    buffer: "Buffer"
    start: int
    size: int
    offset: int | None = None  # where the range itself starts (None: a dummy)

    def window(self, align: int) -> tuple[int, int]:
        """[start, end) in bytes if bound at an `align`-byte multiple (a coarser alignment widens it)."""
        first = self.start if self.offset is None else self.offset
        return first // align * align, self.start + self.size


def check_bindings(kernel, plan_label: str, bound: list[Bound]):
    """Refuse a dispatch that WebGPU forbids, as Dawn does when the dispatch is recorded (wgpu-native
    does not check the second rule): within one dispatch a buffer is bound either only read-only or
    only writable, and a writable binding overlaps no other binding of its buffer. Windows are taken
    at WebGPU's 256-byte alignment (or the device's, if coarser), so a plan that passes here passes on
    every conformant device."""
    align = max(WEBGPU_OFFSET_ALIGNMENT, kernel.gpu.limits["min-storage-buffer-offset-alignment"])
    for i, a in enumerate(bound):
        for b in bound[i + 1:]:
            if a.buffer is not b.buffer or (a.access == "read" and b.access == "read"):
                continue
            wa, wb = a.window(align), b.window(align)
            where = (f"{kernel.label} in plan {plan_label!r}: {a.access} binding {a.name} [{wa[0]}, {wa[1]}) and "
                     f"{b.access} binding {b.name} [{wb[0]}, {wb[1]}) of buffer {a.buffer.label!r}")
            if a.access != b.access:
                raise GPUError(f"{where}: WebGPU binds a buffer in one dispatch either read-only or writable, "
                               f"never both (even on disjoint ranges); keep the input in another buffer")
            if wa[0] < wb[1] and wb[0] < wa[1]:
                raise GPUError(f"{where} overlap (byte windows at WebGPU's {align}-byte offset alignment); WebGPU "
                               f"forbids a writable binding that overlaps another binding of its buffer: use "
                               f"another buffer, or ranges {align} bytes apart")


@dataclass
class DispatchInfo:
    """What the dispatch-shape report needs. `invocations`: invocations that own work (launchers say;
    default: every launched one); `serial`: iterations of the longest loop chain one invocation runs
    (None: not recorded by the launcher); `work`: multiply-adds (matmuls) or element operations."""
    label: str
    grid: tuple[int, int, int]
    workgroup: int
    invocations: int
    serial: int | None = None
    work: int | None = None
    params: dict = field(default_factory=dict)


@dataclass
class Dispatch:
    kernel: Kernel
    bind_group: object
    grid: tuple[int, int, int]
    info: DispatchInfo | None = None
    bindings: tuple = ()  # (binding, Buffer, start, size) of the bind group, Params included (recordings)


class Plan:
    """A fixed list of dispatches, encoded into one compute pass (and one submit by `GPU.run`).

    Build with `plan.add(kernel, grid, params, **bindings)`; each dispatch gets its own 256-byte
    slot in the plan's uniform arena, written once at `finalize()` (done lazily by the first run).
    """

    def __init__(self, gpu, label: str):
        self.gpu, self.label = gpu, label
        self.dispatches: list[Dispatch] = []
        self._params: list[bytes] = []
        self._pending: list[tuple] = []
        self._infos: list[DispatchInfo] = []  # one per add(), in order
        self.arena = None
        self.keep: list = []  # objects whose GPU resources this plan's bind groups use (other plans' arenas)
        self.encode_seconds = 0.0  # CPU time of the last encode

    def add(self, kernel: Kernel, grid, params: dict | None = None, **bindings: Range) -> "Plan":
        if self.arena is not None:
            raise GPUError(f"plan {self.label!r} is finalized; build a new plan to add dispatches")
        grid = tuple(int(g) for g in (grid if isinstance(grid, (tuple, list)) else (grid,))) + (1, 1)
        grid = grid[:3]
        lim = self.gpu.limits["max-compute-workgroups-per-dimension"]
        if any(g < 1 for g in grid) or any(g > lim for g in grid):
            raise GPUError(f"{kernel.label} in plan {self.label!r}: grid {grid} must be within 1..{lim} per dimension")
        params = dict(params or {})
        names = {b[2] for b in kernel.shader.bindings if b[1] != "uniform"}
        unknown = set(bindings) - names
        if unknown:
            raise GPUError(f"{kernel.label}: unknown bindings {sorted(unknown)}; the shader declares {sorted(names)}")
        missing = (kernel.used & names) - set(bindings)  # pass name=None to leave a used binding unbound on purpose
        if missing:
            raise GPUError(f"{kernel.label}: entry point uses bindings {sorted(missing)} but none were given")
        entries = []  # (binding, Bound) in layout order; None for Params
        align = self.gpu.limits["min-storage-buffer-offset-alignment"]
        max_bind = self.gpu.limits["max-storage-buffer-binding-size"]
        for b, kind, name in kernel.bindings:  # bindings the entry point does not use are not in its layout
            if kind == "uniform":
                entries.append((b, None))
                continue
            r = bindings.get(name)
            if r is None:  # used by the entry point, but not by this dispatch: a dummy range (GPU.dummy_range)
                entries.append((b, Bound(name, kind, *self.gpu.dummy_range(b, kind))))
                continue
            if not isinstance(r, Range):
                r = r.range()
            start = r.offset // align * align
            size = (r.offset + max(r.nbytes, 4) - start + 3) // 4 * 4
            if size > max_bind:
                raise GPUError(f"{kernel.label}: binding {name} needs {size} B from {r.buffer.label!r} but the "
                               f"adapter binds at most {max_bind} B; split the work")
            if start + size > r.buffer.raw.size:
                raise GPUError(f"{kernel.label}: binding {name} overruns {r.buffer.label!r}")
            off_field = f"{name}_off"
            if off_field in kernel.param_names:
                params.setdefault(off_field, (r.offset - start) // 4)
            elif r.offset != start:
                raise GPUError(f"{kernel.label}: binding {name} starts at byte {r.offset} of {r.buffer.label!r}, "
                               f"which is not {align}-aligned, and Params has no {off_field} field")
            entries.append((b, Bound(name, kind, r.buffer, start, size, r.offset)))
        check_bindings(kernel, self.label, [e for _, e in entries if e is not None])
        self._pending.append((kernel, grid, entries))
        self._params.append(kernel.pack_params(params))
        self._infos.append(DispatchInfo(kernel.label, grid, kernel.workgroup_size,
                                        grid[0] * grid[1] * grid[2] * kernel.workgroup_size, params=params))
        return self

    def note(self, *, invocations: int | None = None, serial: int | None = None, work: int | None = None) -> "Plan":
        """Record the last added dispatch's shape for the dispatch-shape report (see DispatchInfo)."""
        info = self._infos[-1]
        if invocations is not None:
            info.invocations = int(invocations)
        if serial is not None:
            info.serial = int(serial)
        if work is not None:
            info.work = int(work)
        return self

    @property
    def infos(self) -> list[DispatchInfo]:
        """DispatchInfo of every dispatch, in order (pending ones included)."""
        return list(self._infos) if self.arena is None else [d.info for d in self.dispatches]

    def finalize(self):
        if self.arena is not None:
            return self
        n = max(1, len(self._pending))
        self.arena = self.gpu.buffer(n * PARAMS_SLOT, f"{self.label}.params",
                                     usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        blob = bytearray(n * PARAMS_SLOT)
        for i, p in enumerate(self._params):
            if len(p) > PARAMS_SLOT:
                raise GPUError(f"{self._pending[i][0].label}: Params is {len(p)} B, more than {PARAMS_SLOT}")
            blob[i * PARAMS_SLOT:i * PARAMS_SLOT + len(p)] = p
        self.gpu.write(self.arena, 0, bytes(blob))
        for i, (kernel, grid, entries) in enumerate(self._pending):
            bound = tuple((b, self.arena, i * PARAMS_SLOT, len(self._params[i])) if e is None else
                          (b, e.buffer, e.start, e.size) for b, e in entries)
            resolved = [{"binding": b, "resource": {"buffer": buf.raw, "offset": start, "size": size}}
                        for b, buf, start, size in bound]
            bg = self.gpu.device.create_bind_group(layout=kernel.layout, entries=resolved,
                                                   label=f"{self.label}/{i}:{kernel.label}")
            self.dispatches.append(Dispatch(kernel, bg, grid, self._infos[i], bound))
        self._pending = []
        return self

    def extend(self, other: "Plan") -> "Plan":
        """Append another (finalized) plan's dispatches; its arena stays alive through the bind groups."""
        other.finalize()
        self.finalize()
        self.dispatches.extend(other.dispatches)
        self.keep.append(other.arena)
        return self

    def sliced(self, frac: float) -> tuple["Plan", float]:
        """The same dispatches on a slice of their grids (each one's longest dimension cut to ~frac), for
        timing only (the outputs are partial). Returns (plan, the fraction of the first dispatch it runs)."""
        self.finalize()
        probe = Plan(self.gpu, self.label + " (slice)")
        probe.arena, probe.keep = self.arena, [self]  # the bind groups point into this plan's arena
        actual = None
        for d in self.dispatches:
            g = list(d.grid)
            i = max(range(3), key=lambda j: g[j])
            cut = max(1, round(g[i] * frac))
            if actual is None:
                actual = cut / g[i]
            g[i] = cut
            probe.dispatches.append(Dispatch(d.kernel, d.bind_group, tuple(g), d.info, d.bindings))
        return probe, (actual or 1.0)

    def encode(self, cpass):
        t0 = time.perf_counter()
        native = _native_pass_functions(cpass)
        if native is not None:
            # wgpu-native's C entry points straight through cffi: ~0.7 us per dispatch instead of ~2.3 us
            # through wgpu-py's wrappers (which allocate a dynamic-offset array per set_bind_group).
            # The plan keeps every pipeline and bind group alive, which is what the wrappers ensure.
            set_pipeline, set_bind_group, dispatch, raw, null = native
            last = None
            for d in self.dispatches:
                if d.kernel.pipeline is not last:
                    set_pipeline(raw, d.kernel.pipeline._internal)
                    last = d.kernel.pipeline
                set_bind_group(raw, 0, d.bind_group._internal, 0, null)
                dispatch(raw, *d.grid)
        else:
            set_pipeline, set_bind_group, dispatch = cpass.set_pipeline, cpass.set_bind_group, cpass.dispatch_workgroups
            last = None
            for d in self.dispatches:
                if d.kernel.pipeline is not last:  # consecutive dispatches of one kernel skip the switch
                    set_pipeline(d.kernel.pipeline)
                    last = d.kernel.pipeline
                set_bind_group(0, d.bind_group)
                dispatch(*d.grid)
        self.encode_seconds = time.perf_counter() - t0

    def __len__(self):
        return len(self.dispatches) + len(self._pending)


def _native_pass_functions(cpass):
    """(set_pipeline, set_bind_group, dispatch, pass handle, NULL) of wgpu-native, or None to use
    wgpu-py's public methods (another backend, a changed wgpu-py, or PUFFGPU_PUBLIC_ENCODE=1)."""
    if os.environ.get("PUFFGPU_PUBLIC_ENCODE") == "1":
        return None
    try:
        from wgpu.backends.wgpu_native import _api
        lib = _api.lib
        return (lib.wgpuComputePassEncoderSetPipeline, lib.wgpuComputePassEncoderSetBindGroup,
                lib.wgpuComputePassEncoderDispatchWorkgroups, cpass._internal, _api.ffi.NULL)
    except (ImportError, AttributeError):
        return None
