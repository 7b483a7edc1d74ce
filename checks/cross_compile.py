"""Cross-compiles every env module for macOS and Windows on Linux, exactly as envs/build/ would
build it there, and fails on any warning.

    python checks/cross_compile.py            # every target whose toolchain is installed
    python checks/cross_compile.py --require  # and fail when one is missing (CI)

Each env header (the built-in envs and the test env folders) is wrapped by the same cffi source as
envs/build/ generates and compiled with the command build.compile_command() gives for that
target, with the contract checks as errors, and the JS envs' engine (QuickJS-ng's four files, with
puffgpu's edits to quickjs.c) is compiled to objects with its own flags; any compiler output at
all counts as a failure:

    aarch64-macos        clang from the ziglang package (`python -m ziglang cc`), no OpenMP (the
                         vecenv's own pthreads, as with Apple's clang), compiled to an object
    x86_64-windows-gnu   the same clang for Windows, no OpenMP (Win32 threads), to an object
    x86_64-w64-mingw32   Debian's MinGW-w64 gcc with -fopenmp, compiled and linked into a .pyd as
                         a MinGW user's build would be; its imports must name no DLL but
                         python3XY.dll and Windows' own (libgomp, libgcc and winpthreads are
                         linked in)

There is no Windows or macOS Python here, so two stand-ins are made in a temp folder: a
pyconfig.h for each target (for Windows the values CPython's Windows x64 build sets that Python.h
reads; for macOS this machine's 64-bit one), and for the MinGW link an import library for
python3XY.dll made with dlltool from a .def listing every Py*/_Py* function and variable this
machine's libpython exports. That export list is CPython's own (a Windows build exports the same
PyAPI_FUNC/PyAPI_DATA names), so a module that calls a function Python does not export fails to
link here as it would on Windows; a .def copied from a real python3XY.dll would need that file.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import envs  # noqa: E402
from envs import build  # noqa: E402
from envs.js import engine  # noqa: E402
from puffbase.console import safe_console  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MINGW = "x86_64-w64-mingw32-gcc"
# what a module may import on Windows: Python and the system's own DLLs
WINDOWS_DLLS = re.compile(r"^(python3\d*\.dll|kernel32\.dll|msvcrt\.dll|ucrtbase\.dll|api-ms-win-.*\.dll|"
                          r"advapi32\.dll|user32\.dll|ws2_32\.dll|bcrypt\.dll)$", re.I)

WINDOWS_PYCONFIG = """\
/* What Python.h reads from pyconfig.h, as CPython's Windows x64 build sets it (LLP64: long is 32
   bits). A stand-in for cross-compiling env modules on Linux, never installed. */
#ifndef Py_CONFIG_H
#define Py_CONFIG_H
#define MS_WIN32
#define MS_WIN64
#define MS_WINDOWS
#define NT_THREADS
#define WITH_THREAD
#define Py_ENABLE_SHARED 1
#define HAVE_DECLSPEC_DLL
#define SIZEOF_SHORT 2
#define SIZEOF_INT 4
#define SIZEOF_LONG 4
#define SIZEOF_LONG_LONG 8
#define SIZEOF_FLOAT 4
#define SIZEOF_DOUBLE 8
#define SIZEOF_VOID_P 8
#define SIZEOF_SIZE_T 8
#define SIZEOF_TIME_T 8
#define SIZEOF_OFF_T 4
#define SIZEOF_FPOS_T 8
#define SIZEOF_WCHAR_T 2
#define SIZEOF__BOOL 1
#define SIZEOF_PID_T 8
#define SIZEOF_UINTPTR_T 8
#define ALIGNOF_SIZE_T 8
#define ALIGNOF_LONG 4
#define ALIGNOF_MAX_ALIGN_T 8
#define HAVE_STDDEF_H 1
#define HAVE_WCHAR_H 1
#define HAVE_SYS_STAT_H 1
#define HAVE_LARGEFILE_SUPPORT
#define DOUBLE_IS_LITTLE_ENDIAN_IEEE754 1
#define PY_LONG_LONG long long
#define Py_WINVER 0x0602
#endif
"""


def env_headers():
    """Every built-in env header and every env of the test folders (a folder holding <name>.h)."""
    return envs.env_headers(ROOT / "envs" / "ocean", *sorted(ROOT.glob("tests/envs*")))


def host_pyconfig():
    """This machine's own 64-bit pyconfig.h (Debian's is a multiarch wrapper that refuses other
    targets: take the file it would include)."""
    path = Path(sysconfig.get_config_h_filename())
    if "multiarch" in path.read_text(encoding="utf-8", errors="replace"):
        arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
        path = path.parent.parent / arch / path.parent.name / "pyconfig.h"
    return path


def python_include(folder: Path, pyconfig: str) -> Path:
    shutil.copytree(sysconfig.get_paths()["include"], folder)
    (folder / "pyconfig.h").write_text(pyconfig, encoding="utf-8")
    return folder


def make_python_import_lib(folder: Path) -> tuple[Path, str] | None:
    """An import library for python3XY.dll (dlltool, from this machine's libpython exports)."""
    name = f"python{sys.version_info[0]}{sys.version_info[1]}"
    libdir = Path(sysconfig.get_config_var("LIBDIR") or "/usr/lib")
    libs = sorted(libdir.glob("libpython3*.so*")) + sorted(Path("/usr/lib").glob("*/libpython3*.so*"))
    dlltool = shutil.which("x86_64-w64-mingw32-dlltool")
    if not libs or dlltool is None:
        return None
    nm = subprocess.run(["nm", "-D", "--defined-only", str(libs[0])], capture_output=True, text=True,
                        encoding="utf-8", check=True).stdout
    funcs, data = set(), set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and re.match(r"^_?Py", parts[2]):
            (funcs if parts[1] in "TtWi" else data).add(parts[2].split("@")[0])
    exports = [f"    {s}" for s in sorted(funcs)] + [f"    {s} DATA" for s in sorted(data - funcs)]
    deffile = folder / f"{name}.def"
    deffile.write_text(f"LIBRARY {name}.dll\nEXPORTS\n" + "\n".join(exports) + "\n", encoding="utf-8")
    subprocess.run([dlltool, "-d", str(deffile), "-l", str(folder / f"lib{name}.a"), "-D", f"{name}.dll"],
                   check=True, capture_output=True)
    return folder, name


def targets(tmp: Path, require: bool):
    """(label, cc, target, Python include folder, link, extra flags, python import lib) per
    toolchain. The include folder is a copy of this machine's with the target's pyconfig.h (Python.h
    includes it from its own folder first)."""
    out, missing = [], []
    zig = subprocess.run([sys.executable, "-m", "ziglang", "version"], capture_output=True, text=True)
    for label, triple, plat, pyconfig in (
            ("aarch64-macos", "aarch64-macos", "darwin", f'#include "{host_pyconfig()}"\n'),
            ("x86_64-windows-gnu", "x86_64-windows-gnu", "win32", WINDOWS_PYCONFIG)):
        if zig.returncode != 0:
            missing.append(f"{label} (pip install ziglang)")
            continue
        inc = python_include(tmp / f"include-{label}", pyconfig)
        out.append((label, [sys.executable, "-m", "ziglang", "cc", "-target", triple], plat, inc, False, [], None))
    if shutil.which(MINGW):
        inc = python_include(tmp / "include-mingw", WINDOWS_PYCONFIG)
        pylib = make_python_import_lib(tmp)
        if pylib is None:
            missing.append("x86_64-w64-mingw32 (no libpython3*.so or dlltool for the import library)")
        else:
            out.append(("x86_64-w64-mingw32", [MINGW], "win32", inc, True, ["-fopenmp"], pylib))
    else:
        missing.append("x86_64-w64-mingw32 (apt-get install mingw-w64)")
    return out, missing


def dll_imports(pyd: Path) -> list[str]:
    res = subprocess.run(["x86_64-w64-mingw32-objdump", "-p", str(pyd)], capture_output=True, text=True,
                         encoding="utf-8", errors="replace")
    return re.findall(r"DLL Name: (\S+)", res.stdout)


def module_source(tmp: Path, header: Path, tgt) -> Path:
    """Writes the module's cffi source (in this thread: cffi's output is silenced through
    sys.stdout, which compile threads must not race on)."""
    label, plat = tgt[0], tgt[2]
    work = tmp / label / header.stem
    work.mkdir(parents=True)
    c_file = work / f"_puf_{header.stem}_cross.c"
    ge = build.uses_goexplore(header)  # the same module envs/build/ would write: Go-Explore's functions only where used
    build.write_module_source(header, c_file.stem, c_file, target=plat, cdef=build.module_cdef(ge))
    return c_file


def run_silent(cmd: list, what: str, cwd=None) -> str | None:
    """Runs a compile command; None when it succeeds without a word, else the failure's message."""
    res = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace", cwd=cwd)
    text = (res.stdout + res.stderr).strip()
    if res.returncode != 0 or text:
        return f"{what}: exit {res.returncode}\n{text[-3000:]}\n$ {' '.join(cmd)}"
    return None


def compile_one(c_file: Path, header: Path, tgt) -> tuple[bool, str]:
    label, cc, plat, py_include, link, extra, pylib = tgt
    stem, work = c_file.stem, c_file.parent
    flags = build.build_flags(cc, target=plat) + extra
    out = work / (f"{stem}.pyd" if link else f"{stem}.o")
    cmd = build.compile_command(cc, flags, c_file, out, header, py_include, target=plat, link=link,
                                python_lib=pylib)
    failure = run_silent(cmd, f"{label} {header.relative_to(ROOT)}", cwd=work)
    if failure:
        return False, failure
    if link:
        bad = [d for d in dll_imports(out) if not WINDOWS_DLLS.match(d)]
        if bad:
            return False, f"{label} {header.relative_to(ROOT)}: the module needs {', '.join(bad)} from PATH"
        return True, f"{label} {header.relative_to(ROOT)}: linked, imports {', '.join(dll_imports(out))}"
    return True, f"{label} {header.relative_to(ROOT)}: ok"


def compile_engine(source: Path, tmp: Path, tgt) -> tuple[bool, str]:
    """One file of the JS envs' engine (QuickJS-ng with puffgpu's edits, envs/js/engine.py) compiled
    to an object for the target with the engine's own flags."""
    label, cc, plat = tgt[0], tgt[1], tgt[2]
    out = tmp / label / f"engine_{source.stem}.o"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [*cc, *engine.FLAGS, *build.pic_flags(plat), "-c", str(source), "-o", str(out)]
    failure = run_silent(cmd, f"{label} JS engine {source.name}")
    return (False, failure) if failure else (True, f"{label} JS engine {source.name}: ok")


def main(argv=None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--require", action="store_true", help="fail when a toolchain is missing")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="compiles at once")
    args = ap.parse_args(argv)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="puffgpu-cross-") as tmp:
        tmp = Path(tmp)
        tgts, missing = targets(tmp, args.require)
        for m in missing:
            print(f"missing toolchain: {m}")
        jobs = [(module_source(tmp, h, t), h, t) for t in tgts for h in env_headers()]
        src = engine.source_dir()  # fetched, checked and edited as on any machine
        engine_jobs = [(src / name, tmp, t) for t in tgts for name in engine.SOURCES]
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(lambda job: compile_engine(*job), engine_jobs))
            results += list(pool.map(lambda job: compile_one(*job), jobs))
    failed = [msg for ok, msg in results if not ok]
    for ok, msg in results:
        print(("ok    " if ok else "FAIL  ") + msg.splitlines()[0])
    for msg in failed:
        print("\n" + msg)
    print(f"cross-compile: {len(results) - len(failed)}/{len(results)} modules and engine files for "
          f"{', '.join(t[0] for t in tgts) or 'no target'} in {time.time() - t0:.0f} s"
          + (f"; missing: {len(missing)} toolchain(s)" if missing else ""))
    return 1 if failed or (args.require and missing) or not tgts else 0


if __name__ == "__main__":
    sys.exit(main())
