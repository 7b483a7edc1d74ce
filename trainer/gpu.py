"""GPU runtime: adapter selection, WGSL kernels, buffers and prebuilt dispatch plans.

Everything puffgpu runs on the GPU goes through four objects:

- `GPU`      one adapter + device + queue; buffer helpers (upload, readback, zero).
- `Kernel`   one entry point of one `shaders/*.wgsl` file, with an explicit bind-group layout
             derived from the file's declarations, `override` constants set at pipeline creation
             and a label that names the kernel in every error.
- `Range`    a byte range of a `Buffer`; kernels take element offsets, so tensors can live inside
             one big buffer (the flat weight buffer in checkpoint layout).
- `Plan`     a fixed list of (pipeline, bind group, grid) built once when shapes are known and
             replayed into one compute pass and one submit (lavapipe: a pass costs ~7 us, a submit
             ~60 us, a bind group ~15 us to create, so all of those happen once, at build time).
             Each dispatch carries a `DispatchInfo` (invocations in flight, longest serial loop per
             invocation, work) for the dispatch-shape report (tools/dispatch_report.py).

Optional adapter features (subgroups, timestamp queries) are used when present and never required;
`PUFFGPU_DISABLE_FEATURES=subgroup,timestamp-query` makes the runtime behave as if the adapter
lacked them (CI runs the kernel goldens that way). The WGSL files are found inside the installed
package (`trainer/shaders`, from a wheel) or beside it (`shaders/`, a checkout or editable install).

WGSL conventions the runtime relies on (every file in shaders/ follows them):
- a line `#include "file.wgsl"` is replaced by that file of shaders/ (once per shader; WGSL has no
  include of its own): the action-head math lives once in heads.wgsl;
- all bindings live in `@group(0)`; a kernel's bind-group layout holds only the bindings its entry
  point uses (plus Params), so no pipeline needs more storage bindings than it reads or writes; storage buffers are `array<f32>` / `array<u32>` / `array<vec4<f32>>`;
- the last binding is `var<uniform> p: Params;` and the file defines `struct Params` of u32/i32/f32
  scalars only. For every storage binding `x` that has a `x_off: u32` field in Params, the runtime
  fills it with the binding's element offset (the part of the range offset not covered by the
  aligned binding window), so kernels index `x[p.x_off + i]`.
"""
from __future__ import annotations

import importlib.resources
import json
import os
import re
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
    # Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" on every adapter query of
    # a headless machine; a private runtime dir keeps the trainer's output clean.
    _rt = Path(f"/tmp/puffgpu-runtime-{os.getuid()}")
    _rt.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(_rt)

import wgpu  # noqa: E402



def _find_shader_dir() -> Path:
    """shaders/ of a checkout or editable install, or trainer/shaders of an installed wheel."""
    here = Path(__file__).resolve().parent
    for d in (here / "shaders", here.parent / "shaders"):
        if (d / "matmul.wgsl").is_file():
            return d
    try:  # an editable install whose finder maps the package elsewhere
        d = Path(str(importlib.resources.files("trainer.shaders")))
        if (d / "matmul.wgsl").is_file():
            return d
    except (ModuleNotFoundError, TypeError):
        pass
    return here.parent / "shaders"


SHADER_DIR = _find_shader_dir()
OPTIONAL_FEATURES = ("timestamp-query", "subgroup")  # requested when the adapter has them; never required

STORAGE = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
PARAMS_SLOT = 256  # bytes per dispatch in a plan's uniform arena (>= every adapter's uniform offset alignment)

INSTALL_HINT = (
    "No GPU adapter found. puffgpu needs a WebGPU-capable driver:\n"
    "  - Debian/Ubuntu without a GPU: `sudo apt-get install mesa-vulkan-drivers` (lavapipe, a CPU Vulkan driver)\n"
    "  - a machine with a GPU: install its Vulkan driver (Linux), or use Metal (macOS) / DX12 (Windows).\n"
    "Check with: python -c \"import wgpu; print(wgpu.gpu.enumerate_adapters_sync())\""
)


class GPUError(RuntimeError):
    """A GPU-side problem explained in words (bad shapes, sizes, missing adapter)."""


# --------------------------------------------------------------------------------------------
# adapter selection

def _adapter_kind(info) -> str:
    return str(info.get("adapter_type", "")).lower()  # 'discretegpu' | 'integratedgpu' | 'cpu' | ...


def _adapter_label(info) -> str:
    return f"{info.get('device') or info.get('vendor')} ({info.get('backend_type')}, {info.get('adapter_type')})"


_RANK = {"discretegpu": 0, "integratedgpu": 1, "virtualgpu": 2, "unknown": 3, "cpu": 4}


GL_NOTE = ("note: this is wgpu's OpenGL backend, the last resort (no Vulkan, Metal or DX12 adapter was "
           "found): it passes the goldens but is slower; install the GPU's Vulkan driver (Linux) or use "
           "Metal/DX12 for the fast path.")


def is_gl(info) -> bool:
    return str(info.get("backend_type", "")).lower() == "opengl"


def usable_adapters() -> list:
    """This machine's adapters that puffgpu picks from, best first: discrete GPUs, integrated, virtual,
    then CPU adapters (lavapipe). The GL backend (a compatibility path with weaker compute support)
    only when there is nothing else: a machine with Mesa's GL driver and no Vulkan ICD, or an old GPU
    without Vulkan or DX12. It is never preferred; choose_adapter also takes it when asked by name."""
    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    usable = [a for a in adapters if not is_gl(a.info)] or [a for a in adapters if is_gl(a.info)]
    return sorted(usable, key=lambda a: _RANK.get(_adapter_kind(a.info), 3))


def choose_adapter(force: str | None = None, local_rank: int = 0):
    """Pick an adapter: a real GPU first, a CPU adapter (lavapipe) only if there is none.

    `force` (or env var PUFFGPU_ADAPTER) selects by a case-insensitive substring of the device
    name, vendor, backend ('vulkan', 'metal', 'd3d12') or adapter type ('cpu', 'discrete').
    `local_rank` (a data-parallel run's index among the ranks on this machine): a comma-separated
    `force` names one adapter per local rank (wrapping around); without `force`, rank i takes the
    i-th adapter of the best kind there is (wrapping around, so K ranks on one GPU share it, and a
    machine's CPU adapter is never picked beside a GPU).
    """
    force = force if force is not None else os.environ.get("PUFFGPU_ADAPTER")
    if force and "," in force:
        names = [n.strip() for n in force.split(",") if n.strip()]
        force = names[local_rank % len(names)] if names else None
    if force:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
        key = force.lower()
        match = [a for a in adapters if any(key in str(a.info.get(f, "")).lower()
                                            for f in ("device", "vendor", "backend_type", "adapter_type", "description"))]
        if not match:
            names = "\n  ".join(_adapter_label(a.info) for a in adapters) or "(none)"
            raise GPUError(f"PUFFGPU_ADAPTER/--adapter {force!r} matches no adapter. Available:\n  {names}")
        return match[0]
    usable = usable_adapters()
    if not usable:
        raise GPUError(INSTALL_HINT)
    best = [a for a in usable if _adapter_kind(a.info) == _adapter_kind(usable[0].info)]
    return best[local_rank % len(best)]


# --------------------------------------------------------------------------------------------
# buffers

class Buffer:
    """A GPU storage buffer with a label and a size in bytes."""

    def __init__(self, gpu: "GPU", nbytes: int, label: str, usage=STORAGE):
        if nbytes <= 0:
            raise GPUError(f"buffer {label!r}: size must be positive, got {nbytes}")
        if nbytes > gpu.limits["max-buffer-size"]:
            raise GPUError(f"buffer {label!r}: {nbytes} bytes exceeds the adapter's max buffer size "
                           f"{gpu.limits['max-buffer-size']}")
        self.gpu, self.nbytes, self.label = gpu, nbytes, label
        self.raw = gpu.device.create_buffer(size=(nbytes + 3) // 4 * 4, usage=usage, label=label)

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
# WGSL parsing: bindings, Params struct, which bindings each entry point uses

_BINDING_RE = re.compile(
    r"@group\(0\)\s*@binding\((\d+)\)\s*var(?:<\s*(storage|uniform)\s*(?:,\s*(read|read_write))?\s*>)?\s+(\w+)\s*:")
_FN_RE = re.compile(r"\bfn\s+(\w+)\s*\(")
_STRUCT_RE = re.compile(r"struct\s+Params\s*\{([^}]*)\}", re.S)
_WG_RE = re.compile(r"@workgroup_size\(([^)]*)\)\s*fn\s+(\w+)")
_OVERRIDE_RE = re.compile(r"override\s+(\w+)\s*:\s*\w+\s*=\s*(\d+)u?\s*;")
_WORKGROUP_VAR_RE = re.compile(r"var<\s*workgroup\s*>\s+(\w+)\s*:\s*array<\s*(\w+(?:<\s*\w+\s*>)?)\s*,\s*(\w+)\s*>")
_SUBGROUP_RE = re.compile(r"\bsubgroup[A-Z]\w*\s*\(|@builtin\(\s*subgroup_")
# Whether a WGSL compiler wants `enable subgroups;` before code that uses subgroup built-ins: the WGSL
# standard and Tint (Dawn, Chrome) require it; naga in wgpu-py 0.32 rejects the directive ("not yet
# supported") and accepts the built-ins without it once the device has the feature.
SUBGROUP_DIRECTIVE = {"naga": False, "tint": True}
_ELEM_BYTES = {"f32": 4, "u32": 4, "i32": 4, "vec2<f32>": 8, "vec4<f32>": 16, "vec4<u32>": 16}


def _strip_comments(src: str) -> str:
    return re.sub(r"//[^\n]*", "", src)


def _function_bodies(src: str) -> dict[str, str]:
    bodies = {}
    for m in _FN_RE.finditer(src):
        i = src.index("{", m.end())
        depth, j = 0, i
        while True:
            if src[j] == "{":
                depth += 1
            elif src[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        bodies[m.group(1)] = src[m.start():j + 1]
    return bodies


_INCLUDE_RE = re.compile(r'^[ \t]*#include[ \t]+"([^"\n]+)"[ \t]*$')


def _expand_includes(name: str, source: str, _chain: tuple[str, ...] = (), _seen: dict | None = None) -> str:
    """`source` of shader file `name` with every line `#include "file.wgsl"` (a file in SHADER_DIR)
    replaced by that file's text, itself expanded. WGSL has no include of its own; this lets shaders
    share functions (heads.wgsl). A file may be included once per shader: a cycle, a second include,
    a missing file or any other line starting with # is an error naming the file and line."""
    chain = _chain + (name,)
    seen = {} if _seen is None else _seen  # included file -> where
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("#"):
            continue
        where = f"{name}:{i + 1}"
        m = _INCLUDE_RE.match(line)
        if not m:
            raise GPUError(f"{where}: expected `#include \"file.wgsl\"` on a line of its own, got {line.strip()!r}")
        inc = m.group(1)
        path = SHADER_DIR / inc
        if not path.is_file():
            raise GPUError(f"{where}: #include \"{inc}\": no such file in {SHADER_DIR}")
        if inc in chain:
            raise GPUError(f"{where}: #include \"{inc}\": include cycle {' -> '.join(chain + (inc,))}")
        if inc in seen:
            raise GPUError(f"{where}: #include \"{inc}\": already included at {seen[inc]}")
        seen[inc] = where
        lines[i] = _expand_includes(inc, path.read_text(encoding="utf-8"), chain, seen)
    return "\n".join(lines)


@dataclass
class ShaderFile:
    name: str
    source: str
    bindings: list[tuple[int, str, str]]  # (binding, kind: 'read'|'read_write'|'uniform', name)
    params: list[tuple[str, str]]  # (field, 'u32'|'i32'|'f32')
    uses: dict[str, set[str]]  # entry/function name -> binding names it uses (transitively)
    workgroup: dict[str, tuple[str, ...]] = field(default_factory=dict)  # entry -> @workgroup_size terms
    overrides: dict[str, int] = field(default_factory=dict)  # integer override defaults
    shared: dict[str, tuple[int, str]] = field(default_factory=dict)  # var<workgroup> -> (bytes per element, length)
    shared_uses: dict[str, set[str]] = field(default_factory=dict)  # entry/function -> workgroup vars it uses

    @classmethod
    def load(cls, name: str) -> "ShaderFile":
        path = SHADER_DIR / name
        if not path.exists():
            known = ", ".join(sorted(p.name for p in SHADER_DIR.glob("*.wgsl")))
            raise GPUError(f"shader file {name!r} not found in {SHADER_DIR} (have: {known})")
        source = _expand_includes(name, path.read_text(encoding="utf-8"))
        src = _strip_comments(source)
        bindings = []
        for m in _BINDING_RE.finditer(src):
            kind = "uniform" if m.group(2) == "uniform" else (m.group(3) or "read")
            bindings.append((int(m.group(1)), kind, m.group(4)))
        bindings.sort()
        if [b[0] for b in bindings] != list(range(len(bindings))):
            raise GPUError(f"{name}: bindings must be numbered 0..n-1, got {[b[0] for b in bindings]}")
        params = []
        sm = _STRUCT_RE.search(src)
        if sm:
            for fm in re.finditer(r"(\w+)\s*:\s*(u32|i32|f32)", sm.group(1)):
                params.append((fm.group(1), fm.group(2)))
        bodies = _function_bodies(src)
        calls = {f: {g for g in bodies if g != f and re.search(rf"\b{g}\s*\(", body)} for f, body in bodies.items()}

        def used(names):  # function -> the names of `names` it uses, directly or through the functions it calls
            direct = {f: {n for n in names if re.search(rf"(?<![.\w]){n}\b", body)} for f, body in bodies.items()}
            out = {}
            for f in bodies:
                seen, stack, acc = set(), [f], set()
                while stack:
                    g = stack.pop()
                    if g in seen:
                        continue
                    seen.add(g)
                    acc |= direct[g]
                    stack.extend(calls[g])
                out[f] = acc
            return out  # (not .member: a struct field named like a binding is not a use)

        shared = {}
        for m in _WORKGROUP_VAR_RE.finditer(src):
            elem = re.sub(r"\s+", "", m.group(2))
            if elem not in _ELEM_BYTES:
                raise GPUError(f"{name}: var<workgroup> {m.group(1)} has element type {elem}; the runtime knows "
                               f"{sorted(_ELEM_BYTES)}")
            shared[m.group(1)] = (_ELEM_BYTES[elem], m.group(3))
        workgroup = {m.group(2): tuple(t.strip() for t in m.group(1).split(",")) for m in _WG_RE.finditer(src)}
        overrides = {m.group(1): int(m.group(2)) for m in _OVERRIDE_RE.finditer(src)}
        return cls(name, source, bindings, params, used({b[2] for b in bindings}), workgroup, overrides, shared,
                   used(set(shared)))

    @property
    def uses_subgroups(self) -> bool:
        """Whether the file calls subgroup built-ins (or takes subgroup builtin values)."""
        return bool(_SUBGROUP_RE.search(_strip_comments(self.source)))

    def code(self, compiler: str = "naga") -> str:
        """The WGSL text for one compiler: `enable subgroups;` first where the file uses subgroups and the
        compiler wants the directive (SUBGROUP_DIRECTIVE), else the file as it is."""
        if compiler not in SUBGROUP_DIRECTIVE:
            raise GPUError(f"unknown WGSL compiler {compiler!r}; known: {sorted(SUBGROUP_DIRECTIVE)}")
        if self.uses_subgroups and SUBGROUP_DIRECTIVE[compiler]:
            return "enable subgroups;\n" + self.source
        return self.source

    def _value(self, term: str, constants: dict) -> int:
        term = term.rstrip("ui") if term[:1].isdigit() else term
        return int(term) if term.isdigit() else int(constants.get(term, self.overrides.get(term, 1)))

    def workgroup_size(self, entry: str, constants: dict) -> int:
        """Invocations per workgroup of `entry` with these override constants."""
        size = 1
        for term in self.workgroup.get(entry, ("1",)):
            size *= self._value(term, constants)
        return size

    def needs(self, entry: str, constants: dict) -> dict:
        """The device limits `entry` needs with these override constants, keyed by WebGPU's limit names."""
        dims = [self._value(t, constants) for t in self.workgroup.get(entry, ("1",))] + [1, 1]
        return {
            "max-storage-buffers-per-shader-stage": sum(kind != "uniform" and n in self.uses[entry]
                                                        for _, kind, n in self.bindings),
            "max-compute-workgroup-storage-size": sum(b * self._value(length, constants) for v, (b, length)
                                                      in self.shared.items() if v in self.shared_uses[entry]),
            "max-compute-invocations-per-workgroup": self.workgroup_size(entry, constants),
            "max-compute-workgroup-size-x": dims[0], "max-compute-workgroup-size-y": dims[1],
            "max-compute-workgroup-size-z": dims[2],
            "max-bind-groups": 1,  # every binding lives in @group(0)
        }


# --------------------------------------------------------------------------------------------
# kernels

class Kernel:
    """One compute entry point with its pipeline and explicit bind-group layout."""

    def __init__(self, gpu: "GPU", file: str, entry: str, constants: dict | None = None):
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


class Plan:
    """A fixed list of dispatches, encoded into one compute pass (and one submit by `GPU.run`).

    Build with `plan.add(kernel, grid, params, **bindings)`; each dispatch gets its own 256-byte
    slot in the plan's uniform arena, written once at `finalize()` (done lazily by the first run).
    """

    def __init__(self, gpu: "GPU", label: str):
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
        entries = []
        align = self.gpu.limits["min-storage-buffer-offset-alignment"]
        max_bind = self.gpu.limits["max-storage-buffer-binding-size"]
        for b, kind, name in kernel.bindings:  # bindings the entry point does not use are not in its layout
            if kind == "uniform":
                entries.append((b, None))
                continue
            r = bindings.get(name)
            if r is None:  # unused by this entry point; read-only and writable get separate dummies
                dummy = self.gpu.dummy if kind == "read_write" else self.gpu.dummy_ro
                entries.append((b, {"buffer": dummy.raw, "offset": 0, "size": dummy.nbytes}))
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
            entries.append((b, {"buffer": r.buffer.raw, "offset": start, "size": size}))
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
        self.gpu.queue.write_buffer(self.arena.raw, 0, bytes(blob))
        for i, (kernel, grid, entries) in enumerate(self._pending):
            resolved = []
            for b, res in entries:
                if res is None:
                    res = {"buffer": self.arena.raw, "offset": i * PARAMS_SLOT, "size": len(self._params[i])}
                resolved.append({"binding": b, "resource": res})
            bg = self.gpu.device.create_bind_group(layout=kernel.layout, entries=resolved,
                                                   label=f"{self.label}/{i}:{kernel.label}")
            self.dispatches.append(Dispatch(kernel, bg, grid, self._infos[i]))
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
            probe.dispatches.append(Dispatch(d.kernel, d.bind_group, tuple(g), d.info))
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


# --------------------------------------------------------------------------------------------
# the device

# WebGPU's default limits: what every conformant implementation guarantees (browsers, phones,
# SwiftShader, several laptop GPUs offer no more). PUFFGPU_LIMITS=webgpu requests exactly these, so a
# test or a run behaves as the most constrained conformant device would. "min-*" alignments are the
# smallest offset multiple allowed: there the default is the largest value, elsewhere the smallest.
WEBGPU_LIMITS = {
    "max-storage-buffers-per-shader-stage": 8,
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-compute-workgroups-per-dimension": 65535,
    "max-bind-groups": 4,
    "max-storage-buffer-binding-size": 134217728,
    "max-uniform-buffer-binding-size": 65536,
    "max-buffer-size": 268435456,
    "min-storage-buffer-offset-alignment": 256,
    "min-uniform-buffer-offset-alignment": 256,
}
# the limits the runtime requests at the adapter's own values when no PUFFGPU_LIMITS is set
ADAPTER_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension",
                  "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x",
                  "max-storage-buffers-per-shader-stage", "max-compute-workgroup-storage-size")


def limits_mode() -> str:
    """PUFFGPU_LIMITS: 'adapter' (default: the adapter's own limits) or 'webgpu' (WebGPU's defaults)."""
    mode = os.environ.get("PUFFGPU_LIMITS", "").strip().lower() or "adapter"
    if mode not in ("adapter", "webgpu"):
        raise GPUError(f"PUFFGPU_LIMITS={mode!r}: use 'webgpu' (WebGPU's default limits, what every conformant "
                       f"implementation guarantees) or leave it unset (the adapter's own limits)")
    return mode


def requested_limits(adapter_limits) -> dict:
    """The limits to request from an adapter with these limits, under PUFFGPU_LIMITS."""
    if limits_mode() == "adapter":
        return {k: adapter_limits[k] for k in ADAPTER_LIMITS}
    short = [f"{k} {adapter_limits[k]} (WebGPU guarantees {v})" for k, v in WEBGPU_LIMITS.items()
             if k in adapter_limits and (adapter_limits[k] < v if not k.startswith("min-") else adapter_limits[k] > v)]
    if short:
        raise GPUError("PUFFGPU_LIMITS=webgpu: this adapter offers less than WebGPU's defaults: " + ", ".join(short))
    return dict(WEBGPU_LIMITS)


def disabled_features() -> set[str]:
    """Features named in PUFFGPU_DISABLE_FEATURES (comma list): the runtime acts as if the adapter lacked them."""
    raw = os.environ.get("PUFFGPU_DISABLE_FEATURES", "")
    names = {f.strip().lower() for f in raw.split(",") if f.strip()}
    aliases = {"subgroups": "subgroup", "timestamps": "timestamp-query", "f16": "shader-f16"}
    return {aliases.get(n, n) for n in names}


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
        self.dummy = self.buffer(256, "dummy")  # bound where an entry point leaves a binding unused
        self.dummy_ro = self.buffer(256, "dummy (read-only)")
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
            self._kernels[key] = Kernel(self, file, entry, constants)
            _record_kernel(file, entry, constants)
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
            self.queue.write_buffer(buf.raw, 0, data)
        return buf

    def upload(self, dst: Range | Buffer, data: np.ndarray):
        dst = dst if isinstance(dst, Range) else dst.range()
        data = np.ascontiguousarray(data)
        if data.nbytes > dst.nbytes:
            raise GPUError(f"upload of {data.nbytes} B does not fit range of {dst.nbytes} B in {dst.buffer.label!r}")
        self.queue.write_buffer(dst.buffer.raw, dst.offset, data)

    def zero(self, dst: Range | Buffer, encoder=None):
        dst = dst if isinstance(dst, Range) else dst.range()
        if dst.offset % 4 or dst.nbytes % 4:
            raise GPUError("zero() needs 4-byte aligned ranges")
        enc = encoder or self.device.create_command_encoder(label="zero")
        enc.clear_buffer(dst.buffer.raw, dst.offset, dst.nbytes)
        if encoder is None:
            self.queue.submit([enc.finish()])

    def _staging_for(self, nbytes: int):
        if self._staging is None or self._staging.size < nbytes:
            size = max(nbytes, 1 << 16)
            self._staging = self.device.create_buffer(size=(size + 3) // 4 * 4, label="readback staging",
                                                      usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        return self._staging

    def read(self, src: Range | Buffer, dtype=np.float32) -> np.ndarray:
        return self.run(None, read=src, dtype=dtype)

    def run(self, plans, read: Range | Buffer | None = None, dtype=np.float32, before=None):
        """Encode `plans` into one compute pass, optionally copy `read` to staging, submit once.

        `before(encoder)` may record copies that precede the pass. Returns the read data (a numpy
        copy) or None. Without a read, returns without waiting for the GPU.
        """
        enc = self.device.create_command_encoder(label="puffgpu.run")
        if before is not None:
            before(enc)
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
            return None
        staging.map_sync(wgpu.MapMode.READ, 0, read.nbytes)
        try:
            data = np.frombuffer(staging.read_mapped(0, read.nbytes, copy=True), dtype=dtype).copy()
        finally:
            staging.unmap()
        return data

    def sync(self):
        """Wait for all submitted work (wgpu-py 0.32's on_submitted_work_done_sync is broken: map instead)."""
        self.read(self.dummy.range(0, 4))


def _record_kernel(file: str, entry: str, constants: dict):
    """With PUFFGPU_RECORD_KERNELS=path, append every pipeline this process builds to that JSON-lines file
    (tools/wgsl_check.py compiles the recorded set with other WGSL compilers). One short write per line,
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
