"""mingru.wgsl scan forward/backward and the rollout step against torch goldens at edge shapes
(T = 1/64, H = 8/72/128 against 32·4 and 64 units per workgroup, odd R), both variants."""
import numpy as np
import pytest

from golden_check import assert_close, case, golden
from trainer.policy import MINGRU_VARIANTS, mingru_scan_backward, mingru_scan_forward, mingru_step

CASES = sorted({k.split("/")[0] for k in golden("mingru")})


@pytest.mark.parametrize("variant", MINGRU_VARIANTS)
@pytest.mark.parametrize("name", CASES)
def test_mingru_scan_golden(gpu, name, variant):
    g = case("mingru", name)
    R, T, H = g["x"].shape
    buf = {k: gpu.array(g[k], k) for k in ("c", "x", "h0", "terminals", "dy")}
    out = {k: gpu.buffer(4 * R * T * H * (3 if k == "dc" else 1), k) for k in ("hs", "y", "dc", "dx")}
    plan = gpu.plan(f"mingru {name}")
    mingru_scan_forward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                        out["hs"].range(), out["y"].range(), R, T, H, variant=variant)
    mingru_scan_backward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                         out["hs"].range(), buf["dy"].range(), out["dc"].range(), out["dx"].range(), R, T, H,
                         variant=variant)
    gpu.run(plan)
    label = f"[{variant}] {name} R={R} T={T} H={H}"
    assert_close(f"mingru_scan_forward{label} y", gpu.read(out["y"]), g["y"], "mingru")
    assert_close(f"mingru_scan_forward{label} hs", gpu.read(out["hs"]), g["hs"], "mingru")
    assert_close(f"mingru_scan_backward{label} dc", gpu.read(out["dc"]), g["dc"], "mingru_grad")
    assert_close(f"mingru_scan_backward{label} dx", gpu.read(out["dx"]), g["dx"], "mingru_grad")


@pytest.mark.parametrize("variant", MINGRU_VARIANTS)
@pytest.mark.parametrize("name", CASES)
def test_mingru_step_golden(gpu, name, variant):
    """T rollout steps from h0 (state carried in place, resets from the terminals) give the scan's y and hs."""
    g = case("mingru", name)
    R, T, H = g["x"].shape
    state = gpu.array(g["h0"], "state")
    snapshot = gpu.buffer(4 * R * H, "snapshot")
    c = [gpu.array(np.ascontiguousarray(g["c"][:, t]), f"c{t}") for t in range(T)]
    x = [gpu.array(np.ascontiguousarray(g["x"][:, t]), f"x{t}") for t in range(T)]
    term = [gpu.array(np.ascontiguousarray(g["terminals"][:, t]), f"term{t}") for t in range(T)]
    y = [gpu.buffer(4 * R * H, f"y{t}") for t in range(T)]
    plan = gpu.plan(f"mingru_step {name}")
    for t in range(T):
        mingru_step(plan, c[t].range(), x[t].range(), state.range(), term[t].range(), y[t].range(), R, H,
                    snapshot=snapshot.range() if t == 0 else None, variant=variant)
    gpu.run(plan)
    label = f"mingru_step[{variant}] {name} R={R} T={T} H={H}"
    got = np.stack([gpu.read(b).reshape(R, H) for b in y], 1)
    assert_close(f"{label} y", got, g["y"], "mingru")
    assert_close(f"{label} final state", gpu.read(state).reshape(R, H), g["hs"][:, -1], "mingru")
    want0 = g["h0"] * (1 - g["terminals"][:, :1])  # the state the rollout starts from, after a reset at t = 0
    assert np.array_equal(gpu.read(snapshot).reshape(R, H), want0.astype(np.float32))


def test_mingru_golden_has_resets():
    """The goldens must exercise resets mid-horizon and at t = 0, or the gradient cut is untested."""
    term = case("mingru", "t64_h128_r3")["terminals"]
    assert term[0, 32] == 1 and term[1, 0] == 1
