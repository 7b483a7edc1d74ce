"""Record puffgpu's GPU work as plan recordings, with a tolerance for every read, and replay them on Dawn.

    python tools/plan_export.py OUT goldens               # every golden run -> OUT/goldens.plan
    python tools/plan_export.py OUT train [-- ARGS]       # a trainer.run process -> OUT/train.plan
    python tools/plan_export.py OUT goldens train --dawn DIR   # both, then replay them on Dawn

A recording (format: trainer/gpu/record.py, docs/design.md "Plans that run anywhere") holds buffers,
kernels, bind groups as buffer ranges, dispatch grids, Params bytes, uploads and reads, in order. It is
made on this machine's adapter under PUFFGPU_LIMITS=webgpu (WebGPU's default limits, so every binding
sits at a 256-byte aligned window as on any conformant device) with each kernel family's static
default (no tuning: the tuner's timing runs would be replayed too).

`goldens` runs golden/runs.py's `all_runs` in this process, each after a mark naming it, and fails if
a golden check fails here. `train` runs `python -m trainer.run` (default: one epoch of the default
platformer, the CI's SwiftShader run: 64 rollout steps of 4,096 agents and 32 minibatch updates) with
recording on. Then every read gets its tolerance: READS maps a run's family and the read buffer's label
to a row of golden/check.py's table (and, for weights, a second row for their change since the last
time that range was written or read, as the learner goldens check), and the header carries the table.
A read no row names is an error, so the table stays complete. With --dawn, tools/dawn_replay.mjs
replays the recordings on Dawn (SwiftShader unless VK_ICD_FILENAMES says otherwise) and this exits with
its status.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
# one default platformer epoch (262,144 steps: 4,096 agents x 64) — the flags CI's SwiftShader run uses
TRAIN_ARGS = ["--env", "platformer", "--plain", "--train.total_timesteps", "32768"]
EXACT = "exact"  # compared bit for bit

# family -> {buffer label pattern: (tolerance row of the value, EXACT, or None: no value check;
#                                   tolerance row of the change since the range was last written or read, or None)}
READS = {
    "matmul": {"y": ("matmul", None), "dx": ("matmul", None), "dw": ("matmul", None)},
    "mingru_scan": {"y": ("mingru", None), "hs": ("mingru", None), "dc": ("mingru_grad", None),
                    "dx": ("mingru_grad", None)},
    "mingru_step": {"y*": ("mingru", None), "state": ("mingru", None), "snapshot": ("mingru", None)},
    "policy": {"act.out": ("policy", None), "grads": ("policy_grad", None), "dobs": ("policy_grad", None)},
    "policy_picture": {"act.out": ("picture", None), "grads": ("picture_grad", None)},
    # sampled actions (float indices, where a flip fails, and Gaussian draws, which WGSL's cos/sin precision
    # lets differ), their log-probability and value columns
    "sample": {"actions": ("sample_draw", None), "actions_step": ("sample_draw", None),
               "transitions": ("sample_draw", None)},
    "advantage": {"transitions": ("advantage", None)},
    "ppo": {"dout": ("ppo", None), "stats": ("ppo", None), "logs": ("ppo_stats", None), "dlogstd": ("ppo_logstd", None)},
    "muon": {"weights": ("muon", "muon_step"), "scalars": ("muon", None), "muon.momentum": ("muon", None)},
    "learner": {"weights": ("learner", "learner_step"), "muon.momentum": ("learner_step", None),
                "learn.logs": ("learner_stats", None), "learn.scalars": ("learner_stats", None)},
    "conv": {"ys*": ("conv", None), "dys*": ("conv_grad", None), "dw*": ("conv_grad", None)},
    # the training epoch: sampled actions (float indices: any flip is a failure), the logged statistics, and
    # the checkpoint's weights by their change over the epoch's updates (16 for the default platformer: the
    # `learner` row is for 1-3 updates, `learner_step` for the change compounded over updates)
    "train": {"step.actions": ("sample", None), "learn.logs": ("learner_stats", None),
              "learn.scalars": ("learner_stats", None), "weights": (None, "learner_step"),
              "muon.momentum": ("learner_step", None)},
}
for _base in ("matmul", "advantage", "ppo", "learner"):
    READS.update({k: READS[_base] for k in (f"{_base}_splitk", f"{_base}_heads", f"{_base}_picture")})
# reads any run may make: a wait (GPU.sync reads 4 bytes of the empty bindings' buffer) compares bit for bit;
# the subgroup size is the device's, not a result
COMMON = {"dummy (writable)": (EXACT, None)}
SKIP = {"subgroup size probe": "the device's subgroup size (lavapipe 8, SwiftShader 4), not a result"}


def rule(family: str, label: str):
    """(tol, change_tol) for a read of buffer `label` in a run of `family`; None for a read that is skipped."""
    if label in SKIP:
        return None
    for table in (READS.get(family, {}), COMMON):
        for pattern, r in table.items():
            if fnmatch.fnmatchcase(label, pattern):
                return r
    raise KeyError(label)


def annotate(path: Path, family: str = ""):
    """Give every read of recording `path` its tolerance rows (READS), in place: a read takes the family of
    the latest mark before it, or `family`. Marks each event a change is measured from with "keep"."""
    from golden.check import TOLERANCES
    from trainer.gpu import record
    header, evs, _ = record.load(path)
    events = path / "events.jsonl"
    keep, unknown, counts = set(), set(), {"reads": 0, "skipped": 0}
    for ev in evs:  # (annotating again starts afresh)
        for d in (ev, ev.get("read") or {}):
            for k in ("tol", "exact", "change_tol", "skip", "keep"):
                d.pop(k, None)
    for ev in evs:
        if ev["e"] == "mark":
            family = ev.get("family", family)
        elif ev["e"] == "submit" and ev["read"]:
            rd = ev["read"]
            try:
                r = rule(family, rd["label"])
            except KeyError:
                unknown.add(f"{family}: {rd['label']}")
                continue
            counts["reads"] += 1
            if r is None:
                rd["skip"] = SKIP[rd["label"]]
                counts["skipped"] += 1
                continue
            tol, change = r
            if tol == EXACT:
                rd["exact"] = True
            elif tol:
                rd["tol"] = tol
            if change and rd["prev"] is not None:
                rd["change_tol"] = change
                keep.add(rd["prev"])
            elif not tol:
                sys.exit(f"plan_export: {path}: a read of {rd['label']} ({family}) is compared by its change only, "
                         f"but nothing wrote or read that range before")
    if unknown:
        sys.exit(f"plan_export: {path}: no tolerance for reads of " + ", ".join(sorted(unknown)) +
                 " (add them to READS in tools/plan_export.py)")
    for i in keep:
        ev = evs[i]
        (ev["read"] if ev["e"] == "submit" else ev)["keep"] = True
    header["tolerances"] = {k: list(v) for k, v in TOLERANCES.items()}
    tmp = events.with_name("events.jsonl.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, sort_keys=True) + "\n")
        for ev in evs:
            f.write(json.dumps(ev, separators=(",", ":")) + "\n")
    os.replace(tmp, events)
    return counts


def _only_recording(folder: Path) -> Path:
    found = sorted(folder.glob("*.plan"))
    if len(found) != 1:
        sys.exit(f"plan_export: expected one recording in {folder}, found {[p.name for p in found]}")
    return found[0]


def _place(src: Path, dst: Path):
    shutil.rmtree(dst, ignore_errors=True)
    os.replace(src, dst)


def record_goldens(out: Path) -> Path:
    """Every golden run, in this process, marked by its label; fails if a golden check fails here."""
    tmp = Path(tempfile.mkdtemp(prefix="goldens-", dir=out))
    os.environ.update(PUFFGPU_RECORD_PLAN=str(tmp), PUFFGPU_LIMITS="webgpu")
    import numpy as np

    import golden.runs as gr
    from golden.check import TOLERANCES, rel_error
    from trainer.gpu import get_gpu
    gpu = get_gpu(quiet=True)
    runs, failed, checks = 0, [], 0
    for family, label, thunk in gr.all_runs(gpu):
        gpu.recorder.mark(label, family)
        runs += 1
        for name, got, want, key in thunk():
            checks += 1
            err, _ = rel_error(got, np.asarray(want))
            if err > TOLERANCES[key][0]:
                failed.append(f"{label}: {name}: {err:.3e} > {TOLERANCES[key][0]} ({key})")
    if failed:
        sys.exit("plan_export: golden checks fail on this device, nothing to record:\n  " + "\n  ".join(failed[:20]))
    gpu.recorder.close()
    dst = out / "goldens.plan"
    _place(_only_recording(tmp), dst)
    shutil.rmtree(tmp)
    counts = annotate(dst)
    print(f"plan_export: {dst}: {runs} golden runs, {checks} checks passed on {gpu.describe()}, "
          f"{counts['reads']} reads")
    return dst


def record_train(out: Path, args: list[str]) -> Path:
    """A `python -m trainer.run` process (checkpoints and logs in a temporary folder)."""
    tmp = Path(tempfile.mkdtemp(prefix="train-", dir=out))
    env = dict(os.environ, PUFFGPU_RECORD_PLAN=str(tmp / "rec"), PUFFGPU_LIMITS="webgpu", PUFFGPU_TUNE="0",
               PUFFGPU_CACHE=str(tmp / "cache"))
    cmd = [sys.executable, "-m", "trainer.run", *args, "--base.checkpoint_dir", str(tmp / "ck"),
           "--base.log_dir", str(tmp / "logs")]
    r = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    if r.returncode:
        sys.exit(f"plan_export: the recorded training run failed (exit {r.returncode}): {' '.join(cmd)}")
    dst = out / "train.plan"
    _place(_only_recording(tmp / "rec"), dst)
    shutil.rmtree(tmp)
    counts = annotate(dst, "train")
    print(f"plan_export: {dst}: python -m trainer.run {' '.join(args)}: {counts['reads']} reads")
    return dst


def replay(dawn: Path, recordings: list[Path], result: Path | None) -> int:
    node = shutil.which("node")
    if node is None:
        sys.exit("plan_export: the replay needs Node.js (`node` on PATH)")
    if not (dawn / "node_modules" / "webgpu" / "index.js").is_file():
        sys.exit(f"plan_export: no npm package `webgpu` under {dawn}; install it with\n"
                 f"    npm install --prefix {dawn} webgpu@0.6.2")
    env = dict(os.environ)
    if "VK_ICD_FILENAMES" not in env and SWIFTSHADER_ICD.is_file():
        env["VK_ICD_FILENAMES"] = str(SWIFTSHADER_ICD)
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    cmd = [node, str(ROOT / "tools" / "dawn_replay.mjs"), str(dawn), *map(str, recordings)]
    return subprocess.run(cmd + (["--json", str(result)] if result else []), env=env).returncode


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else None
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder for the recordings (<what>.plan)")
    ap.add_argument("what", nargs="+", choices=("goldens", "train"))
    ap.add_argument("--dawn", type=Path, help="folder with node_modules/webgpu: replay the recordings there")
    ap.add_argument("--json", type=Path, help="with --dawn: write the replay's results there")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    done = []
    for what in dict.fromkeys(args.what):
        t0 = time.perf_counter()
        done.append(record_goldens(args.out) if what == "goldens" else record_train(args.out, extra or TRAIN_ARGS))
        print(f"plan_export: recorded {what} in {time.perf_counter() - t0:.0f} s")
    if args.dawn:
        t0 = time.perf_counter()
        rc = replay(args.dawn, done, args.json)
        print(f"plan_export: replayed on Dawn in {time.perf_counter() - t0:.0f} s")
        sys.exit(rc)


if __name__ == "__main__":
    main()
