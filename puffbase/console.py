"""Console output that never raises on a console or pipe that cannot encode a character.

Python writes to stdout/stderr in the locale's encoding: cp1252 on a Windows pipe, ASCII under
LC_ALL=C. puffgpu prints a few non-ASCII characters (arrows, ≥, ·) in summaries, so every command
line entry point calls `safe_console()` first: characters the stream cannot encode become '?'
instead of a UnicodeEncodeError halfway through a run. Files are always written as UTF-8.
"""
import sys


def safe_console() -> None:
    """Make sys.stdout and sys.stderr replace what they cannot encode (no-op for streams that are
    not text files, e.g. replaced by a test harness)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            reconfigure(errors="replace")
        except (ValueError, OSError, TypeError):
            pass
