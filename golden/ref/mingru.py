"""mingru.wgsl: the MinGRU scan (forward and backward) over T steps with resets.
"""
from __future__ import annotations

import torch

from golden.ref.common import f32, family, rand, write


def mingru_scan_ref(c, x, h0, terminals):
    """PufferLib 5.0's MinGRU (docs/design.md, "Numerics") over a horizon.
    c [R,T,3H], x [R,T,H], h0 [R,H], terminals [R,T] → (y, hs).

    The reset multiplies the carried state by (1 − terminal), so no gradient reaches the pre-reset state.
    """
    H = x.shape[-1]
    hh, g, pp = c[..., :H], c[..., H:2 * H], c[..., 2 * H:]
    z = torch.sigmoid(g)
    ht = torch.where(hh >= 0, hh + 0.5, torch.sigmoid(hh))
    s = torch.sigmoid(pp)
    h, ys, hs = h0, [], []
    for t in range(x.shape[1]):
        h = h * (1 - terminals[:, t:t + 1])
        h = (1 - z[:, t]) * h + z[:, t] * ht[:, t]
        hs.append(h)
        ys.append(s[:, t] * h + (1 - s[:, t]) * x[:, t])
    return torch.stack(ys, 1), torch.stack(hs, 1)


def rand_terminals(gen, R, T, p=0.15):
    d = (torch.rand(R, T, generator=gen) < p).to(torch.float64)
    if R > 1 and T > 2:
        d[0, T // 2] = 1.0  # always a reset mid-horizon
        d[1 % R, 0] = 1.0   # and one at t = 0 (overrides h0)
    return d

# (R agent rows, T horizon, H hidden). The scan runs one invocation per (row, unit) in workgroups of
# 64 units: H = 8 leaves most of a workgroup idle, H = 72 spills into a second one.
MINGRU_CASES = {
    "t1_h8_r1": (1, 1, 8),
    "t64_h8_r67": (67, 64, 8),
    "t64_h128_r3": (3, 64, 128),
    "t17_h72_r5": (5, 17, 72),
    "t2_h128_r2": (2, 2, 128),
}


@family
def mingru(gen):
    """MinGRU scan alone: y, hs forward; dc, dx (highway part) from (y*dy).sum().backward()."""
    tensors, cases = {}, {}
    for name, (R, T, H) in MINGRU_CASES.items():
        c = rand(gen, R, T, 3 * H, scale=3.0).requires_grad_()  # both branches of h̃
        x = rand(gen, R, T, H).requires_grad_()
        h0 = rand(gen, R, H)
        term = rand_terminals(gen, R, T)
        dy = rand(gen, R, T, H)
        y, hs = mingru_scan_ref(c, x, h0, term)
        (y * dy).sum().backward()
        for key, t in (("c", c), ("x", x), ("h0", h0), ("terminals", term), ("dy", dy), ("y", y), ("hs", hs),
                       ("dc", c.grad), ("dx", x.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        cases[name] = {"R": R, "T": T, "H": H}
    write("mingru", tensors, "MinGRU scan (docs/design.md, Numerics) with terminal resets from h0; "
          "dc, dx from (y*dy).sum().backward()", cases)
