"""Go-Explore from Python: archive figures, the archive file, and the best route to the goal.

The archive itself lives in C (envs/c/goexplore.h), one per vecenv, built while the envs step. Here:

    env = envs.make("platformer_sparse", 1024, config={"go_explore": 0.8})
    env.archive_stats()            # {'archive_cells': ..., 'archive_progress': ..., ...}
    env.save_archive(path)         # atomically (temp file + fsync + rename)
    env.load_archive(path)         # refuses an archive of another level/frameskip/time limit
    read_archive(path)             # the file parsed: header, goal route, cells

    python -m envs.archive show ARCHIVE
    python -m envs.archive export --env platformer_sparse latest --out route.json --gif route.gif
    python -m envs.play platformer_sparse --route route.json --gif route.gif

`export` (envs/archive.py) takes the best route to the goal out of an archive (a checkpoint's `.archive`, or
`latest` for the newest under --checkpoint-dir), writes it as an input list (JSON: the env rng
seed of the real start and one row of action indices per step), replays it in a fresh env from
the real start with Go-Explore off, and fails unless the replay reaches the goal on its last
step. --gif records that replay.

File format (little-endian; the C writer and reader are ge_save/ge_load in goexplore.h):
    "PGXARCH1", u32 version 1, u32 state bytes, u32 action bytes, u32 max route, u64 fingerprint,
    u64 clock (syncs), u64 inserted, u64 improved, u64 dropped, u32 cells,
    goal: i32 steps (-1 none), u32 seed, u64 found, route;
    per cell: u64 key, u32 seed, i32 steps, f32 progress, u32 episodes, u64 found, state, route;
    u32 CRC-32 (zlib.crc32) of everything before.
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np

from puffbase.atomic import atomic_write

# vec_ge_info's figures, in order
INFO_NAMES = ("cells", "progress", "goal_steps", "dropped", "pending_dropped", "improved", "syncs",
              "frontier", "replay_mismatches", "capacity")
# [env] keys and their valid ranges (goexplore.h clamps; here they are errors)
KNOBS = {"go_explore": (0.0, 1.0), "go_explore_frontier": (0.0, 1.0),
         "go_explore_frontier_cells": (1, 256), "go_explore_cells": (1, 1 << 26),
         "go_explore_ghost": (-1.0, 1.0), "go_explore_replay": (0, 1)}
ROUTE_FORMAT = "puffgpu-route-1"
SUFFIX = ".archive"


class ArchiveError(ValueError):
    pass


def check_config(config: dict):
    """Clear errors for out-of-range Go-Explore [env] keys."""
    for key, (lo, hi) in KNOBS.items():
        if key in config and not lo <= config[key] <= hi:
            raise ValueError(f"[env] {key} = {config[key]!r} is out of range: it must be in [{lo}, {hi}]")
        if key in config and isinstance(lo, int) and float(config[key]) != int(config[key]):
            raise ValueError(f"[env] {key} = {config[key]!r} must be an integer")


def archive_path(checkpoint: str | Path) -> Path:
    """The archive saved beside a checkpoint: <global_step:016d>.archive next to its .bin."""
    return Path(checkpoint).with_suffix(SUFFIX)


class GoExploreMixin:
    """VecEnv's Go-Explore methods (the C side is goexplore_vec.h)."""

    def archive_info(self) -> dict | None:
        """Every archive figure (INFO_NAMES) and the env's route fingerprint; None when this
        env has no archive (Go-Explore off, or an env that does not use goexplore.h)."""
        out = self._ffi.new("double[]", len(INFO_NAMES))
        fp = self._ffi.new("uint64_t*")
        if self._lib.vec_ge_info(self._live(), out, len(INFO_NAMES), fp) != 1:
            return None
        info = {k: float(v) for k, v in zip(INFO_NAMES, out)}
        info["fingerprint"] = int(fp[0])
        return info

    @property
    def archive_enabled(self) -> bool:
        return self.archive_info() is not None

    def archive_stats(self) -> dict:
        """What the trainer logs as env/*: archive size, frontier progress (the most progress of
        any archived cell, 1 = the goal was reached), steps of the best route to the goal (0:
        none yet), cells dropped because the archive was full. {} without an archive."""
        info = self.archive_info()
        if info is None:
            return {}
        return {"archive_cells": info["cells"], "archive_progress": info["progress"],
                "archive_goal_steps": info["goal_steps"], "archive_dropped": info["dropped"]}

    def archive_bytes(self) -> bytes:
        vec, lib = self._live(), self._lib
        need = lib.vec_ge_save(vec, self._ffi.NULL, 0)
        if need < 0:
            raise ArchiveError(f"{self.name}: no archive (set [env] go_explore > 0)")
        buf = self._ffi.new("unsigned char[]", need)
        got = lib.vec_ge_save(vec, buf, need)
        assert got == need
        return bytes(self._ffi.buffer(buf, need))

    def load_archive_bytes(self, data: bytes, source: str = "archive"):
        err = self._ffi.new("char[]", 512)
        if not self._lib.vec_ge_load(self._live(), data, len(data), err, 512):
            raise ArchiveError(f"{source}: {self._ffi.string(err).decode()}")

    def save_archive(self, path) -> Path:
        path = Path(path)
        atomic_write(path, self.archive_bytes())
        return path

    def load_archive(self, path) -> int:
        """Replaces this env's archive with the file's; returns its cell count."""
        path = Path(path)
        self.load_archive_bytes(path.read_bytes(), str(path))
        return int(self.archive_info()["cells"])

    def save_checkpoint_archive(self, checkpoint) -> Path | None:
        """Saves the archive beside a checkpoint (archive_path); None without an archive."""
        return self.save_archive(archive_path(checkpoint)) if self.archive_enabled else None

    def restore_checkpoint_archive(self, checkpoint) -> str | None:
        """Loads the archive saved beside a checkpoint, if this env keeps one; returns a line for
        the user (what was restored, or why it starts empty). An archive that does not fit this
        env (another level, frameskip, time limit) or is corrupt is an ArchiveError."""
        if not self.archive_enabled:
            return None
        path = archive_path(checkpoint)
        if not path.exists():
            return f"warning: {path} does not exist: Go-Explore starts with an empty archive"
        try:
            cells = self.load_archive(path)
        except ArchiveError as e:
            raise ArchiveError(f"cannot restore the Go-Explore archive: {e}") from None
        return f"restored the Go-Explore archive {path}: {cells} cells"

    def reset_real(self, index: int, seed: int):
        """Env `index` starts a new episode at the real start with env rng `seed` (a route's)."""
        if self._lib.vec_ge_reset_real(self._live(), int(index), int(seed) & 0xFFFFFFFF) != 0:
            raise ArchiveError(f"{self.name} does not use envs/c/goexplore.h (or index {index} is out of range)")

    def probe(self, index: int) -> tuple[int, float, bytes]:
        """Env `index`'s cell key, progress and savestate bytes now."""
        key, prog = self._ffi.new("uint64_t*"), self._ffi.new("float*")
        buf = self._ffi.new("unsigned char[]", 4096)
        n = self._lib.vec_ge_probe(self._live(), int(index), key, prog, buf, 4096)
        if n < 0:
            raise ArchiveError(f"{self.name} does not use envs/c/goexplore.h")
        return int(key[0]), float(prog[0]), bytes(self._ffi.buffer(buf, n))


# ---- the file, read from Python ----

def read_archive(path) -> dict:
    """{'state_bytes', 'action_bytes', 'max_route', 'fingerprint', 'syncs', 'inserted',
    'improved', 'dropped', 'goal': {'steps', 'seed', 'found', 'actions'} or None,
    'cells': [{'key', 'seed', 'steps', 'progress', 'episodes', 'found', 'state', 'actions'}]};
    actions are uint8 arrays [steps, action_bytes]."""
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 12 or data[:8] != b"PGXARCH1":
        raise ArchiveError(f"{path} is not a Go-Explore archive")
    at = 8

    def take(fmt):
        nonlocal at
        size = struct.calcsize(fmt)
        if at + size > len(data) - 4:
            raise ArchiveError(f"{path} is truncated")
        values = struct.unpack_from(fmt, data, at)
        at += size
        return values

    def raw(n):
        nonlocal at
        if at + n > len(data) - 4:
            raise ArchiveError(f"{path} is truncated")
        out = data[at:at + n]
        at += n
        return out

    (want,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != want:
        raise ArchiveError(f"{path} is corrupt (its checksum does not match)")
    version, ss, ab, max_route, fingerprint, syncs, inserted, improved, dropped, n = take("<IIIIQQQQQI")
    if version != 1:
        raise ArchiveError(f"{path}: archive format version {version}, this reader knows 1")
    goal_steps, goal_seed, goal_found = take("<iIQ")
    goal = None
    if goal_steps >= 0:
        goal = {"steps": goal_steps, "seed": goal_seed, "found": goal_found,
                "actions": np.frombuffer(raw(goal_steps * ab), np.uint8).reshape(goal_steps, ab)}
    cells = []
    for _ in range(n):
        key, seed, steps, progress, episodes, found = take("<QIifIQ")
        state = raw(ss)
        actions = np.frombuffer(raw(steps * ab), np.uint8).reshape(steps, ab)
        cells.append({"key": key, "seed": seed, "steps": steps, "progress": progress, "episodes": episodes,
                      "found": found, "state": state, "actions": actions})
    return {"state_bytes": ss, "action_bytes": ab, "max_route": max_route, "fingerprint": fingerprint,
            "syncs": syncs, "inserted": inserted, "improved": improved, "dropped": dropped, "goal": goal,
            "cells": cells}


def archive_bytes(archive: dict) -> bytes:
    """The file bytes of an archive dict as read_archive returns it (the inverse of read_archive;
    for tools and tests that build or edit archives)."""
    ss, ab = archive["state_bytes"], archive["action_bytes"]
    out = bytearray(b"PGXARCH1")
    out += struct.pack("<IIIIQQQQQI", 1, ss, ab, archive["max_route"], archive["fingerprint"],
                       archive["syncs"], archive["inserted"], archive["improved"], archive["dropped"],
                       len(archive["cells"]))
    goal = archive["goal"]
    if goal is None:
        out += struct.pack("<iIQ", -1, 0, 0)
    else:
        out += struct.pack("<iIQ", goal["steps"], goal["seed"], goal["found"])
        out += np.asarray(goal["actions"], np.uint8).tobytes()
    for c in archive["cells"]:
        actions = np.asarray(c["actions"], np.uint8).reshape(-1, ab)
        if len(c["state"]) != ss or len(actions) != c["steps"]:
            raise ArchiveError(f"cell {c['key']}: state of {len(c['state'])} bytes (need {ss}) or "
                               f"{len(actions)} route steps (says {c['steps']})")
        out += struct.pack("<QIifIQ", c["key"], c["seed"], c["steps"], c["progress"], c["episodes"], c["found"])
        out += bytes(c["state"]) + actions.tobytes()
    out += struct.pack("<I", zlib.crc32(bytes(out)))
    return bytes(out)


def latest_archive(checkpoint_dir, env_name: str) -> Path:
    """The archive of the checkpoint with the highest step under checkpoint_dir/env."""
    found = [p for p in (Path(checkpoint_dir) / env_name).glob(f"*/*{SUFFIX}") if p.stem.isdigit()]
    if not found:
        raise ArchiveError(f"no {SUFFIX} files under {Path(checkpoint_dir) / env_name}")
    return max(found, key=lambda p: (int(p.stem), p.stat().st_mtime))


# ---- routes ----

def route_from_archive(archive: dict, env_name: str, config: dict, source: str) -> dict:
    goal = archive["goal"]
    if goal is None:
        raise ArchiveError(f"{source}: no route reached the goal yet ({len(archive['cells'])} cells archived)")
    return {"format": ROUTE_FORMAT, "env": env_name, "config": config, "fingerprint": f"{archive['fingerprint']:016x}",
            "seed": int(goal["seed"]), "steps": int(goal["steps"]), "actions": goal["actions"].tolist(),
            "source": str(source)}


def write_route(path, route: dict):
    text = json.dumps({k: v for k, v in route.items() if k != "actions"}, indent=1)[:-2]
    rows = ",\n  ".join(json.dumps(a) for a in route["actions"])
    atomic_write(Path(path), (text + f',\n "actions": [\n  {rows}\n ]\n}}\n').encode())


def read_route(path) -> dict:
    route = json.loads(Path(path).read_text(encoding="utf-8"))
    if route.get("format") != ROUTE_FORMAT:
        raise ArchiveError(f"{path} is not a route file (format {route.get('format')!r}, expected {ROUTE_FORMAT!r})")
    return route


def replay(env, route: dict, frames: bool = False) -> dict:
    """Replays a route in env 0 from the real start. Returns {'steps', 'reached' (the goal was
    reached on the last step), 'ended_at' (first terminal step or None), 'log', 'frames'}."""
    actions = np.asarray(route["actions"], np.float32).reshape(len(route["actions"]), -1)
    if actions.shape[1] != len(env.act_sizes):
        raise ArchiveError(f"the route has {actions.shape[1]} action bytes per step; {env.name} has "
                           f"{len(env.act_sizes)} heads")
    env.log()
    env.reset_real(0, route["seed"])
    shots = [env.render(0)] if frames else []
    ended_at, log = None, {}
    for t, a in enumerate(actions):
        env.step(a[None, :])
        if env.terminals[0]:
            ended_at = t + 1
            log = env.log()
            break
        if frames:
            shots.append(env.render(0))
    reached = ended_at == len(actions) and log.get("perf") == 1.0
    return {"steps": len(actions), "reached": reached, "ended_at": ended_at, "log": log, "frames": shots}


def fingerprint(env) -> int:
    """The env's route fingerprint, also with Go-Explore off (0 for an env without it)."""
    out = env._ffi.new("double[]", len(INFO_NAMES))
    fp = env._ffi.new("uint64_t*")
    env._lib.vec_ge_info(env._live(), out, len(INFO_NAMES), fp)
    return int(fp[0])
