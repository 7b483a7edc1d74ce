"""What is built, and loading it: an env module (envs/c/vecenv.c around one env header, through
cffi API mode, compiled by calling the compiler directly, so no setuptools is needed at run time),
a small cffi module of our own C, an executable, an object file. Each goes through
cache.cached_build, keyed by everything the compiler read.
"""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import sys
import sysconfig
import tempfile
from pathlib import Path

import cffi

from .cache import cached_build, hash_parts
from .errors import undefined_symbol_error
from .toolchain import (C_DIR, OPT_FLAGS, STRICT_FLAGS, _python_include, _read_deps, build_flags, c_string,
                        compile_command, compiler, compiler_version, link_flags, openmp_flags, pic_flags,
                        run_compiler, split_command, toolchain)

# What Python sees of vecenv.c; Dict and VecEnv stay opaque (C owns and grows them).
CDEF = """
typedef ... Dict;
typedef struct VecEnv VecEnv;

int vec_obs_size(void);
void vec_picture(int* out);
int vec_num_atns(void);
void vec_act_sizes(int* out);
int vec_obs_bytes(void);
const char* vec_obs_type(void);
int vec_log_fields(void);
const char* vec_threads_kind(void);
int vec_has_scripted(void);

Dict* vec_dict_new(const char* name);
void vec_dict_put(Dict* d, const char* key, double value, const char* str);
void vec_dict_free(Dict* d);
int vec_dict_size(Dict* d);
const char* vec_dict_key(Dict* d, int i);
double vec_dict_value(Dict* d, int i);

VecEnv* vec_create(int total_agents, Dict* kwargs, unsigned int seed, int num_threads,
                   char* err, int err_len);
int vec_num_envs(VecEnv* vec);
int vec_num_agents(VecEnv* vec);
int vec_env_obs_size(VecEnv* vec);
void vec_env_agents(VecEnv* vec, int* out);
void vec_set_threads(VecEnv* vec, int num_threads);
void vec_set_clear_outputs(VecEnv* vec, int on);
void vec_bind(VecEnv* vec, void* observations, float* actions, float* rewards,
              float* terminals, unsigned char* action_mask);
int vec_reset(VecEnv* vec);
int vec_step(VecEnv* vec);
int vec_step_range(VecEnv* vec, int lo, int hi, int threads);
void vec_guard_enable(int on);
int vec_crashed(VecEnv* vec);
const char* vec_crash_message(VecEnv* vec);
float vec_log(VecEnv* vec);
float vec_log_range(VecEnv* vec, int lo, int hi);
Dict* vec_log_dict(VecEnv* vec);
void vec_log_counts(VecEnv* vec, float* out);
const unsigned char* vec_render(VecEnv* vec, int index, int* width, int* height);
void vec_set_key(int key, int down);
void vec_set_mouse(float x, float y, int buttons);
void vec_scripted(VecEnv* vec);
void vec_close(VecEnv* vec);

"""

# Go-Explore's side of the vecenv (c/goexplore_vec.h): declared only for a header that includes
# goexplore.h (found by preprocessing it), so other envs' modules carry none of it.
GOEXPLORE_CDEF = """
int vec_ge_info(VecEnv* vec, double* out, int n, uint64_t* fingerprint);
void vec_ge_sync(VecEnv* vec);
int64_t vec_ge_save(VecEnv* vec, unsigned char* buf, int64_t cap);
int vec_ge_load(VecEnv* vec, const unsigned char* buf, int64_t n, char* err, int err_len);
int vec_ge_reset_real(VecEnv* vec, int index, unsigned int seed);
int vec_ge_probe(VecEnv* vec, int index, uint64_t* key, float* progress, unsigned char* state, int cap);
"""

_loaded = {}  # (resolved header path, config key) -> module, so one process loads each build once


def write_module_source(header, modname, c_file, target=None, cdef="", source=""):
    """Writes the cffi-generated C source of the module for `header` (vecenv.c around it);
    `cdef` declares functions the header adds to the module's API, `source` (after vecenv.c)
    may define them."""
    ffi = cffi.FFI()
    ffi.cdef(CDEF + cdef)
    ffi.set_source(modname, f"#define ENV_HEADER {c_string(header, target)}\n#include \"vecenv.c\"\n{source}")
    with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
        ffi.emit_c_code(str(c_file))



class ModuleExtras:
    """What a header may add to its module: `objects` linked in (compiled once elsewhere),
    `include_dirs` searched after ours, `cdef` declaring its own functions for Python and
    `source` defining them after vecenv.c (where VecEnv is known)."""

    def __init__(self, objects=(), include_dirs=(), cdef="", source=""):
        self.objects = tuple(str(o) for o in objects)
        self.include_dirs = tuple(str(d) for d in include_dirs)
        self.cdef = cdef
        self.source = source  # C appended after vecenv.c (it may use VecEnv)



def _import_extension(modname, path):
    loader = importlib.machinery.ExtensionFileLoader(modname, str(path))
    spec = importlib.util.spec_from_file_location(modname, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)  # dlopen: undefined symbols show here
    loader.exec_module(module)
    return module



def uses_goexplore(header, cc=None, flags=None, extra_includes=()):
    """Whether `header` includes goexplore.h (directly or through another header): it is
    preprocessed once, with the include folders of its build."""
    cc = cc or compiler()
    flags = flags if flags is not None else build_flags(cc)
    header = Path(header)
    with tempfile.TemporaryDirectory(prefix="puffgpu-ge-") as tmp:
        probe = Path(tmp) / "probe.c"
        text = f"#include {c_string(header)}\n#ifdef GOEXPLORE_H\npuf_uses_goexplore\n#endif\n"
        probe.write_text(text, encoding="utf-8")
        includes = [header.parent, C_DIR, *extra_includes]
        if toolchain(cc) == "msvc":
            cmd = [*cc, *flags, *(f"/I{d}" for d in includes), "/E", str(probe)]
        else:
            cmd = [*cc, *[f for f in flags if f.startswith(("-D", "-U", "-I", "-std"))], *(f"-I{d}" for d in includes),
                   "-E", str(probe)]
        res = run_compiler(cmd, f"env header {header}", cc)
    return "puf_uses_goexplore" in res.stdout


def module_cdef(goexplore, extra=None):
    """What a header's module declares beyond the vecenv's CDEF: Go-Explore's functions if the
    header includes goexplore.h, and the extras' own."""
    return (GOEXPLORE_CDEF if goexplore else "") + (extra.cdef if extra else "")


def load_module(header, extra=None):
    """Builds (if needed) and imports the vecenv module for `header`; returns it (.ffi, .lib, and
    .goexplore: whether it carries Go-Explore). extra: a ModuleExtras (objects to link, include
    folders, more cdef), or None."""
    header = Path(header).resolve()
    if not header.is_file():
        raise FileNotFoundError(f"env header {header} does not exist")
    cc = compiler()
    flags = build_flags(cc)
    more = [] if extra is None else [extra.cdef, extra.source, *extra.include_dirs, *extra.objects]
    config = [header, *cc, compiler_version(cc), *flags, sysconfig.get_config_var("EXT_SUFFIX") or "",
              sys.version, cffi.__version__, CDEF, GOEXPLORE_CDEF, *more]
    key = hash_parts(config)
    if key in _loaded:
        return _loaded[key]
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    stem = _slug(header.stem)

    def compile_into(out, modname):
        py_include = _python_include()
        ge = uses_goexplore(header, cc, flags, extra.include_dirs if extra else ())
        with tempfile.TemporaryDirectory(prefix=f"{modname}-", dir=out.parent) as tmp:
            c_file = Path(tmp) / f"{modname}.c"
            write_module_source(header, modname, c_file, cdef=module_cdef(ge, extra),
                                source=(extra.source if extra else ""))
            dep_file = Path(tmp) / "deps.d"
            cmd = compile_command(cc, flags, c_file, out, header, py_include, dep_file=dep_file,
                                  extra_includes=extra.include_dirs if extra else (),
                                  objects=extra.objects if extra else ())
            res = run_compiler(cmd, f"env header {header}", cc)
            deps = [d for d in _read_deps(dep_file, res.stdout, cc) if Path(d).resolve() != c_file.resolve()]
        # a rebuilt object relinks
        return [*deps, str(header), *(extra.objects if extra else ())], {"header": str(header), "goexplore": ge}

    out_path, manifest = cached_build("puf", stem, config, compile_into, ext)
    modname = out_path.name.split(".")[0].rsplit("_", 1)[0]  # drop the content suffix
    try:
        module = _import_extension(modname, out_path)
    except ImportError as err:
        better = undefined_symbol_error(header, err)
        if better is not None:
            raise better from None
        raise
    module.goexplore = bool(manifest.get("goexplore"))
    _loaded[key] = module
    return module


def load_cffi(stem, cdef, source, includes=(), flags=None):
    """A small cffi (API mode) module of our own C (the shared-memory client, say), built and
    cached like the env modules; returns the module."""
    cc = compiler()
    flags = [*pic_flags(sys.platform), "-O2", "-Wno-unused-function", *split_command(os.environ.get("PUFFGPU_CFLAGS", ""))] \
        if flags is None else flags
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    config = [stem, *cc, compiler_version(cc), *flags, *includes, ext, sys.version, cffi.__version__, cdef, source]
    key = hash_parts(config)
    if key in _loaded:
        return _loaded[key]

    def compile_into(out, modname):
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        ffi.set_source(modname, source)
        with tempfile.TemporaryDirectory(prefix=f"{modname}-", dir=out.parent) as tmp:
            c_file = Path(tmp) / f"{modname}.c"
            with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
                ffi.emit_c_code(str(c_file))
            dep_file = Path(tmp) / "deps.d"
            cmd = [*cc, *flags, "-MD", "-MF", str(dep_file), *(f"-I{d}" for d in includes),
                   f"-I{_python_include()}", str(c_file), *link_flags(sys.platform), "-o", str(out)]
            res = run_compiler(cmd, stem, cc)
            deps = [d for d in _read_deps(dep_file, res.stdout, cc) if Path(d).resolve() != c_file.resolve()]
        return deps, {}

    out_path, _ = cached_build("cffi", stem, config, compile_into, ext)
    module = _import_extension(out_path.name.split(".")[0].rsplit("_", 1)[0], out_path)
    _loaded[key] = module
    return module


def _slug(name):
    """A file-name-safe stem (letters, digits, _)."""
    return "".join(c if c.isalnum() else "_" for c in name)


def _build_c(kind, source, stem, cc, flags, before=(), after=(), suffix=""):
    """One C file compiled into a cached artifact: `cc flags -MD ... before source -o OUT after`."""
    def compile_into(out, _name):
        with tempfile.TemporaryDirectory(prefix=f"{stem}-", dir=out.parent) as tmp:
            dep_file = Path(tmp) / "deps.d"
            cmd = [*cc, *flags, "-MD", "-MF", str(dep_file), *before, str(source), "-o", str(out), *after]
            res = run_compiler(cmd, str(source), cc)
            return [*_read_deps(dep_file, res.stdout, cc), str(source)], {"source": str(source)}

    return cached_build(kind, stem, [source, *cc, compiler_version(cc), *flags], compile_into, suffix)[0]


def build_executable(source, name=None, defines=(), includes=(), openmp=False):
    """Compiles a C program `source` (a game server, or the generic server around an env header)
    into the cache and returns its path; `includes` come first on its include path, then the C
    runtime (C_DIR)."""
    source = Path(source).resolve()
    cc = compiler()
    flags = [*OPT_FLAGS, *STRICT_FLAGS, *(openmp_flags(cc) if openmp else [])]
    flags += [f"-D{d}" for d in defines] + [f"-I{i}" for i in (*includes, C_DIR)]
    flags += split_command(os.environ.get("PUFFGPU_CFLAGS", ""))
    return _build_c("exe", source, _slug(name or source.stem), cc, flags, after=["-lm"])


def build_shared_library(source, name=None, includes=(), libs=()):
    """Compiles a C file into a shared library in the cache (one a program is started with through
    LD_PRELOAD: the DDNet servers' lockstep clock) and returns its path. Linux and other ELF systems."""
    source = Path(source).resolve()
    cc = compiler()
    flags = [*OPT_FLAGS, *STRICT_FLAGS, *pic_flags(sys.platform), "-shared", *(f"-I{i}" for i in includes)]
    flags += split_command(os.environ.get("PUFFGPU_CFLAGS", ""))
    return _build_c("lib", source, _slug(name or source.stem), cc, flags, after=[*(f"-l{lib}" for lib in libs)],
                    suffix=".so")


def build_object(source, flags, cc=None, include_dirs=()):
    """Compiles one C file into an object file in the cache (a library linked into env modules:
    the JS engine's sources); returns its path."""
    source = Path(source).resolve()
    cc = cc or compiler()
    flags = [*flags, *pic_flags(sys.platform), *(f"-I{d}" for d in include_dirs)]
    return _build_c("obj", source, _slug(source.stem), cc, flags, before=["-c"], suffix=".o")
