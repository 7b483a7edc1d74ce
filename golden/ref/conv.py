"""conv.wgsl: the picture encoder's three convolutions, forward and backward.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from trainer.spec import CONVS
from golden.ref.common import f32, family, rand, write


# Pre-activations within this fraction of their layer's RMS of 0 are rejected (the frame is redrawn), so
# the ReLU mask is never decided by f32 rounding (~1e-6 of the RMS): a flipped mask would move a
# gradient by a whole upstream value, not by rounding.
CONV_MARGIN = 1e-4

# name -> (height, width, channels, frames, features before the picture, packed uint8, extra row padding
# (words when packed, else floats), backward). Frames: 1, 3 and 32; 64×64×3 (the default), non-square
# 80 wide × 60 high, 84×84×1, and 39 high × 37 wide × 2, whose first layer leaves the last 3 rows and
# 1 column uncovered. Big pictures get few frames so the file stays small: layers 1–2 have one weight
# for all cases ("shared/w1", "shared/w2"), the 32-frame case keeps only the last layer's output (the
# others check every layer), and gradients are checked on four cases of 1–3 frames.
CONV_CASES = {
    "rgb64_b1_u8": (64, 64, 3, 1, 0, True, 0, False),
    "rgb64_b3_f32_features": (64, 64, 3, 3, 5, False, 2, True),    # row stride 12295: odd
    "rgb64_b32_u8": (64, 64, 3, 32, 0, True, 0, False),
    "wide80x60_b3_u8_features": (60, 80, 3, 3, 7, True, 1, True),  # picture at byte 7: mid-word
    "gray84_b3_f32": (84, 84, 1, 3, 0, False, 0, False),
    "gray84_b1_u8_features": (84, 84, 1, 1, 13, True, 0, True),
    "odd39x37_b3_f32_features": (39, 37, 2, 3, 3, False, 1, True),
}


def conv_stack_ref(x, ws):
    """Pre-activations of the three convs. x [B, H, W, C] (HWC), ws[i] [out, k, k, in] → list of [B, oh, ow, out]."""
    pres = []
    h = x.permute(0, 3, 1, 2)
    for (_, k, s), w in zip(CONVS, ws):
        pre = torch.nn.functional.conv2d(h, w.permute(0, 3, 1, 2), stride=s).permute(0, 2, 3, 1)
        pres.append(pre)  # the next layer reads this very tensor, so its .grad is the pre-activation gradient
        h = torch.relu(pre).permute(0, 3, 1, 2)
    return pres


@family
def conv(gen):
    """The picture encoder's convs: forward (post-ReLU ys of each layer, HWC), and from a random gradient
    of the last output, every layer's pre-activation gradient (dpre) and weight gradient (dw)."""
    tensors, cases = {}, {}

    def weight(out, k, c):
        return rand(gen, out, k, k, c, scale=math.sqrt(6.0 / (k * k * c)))  # keeps activations O(1)

    (c1, k1, _), (c2, k2, _) = CONVS[1:]
    shared = [weight(c1, k1, CONVS[0][0]), weight(c2, k2, c1)]
    tensors["shared/w1"], tensors["shared/w2"] = (f32(w.reshape(w.shape[0], -1)) for w in shared)
    for name, (H, W, C, B, F, packed, pad, backward) in CONV_CASES.items():
        ws = [weight(CONVS[0][0], CONVS[0][1], C)] + shared

        def draw(n):
            if packed:
                return torch.randint(0, 256, (n, H, W, C), generator=gen, dtype=torch.uint8)
            return (torch.rand(n, H, W, C, generator=gen, dtype=torch.float64)).to(torch.float32).to(torch.float64)

        def value(pix):
            return pix.to(torch.float64) / 255 if packed else pix

        with torch.no_grad():
            rms = [p.pow(2).mean().sqrt() for p in conv_stack_ref(value(draw(8)), ws)]
            frames = []
            while len(frames) < B:
                pix = draw(1)
                pres = conv_stack_ref(value(pix), ws)
                if all(p.abs().min() >= CONV_MARGIN * r for p, r in zip(pres, rms)):
                    frames.append(pix)
        pix = torch.cat(frames)
        size = H * W * C
        feats = torch.randint(0, 256, (B, F), generator=gen, dtype=torch.uint8) if packed else rand(gen, B, F)
        if packed:
            words = -(-(F + size) // 4) + pad
            row = torch.zeros(B, 4 * words, dtype=torch.uint8)
            row[:, :F], row[:, F:F + size] = feats, pix.reshape(B, size)
            obs, row_stride = row.numpy(), words
        else:
            row_stride = F + size + pad
            row = torch.zeros(B, row_stride)
            row[:, :F], row[:, F:F + size] = feats, pix.reshape(B, size)
            obs = f32(row)
        x = value(pix)
        wg = [w.clone().requires_grad_() for w in ws]
        pres = conv_stack_ref(x, wg)
        for p in pres:
            p.retain_grad()
        ys = [torch.relu(p) for p in pres]
        tensors[f"{name}/obs"] = np.ascontiguousarray(obs)
        tensors[f"{name}/w0"] = f32(ws[0].reshape(ws[0].shape[0], -1))
        for i, y in enumerate(ys):
            if B < 32 or i == len(ys) - 1:
                tensors[f"{name}/y{i}"] = f32(y.reshape(B, -1))
        if backward:
            dout = rand(gen, *ys[-1].shape)
            (ys[-1] * dout).sum().backward()
            tensors[f"{name}/dy_last"] = f32(dout.reshape(B, -1))
            for i in range(len(CONVS)):
                tensors[f"{name}/dpre{i}"] = f32(pres[i].grad.reshape(B, -1))
                tensors[f"{name}/dw{i}"] = f32(wg[i].grad.reshape(wg[i].shape[0], -1))
        cases[name] = {"height": H, "width": W, "channels": C, "frames": B, "features": F, "packed": packed,
                       "row_stride": row_stride, "offset": F, "backward": backward, "margin": CONV_MARGIN}
    write("conv", tensors, "conv encoder: 3 valid convs (32@8/4, 64@4/2, 64@3/1), no bias, ReLU each, HWC; obs rows "
          "[features | picture | padding] as uint8 bytes (packed 4 per u32, value = byte/255) or float32; "
          "weights w0 per case, shared/w1 and shared/w2 for all; y{i} post-ReLU [frames, out_size]; dpre{i} = d((y2*dy_last).sum())/d(pre-activation i); dw{i} "
          "[out, k*k*in] in (ky, kx, in) order", cases)
