"""Hyperparameter sweeps on Ray Tune: python -m trainer.sweep --env memory [--config FILE] [--address ADDR]

The sweep is configured PufferLib's way, in ini sections read from trainer/default.ini, then the
env's ini, then --config FILE (each adds or overrides):

    [sweep]                         metric, goal, method, max_runs, max_suggestion_cost, gpus,
                                    early_stop, grace_period, reduction_factor, sweep_only
    [sweep.train.learning_rate]     distribution = log_normal, min = 0.001, max = 0.1

Distributions: uniform, int_uniform, uniform_pow2 (powers of two in [min, max]), log_normal
(log-uniform search over [min, max]), logit_normal (log-uniform in 1 − x: for gamma-like keys near
1). A --config file may also hold [base]/[vec]/[env]/[policy]/[train] values that every trial uses
(e.g. a smaller policy); `--section.key value` flags do the same and `--sweep.key value` sets a
[sweep] setting.

Each trial is a normal training run (trainer.run.train) with run_id `<sweep>-<trial>`, its own
JSONL log, checkpoints and optional loggers, run by Ray Tune (with `[sweep] eval_episodes = N`, a
trial that trains to its end is then scored by trainer.eval's measure of its last checkpoint over N
episodes on another seed, not by its last epoch): Optuna's TPE (or random) suggests
the values, the first trial being the config's own values; ASHA stops trials whose metric is
behind the others' at the same progress (percent of the trial's steps: grace_period, then
grace_period × reduction_factor, ...). Locally Ray runs one trial per GPU adapter (lavapipe
counts as one); `--address` points at an existing Ray cluster instead, whose nodes each declare
their adapters as the custom resource `adapter` (`ray start ... --resources '{"adapter": 1}'`).

The sweep's folder `<log_dir>/<env>/sweeps/<name>/` holds Tune's experiment state and the results:
summary.md (one table, best trial first) and sweep.png (the metric against each swept key). The
default name is the env plus a hash of the whole sweep config, so running the same command again
resumes an interrupted sweep (finished trials are kept, an interrupted one restarts from its last
checkpoint) or, for a finished sweep, prints its table again.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from puffbase.atomic import atomic_write
from puffbase.cache import user_tag
from puffbase.lock import lock_file  # the adapter claims (claim_adapter)

from . import config as config_mod
from .distributed import World
from .metrics import LOSSES, RUN
from .dashboard import fmt_time
from puffbase.console import safe_console

DISTRIBUTIONS = ("uniform", "int_uniform", "uniform_pow2", "log_normal", "logit_normal")
METHODS = ("tpe", "random")
# PufferLib keys that puffgpu reads but does not use (its Protein method's knobs): warned about
PUFFERLIB_SWEEP_KEYS = {"metric_distribution", "downsample", "prune_pareto", "early_stop_quantile", "use_gpu"}
PUFFERLIB_PARAM_KEYS = {"scale", "mean"}
TRAINER_METRICS = frozenset(RUN + LOSSES)  # a metric named otherwise is the env's (env/<name>)


class SweepError(ValueError):
    pass


@dataclass
class Param:
    """One swept key: [sweep.<section>.<key>] distribution/min/max."""
    section: str
    key: str
    distribution: str
    min: float
    max: float
    integer: bool  # the key's default is an int: values are rounded

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    def domain(self):
        """The Ray Tune search domain. logit_normal searches u = 1 − x log-uniformly."""
        from ray import tune
        d = self.distribution
        if d == "uniform":
            return tune.randint(int(self.min), int(self.max) + 1) if self.integer else tune.uniform(self.min, self.max)
        if d == "int_uniform":
            return tune.randint(int(self.min), int(self.max) + 1)
        if d == "uniform_pow2":
            return tune.choice(pow2_values(self.min, self.max))
        if d == "log_normal":
            return tune.lograndint(int(self.min), int(self.max) + 1) if self.integer else tune.loguniform(self.min, self.max)
        return tune.loguniform(1 - self.max, 1 - self.min)  # logit_normal

    def value(self, sampled):
        """The config value of a sampled point."""
        v = 1 - sampled if self.distribution == "logit_normal" else sampled
        return int(round(v)) if self.integer else float(v)

    def sample_of(self, value):
        """The search-space point of a config value (clipped into the range): the first trial."""
        v = min(max(value, self.min), self.max)
        if self.distribution == "uniform_pow2":
            vals = pow2_values(self.min, self.max)
            return min(vals, key=lambda p: abs(math.log2(p) - math.log2(max(v, 1e-30))))
        if self.distribution == "logit_normal":
            return 1 - v
        return int(round(v)) if self.integer or self.distribution == "int_uniform" else float(v)

    def log_scale(self) -> bool:
        return self.distribution in ("log_normal", "uniform_pow2", "logit_normal")


def pow2_values(lo, hi) -> list[int]:
    return [2 ** k for k in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]


@dataclass
class Sweep:
    env: str              # env name or header path, as given
    env_name: str         # the run folder name (header stem)
    flags: dict           # --section.key values every trial uses (from --config and the command line)
    cfg: dict             # the resolved base config (the first trial's)
    settings: dict        # [sweep]
    params: list          # [Param]
    sources: list         # files read, in order

    @property
    def metric(self) -> str:
        return self.settings["metric"]

    @property
    def mode(self) -> str:
        return "max" if self.settings["goal"] == "maximize" else "min"


def _read_sections(path: Path) -> dict:
    values, _ = config_mod.read_described_ini(path)
    return values


def _setting(name: str, value, default, source: str):
    if default is None:  # sweep_only: None or a list of names
        return None if value is None else [s.strip() for s in str(value).split(",") if s.strip()]
    if isinstance(default, bool) or isinstance(default, int):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
            return int(value)
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    else:
        return str(value)
    raise SweepError(f"{source}: [sweep] {name} = {value!r} must be a number like its default {default!r}")


def load_sweep(env: str, config_file: str | None = None, argv: list[str] | None = None) -> Sweep:
    """Read [sweep] and [sweep.*] from default.ini, the env's ini and config_file, and the trials'
    fixed values from config_file's other sections and argv's --section.key flags."""
    import envs
    sources = [config_mod.DEFAULT_INI]
    ini = envs.env_ini_path(env)
    if Path(ini).is_file():
        sources.append(Path(ini))
    fixed: dict = {}
    if config_file:
        cf = Path(config_file)
        if not cf.is_file():
            raise SweepError(f"--config {config_file}: no such file")
        sources.append(cf)
        for section, kv in _read_sections(cf).items():
            if not config_mod.is_sweep_section(section):
                fixed.update({f"{section}.{k}": v for k, v in kv.items()})
    defaults = _read_sections(config_mod.DEFAULT_INI)["sweep"]
    settings, raw_params, param_src = dict(defaults), {}, {}
    for src in sources:
        for section, kv in _read_sections(src).items():
            if section == "sweep":
                for k, v in kv.items():
                    if k in PUFFERLIB_SWEEP_KEYS:
                        print(f"warning: {src}: [sweep] {k} is a PufferLib Protein setting that puffgpu's Ray Tune "
                              f"sweep does not use; ignored", file=sys.stderr)
                        continue
                    if k not in defaults:
                        raise SweepError(f"{src}: unknown key [sweep] {k}; valid keys: {', '.join(sorted(defaults))}")
                    settings[k] = _setting(k, v, defaults[k], str(src))
            elif section.startswith("sweep."):
                raw_params.setdefault(section[len("sweep."):], {}).update(kv)
                param_src[section[len("sweep."):]] = src
    cli = config_mod.parse_flags(argv or [])
    for name, value in cli.items():
        section, key = config_mod.split_flag(name)
        if section == "sweep":
            if key not in defaults:
                raise SweepError(f"--{name}: unknown key [sweep] {key}; valid keys: {', '.join(sorted(defaults))}")
            settings[key] = _setting(key, config_mod._value(value), defaults[key], f"--{name}")
        else:
            fixed[name] = value
    try:
        cfg, _ = config_mod.load(env, {k: str(v) if not isinstance(v, str) else v for k, v in fixed.items()})
    except config_mod.ConfigError as e:
        where = f"{config_file} or the command line" if config_file else "the command line"
        raise SweepError(f"{where}: {e}") from None
    check_settings(settings)
    params = []
    for full, kv in raw_params.items():
        src = param_src[full]
        section, _, key = full.partition(".")
        if settings["sweep_only"] and key not in settings["sweep_only"] and full not in settings["sweep_only"]:
            continue
        if section not in cfg or key not in cfg[section]:
            valid = ", ".join(sorted(f"{s}.{k}" for s in cfg for k in cfg[s]))
            raise SweepError(f"{src}: [sweep.{full}] names no config key; valid keys: {valid}")
        params.append(make_param(section, key, kv, cfg[section][key], src))
    if not params:
        raise SweepError(f"nothing to sweep: no [sweep.<section>.<key>] sections left (sweep_only = "
                         f"{settings['sweep_only']}) in {', '.join(map(str, sources))}")
    metric = settings["metric"]
    if "/" not in metric and metric not in TRAINER_METRICS:
        settings["metric"] = f"env/{metric}"  # PufferLib's `metric = score` names an env log field
    if settings["eval_episodes"] > 0 and not settings["metric"].startswith("env/"):
        raise SweepError(f"[sweep] eval_episodes = {settings['eval_episodes']} scores trials by evaluating the env, "
                         f"but metric = {settings['metric']} is a trainer metric: use an env metric (env/<name>) "
                         f"or eval_episodes = 0")
    flags = {k: str(v) for k, v in fixed.items()}
    return Sweep(env=env, env_name=Path(env).stem, flags=flags, cfg=cfg, settings=settings, params=params,
                 sources=[str(s) for s in sources])


def check_settings(s: dict):
    errors = []
    if s["goal"] not in ("maximize", "minimize"):
        errors.append(f"goal = {s['goal']!r} must be maximize or minimize")
    if s["method"].lower() not in METHODS:
        hint = " (Protein is PufferLib's own method; puffgpu's sweeps use Ray Tune's searchers)" \
            if s["method"].lower() == "protein" else ""
        errors.append(f"method = {s['method']!r} must be one of {', '.join(METHODS)}{hint}")
    if s["max_runs"] < 1:
        errors.append(f"max_runs must be >= 1, got {s['max_runs']}")
    if s["max_suggestion_cost"] <= 0:
        errors.append(f"max_suggestion_cost (seconds per trial) must be > 0, got {s['max_suggestion_cost']}")
    if s["early_stop"] not in ("asha", "none"):
        errors.append(f"early_stop = {s['early_stop']!r} must be asha or none")
    if not 0 < s["grace_period"] < 1:
        errors.append(f"grace_period must be a fraction of a trial in (0, 1), got {s['grace_period']}")
    if s["eval_episodes"] < 0:
        errors.append(f"eval_episodes must be >= 0 (0: no evaluation), got {s['eval_episodes']}")
    if s["reduction_factor"] < 2:
        errors.append(f"reduction_factor must be >= 2, got {s['reduction_factor']}")
    if errors:
        raise SweepError("invalid [sweep]:\n  " + "\n  ".join(errors))


def make_param(section: str, key: str, kv: dict, default, src) -> Param:
    where = f"{src}: [sweep.{section}.{key}]"
    for k in kv:
        if k in PUFFERLIB_PARAM_KEYS:
            print(f"warning: {where} {k} is a Protein setting; ignored", file=sys.stderr)
        elif k not in ("distribution", "min", "max"):
            raise SweepError(f"{where}: unknown key {k}; valid keys: distribution, min, max")
    missing = [k for k in ("distribution", "min", "max") if k not in kv]
    if missing:
        raise SweepError(f"{where}: missing {', '.join(missing)} (e.g. distribution = log_normal, min = 0.001, max = 0.1)")
    dist = str(kv["distribution"])
    if dist not in DISTRIBUTIONS:
        raise SweepError(f"{where}: distribution = {dist!r}; valid: {', '.join(DISTRIBUTIONS)}")
    lo, hi = kv["min"], kv["max"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi)) or not lo < hi:
        raise SweepError(f"{where}: min = {lo!r} and max = {hi!r} must be numbers with min < max")
    if dist in ("log_normal", "uniform_pow2") and lo <= 0:
        raise SweepError(f"{where}: a {dist} range needs min > 0, got {lo}")
    if dist == "logit_normal" and not 0 < lo < hi < 1:
        raise SweepError(f"{where}: a logit_normal range lies inside (0, 1), got [{lo}, {hi}]")
    if dist == "uniform_pow2" and not pow2_values(lo, hi):
        raise SweepError(f"{where}: no power of two between {lo} and {hi}")
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        raise SweepError(f"{where}: {section}.{key} = {default!r} is not a number; only numeric keys can be swept")
    integer = isinstance(default, int) or dist in ("int_uniform", "uniform_pow2")
    return Param(section, key, dist, float(lo), float(hi), integer)


def sweep_name(sw: Sweep) -> str:
    blob = json.dumps({"env": sw.env, "flags": sw.flags, "settings": sw.settings,
                       "params": [p.__dict__ for p in sw.params], "cfg": sw.cfg}, sort_keys=True, default=str)
    return f"{sw.env_name}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


# --------------------------------------------------------------------------------------------
# adapters: one trial per GPU adapter

def local_adapters() -> list[str]:
    """Device names of this machine's GPU adapters (one entry for a CPU-only machine: lavapipe)."""
    from .gpu import GPUError, INSTALL_HINT, usable_adapters
    found = [a.info for a in usable_adapters()]  # real GPUs first
    gpus = [i for i in found if str(i.get("adapter_type", "")).lower() != "cpu"]
    names = list(dict.fromkeys(str(i.get("device") or i.get("vendor")) for i in (gpus or found[:1])))
    if not names:
        raise GPUError(INSTALL_HINT)
    return names


def claim_adapter(names: list[str]):
    """(adapter name, lock file) for this trial: the first adapter of the node no other trial holds."""
    if len(names) <= 1:
        return None, None
    for i, name in enumerate(names):
        f = lock_file(Path(tempfile.gettempdir()) / f"puffgpu-sweep-adapter-{user_tag()}-{i}.lock")
        if f is not None:
            return name, f
    return None, None


# --------------------------------------------------------------------------------------------
# one trial, in a Ray worker

class TuneReporter:
    """Reports each epoch's metrics to Ray Tune (an extra logger of trainer.run.train)."""

    def __init__(self, total_steps: int, metric: str):
        self.total = total_steps
        self.metric = metric
        self.last = None  # the metric's latest value: an epoch in which no episode ended repeats it
        self.count = 0

    def log(self, metrics: dict):
        from ray import tune
        out = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self.metric in out:
            self.last = out[self.metric]
        elif self.last is None:
            return  # no episode has ended yet: nothing to compare (Tune requires the metric in every report)
        else:
            out[self.metric] = self.last
        out["progress"] = int(100 * metrics["global_step"] // self.total)
        self.count += 1
        tune.report(out)  # an ASHA stop ends this thread here (SystemExit); train()'s finally cleans up

    def close(self):
        pass


def run_trial(point: dict, spec: dict):
    """Ray Tune trainable: one normal training run with the suggested values."""
    from ray import tune
    from . import checkpoint as ckpt
    from .run import train
    params = [Param(**p) for p in spec["params"]]
    trial_id = tune.get_context().get_trial_id()
    run_id = f"{spec['name']}-{trial_id}"
    flags = dict(spec["flags"])
    for p in params:
        flags[p.name] = repr(p.value(point[p.name]))
    cfg, _ = config_mod.load(spec["env"], flags)
    env_name = spec["env_name"]
    mine = [c for c in ckpt.list_checkpoints(cfg["base"]["checkpoint_dir"], env_name) if c.parent.name == run_id]
    log = Path(cfg["base"]["log_dir"]) / env_name / f"{run_id}.jsonl"
    if mine:  # the sweep was interrupted during this trial: continue from its last checkpoint
        cfg["base"]["load_model_path"] = str(mine[-1])
    elif log.exists():  # restarted from scratch: keep the interrupted attempt's log beside, not mixed in
        log.rename(log.with_name(f"{run_id}.interrupted-{int(time.time())}.jsonl.old"))
    name, lock = claim_adapter(spec["adapters"]) if spec["adapters"] else (None, None)
    N_T = cfg["vec"]["total_agents"] * cfg["train"]["horizon"]
    reporter = TuneReporter(max(1, cfg["train"]["total_timesteps"] // N_T) * N_T, spec["metric"])
    try:
        # one process per trial, even where the sweep itself was started by an MPI launcher
        res = train(spec["env"], cfg, adapter=name, live=False, run_id=run_id, loggers=[reporter],
                    world=World())
        final = dict(res["metrics"])
        if spec["eval_episodes"] > 0 and res["checkpoint"] and not res["stopped"]:
            final.update(evaluate(spec, cfg, res["checkpoint"], name))
            reporter.log(final)  # the trial's last result: Optuna and the table read its metric
        elif reporter.count == 0 and final:  # resumed at its end: report the final epoch once
            reporter.log(final)
    finally:
        if lock is not None:
            lock.close()


# the seed of the held-out evaluation: envs and sampling no training run of the sweep uses
EVAL_SEED_OFFSET = 1_000_003


def evaluate(spec: dict, cfg: dict, checkpoint, adapter) -> dict:
    """Held-out score of a trial's last checkpoint: trainer.eval's measure over eval_episodes episodes
    (at most 1024 envs, each its first k episodes), with another seed than training's. Returns the
    sweep metric set to the evaluated figure and every evaluated field as eval/<name>."""
    from .eval import Evaluator
    n = spec["eval_episodes"]
    ev = Evaluator(spec["env"], cfg, str(checkpoint), min(n, 1024), cfg["base"]["seed"] + EVAL_SEED_OFFSET, adapter)
    try:
        res = ev.measure(n)
    finally:
        ev.env.close()
    field = spec["metric"].split("/", 1)[1]
    if field not in res:
        raise SweepError(f"the evaluation logged no {field!r} (it logged {', '.join(sorted(res))}): "
                         f"[sweep] metric = {spec['metric']} cannot be evaluated")
    out = {f"eval/{k}": float(v) for k, v in res.items()}
    out[spec["metric"]] = float(res[field])
    return out


# --------------------------------------------------------------------------------------------
# the driver

def _callback_class():
    from ray.tune import Callback

    class Progress(Callback):
        """One line per trial start and end on the driver's console."""

        def __init__(self, name: str, metric: str, params: list, max_runs: int):
            self.name, self.metric, self.params, self.max_runs = name, metric, params, max_runs

        def _label(self, trial) -> str:
            vals = ", ".join(f"{p.key}={fmt(p.value(trial.config[p.name]))}" for p in self.params
                             if p.name in trial.config)
            return f"{self.name}-{trial.trial_id} ({vals})"

        def on_trial_start(self, iteration, trials, trial, **info):
            print(f"[{time.strftime('%H:%M:%S')}] trial {len(trials)}/{self.max_runs} started: {self._label(trial)}",
                  flush=True)

        def on_trial_complete(self, iteration, trials, trial, **info):
            r = trial.last_result or {}
            how = "done" if r.get("progress", 0) >= 100 else f"stopped early at {r.get('progress', 0)}%"
            print(f"[{time.strftime('%H:%M:%S')}] trial {how}: {self._label(trial)} {self.metric} "
                  f"{r.get(self.metric, float('nan')):.4f}", flush=True)

        def on_trial_error(self, iteration, trials, trial, **info):
            print(f"[{time.strftime('%H:%M:%S')}] trial failed: {self._label(trial)}: "
                  f"{first_error_line(trial)}", flush=True)

    return Progress


def first_error_line(trial_or_result) -> str:
    path = getattr(trial_or_result, "error_file", None)
    err = getattr(trial_or_result, "error", None)
    text = str(err) if err is not None else (Path(path).read_text(encoding="utf-8", errors="replace") if path and Path(path).is_file() else "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if "Error:" in ln and "TuneError" not in ln and "RayTaskError" not in ln]
    return (hits[-1] if hits else (lines[-1] if lines else "unknown error"))[:200]


def fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def start_ray(address: str | None, sw: Sweep):
    """Local Ray with one `adapter` resource per GPU adapter, or the cluster at `address`.
    Returns (max concurrent trials, adapter names for local trials)."""
    try:
        import ray
    except ImportError:
        raise SweepError("trainer.sweep needs Ray Tune: pip install 'puffgpu[sweep]' "
                         "(in a checkout: pip install -e \".[sweep]\")") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the legacy reporter honours verbose=0: our lines only
    gpus = sw.settings["gpus"]
    if address:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="WARNING")
        except ConnectionError as e:
            raise SweepError(f"cannot reach the Ray cluster at {address} ({str(e).splitlines()[-1]}). If it uses "
                             f"Ray's token authentication, export RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN "
                             f"or ~/.ray/auth_token) first.") from None
        total = int(ray.cluster_resources().get("adapter", 0))
        if total < 1:
            ray.shutdown()
            raise SweepError(f"the Ray cluster at {address} declares no 'adapter' resource: start each node with "
                             f"`ray start --address <head> --resources '{{\"adapter\": N}}'` (N = its GPUs), with "
                             f"puffgpu installed")
        return (min(total, gpus) if gpus > 0 else total), []
    names = local_adapters()
    root = str(Path(__file__).resolve().parent.parent)  # workers import trainer/envs from this checkout
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                          if p and p != root])
    ray.init(num_cpus=os.cpu_count() or 1, num_gpus=0, resources={"adapter": len(names)}, include_dashboard=False,
             log_to_driver=False, logging_level="WARNING", object_store_memory=100 * 1024 ** 2)
    n = len(names)
    return (min(n, gpus) if gpus > 0 else n), names


def resumable_asha(state_path: Path, **kw):
    """Tune's ASHA scheduler whose rungs survive an interrupted sweep. Tune saves the searcher's state
    with the experiment but restores the scheduler as it was at the start, which would forget every
    rung a finished trial recorded (and let the next bad trial run to its end): this one writes its
    rungs to `state_path` after each result and reads them back on the first result after a resume."""
    from ray.tune.schedulers import ASHAScheduler

    class ResumableASHA(ASHAScheduler):
        def __init__(self, path: str, **kw):
            super().__init__(**kw)
            self._state_path, self._loaded = path, False

        def on_trial_result(self, tune_controller, trial, result):
            if not self._loaded:
                self._loaded = True
                if os.path.exists(self._state_path):
                    saved = json.loads(Path(self._state_path).read_text(encoding="utf-8"))
                    for bracket, rungs in zip(self._brackets, saved):
                        for (milestone, recorded), (m, rec) in zip(bracket._rungs, rungs):
                            if milestone == m:
                                recorded.update({k: v for k, v in rec.items() if k not in recorded})
            decision = super().on_trial_result(tune_controller, trial, result)
            state = [[(m, dict(rec)) for m, rec in b._rungs] for b in self._brackets]
            atomic_write(Path(self._state_path), json.dumps(state))
            return decision

    return ResumableASHA(str(state_path), **kw)


def run_sweep(sw: Sweep, name: str, storage: Path, address: str | None = None) -> dict:
    try:
        from ray import tune
        from ray.tune.schedulers import FIFOScheduler
        from ray.tune.search.optuna import OptunaSearch
        import optuna
    except ImportError as e:
        raise SweepError(f"trainer.sweep needs Ray Tune and Optuna ({e}): pip install 'puffgpu[sweep]' "
                         f"(in a checkout: pip install -e \".[sweep]\")") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    concurrent, adapters = start_ray(address, sw)
    spec = {"env": sw.env, "env_name": sw.env_name, "flags": sw.flags, "name": name, "adapters": adapters,
            "params": [p.__dict__ for p in sw.params], "metric": sw.metric,
            "eval_episodes": sw.settings["eval_episodes"]}
    trainable = tune.with_resources(tune.with_parameters(run_trial, spec=spec), {"cpu": 1, "adapter": 1})
    exp_dir = storage / name
    print(f"sweep {name}: {sw.settings['max_runs']} trials of {sw.env_name}, {sw.settings['method']} on "
          f"{', '.join(p.name for p in sw.params)}; {sw.metric} ({sw.settings['goal']}); "
          f"{concurrent} at a time ({'cluster ' + address if address else ', '.join(adapters)})", flush=True)
    if tune.Tuner.can_restore(str(exp_dir)):
        print(f"resuming the sweep in {exp_dir}", flush=True)
        tuner = tune.Tuner.restore(str(exp_dir), trainable=trainable, resume_unfinished=True, resume_errored=False,
                                   restart_errored=False)
    else:
        seed = sw.cfg["base"]["seed"]
        sampler = optuna.samplers.TPESampler(seed=seed) if sw.settings["method"].lower() == "tpe" \
            else optuna.samplers.RandomSampler(seed=seed)
        first = {p.name: p.sample_of(sw.cfg[p.section][p.key]) for p in sw.params}
        search = OptunaSearch(sampler=sampler, points_to_evaluate=[first])
        if sw.settings["early_stop"] == "asha":
            # max_t above 100: ASHA never stops a trial at its own last report, so the run still
            # saves its final checkpoint after it
            scheduler = resumable_asha(exp_dir / "asha_rungs.json", time_attr="progress", max_t=101,
                                      grace_period=max(1, round(100 * sw.settings["grace_period"])),
                                      reduction_factor=sw.settings["reduction_factor"])
        else:
            scheduler = FIFOScheduler()
        progress = _callback_class()(name, sw.metric, sw.params, sw.settings["max_runs"])
        tuner = tune.Tuner(
            trainable, param_space={p.name: p.domain() for p in sw.params},
            tune_config=tune.TuneConfig(metric=sw.metric, mode=sw.mode, search_alg=search, scheduler=scheduler,
                                        num_samples=sw.settings["max_runs"], max_concurrent_trials=concurrent),
            run_config=tune.RunConfig(name=name, storage_path=str(storage), verbose=0, callbacks=[progress],
                                      stop={"time_total_s": sw.settings["max_suggestion_cost"]},
                                      failure_config=tune.FailureConfig(max_failures=0)))
    grid = tuner.fit()
    trials = getattr(getattr(grid, "_experiment_analysis", None), "trials", None) or []
    finished = [t for t in trials if t.status in ("TERMINATED", "ERROR")]
    interrupted = len(finished) < sw.settings["max_runs"]
    return {"grid": grid, "trials": trials, "interrupted": interrupted, "dir": exp_dir}


def report_only(sw: Sweep, name: str, storage: Path) -> dict:
    """The trials of a sweep that ran before (finished or interrupted), read from Tune's experiment
    state without starting anything."""
    exp_dir = storage / name
    if not exp_dir.is_dir():
        raise SweepError(f"no sweep {name} in {storage}: run it first (without --report)")
    try:
        from ray.tune import ExperimentAnalysis
    except ImportError as e:
        raise SweepError(f"trainer.sweep --report needs Ray Tune ({e}): pip install 'puffgpu[sweep]'") from None
    trials = ExperimentAnalysis(str(exp_dir)).trials
    finished = [t for t in trials if t.status in ("TERMINATED", "ERROR")]
    return {"trials": trials, "interrupted": len(finished) < sw.settings["max_runs"], "dir": exp_dir}


# --------------------------------------------------------------------------------------------
# results: one table, best first, and the metric against each swept key

def trial_rows(sw: Sweep, name: str, trials) -> list[dict]:
    rows = []
    cost = sw.settings["max_suggestion_cost"]
    for t in trials:
        r = t.last_result or {}
        if t.status == "ERROR":
            status = "failed: " + first_error_line(t)
        elif t.status != "TERMINATED":
            status = "interrupted"
        elif r.get("progress", 0) >= 100:
            status = f"done, eval {int(r['eval/episodes'])} episodes" if "eval/episodes" in r else "done"
        elif r.get("time_total_s", 0) >= cost:
            status = f"stopped at {r.get('progress', 0)}%: budget {fmt_time(cost)}"
        else:  # ASHA's, or (in an interrupted sweep's table) the Ctrl-C's: a resume runs that one again
            status = f"stopped early by ASHA at {r.get('progress', 0)}%"
        value = r.get(sw.metric)
        rows.append({"run_id": f"{name}-{t.trial_id}", "status": status,
                     "metric": float(value) if value is not None else float("nan"),
                     "global_step": int(r.get("global_step", 0)), "seconds": float(r.get("time_total_s", 0.0)),
                     "values": {p.name: p.value(t.config[p.name]) for p in sw.params if p.name in t.config}})
    sign = -1 if sw.mode == "max" else 1
    rows.sort(key=lambda w: (math.isnan(w["metric"]), sign * w["metric"] if not math.isnan(w["metric"]) else 0))
    return rows


def table(sw: Sweep, rows: list[dict]) -> str:
    keys = [p.name for p in sw.params]
    head = ["rank", "run", "status", sw.metric, "steps", "time"] + [k.split(".", 1)[1] for k in keys]
    body = []
    for i, w in enumerate(rows, 1):
        body.append([str(i), w["run_id"], w["status"], "—" if math.isnan(w["metric"]) else f"{w['metric']:.4f}",
                     f"{w['global_step']:,}", fmt_time(w["seconds"])] + [fmt(w["values"].get(k, "")) for k in keys])
    widths = [max(len(r[c]) for r in [head] + body) for c in range(len(head))]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in body])


def plot_sweep(sw: Sweep, rows: list[dict], out: Path):
    """The metric against each swept key, one panel per key; best trial starred."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = len(sw.params)
    cols = min(n, 4)  # a grid, 4 panels wide: a campaign over many keys stays readable
    grid = -(-n // cols)
    rc = {"font.size": 8, "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.25}
    with plt.rc_context(rc):
        fig, axes = plt.subplots(grid, cols, figsize=(max(4.0, 3.2 * cols), 0.4 + 2.8 * grid), dpi=150, squeeze=False)
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        ok = [w for w in rows if not math.isnan(w["metric"])]
        for ax, p in zip(axes.flat, sw.params):
            for kind, color, marker in (("done", "#1f77b4", "o"), ("stopped", "#ff7f0e", "v")):
                pts = [(w["values"][p.name], w["metric"]) for w in ok if w["status"].startswith(kind)]
                if pts:
                    ax.scatter([q[0] for q in pts], [q[1] for q in pts], s=22, color=color, marker=marker,
                               label={"done": "finished", "stopped": "stopped early"}[kind], zorder=3)
            failed = [w["values"][p.name] for w in rows if w["status"].startswith("failed")]
            if failed:
                y0 = min([w["metric"] for w in ok], default=0.0)
                ax.scatter(failed, [y0] * len(failed), s=28, color="#d62728", marker="x", label="failed", zorder=3)
            if ok:
                ax.scatter([ok[0]["values"][p.name]], [ok[0]["metric"]], s=120, marker="*", color="gold",
                           edgecolor="black", linewidth=0.6, label="best", zorder=4)
            if p.distribution == "logit_normal":
                ax.set_xscale("logit")
            elif p.log_scale():
                ax.set_xscale("log", base=2 if p.distribution == "uniform_pow2" else 10)
            ax.set_xlim(p.min * (0.8 if p.log_scale() else 1) if p.distribution != "logit_normal" else p.min,
                        p.max * (1.25 if p.log_scale() and p.distribution != "logit_normal" else 1))
            ax.set_xlabel(f"{p.name} ({p.distribution})")
            ax.set_ylabel(sw.metric)
        axes.flat[0].legend(loc="best", frameon=False, fontsize=7)
        fig.suptitle(f"sweep {out.parent.name}\n{sw.metric} at each trial's end", x=0.01, ha="left", fontsize=8,
                     fontweight="bold")
        fig.tight_layout()
        tmp = out.with_name(f".{out.name}.tmp.png")
        fig.savefig(tmp)
        plt.close(fig)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    safe_console()  # a console or pipe that cannot encode a character gets '?'
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(prog="python -m trainer.sweep", description=__doc__.split("\n")[0])
    ap.add_argument("--env", required=True, help="env name or path to an env header")
    ap.add_argument("--config", help="an ini with [sweep]/[sweep.*] sections and fixed trial values")
    ap.add_argument("--address", help="an existing Ray cluster's head, host:port (default: a local Ray)")
    ap.add_argument("--name", help="sweep name (default: <env>-<hash of the sweep config>; the same name resumes)")
    ap.add_argument("--storage", help="folder of sweeps (default: <log_dir>/<env>/sweeps)")
    ap.add_argument("--report", action="store_true",
                    help="run nothing: write the table and plot of the sweep's trials so far (an interrupted one too)")
    args, rest = ap.parse_known_args(argv)
    from .gpu import GPUError
    try:
        sw = load_sweep(args.env, args.config, rest)
        # every trial writes where the driver would, whatever the worker's cwd
        for k in ("log_dir", "checkpoint_dir"):
            sw.flags[f"base.{k}"] = str(Path(sw.cfg["base"][k]).resolve())
            sw.cfg["base"][k] = sw.flags[f"base.{k}"]
        name = args.name or sweep_name(sw)
        storage = Path(args.storage).resolve() if args.storage else Path(sw.cfg["base"]["log_dir"]) / sw.env_name / "sweeps"
        storage.mkdir(parents=True, exist_ok=True)
        res = report_only(sw, name, storage) if args.report else run_sweep(sw, name, storage, args.address)
    except (SweepError, config_mod.ConfigError, GPUError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if "ray" in sys.modules:
            import ray
            ray.shutdown()
    rows = trial_rows(sw, name, res["trials"])
    text = table(sw, rows)
    exp_dir = Path(res["dir"])
    done = sum(not w['status'] == 'interrupted' for w in rows)
    if res["interrupted"] and not args.report:
        print(text)
        print(f"sweep {name} interrupted after {done} finished trials; run the same command again to resume it "
              f"(or add --report for its table and plot so far)", flush=True)
        return 130
    part = f" (interrupted: {done} of {sw.settings['max_runs']} trials finished)" if res["interrupted"] else ""
    summary = (f"sweep {name}: {len(rows)} trials of {sw.env_name}{part}; {sw.metric} ({sw.settings['goal']}) at "
               f"each trial's end, best first\n\n{text}\n")
    atomic_write(exp_dir / "summary.md", summary)
    png = plot_sweep(sw, rows, exp_dir / "sweep.png")
    print(summary)
    best = rows[0] if rows and not math.isnan(rows[0]["metric"]) else None
    if best:
        flags = " ".join(f"--{k} {fmt(v)}" for k, v in best["values"].items())
        print(f"best: {best['run_id']} {sw.metric} {best['metric']:.4f} with {flags}")
    print(f"table {exp_dir / 'summary.md'}" + (f"; plot {png}" if png else "") +
          f"; curves: python tools/plot.py {sw.env_name} --log-dir {sw.cfg['base']['log_dir']} --runs '{name}-*'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
