"""Checkpoints in PufferLib 5.0's format, with a JSON sidecar that names the architecture.

    <checkpoint_dir>/<env>/<run_id>/<global_step:016d>.bin        raw little-endian float32 weights
    <checkpoint_dir>/<env>/<run_id>/<global_step:016d>.json       sidecar: env, D, H, L, heads, picture, obs dtype,
                                                                   step, config, sha256
    <checkpoint_dir>/<env>/<run_id>/<global_step:016d>.momentum      Muon momentum (same layout), for resuming

The .bin is exactly what PufferLib 5.0 reads and writes (tensors in order encoder, decoder, logstd
for continuous heads, MinGRU layers, each zero-padded to a multiple of 8 floats; no header), so it
loads in PufferLib and PufferLib's files load here. Policies that mix discrete and continuous heads
(hybrid, puffgpu only) use the same layout rule; their sidecar says `"puffgpu_only": true`. A policy
for an env with a picture puts encoder.convs.0..2 and encoder.linear where the encoder was (the
layout of the Rust/WGSL and MLX ports of this trainer); its sidecar records the picture and the
observation dtype (informative: it does not change the shapes), and a checkpoint for another picture
shape is refused naming both. Every file is
written to a temporary name, fsynced and renamed, so a crash never leaves a half-written checkpoint
under the final name; the sidecar is renamed last, so a checkpoint is complete exactly when its
sidecar exists.

The momentum file has the weights' size and layout, so it must not end in .bin: a script that
takes the last *.bin of a run folder would hand it to an evaluator, which loads it without
complaint and scores 0. Older checkpoints name it <global_step:016d>.momentum.bin; the sidecar
records the name, so resuming reads either.

Writing can fail (a folder without write permission, a full disk, a quota): writable() tests a
folder before a run does any work, check_space() compares the free space with a checkpoint's size
before each save, and a save that fails anyway raises CheckpointWriteError having left no new file
under a final name (every temporary file is written before the first rename), so the caller can
save elsewhere (trainer.run: fallback_dir()). One process
trains a run: lock_run() holds a lock on its folder that the OS drops when the process ends, and
clean_strays() removes the temporary files of a save that was killed halfway.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from puffbase.atomic import TEMP_GLOB, atomic_write_many
from puffbase.cache import user_tag
from puffbase.lock import Held, OwnedLock

from .spec import PolicySpec

FORMAT = "pufferlib5-raw-f32"
FORMAT_HYBRID = "puffgpu-hybrid-raw-f32"  # same layout rule, but a head mix PufferLib 5.0 cannot load


class CheckpointError(ValueError):
    pass


class CheckpointWriteError(CheckpointError):
    """A checkpoint (or a probe of its folder) could not be written: nothing of it is left under a
    final name. `folder` is where, `reason` the OS's words."""

    def __init__(self, message, folder, reason):
        super().__init__(message)
        self.folder, self.reason = Path(folder), reason


LOCK_NAME = ".trainer.lock"  # in a run folder: held by the process training that run
SIDECAR_BYTES = 1 << 15  # room for a sidecar (the config and a few hashes: a few KB) and block rounding


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def writable(folder: str | Path, what: str, flag: str) -> Path:
    """Creates `folder` and writes and removes a probe file in it; a CheckpointWriteError naming the
    folder, the reason and the fix (`flag` chooses another) if it cannot."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test.{os.getpid()}"
        with open(probe, "wb") as f:
            f.write(b"puffgpu")
        probe.unlink()
    except OSError as e:
        raise CheckpointWriteError(f"cannot write to the {what} {folder} ({_reason(e)}): choose another with "
                                   f"{flag} DIR, or make it writable", folder, _reason(e)) from None
    return folder


def check_space(folder: str | Path, need: int):
    """A CheckpointWriteError if `folder`'s file system has less than `need` bytes free."""
    folder = Path(folder)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # the write itself will tell
    if free < need:
        reason = f"{free:,} bytes free, a checkpoint needs {need:,}"
        raise CheckpointWriteError(f"not enough space for a checkpoint in {folder}: {reason}", folder, reason)


def checkpoint_bytes(spec: PolicySpec, momentum: bool = True) -> int:
    """What a checkpoint of `spec` takes on disk: its weights, its momentum and room for a sidecar."""
    return spec.nbytes * (2 if momentum else 1) + SIDECAR_BYTES


def fallback_dir() -> Path:
    """Where checkpoints go when their folder cannot take them: the system's temporary folder (one
    folder per user, as several may share it)."""
    return Path(tempfile.gettempdir()) / f"puffgpu-fallback-{user_tag()}" / "checkpoints"


def lock_run(run_dir: str | Path, what: str = "") -> OwnedLock:
    """Holds the lock of a run folder for this process (the OS drops it when the process ends);
    a CheckpointError naming the holder's pid if another process trains that run."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lock = OwnedLock(run_dir / LOCK_NAME, what)
    try:
        return lock.acquire()
    except Held as e:
        raise CheckpointError(f"the run folder {run_dir} is in use by another trainer ({e.holder or 'pid unknown'}): "
                              f"two trainers in one run would overwrite each other's checkpoints and log; wait for it "
                              f"to end, or stop it") from None


def check_run_free(run_dir: str | Path):
    """lock_run's refusal without taking the lock (or creating anything): a CheckpointError if
    another process trains the run in `run_dir` now."""
    if (Path(run_dir) / LOCK_NAME).exists():
        lock_run(run_dir).release()


def clean_strays(run_dir: str | Path) -> list[str]:
    """Removes the temporary files of saves that did not finish (a SIGKILL while writing): with the
    run's lock held no other process writes there. Returns their names."""
    removed = []
    for p in Path(run_dir).glob(TEMP_GLOB):
        try:
            p.unlink()
            removed.append(p.name)
        except OSError:
            pass
    return removed


def checkpoint_path(checkpoint_dir: str | Path, env: str, run_id: str, step: int) -> Path:
    return Path(checkpoint_dir) / env / run_id / f"{int(step):016d}.bin"


def sidecar_path(bin_path: Path) -> Path:
    return Path(bin_path).with_suffix(".json")


def momentum_path(bin_path: Path) -> Path:
    return Path(bin_path).with_suffix(".momentum")


def _momentum_file(bin_path: Path, meta: dict) -> Path:
    """The momentum file its sidecar names (older checkpoints: <step>.momentum.bin)."""
    name = meta.get("momentum", {}).get("file")
    return Path(bin_path).with_name(name) if name else momentum_path(bin_path)


def _sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def save(path: Path, weights: np.ndarray, spec: PolicySpec, env: str, step: int, config: dict | None = None,
         momentum: np.ndarray | None = None, state: dict | None = None) -> Path:
    """Save weights (and optionally Muon momentum + trainer state for resuming) to `path` (.bin)."""
    path = Path(path)
    w = np.ascontiguousarray(weights, dtype="<f4")
    if w.shape != (spec.num_floats,):
        raise CheckpointError(f"weights hold {w.size} floats; the architecture {spec.describe()} needs {spec.num_floats}")
    blob = w.tobytes()
    meta = {"format": FORMAT, "env": env, **spec.describe(), "action_space": spec.action_space,
            "num_floats": spec.num_floats, "bytes": len(blob), "global_step": int(step), "sha256": _sha256(blob),
            "config": config or {}}
    if spec.action_space == "hybrid":  # PufferLib rejects mixed action spaces: say so where a reader looks
        meta["format"] = FORMAT_HYBRID
        meta["puffgpu_only"] = True
    notes = spec.pufferlib_notes()
    if notes:
        meta["pufferlib_notes"] = notes
    mblob = None
    if momentum is not None:
        m = np.ascontiguousarray(momentum, dtype="<f4")
        if m.shape != w.shape:
            raise CheckpointError(f"momentum holds {m.size} floats, weights {w.size}")
        mblob = m.tobytes()
        meta["momentum"] = {"file": momentum_path(path).name, "sha256": _sha256(mblob)}
    if state:
        meta["trainer_state"] = state
    files = [(path, blob)] + ([(momentum_path(path), mblob)] if mblob is not None else [])
    files.append((sidecar_path(path), json.dumps(meta, indent=1, sort_keys=True) + "\n"))  # renamed last
    try:
        atomic_write_many(files)  # a write that fails leaves no new file under a final name, and the old ones
    except OSError as e:
        raise CheckpointWriteError(f"cannot write the checkpoint {path} ({_reason(e)})", path.parent,
                                   _reason(e)) from None
    return path


def read_sidecar(path: Path) -> dict | None:
    side = sidecar_path(path)
    if not side.exists():
        return None
    try:
        return json.loads(side.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{side}: sidecar is not valid JSON ({e})") from None


def load(path: str | Path, spec: PolicySpec, env: str | None = None, with_momentum: bool = False):
    """Load a checkpoint for `spec`; refuse one whose size, architecture or hash does not match.

    Returns (weights, meta) or, with_momentum, (weights, momentum or None, meta). A .bin without a
    sidecar (e.g. written by PufferLib itself) loads if its size matches the architecture exactly.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if path.is_dir():
        raise CheckpointError(_folder_message(path))
    blob = path.read_bytes()
    meta = read_sidecar(path) or {}
    # the shapes' keys; obs_dtype is recorded but not compared (it says how observations are read, and a
    # spec built without the env, like a test's or an exporter's, says float32)
    want = {k: v for k, v in spec.describe().items() if k != "obs_dtype"}
    if meta:
        found = {k: meta.get(k) for k in want}  # sidecars from before pictures: no picture key, None
        if found["picture"] != want["picture"]:
            def shape(p):
                return "no picture" if not p else "a {}x{}x{} picture (height x width x channels)".format(*p)
            raise CheckpointError(f"{path} was saved for a policy with {shape(found['picture'])} but the run's env "
                                  f"shows {shape(want['picture'])}: the encoder's shapes differ, so the weights do "
                                  f"not fit")
        if found != want:
            raise CheckpointError(f"{path} was saved for architecture {found} but the run needs {want} "
                                  f"(obs size and heads come from the env, hidden_size/num_layers from [policy])")
        if env is not None and meta.get("env") not in (None, env):
            raise CheckpointError(f"{path} was trained on env {meta.get('env')!r}, not {env!r}")
    if len(blob) != spec.nbytes:
        if meta:  # its sidecar agrees with the architecture: the file itself was cut or grew
            kind = "truncated" if len(blob) < spec.nbytes else "too long"
            raise CheckpointError(f"{path} is {len(blob):,} bytes ({kind}: its sidecar names this architecture); "
                                  f"architecture {want} needs exactly {spec.nbytes:,} bytes ({spec.num_floats:,} float32)")
        raise CheckpointError(f"{path} is {len(blob):,} bytes but the run's policy ({_shape(spec)}) takes "
                              f"{spec.nbytes:,}: it was saved for another policy{_fits(spec, len(blob))}")
    if meta and meta.get("sha256") not in (None, _sha256(blob)):
        raise CheckpointError(f"{path}: sha256 does not match its sidecar: the file is corrupt or was modified")
    weights = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    if not with_momentum:
        return weights, meta
    momentum = None
    mpath = _momentum_file(path, meta)
    if "momentum" in meta and mpath.exists():
        mblob = mpath.read_bytes()
        if _sha256(mblob) != meta["momentum"]["sha256"] or len(mblob) != spec.nbytes:
            raise CheckpointError(f"{mpath}: momentum file is corrupt (size or sha256 does not match the sidecar)")
        momentum = np.frombuffer(mblob, dtype="<f4").astype(np.float32)
    return weights, momentum, meta


def list_checkpoints(checkpoint_dir: str | Path, env: str) -> list[Path]:
    """Complete checkpoints (with a sidecar) under checkpoint_dir/env, by global step."""
    root = Path(checkpoint_dir) / env
    if not root.exists():
        return []
    found = [p for p in root.glob("*/*.bin") if not p.name.endswith(".momentum.bin") and sidecar_path(p).exists()]
    return sorted(found, key=lambda p: (int(p.stem) if p.stem.isdigit() else -1, p.stat().st_mtime))


def latest(checkpoint_dir: str | Path, env: str) -> Path:
    """The checkpoint with the highest global step (PufferLib picks the newest by ctime; step is safer)."""
    found = list_checkpoints(checkpoint_dir, env)
    if not found:
        raise CheckpointError(f"no checkpoints under {Path(checkpoint_dir) / env}: `latest` looks there; another "
                              f"folder: --checkpoint-dir DIR (--base.checkpoint_dir)")
    return found[-1]


def resolve(load_model_path: str, checkpoint_dir: str | Path, env: str) -> Path:
    if load_model_path == "latest":
        return latest(checkpoint_dir, env)
    path = Path(load_model_path)
    if path.is_dir():
        raise CheckpointError(_folder_message(path))
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist (--base.load_model_path takes a checkpoint's .bin "
                              f"file, or latest)")
    return path


def _folder_message(folder: Path) -> str:
    found = [p for p in folder.rglob("*.bin") if not p.name.endswith(".momentum.bin") and sidecar_path(p).exists()]
    newest = max(found, key=lambda p: (int(p.stem) if p.stem.isdigit() else -1, p.stat().st_mtime), default=None)
    hint = (f"; the newest checkpoint in it is {newest}" if newest else "; it holds no complete checkpoint "
            "(a .bin with its .json sidecar)")
    return (f"{folder} is a folder: --base.load_model_path takes a checkpoint's .bin file, or latest (the "
            f"newest under --base.checkpoint_dir){hint}")


def _shape(spec: PolicySpec) -> str:
    return f"obs size {spec.obs_size}, heads {list(spec.act_sizes)}, hidden_size {spec.hidden}, num_layers {spec.layers}"


def _fits(spec: PolicySpec, nbytes: int) -> str:
    """Which [policy] sizes of the same env a file of `nbytes` bytes would fit, as a hint."""
    fits = []
    for n in range(1, 17):
        for h in range(8, 1025, 8):  # a policy's size grows with its width: stop past the file's
            size = dataclasses.replace(spec, hidden=h, layers=n).nbytes
            if size >= nbytes:
                if size == nbytes:
                    fits.append((h, n))
                break
    fits.sort()
    if not fits:
        return (" (no hidden_size and num_layers fit this env's observation and heads: another env's policy, "
                "or a damaged file)")
    h, n = fits[0]
    more = f" ({len(fits)} size pairs fit; this is the first)" if len(fits) > 1 else ""
    return f": it fits --policy.hidden_size {h} --policy.num_layers {n}{more}"
