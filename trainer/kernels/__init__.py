"""Kernel families: one module per `shaders/<family>.wgsl`, owning that file's launchers.

A launcher is a Python function with the same name as its WGSL entry point. It checks shapes
against the ranges it is given (so an out-of-bounds plan fails at build time with the kernel's
name, not as garbage on the GPU), computes the grid and records the dispatch's shape (invocations
in flight, longest serial loop per invocation, work) for the dispatch-shape report.

Families with several correct implementations (matmul, mingru) declare each one ONCE as a
`Variant` in their module's `FAMILY`: name, shader file, entry point, workgroup, outputs per
invocation, split-K, required features, the operand layout it needs, and how to compute its
dispatch shape. Everything that chooses or reports variants reads that table: the tuner
(trainer/autotune.py), `--kernels` pins, the dispatch-shape report (tools/dispatch_report.py) and
the tests. A choice is a `Choice` (variant + splits of K); its text form `name` or `name/sN` is
parsed in one place, `Family.parse`.

Which variant a launcher uses, when the caller does not name one, is `gpu.chooser`'s answer: the
tuner installs itself there (`trainer.autotune.attach(gpu)`); without one, the family's static
default applies (lavapipe's kernels on lavapipe, the GPU rule elsewhere). The runtime never
imports the tuner.

Adding a family: one `.wgsl` file in shaders/, one module here with its launchers (and a
`Family` if it has variants), goldens in golden/ref/<family>.py (registered in golden/make_golden.py) and a test.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..gpu import GPUError, Range

# The dispatch-shape rule for GPUs: a dispatch is *heavy* when its work (multiply-adds of a matmul;
# state updates or elements read/written by the other kernels) is at least HEAVY_WORK; a heavy
# dispatch should keep >= GPU_MIN_INVOCATIONS invocations in flight and run <= GPU_MAX_SERIAL
# iterations of its longest loop per invocation (a GPU hides memory latency with many invocations;
# long serial loops leave most of it idle).
HEAVY_WORK = 1 << 20
GPU_MIN_INVOCATIONS = 16 * 1024
GPU_MAX_SERIAL = 1024
# lavapipe stops an invocation after 65,535 loop iterations in total, silently: stay below it
MAX_LOOP = 60000


# The columns of a rollout transition row, in order (shaders/transitions.wgsl's TR_* constants): one
# [N·T, len(TRANSITION)] f32 buffer holds every per-element scalar of the rollout, so the per-element
# kernels (rollout_store, sample_actions, compute_advantage, ppo_loss) each bind it once.
TRANSITION = ("logprob", "value", "reward", "terminal", "advantage", "return")
TR_WIDTH = len(TRANSITION)


def tr_column(name: str) -> int:
    """The index of a transition column ('logprob', 'value', …)."""
    return TRANSITION.index(name)


def pack_transitions(rows: int, fill: float = np.nan, **columns) -> np.ndarray:
    """[rows, TR_WIDTH] float32 transition rows holding the given columns (e.g. logprob=…, reward=…, each
    [rows] or broadcastable) and `fill` elsewhere (NaN by default: a kernel that reads a column it was
    not given, or leaves an output column unwritten, shows up)."""
    unknown = set(columns) - set(TRANSITION)
    if unknown:
        raise ValueError(f"unknown transition columns {sorted(unknown)}; the columns are {list(TRANSITION)}")
    out = np.full((rows, TR_WIDTH), fill, np.float32)
    for name, v in columns.items():
        out[:, tr_column(name)] = np.asarray(v, np.float32).reshape(-1)
    return out


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def need(label: str, name: str, r: Range, elems: int):
    """Fail unless range `r` holds at least `elems` float32 (or u32) elements."""
    if r.count < elems:
        raise GPUError(f"{label}: {name} needs {elems} floats but its range in {r.buffer.label!r} holds {r.count}")


def need_heads(label: str, spec, *, logstd: Range | None, mask: Range | None, rows: int):
    """Shape checks shared by the launchers that read the action heads (sample, advantage, ppo)."""
    if spec.Kc and logstd is None:
        raise GPUError(f"{label}: heads {list(spec.act_sizes)} have {spec.Kc} continuous heads, so logstd is needed")
    if logstd is not None:
        need(label, "logstd", logstd, spec.Kc)
    if mask is not None:
        need(label, "mask", mask, rows * spec.mask_words)


# ------------------------------------------------------------------------------------ variants

@dataclass(frozen=True)
class Variant:
    """One implementation of a kernel family, declared once in the family's table.

    entry: the WGSL entry point, `{form}` standing for the product's form or the family's entry
    (e.g. "{form}_tile" → matmul_forward_tile). constants: `override` values set at pipeline
    creation. block: outputs (rows, cols) per invocation. layout: the name of the shape flag that
    must be true for this variant's loads (e.g. "vec4"), with `layout_hint` saying what it needs.
    base: the name a pin may use for this variant and its siblings that differ only in load width
    (pins prefer the widest that applies). geometry: computes grid, invocations and serial loop.
    """
    family: str
    name: str
    file: str
    entry: str
    workgroup: tuple[int, int, int]
    block: tuple[int, int]
    geometry: "Geometry"
    constants: tuple[tuple[str, int], ...] = ()
    features: tuple[str, ...] = ()
    splitk: bool = False
    layout: str | None = None
    layout_hint: str = ""
    base: str = ""
    bindings: tuple[tuple[str, str], ...] = ()  # (launcher operand name, WGSL binding name) renames
    unbound: tuple[str, ...] = ()  # bindings the entry point declares but this variant leaves unbound
    max_work: int | None = None  # a timing candidate only for shapes with at most this much work

    @property
    def invocations_per_workgroup(self) -> int:
        x, y, z = self.workgroup
        return x * y * z

    def entry_for(self, form: str) -> str:
        return self.entry.format(form=form)

    def kernel(self, gpu, form: str, **constants):
        """The pipeline for `form`, with this variant's override constants and `constants` (e.g. Z_IS_Y)."""
        return gpu.kernel(self.file, self.entry_for(form), **dict(self.constants), **constants)

    def unavailable(self, shape, gpu) -> str | None:
        """None when this variant can run `shape` on `gpu`, else the reason it cannot."""
        for f in self.features:
            if not gpu.has(f):
                why = "disabled by PUFFGPU_DISABLE_FEATURES" if f in gpu.disabled else "which this adapter lacks"
                return f"the {self.name} kernels ({self.file}) need the {f!r} feature, {why}"
        if self.layout and not getattr(shape, self.layout):
            return f"the {self.name} kernel {self.layout_hint}"
        return None

    def bind(self, ranges: dict) -> dict:
        """The launcher's operands under this variant's binding names."""
        ren = dict(self.bindings)
        return {**{name: None for name in self.unbound}, **{ren.get(k, k): v for k, v in ranges.items()}}


class Geometry:
    """How a variant maps a shape onto workgroups; subclasses per kernel shape."""

    def grid(self, shape, splits: int) -> tuple[int, int, int]:
        raise NotImplementedError

    def invocations(self, shape, splits: int) -> int:
        raise NotImplementedError

    def serial(self, shape, kc: int) -> int:
        raise NotImplementedError

    def loops(self, serial: int) -> int:
        """Loop iterations one invocation runs in all (lavapipe's limit counts them all)."""
        return serial

    def add(self, plan, variant: "Variant", shape, operands: dict, params: dict, splits: int, constants=None):
        """Add the variant's dispatch(es) for `shape` to `plan`, recording each one's shape."""
        raise NotImplementedError


@dataclass(frozen=True)
class Choice:
    """A variant and the number of chunks K is split into (1: no split-K)."""
    variant: Variant
    splits: int = 1

    def __str__(self) -> str:
        return self.variant.name if self.splits <= 1 else f"{self.variant.name}/s{self.splits}"


@dataclass
class Family:
    """A kernel family's variant table and the choices that read it.

    default(shape, gpu): the choice without timing; gpu_rule(shape): the static choice for a real
    GPU (also what the dispatch-shape report checks); candidates(shape, gpu): every applicable
    choice worth timing; rule_splits(variant, shape): the splits of K a pin without /sN gets."""
    name: str
    variants: tuple[Variant, ...]
    default: Callable
    gpu_rule: Callable
    candidates: Callable
    rule_splits: Callable = lambda variant, shape: 1

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise GPUError(f"{self.name} variant must be one of {', '.join(v.name for v in self.variants)}, got {name!r}")

    def parse(self, text: str) -> Choice:
        """'tile4x4_vec4/s8' → Choice(tile4x4_vec4, 8); the one place a choice's text is read."""
        name, _, s = str(text).partition("/s")
        variant = self.variant(name.strip())
        if s and (not s.isdigit() or int(s) < 1):
            raise GPUError(f"{self.name} choice {text!r}: /sN needs a positive number N of splits of K")
        splits = int(s or 1)
        if splits > 1 and not variant.splitk:
            raise GPUError(f"{self.name} choice {text!r}: split-K needs one of "
                           f"{', '.join(v.name for v in self.variants if v.splitk)}")
        return Choice(variant, splits)

    def check_pin(self, text: str):
        """Validate a pin's text without a shape (at startup): a variant name or base, /sN optional."""
        name, _, s = str(text).partition("/s")
        names = {v.name for v in self.variants} | {v.base for v in self.variants if v.base}
        if name.strip() not in names:
            raise GPUError(f"PUFFGPU_KERNELS/--kernels: {self.name}={text!r}: the variant must be one of "
                           f"{', '.join(sorted(names))}" + (" (a name without _vec4 uses vec4 loads where they "
                                                            "apply)" if any(v.base for v in self.variants) else "")
                           + (", optionally with /sN splits of K" if any(v.splitk for v in self.variants) else ""))
        if s and (not s.isdigit() or int(s) < 1):
            raise GPUError(f"PUFFGPU_KERNELS/--kernels: {self.name}={text!r}: /sN needs a positive N")

    def pin(self, text: str, shape, gpu) -> Choice:
        """The choice a pin names for this shape: its variant, or the widest sibling (same base) that
        applies; splits from the pin or, for split-K variants, the GPU rule's."""
        self.check_pin(text)
        name, _, s = str(text).partition("/s")
        name = name.strip()
        base = next((v.base or v.name for v in self.variants if v.name == name), name)
        group = [v for v in self.variants if (v.base or v.name) == base]
        reasons = []
        for v in sorted(group, key=lambda v: v.layout is None):  # layout-restricted (wider loads) first
            why = v.unavailable(shape, gpu)
            if why is None:
                splits = int(s) if s else self.rule_splits(v, shape)
                return Choice(v, splits if v.splitk else 1)
            reasons.append(why)
        raise GPUError(f"PUFFGPU_KERNELS/--kernels pins {self.name}={text}, but for {shape.label()}: {reasons[-1]}")


def choose(gpu, family: Family, shape, bench) -> Choice:
    """gpu.chooser's answer (the tuner, when one is attached), else the family's static default.

    bench(choice, reps, bufs) → (plan, bufs) builds `reps` copies of the kernel for `shape` on
    scratch buffers, for a chooser that times candidates (never on live data)."""
    chooser = getattr(gpu, "chooser", None)
    return family.default(shape, gpu) if chooser is None else chooser.choose(family, shape, bench)
