"""Every kernel the trainer can build, for the limits report (tools/gpu_report.py) and the
WebGPU-floor test: each variant of the matmul and MinGRU tables with its override constants, and every
other entry point of shaders/ at its defaults."""
from __future__ import annotations

from ..gpu import SHADER_DIR, ShaderFile
from . import matmul, mingru


def entry_points() -> list[tuple[str, str, dict]]:
    """(shader file, entry point, override constants) of every kernel."""
    out = [(v.file, v.entry.format(form=form), dict(v.constants)) for fam, forms in
           ((matmul, matmul.FORMS), (mingru, mingru.FORMS)) for v in fam.VARIANTS for form in forms]
    seen = {(f, e) for f, e, _ in out}
    for path in sorted(SHADER_DIR.glob("*.wgsl")):
        out += [(path.name, e, {}) for e in ShaderFile.load(path.name).workgroup if (path.name, e) not in seen]
    return out
