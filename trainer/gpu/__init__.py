"""GPU runtime: adapter selection, WGSL kernels, buffers and prebuilt dispatch plans.

The trainer imports everything from here (`from trainer.gpu import GPU, Plan, Range`); the modules
behind it, one job each:
    adapters  which adapter, which optional features, which limits (PUFFGPU_ADAPTER, _LIMITS, ...)
    wgsl      finding shaders/, the `#include` preprocessor, what an entry point binds and needs
    plan      Buffer, Range, Kernel and Plan, and the check that a dispatch's bindings are ones a
              strict WebGPU accepts (no writable binding overlapping another; Dawn checks it, wgpu-native not)
    device    GPU: the device and queue, buffer helpers, the kernel cache, `run`
    record    plan recordings (PUFFGPU_RECORD_PLAN): a process's GPU work, replayable on Dawn
    errors    GPUError

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

import os
import sys
from pathlib import Path

if sys.platform.startswith("linux") and not os.environ.get("XDG_RUNTIME_DIR"):
    # Mesa's Vulkan drivers print "XDG_RUNTIME_DIR is invalid or not set" on every adapter query of
    # a headless machine; a private runtime dir keeps the trainer's output clean.
    _rt = Path(f"/tmp/puffgpu-runtime-{os.getuid()}")
    _rt.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(_rt)

import wgpu  # noqa: E402  (tests reach wgpu.gpu through this module)

from .adapters import (ADAPTER_LIMITS, GL_NOTE, INSTALL_HINT, OPTIONAL_FEATURES, WEBGPU_LIMITS,  # noqa: E402
                       choose_adapter, disabled_features, is_gl, limits_mode, requested_limits, usable_adapters)
from .device import GPU, get_gpu  # noqa: E402
from .errors import GPUError  # noqa: E402
from .plan import (PARAMS_SLOT, STORAGE, Buffer, Dispatch, DispatchInfo, Kernel, Plan, Range,  # noqa: E402
                   _native_pass_functions)
from .wgsl import SHADER_DIR, SUBGROUP_DIRECTIVE, ShaderFile  # noqa: E402

__all__ = ["ADAPTER_LIMITS", "GL_NOTE", "INSTALL_HINT", "OPTIONAL_FEATURES", "WEBGPU_LIMITS", "choose_adapter",
           "disabled_features", "is_gl", "limits_mode", "requested_limits", "usable_adapters", "GPU", "get_gpu",
           "GPUError", "PARAMS_SLOT", "STORAGE", "Buffer", "Dispatch", "DispatchInfo", "Kernel", "Plan", "Range",
           "_native_pass_functions", "SHADER_DIR", "SUBGROUP_DIRECTIVE", "ShaderFile", "wgpu"]
