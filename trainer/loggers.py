"""A run's loggers: the JSONL log, TensorBoard event files and Weights & Biases.

The JSONL log (`<log_dir>/<env>/<run_id>.jsonl`) is always written and is the source of truth: a
"config" line when a run starts or resumes, then one "epoch" line per epoch, each line written
(opened, appended, closed) as it happens so that a killed run leaves only whole lines. The others
mirror it for the tools people watch runs in. Turned on by config:

    --base.tensorboard 1   event files in <log_dir>/<env>/<run_id>/  (tensorboard --logdir logs/<env>)
    --base.wandb 1         a W&B run (project/group/name from [base] wandb_*; wandb_mode offline
                           writes files under <log_dir>/<env>/<run_id>/wandb/ with no network)

Each writes every numeric epoch metric at x = global_step, and the run's config once. Tags are the
JSONL keys, grouped for the dashboards: `env/*` and `time/*` as they are, the learner's statistics
under `losses/` (losses/policy_loss, losses/grad_norm, ...), the rest under `train/` (train/sps,
train/learning_rate, train/epoch_seconds, ...). Each writer is an extra (`pip install -e
".[tensorboard]"`, `".[wandb]"`); asking for one that is not installed is a LoggerError naming it.
Neither imports torch.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from puffbase.atomic import atomic_write

from . import metrics

LOSS_KEYS = frozenset(metrics.LOSSES)
SKIP = frozenset(metrics.PROGRESS)  # x axis and bookkeeping, not curves

EXTRAS = {  # config key → (module, pip extra)
    "tensorboard": ("tensorboardX", "tensorboard"),
    "wandb": ("wandb", "wandb"),
}


WANDB_MODES = ("online", "offline", "disabled", "shared")


class LoggerError(ValueError):
    pass


def tag(key: str) -> str:
    """The dashboard name of a JSONL metric key."""
    if "/" in key:
        return key
    return f"losses/{key}" if key in LOSS_KEYS else f"train/{key}"


def scalars(metrics: dict) -> dict[str, float]:
    """{tag: value} for every numeric metric of an epoch line."""
    return {tag(k): float(v) for k, v in metrics.items()
            if k not in SKIP and isinstance(v, (int, float)) and not isinstance(v, bool)}


def _import(key: str):
    module, extra = EXTRAS[key]
    # tensorboardX imports torch whenever it is installed, only to accept torch tensors; block that
    # (seconds of start-up and hundreds of MB) unless something already imported torch.
    block_torch = module == "tensorboardX" and "torch" not in sys.modules
    if block_torch:
        sys.modules["torch"] = None
    try:
        return __import__(module)
    except ImportError as e:
        raise LoggerError(f"--base.{key} 1 needs the Python package {module!r}, which is not installed "
                          f"({e}). Install the extra: pip install 'puffgpu[{extra}]' (in a checkout: "
                          f"pip install -e \".[{extra}]\"), or run with --base.{key} 0.") from None
    finally:
        if block_torch:
            del sys.modules["torch"]


def check(cfg: dict):
    """Fail fast, before any work, when a requested logger's package is missing."""
    for key in EXTRAS:
        if cfg["base"].get(key):
            _import(key)
    mode = cfg["base"].get("wandb_mode")
    if cfg["base"].get("wandb") and mode not in WANDB_MODES:
        raise LoggerError(f"[base] wandb_mode = {mode!r}; valid: {', '.join(WANDB_MODES)}")


def config_markdown(header: dict) -> str:
    """The run header and its config as markdown (TensorBoard's text tab renders it)."""
    cfg = header.get("config", {})
    lines = [f"**{header.get('env')}** run `{header.get('run_id')}` on {header.get('adapter')}: "
             f"{header.get('num_agents')} agents, policy {header.get('policy')}", ""]
    for section, kv in cfg.items():
        lines += [f"    [{section}]"] + [f"    {k} = {v}" for k, v in kv.items()] + ["    "]
    return "\n".join(lines)


class JsonlLogger:
    """The run's JSONL log: the header as a "config" line now, then an "epoch" line per log().
    If the file cannot be written (a full disk), the log moves to `fallback` with its lines so far,
    once, with a warning; without a fallback, or if that fails too, a LoggerError."""

    def __init__(self, header: dict, path: Path, fallback: Path | None = None):
        self.path = Path(path)
        self.fallback = Path(fallback) if fallback is not None else None
        self._write({"type": "config", **header})

    def _write(self, row: dict):
        line = json.dumps(row) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
            return
        except OSError as e:
            reason = e.strerror or str(e)
            if self.fallback is None or self.path == self.fallback:
                raise LoggerError(f"cannot write the log {self.path} ({reason})") from None
        try:
            old = self.path.read_text(encoding="utf-8") if self.path.is_file() else ""
        except OSError:
            old = ""
        if old and not old.endswith("\n"):
            old = old[:old.rfind("\n") + 1]  # a line cut short by the failed write
        try:
            atomic_write(self.fallback, old + line)
        except OSError as e2:
            raise LoggerError(f"cannot write the log {self.path} ({reason}), nor its fallback {self.fallback} "
                              f"({e2.strerror or e2})") from None
        print(f"warning: cannot write the log {self.path} ({reason}); it goes on in {self.fallback}, with its "
              f"lines so far", file=sys.stderr, flush=True)
        self.path = self.fallback

    def log(self, metrics: dict):
        self._write({"type": "epoch", **metrics})

    def close(self):
        pass


class TensorBoardLogger:
    def __init__(self, header: dict, run_dir: Path):
        tbx = _import("tensorboard")
        self.writer = tbx.SummaryWriter(logdir=str(run_dir), flush_secs=10)
        self.writer.add_text("config", config_markdown(header), global_step=0)

    def log(self, metrics: dict):
        step = int(metrics["global_step"])
        for k, v in scalars(metrics).items():
            self.writer.add_scalar(k, v, global_step=step)

    def close(self):
        self.writer.close()


class WandbLogger:
    def __init__(self, header: dict, run_dir: Path, base: dict):
        wandb = _import("wandb")
        self.wandb = wandb
        run_dir.mkdir(parents=True, exist_ok=True)
        run_id = header["run_id"]
        self.run = wandb.init(project=base["wandb_project"], group=base.get("wandb_group"),
                              name=base.get("wandb_name") or run_id, id=run_id, resume="allow",
                              dir=str(run_dir), mode=base["wandb_mode"], config=header.get("config", {}),
                              tags=[header.get("env", "")])
        self.run.summary["adapter"] = header.get("adapter")
        self.run.summary["policy"] = header.get("policy")

    def log(self, metrics: dict):
        self.run.log(scalars(metrics), step=int(metrics["global_step"]))

    def close(self):
        self.run.finish()


class Loggers:
    """All of a run's loggers, called in order: the JSONL log at `log_path`, then TensorBoard and
    W&B (as the config asks; their files go in the folder beside it, named like the log without
    .jsonl), then `extra` objects with log/close (the sweep's reporter to Ray Tune, which may end
    the run inside its log call). log(metrics) once per epoch, close() at the end."""

    def __init__(self, cfg: dict, header: dict, log_path: Path, extra=(), fallback: Path | None = None):
        base = cfg["base"]
        self.path = Path(log_path)
        run_dir = self.path.with_suffix("")
        self.sinks = [JsonlLogger(header, self.path, fallback)]
        try:
            if base.get("tensorboard"):
                self.sinks.append(TensorBoardLogger(header, run_dir))
            if base.get("wandb"):
                self.sinks.append(WandbLogger(header, run_dir, base))
        except BaseException:
            self.close()
            raise
        self.sinks += list(extra)

    def log(self, metrics: dict):
        for s in self.sinks:
            s.log(metrics)

    def close(self):
        for s in self.sinks:
            try:
                s.close()
            except Exception as e:  # a logger that fails to flush must not hide the run's result
                print(f"warning: closing {type(s).__name__} failed: {e}", flush=True)
        self.sinks = []


def drop_epochs_after(path: Path, epoch: int) -> int:
    """On resuming from a checkpoint of `epoch` completed epochs: removes the log's epoch lines past
    it (epochs trained after the last checkpoint, by a run that was killed before saving them, which
    the resumed run trains and logs again) and any line a kill cut short, so that no epoch appears
    twice. Rewritten atomically; returns how many lines went."""
    path = Path(path)
    if not path.is_file():
        return 0
    keep, dropped = [], 0
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            row = json.loads(line)
            past = row.get("type") == "epoch" and int(row.get("epoch", 0)) > epoch
        except (ValueError, TypeError, AttributeError):
            past = True
        if past or not line.endswith("\n"):
            dropped += 1
        else:
            keep.append(line)
    if dropped:
        atomic_write(path, "".join(keep))
    return dropped
