"""The end of a child process's log file, for error messages about that process."""
from __future__ import annotations

TAIL_BYTES = 2000


def log_tail(path, nbytes: int = TAIL_BYTES) -> str:
    """The last `nbytes` of the file at `path` as text ("" when there is no path or it cannot be read):
    what a server printed before it failed, quoted in the error that reports the failure."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - nbytes))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""
