"""Where built artifacts live and whether one is still good: a manifest per build configuration
keeps the digest of every file the compiler read; the artifact's name carries the hash of those
contents, and it is renamed into place atomically, so two processes building the same thing at
once both end up loading a complete file."""
import hashlib
import json
import os
from pathlib import Path

from puffbase.atomic import atomic_write
from puffbase.cache import cache_root


def cache_dir():
    """Where built env modules live: $PUFFGPU_ENV_CACHE, else cache_root()/envs (the package folder
    may be read-only once installed)."""
    env = os.environ.get("PUFFGPU_ENV_CACHE")
    return Path(env).expanduser() if env else cache_root() / "envs"


def hash_parts(parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else str(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def file_digest(path):
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None



def cached_build(kind, stem, config, compile_into, suffix=""):
    """Builds one artifact into the cache unless an unchanged one is there; returns (path, manifest).

    kind, stem: its name ("puf" modules, "exe" servers, "obj" engine objects); config: everything
    about the build but the contents of the files it reads (compiler, version, flags, sources'
    paths), hashed into the manifest's name. compile_into(tmp_path, name) compiles into tmp_path
    (name: the artifact's stable name, e.g. a module's PyInit name) and returns (files the compiler
    read, more manifest fields). The manifest keeps every such file's digest; the artifact's file
    name adds the hash of those contents, so a build never overwrites a file another process has
    loaded, and the rename into place is atomic."""
    key = hash_parts([kind, *config])[:16]
    name = f"_{kind}_{stem}_{key}"
    cache = cache_dir()
    manifest_path = cache / f"{name}.json"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        out = cache / manifest["output"]
        if out.is_file() and all(file_digest(d) == h for d, h in manifest["deps"].items()):
            return out, manifest
    except (OSError, ValueError, KeyError, TypeError):
        pass
    cache.mkdir(parents=True, exist_ok=True)
    tmp_path = cache / f"{name}.{os.getpid()}.building{suffix}"
    try:
        deps, meta = compile_into(tmp_path, name)
        digests = {d: file_digest(d) for d in sorted({str(Path(d).resolve()) for d in deps})}
        content = hash_parts([key, *(f"{d}={h}" for d, h in digests.items())])[:12]
        out = cache / f"{name}_{content}{suffix}"
        os.replace(tmp_path, out)  # atomic: a concurrent loader sees no file or a whole one
    finally:
        tmp_path.unlink(missing_ok=True)
    manifest = {**meta, "output": out.name, "deps": digests}
    atomic_write(manifest_path, json.dumps(manifest, indent=1))
    return out, manifest
