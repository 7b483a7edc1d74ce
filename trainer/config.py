"""Config: trainer/default.ini, then envs/<env>/<env>.ini, then --section.key value flags.

Same keys and layering as PufferLib 5.0 (`puf_ini_load_env`): only keys that exist in the defaults
(or, for [env], in the env's own ini) can be set; an unknown section or key is an error that lists
the valid ones. Values keep the type of their default (ints, floats, strings, None).
"""
from __future__ import annotations

import re
from pathlib import Path

import envs
from envs.vecenv import parse_value

from .learner import check_minibatching

DEFAULT_INI = Path(__file__).resolve().parent / "default.ini"
SECTIONS = ("base", "vec", "env", "policy", "train")


class ConfigError(ValueError):
    pass


def is_sweep_section(section: str) -> bool:
    """[sweep] and [sweep.*] configure trainer.sweep, which reads them itself; training ignores them."""
    return section == "sweep" or section.startswith("sweep.")


def read_described_ini(path: Path) -> tuple[dict, dict]:
    """({section: {key: value}}, {(section, key): description}) — a key's description is the
    comment line(s) right above it."""
    values, desc = {}, {}
    section, comment = None, []
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line:
            comment = []
            continue
        if line[0] in ";#":
            comment.append(line[1:].strip())
            continue
        m = re.fullmatch(r"\[([\w.]+)\]", line)
        if m:
            section, comment = m.group(1), []
            values.setdefault(section, {})
            continue
        m = re.fullmatch(r"([\w.-]+)\s*[=:]\s*(.*?)\s*(?:[;#].*)?", line)
        if not m or section is None:
            raise ConfigError(f"{path}: cannot parse line {raw!r}")
        key = m.group(1)
        values[section][key] = _value(m.group(2))
        if comment:
            desc[(section, key)] = " ".join(comment)
        comment = []
    return values, desc


def _value(text: str):
    v = parse_value(text)
    return None if isinstance(v, str) and v.lower() == "none" else v


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
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
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


def load(env_name: str, flags: dict[str, str] | None = None) -> tuple[dict, dict]:
    """The layered config for `env_name` → (config, descriptions)."""
    cfg, desc = read_described_ini(DEFAULT_INI)
    cfg = {s: kv for s, kv in cfg.items() if not is_sweep_section(s)}
    ini = envs.env_ini_path(env_name)
    if ini.is_file():
        env_values, env_desc = read_described_ini(ini)
        desc.update(env_desc)
        for section, kv in env_values.items():
            if is_sweep_section(section):
                continue
            if section not in cfg:
                raise ConfigError(f"{ini}: unknown section [{section}]; sections: {', '.join(SECTIONS)}")
            for key, value in kv.items():
                if section == "env":  # the env's own keys are defined by its ini
                    cfg["env"][key] = value
                    continue
                if key not in cfg[section]:
                    raise ConfigError(f"{ini}: unknown key [{section}] {key}; valid keys: "
                                      f"{valid_keys_message(cfg, section)}")
                cfg[section][key] = _coerce(section, key, cfg[section][key], value, str(ini))
    for name, value in (flags or {}).items():
        section, key = split_flag(name)
        if section not in cfg:
            raise ConfigError(f"--{name}: unknown section [{section}]; sections: {', '.join(SECTIONS)}")
        if key not in cfg[section]:
            raise ConfigError(f"--{name}: unknown key [{section}] {key}; valid keys in [{section}]: "
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


def validate(cfg: dict, num_agents: int | None = None):
    """Refuse invalid combinations with the reason (PufferLib's puf_config_train_valid and more)."""
    t, v, p = cfg["train"], cfg["vec"], cfg["policy"]
    N = num_agents if num_agents is not None else v["total_agents"]
    errors = []
    if t["horizon"] < 1:
        errors.append(f"train.horizon must be >= 1, got {t['horizon']}")
    elif t["replay_ratio"] <= 0:
        errors.append(f"train.replay_ratio must be > 0, got {t['replay_ratio']}")
    else:
        try:
            check_minibatching(N, t["horizon"], t["minibatch_size"], t["replay_ratio"])
        except ValueError as e:
            errors.append(str(e))
    if p["hidden_size"] < 8 or p["hidden_size"] % 8:
        errors.append(f"policy.hidden_size must be a positive multiple of 8, got {p['hidden_size']}")
    if p["num_layers"] < 1:
        errors.append(f"policy.num_layers must be >= 1, got {p['num_layers']}")
    if v["num_buffers"] != 1:
        errors.append(f"vec.num_buffers = {v['num_buffers']}: puffgpu steps envs and inference in turn; only 1 "
                      f"is supported")
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
