"""The kernel tuner: per adapter and shape, which variant of a kernel family to run, and its disk cache.

Launchers (trainer/kernels/) ask `gpu.chooser` for a variant when their caller names none; the top
of the program installs a tuner there with `attach(gpu)` (trainer.run, eval, sweep, the tools).
The tuner is generic: a family's variant table (`Family` in trainer/kernels) gives the candidates
for a shape, the static default and the GPU rule; the tuner answers, in this order:
  1. a pin: PUFFGPU_KERNELS="matmul=sg8,mingru=vec4" (or `--kernels`); a pin names a variant or
     its base name (the widest loads that apply), optionally with /sN splits of K;
  2. this process's earlier answer for the same shape;
  3. the disk cache (unless PUFFGPU_RETUNE=1 / `--retune`);
  4. with PUFFGPU_TUNE=0 / `--no-tune`: the family's static default (lavapipe: its subgroup kernels;
     a GPU: the GPU rule); otherwise it times every candidate on scratch buffers of the real shape
     (never on live weights), keeps the fastest and writes it to the cache.
Timing skips hopeless candidates: a candidate more than PRUNE× slower than the best so far is not
timed further, and where products take long (lavapipe) a candidate is first run on a slice of its
grid, so that a hopeless one never runs in full.

`GpuRule` is the other chooser: every answer the family's static GPU rule (no timing, no cache, no
pins), which tools/dispatch_report.py installs to check the shapes a real GPU would run.

Cache: one JSON file per adapter under cache_root()/tune (puffbase/cache.py: $PUFFGPU_CACHE, else the OS cache folder), named by
a hash of the adapter's name, backend, driver, vendor/device ids and the enabled optional features;
inside, "schema" and "kernels" (a hash of the shader sources and the variant tables) must match or the
file is ignored with a warning, as is a file that does not parse. Entries map a shape key to the
choice and every candidate's time. Written atomically (temp file + rename), merged with what another
process may have written meanwhile.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import sys
import time

from puffbase.atomic import atomic_write
from puffbase.cache import cache_root

from .gpu import SHADER_DIR, GPUError, Plan
from .kernels import Choice, Family
from .kernels.matmul import FAMILY as MATMUL
from .kernels.mingru import FAMILY as MINGRU

SCHEMA = 1
PRUNE = 2.0  # a candidate this much slower than the best so far is not timed further
PROBE_SECONDS = 0.002  # once the best takes longer, a candidate is first run on a slice of its grid this
#                        long at the best's rate (at least 1/64 of it: on a GPU, still enough to fill it)
TARGET_SECONDS = 0.004  # GPU time per timed submit (more dispatches of a small product per submit)
MAX_REPS = 64
FAMILIES = {f.name: f for f in (MATMUL, MINGRU)}  # the kernel families that have variants


def kernels_version() -> str:
    """Changes whenever a shader or a variant list changes: cached choices from before are stale."""
    h = hashlib.sha256()
    for path in sorted(SHADER_DIR.glob("*.wgsl")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(repr([(v.name, v.entry, v.workgroup, v.constants, v.splitk) for f in FAMILIES.values()
                   for v in f.variants]).encode())
    return h.hexdigest()[:16]


def parse_pins(text: str | None) -> dict[str, str]:
    """'matmul=sg8,mingru=vec4' → {'matmul': 'sg8', 'mingru': 'vec4'}; errors say what is valid."""
    pins = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        fam, eq, value = item.partition("=")
        fam, value = fam.strip(), value.strip()
        if not eq or fam not in FAMILIES or not value:
            raise GPUError(f"PUFFGPU_KERNELS/--kernels: {item!r} is not FAMILY=VARIANT with FAMILY one of "
                           f"{', '.join(FAMILIES)} (e.g. matmul=sg8, matmul=tile4x4/s4, mingru=scalar)")
        FAMILIES[fam].check_pin(value)
        pins[fam] = value
    return pins


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Tuner:
    """Chooses kernel variants for one GPU; see the module docstring for the order of answers."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.warnings: list[str] = []
        self.version = kernels_version()
        self.identity = {"name": gpu.name, "backend": gpu.backend, "driver": gpu.driver,
                         "vendor_id": gpu.info.get("vendor_id"), "device_id": gpu.info.get("device_id"),
                         "type": str(gpu.info.get("adapter_type")), "features": sorted(gpu.features)}
        self.reload()

    def reload(self):
        """Read PUFFGPU_KERNELS / PUFFGPU_RETUNE / PUFFGPU_TUNE / PUFFGPU_CACHE again and forget this
        process's answers (plans built before keep their kernels). trainer.run sets them from
        --kernels / --retune / --no-tune."""
        self.pins = parse_pins(os.environ.get("PUFFGPU_KERNELS"))
        self.retune = _flag("PUFFGPU_RETUNE")
        self.timing = os.environ.get("PUFFGPU_TUNE", "1").strip().lower() not in ("0", "false", "no", "off")
        self.memo: dict[str, dict] = {}  # this process's answers: key -> entry
        self.sources: dict[str, str] = {}  # key -> 'timed' | 'cache' | 'pinned' | 'default'
        self.tune_seconds = 0.0
        self._disk: dict | None = None
        digest = hashlib.sha256(json.dumps(self.identity, sort_keys=True).encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.gpu.name).strip("-")[:40] or "adapter"
        self.path = cache_root() / "tune" / f"{slug}-{digest}.json"
        return self

    # ------------------------------------------------------------------ the disk cache
    def _load(self) -> dict:
        if self._disk is not None:
            return self._disk
        self._disk = {}
        if not self.path.exists():
            return self._disk
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
                raise ValueError("not a tuning cache (no 'entries' object)")
            if data.get("schema") != SCHEMA:
                raise ValueError(f"schema {data.get('schema')!r}, this puffgpu writes {SCHEMA}")
            if data.get("kernels") != self.version:
                raise ValueError("written for another version of the kernels")
            self._disk = {k: v for k, v in data["entries"].items() if isinstance(v, dict) and "choice" in v}
        except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
            self._warn(f"ignoring kernel tuning cache {self.path}: {e}; re-tuning as shapes come up")
        return self._disk

    def _warn(self, msg: str):
        self.warnings.append(msg)
        print(f"warning: {msg}", file=sys.stderr, flush=True)

    def _save(self, key: str, entry: dict):
        disk = self._load()
        disk[key] = entry
        try:
            merged = {}
            try:  # keep what another process wrote meanwhile
                other = json.loads(self.path.read_text(encoding="utf-8"))
                if other.get("schema") == SCHEMA and other.get("kernels") == self.version:
                    merged.update(other.get("entries") or {})
            except (OSError, ValueError, AttributeError):
                pass
            merged.update(disk)
            data = {"schema": SCHEMA, "kernels": self.version, "adapter": self.identity, "entries": merged}
            atomic_write(self.path, json.dumps(data, indent=1, sort_keys=True))
        except OSError as e:
            self._warn(f"could not write the kernel tuning cache {self.path}: {e}")

    # ------------------------------------------------------------------ choosing
    def _choose(self, family: str, key: str, candidates: list[str], default: str, bench, work: int) -> str:
        """The shared path of every family: memo → cache → timing (or the default)."""
        if key in self.memo:
            return self.memo[key]["choice"]
        entry = None if self.retune else self._load().get(key)
        if entry is not None and entry["choice"] in candidates:
            self.sources[key] = "cache"
        elif self.timing and len(candidates) > 1:
            entry = self._time(key, candidates, default, bench, work)
            self.sources[key] = "timed"
            self._save(key, entry)
        else:
            entry = {"choice": default, "seconds": {}, "work": work}
            self.sources[key] = "default"
        entry.setdefault("family", family)
        self.memo[key] = entry
        return entry["choice"]

    def _time(self, key: str, candidates: list[str], default: str, bench, work: int) -> dict:
        """Time `candidates` (bench(choice, reps, bufs) → (plan, bufs) on scratch buffers); the default first.

        Once the best so far takes more than PROBE_SECONDS (lavapipe-sized products), a candidate is first
        run on a slice of its grid (PROBE_SECONDS' worth at the best's rate, at least 1/64 of it): if that
        slice's time, scaled to the whole grid, is more than PRUNE× the best, the candidate is not run in
        full. On a GPU nearly every product is faster than that, so candidates are timed in full."""
        t_start = time.perf_counter()
        gpu = self.gpu
        order = [default] + [c for c in candidates if c != default]
        seconds, estimated, pruned, best = {}, [], [], math.inf
        for cand in order:
            try:
                plan, bufs = bench(cand, 1, None)
                plan.finalize()
                warm = False
                if PROBE_SECONDS < best < math.inf:
                    probe, frac = plan.sliced(max(1 / 64, PROBE_SECONDS / best))
                    if frac < 1:
                        _run_timed(gpu, probe)  # first use of the pipelines (lavapipe compiles here)
                        est = _run_timed(gpu, probe) / frac
                        if est > PRUNE * best:
                            seconds[cand] = est
                            estimated.append(cand)
                            continue
                        warm = True
                if not warm:
                    _run_timed(gpu, plan)  # first use of the pipelines, and warm-up
                t1 = _run_timed(gpu, plan)
                if t1 > PRUNE * best:
                    seconds[cand] = t1
                    pruned.append(cand)
                    continue
                reps = max(1, min(MAX_REPS, math.ceil(TARGET_SECONDS / max(t1, 1e-7))))
                if reps > 1:
                    plan, _ = bench(cand, reps, bufs)
                    t = min(_run_timed(gpu, plan), _run_timed(gpu, plan)) / reps
                else:
                    t = min(t1, _run_timed(gpu, plan))
            except GPUError:  # e.g. past lavapipe's loop limit for this shape
                continue
            seconds[cand] = t
            best = min(best, t)
        if best == math.inf:
            raise GPUError(f"kernel tuning: no variant of {key} ran (candidates {candidates})")
        choice = min((c for c in seconds if c not in pruned and c not in estimated), key=lambda c: seconds[c])
        took = time.perf_counter() - t_start
        self.tune_seconds += took
        return {"choice": choice, "seconds": seconds, "pruned": pruned, "estimated": estimated, "work": work,
                "tuning_seconds": round(took, 3), "time": int(time.time())}

    # ------------------------------------------------------------------ the chooser
    def choose(self, family: Family, shape, bench) -> Choice:
        """The variant (and splits) of `family` for `shape`; see the module docstring for the order.
        bench(choice, reps, bufs) → (plan, bufs) builds candidates on scratch buffers for timing."""
        key = shape.key()
        if family.name in self.pins:
            choice = family.pin(self.pins[family.name], shape, self.gpu)
            self.memo.setdefault(key, {"choice": str(choice), "family": family.name, "work": shape.work})
            self.sources[key] = "pinned"
            return choice
        candidates = [str(c) for c in family.candidates(shape, self.gpu)]
        default = str(family.default(shape, self.gpu))
        text = self._choose(family.name, key, candidates, default,
                            lambda c, reps, bufs: bench(family.parse(c), reps, bufs), shape.work)
        return family.parse(text)

    # ------------------------------------------------------------------ reporting
    def summary(self) -> str:
        """ONE line: what was chosen (counts per choice), how long tuning took, where the cache is."""
        by_family: dict[str, dict[str, int]] = {}
        for key, e in self.memo.items():
            fam = by_family.setdefault(e.get("family", "?"), {})
            fam[e["choice"]] = fam.get(e["choice"], 0) + 1
        src: dict[str, int] = {}
        for s in self.sources.values():
            src[s] = src.get(s, 0) + 1
        chosen = "; ".join(f"{fam} " + " ".join(f"{c}×{n}" for c, n in sorted(d.items(), key=lambda kv: -kv[1]))
                           for fam, d in sorted(by_family.items()))
        how = ", ".join(f"{n} {s}" for s, n in sorted(src.items()))
        return (f"kernels: {len(self.memo)} shapes ({how or 'none'}) → {chosen or 'nothing yet'}; "
                f"tuning took {self.tune_seconds:.1f} s; cache {self.path}")

    def table(self) -> list[dict]:
        """Per shape: key, source, choice, and every timed candidate's seconds and GFLOP/s."""
        rows = []
        for key, e in self.memo.items():
            work = e.get("work") or 0
            cands = {c: (t, 2.0 * work / t / 1e9 if t > 0 else 0.0) for c, t in (e.get("seconds") or {}).items()}
            rows.append({"key": key, "family": e.get("family"), "source": self.sources.get(key), "choice": e["choice"],
                         "candidates": cands, "pruned": list(e.get("pruned", [])) + list(e.get("estimated", []))})
        return rows


def _run_timed(gpu, plan: Plan) -> float:
    t = time.perf_counter()
    gpu.run(plan)
    gpu.sync()
    return time.perf_counter() - t


class GpuRule:
    """A chooser whose every answer is the family's static GPU rule: no timing, no cache, no pins."""

    def choose(self, family: Family, shape, bench) -> Choice:
        return family.gpu_rule(shape)


def attach(gpu, chooser=None):
    """Install `chooser` (default: a Tuner of this GPU) as gpu.chooser and return it."""
    gpu.chooser = Tuner(gpu) if chooser is None else chooser
    return gpu.chooser


@contextlib.contextmanager
def using(gpu, chooser):
    """Inside: gpu.chooser is `chooser` (e.g. GpuRule() for the dispatch-shape report); restored after."""
    old = gpu.chooser
    gpu.chooser = chooser
    try:
        yield chooser
    finally:
        gpu.chooser = old
