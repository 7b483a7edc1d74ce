"""The C compiler and how to speak to it: which one (PUFFGPU_CC, CC, else cc), its flags per OS
(gcc/clang on Linux and macOS, MinGW-w64 and MSVC on Windows), whether it has OpenMP (probed once
per compiler, cached), the command that builds a module, and running it.

Contract mismatches fail at build time: -Werror=implicit-function-declaration (e.g. a raylib
call that puffgpu's subset lacks), -Werror=int-conversion (e.g. 4.x's `dict_get(..)->value`),
-Werror=incompatible-pointer-types.
"""
import json
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from puffbase.atomic import atomic_write

from ..errors import EnvBuildError
from .cache import cache_dir, hash_parts
from .errors import explain_build_errors

C_DIR = Path(__file__).resolve().parent.parent / "c"  # the C runtime: pufferenv.h, ini.h, raylib.h, vecenv.c, ...
OPT_FLAGS = ["-O3", "-fno-strict-aliasing", "-Wno-unused-function"]
STRICT_FLAGS = ["-Werror=implicit-function-declaration", "-Werror=int-conversion",
                "-Werror=incompatible-pointer-types"]
# MSVC (cl.exe, clang-cl): the same checks as errors (C4013 undefined function assumed to return
# int, C4047 different levels of indirection, C4133 incompatible pointer types), C17 for _Generic
# and _Static_assert; no OpenMP (its vcomp140.dll does not come with Python): the envs step on
# envs/c/threadpool.h's Win32 threads.
MSVC_FLAGS = ["/nologo", "/O2", "/std:c17", "/we4013", "/we4047", "/we4133"]


def split_command(text, windows=None):
    """A command line (PUFFGPU_CC, CC, PUFFGPU_CFLAGS) as a list of words. POSIX shell rules on
    POSIX; on Windows backslashes are path separators, not escapes, and double quotes group
    (`"C:\\Program Files\\LLVM\\bin\\clang.exe" -O2` is two words)."""
    windows = sys.platform == "win32" if windows is None else windows
    if not windows:
        return shlex.split(text)
    return [w[1:-1] if len(w) >= 2 and w[0] == w[-1] == '"' else w
            for w in shlex.split(text, posix=False)]


def compiler():
    return split_command(os.environ.get("PUFFGPU_CC") or os.environ.get("CC") or "cc")


_versions = {}


def compiler_version(cc):
    key = tuple(cc)
    if key not in _versions:
        try:
            out = subprocess.run(cc + ["--version"], capture_output=True, text=True, encoding="utf-8",
                                 errors="replace", timeout=30)
            _versions[key] = out.stdout.splitlines()[0] if out.stdout else ""
        except (OSError, subprocess.TimeoutExpired):
            _versions[key] = ""
    return _versions[key]


OPENMP_PROBE = """#include <omp.h>
int puf_openmp_probe(int n) {
    int s = 0;
    #pragma omp parallel for schedule(static) reduction(+:s)
    for (int i = 0; i < n; i++) s += omp_get_thread_num() >= 0;
    return s;
}
"""


def toolchain(cc):
    """'msvc' for cl.exe and clang-cl (MSVC's flags), else 'gnu' (gcc, clang, MinGW-w64)."""
    name = cc[0].replace("\\", "/").rsplit("/", 1)[-1].lower()
    return "msvc" if name in ("cl", "cl.exe", "clang-cl", "clang-cl.exe") else "gnu"


def _openmp_candidates(target=None):
    """Flag sets that may build with OpenMP, best first: the compiler's own -fopenmp, then (macOS)
    Homebrew's libomp, which Apple clang takes through -Xpreprocessor."""
    yield ["-fopenmp"]
    if (target or sys.platform) == "darwin":
        prefixes = [os.environ.get("HOMEBREW_PREFIX", ""), "/opt/homebrew", "/usr/local"]
        for prefix in dict.fromkeys(p for p in prefixes if p):
            omp = Path(prefix) / "opt" / "libomp"
            if (omp / "include" / "omp.h").is_file():
                yield ["-Xpreprocessor", "-fopenmp", f"-I{omp / 'include'}", f"-L{omp / 'lib'}", "-lomp"]


def openmp_flags(cc):
    """The flags that build this compiler's modules with OpenMP, or [] when none work; then the
    vecenv steps envs on its own threads (envs/c/threadpool.h), with the same partition.
    PUFFGPU_OPENMP=0 gives [] without asking (the macOS path, on any OS). Probed by compiling a
    small shared library once per compiler (command and version), cached in the env cache."""
    if os.environ.get("PUFFGPU_OPENMP", "").strip() == "0" or toolchain(cc) == "msvc":
        return []
    key = hash_parts(["openmp", *cc, compiler_version(cc), sys.platform])[:16]
    cache = cache_dir() / f"_openmp_{key}.json"
    try:
        return list(json.loads(cache.read_text(encoding="utf-8"))["flags"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = []
    with tempfile.TemporaryDirectory(prefix="puffgpu-openmp-") as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(OPENMP_PROBE, encoding="utf-8")
        for flags in _openmp_candidates():
            cmd = [*cc, "-O1", *pic_flags(sys.platform), *flags, str(src), *link_flags(sys.platform), "-o",
                   str(Path(tmp) / "probe.so")]
            try:
                res = subprocess.run(cmd, capture_output=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                break
            if res.returncode == 0:
                found = flags
                break
    try:
        atomic_write(cache, json.dumps({"compiler": cc, "flags": found}))
    except OSError:
        pass
    return found


def pic_flags(target):
    """Position-independent code for a shared library: every target but Windows (DLLs need none)."""
    return [] if target == "win32" else ["-fPIC"]


def link_flags(target):
    if target == "darwin":  # Python's symbols resolve when the interpreter loads the module
        return ["-shared", "-undefined", "dynamic_lookup"]
    if target == "win32":
        # MinGW-w64: libgcc, libgomp and winpthreads linked in (Python 3.8+ does not look for a
        # module's DLLs on PATH); only python3XY.dll and the system's DLLs stay dynamic
        return ["-shared", "-static-libgcc", "-static"]
    return ["-shared"]


def python_link_library():
    """(folder, name) of the Python import library a Windows module links: python.org's
    <prefix>/libs/python3XY.lib, or MSYS2's libpython3.XY.dll.a."""
    ldlib = sysconfig.get_config_var("LDLIBRARY") or ""
    libdir = sysconfig.get_config_var("LIBDIR")
    if ldlib.endswith(".dll.a") and libdir:
        return Path(libdir), ldlib[3:-6] if ldlib.startswith("lib") else ldlib[:-6]
    return Path(sys.base_prefix) / "libs", f"python{sys.version_info[0]}{sys.version_info[1]}"


def build_flags(cc, target=None):
    """Compile flags for `cc` building for `target` (a sys.platform value; default this OS), before
    the include folders: optimisation, OpenMP where it works, the contract checks as errors, then
    PUFFGPU_CFLAGS."""
    target = target or sys.platform
    user = split_command(os.environ.get("PUFFGPU_CFLAGS", ""))
    if toolchain(cc) == "msvc":
        return MSVC_FLAGS + user
    omp = openmp_flags(cc) if target == sys.platform else []
    return OPT_FLAGS + pic_flags(target) + omp + STRICT_FLAGS + user


def compile_command(cc, flags, c_file, out, header, py_include, target=None, dep_file=None,
                    link=True, python_lib=None, extra_includes=(), objects=()):
    """The command that compiles the generated module source `c_file` into `out` for `target`
    (a sys.platform value; default this OS): with gcc/clang/MinGW the dependency list goes to
    `dep_file` (-MD), with MSVC it is printed (/showIncludes). link=False stops at the object file
    (cross-compile checks); python_lib=(folder, name) overrides the import library on Windows.
    extra_includes and objects: more include folders (after ours) and object files linked in (a
    module that embeds a library compiled once, e.g. the JS engine of envs/js)."""
    target = target or sys.platform
    header = Path(header)
    # the env's own folder first, so a header beside it wins over ours
    includes = [header.parent, py_include, C_DIR, *extra_includes]
    if toolchain(cc) == "msvc":
        cmd = [*cc, *flags, "/showIncludes", *(f"/I{d}" for d in includes), str(c_file)]
        if not link:
            return cmd + ["/c", f"/Fo{out}"]
        libdir, _ = python_lib or python_link_library()
        # pyconfig.h names python3XY.lib itself (#pragma comment(lib)); the linker needs its folder
        return cmd + ["/LD", f"/Fe{out}", f"/Fo{Path(out).parent}{os.sep}", "/link", f"/LIBPATH:{libdir}"]
    cmd = [*cc, *flags]
    if dep_file is not None:
        cmd += ["-MD", "-MF", str(dep_file)]
    cmd += [*(f"-I{d}" for d in includes), str(c_file), *(str(o) for o in objects)]
    if not link:
        return cmd + ["-c", "-o", str(out)]
    cmd += [*link_flags(target), "-o", str(out)]
    if target == "win32":
        libdir, name = python_lib or python_link_library()
        return cmd + [f"-L{libdir}", f"-l{name}"]
    return cmd + ["-lm"]


_SHOW_INCLUDE = re.compile(r"^[^:]*:[^:]*:\s*([A-Za-z]:[\\/].*|/.*)$")


def parse_show_includes(stdout):
    """The files MSVC's /showIncludes reported ("Note: including file:  C:\\...", in the
    installation's language), and stdout without those lines."""
    deps, rest = [], []
    for line in stdout.splitlines():
        m = _SHOW_INCLUDE.match(line)
        if m and Path(m[1].strip()).is_file():
            deps.append(m[1].strip())
        else:
            rest.append(line)
    return deps, "\n".join(rest)


def c_string(path, target=None):
    if (target or sys.platform) == "win32":  # an #include path: forward slashes work everywhere
        path = str(path).replace("\\", "/")
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'



def parse_depfile(text):
    """The prerequisites of a make rule written by cc -MD (backslash-newlines joined, escaped
    spaces kept)."""
    text = text.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    out, cur, i = [], "", 0
    while i < len(deps):
        ch = deps[i]
        if ch == "\\" and i + 1 < len(deps) and deps[i + 1] in " #":
            cur += deps[i + 1]
            i += 2
            continue
        if ch.isspace():
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    if cur:
        out.append(cur)
    return out



def _read_deps(dep_file, stdout, cc):
    """The files the compiler read: its -MD file (gcc, clang), else MSVC's /showIncludes lines."""
    if dep_file is not None and Path(dep_file).is_file():
        return parse_depfile(Path(dep_file).read_text(encoding="utf-8", errors="surrogateescape"))
    return parse_show_includes(stdout)[0] if toolchain(cc) == "msvc" else []


def run_compiler(cmd, what, cc):
    """Runs one compiler command; a failure is an EnvBuildError with the first errors explained.
    Returns the completed process."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise EnvBuildError(f"no C compiler {cc[0]!r} found to build {what}; install gcc or clang, "
                            f"or name one with PUFFGPU_CC") from None
    if res.returncode != 0:
        out = res.stderr + (parse_show_includes(res.stdout)[1] if toolchain(cc) == "msvc" else "")
        shown, where = explain_build_errors(out)
        raise EnvBuildError(f"compiling {what} failed" + (f" at {where}" if where else "")
                            + f" (exit {res.returncode}); the first errors:\n{shown}\ncommand: {shlex.join(cmd)}", out)
    return res



def _python_include():
    py_include = Path(sysconfig.get_paths()["include"])
    if not (py_include / "Python.h").is_file():
        raise EnvBuildError(f"building C env modules needs the Python C headers, but {py_include}/Python.h "
                            f"is missing; install them (Debian/Ubuntu: apt-get install python3-dev)")
    return py_include
