"""The action-space envs (cardplay: masks, reach: continuous, aimjump: hybrid): their rules, what a
policy that ignores the mask / a frozen aim gets, and short end-to-end runs through train, eval
(deterministic) and the GIF path."""
import numpy as np
import pytest

import envs
from trainer import checkpoint as ckpt
from trainer import config
from trainer.spec import PolicySpec, unflatten
from trainer.run import train

SMOKE = {"vec.total_agents": "32", "train.horizon": "8", "train.minibatch_size": "128", "policy.hidden_size": "16",
         "policy.num_layers": "1", "train.total_timesteps": str(32 * 8 * 3), "base.checkpoint_interval": "100"}


def _run(env, n, steps, act):
    env.reset()
    env.log()
    for _ in range(steps):
        act()
        env.step()
    return env.log()


def test_cardplay_mask_rules():
    env = envs.make("cardplay", 64, seed=3)
    env.reset()
    held = env.action_mask.astype(bool)
    assert held.any(1).all() and not held.all(1).any(), "a hand holds 1..7 of the 8 cards"
    target = env.observations[:, :8].argmax(1)
    # play an unheld card: the episode ends at once with the penalty
    unheld = np.argmin(held, 1)
    env.step(unheld[:, None].astype(np.float32))
    assert np.all(env.terminals == 1) and np.all(env.rewards == np.float32(-env.config["illegal_penalty"]))
    log = env.log()
    assert log["illegal"] == 1.0 and log["perf"] == 0.0 and log["episode_length"] == 1.0
    # play the held card closest to the target: 1/rounds, and a new hand is dealt
    held = env.action_mask.astype(bool)
    target = env.observations[:, :8].argmax(1)
    dist = np.where(held, np.abs(np.arange(8)[None] - target[:, None]), 99)
    env.step(dist.argmin(1)[:, None].astype(np.float32))
    assert np.all(env.terminals == 0) and np.all(env.rewards == np.float32(1.0 / env.config["rounds"]))
    # the mask is the only place the hand appears: the observation is the target and the round
    assert env.obs_size == 9 and np.all(env.observations[:, :8].sum(1) == 1)


def test_cardplay_needs_the_mask():
    """Ignoring the mask ends most episodes at an illegal play; random legal play scores ~1/3."""
    env = envs.make("cardplay", 256, seed=1)
    ignore = _run(env, 256, 64, env.scripted_actions)  # plays the target card, held or not
    assert ignore["illegal"] > 0.95 and ignore["perf"] < 0.2
    rng = np.random.default_rng(0)

    def legal():
        m = env.action_mask.astype(float)
        env.actions[:, 0] = [rng.choice(8, p=r / r.sum()) for r in m]
    rand = _run(env, 256, 64, legal)
    assert rand["illegal"] == 0 and 0.25 < rand["perf"] < 0.45


def test_reach_rules():
    env = envs.make("reach", 256, seed=2)
    scripted = _run(env, 256, 200, env.scripted_actions)
    assert scripted["perf"] > 0.99
    rng = np.random.default_rng(1)
    rand = _run(env, 256, 200, lambda: env.actions.__setitem__(slice(None), rng.standard_normal((256, 2))))
    assert rand["perf"] < 0.05, "a Gaussian with mean 0 and σ = 1 reaches the target by chance only"
    env.check_actions = False  # the C side must survive what the Python check would refuse
    env.reset()
    obs = env.observations.copy()
    env.step(np.full((256, 2), np.nan, np.float32))  # untrusted floats: NaN is no move, not a crash
    assert np.array_equal(env.observations[:, :2], obs[:, :2]) and np.all(np.isfinite(env.observations))


def test_aimjump_rules():
    env = envs.make("aimjump", 256, seed=4)
    assert env.act_sizes == (3, 1, 2)
    scripted = _run(env, 256, 120, env.scripted_actions)
    assert scripted["perf"] > 0.95
    rng = np.random.default_rng(2)

    def frozen_aim():  # perfect moves and jump timing, the aim at its initial N(0, 1)
        env.scripted_actions()
        env.actions[:, 1] = rng.standard_normal(256)
    frozen = _run(env, 256, 120, frozen_aim)
    assert frozen["perf"] < 0.35


@pytest.mark.slow
@pytest.mark.parametrize("name,space", [("cardplay", "discrete"), ("reach", "continuous"), ("aimjump", "hybrid")])
def test_train_eval_gif_paths(tmp_path, name, space):
    """A few epochs of training, then eval --headless --deterministic and --gif on the checkpoint."""
    from trainer.eval import main as eval_main
    cfg, _ = config.load(name, dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"),
                                                "base.log_dir": str(tmp_path / "logs")}))
    res = train(name, cfg, live=False, run_id="smoke")
    side = ckpt.read_sidecar(res["checkpoint"])
    assert side["action_space"] == space and side.get("puffgpu_only", False) == (space == "hybrid")
    flags = ["--env", name, "--base.checkpoint_dir", str(tmp_path / "ck"), "--policy.hidden_size", "16",
             "--policy.num_layers", "1"]
    assert eval_main(flags + ["--headless", "--episodes", "16", "--agents", "16", "--deterministic"]) == 0
    gif = tmp_path / f"{name}.gif"
    assert eval_main(flags + ["--gif", str(gif)]) == 0
    assert gif.stat().st_size > 100


@pytest.mark.slow
def test_freeze_continuous_leaves_the_aim_untrained(tmp_path):
    """freeze_continuous: logstd and the decoder's mean column do not move; the rest trains."""
    cfg, _ = config.load("aimjump", dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"),
                                                     "base.log_dir": str(tmp_path / "logs"),
                                                     "train.freeze_continuous": "1"}))
    res = train("aimjump", cfg, live=False, run_id="frozen")
    env = envs.make("aimjump", 1)
    spec = PolicySpec(env.obs_size, 16, 1, env.act_sizes)
    from trainer.spec import init_weights
    w0 = unflatten(spec, init_weights(spec, cfg["base"]["seed"]))
    w1 = unflatten(spec, ckpt.load(res["checkpoint"], spec)[0])
    assert np.array_equal(w1["logstd"], w0["logstd"]) and np.all(w1["logstd"] == 0)
    assert np.array_equal(w1["decoder"][3], w0["decoder"][3]), "the aim's mean column (after move's 3 logits)"
    assert not np.array_equal(w1["decoder"][:3], w0["decoder"][:3]) and not np.array_equal(w1["encoder"], w0["encoder"])


HEADER = """#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"
#define OBS_SIZE 2
#define NUM_ATNS 2
#define ACT_SIZES {SIZES}
struct Log { float perf; float score; float n; };
struct Env { Log log; Agent agents[1]; int num_agents; unsigned int rng; int tag; int boundary_reached; };
void puf_init(Env* env, Dict* kwargs) { (void)kwargs; env->num_agents = 1; }
void puf_reset(Env* env) { (void)env; }
void puf_step(Env* env) { env->agents[0].rewards[0] = 0.0f; env->agents[0].terminals[0] = 0.0f; }
void puf_render(Env* env) { (void)env; }
void puf_close(Env* env) { (void)env; }
void puf_log(Log* log, Dict* out) { dict_set(out, "perf", log->perf); dict_set(out, "score", log->score); }
"""


def test_bad_act_sizes_are_refused(tmp_path):
    """ACT_SIZES with fewer/more entries than NUM_ATNS fails the build; a head of size 0 is refused."""
    from envs.errors import EnvBuildError
    for sizes, err, match in (("{3}", EnvBuildError, "ACT_SIZES must list exactly NUM_ATNS head sizes"),
                              ("{3, 1, 2}", EnvBuildError, "ACT_SIZES must list exactly NUM_ATNS head sizes"),
                              ("{3, 0}", ValueError, r"ACT_SIZES \[3, 0\] \(NUM_ATNS 2\): every head needs size >= 1")):
        d = tmp_path / f"bad{len(list(tmp_path.iterdir()))}"
        d.mkdir()
        (d / "bad.h").write_text(HEADER.replace("{SIZES}", sizes))
        with pytest.raises(err, match=match):
            envs.make(str(d / "bad.h"), 1)


def test_continuous_action_check_names_the_head():
    env = envs.make("aimjump", 2)
    env.reset()
    with pytest.raises(ValueError, match=r"head 1 is .*nan.*must be a finite float \(a continuous head\)"):
        env.step(np.array([[0, np.nan, 0], [0, 0, 0]], np.float32))
    with pytest.raises(ValueError, match=r"head 2 is .*0.5.*must be an integer in \[0, 1\]"):
        env.step(np.array([[0, 0.3, 0.5], [0, 0, 0]], np.float32))


@pytest.mark.slow
@pytest.mark.parametrize("buffers", [1, 2])
def test_masked_training_never_plays_an_illegal_card(tmp_path, buffers):
    """The sampler reads each env buffer's own rows of the mask: with 1 or 2 env buffers, training
    from random weights never plays an unheld card (cardplay logs every illegal play)."""
    import json
    cfg, _ = config.load("cardplay", dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / "ck"),
                                                      "base.log_dir": str(tmp_path / "logs"),
                                                      "vec.num_buffers": str(buffers)}))
    res = train("cardplay", cfg, live=False, run_id="masked")
    epochs = [json.loads(line) for line in open(res["log"]) if '"epoch"' in line]
    epochs = [e for e in epochs if e.get("type") == "epoch" and "env/illegal" in e]
    assert epochs and all(e["env/illegal"] == 0.0 for e in epochs), [e["env/illegal"] for e in epochs]


def test_random_policy_is_uniform_over_legal_choices():
    """trainer.eval --random: each discrete head uniform over its legal choices, continuous N(0, 1)."""
    from trainer.eval import RandomActions

    class Env:
        act_sizes = (4, 1, 3)
    mask = np.ones((30_000, 8), np.uint8)
    mask[:, 0] = 0                      # head 0: choices 1, 2, 3 legal
    mask[:10_000, 1:4] = [0, 1, 0]      # ... and only choice 2 in the first third
    mask[:, 5:8] = [1, 0, 1]            # head 2: 0 or 2
    a = RandomActions(Env(), seed=0)(0, 0, None, None, None, mask)
    assert np.all(a[:10_000, 0] == 2)
    counts = np.bincount(a[10_000:, 0].astype(int), minlength=4)
    assert counts[0] == 0 and np.all(np.abs(counts[1:] / 20_000 - 1 / 3) < 0.015), counts
    assert set(np.unique(a[:, 2])) == {0, 2} and abs(np.mean(a[:, 2] == 0) - 0.5) < 0.015
    assert abs(a[:, 1].mean()) < 0.03 and abs(a[:, 1].std() - 1) < 0.03


def test_eval_random_matches_the_envs_stated_baseline(capsys):
    """cardplay's header: uniform play over the legal cards scores perf ~0.32."""
    from trainer.eval import main as eval_main
    assert eval_main(["--env", "cardplay", "--headless", "--random", "--episodes", "4096"]) == 0
    perf = float(capsys.readouterr().out.strip().splitlines()[-1].split()[-1])
    assert abs(perf - 0.32) < 0.03, perf
