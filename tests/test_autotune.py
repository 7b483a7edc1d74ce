"""The kernel tuner (trainer/autotune.py): timing and its disk cache (atomic; corrupt or stale files ignored
with a warning), pins, re-tune, no-tune, scratch-only timing, the dispatch-shape report of the default
config under the GPU rule (tools/dispatch_report.py), and bit-identical training for a fixed kernel choice."""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from golden.check import assert_close
from trainer import autotune as tune
from trainer.kernels import GPU_MIN_INVOCATIONS, matmul, mingru
from trainer.gpu import GPUError


@pytest.fixture
def fresh(gpu, tmp_path, monkeypatch):
    """A tuner of its own (empty cache folder, no pins) installed as gpu.chooser for one test."""
    monkeypatch.setenv("PUFFGPU_CACHE", str(tmp_path))
    for k in ("PUFFGPU_KERNELS", "PUFFGPU_RETUNE", "PUFFGPU_TUNE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(gpu, "chooser", tune.Tuner(gpu))

    def renew():
        return tune.attach(gpu)
    return renew


def _forward(gpu, M=40, N=24, K=36, y_fill=None):
    """y = x·wᵀ with the tuner's choice; returns (got, want, key)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    xb, wb = gpu.array(x, "x"), gpu.array(w, "w")
    yb = gpu.array(np.full(M * N, np.nan if y_fill is None else y_fill, np.float32), "y")
    plan = gpu.plan("tuned forward")
    matmul.matmul_forward(plan, xb.range(), wb.range(), yb.range(), M, N, K)
    before = gpu.read(yb)
    gpu.run(plan)
    key = matmul.MatmulShape("matmul_forward", M, N, K, 1, True, True).key()
    return gpu.read(yb), x.astype(np.float64) @ w.T.astype(np.float64), key, before


def test_tuner_times_caches_and_reuses(gpu, fresh):
    got, want, key, _ = _forward(gpu)
    t = gpu.chooser
    assert t.sources[key] == "timed"
    entry = t.memo[key]
    shape = matmul.MatmulShape("matmul_forward", 40, 24, 36, 1, True, True)
    assert entry["choice"] in [str(c) for c in matmul.candidates(shape, gpu)]
    assert len(entry["seconds"]) >= 4 and entry["seconds"][entry["choice"]] == min(
        v for c, v in entry["seconds"].items() if c not in entry["pruned"] + entry["estimated"])
    assert_close(f"matmul_forward[{entry['choice']}] {key}", got, want, "matmul")
    data = json.loads(t.path.read_text())
    assert data["schema"] == tune.SCHEMA and data["kernels"] == t.version and key in data["entries"]
    assert data["adapter"]["name"] == gpu.name and t.path.parent.name == "tune"
    assert not list(t.path.parent.glob(".*.tmp")), "the atomic write leaves no temp file"
    line = t.summary()
    assert "\n" not in line and "tuning took" in line and entry["choice"] in line
    # a new process (a new tuner) takes the choice from the cache without timing
    t2 = fresh()
    got2, _, _, _ = _forward(gpu)
    assert t2.sources[key] == "cache" and t2.tune_seconds == 0.0 and t2.memo[key]["choice"] == entry["choice"]
    assert np.array_equal(got, got2)


def test_tuning_never_touches_the_operands(gpu, fresh):
    """Candidates run on scratch buffers: building the plan (which tunes) leaves y as it was."""
    _, _, key, before = _forward(gpu, y_fill=123.0)
    assert gpu.chooser.sources[key] == "timed" and np.all(before == 123.0)


@pytest.mark.parametrize("content", ["{not json", json.dumps({"schema": 1, "kernels": "an older kernel set",
                                                                "entries": {}}),
                                     json.dumps({"schema": 999, "entries": {}}), json.dumps([1, 2])])
def test_corrupt_or_stale_cache_is_ignored_with_a_warning(gpu, fresh, capsys, content):
    t = gpu.chooser
    t.path.parent.mkdir(parents=True, exist_ok=True)
    t.path.write_text(content)
    _, _, key, _ = _forward(gpu)
    assert t.sources[key] == "timed"
    assert "ignoring kernel tuning cache" in capsys.readouterr().err and t.warnings
    assert key in json.loads(t.path.read_text())["entries"]  # replaced by a good file


def test_retune_and_no_tune(gpu, fresh, monkeypatch):
    _, _, key, _ = _forward(gpu)
    monkeypatch.setenv("PUFFGPU_RETUNE", "1")
    t = fresh()
    _forward(gpu)
    assert t.sources[key] == "timed"
    monkeypatch.delenv("PUFFGPU_RETUNE")
    monkeypatch.setenv("PUFFGPU_TUNE", "0")
    t = fresh()
    t.path = t.path.with_name("nothing-cached.json")
    _forward(gpu)
    shape = matmul.MatmulShape("matmul_forward", 40, 24, 36, 1, True, True)
    assert t.sources[key] == "default" and t.memo[key]["choice"] == str(matmul.default(shape, gpu))


def test_pins(gpu, fresh, monkeypatch):
    monkeypatch.setenv("PUFFGPU_KERNELS", "matmul=tile4x4/s3,mingru=scalar")
    t = fresh()
    got, want, key, _ = _forward(gpu)
    assert t.sources[key] == "pinned" and t.memo[key]["choice"] == "tile4x4_vec4/s3"  # vec4 where it applies
    assert_close(f"matmul_forward[tile4x4_vec4/s3] {key}", got, want, "matmul")
    odd = matmul.MatmulShape("matmul_forward", 5, 3, 413, 1, False, False)
    assert str(matmul.FAMILY.pin("tile4x4_vec4", odd, gpu)) == "tile4x4"  # the scalar sibling where vec4 does not apply
    assert str(t.choose(mingru.FAMILY, mingru.MingruShape("mingru_scan_forward", 2, 3, 8), None)) == "scalar"
    for bad, msg in (("matmul=nope", "variant must be one of"), ("foo=bar", "FAMILY=VARIANT"),
                     ("mingru=vec8", "must be one of"), ("matmul=tile4x4/s0", "positive")):
        with pytest.raises(GPUError, match=msg):
            tune.parse_pins(bad)
    monkeypatch.setattr(gpu, "features", gpu.features - {"subgroup"})
    with pytest.raises(GPUError, match=r"pins matmul=sg8, but .*'subgroup' feature"):
        matmul.FAMILY.pin("sg8", odd, gpu)


def test_gpu_rule_chooser(gpu, fresh, monkeypatch):
    """Inside `using(gpu, GpuRule())` every choice is the static GPU rule, whatever the pins; the tuner
    is back after."""
    monkeypatch.setenv("PUFFGPU_KERNELS", "matmul=ref")
    t = fresh()
    shape = matmul.MatmulShape("matmul_backward_weight", 384, 128, 8192, 1, True, True)
    with tune.using(gpu, tune.GpuRule()) as rule:
        assert gpu.chooser is rule
        assert rule.choose(matmul.FAMILY, shape, None) == matmul.gpu_rule(shape)
        assert str(matmul.gpu_rule(shape)).startswith("tile4x4_vec4/s")
        assert str(rule.choose(mingru.FAMILY, mingru.MingruShape("mingru_scan_forward", 128, 64, 128), None)) == "scalar"
    assert gpu.chooser is t


def test_dispatch_shapes_of_the_default_config_on_a_gpu(gpu, fresh):
    """The GPU rule's rollout-step and minibatch plans at the default platformer config: no heavy
    dispatch under 16K invocations or over 1K serial iterations; every dispatch's shape is known."""
    report = _dispatch_report()
    rows = []
    for label, plan in report.default_plans(gpu, gpu_rule=True):
        rows += report.dispatch_rows(label, plan)
    heavy = [r for r in rows if r["heavy"]]
    assert len(heavy) >= 40  # the matmuls of encoder, 4 layers, Newton–Schulz, and the scans
    assert [r for r in heavy if r["flags"]] == []
    assert all(r["serial"] is not None and r["work"] is not None for r in rows)
    assert any("splitk_reduce" in r["kernel"] for r in rows)  # dW over 8192 rows is split
    assert any("mingru_scan_forward_scalar" in r["kernel"] for r in heavy)
    # what lavapipe's own kernels would look like on a GPU: flagged (8-lane workgroups, long dW loops)
    lavapipe = matmul.MatmulShape("matmul_backward_weight", 384, 128, 8192, 1, True, True)
    assert matmul.BY_NAME["sg8_vec4"].geometry.invocations(lavapipe, 1) < GPU_MIN_INVOCATIONS


def _dispatch_report():
    """tools/dispatch_report.py as a module (tools/ is not a package)."""
    path = Path(__file__).resolve().parent.parent / "tools" / "dispatch_report.py"
    spec = importlib.util.spec_from_file_location("dispatch_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMOKE = {"vec.total_agents": "16", "train.horizon": "8", "train.minibatch_size": "64", "policy.hidden_size": "16",
         "policy.num_layers": "2", "train.total_timesteps": str(16 * 8 * 3), "base.checkpoint_interval": "100"}


@pytest.mark.slow
@pytest.mark.parametrize("pin", ["matmul=tile4x4/s2,mingru=scalar", "matmul=wgmem/s3,mingru=vec4"])
def test_training_is_bit_identical_for_a_fixed_choice(gpu, fresh, tmp_path, monkeypatch, pin):
    from trainer import config
    from trainer.checkpoint import load
    from trainer.spec import PolicySpec
    from trainer.run import train
    monkeypatch.setenv("PUFFGPU_KERNELS", pin)
    weights, losses = [], []
    for run in ("a", "b"):
        flags = dict(SMOKE, **{"base.checkpoint_dir": str(tmp_path / run), "base.log_dir": str(tmp_path / run)})
        cfg, _ = config.load("memory", flags)
        res = train("memory", cfg, live=False, run_id="same")
        assert set(gpu.chooser.sources.values()) == {"pinned"}  # the tuner train() attached
        spec = PolicySpec(obs_size=4, hidden=16, layers=2, act_sizes=(2,))
        weights.append(load(res["checkpoint"], spec, env="memory")[0].tobytes())
        losses.append([json.loads(l).get("loss") for l in open(res["log"])])
    assert weights[0] == weights[1] and losses[0] == losses[1]


def test_variant_tables_match_the_shaders(gpu):
    """Every variant of every family with variants names an entry point its shader file has, for every
    form, with the workgroup the file declares under the variant's override constants."""
    forms = {"matmul": matmul.FORMS, "mingru": mingru.FORMS}
    for family in tune.FAMILIES.values():
        assert len({v.name for v in family.variants}) == len(family.variants)
        for v in family.variants:
            sf = gpu.shader_file(v.file)
            for form in forms[family.name]:
                entry = v.entry_for(form)
                assert entry in sf.workgroup, f"{v.name}: {v.file} has no entry point {entry}"
                assert sf.workgroup_size(entry, dict(v.constants)) == v.invocations_per_workgroup, (v.name, entry)
