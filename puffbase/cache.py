"""puffgpu's cache folder: built env modules (envs/), the kernel tuner's choices (tune/), the JS
engine (quickjs/); and who runs puffgpu, for per-user names in the shared temporary folder."""
import os
import sys
from pathlib import Path


def cache_root() -> Path:
    """$PUFFGPU_CACHE, else the OS's usual place: %LOCALAPPDATA%\\puffgpu on Windows,
    ~/Library/Caches/puffgpu on macOS, $XDG_CACHE_HOME/puffgpu (default ~/.cache/puffgpu) elsewhere."""
    root = os.environ.get("PUFFGPU_CACHE")
    if root:
        return Path(root).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "puffgpu" if base else Path.home() / "AppData" / "Local" / "puffgpu"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "puffgpu"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # the XDG spec: a relative $XDG_CACHE_HOME is invalid and ignored
    return (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "puffgpu"


def user_tag() -> str:
    """Who runs this process, as a file-name-safe tag (the uid on POSIX, the user name elsewhere):
    names in the system's temporary folder, which several users may share, carry it."""
    if hasattr(os, "getuid"):
        return str(os.getuid())
    import getpass
    try:
        return "".join(c if c.isalnum() else "_" for c in getpass.getuser())
    except Exception:  # no user name in the environment
        return "user"
