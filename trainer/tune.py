"""Per-adapter kernel choice (autotuning), its on-disk cache, and the dispatch-shape report.

When a plan is first built for a shape, the launcher asks `gpu.tuner` which variant to use. The
tuner answers, in this order:
  1. a pin: PUFFGPU_KERNELS="matmul=sg8,mingru=vec4" (or `--kernels`); a matmul pin names a family
     (vec4 loads where they apply) or a variant, optionally with /sN splits of K;
  2. the GPU rule, inside `with tuner.gpu_rule():` (the dispatch-shape report's static choice);
  3. this process's earlier answer for the same shape;
  4. the disk cache (unless PUFFGPU_RETUNE=1 / `--retune`);
  5. with PUFFGPU_TUNE=0 / `--no-tune`: the static default (lavapipe: its subgroup kernels; a GPU:
     the GPU rule); otherwise it times every applicable variant on scratch buffers of the real shape
     (never on live weights), keeps the fastest and writes it to the cache.
Timing skips hopeless candidates: `ref` only for small products; a candidate more than PRUNE× slower
than the best so far is not timed further, and where products take long (lavapipe) a candidate is
first run on a slice of its grid, so that a hopeless one never runs in full.

Cache: one JSON file per adapter under $PUFFGPU_CACHE/tune (default ~/.cache/puffgpu/tune), named by
a hash of the adapter's name, backend, driver, vendor/device ids and the enabled optional features;
inside, "schema" and "kernels" (a hash of the shader sources and the variant lists) must match or the
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
from pathlib import Path

from envs.atomic import atomic_write

from . import ops
from .gpu import SHADER_DIR, GPUError, Plan

SCHEMA = 1
PRUNE = 2.0  # a candidate this much slower than the best so far is not timed further
PROBE_SECONDS = 0.002  # once the best takes longer, a candidate is first run on a slice of its grid this
#                        long at the best's rate (at least 1/64 of it: on a GPU, still enough to fill it)
TARGET_SECONDS = 0.004  # GPU time per timed submit (more dispatches of a small product per submit)
MAX_REPS = 64
REF_MAX_WORK = 1 << 20  # `ref` is timed only for products this small
MINGRU_VARIANTS = ("vec4", "scalar")
FAMILIES = ("matmul", "mingru")


def cache_root() -> Path:
    """$PUFFGPU_CACHE, else ~/.cache/puffgpu (tuning choices, and the env builds under envs/)."""
    env = os.environ.get("PUFFGPU_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "puffgpu"


def kernels_version() -> str:
    """Changes whenever a shader or a variant list changes: cached choices from before are stale."""
    h = hashlib.sha256()
    for path in sorted(SHADER_DIR.glob("*.wgsl")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(repr((ops.MATMUL_VARIANTS, ops.SPLITK_VARIANTS, MINGRU_VARIANTS)).encode())
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
        if fam == "matmul":
            base, _, s = value.partition("/s")
            fams = {v.removesuffix("_vec4") for v in ops.MATMUL_VARIANTS}
            if base not in ops.MATMUL_VARIANTS and base not in fams:
                raise GPUError(f"PUFFGPU_KERNELS/--kernels: matmul={value!r}: the variant must be one of "
                               f"{', '.join(ops.MATMUL_VARIANTS)} (a name without _vec4 uses vec4 loads where they "
                               f"apply), optionally with /sN splits of K")
            if s and (not s.isdigit() or int(s) < 1):
                raise GPUError(f"PUFFGPU_KERNELS/--kernels: matmul={value!r}: /sN needs a positive N")
        elif value not in MINGRU_VARIANTS:
            raise GPUError(f"PUFFGPU_KERNELS/--kernels: mingru={value!r}: must be one of {', '.join(MINGRU_VARIANTS)}")
        pins[fam] = value
    return pins


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Tuner:
    """Chooses kernel variants for one GPU; see the module docstring for the order of answers."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.rule: str | None = None  # "gpu" inside gpu_rule()
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

    # ------------------------------------------------------------------ modes
    @contextlib.contextmanager
    def gpu_rule(self):
        """Inside: every choice is the static GPU rule (no timing, no cache, no pins, no subgroups)."""
        old = self.rule
        self.rule = "gpu"
        try:
            yield self
        finally:
            self.rule = old

    # ------------------------------------------------------------------ the disk cache
    def _load(self) -> dict:
        if self._disk is not None:
            return self._disk
        self._disk = {}
        if not self.path.exists():
            return self._disk
        try:
            data = json.loads(self.path.read_text())
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
                other = json.loads(self.path.read_text())
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
                    probe, frac = _probe_plan(plan, max(1 / 64, PROBE_SECONDS / best))
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

    # ------------------------------------------------------------------ matmul
    def matmul(self, shape: ops.MatmulShape, call: ops.MatmulCall) -> tuple[str, int]:
        """(variant, splits) for one product."""
        gpu = self.gpu
        if self.rule == "gpu":
            return ops.matmul_gpu_rule(shape)
        if "matmul" in self.pins:
            choice = self._matmul_pin(self.pins["matmul"], shape)
            self.memo.setdefault(shape.key(), {"choice": choice, "family": "matmul", "work": shape.work})
            self.sources[shape.key()] = "pinned"
            return ops.parse_choice(choice)
        cands = self.matmul_candidates(shape)
        default = ops.format_choice(*self.matmul_default(shape))

        def bench(choice, reps, bufs):
            v, s = ops.parse_choice(choice)
            return call.bench_plan(gpu, v, s, reps, bufs)
        return ops.parse_choice(self._choose("matmul", shape.key(), cands, default, bench, shape.work))

    def matmul_default(self, shape: ops.MatmulShape) -> tuple[str, int]:
        """Without timing: lavapipe's subgroup kernels on a CPU adapter that has subgroups, else the GPU rule."""
        if self.gpu.is_cpu and self.gpu.has("subgroup"):
            return ("sg8_vec4" if shape.sg_vec4 else "sg8"), 1
        return ops.matmul_gpu_rule(shape)

    def matmul_candidates(self, shape: ops.MatmulShape) -> list[str]:
        """Every applicable variant worth timing (vec4 loads where they apply: never slower)."""
        out = []
        if self.gpu.has("subgroup"):
            out.append("sg8_vec4" if shape.sg_vec4 else "sg8")
        for fam in ("tile4x4", "tile8x4"):
            v = fam + "_vec4" if shape.vec4 else fam
            out += [v] + ([f"{v}/s{s}"] if (s := ops.gpu_splits(v, shape)) > 1 else [])
        out += ["wgmem"] + ([f"wgmem/s{s}"] if (s := ops.gpu_splits("wgmem", shape)) > 1 else [])
        if shape.work <= REF_MAX_WORK:
            out.append("ref")
        return out

    def _matmul_pin(self, pin: str, shape: ops.MatmulShape) -> str:
        base, _, s = pin.partition("/s")
        family = base.removesuffix("_vec4")
        if family == "sg8":
            variant = "sg8_vec4" if shape.sg_vec4 else "sg8"
        elif family == "ref" or family == "wgmem":
            variant = family
        else:
            variant = family + "_vec4" if shape.vec4 else family
        why = ops.matmul_applicable(variant, shape, self.gpu)
        if why:
            raise GPUError(f"PUFFGPU_KERNELS/--kernels pins matmul={pin}, but for {shape.label()}: {why}")
        splits = int(s) if s else ops.gpu_splits(variant, shape)
        return ops.format_choice(variant, splits if variant in ops.SPLITK_VARIANTS else 1)

    # ------------------------------------------------------------------ mingru
    def mingru(self, entry: str, R: int, T: int, H: int, bench) -> str:
        """'vec4' (4 hidden units per invocation) or 'scalar' (1 per invocation) for one mingru kernel."""
        if self.rule == "gpu":
            return "scalar"
        key = f"{entry} R={R} T={T} H={H}"
        if "mingru" in self.pins:
            self.memo.setdefault(key, {"choice": self.pins["mingru"], "family": "mingru", "work": R * T * H})
            self.sources[key] = "pinned"
            return self.pins["mingru"]
        default = "vec4" if self.gpu.is_cpu else "scalar"
        return self._choose("mingru", key, list(MINGRU_VARIANTS), default, bench, R * T * H)

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


def _probe_plan(plan: Plan, frac: float) -> tuple[Plan, float]:
    """The same dispatches on a slice of their grids (the longest dimension cut to ~frac): for timing
    only, the outputs are partial. Returns (probe plan, the fraction of the first dispatch it runs)."""
    from .gpu import Dispatch
    probe = Plan(plan.gpu, plan.label + " (probe)")
    probe.arena, probe._keep = plan.arena, [plan]  # bind groups point into plan's arena
    actual = None
    for d in plan.dispatches:
        g = list(d.grid)
        i = max(range(3), key=lambda j: g[j])
        cut = max(1, round(g[i] * frac))
        if actual is None:
            actual = cut / g[i]
        g[i] = cut
        probe.dispatches.append(Dispatch(d.kernel, d.bind_group, tuple(g), d.info))
    return probe, (actual or 1.0)


def _run_timed(gpu, plan: Plan) -> float:
    t = time.perf_counter()
    gpu.run(plan)
    gpu.sync()
    return time.perf_counter() - t


# ---------------------------------------------------------------------------------------- dispatch shapes

# Kernels whose launchers (owned by other parts of the code) do not record their shape: estimates from
# their Params, used by the report and marked "est." there. entry -> params -> (serial loop, work).
ESTIMATES = {
    "rollout_store": lambda p: (1, p.get("N", 0) * p.get("ldo", 0)),
    "sample_actions": lambda p: (3 * p.get("A", 0), p.get("N", 0) * p.get("A", 0)),
    "compute_advantage": lambda p: (p.get("T", 0) * (1 + 3 * p.get("A", 0) * p.get("vtrace", 0)),
                                    p.get("R", 0) * p.get("T", 0) * (1 + p.get("A", 0) * p.get("vtrace", 0))),
    "ppo_loss": lambda p: (8 * p.get("A", 0), p.get("M", 0) * p.get("A", 0)),
    "reduce_stats": lambda p: (-(-p.get("M", 0) // 256) + 8, 8 * p.get("M", 0)),
    "reduce_logstd_grad": lambda p: (-(-p.get("M", 0) // 256) + 8, p.get("M", 0) * p.get("Kc", 0)),
}


def dispatch_rows(plan_label: str, plan: Plan) -> list[dict]:
    """One row per dispatch: kernel, grid, workgroup, invocations, serial loop, work, heavy and flags."""
    rows = []
    for i, d in enumerate(plan.infos):
        entry = d.label.split(":", 1)[-1].split("[", 1)[0]
        serial, work, est = d.serial, d.work, False
        if (serial is None or work is None) and entry in ESTIMATES:
            s_est, w_est = ESTIMATES[entry](d.params)
            serial = s_est if serial is None else serial
            work = w_est if work is None else work
            est = True
        heavy = work is not None and work >= ops.HEAVY_WORK
        flags = []
        if heavy and d.invocations < ops.GPU_MIN_INVOCATIONS:
            flags.append(f"< {ops.GPU_MIN_INVOCATIONS // 1024}K invocations")
        if heavy and serial is not None and serial > ops.GPU_MAX_SERIAL:
            flags.append(f"> {ops.GPU_MAX_SERIAL} serial")
        if work is None or serial is None:
            flags.append("shape not recorded")
        rows.append({"plan": plan_label, "index": i, "kernel": d.label, "grid": d.grid, "workgroup": d.workgroup,
                     "invocations": d.invocations, "serial": serial, "work": work, "estimated": est,
                     "heavy": heavy, "flags": flags})
    return rows


HEAVY_DEFINITION = (f"heavy = work >= {ops.HEAVY_WORK:,} operations (multiply-adds of a matmul; state updates "
                    f"or elements read/written by the other kernels); a heavy dispatch is flagged with fewer than "
                    f"{ops.GPU_MIN_INVOCATIONS:,} invocations in flight or more than {ops.GPU_MAX_SERIAL:,} "
                    f"iterations of its longest loop per invocation")


def format_dispatch_rows(rows: list[dict], only_heavy: bool = False) -> list[str]:
    out = [f"{'plan':<14s} {'#':>3s} {'kernel':<58s} {'wg':>4s} {'invocations':>11s} {'serial':>7s} "
           f"{'work':>11s}  flags"]
    for r in rows:
        if only_heavy and not r["heavy"] and not r["flags"]:
            continue
        serial = "?" if r["serial"] is None else f"{r['serial']:,}"
        work = "?" if r["work"] is None else f"{r['work']:,}" + ("~" if r["estimated"] else "")
        flag = ("HEAVY " if r["heavy"] else "") + ", ".join(r["flags"])
        out.append(f"{r['plan'][:14]:<14s} {r['index']:>3d} {r['kernel'][:58]:<58s} {r['workgroup']:>4d} "
                   f"{r['invocations']:>11,} {serial:>7s} {work:>11s}  {flag}")
    return out


def default_setup(gpu, gpu_rule: bool = False, agents: int = 1024, horizon: int = 64, minibatch: int = 8192,
                  spec=None) -> dict:
    """Policy, rollout, rollout step and a one-minibatch learner of the default platformer config
    (1024 agents, T=64, minibatch 8192, H=128, L=4, obs 413, heads [3,3]), their plans built with the
    tuner's choice or (gpu_rule) the static GPU rule."""
    from .learner import Learner
    from .policy import Policy, PolicySpec, Rollout, RolloutStep
    spec = spec or PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))
    ctx = gpu.tuner.gpu_rule() if gpu_rule else contextlib.nullcontext()
    with ctx:
        policy = Policy(gpu, spec, seed=73)
        ro = Rollout(gpu, spec, agents, horizon)
        step = RolloutStep(policy, ro, seed=73)
        learner = Learner(policy, ro, minibatch, replay_ratio=minibatch / (agents * horizon))  # one minibatch
    return {"spec": spec, "policy": policy, "rollout": ro, "step": step, "learner": learner}


def default_plans(gpu, gpu_rule: bool, **kw) -> list[tuple[str, Plan]]:
    """[(label, plan)] of the default config's rollout step (t > 0) and minibatch: built, not run."""
    s = default_setup(gpu, gpu_rule, **kw)
    return [("rollout_step", s["step"].plans[1]), ("minibatch", s["learner"].plans[0])]


def main(argv=None) -> int:
    """python -m trainer.tune [--gpu-rule] [--all]: the dispatch-shape report of the default plans."""
    import argparse
    from .gpu import get_gpu
    ap = argparse.ArgumentParser(prog="python -m trainer.tune", description=main.__doc__)
    ap.add_argument("--gpu-rule", action="store_true", help="report the static GPU choice instead of this adapter's")
    ap.add_argument("--all", action="store_true", help="list every dispatch, not only heavy or flagged ones")
    ap.add_argument("--adapter", default=None)
    args = ap.parse_args(argv)
    gpu = get_gpu(args.adapter)
    rows = []
    for label, plan in default_plans(gpu, args.gpu_rule):
        rows += dispatch_rows(label, plan)
    print(HEAVY_DEFINITION)
    print("\n".join(format_dispatch_rows(rows, only_heavy=not args.all)))
    flagged = [r for r in rows if r["heavy"] and r["flags"]]
    print(f"dispatch shapes ({'GPU rule' if args.gpu_rule else gpu.describe()}): {len(rows)} dispatches, "
          f"{sum(r['heavy'] for r in rows)} heavy, {len(flagged)} heavy flagged")
    if not args.gpu_rule:
        print(gpu.tuner.summary())
    return 1 if flagged and args.gpu_rule else 0


if __name__ == "__main__":
    sys.exit(main())
