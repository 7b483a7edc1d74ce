"""The one way puffgpu writes a file the user keeps: checkpoints, Go-Explore archives and routes,
the env build and kernel tuning caches, sweep tables, PNGs and GIFs.

A temp file in the same folder, fsync, rename, fsync of the folder: a crash, a kill or a full disk
leaves the old file or the new one, never half of one. atomic_write_many writes several files
that belong together (a checkpoint's weights, momentum and sidecar) the same way, every temp file
first: a write that fails (a full disk, a folder without write permission) leaves every old file as
it was and no new one under its final name; the renames follow, in the order given.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path


TEMP_GLOB = ".*.tmp.*"  # the temp files below, for whoever cleans up after a killed writer


def _temp(path: Path) -> Path:
    # pid and thread in the name: concurrent writers (sweep trials, build workers) never share a temp.
    return path.with_name(f".{path.name}.tmp.{os.getpid()}.{threading.get_ident()}")


def atomic_write_many(items) -> list[Path]:
    """Write each (path, data) of `items` (str data is UTF-8 encoded) atomically, all temp files
    before any rename; create their folders if missing. Returns the paths."""
    files = [(Path(p), d.encode("utf-8") if isinstance(d, str) else d) for p, d in items]
    temps = []
    try:
        for path, data in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = _temp(path)
            temps.append(tmp)
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for (path, _), tmp in zip(files, temps):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            if tmp.exists():
                tmp.unlink()
    for folder in dict.fromkeys(path.parent for path, _ in files):
        try:  # make the renames themselves durable
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass
    return [path for path, _ in files]


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write `data` (str is UTF-8 encoded) to `path` atomically; create its folder if missing."""
    return atomic_write_many([(path, data)])[0]
