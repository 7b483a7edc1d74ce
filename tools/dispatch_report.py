"""The dispatch-shape report: every dispatch of the default config's rollout step and minibatch, with
its grid, invocations in flight, longest serial loop and work, flagged where a heavy dispatch would
leave a real GPU idle (the rule in trainer/kernels: fewer than 16K invocations or more than 1K
serial loop iterations per invocation).

    PYTHONPATH=$PWD python tools/dispatch_report.py              # this adapter's tuned choice
    PYTHONPATH=$PWD python tools/dispatch_report.py --gpu-rule   # the static choice for a GPU (exit 1 if flagged)
    PYTHONPATH=$PWD python tools/dispatch_report.py --all        # every dispatch, not only heavy or flagged ones

Every launcher records its own dispatch's shape (Plan.note), so the report only reads plans.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.gpu import Plan, get_gpu  # noqa: E402
from trainer.kernels import GPU_MAX_SERIAL, GPU_MIN_INVOCATIONS, HEAVY_WORK  # noqa: E402
from trainer.learner import Learner, LearnerConfig  # noqa: E402
from trainer.policy import Policy, Rollout, RolloutStep  # noqa: E402
from trainer.spec import PolicySpec  # noqa: E402
from trainer.autotune import GpuRule, attach, using  # noqa: E402
from puffbase.console import safe_console  # noqa: E402

HEAVY_DEFINITION = (f"heavy = work >= {HEAVY_WORK:,} operations (multiply-adds of a matmul; state updates "
                    f"or elements read/written by the other kernels); a heavy dispatch is flagged with fewer than "
                    f"{GPU_MIN_INVOCATIONS:,} invocations in flight or more than {GPU_MAX_SERIAL:,} "
                    f"iterations of its longest loop per invocation")


def dispatch_rows(plan_label: str, plan: Plan) -> list[dict]:
    """One row per dispatch: kernel, grid, workgroup, invocations, serial loop, work, heavy and flags."""
    rows = []
    for i, d in enumerate(plan.infos):
        heavy = d.work is not None and d.work >= HEAVY_WORK
        flags = []
        if heavy and d.invocations < GPU_MIN_INVOCATIONS:
            flags.append(f"< {GPU_MIN_INVOCATIONS // 1024}K invocations")
        if heavy and d.serial is not None and d.serial > GPU_MAX_SERIAL:
            flags.append(f"> {GPU_MAX_SERIAL} serial")
        if d.work is None or d.serial is None:
            flags.append("shape not recorded")
        rows.append({"plan": plan_label, "index": i, "kernel": d.label, "grid": d.grid, "workgroup": d.workgroup,
                     "invocations": d.invocations, "serial": d.serial, "work": d.work, "heavy": heavy, "flags": flags})
    return rows


def format_dispatch_rows(rows: list[dict], only_heavy: bool = False) -> list[str]:
    out = [f"{'plan':<14s} {'#':>3s} {'kernel':<58s} {'wg':>4s} {'invocations':>11s} {'serial':>7s} "
           f"{'work':>11s}  flags"]
    for r in rows:
        if only_heavy and not r["heavy"] and not r["flags"]:
            continue
        serial = "?" if r["serial"] is None else f"{r['serial']:,}"
        work = "?" if r["work"] is None else f"{r['work']:,}"
        flag = ("HEAVY " if r["heavy"] else "") + ", ".join(r["flags"])
        out.append(f"{r['plan'][:14]:<14s} {r['index']:>3d} {r['kernel'][:58]:<58s} {r['workgroup']:>4d} "
                   f"{r['invocations']:>11,} {serial:>7s} {work:>11s}  {flag}")
    return out


def default_setup(gpu, gpu_rule: bool = False, agents: int = 1024, horizon: int = 64, minibatch: int = 8192,
                  spec: PolicySpec | None = None) -> dict:
    """Policy, rollout, rollout step and a one-minibatch learner of the default platformer config
    (1024 agents, T=64, minibatch 8192, H=128, L=4, obs 413, heads [3,3]), their plans built with
    gpu.chooser's choice (a tuner is attached if there is none) or, with gpu_rule, the static GPU rule."""
    spec = spec or PolicySpec(obs_size=413, hidden=128, layers=4, act_sizes=(3, 3))
    if gpu.chooser is None:
        attach(gpu)
    with using(gpu, GpuRule() if gpu_rule else gpu.chooser):
        policy = Policy(gpu, spec, seed=73)
        ro = Rollout(gpu, spec, agents, horizon, row_multiple=minibatch // horizon)
        step = RolloutStep(policy, ro, seed=73)
        learner = Learner(policy, ro, LearnerConfig(minibatch_size=minibatch,
                                                    replay_ratio=minibatch / (agents * horizon)))  # one minibatch
    return {"spec": spec, "policy": policy, "rollout": ro, "step": step, "learner": learner}


def default_plans(gpu, gpu_rule: bool, **kw) -> list[tuple[str, Plan]]:
    """[(label, plan)] of the default config's rollout step (t > 0) and minibatch: built, not run."""
    s = default_setup(gpu, gpu_rule, **kw)
    return [("rollout_step", s["step"].plans[1]), ("minibatch", s["learner"].plans[0])]


def main(argv=None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    ap = argparse.ArgumentParser(prog="tools/dispatch_report.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-rule", action="store_true", help="report the static GPU choice instead of this adapter's")
    ap.add_argument("--all", action="store_true", help="list every dispatch, not only heavy or flagged ones")
    ap.add_argument("--adapter", default=None)
    args = ap.parse_args(argv)
    gpu = get_gpu(args.adapter)
    tuner = attach(gpu)
    rows = []
    for label, plan in default_plans(gpu, args.gpu_rule):
        rows += dispatch_rows(label, plan)
    print(HEAVY_DEFINITION)
    print("\n".join(format_dispatch_rows(rows, only_heavy=not args.all)))
    flagged = [r for r in rows if r["heavy"] and r["flags"]]
    print(f"dispatch shapes ({'GPU rule' if args.gpu_rule else gpu.describe()}): {len(rows)} dispatches, "
          f"{sum(r['heavy'] for r in rows)} heavy, {len(flagged)} heavy flagged")
    if not args.gpu_rule:
        print(tuner.summary())
    return 1 if flagged and args.gpu_rule else 0


if __name__ == "__main__":
    sys.exit(main())
