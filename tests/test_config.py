"""Config layering (default.ini → env ini → flags), clear errors, --help."""
import pytest

from trainer import config
from trainer.run import main


def test_layering_env_ini_then_flags():
    cfg, _ = config.load("platformer")
    assert cfg["base"]["seed"] == 73 and cfg["train"]["vf_coef"] == 2.0  # PufferLib defaults
    assert cfg["vec"]["total_agents"] == 256 and cfg["train"]["total_timesteps"] == 3_000_000  # platformer.ini
    assert cfg["train"]["learning_rate"] == 0.008  # platformer.ini's, over default.ini's 0.015
    assert cfg["env"]["frameskip"] == 2
    cfg, _ = config.load("platformer", {"train.learning-rate": "0.01", "train.horizon": "32", "seed": "5",
                                        "env.frameskip": "3", "base.load_model_path": "latest"})
    assert cfg["train"]["learning_rate"] == 0.01 and cfg["train"]["horizon"] == 32
    assert cfg["base"]["seed"] == 5 and cfg["env"]["frameskip"] == 3 and cfg["base"]["load_model_path"] == "latest"
    assert isinstance(cfg["train"]["horizon"], int)


def test_unknown_key_lists_valid_keys():
    with pytest.raises(config.ConfigError, match=r"unknown key \[train\] learnig_rate; valid keys in \[train\]: .*learning_rate"):
        config.load("platformer", {"train.learnig_rate": "0.1"})
    with pytest.raises(config.ConfigError, match=r"unknown section \[trian\]; sections: base, vec, env, policy, train"):
        config.load("platformer", {"trian.horizon": "3"})


def test_type_errors():
    with pytest.raises(config.ConfigError, match=r"\[train\] horizon = 6.5 must be an integer"):
        config.load("platformer", {"train.horizon": "6.5"})
    with pytest.raises(config.ConfigError, match="must be a number"):
        config.load("platformer", {"train.gamma": "high"})


def test_invalid_combinations_refused_with_reason():
    cfg, _ = config.load("platformer", {"train.minibatch_size": "1000"})
    with pytest.raises(config.ConfigError, match="multiple of train.horizon"):
        config.validate(cfg)
    cfg, _ = config.load("platformer", {"train.minibatch_size": str(1024 * 64 * 2)})
    with pytest.raises(config.ConfigError, match="more than horizon × agents"):
        config.validate(cfg)
    cfg, _ = config.load("platformer", {"policy.hidden_size": "100"})
    with pytest.raises(config.ConfigError, match="multiple of 8"):
        config.validate(cfg)
    cfg, _ = config.load("platformer")
    config.validate(cfg)


def test_every_key_has_a_description():
    cfg, desc = config.load("platformer")
    missing = [f"{s}.{k}" for s in cfg for k in cfg[s] if (s, k) not in desc]
    assert not missing, f"keys without a description: {missing}"


def test_help_lists_every_key(capsys):
    assert main(["--help", "--env", "platformer"]) == 0
    out = capsys.readouterr().out
    cfg, _ = config.load("platformer")
    for s in cfg:
        for k in cfg[s]:
            assert f"--{s}.{k} " in out


def test_cli_errors_are_clear(capsys):
    assert main(["--env", "platformer", "--train.bogus", "1"]) == 1
    assert "unknown key [train] bogus" in capsys.readouterr().err
    assert main(["--env", "nosuchenv"]) == 1
    assert "unknown env 'nosuchenv'; built-in envs: " in capsys.readouterr().err


def test_section_flags_split_from_positionals():
    flags, rest = config.split_section_flags(
        ["--env", "memory", "--base.checkpoint_dir", "/tmp/ck", "latest", "--env.delay=3", "--headless"])
    assert flags == ["--base.checkpoint_dir", "/tmp/ck", "--env.delay=3"]
    assert rest == ["--env", "memory", "latest", "--headless"]
    assert config.parse_flags(flags) == {"base.checkpoint_dir": "/tmp/ck", "env.delay": "3"}


# ---- PufferLib inis load as they are ----

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
SQUARES = str(ROOT / "tests" / "envs5" / "squares" / "squares.h")


def test_upstream_ini_loads_with_one_warning_listing_ignored_keys():
    warnings = []
    cfg, _ = config.load(SQUARES, warn=warnings.append)
    assert len(warnings) == 1
    w = warnings[0]
    for key in ("[vec] num_envs", "[train] update_epochs", "[train] adam_beta1", "[train] prio_alpha"):
        assert key in w, w
    assert "env_name" not in w and "sweep" not in w  # accepted / skipped without a word
    assert cfg["vec"]["num_buffers"] == 2 and cfg["vec"]["total_agents"] == 64
    assert cfg["train"]["anneal_lr"] == 1 and isinstance(cfg["train"]["anneal_lr"], int)  # `true`
    assert cfg["base"]["load_model_path"] is None  # 'None', quoted as PufferLib writes it
    assert cfg["env"]["agents_per_env"] == 4 and "sweep" not in cfg


def test_warning_goes_to_stderr_once(capsys):
    config.load(SQUARES)
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "ignoring 4 PufferLib key(s)" in err


def test_key_no_pufferlib_version_knows_is_an_error(tmp_path):
    header = tmp_path / "e" / "e.h"
    header.parent.mkdir()
    header.write_text("")
    (tmp_path / "e" / "e.ini").write_text("[base]\nenv_name = e\n[train]\nlearnig_rate = 0.1\n")
    with pytest.raises(config.ConfigError, match=r"e\.ini: unknown key \[train\] learnig_rate; no version of "
                                                 r"PufferLib defines it.*learning_rate"):
        config.load(str(header))
    (tmp_path / "e" / "e.ini").write_text("[trian]\nhorizon = 3\n")
    with pytest.raises(config.ConfigError, match=r"unknown section \[trian\]"):
        config.load(str(header))
    (tmp_path / "e" / "e.ini").write_text("[torch]\nnetwork = MinGRU\n[sweep.x.y]\nmin = 1\n[train]\nhorizon = 8\n")
    warnings = []
    cfg, _ = config.load(str(header), warn=warnings.append)
    assert cfg["train"]["horizon"] == 8 and warnings == ["warning: e.ini: ignoring 1 PufferLib key(s) that "
                                                         "puffgpu does not implement: [torch] network"]


def test_unparsable_ini_line_names_file_and_line(tmp_path):
    header = tmp_path / "e" / "e.h"
    header.parent.mkdir()
    header.write_text("")
    (tmp_path / "e" / "e.ini").write_text("[env]\n; the delay\ndelay = 3\nthis is not a key\n")
    with pytest.raises(config.ConfigError, match=r"e\.ini:4: cannot parse 'this is not a key'"):
        config.load(str(header))
    (tmp_path / "e" / "e.ini").write_text("[env]\n; the delay\ndelay = 3\n")
    cfg, desc = config.load(str(header))
    assert cfg["env"]["delay"] == 3 and desc[("env", "delay")] == "the delay"


def test_flags_naming_unimplemented_pufferlib_keys_are_errors():
    with pytest.raises(config.ConfigError, match=r"--train.update_epochs: unknown key \[train\] update_epochs "
                                                 r"\(a PufferLib key that puffgpu does not implement\)"):
        config.load("platformer", {"train.update_epochs": "2"})
    cfg, _ = config.load("platformer", {"train.anneal_lr": "false", "vec.num_buffers": "2"})
    assert cfg["train"]["anneal_lr"] == 0 and cfg["vec"]["num_buffers"] == 2


def test_pufferlib_layout_finds_config_folder(tmp_path):
    """ocean/<name>/<name>.h with config/<name>.ini, as in a PufferLib checkout."""
    import envs
    (tmp_path / "ocean" / "x").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    header = tmp_path / "ocean" / "x" / "x.h"
    header.write_text("")
    (tmp_path / "config" / "x.ini").write_text("[env]\nsize = 5\n")
    assert envs.env_ini_path(str(header)) == tmp_path / "config" / "x.ini"
    cfg, _ = config.load(str(header))
    assert cfg["env"]["size"] == 5
