"""mingru.wgsl scan forward/backward against torch goldens at edge shapes (T = 1/64, H = 8/72/128, odd R)."""
import numpy as np
import pytest

from golden_check import assert_close, case, golden
from trainer.policy import mingru_scan_backward, mingru_scan_forward

CASES = sorted({k.split("/")[0] for k in golden("mingru")})


@pytest.mark.parametrize("name", CASES)
def test_mingru_scan_golden(gpu, name):
    g = case("mingru", name)
    R, T, H = g["x"].shape
    buf = {k: gpu.array(g[k], k) for k in ("c", "x", "h0", "terminals", "dy")}
    out = {k: gpu.buffer(4 * R * T * H * (3 if k == "dc" else 1), k) for k in ("hs", "y", "dc", "dx")}
    plan = gpu.plan(f"mingru {name}")
    mingru_scan_forward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                        out["hs"].range(), out["y"].range(), R, T, H)
    mingru_scan_backward(plan, buf["c"].range(), buf["x"].range(), buf["h0"].range(), buf["terminals"].range(),
                         out["hs"].range(), buf["dy"].range(), out["dc"].range(), out["dx"].range(), R, T, H)
    gpu.run(plan)
    label = f"{name} R={R} T={T} H={H}"
    assert_close(f"mingru_scan_forward y {label}", gpu.read(out["y"]), g["y"], "mingru")
    assert_close(f"mingru_scan_forward hs {label}", gpu.read(out["hs"]), g["hs"], "mingru")
    assert_close(f"mingru_scan_backward dc {label}", gpu.read(out["dc"]), g["dc"], "mingru_grad")
    assert_close(f"mingru_scan_backward dx {label}", gpu.read(out["dx"]), g["dx"], "mingru_grad")


def test_mingru_golden_has_resets():
    """The goldens must exercise resets mid-horizon and at t = 0, or the gradient cut is untested."""
    term = case("mingru", "t64_h128_r3")["terminals"]
    assert term[0, 32] == 1 and term[1, 0] == 1
