"""Compile every shader module and create every pipeline puffgpu builds with Dawn/Tint, Chrome's WebGPU,
a second WGSL compiler beside wgpu's naga. Any error or warning (Tint's uniformity analysis included)
fails the check.

    python checks/wgsl_check.py                          # the pipelines of the goldens and the smoke runs
    PUFFGPU_RECORD_KERNELS=k.jsonl python -m pytest     # record what the whole suite builds, then
    python checks/wgsl_check.py --kernels k.jsonl        # ... check exactly that set

Which pipelines: with --kernels, the (file, entry point, constants) lines a run wrote with
PUFFGPU_RECORD_KERNELS (trainer/gpu/device.py records every pipeline it builds); without it, this tool runs
`pytest -k "golden or smoke_run"` with recording on. Each file goes to Tint as the runtime's loader
gives it for Tint (includes expanded, `enable subgroups;` first where it uses subgroups), and each
pipeline is created with its override constants and 'auto' layout on a device with WebGPU's default
limits.

Needs Node.js and npm's `webgpu` package (prebuilt dawn.node): `npm install --prefix DIR webgpu@0.6.2`,
then --dawn DIR (or PUFFGPU_DAWN_DIR; default: <puffgpu cache>/dawn). Dawn needs a Vulkan driver it
accepts: it refuses Mesa 22.3's lavapipe; SwiftShader (Debian's chromium-common) works, and is used
when VK_ICD_FILENAMES is unset and /usr/lib/chromium/vk_swiftshader_icd.json exists.
Prints one line per module and failing pipeline, then
    tint: <adapter>: <m>/<M> modules, <p>/<P> pipelines, <e> errors, <w> warnings
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from puffbase.cache import cache_root  # noqa: E402
from trainer.gpu import ShaderFile  # noqa: E402

DAWN_PACKAGE = "webgpu@0.6.2"
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")


def record_suite(path: Path):
    """Run the goldens and the smoke runs with PUFFGPU_RECORD_KERNELS=path."""
    env = dict(os.environ, PUFFGPU_RECORD_KERNELS=str(path))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "golden or smoke_run"],
                       cwd=ROOT, env=env)
    if r.returncode != 0:
        sys.exit(f"wgsl_check: the recording run of the goldens failed (exit {r.returncode})")


def read_kernels(path: Path) -> list[dict]:
    """The distinct recorded pipelines, in a stable order."""
    seen = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            k = json.loads(line)
            key = (k["file"], k["entry"], tuple(sorted(k["constants"].items())))
        except (ValueError, KeyError, AttributeError) as e:
            sys.exit(f"{path}:{n}: not a recorded pipeline line ({e}): {line[:120]!r}")
        seen[key] = k
    return [seen[k] for k in sorted(seen, key=repr)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=Path, help="recorded pipelines (PUFFGPU_RECORD_KERNELS); default: record the goldens")
    ap.add_argument("--dawn", type=Path, default=None, help="folder with node_modules/webgpu (default: PUFFGPU_DAWN_DIR "
                                                            "or <puffgpu cache>/dawn)")
    args = ap.parse_args()
    dawn = args.dawn or Path(os.environ.get("PUFFGPU_DAWN_DIR") or cache_root() / "dawn")
    if not (dawn / "node_modules" / "webgpu" / "index.js").is_file():
        sys.exit(f"wgsl_check: no npm package `webgpu` under {dawn}; install it with\n"
                 f"    npm install --prefix {dawn} {DAWN_PACKAGE}\nor point --dawn / PUFFGPU_DAWN_DIR at a folder that has it")
    node = shutil.which("node")
    if node is None:
        sys.exit("wgsl_check: needs Node.js (`node` on PATH) to run Dawn")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        kernels_path = args.kernels
        if kernels_path is None:
            kernels_path = tmp / "kernels.jsonl"
            record_suite(kernels_path)
        kernels = read_kernels(kernels_path)
        if not kernels:
            sys.exit(f"wgsl_check: {kernels_path} records no pipelines")
        files = {f: ShaderFile.load(f) for f in sorted({k["file"] for k in kernels})}
        job = {"modules": {f: sf.code("tint") for f, sf in files.items()},
               "pipelines": kernels,
               "features": ["subgroups"] if any(sf.uses_subgroups for sf in files.values()) else []}
        (tmp / "job.json").write_text(json.dumps(job), encoding="utf-8")
        env = dict(os.environ)
        if "VK_ICD_FILENAMES" not in env and SWIFTSHADER_ICD.is_file():
            env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
        env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
        r = subprocess.run([node, str(ROOT / "checks" / "tint_check.mjs"), str(dawn), str(tmp / "job.json"),
                            str(tmp / "result.json")], env=env, capture_output=True, text=True)
        if r.returncode != 0 or not (tmp / "result.json").is_file():
            sys.exit(f"wgsl_check: Dawn did not run (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        result = json.loads((tmp / "result.json").read_text(encoding="utf-8"))

    errors = warnings = 0
    for f, messages in result["modules"].items():
        e = sum(m["type"] == "error" for m in messages)
        w = len(messages) - e
        errors, warnings = errors + e, warnings + w
        n = sum(k["file"] == f for k in kernels)
        print(f"{f}: {'ok' if not messages else f'{e} errors, {w} warnings/infos'}, {n} pipelines")
        for m in messages:
            print(f"   {f}:{m.get('line', '?')}:{m.get('col', '?')}: {m['type']}: {m['message']}")
    failed = [p for p in result["pipelines"] if p["error"]]
    for p in failed:
        print(f"   pipeline {p['file']}:{p['entry']} {p['constants']}: {p['error']}")
    for msg in result["uncaptured"]:
        print(f"   uncaptured error: {msg}")
    errors += len(failed) + len(result["uncaptured"])
    a = result["adapter"]
    name = a.get("description") or a.get("device") or a.get("vendor") or "unknown adapter"
    ok_modules = sum(not m for m in result["modules"].values())
    print(f"tint: Dawn on {name}: {ok_modules}/{len(result['modules'])} modules, "
          f"{len(kernels) - len(failed)}/{len(kernels)} pipelines, {errors} errors, {warnings} warnings")
    sys.exit(1 if errors or warnings else 0)


if __name__ == "__main__":
    main()
