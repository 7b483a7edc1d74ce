"""Adapter policy: which adapter to use, which optional features to request, which limits to ask for."""
from __future__ import annotations

import os

import wgpu

from .errors import GPUError

OPTIONAL_FEATURES = ("timestamp-query", "subgroup")  # requested when the adapter has them; never required

INSTALL_HINT = (
    "No GPU adapter found. puffgpu needs a WebGPU-capable driver:\n"
    "  - Debian/Ubuntu without a GPU: `sudo apt-get install mesa-vulkan-drivers` (lavapipe, a CPU Vulkan driver)\n"
    "  - a machine with a GPU: install its Vulkan driver (Linux), or use Metal (macOS) / DX12 (Windows).\n"
    "Check with: python -c \"import wgpu; print(wgpu.gpu.enumerate_adapters_sync())\""
)



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
