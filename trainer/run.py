"""Train a policy: python -m trainer.run --env platformer [--section.key value ...]

PufferLib 5.0's training loop (DESIGN.md "Data flow"), top to bottom:
    each epoch: a rollout of `horizon` steps with the GPU policy (recurrent state carried across
    rollouts, zeroed at terminals), then replay_ratio·N·T/minibatch_size minibatch updates with
    the prebuilt learner plans, cosine learning rate per epoch; log, dashboard, checkpoint.
Ctrl-C stops at the next env step (or after the update in progress) and saves a checkpoint of the
last completed epoch; --base.load_model_path latest resumes.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

# libgomp reads this when the env module loads: on a few cores shared with a CPU GPU driver
# (lavapipe), spinning OpenMP threads would steal the cores the kernels need.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import envs  # noqa: E402
from envs import goexplore  # noqa: E402

from . import checkpoint as ckpt  # noqa: E402
from . import config as config_mod  # noqa: E402
from . import loggers as loggers_mod  # noqa: E402
from .dashboard import Dashboard, Stopwatch  # noqa: E402
from .gpu import GPUError, get_gpu  # noqa: E402
from .learner import Learner, LearnerConfig, cosine_lr  # noqa: E402
from .metrics import STATS  # noqa: E402
from .policy import Policy, Rollout, RolloutStep  # noqa: E402
from .spec import PolicySpec  # noqa: E402
from .tune import attach  # noqa: E402

CPU_NOTE = ("note: this is a CPU adapter (lavapipe): correct but slow. This path is for testing and small runs; "
            "train on a GPU for real work.")


class TrainingError(RuntimeError):
    pass


def learner_config(t: dict) -> LearnerConfig:
    return LearnerConfig(gamma=t["gamma"], gae_lambda=t["gae_lambda"], clip_coef=t["clip_coef"], vf_coef=t["vf_coef"],
                         vf_clip_coef=t["vf_clip_coef"], ent_coef=t["ent_coef"], max_grad_norm=t["max_grad_norm"],
                         momentum=t["momentum"], vtrace=bool(t["vtrace"]), vtrace_rho_clip=t["vtrace_rho_clip"],
                         vtrace_c_clip=t["vtrace_c_clip"], freeze_continuous=bool(t["freeze_continuous"]))


def buffer_seed(seed: int, b: int) -> int:
    """The sampling seed of env buffer b: buffer 0 keeps the run's seed (so num_buffers = 1 is
    unchanged); the others get distinct ones, as each buffer's sampler numbers its agents from 0."""
    return (seed + b * 0x9E3779B9) & 0xFFFFFFFF


def rollout_buffers(env, infers: list, T: int, epoch: int, watch: Stopwatch, stop: dict, pool) -> None:
    """One rollout with PufferLib's num_buffers > 1: the agents are split into contiguous buffers
    of whole envs; while worker threads step one buffer's envs (C, without the GIL), this thread
    runs the GPU inference of the next. Buffer b at step t: wait for its envs' step t−1, infer
    a_t from its rows, hand the step to a worker. Each buffer's results depend only on its own
    envs and its own seeded sampler, so a run is the same function of the seed for a given
    num_buffers (not across different num_buffers: buffers sample with different seeds)."""
    pending = [None] * len(infers)
    try:
        for step in range(T):
            if stop["requested"]:
                break
            for b, infer in enumerate(infers):
                r0, r1 = env.buffer_rows(b)
                if pending[b] is not None:
                    s = time.perf_counter()
                    pending[b].result()
                    watch.add("env", s)
                s = time.perf_counter()
                actions = infer(step, epoch * T + step, env.observations[r0:r1], env.rewards[r0:r1],
                                env.terminals[r0:r1], env.action_mask[r0:r1])
                watch.add("inference", s)
                pending[b] = pool.submit(env.step_buffer, b, actions)
    finally:
        s = time.perf_counter()
        for p in pending:
            if p is not None:
                p.result()
        watch.add("env", s)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


def train(env_name: str, cfg: dict, adapter: str | None = None, live: bool | None = None,
          run_id: str | None = None, loggers=()) -> dict:
    """Run training; returns a summary (checkpoint path, steps, final metrics). `loggers`: more
    objects with log(metrics)/close() called beside the JSONL log (the sweep's Ray Tune reporter)."""
    base, vec, t = cfg["base"], cfg["vec"], cfg["train"]
    loggers_mod.check(cfg)  # a requested logger that is not installed fails before any work
    gpu = get_gpu(adapter, quiet=True)
    tuner = attach(gpu)  # kernel variants: pins, cache or timing (reads --kernels/--retune/--no-tune)
    print(f"puffgpu: adapter {gpu.describe()}", flush=True)
    if gpu.is_cpu:
        print(CPU_NOTE, flush=True)

    env = envs.make(env_name, vec["total_agents"], config=cfg["env"], num_threads=vec["num_threads"],
                    seed=base["seed"], check_actions=False,  # the sampler only emits valid indices
                    num_buffers=vec["num_buffers"])
    N, T = env.num_agents, t["horizon"]
    config_mod.validate(cfg, N)
    spec = PolicySpec(obs_size=env.obs_size, hidden=cfg["policy"]["hidden_size"],
                      layers=cfg["policy"]["num_layers"], act_sizes=env.act_sizes)
    for note in spec.pufferlib_notes():
        print(f"warning: {note}", flush=True)
    policy = Policy(gpu, spec, seed=base["seed"])
    rollout = Rollout(gpu, spec, N, T)
    B = env.num_buffers
    infer = RolloutStep(policy, rollout, seed=base["seed"]) if B == 1 else None
    infers = [RolloutStep(policy, rollout, seed=buffer_seed(base["seed"], b), row0=env.buffer_rows(b)[0],
                          rows=env.buffer_rows(b)[1] - env.buffer_rows(b)[0]) for b in range(B)] if B > 1 else None
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=B, thread_name_prefix="env") if B > 1 else None
    learner = Learner(policy, rollout, t["minibatch_size"], learner_config(t), t["replay_ratio"])
    print(tuner.summary(), flush=True)  # kernel variants: what was chosen, tuning time (trainer/tune.py)
    epochs = t["total_timesteps"] // (N * T)

    epoch, global_step, resumed_from = 0, 0, None
    if base["load_model_path"] not in (None, "None"):
        path = ckpt.resolve(base["load_model_path"], base["checkpoint_dir"], env.name)
        weights, momentum, meta = ckpt.load(path, spec, env=env.name, with_momentum=True)
        policy.write_weights(weights)
        state = meta.get("trainer_state") or {}
        if momentum is not None and state:  # a puffgpu checkpoint: continue the same run
            learner.muon.reset_momentum(momentum)
            epoch, global_step = state["epoch"], state["global_step"]
            run_id = run_id or state.get("run_id")
        resumed_from = str(path)
        print(f"loaded {path} (epoch {epoch}, step {global_step})", flush=True)
        restore_archive(env, path)
    run_id = run_id or new_run_id()

    log_path = Path(base["log_dir"]) / env.name / f"{run_id}.jsonl"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "config", "run_id": run_id, "env": env.name, "adapter": gpu.describe(),
              "num_agents": N, "policy": spec.describe(), "epochs": epochs,
              "resumed_from": resumed_from, "config": cfg}
    with open(log_path, "a") as f:
        f.write(json.dumps(header) + "\n")
    logger = loggers_mod.Loggers(cfg, header, log_path.with_suffix(""), extra=loggers)  # TensorBoard, W&B

    stop = {"requested": False}

    def on_sigint(signum, frame):
        if stop["requested"]:  # second Ctrl-C: stop now, without a checkpoint
            raise KeyboardInterrupt
        stop["requested"] = True
    # only the main thread may set a handler (a Ray Tune trial runs train() in a worker thread)
    main_thread = threading.current_thread() is threading.main_thread()
    old_handler = signal.signal(signal.SIGINT, on_sigint) if main_thread else None

    def save(step: int) -> Path:
        path = ckpt.checkpoint_path(base["checkpoint_dir"], env.name, run_id, step)
        if env.archive_enabled:  # first, so a complete checkpoint (its sidecar) implies its archive
            env.save_archive(goexplore.archive_path(path))
        ckpt.save(path, policy.read_weights(), spec, env.name, step, config=cfg,
                  momentum=learner.muon.read_momentum(),
                  state={"epoch": epoch, "global_step": step, "run_id": run_id})
        return path

    dash = Dashboard(env.name, gpu.describe(), run_id, epochs * N * T, live=live)
    dash.message(f"{env.name}: {N} agents, obs {spec.obs_size}, heads {list(spec.act_sizes)}; policy H={spec.hidden} "
                 f"L={spec.layers} ({spec.num_floats:,} params); {epochs} epochs of {N * T:,} steps, "
                 f"{learner.num_minibatches} minibatches of {learner.M} each; logs {log_path}")
    watch = Stopwatch()
    env_metrics: dict = {}
    last_ckpt, metrics = None, {}
    start, epoch_times = time.perf_counter(), []
    env.reset()
    try:
        while epoch < epochs and not stop["requested"]:
            t0 = time.perf_counter()
            watch.reset()
            if base["reset_every_horizon"]:
                gpu.zero(rollout.state)
            # rollout: obs_t (+ r_t, d_t, the outcome of a_{t-1}) → a_t → env step
            if infers is not None:
                rollout_buffers(env, infers, T, epoch, watch, stop, pool)
            for step in range(T if infers is None else 0):
                if stop["requested"]:  # Ctrl-C: drop the partial rollout; the weights are the last epoch's
                    break
                s = time.perf_counter()
                actions = infer(step, epoch * T + step, env.observations, env.rewards, env.terminals,
                                env.action_mask)
                watch.add("inference", s)
                s = time.perf_counter()
                env.step(actions)
                watch.add("env", s)
            if stop["requested"]:
                break
            # learn: every minibatch of the epoch in one submit, one learning rate per epoch
            s = time.perf_counter()
            lr = cosine_lr(t["learning_rate"], epoch, epochs, t["min_lr_ratio"]) if t["anneal_lr"] else t["learning_rate"]
            losses = learner.run(lr)
            watch.add("learn", s)
            bad = [k for k in STATS + ("grad_norm",) if not math.isfinite(losses[k])]
            if bad:
                raise TrainingError(
                    f"NaN/Inf in {', '.join(bad)} at epoch {epoch} (global step {global_step}); stopping. "
                    f"Last good checkpoint: {last_ckpt or 'none saved in this run'} (left untouched).")
            epoch += 1
            global_step += N * T
            env_metrics.update({f"env/{k}": v for k, v in env.log().items()})
            env_metrics.update({f"env/{k}": v for k, v in env.archive_stats().items()})  # Go-Explore
            dt = time.perf_counter() - t0
            epoch_times.append(dt)
            recent = epoch_times[-10:]
            metrics = {"epoch": epoch, "epochs": epochs, "global_step": global_step,
                       "sps": N * T / dt, "elapsed": time.perf_counter() - start,
                       "eta": (epochs - epoch) * sum(recent) / len(recent), "learning_rate": lr,
                       "epoch_seconds": dt, **{k: losses[k] for k in STATS + ("grad_norm",)}, **env_metrics,
                       **{f"time/{k}": v / dt for k, v in watch.t.items()}}
            dash.update(metrics)
            with open(log_path, "a") as f:
                f.write(json.dumps({"type": "epoch", **metrics}) + "\n")
            if epoch % base["checkpoint_interval"] == 0:
                last_ckpt = save(global_step)
            logger.log(metrics)  # last: a sweep's early stop ends the run inside this call
        if global_step > 0 and (last_ckpt is None or int(last_ckpt.stem) != global_step):
            last_ckpt = save(global_step)
    finally:
        dash.close()
        logger.close()
        if main_thread:
            signal.signal(signal.SIGINT, old_handler)
        if pool is not None:
            pool.shutdown(wait=True)
        env.close()
    how = "stopped (Ctrl-C)" if stop["requested"] else "done"
    print(f"{how}: {global_step:,} steps in {fmt_s(time.perf_counter() - start)}; checkpoint {last_ckpt}; "
          f"log {log_path}", flush=True)
    return {"checkpoint": last_ckpt, "global_step": global_step, "epoch": epoch, "run_id": run_id,
            "log": log_path, "metrics": metrics, "stopped": stop["requested"]}


def restore_archive(env, checkpoint: Path):
    """Go-Explore: load the archive saved beside `checkpoint`, if the env keeps one."""
    if not env.archive_enabled:
        return
    path = goexplore.archive_path(checkpoint)
    if not path.exists():
        print(f"warning: {path} does not exist: Go-Explore starts with an empty archive", flush=True)
        return
    try:
        cells = env.load_archive(path)
    except goexplore.ArchiveError as e:
        raise TrainingError(f"cannot restore the Go-Explore archive: {e}") from None
    print(f"restored the Go-Explore archive {path}: {cells} cells", flush=True)


def fmt_s(s: float) -> str:
    return f"{s / 60:.1f} min" if s >= 120 else f"{s:.1f} s"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m trainer.run", add_help=False,
                                 description="Train a PufferLib 5.0 policy with WGSL kernels on any GPU.")
    ap.add_argument("--env", default=None, help=f"env name ({', '.join(envs.list_envs())}) or path to an env header")
    ap.add_argument("--adapter", default=None, help="GPU adapter name/backend substring (default: best GPU; "
                    "env PUFFGPU_ADAPTER)")
    ap.add_argument("--plain", action="store_true", help="one log line per epoch instead of the live dashboard")
    ap.add_argument("--kernels", default=None, metavar="FAMILY=VARIANT,...",
                    help="pin kernel variants instead of tuning them, e.g. matmul=sg8 (lavapipe's kernels), "
                         "matmul=tile4x4/s4 (4×4 tiles, K split 4 ways), mingru=scalar (env PUFFGPU_KERNELS)")
    ap.add_argument("--retune", action="store_true", help="time the kernel variants again, replacing the cached "
                    "choices (env PUFFGPU_RETUNE=1; cache in $PUFFGPU_CACHE/tune, default ~/.cache/puffgpu/tune)")
    ap.add_argument("--no-tune", action="store_true", help="do not time kernel variants: use cached choices, "
                    "else the static default (env PUFFGPU_TUNE=0)")
    ap.add_argument("-h", "--help", action="store_true", help="show every config key and exit")
    args, rest = ap.parse_known_args(argv)
    if args.kernels is not None:  # read by the tuner (trainer/tune.py) when the GPU is first used
        os.environ["PUFFGPU_KERNELS"] = args.kernels
    if args.retune:
        os.environ["PUFFGPU_RETUNE"] = "1"
    if args.no_tune:
        os.environ["PUFFGPU_TUNE"] = "0"
    try:
        if args.help:
            cfg, desc = config_mod.load(args.env or "platformer")
            print(ap.format_help())
            print("config keys (defaults shown" + (f" for {args.env}" if args.env else " for platformer")
                  + "; set with --section.key value):")
            print(config_mod.help_text(cfg, desc, args.env or "platformer"))
            return 0
        if args.env is None:
            ap.error(f"--env is required; built-in envs: {', '.join(envs.list_envs())}")
        cfg, _ = config_mod.load(args.env, config_mod.parse_flags(rest))
        train(args.env, cfg, adapter=args.adapter, live=False if args.plain else None)
    except (config_mod.ConfigError, ckpt.CheckpointError, TrainingError, GPUError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted twice: stopped without saving", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
