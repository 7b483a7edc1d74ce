"""Run the kernel goldens on a Vulkan adapter under the Khronos validation layer and account for every
message it prints.

    python checks/vulkan_validation.py                        # the goldens on lavapipe
    python checks/vulkan_validation.py --layer /path/to/libVkLayer_khronos_validation.so -- -k matmul

The layer library: --layer, else Debian's chromium-common copy (/usr/lib/chromium/). The tool writes
the small manifest the Vulkan loader needs into a temporary folder, sets VK_LAYER_PATH and
VK_INSTANCE_LAYERS, runs `pytest -s -k golden` (plus any arguments after --) with
PUFFGPU_RECORD_KERNELS on, and sorts the layer's messages.

Every message is an error, except one kind that comes from wgpu's WGSL-to-SPIR-V translator (naga,
wgpu-py 0.32) and that no WGSL can avoid: naga puts an ArrayStride decoration on every array type,
and a `var<workgroup>` array then carries an explicit layout that SPIR-V forbids in the Workgroup
storage class (VUID-StandaloneSpirv-None-10684). The layer reports it once per shader module, i.e.
once per pipeline of an entry point that uses workgroup memory (the fixed-order reductions and the
wgmem matmul). The check passes when every message is that one and there is exactly one per such
pipeline built during the run (the recording says which were built); docs/design.md keeps the
reproducer. Prints a table of messages by VUID, then
    vulkan validation: <adapter>: <n> messages, <k> from the translator (<p> workgroup-memory pipelines), <e> others
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainer.gpu import ShaderFile  # noqa: E402

CHROMIUM_LAYER = Path("/usr/lib/chromium/libVkLayer_khronos_validation.so")
_MESSAGE_RE = re.compile(r"Validation (Error|Warning): \[ ([^\]]+?) \]")


def manifest(layer: Path, folder: Path):
    """The loader's JSON manifest for the validation layer library."""
    text = json.dumps({"file_format_version": "1.2.0",
                       "layer": {"name": "VK_LAYER_KHRONOS_validation", "type": "GLOBAL", "library_path": str(layer),
                                 "api_version": "1.4.300", "implementation_version": "1",
                                 "description": "Khronos validation layer"}})
    (folder / "VkLayer_khronos_validation.json").write_text(text, encoding="utf-8")


def workgroup_pipelines(kernels_path: Path) -> int:
    """How many distinct pipelines (per process that built them) of the recording use workgroup memory.
    Each process records a pipeline once, as the layer sees one shader module per pipeline it builds."""
    count = 0
    for line in kernels_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            k = json.loads(line)
            if ShaderFile.load(k["file"]).needs(k["entry"], k["constants"])["max-compute-workgroup-storage-size"]:
                count += 1
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layer", type=Path, default=CHROMIUM_LAYER, help="libVkLayer_khronos_validation.so")
    ap.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = ap.parse_args()
    if not args.layer.is_file():
        sys.exit(f"vulkan_validation: no validation layer at {args.layer}; Debian's chromium-common ships one "
                 f"(`apt-get install chromium-common`), or pass --layer PATH")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        manifest(args.layer.resolve(), tmp)
        kernels = tmp / "kernels.jsonl"
        env = dict(os.environ, VK_LAYER_PATH=str(tmp), VK_INSTANCE_LAYERS="VK_LAYER_KHRONOS_validation",
                   PUFFGPU_RECORD_KERNELS=str(kernels))
        env.pop("VK_LOADER_LAYERS_DISABLE", None)
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-k", "golden",
                            *args.pytest_args], cwd=ROOT, env=env, capture_output=True, text=True)
        out = r.stdout + r.stderr
        summary = re.findall(r"^=* ?(\d+ passed.*?) ?=*$", r.stdout, re.M)
        tail = summary[-1] if summary else "(no pytest summary)"
        if r.returncode != 0:
            sys.exit(f"vulkan_validation: the goldens failed under the layer (exit {r.returncode}):\n{out[-3000:]}")
        expected = workgroup_pipelines(kernels) if kernels.is_file() else 0
    adapter = re.search(r"adapter: (.+)", out)
    found = Counter(m.group(2) for m in _MESSAGE_RE.finditer(out))
    # the translator's message names the storage class: only the Workgroup one is expected
    translator = len(re.findall(r"the Workgroup storage class has an explicit layout from the ArrayStride", out))
    others = sum(found.values()) - translator
    print(f"goldens: {tail}")
    for vuid, n in found.most_common():
        print(f"   {n:5d}  {vuid}")
    print(f"vulkan validation: {adapter.group(1) if adapter else 'unknown adapter'}: {sum(found.values())} messages, "
          f"{translator} from the translator ({expected} workgroup-memory pipelines), {others} others")
    if others or translator != expected:
        for block in re.findall(r"Validation (?:Error|Warning).*?(?=\n\n|\Z)", out, re.S)[:5]:
            print(block)
        sys.exit(1)


if __name__ == "__main__":
    main()
