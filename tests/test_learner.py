"""The learner vs torch goldens: advantage, PPO loss, Muon alone, and whole minibatch updates; determinism."""
import numpy as np
import pytest

from golden_check import assert_close, case, golden, meta
from trainer.learner import (STATS, Learner, LearnerConfig, Muon, compute_advantage, cosine_lr, ppo_loss,
                             reduce_stats)
from trainer.policy import Policy, PolicySpec, Rollout, ceil4, flatten, unflatten


def _cases(family):
    return sorted({k.split("/")[0] for k in golden(family)})


def _cfg(m):
    return LearnerConfig(**{k: m[k] for k in LearnerConfig.__dataclass_fields__ if k in m})


def _pad(a, ld):
    out = np.zeros((a.shape[0], ld), np.float32)
    out[:, :a.shape[1]] = a
    return out


@pytest.mark.parametrize("name", _cases("advantage"))
def test_advantage_golden(gpu, name):
    g, m = case("advantage", name), meta("advantage", name)
    R, T, heads = m["R"], m["T"], tuple(m["act_sizes"])
    spec = PolicySpec(obs_size=1, hidden=8, layers=1, act_sizes=heads)
    ldo = ceil4(spec.out)
    b = {k: gpu.array(g[k], k) for k in ("actions", "logprobs", "rewards", "terminals")}
    out = gpu.array(_pad(g["out"], ldo), "out")
    sizes = gpu.array(np.array(heads, np.uint32), "act_sizes")
    adv, ret = gpu.buffer(4 * R * T, "adv"), gpu.buffer(4 * R * T, "ret")
    plan = gpu.plan(name)
    compute_advantage(plan, out=out.range(), ldo=ldo, actions=b["actions"].range(), logprobs=b["logprobs"].range(),
                      rewards=b["rewards"].range(), terminals=b["terminals"].range(), act_sizes=sizes.range(),
                      advantages=adv.range(), returns=ret.range(), R=R, T=T, spec=spec, cfg=_cfg(m))
    gpu.run(plan)
    label = f"compute_advantage {name} R={R} T={T} vtrace={m['vtrace']}"
    assert_close(label + " advantages", gpu.read(adv), g["advantages"].reshape(-1), "advantage")
    assert_close(label + " returns", gpu.read(ret), g["returns"].reshape(-1), "advantage")


@pytest.mark.parametrize("name", _cases("ppo"))
def test_ppo_loss_golden(gpu, name):
    g, m = case("ppo", name), meta("ppo", name)
    M, heads = m["M"], tuple(m["act_sizes"])
    spec = PolicySpec(obs_size=1, hidden=8, layers=1, act_sizes=heads)
    ldo = ceil4(spec.out)
    b = {k: gpu.array(g[k], k) for k in ("actions", "logprobs", "values", "advantages", "returns")}
    out = gpu.array(_pad(g["out"], ldo), "out")
    sizes = gpu.array(np.array(heads, np.uint32), "act_sizes")
    dout = gpu.array(np.full((M, ldo), np.nan, np.float32), "dout")  # every element must be written
    stats, logs = gpu.buffer(4 * M * len(STATS), "stats"), gpu.buffer(4 * 2 * len(STATS), "logs")
    plan = gpu.plan(name)
    ppo_loss(plan, out=out.range(), ldo=ldo, actions=b["actions"].range(), logprobs=b["logprobs"].range(),
             values=b["values"].range(), advantages=b["advantages"].range(), returns=b["returns"].range(),
             act_sizes=sizes.range(), dout=dout.range(), stats=stats.range(), M=M, spec=spec, cfg=_cfg(m))
    reduce_stats(plan, stats=stats.range(), logs=logs.range(), slot=1, M=M)
    gpu.run(plan)
    d = gpu.read(dout).reshape(M, ldo)
    assert np.all(d[:, spec.out:] == 0), "padding columns of dout must be zero"
    assert_close(f"ppo_loss {name} M={M} dout", d[:, :spec.out], g["dout"], "ppo")
    got = gpu.read(logs).reshape(2, len(STATS))[1]
    for i, k in enumerate(STATS):
        assert_close(f"reduce_stats {name} {k}", got[i:i + 1], g["stats"][i:i + 1], "ppo_stats")


@pytest.mark.parametrize("name", _cases("muon"))
def test_muon_golden(gpu, name):
    g, m = case("muon", name), meta("muon", name)
    spec = PolicySpec(obs_size=m["D"], hidden=m["H"], layers=m["L"], act_sizes=tuple(m["act_sizes"]))
    flat = lambda prefix: flatten(spec, {t.name: g[f"{prefix}.{t.name}"] for t in spec.tensors})  # noqa: E731
    w0 = flat("w")
    weights, grads = gpu.array(w0, "weights"), gpu.array(flat("grad"), "grads")
    muon = Muon(gpu, spec, _cfg(m))
    muon.reset_momentum(flat("momentum"))
    muon.set_lr(m["lr"])
    scalars = gpu.buffer(16, "scalars")
    plan = gpu.plan(name)
    muon.add(plan, weights.range(), grads.range(), scalars.range())
    gpu.run(plan)
    new = unflatten(spec, gpu.read(weights))
    sc = gpu.read(scalars)
    assert_close(f"grad_norm {name}", sc[1:2], g["grad_norm"], "muon")
    assert_close(f"grad_norm clip {name}", sc[0:1], g["clip"], "muon")
    w0t = unflatten(spec, w0)
    for t in spec.tensors:
        want = g[f"new_w.{t.name}"]
        assert_close(f"muon {name} {t.name} new weights", new[t.name], want, "muon")
        assert_close(f"muon {name} {t.name} update", new[t.name] - w0t[t.name], want - w0t[t.name], "muon_step")
    if f"new_momentum.{spec.tensors[0].name}" in g:
        mom = unflatten(spec, muon.read_momentum())
        for t in spec.tensors:
            assert_close(f"muon {name} {t.name} momentum", mom[t.name], g[f"new_momentum.{t.name}"], "muon")


def _learner_from_golden(gpu, name):
    g, m = case("learner", name), meta("learner", name)
    spec = PolicySpec(obs_size=m["D"], hidden=m["H"], layers=m["L"], act_sizes=tuple(m["act_sizes"]))
    N, T, R = m["N"], m["T"], m["R"]
    policy = Policy(gpu, spec, flatten(spec, {t.name: g[f"w0.{t.name}"] for t in spec.tensors}))
    ro = Rollout(gpu, spec, N, T)
    gpu.upload(ro.obs, _pad(g["obs"].reshape(N * T, -1), ro.ldo))
    gpu.upload(ro.initial_state, g["h0"])
    for k in ("terminals", "actions", "logprobs", "values", "rewards"):
        gpu.upload(getattr(ro, k), g[k])
    learner = Learner(policy, ro, minibatch_size=R * T, cfg=_cfg(m))
    return g, m, spec, policy, learner


@pytest.mark.parametrize("name", _cases("learner"))
def test_learner_updates_golden(gpu, name):
    """Consecutive minibatch updates (each sees the last one's weights) against the torch reference."""
    g, m, spec, policy, learner = _learner_from_golden(gpu, name)
    assert learner.num_minibatches == m["minibatches"]
    prev = unflatten(spec, policy.read_weights())
    for mb in range(m["minibatches"]):
        res = learner.run(m["lr"], minibatches=[mb])
        w = unflatten(spec, policy.read_weights())
        mom = unflatten(spec, learner.muon.read_momentum())
        label = f"learner {name} after update {mb + 1}"
        for t in spec.tensors:
            want = g[f"w{mb + 1}.{t.name}"]
            assert_close(f"{label} {t.name}", w[t.name], want, "learner")
            assert_close(f"{label} {t.name} change", w[t.name] - prev[t.name], want - prev[t.name], "learner_step")
            assert_close(f"{label} {t.name} momentum", mom[t.name], g[f"momentum{mb + 1}.{t.name}"], "learner_step")
        for i, k in enumerate(STATS + ("grad_norm",)):
            assert_close(f"{label} stat {k}", res["per_minibatch"][0, i:i + 1], g["stats"][mb, i:i + 1],
                         "learner_stats")
        prev = w


def test_learner_update_is_bit_identical_run_to_run(gpu):
    finals = []
    for _ in range(2):
        _, m, spec, policy, learner = _learner_from_golden(gpu, "small_3mb")
        res = learner.run(m["lr"])
        finals.append((policy.read_weights().tobytes(), learner.muon.read_momentum().tobytes(),
                       res["per_minibatch"].tobytes()))
    assert finals[0] == finals[1]


def test_cosine_lr_per_epoch():
    assert cosine_lr(0.015, 0, 100) == 0.015
    assert abs(cosine_lr(0.015, 50, 100) - 0.0075) < 1e-12
    assert cosine_lr(0.015, 100, 100) == 0.0
    assert cosine_lr(0.015, 150, 100) == 0.0


def test_minibatch_rules():
    from trainer.learner import check_minibatching
    with pytest.raises(ValueError, match="multiple of train.horizon"):
        check_minibatching(16, 8, 20)
    with pytest.raises(ValueError, match="more than horizon × agents"):
        check_minibatching(4, 8, 64)
    with pytest.raises(ValueError, match="multiple of minibatch_size / horizon"):
        check_minibatching(6, 8, 32)
