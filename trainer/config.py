"""Config: trainer/default.ini, then the env's ini (envs/ocean/<env>/<env>.ini), then --section.key value flags.

Same keys and layering as PufferLib 5.0 (`puf_ini_load_env`): only keys that exist in the defaults
(or, for [env], in the env's own ini) can be set. Values keep the type of their default (ints,
floats, strings, None); true/false are booleans (1/0).

An env's ini as PufferLib ships it loads unchanged: `[base] env_name` is accepted, `[sweep]` and
`[sweep.*]` sections are skipped (the sweep tool reads them itself), and keys that some version of
PufferLib defines but puffgpu does not implement (`[vec] num_envs`, `[train] update_epochs`, 4.0's
Adam/prioritized-replay keys, ...: UPSTREAM_KEYS) are ignored with one warning that lists them. A
key that no PufferLib version knows is an error that lists the valid keys, and so is every key a
command-line flag names that puffgpu does not implement.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

import envs
from puffbase.ini import IniError, parse_value, read_ini_described, unquote


DEFAULT_INI = Path(__file__).resolve().parent / "default.ini"
SECTIONS = ("base", "vec", "env", "policy", "train")

# Keys PufferLib's default.ini defines in some version (5.0 G1-G3 `config/default.ini`, 4.0, the
# 3.x `pufferlib/config/default.ini`) that puffgpu does not implement. Whole sections are listed
# as None: every key in them is PufferLib's ([torch] names 4.0's torch modules, [rnn] and 3.x's
# [policy] hold policy-constructor arguments, [selfplay] is 5.0's opponent pool).
UPSTREAM_KEYS: dict[str, set[str] | None] = {
    "base": {"env_name", "package", "policy_name", "rnn_name", "max_suggestion_cost", "gpu_offset",
             "rank", "world_size", "gpu_id", "nccl_id", "profile", "eval_episodes", "eval_agents",
             "load_enemy_model_path", "run_id", "result_fd", "cudagraphs", "async", "reset_state"},
    "vec": {"num_policies", "hist_policy_hidden_size", "hist_policy_num_layers", "hist_policy_percent",
            "backend", "num_envs", "num_workers", "batch_size", "zero_copy", "seed", "envs_per_worker",
            "envs_per_batch", "env_batch_size"},
    "policy": {"expansion_factor"},
    "train": {"gpus", "seed", "anneal_ent_coef", "min_ent_coef_ratio", "verb_eps", "verb_eps_anneal_start",
              "verb_eps_anneal_end", "beta1", "beta2", "eps", "prio_alpha", "prio_beta0", "name", "project",
              "torch_deterministic", "cpu_offload", "device", "optimizer", "precision", "update_epochs",
              "adam_beta1", "adam_beta2", "adam_eps", "data_dir", "checkpoint_interval", "batch_size",
              "max_minibatch_size", "bptt_horizon", "compile", "compile_mode", "compile_fullgraph",
              "norm_adv", "target_kl", "clip_vloss", "env_batch_size", "num_minibatches", "exp_id",
              "verbose", "use_rnn"},
    "torch": None,
    "rnn": None,
    "selfplay": None,
}
# Accepted without a warning: puffgpu takes the env from --env, and the name is informational.
SILENT_KEYS = {("base", "env_name")}


def is_sweep_section(section: str) -> bool:
    """[sweep] and [sweep.*]: hyperparameter-search settings, read by the sweep tool itself."""
    return section == "sweep" or section.startswith("sweep.")


def upstream_key(section: str, key: str) -> bool:
    """Whether some PufferLib version defines [section] key (in a section puffgpu lacks, or a key
    puffgpu does not implement)."""
    if section not in UPSTREAM_KEYS:
        return False
    keys = UPSTREAM_KEYS[section]
    return keys is None or key in keys


class ConfigError(ValueError):
    pass


def read_described_ini(path: Path) -> tuple[dict, dict]:
    """({section: {key: value}}, {(section, key): description}) of a config ini, a value "None"
    (any case) read as None; a line that does not parse is a ConfigError naming file and line."""
    try:
        values, desc = read_ini_described(path)
    except IniError as e:
        raise ConfigError(str(e)) from None
    return {s: {k: _none(v) for k, v in kv.items()} for s, kv in values.items()}, desc


def defaults() -> dict:
    """trainer/default.ini as {section: {key: value}}: the one home of every default, the learner's
    included (LearnerConfig's field defaults and the golden generator's parameters read it)."""
    return read_described_ini(DEFAULT_INI)[0]


def _none(v):
    return None if isinstance(v, str) and v.lower() == "none" else v


_TRAIN = defaults()["train"]  # the learner's defaults live once, in trainer/default.ini's [train]


def cosine_lr(lr: float, epoch: int, total_epochs: int, min_lr_ratio: float = 0.0) -> float:
    """PufferLib's per-epoch cosine: lr_e = lr_min + ½(lr − lr_min)(1 + cos(π·e/E)); epoch 0 → lr."""
    lr_min = lr * min_lr_ratio
    e = min(epoch, total_epochs)
    return lr_min + 0.5 * (lr - lr_min) * (1.0 + float(np.cos(np.pi * e / max(1, total_epochs))))


@dataclass
class LearnerConfig:
    """Every [train] key the learner reads, in one object (trainer.learner.Learner takes it): the
    update's, the learning-rate schedule's and the minibatches'. Defaults: trainer/default.ini."""
    # the update (what a golden case records)
    gamma: float = float(_TRAIN["gamma"])
    gae_lambda: float = float(_TRAIN["gae_lambda"])
    clip_coef: float = float(_TRAIN["clip_coef"])
    vf_coef: float = float(_TRAIN["vf_coef"])
    vf_clip_coef: float = float(_TRAIN["vf_clip_coef"])
    ent_coef: float = float(_TRAIN["ent_coef"])
    max_grad_norm: float = float(_TRAIN["max_grad_norm"])
    momentum: float = float(_TRAIN["momentum"])
    vtrace: bool = bool(_TRAIN["vtrace"])
    vtrace_rho_clip: float = float(_TRAIN["vtrace_rho_clip"])
    vtrace_c_clip: float = float(_TRAIN["vtrace_c_clip"])
    freeze_continuous: bool = bool(_TRAIN["freeze_continuous"])  # an ablation: no gradient from the continuous heads
    # the learning-rate schedule (learning_rate_at)
    learning_rate: float = float(_TRAIN["learning_rate"])
    anneal_lr: bool = bool(_TRAIN["anneal_lr"])
    min_lr_ratio: float = float(_TRAIN["min_lr_ratio"])
    lr_warmup: float = float(_TRAIN["lr_warmup"])
    # the minibatches (num_minibatches, check_minibatching)
    minibatch_size: int = int(_TRAIN["minibatch_size"])
    replay_ratio: float = float(_TRAIN["replay_ratio"])

    SCHEDULE = ("learning_rate", "anneal_lr", "min_lr_ratio", "lr_warmup")
    MINIBATCHES = ("minibatch_size", "replay_ratio")

    @classmethod
    def from_dict(cls, values: dict) -> "LearnerConfig":
        """The fields named in `values` (the config's [train] section, or a golden case's parameters),
        each in its field's type (0/1 switches become bools); the others keep their defaults."""
        defaults = cls()
        return cls(**{f.name: type(getattr(defaults, f.name))(values[f.name]) for f in fields(cls) if f.name in values})

    def learning_rate_at(self, epoch: int, total_epochs: int) -> float:
        """The learning rate of one epoch: the cosine schedule (or the constant rate without anneal_lr),
        times a linear warm-up over the first lr_warmup × total_epochs epochs (epoch e of W: (e+1)/W)."""
        lr = (cosine_lr(self.learning_rate, epoch, total_epochs, self.min_lr_ratio) if self.anneal_lr
              else self.learning_rate)
        warm = round(self.lr_warmup * total_epochs)
        return lr * min(1.0, (epoch + 1) / warm) if warm > 0 else lr

    def num_minibatches(self, N: int, T: int) -> int:
        """Minibatch updates per epoch of N agents × T steps: replay_ratio·N·T / minibatch_size."""
        return int(self.replay_ratio * N * T / self.minibatch_size)

    def check_minibatching(self, N: int, T: int):
        """PufferLib's validity rules, plus whole row blocks (a minibatch never straddles the last agent)."""
        minibatch_size, replay_ratio = self.minibatch_size, self.replay_ratio
        if minibatch_size < 1:
            raise ValueError(f"train.minibatch_size must be a positive multiple of train.horizon ({T}), got "
                             f"{minibatch_size}")
        if minibatch_size % T:
            raise ValueError(f"train.minibatch_size ({minibatch_size}) must be a multiple of train.horizon ({T}): "
                             f"a minibatch is whole agent rows of the horizon")
        if minibatch_size > N * T:
            raise ValueError(f"train.minibatch_size ({minibatch_size}) is more than horizon × agents "
                             f"({T} × {N} = {N * T}); lower it or raise vec.total_agents")
        R = minibatch_size // T
        if N % R:
            raise ValueError(f"vec.total_agents ({N}) must be a multiple of minibatch_size / horizon ({R} rows) so "
                             f"minibatches are contiguous row blocks")
        if self.num_minibatches(N, T) < 1:
            raise ValueError(f"train.replay_ratio ({replay_ratio}) gives no minibatch: need replay_ratio·N·T ≥ "
                             f"minibatch_size")


def _value(text: str):
    return _none(parse_value(unquote(text)))


def _coerce(section: str, key: str, default, value, source: str):
    """Give `value` the type of `default`; a clear error when it does not fit."""
    if isinstance(value, str):
        value = _value(value)
    if value is None:
        return None
    if default is None:  # optional string keys (load_model_path)
        return str(value)
    if isinstance(default, bool):
        if isinstance(value, (bool, int)) and value in (0, 1):
            return bool(value)
    elif isinstance(default, int):
        if isinstance(value, bool):  # true/false for 0/1 switches (anneal_lr = true)
            return int(value)
        if isinstance(value, (int, float)) and float(value).is_integer():
            return int(value)
    elif isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(default, str):
        return str(value)
    kind = {"bool": "0/1 or true/false", "int": "an integer", "float": "a number", "str": "a string"}[type(default).__name__]
    raise ConfigError(f"{source}: [{section}] {key} = {value!r} must be {kind} like its default {default!r}")


def valid_keys_message(cfg: dict, section: str) -> str:
    return ", ".join(sorted(cfg[section]))


def load(env, flags: dict[str, str] | None = None, warn=None) -> tuple[dict, dict]:
    """The layered config for `env` (an envs.EnvSource, or a name or path that envs.resolve turns
    into one) → (config, descriptions). The env's layer is its source's training ini (its own, or
    its kind's when it has none). Keys of that ini that PufferLib defines but puffgpu ignores are
    reported in one line through `warn` (default: a warning on stderr)."""
    cfg, desc = read_described_ini(DEFAULT_INI)
    cfg = {s: kv for s, kv in cfg.items() if not is_sweep_section(s)}
    source = envs.resolve(env)
    ini = source.training_ini
    sections = source.kind.sections
    cfg["env"].update(source.kind.defaults)  # a kind's own keys have defaults without an ini
    ignored = []
    if ini.is_file():
        env_values, env_desc = read_described_ini(ini)
        desc.update(env_desc)
        for section, kv in env_values.items():
            if is_sweep_section(section):
                continue
            if section not in cfg and section not in sections:
                if section in UPSTREAM_KEYS:
                    ignored += [f"[{section}] {k}" for k in kv] or [f"[{section}]"]
                    continue
                raise ConfigError(f"{ini}: unknown section [{section}]; sections: {', '.join(SECTIONS)} "
                                  f"(and PufferLib's {', '.join(f'[{k}]' for k in UPSTREAM_KEYS if k not in SECTIONS)}, "
                                  f"[sweep*], which puffgpu skips)")
            for key, value in kv.items():
                # the env's own keys are defined by its ini, in its kind's sections of it (a JS
                # game's [js] section holds env keys too: picture size, action table, max_steps)
                if section in sections:
                    cfg["env"][key] = value
                    continue
                if key not in cfg[section]:
                    if (section, key) in SILENT_KEYS:
                        continue
                    if upstream_key(section, key):
                        ignored.append(f"[{section}] {key}")
                        continue
                    raise ConfigError(f"{ini}: unknown key [{section}] {key}; no version of PufferLib "
                                      f"defines it. Valid keys: {valid_keys_message(cfg, section)}")
                cfg[section][key] = _coerce(section, key, cfg[section][key], value, str(ini))
    if ignored:
        text = (f"warning: {ini.name}: ignoring {len(ignored)} PufferLib key(s) that puffgpu does not "
                f"implement: {', '.join(ignored)}")
        (warn or (lambda t: print(t, file=sys.stderr, flush=True)))(text)
    for name, value in (flags or {}).items():
        section, key = split_flag(name)
        if section not in cfg:
            raise ConfigError(f"--{name}: unknown section [{section}]; sections: {', '.join(SECTIONS)}")
        if key not in cfg[section] and section == "env" and source.kind.open_keys:
            cfg[section][key] = parse_value(value) if isinstance(value, str) else value  # the factory's keyword
            continue
        if key not in cfg[section]:
            known = (" (a PufferLib key that puffgpu does not implement)"
                     if upstream_key(section, key) or (section, key) in SILENT_KEYS else "")
            raise ConfigError(f"--{name}: unknown key [{section}] {key}{known}; valid keys in [{section}]: "
                              f"{valid_keys_message(cfg, section)}")
        cfg[section][key] = _coerce(section, key, cfg[section][key], value, f"--{name}")
    return cfg, desc


def split_flag(name: str) -> tuple[str, str]:
    """'train.learning-rate' → ('train', 'learning_rate'); a bare key means [base]."""
    name = name.replace("-", "_")
    if "." in name:
        section, key = name.split(".", 1)
    else:
        section, key = "base", name
    return section, key


# What each number means, as (section, key): (low, high, low included, high included, what it is).
# A value outside, or one that is not finite, is refused at start with this range.
RANGES = {
    ("train", "total_timesteps"): (1, math.inf, True, False, "env steps"),
    ("train", "learning_rate"): (0, math.inf, True, False, "Muon's step size"),
    ("train", "min_lr_ratio"): (0, 1, True, True, "a fraction of learning_rate"),
    ("train", "lr_warmup"): (0, 1, True, True, "a fraction of the epochs"),
    ("train", "gamma"): (0, 1, True, True, "a discount factor"),
    ("train", "gae_lambda"): (0, 1, True, True, "GAE's lambda"),
    ("train", "replay_ratio"): (0, math.inf, False, False, "minibatch samples per rollout sample"),
    ("train", "clip_coef"): (0, math.inf, True, False, "PPO's ratio clip"),
    ("train", "vf_coef"): (0, math.inf, True, False, "the value loss's weight"),
    ("train", "vf_clip_coef"): (0, math.inf, True, False, "the value clip"),
    ("train", "max_grad_norm"): (0, math.inf, False, False, "the gradient norm's cap"),
    ("train", "ent_coef"): (-math.inf, math.inf, False, False, "the entropy bonus"),
    ("train", "momentum"): (0, 1, True, False, "Muon's momentum"),
    ("train", "vtrace_rho_clip"): (0, math.inf, False, False, "V-trace's rho clip"),
    ("train", "vtrace_c_clip"): (0, math.inf, False, False, "V-trace's c clip"),
    ("train", "horizon"): (1, math.inf, True, False, "steps per rollout"),
    ("train", "minibatch_size"): (1, math.inf, True, False, "samples per minibatch"),
    ("vec", "total_agents"): (1, math.inf, True, False, "agents"),
    ("vec", "num_buffers"): (1, math.inf, True, False, "env buffers"),
    ("vec", "num_threads"): (1, math.inf, True, False, "threads"),
    ("base", "seed"): (0, 2**32, True, False, "an unsigned 32-bit seed"),
    ("base", "checkpoint_interval"): (1, math.inf, True, False, "epochs"),
}


def _interval(lo, hi, lo_in, hi_in) -> str:
    def num(x):
        return str(int(x)) if float(x).is_integer() else f"{x:g}"
    if hi == math.inf:
        return "a finite number" + ("" if lo == -math.inf else f" {'>=' if lo_in else '>'} {num(lo)}")
    return f"in {'[' if lo_in else '('}{num(lo)}, {num(hi)}{']' if hi_in else ')'}"


def check_values(cfg: dict) -> list[str]:
    """The config values outside their meaning (RANGES), one line each; also NaN and infinities."""
    errors = []
    for (section, key), (lo, hi, lo_in, hi_in, what) in RANGES.items():
        value = cfg.get(section, {}).get(key)
        if value is None or isinstance(value, str):
            continue  # a type error is reported where the value was read
        ok = (math.isfinite(value) and (value >= lo if lo_in else value > lo)
              and (value <= hi if hi_in else value < hi))
        if not ok:
            errors.append(f"{section}.{key} = {value!r} must be {_interval(lo, hi, lo_in, hi_in)} ({what})")
    return errors


def validate_values(cfg: dict):
    """check_values as a ConfigError: what a command checks right after loading the config, before any work."""
    errors = check_values(cfg)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))


def validate(cfg: dict, num_agents: int | None = None):
    """Refuse invalid combinations with the reason (PufferLib's puf_config_train_valid and more)."""
    t, v, p = cfg["train"], cfg["vec"], cfg["policy"]
    N = num_agents if num_agents is not None else v["total_agents"]
    errors = check_values(cfg)
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))
    if t["horizon"] < 1:
        errors.append(f"train.horizon must be >= 1, got {t['horizon']}")
    elif t["replay_ratio"] <= 0:
        errors.append(f"train.replay_ratio must be > 0, got {t['replay_ratio']}")
    else:
        try:
            LearnerConfig.from_dict(t).check_minibatching(N, t["horizon"])
        except ValueError as e:
            errors.append(str(e))
    if p["hidden_size"] < 8 or p["hidden_size"] % 8:
        errors.append(f"policy.hidden_size must be a positive multiple of 8, got {p['hidden_size']}")
    if p["num_layers"] < 1:
        errors.append(f"policy.num_layers must be >= 1, got {p['num_layers']}")
    if v["num_buffers"] < 1 or N % v["num_buffers"]:
        errors.append(f"vec.num_buffers = {v['num_buffers']} must be >= 1 and divide the {N} agents "
                      f"(each buffer holds an equal share)")
    if v["total_agents"] < 1:
        errors.append(f"vec.total_agents must be >= 1, got {v['total_agents']}")
    if t["total_timesteps"] < t["horizon"] * N:
        errors.append(f"train.total_timesteps ({t['total_timesteps']}) is less than one epoch "
                      f"(horizon × agents = {t['horizon'] * N})")
    if cfg["base"]["checkpoint_interval"] < 1:
        errors.append(f"base.checkpoint_interval must be >= 1 epoch, got {cfg['base']['checkpoint_interval']}")
    if errors:
        raise ConfigError("invalid config:\n  " + "\n  ".join(errors))


def help_text(cfg: dict, desc: dict, env_name: str | None) -> str:
    lines = []
    for section in cfg:
        lines.append(f"[{section}]" + (f"  ({env_name}'s keys, from its ini)" if section == "env" and env_name else ""))
        for key, value in cfg[section].items():
            d = desc.get((section, key), "")
            lines.append(f"  --{section}.{key} {value!s:<12} {d}")
    return "\n".join(lines)


def split_section_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separate `--section.key value` / `--section.key=value` tokens (a dot in the name) from the
    rest, so that a command with positional arguments does not take a flag's value for one."""
    flags, rest, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and "." in a.split("=", 1)[0]:
            flags.append(a)
            if "=" not in a and i + 1 < len(argv):
                flags.append(argv[i + 1])
                i += 1
        else:
            rest.append(a)
        i += 1
    return flags, rest


def parse_flags(argv: list[str]) -> dict[str, str]:
    """`--section.key value` / `--section.key=value` pairs (a bare --key is [base]) → {name: value}."""
    flags, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--") or a == "--":
            raise ConfigError(f"unexpected argument {a!r}; config flags look like --train.learning_rate 0.01")
        if "=" in a:
            k, v = a[2:].split("=", 1)
        else:
            if i + 1 >= len(argv):
                raise ConfigError(f"{a} needs a value")
            k, v = a[2:], argv[i + 1]
            i += 1
        flags[k] = v
        i += 1
    return flags
