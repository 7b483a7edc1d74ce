"""Plan recordings: a process's GPU work, as issued, in files any WebGPU implementation can replay.

With PUFFGPU_RECORD_PLAN=FOLDER, every GPU object of the process writes FOLDER/<pid>-<n>.plan/ (one per
GPU, renamed into place when it closes: at exit, or `GPU.recorder.close()`):

    events.jsonl   a header line, then one JSON event per line, in the order the work was issued:
                   buffer, free, module, kernel, write, clear, plan, submit (with the bytes read), mark
    data.bin       the bytes of every upload and read back, referred to by the events' "data"

The format, event by event, is docs/design.md's "Plan recordings". tools/plan_export.py gives reads their
tolerances; tools/dawn_replay.mjs replays recordings on Dawn.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import weakref
import zlib
from pathlib import Path

import numpy as np
import wgpu

FORMAT, VERSION = "puffgpu-plan", 1
_USAGE = {"storage": wgpu.BufferUsage.STORAGE, "uniform": wgpu.BufferUsage.UNIFORM,
          "copy_src": wgpu.BufferUsage.COPY_SRC, "copy_dst": wgpu.BufferUsage.COPY_DST}
_COMPRESS_MIN = 4096  # blobs smaller than this are stored raw


def recorder_for(gpu) -> "Recorder | None":
    """A Recorder for a new GPU when PUFFGPU_RECORD_PLAN names a folder, else None."""
    folder = os.environ.get("PUFFGPU_RECORD_PLAN")
    if not folder:
        return None
    Recorder.count += 1
    return Recorder(Path(folder) / f"{os.getpid()}-{Recorder.count}.plan", gpu)


class Recorder:
    """Writes one GPU's work to `path` (see the module docstring); the runtime calls it at each step."""
    count = 0

    def __init__(self, path: Path, gpu):
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True)
        self.events = open(self.tmp / "events.jsonl", "w", encoding="utf-8")
        self.data = open(self.tmp / "data.bin", "wb")
        self.n_events = 0
        self.ids = {"buffer": 0, "kernel": 0, "plan": 0}
        self.modules: set[str] = set()
        self.plans: dict[int, tuple[int, int]] = {}  # id(plan) -> (plan id, dispatches recorded)
        self.last: dict[tuple, int] = {}  # (buffer id, offset, size) -> event index of its latest write/read
        self.closed = False
        header = {"format": FORMAT, "version": VERSION, "adapter": gpu.describe(), "limits": gpu.limits,
                  "limits_mode": gpu.limits_mode, "features": sorted(gpu.features)}
        self.events.write(json.dumps(header, sort_keys=True) + "\n")
        atexit.register(self.close)

    def _event(self, kind: str, **fields) -> int:
        if self.closed:
            return -1
        self.events.write(json.dumps({"e": kind, **fields}, separators=(",", ":")) + "\n")
        self.n_events += 1
        return self.n_events - 1

    def _blob(self, raw: bytes) -> list[int]:
        at = self.data.tell()
        stored = zlib.compress(raw, 1) if len(raw) >= _COMPRESS_MIN else raw
        if len(stored) >= len(raw):
            stored = raw
        self.data.write(stored)
        return [at, len(raw), len(stored)]

    def _id(self, kind: str) -> int:
        self.ids[kind] += 1
        return self.ids[kind] - 1

    # the runtime's hooks ----------------------------------------------------------------------
    def buffer(self, buf) -> int:
        rid = self._id("buffer")
        usage = [name for name, flag in _USAGE.items() if buf.raw.usage & flag]
        self._event("buffer", id=rid, label=buf.label, size=buf.raw.size, usage=usage)
        weakref.finalize(buf, self._free, rid).atexit = False
        return rid

    def _free(self, rid: int):
        self._event("free", buffer=rid)

    def kernel(self, kernel) -> int:
        if kernel.file not in self.modules:
            self.modules.add(kernel.file)
            self._event("module", file=kernel.file, code=kernel.shader.code("tint"))
        rid = self._id("kernel")
        self._event("kernel", id=rid, file=kernel.file, entry=kernel.entry, constants=kernel.constants,
                    label=kernel.label, bindings=[[b, kind] for b, kind, _ in kernel.bindings])
        return rid

    def write(self, buf, offset: int, data: np.ndarray | bytes):
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        i = self._event("write", buffer=buf.rid, offset=offset, data=self._blob(raw))
        self.last[(buf.rid, offset, len(raw))] = i

    def clear(self, buf, offset: int, size: int):
        i = self._event("clear", buffer=buf.rid, offset=offset, size=size)
        self.last[(buf.rid, offset, size)] = i

    def _plan(self, plan) -> int:
        pid, done = self.plans.get(id(plan), (None, -1))
        if done != len(plan.dispatches):
            if pid is None:
                pid = self._id("plan")
                weakref.finalize(plan, self.plans.pop, id(plan), None).atexit = False
            self.plans[id(plan)] = (pid, len(plan.dispatches))
            self._event("plan", id=pid, label=plan.label, dispatches=[
                {"kernel": d.kernel.rid, "grid": list(d.grid),
                 "bind": [[b, buf.rid, start, size] for b, buf, start, size in d.bindings]}
                for d in plan.dispatches])
        return pid

    def mark(self, name: str, family: str | None = None):
        """Where a part of the run begins (`family`: the golden family whose tolerances its reads take)."""
        self._event("mark", name=name, **({"family": family} if family else {}))

    def submit(self, plans, read=None, dtype=None, data: np.ndarray | None = None):
        ids = [self._plan(p) for p in plans or ()]
        rd = None
        if read is not None:
            key = (read.buffer.rid, read.offset, read.nbytes)
            rd = {"buffer": key[0], "offset": read.offset, "size": read.nbytes, "dtype": np.dtype(dtype).name,
                  "label": read.buffer.label, "data": self._blob(data.tobytes()), "prev": self.last.get(key)}
        i = self._event("submit", plans=ids, read=rd)
        if read is not None:
            self.last[key] = i

    def close(self):
        """Finish the files and move the recording into place (once; also at exit)."""
        if self.closed:
            return
        self.closed = True
        self.events.close()
        self.data.close()
        shutil.rmtree(self.path, ignore_errors=True)
        os.replace(self.tmp, self.path)


def load(path: Path) -> tuple[dict, list[dict], object]:
    """A recording's (header, events, data): `data(ref)` returns the bytes an event's "data" refers to."""
    path = Path(path)
    lines = (path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} recording of version {VERSION}")

    def data(ref) -> bytes:
        at, n, stored = ref
        with open(path / "data.bin", "rb") as f:
            f.seek(at)
            raw = f.read(stored)
        return zlib.decompress(raw) if stored < n else raw
    return header, [json.loads(line) for line in lines[1:] if line], data

