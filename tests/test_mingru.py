"""mingru.wgsl scan forward/backward and the rollout step against torch goldens at edge shapes
(T = 1/64, H = 8/72/128 against 32·4 and 64 units per workgroup, odd R), both variants."""
import numpy as np
import pytest

from golden.check import assert_close, case, golden
from golden.runs import mingru_scan, mingru_steps
from trainer.kernels.mingru import VARIANTS

MINGRU_VARIANTS = [v.name for v in VARIANTS]

CASES = sorted({k.split("/")[0] for k in golden("mingru")})


@pytest.mark.parametrize("variant", MINGRU_VARIANTS)
@pytest.mark.parametrize("name", CASES)
def test_mingru_scan_golden(gpu, name, variant):
    for label, got, want, tol in mingru_scan(gpu, case("mingru", name), variant):
        assert_close(f"{label} {name}", got, want, tol)


@pytest.mark.parametrize("variant", MINGRU_VARIANTS)
@pytest.mark.parametrize("name", CASES)
def test_mingru_step_golden(gpu, name, variant):
    """T rollout steps from h0 (state carried in place, resets from the terminals) give the scan's y and
    hs; the step-0 snapshot is the reset starting state, bit for bit."""
    checks = mingru_steps(gpu, case("mingru", name), variant)
    for label, got, want, tol in checks:
        assert_close(f"{label} {name}", got, want, tol)
    assert np.array_equal(checks[-1][1], checks[-1][2])


def test_mingru_golden_has_resets():
    """The goldens must exercise resets mid-horizon and at t = 0, or the gradient cut is untested."""
    term = case("mingru", "t64_h128_r3")["terminals"]
    assert term[0, 32] == 1 and term[1, 0] == 1
