"""The env interface (envs/interface.py) over every kind: a C header in-process, a JS game,
a game server, and a header isolated in a server process (a picture env, through eval's GIF path)."""
from pathlib import Path

import numpy as np
import pytest

import envs
from envs import registry
from trainer import checkpoint as ckpt
from trainer.spec import PolicySpec, init_weights

ROOT = Path(__file__).resolve().parent.parent

# (name, [env] overrides, agents, backend class name)
BACKENDS = [
    ("breakout", {}, 4, "VecEnv"),
    ("platformer_sparse", {"go_explore": 0.5}, 4, "GoExploreVecEnv"),
    ("catcher", {}, 4, "JsEnv"),
    ("arena", {"processes": 2}, 16, "ShmVecEnv"),
    ("pixel_platformer_small", {"isolate": 1}, 4, "ShmVecEnv"),
    ("ddnet", {"servers": 1, "bots_per_server": 2}, 2, "DDNetEnv"),  # DDNet-Server processes (ddnet-server)
    ("gym:CartPole-v1", {"processes": 2}, 4, "PythonWorkerEnv"),  # Gymnasium envs in worker processes
    ("gym:CartPole-v1", {"isolate": 0}, 4, "PythonEnv"),
    ("pz:" + str(ROOT / "tests" / "py_envs" / "leaving.py"), {}, 10, "PythonWorkerEnv"),  # PettingZoo
    ("ale:Breakout", {"picture_height": 42, "picture_width": 42}, 4, "AleEnv"),  # ale-py's vector env ([atari])
]


def _available(name):
    from envs.ddnet.server import DEFAULT_SERVER
    import importlib.util
    import os
    if name.startswith(("gym:", "pz:")):
        return importlib.util.find_spec("gymnasium") and (name.startswith("gym:") or importlib.util.find_spec("pettingzoo"))
    if name.startswith("ale:"):
        return importlib.util.find_spec("ale_py") is not None
    return name != "ddnet" or os.access(DEFAULT_SERVER, os.X_OK)


@pytest.fixture(params=BACKENDS, ids=[f"{b[0].rsplit('/', 1)[-1]}-{b[3]}" for b in BACKENDS])
def env(request):
    name, config, agents, cls = request.param
    if not _available(name):
        pytest.skip("DDNet's server is missing: sudo apt-get install ddnet-server" if name == "ddnet" else
                    'ale-py is missing: pip install -e ".[atari]"' if name.startswith("ale:") else
                    "a Python env kind's extra is missing: pip install -e '.[gym,pz]'")
    with envs.make(name, agents, config=config, num_threads=1, seed=3) as e:
        assert type(e).__name__ == cls
        yield e


def test_every_backend_meets_the_interface(env):
    assert isinstance(env, envs.Env)
    n, k = env.num_agents, len(env.act_sizes)
    assert env.observations.shape == (n, env.obs_size) and env.observations.dtype == env.obs_dtype
    assert env.actions.shape == (n, k) and env.actions.dtype == np.float32
    assert env.rewards.shape == env.terminals.shape == (n,)
    assert env.action_mask.shape == (n, sum(env.act_sizes)) and env.action_mask.dtype == np.uint8
    assert env.num_buffers == 1 and env.buffer_rows(0) == (0, n)
    env.reset()
    rng = np.random.default_rng(0)
    sizes = np.array(env.act_sizes)
    for t in range(40):
        a = np.where(sizes == 1, rng.standard_normal((n, k)), rng.integers(0, np.maximum(sizes, 2), (n, k)))
        env.step(a.astype(np.float32)) if t % 2 else env.step_buffer(0, a.astype(np.float32))
        assert np.isfinite(env.rewards).all() and set(np.unique(env.terminals)) <= {0.0, 1.0}
    assert env.log_counts().shape == (env.num_envs,)
    metrics = env.epoch_metrics()
    assert isinstance(metrics, dict) and all(isinstance(v, float) for v in metrics.values())
    # the same action checks, with the same message, on every backend
    discrete = [h for h, s in enumerate(env.act_sizes) if s > 1][0]
    bad = np.zeros((n, k), np.float32)
    bad[n - 1, discrete] = env.act_sizes[discrete]
    with pytest.raises(ValueError, match=rf"action of agent {n - 1}, head {discrete} is .*it must be an integer in "
                                         rf"\[0, {env.act_sizes[discrete] - 1}\]"):
        env.step(bad)
    with pytest.raises(ValueError, match=r"actions must have shape"):
        env.step(np.zeros((n + 1, k), np.float32))
    if env.picture is not None:
        h, w, c = env.picture
        view = env.agent_view(n - 1, scale=2)
        assert view.shape == (2 * h, 2 * w, 3) and view.dtype == np.uint8
        pic = env.observations[n - 1, env.obs_size - h * w * c:].reshape(h, w, c)
        assert np.array_equal(view[::2, ::2, 0], pic[..., 0])
    else:
        with pytest.raises(ValueError, match="declares no picture"):
            env.agent_view(0)


def test_checkpoint_hooks(env, tmp_path):
    """save_extras/restore_extras are lists on every backend; Go-Explore's archive comes through them."""
    path = tmp_path / "0000000000000001.bin"
    saved = env.save_extras(path)
    assert isinstance(saved, list) and isinstance(env.restore_extras(path), list)
    assert bool(saved) == (type(env).__name__ == "GoExploreVecEnv")


def test_goexplore_only_in_modules_that_include_it():
    from envs.build import load_module
    assert load_module(registry.resolve("platformer_sparse").path).goexplore
    bandit = load_module(registry.resolve("bandit").path)
    assert not bandit.goexplore and not hasattr(bandit.lib, "vec_ge_info")
    with envs.make("bandit", 2, num_threads=1) as e:
        assert not hasattr(e, "archive_stats")


def test_every_env_folder_has_a_name_and_a_kind():
    sources = envs.env_sources()
    folders = sorted(p.name for p in (ROOT / "envs" / "ocean").iterdir() if p.is_dir())
    assert [s.name for s in sources] == folders == envs.list_envs()
    kinds = {s.name: s.kind.name for s in sources}
    assert kinds["catcher"] == kinds["flappy"] == kinds["breakout_js"] == "js"
    assert kinds["arena"] == "server" and kinds["platformer"] == "header" and kinds["ddnet"] == "ddnet"
    for s in sources:  # a path resolves to the same thing as the name
        assert envs.resolve(s.path) == s
    with pytest.raises(ValueError, match=r"unknown env 'nope'; built-in envs: aimjump, arena"):
        envs.resolve("nope")
    with pytest.raises(ValueError, match=r"not a \.txt file"):
        envs.resolve(ROOT / "README.md".replace(".md", ".txt"))


def test_a_non_server_ini_is_a_clear_error(tmp_path):
    ini = tmp_path / "mine.ini"
    ini.write_text("[env]\nx = 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"needs ddnet_map = \.\.\. .* command = \.\.\. .* for a C env pass its header"):
        envs.resolve(ini)


@pytest.mark.slow
def test_an_isolated_picture_env_evaluates_and_writes_a_gif(tmp_path, capsys):
    """eval --gif on a header run in a server process: the agent's picture, as in-process."""
    from trainer.eval import main as eval_main
    with envs.make("pixel_platformer_small", 1, num_threads=1) as e:
        spec = PolicySpec.for_env(e, 16, 1)
    path = ckpt.save(tmp_path / "0000000000000001.bin", init_weights(spec, 0), spec, "pixel_platformer_small", 1)
    gifs = []
    for isolate in ("0", "1"):
        gif = tmp_path / f"isolate{isolate}.gif"
        assert eval_main(["--env", "pixel_platformer_small", str(path),
                          "--policy.hidden_size", "16", "--policy.num_layers", "1", "--env.isolate", isolate,
                          "--gif", str(gif)]) == 0, capsys.readouterr().err
        gifs.append(gif.read_bytes())
    assert len(gifs[0]) > 100 and gifs[0] == gifs[1]  # the same episode, frame for frame
