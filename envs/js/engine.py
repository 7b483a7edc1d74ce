"""The JavaScript engine of JS envs: QuickJS-ng, compiled once into the build cache from the
`quickjs-ng` package's source distribution on PyPI (which carries the engine's C sources under
upstream-quickjs/). Nothing of the engine is kept in this repository but a few edits to its
interpreter's hot paths (envs/js/engine_patches.py), applied to quickjs.c as it is unpacked.

    objects, include_dir = engine_objects(cc)    # fetches, checks and compiles on first use

The sdist is pinned by version and sha256, fetched with `pip download` into engine_dir()
($PUFFGPU_QUICKJS_DIR, else <cache_root()>/quickjs/), checked, unpacked, and its four C files compiled with the env
compiler; the objects are cached per compiler and flags (envs/build/). Without network access, put the file
there yourself (the error says where), or point PUFFGPU_QUICKJS_SDIST at it.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from puffbase.cache import cache_root

from ..build import build_object, compiler
from ..build.toolchain import toolchain
from ..errors import EnvError
from .engine_patches import PATCHES

VERSION = "0.17.0.2"
SDIST = f"quickjs_ng-{VERSION}.tar.gz"
SHA256 = "43d2e48272208721a7aaea8e3f02d4b9318f12ef20cc4f5421b59d9a470706ef"
SOURCES = ("quickjs.c", "libregexp.c", "libunicode.c", "dtoa.c")
# NDEBUG: the engine's assert()s sit on the interpreter's hot paths (7% of a step's instructions
# in PlayTrain's breakout.js); its own release build defines it too. -O3 ran more instructions.
FLAGS = ["-O2", "-w", "-DNDEBUG"]

# The unpacked folder's name carries the edits to the interpreter (envs/js/engine_patches.py), so
# that a change to them unpacks and compiles anew.
PATCH_ID = hashlib.sha256(repr(PATCHES).encode()).hexdigest()[:8]


class EngineError(EnvError):
    """The JS engine could not be fetched or compiled."""


def engine_dir():
    """$PUFFGPU_QUICKJS_DIR, else quickjs/ in puffgpu's cache."""
    env = os.environ.get("PUFFGPU_QUICKJS_DIR")
    return Path(env).expanduser() if env else cache_root() / "quickjs"


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _fetch_help(folder):
    return (f"JS envs compile the QuickJS-ng engine from the quickjs-ng {VERSION} source "
            f"distribution ({SDIST}, sha256 {SHA256}). On a machine with access to PyPI run\n"
            f"    pip download quickjs-ng=={VERSION} --no-binary :all: --no-deps\n"
            f"and copy {SDIST} into {folder}/ (or set PUFFGPU_QUICKJS_SDIST to its path).")


def sdist_path():
    """The checked sdist in the cache, fetched with pip if it is not there yet."""
    folder = engine_dir()
    given = os.environ.get("PUFFGPU_QUICKJS_SDIST")
    path = Path(given).expanduser() if given else folder / SDIST
    if not path.is_file() and not given:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            cmd = [sys.executable, "-m", "pip", "download", f"quickjs-ng=={VERSION}", "--no-binary", ":all:",
                   "--no-deps", "--disable-pip-version-check", "-d", tmp]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace",
                                     timeout=600)
                out = res.stdout + res.stderr
            except (OSError, subprocess.TimeoutExpired) as e:
                res, out = None, str(e)
            got = Path(tmp) / SDIST
            if res is None or res.returncode != 0 or not got.is_file():
                tail = "\n".join(out.strip().splitlines()[-4:])
                raise EngineError(f"could not fetch the JS engine's source with pip:\n{tail}\n\n{_fetch_help(folder)}")
            os.replace(got, path)
    if not path.is_file():
        raise EngineError(f"{path} does not exist.\n{_fetch_help(folder)}")
    digest = _sha256(path)
    if digest != SHA256:
        raise EngineError(f"{path} has sha256 {digest}, not the pinned {SHA256}: not the quickjs-ng "
                          f"{VERSION} source distribution (delete it to fetch it again).\n{_fetch_help(folder)}")
    return path


def patch_source(text, where="quickjs.c"):
    """quickjs.c with PATCHES applied; each old text must occur exactly once."""
    for what, old, new in PATCHES:
        n = text.count(old)
        if n != 1:
            raise EngineError(f"{where}: the engine edit '{what}' expects its text once in quickjs.c, found it "
                              f"{n} times: not the quickjs-ng {VERSION} sources this puffgpu was written for")
        text = text.replace(old, new)
    return text


def source_dir():
    """The unpacked engine sources (upstream-quickjs/ of the sdist, quickjs.c edited)."""
    out = engine_dir() / f"quickjs-ng-{VERSION}-{PATCH_ID}"
    if (out / "quickjs.h").is_file() and (out / ".complete").is_file():
        return out
    tar = sdist_path()
    prefix = f"quickjs_ng-{VERSION}/upstream-quickjs/"
    engine_dir().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=engine_dir()) as tmp:
        with tarfile.open(tar, "r:gz") as tf:
            members = [m for m in tf.getmembers() if m.name.startswith(prefix) and m.isfile()
                       and "/" not in m.name[len(prefix):]]
            if not members:
                raise EngineError(f"{tar} holds no {prefix} folder: not the expected source distribution")
            for m in members:
                data = tf.extractfile(m).read()
                if m.name == prefix + "quickjs.c":
                    data = patch_source(data.decode("utf-8"), str(tar)).encode("utf-8")
                (Path(tmp) / m.name[len(prefix):]).write_bytes(data)
        (Path(tmp) / ".complete").write_text(SHA256, encoding="utf-8")
        if out.exists():
            shutil.rmtree(out, ignore_errors=True)
        try:
            os.replace(tmp, out)
        except OSError:  # another process unpacked it meanwhile
            if not (out / ".complete").is_file():
                raise
        os.makedirs(tmp, exist_ok=True)  # TemporaryDirectory cleans up a folder it expects
    return out


def engine_objects(cc=None):
    """(object files, include folder) of the engine compiled with `cc` (default: the env
    compiler), compiled on first use into the cache."""
    cc = cc or compiler()
    if toolchain(cc) == "msvc":
        raise EngineError("JS envs need gcc or clang (the QuickJS-ng objects are not built with MSVC here); "
                          "set PUFFGPU_CC to gcc or clang")
    src = source_dir()
    return [build_object(src / s, FLAGS, cc) for s in SOURCES], src
