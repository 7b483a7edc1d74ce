"""The WGSL side of the runtime: finding shaders/, the `#include` preprocessor, and what a kernel needs
read from its file (bindings, Params, which bindings each entry point uses, workgroup sizes and memory)."""
from __future__ import annotations

import importlib.resources
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import GPUError


def _find_shader_dir() -> Path:
    """shaders/ of a checkout or editable install, or trainer/shaders of an installed wheel."""
    here = Path(__file__).resolve().parent.parent  # the trainer package
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
