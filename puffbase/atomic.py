"""The one way puffgpu writes a file the user keeps: checkpoints, Go-Explore archives and routes,
the env build and kernel tuning caches, sweep tables, PNGs and GIFs.

A temp file in the same folder, fsync, rename, fsync of the folder: a crash, a kill or a full disk
leaves the old file or the new one, never half of one.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write `data` (str is UTF-8 encoded) to `path` atomically; create its folder if missing."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # pid and thread in the name: concurrent writers (sweep trials, build workers) never share a temp.
    tmp = path.with_name(f".{path.name}.tmp.{os.getpid()}.{threading.get_ident()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    try:  # make the rename itself durable
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
    return path
