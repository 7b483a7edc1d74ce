"""Locks the OS drops when their process ends: a sweep trial's adapter, a run's folder.

flock on POSIX, msvcrt.locking of byte 0 on Windows, on a file opened for appending ("a+" never
truncates a file someone else holds), so the holder can write who it is into the locked file
itself and another process can read it there. A killed process leaves no stale lock: the kernel
releases it with the process's files. (The filelock package does not promise to keep a lock file's
contents: its 3.x releases open it with O_TRUNC on every attempt, erasing the holder's pid; these
dozen lines, which the sweep used before the run folder did, keep it.)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def lock_file(path: str | Path):
    """The open file `path` holding an exclusive lock, or None while another process (or another
    open of it) holds one. The lock lasts until the file is closed or the process ends."""
    f = open(path, "a+", encoding="utf-8")
    try:
        if sys.platform == "win32":
            import msvcrt
            f.seek(0)
            msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return f
    except OSError:
        f.close()
        return None


class Held(RuntimeError):
    """Another process holds the lock; `holder` is what it wrote into the lock file (its pid and
    command, or '' if it has not written yet)."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = Path(path), holder


class OwnedLock:
    """An exclusive lock on `path` that records its holder: `pid <pid> (<what>)`, read by anyone
    the lock refuses. acquire() raises Held when another process holds it."""

    def __init__(self, path: str | Path, what: str = ""):
        self.path = Path(path)
        self.what = what
        self._file = None

    def acquire(self) -> "OwnedLock":
        f = lock_file(self.path)
        if f is None:
            raise Held(self.path, self.holder())
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}" + (f" ({self.what})" if self.what else "") + "\n")
        f.flush()
        self._file = f
        return self

    def holder(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    def release(self):
        if self._file is not None:
            self._file.close()  # closing drops the lock; the file stays, naming its last holder
            self._file = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
