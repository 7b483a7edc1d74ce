"""The project's import graph: cycles, layer violations, and what loads wgpu.

    python checks/import_graph.py            # prints the layers and any problem; exit 1 if there is one

Reads every module of puffbase/, trainer/, envs/, golden/, tools/ and checks/ with `ast` (nothing is
imported), so it counts imports inside functions too. The layers, bottom to top, and what each may
import from the project:

    util       puffbase.*                        (nothing: atomic writes, ini, console, images, cache folder)
    env base   envs.errors, envs.build.*, envs.kind, envs.interface, envs.supervisor
                                                 (util: errors, the one compile-and-cache path, what a
                                                 kind declares, the Env contract, the process supervisor)
    env kinds  envs.c.*, envs.js.*, envs.shm.*, envs.ddnet.*   (env base, util, and a kind they build on)
    registry   envs.registry, the envs package   (the kinds: the one place that tells them apart)
    pure       trainer.spec, trainer.metrics, trainer.config, trainer.checkpoint, trainer.distributed
               (registry, ...)
    runtime    trainer.gpu                       (nothing from trainer above util)
    kernels    trainer.kernels.*                 (runtime, pure)
    model      trainer.policy, trainer.learner   (kernels, runtime, pure)
    tuner      trainer.autotune                  (kernels, runtime, pure)
    top        trainer.run, eval, sweep, loggers, dashboard; envs.play, envs.viewer, envs.archive
               (programs); golden.*, tools.*, checks.*

A module may import its own layer or those below, never above; nothing at or below pure loads wgpu.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("puffbase", "trainer", "envs", "golden", "tools", "checks")
SCRIPTS = ("tools", "checks")  # folders of scripts, not packages
LAYERS = {  # module (or package prefix) -> layer number
    "puffbase": 0,
    "envs.errors": 1, "envs.build": 1, "envs.kind": 1, "envs.interface": 1, "envs.supervisor": 1,
    # the env kinds (2): every package of envs/ that declares one in its kind.py, below
    "envs.registry": 3, "envs": 3,
    "trainer.spec": 4, "trainer.metrics": 4, "trainer.config": 4, "trainer.checkpoint": 4, "trainer.distributed": 4,
    "trainer.gpu": 5, "trainer.kernels": 6, "trainer.policy": 7, "trainer.learner": 7, "trainer.autotune": 8,
    # programs (wgpu draws the viewer's window), not library code
    "envs.viewer": 9, "envs.play": 9, "envs.archive": 9,
}
LAYERS.update({f"envs.{d.name}": 2 for d in sorted((ROOT / "envs").iterdir()) if (d / "kind.py").is_file()})
TOP = 9
PURE = 4  # this layer and those below never load wgpu


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[module_name(path)] = path
    return out


def imports_of(name: str, path: Path, known: dict) -> set[str]:
    """Project modules `name` imports (resolving relative imports and `from pkg import module`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = here[:len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join(up + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            folder = name.split(".")[0]
            if folder in SCRIPTS and t in {m.split(".", 1)[1] for m in known if m.startswith(folder + ".")}:
                t = f"{folder}.{t}"  # the scripts of tools/ and checks/ import each other as top-level modules
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def layer(name: str) -> int:
    best = None
    for prefix, n in LAYERS.items():
        if name == prefix or name.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, n)
    return best[1] if best else TOP


def loads_wgpu(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any((isinstance(n, ast.Import) and any(a.name == "wgpu" for a in n.names))
               or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "wgpu") for n in ast.walk(tree))


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2
    for n in sorted(graph):
        if n not in state:
            visit(n)
    return cycles


def main() -> int:
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    problems = []
    for cycle in find_cycles(graph):
        problems.append("cycle: " + " → ".join(cycle))
    for name, deps in graph.items():
        for d in deps:
            if layer(d) > layer(name) and not d.startswith(name + "."):
                problems.append(f"{name} (layer {layer(name)}) imports {d} (layer {layer(d)}), a layer above it")
    # what each pure module pulls in, transitively: never wgpu
    for name in known:
        if layer(name) > PURE:
            continue
        seen, todo = set(), [name]
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            todo += graph[m]
        heavy = sorted(m for m in seen if loads_wgpu(known[m]))
        if heavy:
            problems.append(f"{name} is pure but loads wgpu through {', '.join(heavy)}")
    for n in range(TOP + 1):
        members = sorted(m for m in known if layer(m) == n and not m.startswith(("tools", "checks", "golden")))
        print(f"layer {n}: {', '.join(members)}")
    print(f"{len(known)} modules, {sum(len(d) for d in graph.values())} project imports, "
          f"{len(find_cycles(graph))} cycles")
    for p in problems:
        print("PROBLEM " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
