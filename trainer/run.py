"""Train a policy: python -m trainer.run --env platformer [--section.key value ...]

PufferLib 5.0's training loop, top to bottom. Each epoch:
    rollout   `horizon` steps: the GPU policy infers actions from the env's observations (its
              recurrent state carried across rollouts, zeroed at terminals), the envs step;
    learn     replay_ratio·N·T/minibatch_size minibatch updates with the prebuilt learner plans,
              one learning rate per epoch (cosine);
    log       the epoch's metrics to the dashboard and the loggers (JSONL, TensorBoard, W&B);
    save      a checkpoint every checkpoint_interval epochs, and at the end.
Ctrl-C or SIGTERM stops at the next env step (or after the update in progress), saves a
checkpoint of the last completed epoch and exits 128 + the signal (130, 143); a second one quits at
once. --base.load_model_path latest resumes. The env is reached only through its generic hooks:
epoch_metrics() at rollout end, save_extras()/restore_extras() beside each checkpoint.

Nothing lost, nothing silent: the folders are test-written before any work, a save that fails goes
to a fallback folder (checkpoint.fallback_dir) and training goes on, one process holds the run
folder (checkpoint.lock_run), and an env that fails for good (a server, a JS game's error, a crash
of its C code in this process) keeps the last complete epoch; every failure is an `error:` line.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import math
import os
import shutil
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import NamedTuple

# libgomp reads this when the env module loads: on a few cores shared with a CPU GPU driver
# (lavapipe), spinning OpenMP threads would steal the cores the kernels need.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import envs  # noqa: E402
from envs.errors import EnvCrashError  # noqa: E402
from envs.interface import spread_seed  # noqa: E402
from puffbase.console import safe_console  # noqa: E402

from . import checkpoint as ckpt  # noqa: E402
from . import config as config_mod  # noqa: E402
from . import loggers as loggers_mod  # noqa: E402
from . import metrics as names  # noqa: E402
from .dashboard import Dashboard, Stopwatch, fmt_time  # noqa: E402
from .spec import PolicySpec  # noqa: E402
# The GPU layers (gpu, policy, learner, tune) are imported by train(), not here: `--help`, a config
# error and a sweep's driver process answer without loading wgpu or touching an adapter.

CPU_NOTE = ("note: this is a CPU adapter (lavapipe): correct but slow. This path is for testing and small runs; "
            "train on a GPU for real work.")


class TrainingError(RuntimeError):
    pass


class InterruptedTwice(KeyboardInterrupt):
    """A second Ctrl-C (or SIGTERM) while the first one's stop was under way: quit at once."""


class Saved(NamedTuple):
    """A checkpoint this run wrote: its global step and the path of its weights."""
    step: int
    path: Path


class StopRequest:
    """Ctrl-C (SIGINT) and SIGTERM (and on Windows SIGBREAK: Ctrl-Break, or CTRL_BREAK_EVENT sent
    to the run's process group, how a parent process stops it there) while training. The first
    sets `requested`: the loop stops at the next env step and saves; the second raises
    KeyboardInterrupt: quit at once, no save.
    Handlers are installed for the `with` block, and only from the main thread (Python allows no
    other; a Ray Tune trial runs train() in a worker thread, where Ray handles the signals)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGBREAK,) if hasattr(signal, "SIGBREAK") else ())

    def __init__(self):
        self.signal: str | None = None  # the first signal received
        self.signum: int | None = None
        self._previous = {}

    @property
    def requested(self) -> bool:
        return self.signal is not None

    @property
    def reason(self) -> str:
        return "Ctrl-C" if self.signal == "SIGINT" else str(self.signal)

    def _handle(self, signum, frame):
        if self.requested:
            raise InterruptedTwice
        self.signal = signal.Signals(signum).name
        self.signum = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


class InlineExecutor:
    """Runs each submitted call at once: the executor for a single env buffer, which has no other
    buffer to overlap with."""

    def submit(self, fn, *args) -> concurrent.futures.Future:
        done = concurrent.futures.Future()
        done.set_result(fn(*args))
        return done

    def shutdown(self, wait: bool = True):
        pass


def collect_rollout(env, infers: list, T: int, epoch: int, watch: Stopwatch, stop: StopRequest, pool) -> None:
    """One rollout of T steps into the GPU rollout buffers; returns early once a stop is requested.

    The agents form PufferLib's env buffers (contiguous runs of whole envs), buffer b with its own
    inference plan infers[b] over its rows. Buffer b at step t: wait for its envs' step t−1, infer
    a_t from its rows (obs_t, and r_t, d_t: the outcome of a_{t−1}), hand its env step to `pool`.
    With one buffer the pool runs the step inline: infer, step, infer, step. With more, worker
    threads step one buffer's envs (C, without the GIL) while this thread runs the GPU inference
    of the next. Each buffer's results depend only on its own envs and its own seeded sampler, so
    a run is the same function of the seed for a given num_buffers (not across different
    num_buffers: buffers sample with different seeds). The sampler's RNG counter `rng_step`
    numbers the run's rollout steps (epoch·T + t); it is not the global step (env steps)."""
    pending = [None] * len(infers)
    try:
        for t in range(T):
            if stop.requested:
                return
            rng_step = epoch * T + t
            for b, infer in enumerate(infers):
                r0, r1 = env.buffer_rows(b)
                if pending[b] is not None:
                    s = time.perf_counter()
                    pending[b].result()
                    watch.add("env", s)
                s = time.perf_counter()
                actions = infer(t, rng_step, env.observations[r0:r1], env.rewards[r0:r1], env.terminals[r0:r1],
                                env.action_mask[r0:r1])
                watch.add("inference", s)
                s = time.perf_counter()
                pending[b] = pool.submit(env.step_buffer, b, actions)
                watch.add("env", s)
    finally:
        s = time.perf_counter()
        for p in pending:
            if p is not None:
                p.result()
        watch.add("env", s)


def gpu_bytes(policy, rollout, infers, learner) -> dict:
    """GPU memory the run's buffers hold, by part (the adapter's own overhead and kernel scratch aside)."""
    from .policy import buffers_nbytes
    parts = {"policy": buffers_nbytes(policy), "rollout": rollout.nbytes, "inference": buffers_nbytes(*infers),
             "learner": buffers_nbytes(learner)}
    return {**parts, "total": sum(parts.values())}


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:6]


class Silent:
    """The dashboard and loggers of a rank other than 0 in a data-parallel run: the run is seen once."""

    def update(self, metrics):
        pass

    def message(self, text):
        pass

    def log(self, metrics):
        pass

    def close(self):
        pass


class NoStop:
    """A data-parallel rank's rollout runs to its end: the ranks agree to stop after it (World.any)."""
    requested = False


def average_metrics(per_rank: list[dict]) -> dict:
    """Each key's mean over the ranks that report it (a rank in which no episode ended has none)."""
    keys = dict.fromkeys(k for m in per_rank for k in m)
    return {k: float(sum(m[k] for m in per_rank if k in m) / sum(k in m for m in per_rank)) for k in keys}


def train(env, cfg: dict, adapter: str | None = None, live: bool | None = None,
          run_id: str | None = None, loggers=(), world=None) -> dict:
    """Run training on `env` (an envs.EnvSource, or a name or path for envs.resolve); returns a
    summary (checkpoint path, steps, final metrics). `loggers`: more
    objects with log(metrics)/close() called after the run's own loggers (the sweep's Ray Tune
    reporter). `world` (trainer/distributed.py): this process's rank in a data-parallel run; by
    default one process, or the ranks of the MPI launcher that started it."""
    from . import distributed
    from .gpu import GL_NOTE, get_gpu, is_gl
    from .learner import Learner
    from .policy import Policy, Rollout, RolloutStep
    from .autotune import attach
    world = world or distributed.connect()
    local = distributed.split_config(cfg, world.size)  # this rank's share of the agents and minibatch
    base, vec, t = cfg["base"], local["vec"], local["train"]
    root = world.is_root
    say = print if root else (lambda *a, **k: None)  # the run's messages, once
    source = envs.resolve(env)  # the one resolution of a run: everything below takes the source
    loggers_mod.check(cfg)  # a requested logger that is not installed fails before any work
    if root:  # so do folders that cannot be written: made and test-written now, not at the first save
        ckpt.writable(Path(base["checkpoint_dir"]) / source.name, "checkpoint folder", "--base.checkpoint_dir")
        ckpt.writable(Path(base["log_dir"]) / source.name, "log folder", "--base.log_dir")
        if base["load_model_path"] not in (None, "None"):  # a folder, a missing file, no checkpoint yet
            resume = ckpt.resolve(base["load_model_path"], base["checkpoint_dir"], source.name)
            meta = ckpt.read_sidecar(resume) or {}  # a puffgpu checkpoint continues its run (see below)
            resumed_id = run_id or (meta.get("trainer_state") or {}).get("run_id") if "momentum" in meta else run_id
            if resumed_id:  # a run another trainer trains now is refused now too (and locked below)
                ckpt.check_run_free(ckpt.checkpoint_path(base["checkpoint_dir"], source.name, resumed_id, 0).parent)
    gpu = get_gpu(adapter, quiet=True, local_rank=world.local_rank)
    tuner = attach(gpu)  # kernel variants: pins, cache or timing (reads --kernels/--retune/--no-tune)
    if world.size > 1:
        tuner = attach(gpu, distributed.RootChoices(tuner, world))
    adapters = world.gather(gpu.describe())
    if world.size > 1:
        say(f"puffgpu: data-parallel over {world.describe()}", flush=True)
        for r, name in enumerate(adapters):
            say(f"puffgpu: rank {r} adapter {name}", flush=True)
    else:
        say(f"puffgpu: adapter {gpu.describe()}", flush=True)
    if is_gl(gpu.info):
        say(GL_NOTE, flush=True)
    elif gpu.is_cpu:
        say(CPU_NOTE, flush=True)

    # rank r's agents are seeded as agents r·N_r … of one process's run would be (for 1-agent envs)
    env = envs.make(source, vec["total_agents"], config=cfg["env"], num_threads=vec["num_threads"],
                    seed=spread_seed(base["seed"], world.rank * vec["total_agents"]),
                    check_actions=False,  # the sampler only emits valid indices
                    num_buffers=vec["num_buffers"])
    N, T, B = env.num_agents, t["horizon"], env.num_buffers
    try:
        config_mod.validate(local, N)
    except config_mod.ConfigError as e:
        if world.size == 1:
            raise
        raise config_mod.ConfigError(f"{e}\n(each of the {world.size} ranks holds vec.total_agents / {world.size} = "
                                     f"{vec['total_agents']} agents and train.minibatch_size / {world.size} = "
                                     f"{t['minibatch_size']})") from None
    N_all = sum(world.gather(N))  # agents over every rank
    spec = PolicySpec.for_env(env, cfg["policy"]["hidden_size"], cfg["policy"]["num_layers"])
    for note in spec.pufferlib_notes():
        say(f"warning: {note}", flush=True)
    policy = Policy(gpu, spec, seed=base["seed"])
    if world.size > 1:  # one start for every rank, whatever its adapter's init arithmetic
        policy.write_weights(world.broadcast(policy.read_weights()))
    rollout = Rollout(gpu, spec, N, T, row_multiple=t["minibatch_size"] // T)
    infers = []  # one inference plan per env buffer, over its rows, with its own sampling seed
    for b in range(B):
        r0, r1 = env.buffer_rows(b)
        # buffer 0 keeps the run's seed; the others get their own, as each buffer's sampler numbers its
        # agents from 0
        infers.append(RolloutStep(policy, rollout, seed=spread_seed(base["seed"], world.rank * B + b),
                                  row0=r0, rows=r1 - r0))
    learner = Learner(policy, rollout, config_mod.LearnerConfig.from_dict(t), world=world)  # every [train] key it reads
    say(tuner.summary(), flush=True)  # kernel variants: what was chosen, tuning time (trainer/autotune.py)
    epochs = t["total_timesteps"] // (N_all * T)

    # resume: the weights always; the momentum and the run's counters when it is a puffgpu checkpoint.
    # In a data-parallel run rank 0 reads the file and sends it to the others (a checkpoint does not
    # depend on the number of ranks that wrote it).
    epoch, global_step, resumed_from = 0, 0, None
    if base["load_model_path"] not in (None, "None"):
        path = ckpt.resolve(base["load_model_path"], base["checkpoint_dir"], env.name) if root else None
        weights, momentum, meta = ckpt.load(path, spec, env=env.name, with_momentum=True) if root else (None,) * 3
        path, weights, momentum, meta = world.share((path, weights, momentum, meta))
        policy.write_weights(weights)
        state = meta.get("trainer_state") or {}
        if momentum is not None and state:  # a puffgpu checkpoint: continue the same run
            learner.muon.reset_momentum(momentum)
            epoch, global_step = state["epoch"], state["global_step"]
            run_id = run_id or state.get("run_id")
        resumed_from = str(path)
        say(f"loaded {path} (epoch {epoch}, step {global_step})", flush=True)
        try:
            notes = env.restore_extras(path)
        except ValueError as e:
            raise TrainingError(str(e)) from None
        for note in notes:
            say(note, flush=True)
    run_id = world.share(run_id or new_run_id())
    # one process per run folder: a second trainer resuming this run is refused (the OS drops the
    # lock when this process ends, however it ends); then what a killed save left is cleaned up
    run_dir = ckpt.checkpoint_path(base["checkpoint_dir"], env.name, run_id, 0).parent
    try:
        lock = ckpt.lock_run(run_dir, f"trainer.run since {time.strftime('%Y-%m-%d %H:%M:%S')}") if root else None
    except ckpt.CheckpointError:
        env.close()
        raise
    try:
        return _train_run(**locals())
    finally:
        if lock is not None:
            lock.release()
            if not any(p.name != ckpt.LOCK_NAME for p in run_dir.iterdir()):  # a run that saved nothing
                shutil.rmtree(run_dir, ignore_errors=True)


def _train_run(*, env, cfg, base, root, say, world, gpu, adapters, spec, policy, rollout, infers, learner, source, N,
               N_all, T, B, epochs, epoch, global_step, resumed_from, run_id, run_dir, live, loggers, **_) -> dict:
    """train() from the moment its run folder is locked: the loop, its logs and its checkpoints."""
    for name in ckpt.clean_strays(run_dir) if root else ():
        say(f"note: removed {run_dir / name}, a temporary file of a save that did not finish", flush=True)
    log_path = Path(base["log_dir"]) / env.name / f"{run_id}.jsonl"
    if root and resumed_from is not None:
        dropped = loggers_mod.drop_epochs_after(log_path, epoch)
        if dropped:
            say(f"note: {log_path}: dropped {dropped} line(s) past epoch {epoch} (logged after the last checkpoint; "
                f"trained again now)", flush=True)
    header = {"run_id": run_id, "env": env.name, "adapter": gpu.describe(), "num_agents": N_all,
              "policy": spec.describe(), "epochs": epochs, "resumed_from": resumed_from, "config": cfg,
              "gpu_bytes": gpu_bytes(policy, rollout, infers, learner)}
    if world.size > 1:
        header["ranks"] = [{"adapter": a, "host": h, "pid": pid} for a, (h, pid) in zip(adapters, world.hosts)]
    fallback_log = ckpt.fallback_dir().parent / "logs" / env.name / f"{run_id}.jsonl"
    logs = loggers_mod.Loggers(cfg, header, log_path, extra=loggers, fallback=fallback_log) if root else Silent()
    where = {"dir": Path(base["checkpoint_dir"]), "lock": None}  # where checkpoints go: the fallback after a failure

    def write(folder: Path, step: int, weights, momentum, extras: bool) -> Path:
        """One checkpoint under `folder`, or a CheckpointWriteError with nothing new of it left there."""
        path = ckpt.checkpoint_path(folder, env.name, run_id, step)
        written = []
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            ckpt.check_space(path.parent, ckpt.checkpoint_bytes(spec))
            if extras:
                written = env.save_extras(path)  # first, so a complete checkpoint (its sidecar) implies them
            ckpt.save(path, weights, spec, env.name, step, config=cfg, momentum=momentum,
                      state={"epoch": epoch, "global_step": step, "run_id": run_id})
        except (OSError, ckpt.CheckpointWriteError) as e:
            for p in written:  # the extras of a checkpoint that has no sidecar would only be in the way
                Path(p).unlink(missing_ok=True)
            if isinstance(e, ckpt.CheckpointWriteError):
                raise
            raise ckpt.CheckpointWriteError(f"cannot write the checkpoint {path} ({e.strerror or e})", path.parent,
                                            e.strerror or str(e)) from None
        return path

    def save(step: int, extras: bool = True) -> Saved:
        """The checkpoint of `step` from the GPU's weights; a folder that fails (permissions, a full disk)
        sends it and the rest of the run's checkpoints to the fallback folder, said once."""
        weights, momentum = policy.read_weights(), learner.muon.read_momentum()
        world.check_identical("the weights", weights)  # data-parallel ranks must hold the same bits
        world.check_identical("the optimizer momentum", momentum)
        path = None
        if root:
            try:
                path = write(where["dir"], step, weights, momentum, extras)
            except ckpt.CheckpointWriteError as e:
                fallback = ckpt.fallback_dir()
                if where["dir"] == fallback:
                    raise TrainingError(f"{e}; the run stopped (last checkpoint: {saved_path()})") from None
                try:
                    where["lock"] = ckpt.lock_run(ckpt.checkpoint_path(fallback, env.name, run_id, 0).parent,
                                                  f"trainer.run, after {run_dir} failed")
                    path = write(fallback, step, weights, momentum, extras)
                except (ckpt.CheckpointError, OSError) as e2:
                    raise TrainingError(f"{e}, and not in the fallback folder {fallback} either ({e2}); the run "
                                        f"stopped (last checkpoint: {saved_path()})") from None
                where["dir"] = fallback
                print(f"warning: {e}: saved it in {path.parent} instead, where this run's checkpoints go from now on; "
                      f"training goes on\n  resume with --base.checkpoint_dir {fallback} --base.load_model_path latest",
                      file=sys.stderr, flush=True)
        world.barrier()  # no rank runs on (and may fail) while rank 0 is still writing
        return Saved(step, path)

    def saved_path():
        return f"{saved.path} (step {saved.step:,})" if saved else "none saved in this run"

    dash = Dashboard(env.name, gpu.describe(), run_id, epochs * N_all * T, live=live) if root else Silent()
    picture = f" (a {'x'.join(map(str, spec.picture))} picture, {spec.obs_dtype})" if spec.picture else ""
    if source.training_ini != source.ini:
        dash.message(f"{env.name}: no {source.ini.name} beside the {source.kind.noun}: training with the "
                     f"{source.kind.title}s' defaults ({source.training_ini})")
    dash.message(f"{env.name}: {N_all} agents, obs {spec.obs_size}{picture}, heads {list(spec.act_sizes)}; "
                 f"policy H={spec.hidden} "
                 f"L={spec.layers} ({spec.num_floats:,} params); {epochs} epochs of {N_all * T:,} steps, "
                 f"{learner.num_minibatches} minibatches of {learner.M * world.size} each"
                 + (f" ({learner.M} on each of {world.size} ranks)" if world.size > 1 else "") + f"; logs {log_path}")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=B, thread_name_prefix="env") if B > 1 else InlineExecutor()
    watch = Stopwatch()
    env_metrics: dict = {}  # the last value of each env metric: an epoch in which no episode ends keeps them
    saved, metrics = None, {}
    start, epoch_times = time.perf_counter(), []
    with StopRequest() as stop:
        try:
            env.reset()
            while epoch < epochs:  # a stop is seen after the rollout (by every rank at once)
                t0 = time.perf_counter()
                watch.reset()
                if base["reset_every_horizon"]:
                    gpu.zero(rollout.state)
                collect_rollout(env, infers, T, epoch, watch, stop if world.size == 1 else NoStop, pool)
                if world.any(stop.requested):  # drop the rollout; the weights are the last epoch's
                    stop.signal = stop.signal or "another rank's stop"
                    break
                # learn: every minibatch of the epoch in one submit, at the epoch's learning rate
                s = time.perf_counter()
                world.reduce_seconds = 0.0
                losses = learner.learn_epoch(epoch, epochs)
                lr = losses["learning_rate"]
                watch.add("learn", s)
                bad = [k for k in names.LOSSES if not math.isfinite(losses[k])]
                if bad:
                    raise TrainingError(
                        f"NaN/Inf in {', '.join(bad)} at epoch {epoch} (global step {global_step}); stopping. "
                        f"Last good checkpoint: {saved.path if saved else 'none saved in this run'} (left untouched).")
                epoch += 1
                global_step += N_all * T
                ranks = {}
                if world.size > 1:  # env metrics over every rank's envs; each rank's speed
                    env_now = average_metrics(world.gather(env.epoch_metrics()))
                    rank_sps = world.gather(N * T / (time.perf_counter() - t0))
                    ranks = {**{f"{names.RANK_PREFIX}sps_{r}": v for r, v in enumerate(rank_sps)},
                             names.ALLREDUCE_MS: 1e3 * world.reduce_seconds / max(1, learner.num_minibatches)}
                    watch.t["allreduce"] = world.reduce_seconds
                else:
                    env_now = env.epoch_metrics()
                env_metrics.update({names.ENV_PREFIX + k: v for k, v in env_now.items()})
                dt = time.perf_counter() - t0
                epoch_times.append(dt)
                recent = epoch_times[-10:]
                metrics = {"epoch": epoch, "epochs": epochs, "global_step": global_step,
                           "sps": N_all * T / dt, "elapsed": time.perf_counter() - start,
                           "eta": (epochs - epoch) * sum(recent) / len(recent), "learning_rate": lr,
                           "epoch_seconds": dt, **{k: losses[k] for k in names.LOSSES}, **env_metrics,
                           **{names.TIME_PREFIX + k: v / dt for k, v in watch.t.items()}, **ranks}
                dash.update(metrics)
                # the loggers before the checkpoint: every checkpoint's epoch is in the log. A sweep
                # trial that Ray Tune stops ends inside this call, keeping its previous checkpoint.
                logs.log(metrics)
                if epoch % base["checkpoint_interval"] == 0:
                    saved = save(global_step)
            if global_step > 0 and (saved is None or saved.step != global_step):
                saved = save(global_step)
        except (envs.EnvError, loggers_mod.LoggerError, OSError) as e:
            # the env failed for good, or a log could not be written: keep the last complete epoch (its
            # weights are on the GPU, which env code does not reach), then say why. Not after a crash of
            # the env's code in this process: its extras are the env's memory, which is not trusted now.
            # (One process only: a data-parallel rank's env fails alone, and saving is collective.)
            crashed = isinstance(e, EnvCrashError)
            if world.size == 1 and global_step > 0 and (saved is None or saved.step != global_step):
                saved = save(global_step, extras=not crashed)
            if saved:
                kept = f"checkpoint {saved.path} (step {saved.step:,})"
            else:
                kept = "no checkpoint (" + ("no epoch completed" if world.size == 1 else "none saved yet") + ")"
            what, advice = (e.what, f"; {e.advice}") if crashed else (str(e), "")
            cls = envs.EnvError if isinstance(e, envs.EnvError) else TrainingError
            raise cls(f"{what}\nthe run stopped; kept: {kept}{advice}") from None
        finally:
            dash.close()
            log_path = logs_path(logs, log_path)  # its fallback, if the log had to move
            logs.close()
            pool.shutdown(wait=True)
            env.close()
            if where["lock"] is not None:
                where["lock"].release()
    how = f"stopped ({stop.reason})" if stop.requested else "done"
    checkpoint = saved.path if saved else None
    say(f"{how}: {global_step:,} steps in {fmt_time(time.perf_counter() - start)}; checkpoint {checkpoint}; "
          f"log {log_path}", flush=True)
    return {"checkpoint": checkpoint, "global_step": global_step, "epoch": epoch, "run_id": run_id,
            "log": log_path, "metrics": metrics, "stopped": stop.requested, "signal": stop.signum,
            "num_floats": spec.num_floats}


def logs_path(logs, planned: Path) -> Path:
    """Where the run's JSONL log is: where it was planned, or its fallback after a failed write."""
    sinks = getattr(logs, "sinks", None) or []
    return getattr(sinks[0], "path", planned) if sinks else planned


def gpu_errors() -> tuple:
    """The GPU runtime's user-facing error class, if the runtime was loaded (an error raised before
    training started cannot be one)."""
    gpu = sys.modules.get("trainer.gpu")
    return (gpu.GPUError,) if gpu else ()


def main(argv: list[str] | None = None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m trainer.run", add_help=False,
                                 description="Train a PufferLib 5.0 policy with WGSL kernels on any GPU.")
    ap.add_argument("--env", default=None, help=f"env name ({envs.describe_envs()}), or the path of a C header, JS game or server ini")
    ap.add_argument("--adapter", default=None, help="GPU adapter name/backend substring (default: best GPU; "
                    "env PUFFGPU_ADAPTER)")
    ap.add_argument("--plain", action="store_true", help="one log line per epoch instead of the live dashboard")
    ap.add_argument("--kernels", default=None, metavar="FAMILY=VARIANT,...",
                    help="pin kernel variants instead of tuning them, e.g. matmul=sg8 (lavapipe's kernels), "
                         "matmul=tile4x4/s4 (4×4 tiles, K split 4 ways), mingru=scalar (env PUFFGPU_KERNELS)")
    ap.add_argument("--retune", action="store_true", help="time the kernel variants again, replacing the cached "
                    "choices (env PUFFGPU_RETUNE=1; cache in tune/ of $PUFFGPU_CACHE, default the OS cache folder)")
    ap.add_argument("--no-tune", action="store_true", help="do not time kernel variants: use cached choices, "
                    "else the static default (env PUFFGPU_TUNE=0)")
    ap.add_argument("-h", "--help", action="store_true", help="show every config key and exit")
    args, rest = ap.parse_known_args(argv)
    if args.kernels is not None:  # read by the tuner (trainer/autotune.py) when the GPU is first used
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
        source = envs.resolve(args.env)  # once: the config, the env and its messages take the source
        cfg, _ = config_mod.load(source, config_mod.parse_flags(rest))
        config_mod.validate_values(cfg)  # values outside their meaning: before any work
    except (config_mod.ConfigError, ValueError, FileNotFoundError, envs.EnvError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    from . import distributed
    size = distributed.launched_size()
    try:
        distributed.split_config(cfg, size)  # refused by every rank alike, before any work
    except distributed.DistributedError as e:
        if distributed.launch_rank() == 0:
            print(f"error: {e}", file=sys.stderr)
        return 1
    world = None
    try:
        world = distributed.connect()
        res = train(source, cfg, adapter=args.adapter, live=False if args.plain else None, world=world)
    except (config_mod.ConfigError, ckpt.CheckpointError, TrainingError, ValueError, OSError,
            envs.EnvError, distributed.DistributedError, *gpu_errors()) as e:
        return failed(world, f"error: {e}", 1)
    except InterruptedTwice:
        return failed(world, "interrupted twice: stopped without saving the epochs since the last checkpoint", 130)
    except KeyboardInterrupt:
        return failed(world, "interrupted before training started: nothing to save", 130)
    except BaseException:
        if world is None or world.size == 1:
            raise
        import traceback
        traceback.print_exc()
        return failed(world, "error: the run failed (the traceback above)", 1)
    if res["stopped"]:  # saved, but not finished: the shell's convention, 128 + the signal (Ctrl-C: 130)
        return 128 + (res["signal"] or signal.SIGINT)
    return 0


def failed(world, message: str, code: int) -> int:
    """Report a failure; in a data-parallel run, name the rank and stop every rank (the others may be
    waiting for this one in a collective). The last checkpoint is left as it was."""
    if world is None or world.size == 1:
        print(message, file=sys.stderr)
        return code
    print(f"rank {world.rank} of {world.size}: {message}\nstopping every rank", file=sys.stderr, flush=True)
    world.abort(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
