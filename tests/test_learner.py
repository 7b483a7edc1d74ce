"""The learner vs torch goldens: advantage, PPO loss, Muon alone, and whole minibatch updates; determinism."""
from dataclasses import replace

import pytest

import golden.runs as gr
from golden.check import assert_close, meta
from trainer.config import cosine_lr
from trainer.learner import LearnerConfig


def slow_if_platformer(cases):
    """The cases at the platformer policy's real widths take seconds on lavapipe: marked slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if n.startswith("platformer") else n for n in cases]


@pytest.mark.parametrize("name", gr.cases("advantage"))
def test_advantage_golden(gpu, name):
    for check in gr.advantage_case(gpu, name):
        assert_close(*check)


@pytest.mark.parametrize("name", gr.cases("ppo"))
def test_ppo_loss_golden(gpu, name):
    for check in gr.ppo_case(gpu, name):
        assert_close(*check)


@pytest.mark.parametrize("name", slow_if_platformer(gr.cases("muon")))
def test_muon_golden(gpu, name):
    for check in gr.muon_case(gpu, name):
        assert_close(*check)


@pytest.mark.parametrize("name", slow_if_platformer(gr.cases("learner")))
def test_learner_updates_golden(gpu, name):
    """Consecutive minibatch updates (each sees the last one's weights) against the torch reference."""
    for check in gr.learner_case(gpu, name):
        assert_close(*check)


def test_learner_update_is_bit_identical_run_to_run(gpu):
    finals = []
    for _ in range(2):
        _, m, spec, policy, learner = gr.learner_setup(gpu, "small_3mb")
        res = learner.run(m["lr"])
        finals.append((policy.read_weights().tobytes(), learner.muon.read_momentum().tobytes(),
                       res["per_minibatch"].tobytes()))
    assert finals[0] == finals[1]


def test_bounded_submissions_give_the_same_bits(gpu):
    """An epoch split into one submission per minibatch (a work budget below one minibatch) updates
    exactly as one submission does; the grouping is greedy, in order, under the budget."""
    from trainer.learner import submission_groups
    finals = []
    for budget in (0, 1):
        _, m, spec, policy, learner = gr.learner_setup(gpu, "small_3mb")
        learner.submit_work = budget
        assert learner.num_minibatches > 1 and min(learner.plan_work) > 1
        res = learner.run(m["lr"])
        finals.append((policy.read_weights().tobytes(), learner.muon.read_momentum().tobytes(),
                       res["per_minibatch"].tobytes()))
    assert finals[0] == finals[1]
    assert submission_groups([3, 3, 3, 10, 1, 1], 6) == [[0, 1], [2], [3], [4, 5]]
    assert submission_groups([3, 3], 0) == [[0, 1]]


def test_cosine_lr_per_epoch():
    assert cosine_lr(0.015, 0, 100) == 0.015
    assert_close("cosine_lr half way", cosine_lr(0.015, 50, 100), 0.0075, "float64")
    assert cosine_lr(0.015, 100, 100) == 0.0
    assert cosine_lr(0.015, 150, 100) == 0.0


def test_lr_warmup_scales_the_schedule():
    t = LearnerConfig(learning_rate=0.01, anneal_lr=True, min_lr_ratio=0.0, lr_warmup=0.1)
    # 10 warm-up epochs of 100: epoch e gets (e + 1) / 10 of the cosine's rate
    assert_close("warm-up epoch 0", t.learning_rate_at(0, 100), 0.001, "float64")
    assert_close("warm-up epoch 4", t.learning_rate_at(4, 100), 0.5 * cosine_lr(0.01, 4, 100), "float64")
    assert t.learning_rate_at(9, 100) == cosine_lr(0.01, 9, 100) and t.learning_rate_at(50, 100) == cosine_lr(0.01, 50, 100)
    flat = replace(t, anneal_lr=False)
    assert_close("constant after warm-up", flat.learning_rate_at(3, 100), 0.004, "float64")
    assert replace(t, lr_warmup=0.0).learning_rate_at(0, 100) == 0.01  # none: the schedule alone
    # the [train] section's keys reach it as they are in the ini
    assert LearnerConfig.from_dict({"learning_rate": 0.01, "anneal_lr": 1, "lr_warmup": 0.1}) == t


def test_minibatch_rules():
    with pytest.raises(ValueError, match="multiple of train.horizon"):
        LearnerConfig(minibatch_size=20).check_minibatching(16, 8)
    with pytest.raises(ValueError, match="more than horizon × agents"):
        LearnerConfig(minibatch_size=64).check_minibatching(4, 8)
    with pytest.raises(ValueError, match="multiple of minibatch_size / horizon"):
        LearnerConfig(minibatch_size=32).check_minibatching(6, 8)
    assert LearnerConfig(minibatch_size=32, replay_ratio=2.0).num_minibatches(8, 8) == 4


# the learner parameters a golden family varies on purpose (each of its cases records all of them)
GOLDEN_KNOBS = {"advantage": {"vtrace", "vtrace_c_clip"}, "advantage_heads": {"vtrace", "vtrace_c_clip"},
                "learner": {"vtrace"}, "learner_heads": {"vtrace", "max_grad_norm"}, "ppo_heads": {"ent_coef"},
                "learner_picture": set(), "muon": set(), "ppo": set()}


def test_learner_defaults_live_in_the_ini_and_the_goldens_use_them():
    """trainer/default.ini's [train] is the one home of the learner's defaults: LearnerConfig() holds its
    values, and every golden case was made with them except the knobs its family varies on purpose."""
    from dataclasses import fields

    from trainer import config
    train, cfg = config.defaults()["train"], LearnerConfig()
    names = [f.name for f in fields(LearnerConfig)]
    for name in names:
        assert getattr(cfg, name) == type(getattr(cfg, name))(train[name]), name
    for fam, knobs in GOLDEN_KNOBS.items():
        for case in gr.cases(fam):
            m = meta(fam, case)
            recorded = {k for k in names if k in m}
            # a golden case gives its rate and its shape itself: it records the update's fields
            update = set(names) - {"freeze_continuous", *LearnerConfig.SCHEDULE, *LearnerConfig.MINIBATCHES}
            assert recorded >= update, (fam, case)
            off = {k for k in recorded if type(getattr(cfg, k))(m[k]) != getattr(cfg, k)}
            assert off <= knobs, (fam, case, off)
