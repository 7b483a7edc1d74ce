"""What puffgpu does on this machine's GPU, in one report to paste into a bug report.

    PUFFGPU_ADAPTER=nvidia python3 tools/gpu_report.py      # from a checkout, PYTHONPATH=<checkout>

Prints the adapter (name, backend, driver, features, relevant limits, subgroup size), golden checks of
every kernel variant on it (pass/fail with the max error, the tests' golden data and tolerance table),
the tuner's choice per matmul shape of the default platformer plans with each variant's GFLOP/s, the
learner's ms per minibatch, the dispatch-shape report, and platformer training SPS for about
--train-seconds (60) of the default config. The last line is always
    gpu report: <adapter>: train platformer <SPS> SPS, matmul 8192x128x384 <G> GFLOP/s, goldens <passed>/<total>
Needs only puffgpu's runtime dependencies (numpy, safetensors, rich, wgpu, cffi, glfw): no pytest,
torch or matplotlib. A section that fails prints its error and the report goes on.
Choose the adapter with PUFFGPU_ADAPTER or --adapter (a substring of its name, its backend or 'cpu').
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]  # trainer and golden (the checkout), bench_kernels

import numpy as np  # noqa: E402
from puffbase.console import safe_console  # noqa: E402

RELEVANT_FEATURES = ("subgroup", "timestamp-query", "shader-f16")


def section(title):
    print(f"\n== {title}", flush=True)


def guarded(fn, *args, default=None):
    """Run one report section; on failure print the error and go on."""
    try:
        return fn(*args)
    except BaseException as e:  # noqa: BLE001 (a report must reach its last line; KeyboardInterrupt too)
        if isinstance(e, SystemExit):
            raise
        print(f"   FAILED: {type(e).__name__}: {e}")
        print("   " + "".join(traceback.format_exception(e)[-3:]).replace("\n", "\n   ").rstrip())
        return default


# ------------------------------------------------------------------------------------------------ adapter

def report_adapter(gpu):
    import wgpu
    from trainer.gpu import disabled_features
    info = gpu.info
    print(f"adapter: {gpu.describe()}")
    print(f"   vendor {info.get('vendor')!r} (id {info.get('vendor_id')}), device id {info.get('device_id')}, "
          f"architecture {info.get('architecture')!r}")
    print(f"   driver: {gpu.driver}")
    print(f"   python {platform.python_version()} on {platform.platform()}, wgpu-py {wgpu.__version__}")
    for f in RELEVANT_FEATURES:
        state = ("enabled" if gpu.has(f) else "disabled by PUFFGPU_DISABLE_FEATURES" if f in disabled_features()
                 else "present, unused" if f in gpu.adapter_features else "absent")
        print(f"   feature {f}: {state}")
    print(f"   all adapter features: {', '.join(sorted(gpu.adapter_features))}")
    if gpu.has("subgroup"):
        print(f"   subgroup size: {gpu.subgroup_size} (measured in a 64-invocation workgroup)")
    else:
        print("   subgroup size: n/a (no subgroups: the portable kernels run)")
    return gpu.describe()


def report_limits(gpu):
    """Per limit: WebGPU's default, the adapter's, the device's (as requested under PUFFGPU_LIMITS), and
    the most any kernel needs, with the kernel."""
    from trainer.gpu import WEBGPU_LIMITS, ShaderFile
    from trainer.kernels.catalog import entry_points
    most = {}
    for file, entry, constants in entry_points():
        for k, v in ShaderFile.load(file).needs(entry, constants).items():
            if v > most.get(k, (-1, ""))[0]:
                most[k] = (v, f"{file}:{entry}")
    print(f"   limits mode: {gpu.limits_mode} (PUFFGPU_LIMITS)")
    print(f"   {'limit':40s} {'WebGPU':>10s} {'adapter':>12s} {'device':>12s} {'kernels need':>13s}  (the most demanding)")
    for k in sorted(set(WEBGPU_LIMITS) | set(most)):
        need, who = most.get(k, (None, ""))
        print(f"   {k:40s} {WEBGPU_LIMITS.get(k, '-')!s:>10s} {gpu.adapter.limits.get(k, '-')!s:>12s} "
              f"{gpu.limits.get(k, '-')!s:>12s} {'-' if need is None else need!s:>13s}  {who}")


# ------------------------------------------------------------------------------------------------ goldens

def report_goldens(gpu, verbose: bool):
    """Every variant on every golden case; kernels the goldens leave to the tuner (policy, learner) use
    each family's static default here: nothing is timed or written to the user's cache."""
    from trainer.autotune import using
    with using(gpu, None):  # no chooser: each family's static default, nothing timed or cached
        return _report_goldens(gpu, verbose)


def _report_goldens(gpu, verbose: bool):
    import golden.runs as gr
    from golden.check import TOLERANCES, rel_error
    from trainer.kernels import matmul
    probe = matmul.MatmulShape("matmul_forward", 4, 4, 4, 1, True, True)
    for variant in matmul.VARIANTS:
        why = variant.unavailable(probe, gpu)
        if why is not None:
            print(f"   matmul[{variant.name}]: not run ({why})")
    groups = [(label, thunk) for _, label, thunk in gr.all_runs(gpu)]  # (group label, thunk returning checks)
    passed = total = 0
    per_kernel: dict[str, list] = {}
    failures = []
    for label, thunk in groups:
        family = label.split(" ")[0] if not label.startswith("matmul split-K") else label.split(" ")[0] + " " + label.split(" ")[1]
        try:
            checks = thunk()
        except Exception as e:  # noqa: BLE001
            total += 1
            failures.append(f"{label}: {type(e).__name__}: {e}")
            per_kernel.setdefault(family, []).append((False, float("inf")))
            continue
        for name, got, want, tol_key in checks:
            total += 1
            err, idx = rel_error(got, np.asarray(want))
            ok = err <= TOLERANCES[tol_key][0]
            passed += ok
            per_kernel.setdefault(family, []).append((ok, err))
            if not ok:
                failures.append(f"{label}: {name}: max relative error {err:.3e} > {TOLERANCES[tol_key][0]:.0e} "
                                f"({tol_key}) at index {tuple(int(i) for i in idx)}")
    for fam, results in per_kernel.items():
        n_ok = sum(ok for ok, _ in results)
        worst = max(e for _, e in results)
        print(f"   {fam:34s} {n_ok:4d}/{len(results):<4d} {'pass' if n_ok == len(results) else 'FAIL'}   "
              f"max error {worst:.2e}")
    for f in failures[:40 if verbose else 15]:
        print(f"   FAIL {f}")
    if len(failures) > 15 and not verbose:
        print(f"   ... {len(failures) - 15} more failures (--verbose lists them)")
    print(f"goldens: {passed}/{total} passed")
    return passed, total


# ------------------------------------------------------------------------------------------------ tuner

def report_tuner(gpu):
    from dispatch_report import default_setup
    from trainer.autotune import attach
    tuner = attach(gpu)
    t = time.perf_counter()
    setup = default_setup(gpu)
    print(f"   default plans built in {time.perf_counter() - t:.1f} s (tuning included)")
    for row in tuner.table():
        cands = sorted(row["candidates"].items(), key=lambda kv: -kv[1][1])
        est = set(row.get("pruned") or [])
        cells = " ".join(f"{c}{'~' if c in est else ''}:{g:.1f}" for c, (_, g) in cands)
        print(f"   {row['key']:72s} {row['source'] or '':7s} -> {row['choice']:16s} {cells}")
    print("   (GFLOP/s per candidate; ~ = not timed in full (a slice of its grid, or one run), "
          "mingru figures count 2 flops per state update)")
    print(f"   {tuner.summary()}")
    return setup


def report_learner(gpu, setup):
    from trainer.kernels import pack_transitions
    ro, learner = setup["rollout"], setup["learner"]
    N, T = ro.N, ro.T
    rng = np.random.default_rng(0)
    ro.upload_obs(rng.random((N * T, ro.obs_stride), dtype=np.float32))
    gpu.upload(ro.actions, rng.integers(0, 3, (N * T, 2)).astype(np.float32))
    gpu.upload(ro.transitions, pack_transitions(N * T, fill=0.0, logprob=-2.2,
                                                reward=rng.standard_normal(N * T).astype(np.float32) * 0.1))
    learner.run(0.01, minibatches=[0])  # warm-up
    times = []
    for _ in range(3):
        t = time.perf_counter()
        learner.run(0.01, minibatches=[0])
        times.append(time.perf_counter() - t)
    ms = min(times) * 1e3
    print(f"learner: {ms:.1f} ms per minibatch of {learner.M} ({learner.dispatches_per_minibatch()} dispatches, "
          f"readback included; best of 3)")
    return ms


def report_matmul(gpu):
    from bench_kernels import bench_matmul
    g = bench_matmul(gpu, "matmul_forward", 8192, 384, 128, None, 10)
    print(f"matmul 8192x128x384 (the tuner's choice): {g:.1f} GFLOP/s")
    return g


def report_dispatch_shapes(gpu, setup):
    from dispatch_report import HEAVY_DEFINITION, default_plans, dispatch_rows, format_dispatch_rows
    print(f"   {HEAVY_DEFINITION}")
    rows = []
    for label, plan in (("rollout_step", setup["step"].plans[1]), ("minibatch", setup["learner"].plans[0])):
        rows += dispatch_rows(label, plan)
    lines = format_dispatch_rows(rows, only_heavy=True)
    print("   this adapter's choice (heavy and flagged dispatches):")
    for line in lines:
        print("   " + line)
    flagged = sum(1 for r in rows if r["heavy"] and r["flags"])
    print(f"   this adapter's choice: {len(rows)} dispatches, {sum(r['heavy'] for r in rows)} heavy, {flagged} flagged")
    rule = []
    for label, plan in default_plans(gpu, gpu_rule=True):
        rule += dispatch_rows(label, plan)
    rflag = [r for r in rule if r["heavy"] and r["flags"]]
    print(f"   the static GPU rule: {len(rule)} dispatches, {sum(r['heavy'] for r in rule)} heavy, {len(rflag)} flagged")
    for line in format_dispatch_rows(rflag)[1:]:
        print("   " + line)


# ------------------------------------------------------------------------------------------------ training

def report_training(seconds: float, adapter: str | None):
    """Default platformer training in a fresh `python -m trainer.run` process (so the figure is what a
    user's run gets, not one slowed by this report's earlier work), stopped by Ctrl-C `seconds` after
    it writes its log header; SPS over the epochs after the first (which includes warm-up), or the
    first alone if it is the only one. The kernel choice comes from the cache the tuner section wrote."""
    from trainer import config
    cfg, _ = config.load("platformer", {})
    N, T = cfg["vec"]["total_agents"], cfg["train"]["horizon"]
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="puffgpu-report-") as tmp:
        log_dir = Path(tmp) / "logs"
        cmd = [sys.executable, "-m", "trainer.run", "--env", "platformer", "--plain",
               "--base.checkpoint_dir", f"{tmp}/checkpoints", "--base.log_dir", str(log_dir),
               "--base.checkpoint_interval", str(10 ** 9),
               "--train.total_timesteps", str(N * T * 100000)]  # stopped by time, not by steps
        if adapter:
            cmd += ["--adapter", adapter]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
                   PYTHONIOENCODING="utf-8:replace")  # read back as UTF-8 on any OS
        # Windows has no SIGINT to send: the run gets its own process group and CTRL_BREAK_EVENT,
        # which trainer.run handles as Ctrl-C (stop after the epoch in progress)
        group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if sys.platform == "win32" else {}
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                encoding="utf-8", errors="replace", **group)
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
        reader.start()
        t0 = time.time()  # start the clock when the run writes its log header (setup done), then Ctrl-C it
        while proc.poll() is None and not list(log_dir.rglob("*.jsonl")) and time.time() - t0 < 600:
            time.sleep(0.2)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.CTRL_BREAK_EVENT if sys.platform == "win32" else signal.SIGINT)
        try:
            proc.wait(300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(10)
        logs = list(log_dir.rglob("*.jsonl"))
        rows = [json.loads(line) for line in logs[0].read_text(encoding="utf-8").splitlines()] if logs else []
    for line in "".join(out).splitlines():
        if line.startswith(("kernels:", "epoch", "stopped", "done", "error")):
            print("   " + line[:160])
    epochs = [r for r in rows if r["type"] == "epoch"]
    if not epochs:
        print("train: no epoch finished")
        return 0.0
    timed = epochs[1:] or epochs
    sps = N * T * len(timed) / sum(e["epoch_seconds"] for e in timed)
    last = epochs[-1]
    perf = f"; perf {last['env/perf']:.3f}" if "env/perf" in last else ""
    print(f"train: platformer {N} agents x {T}: {len(epochs)} epochs ({len(timed)} timed), {sps:,.0f} SPS"
          f"{perf} at {last['global_step']:,} steps")
    return sps


def main():
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adapter", default=None, help="adapter name/backend substring (default: PUFFGPU_ADAPTER, "
                    "else the best GPU)")
    ap.add_argument("--train-seconds", type=float, default=60.0, help="seconds of platformer training (0: skip)")
    ap.add_argument("--verbose", action="store_true", help="list every failing golden check")
    args = ap.parse_args()
    t0 = time.perf_counter()
    from trainer.gpu import get_gpu
    section("adapter")
    gpu = guarded(get_gpu, args.adapter, True)
    if gpu is None:
        print("gpu report: no adapter: train platformer 0 SPS, matmul 8192x128x384 0.0 GFLOP/s, goldens 0/0")
        return 1
    adapter = guarded(report_adapter, gpu, default=gpu.describe())
    section("limits (WebGPU's defaults, this adapter's, what the kernels need)")
    guarded(report_limits, gpu)
    section("goldens (every kernel variant)")
    passed, total = guarded(report_goldens, gpu, args.verbose, default=(0, 0))
    section("kernel choice (default platformer plans)")
    setup = guarded(report_tuner, gpu)
    section("learner")
    if setup:
        guarded(report_learner, gpu, setup)
    gflops = guarded(report_matmul, gpu, default=0.0) or 0.0
    section("dispatch shapes")
    if setup:
        guarded(report_dispatch_shapes, gpu, setup)
    setup = None
    sps = 0.0
    if args.train_seconds > 0:
        section(f"training (~{args.train_seconds:.0f} s of default platformer)")
        sps = guarded(report_training, args.train_seconds, args.adapter, default=0.0) or 0.0
    print(f"\nreport took {time.perf_counter() - t0:.0f} s")
    print(f"gpu report: {adapter}: train platformer {sps:,.0f} SPS, matmul 8192x128x384 {gflops:.1f} GFLOP/s, "
          f"goldens {passed}/{total}")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
