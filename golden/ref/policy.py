"""The whole policy forward/backward (encoder → MinGRU scans → decoder), with float observations and
with pictures (the conv encoder).
"""
from __future__ import annotations

import torch

from trainer.spec import CONVS, conv_layers
from golden.ref.common import f32, family, rand, write
from golden.ref.mingru import mingru_scan_ref, rand_terminals


def policy_forward_ref(w, obs, h0, terminals, layers):
    """Encoder → L MinGRU scans → decoder. obs [R,T,D], h0 [L,R,H] → out [R,T,A+1]."""
    x = obs @ w["encoder"].T
    for l in range(layers):
        c = x @ w[f"mingru.{l}"].T
        x, _ = mingru_scan_ref(c, x, h0[l], terminals)
    return x @ w["decoder"].T


def init_policy(gen, D, H, L, A):
    """PufferLib's init bounds (gain √2 encoder, 1 elsewhere), from this file's generator."""
    shapes = {"encoder": (H, D), "decoder": (A + 1, H), **{f"mingru.{l}": (3 * H, H) for l in range(L)}}
    return {k: rand(gen, *s, scale=(2 ** 0.5 if k == "encoder" else 1.0) / s[1] ** 0.5) for k, s in shapes.items()}

# (D obs, H hidden, L layers, head sizes, R rows, T horizon)
POLICY_CASES = {
    "platformer": (413, 128, 4, (3, 3), 3, 16),  # the default policy at its real widths
    "small": (5, 8, 2, (2, 3, 4), 2, 7),
}


@family
def policy(gen):
    """Full policy forward and backward: out, dW for every tensor and d obs, from (out*dout).sum()."""
    tensors, cases = {}, {}
    for name, (D, H, L, heads, R, T) in POLICY_CASES.items():
        A = sum(heads)
        w = {k: v.requires_grad_() for k, v in init_policy(gen, D, H, L, A).items()}
        obs = rand(gen, R, T, D).requires_grad_()
        h0 = rand(gen, L, R, H, scale=0.5)
        term = rand_terminals(gen, R, T)
        dout = rand(gen, R, T, A + 1)
        out = policy_forward_ref(w, obs, h0, term, L)
        (out * dout).sum().backward()
        for key, t in (("obs", obs), ("h0", h0), ("terminals", term), ("dout", dout), ("out", out),
                       ("dobs", obs.grad)):
            tensors[f"{name}/{key}"] = f32(t)
        for k, v in w.items():
            tensors[f"{name}/w.{k}"] = f32(v)
            tensors[f"{name}/dw.{k}"] = f32(v.grad)
        cases[name] = {"D": D, "H": H, "L": L, "act_sizes": list(heads), "R": R, "T": T}
    write("policy", tensors, "policy forward (encoder, MinGRU scans with resets from h0, decoder) and "
          "backward: dw.* and dobs from (out*dout).sum().backward()", cases)


def init_policy_heads(gen, D, H, L, heads):
    """init_policy plus logstd [1, Kc] (random here, so that its update is not trivial) for continuous heads."""
    A, Kc = sum(heads), sum(1 for h in heads if h == 1)
    w = init_policy(gen, D, H, L, A)
    if Kc:
        w = {"encoder": w["encoder"], "decoder": w["decoder"], "logstd": rand(gen, 1, Kc, scale=0.5),
             **{k: v for k, v in w.items() if k.startswith("mingru")}}  # checkpoint order
    return w


# A picture is the last h·w·c values of each observation row (rows from the top, channels last); the
# F values before it are features. Encoder: three valid convolutions (32@8×8/4, 64@4×4/2, 64@3×3/1, no
# bias, ReLU each), the last one's output flattened (oy, ox, c), then encoder.linear [H, F + conv_out]
# on [features, conv output]. Conv weights are kept as the matrices the GPU and Muon see,
# [out, ky·kx·in] with columns in (ky, kx, in) order; the reference reshapes them to (out, ky, kx, in).
# uint8 observations are stored as uint8 and scaled by 1/255 (features too).
#
# ReLU at exactly 0: a pre-activation whose float64 value is within the GPU's f32 rounding of 0 could
# fall on the other side there, and one element that does changes a weight gradient by a whole term.
# So each case draws its weights until every conv pre-activation is at least RELU_MARGIN of its layer's
# largest away from 0 (pictures are small enough that a few draws suffice).

RELU_MARGIN = 2e-5


def picture_encoder_ref(w, obs, picture, features, pre=None):
    """x0 [M, H] from obs rows [M, D] (float64, already scaled); `pre` collects each conv's pre-activations."""
    import torch.nn.functional as tf
    h, wd, c = picture
    M = obs.shape[0]
    x = obs[:, features:].reshape(M, h, wd, c).permute(0, 3, 1, 2)  # NCHW
    for i, (out_c, k, stride) in enumerate(CONVS):
        in_c = x.shape[1]
        kernel = w[f"encoder.convs.{i}"].reshape(out_c, k, k, in_c).permute(0, 3, 1, 2)
        z = tf.conv2d(x, kernel, stride=stride)
        if pre is not None:
            pre.append(z.detach())
        x = torch.relu(z)
    conv = x.permute(0, 2, 3, 1).reshape(M, -1)  # (oy, ox, c)
    lin = w["encoder.linear"]
    x0 = conv @ lin[:, features:].T
    if features:
        x0 = obs[:, :features] @ lin[:, :features].T + x0
    return x0


def picture_policy_forward_ref(w, obs, h0, terminals, layers, picture, features, pre=None):
    """Picture encoder → L MinGRU scans → decoder. obs [R,T,D] (scaled float64) → out [R,T,A+1]."""
    R, T, D = obs.shape
    x = picture_encoder_ref(w, obs.reshape(R * T, D), picture, features, pre).reshape(R, T, -1)
    for l in range(layers):
        c = x @ w[f"mingru.{l}"].T
        x, _ = mingru_scan_ref(c, x, h0[l], terminals)
    return x @ w["decoder"].T


def picture_obs(gen, shape, dtype):
    """(what the GPU gets, the scaled float64 the reference uses): uint8 0–255, or float32 in [0, 1]."""
    if dtype == "uint8":
        raw = torch.randint(0, 256, shape, generator=gen, dtype=torch.int64).to(torch.uint8)
        return raw.numpy(), raw.to(torch.float64) / 255
    x = torch.rand(*shape, generator=gen, dtype=torch.float64).to(torch.float32).to(torch.float64)
    return f32(x), x


def init_picture_policy(gen, picture, F, H, L, A):
    """Kaiming-uniform √2 for the convs and encoder.linear, 1 for decoder and MinGRU (checkpoint order)."""
    convs = conv_layers(*picture)
    shapes = {**{f"encoder.convs.{i}": (l.out_c, l.patch) for i, l in enumerate(convs)},
              "encoder.linear": (H, F + convs[-1].out_size),
              "decoder": (A + 1, H), **{f"mingru.{l}": (3 * H, H) for l in range(L)}}
    return {k: rand(gen, *s, scale=(2 ** 0.5 if k.startswith("encoder") else 1.0) / s[1] ** 0.5)
            for k, s in shapes.items()}


def init_picture_policy_away_from_relu_zero(gen, picture, F, H, L, A, obs_flat, tries=200):
    """init_picture_policy, redrawn until every conv pre-activation on obs_flat [M, D] is at least
    RELU_MARGIN (relative to its layer's largest) away from 0."""
    for _ in range(tries):
        w = init_picture_policy(gen, picture, F, H, L, A)
        pre = []
        with torch.no_grad():
            picture_encoder_ref(w, obs_flat, picture, F, pre)
        if all(float(z.abs().min()) >= RELU_MARGIN * float(z.abs().max()) for z in pre):
            return w
    raise RuntimeError(f"no draw in {tries} keeps every conv pre-activation away from 0; use fewer frames")

# (picture (h, w, c), F features, obs dtype, H, L, heads, R rows, T horizon): picture-only and
# features + picture, uint8 and float32, square and not, one frame (R = T = 1) and frame counts that
# no chunk or tile divides
POLICY_PICTURE_CASES = {
    "u8_64x64x3": ((64, 64, 3), 0, "uint8", 16, 2, (8,), 1, 3),
    "u8_feat7_48x40x1": ((48, 40, 1), 7, "uint8", 16, 1, (3, 3), 2, 3),
    "f32_feat5_36x36x2_one": ((36, 36, 2), 5, "float32", 8, 1, (2, 3), 1, 1),
    "f32_40x44x3_r5": ((40, 44, 3), 0, "float32", 8, 2, (4,), 5, 3),
}


@family
def policy_picture(gen):
    """Picture policy forward and backward: out and dW of every tensor (convs as [out, ky·kx·in]) from
    (out*dout).sum().backward(), for uint8 and float32 observations with and without features."""
    tensors, cases = {}, {}
    for name, (picture, F, dtype, H, L, heads, R, T) in POLICY_PICTURE_CASES.items():
        A = sum(heads)
        D = F + picture[0] * picture[1] * picture[2]
        raw, obs = picture_obs(gen, (R, T, D), dtype)
        w = init_picture_policy_away_from_relu_zero(gen, picture, F, H, L, A, obs.reshape(R * T, D))
        w = {k: v.requires_grad_() for k, v in w.items()}
        h0 = rand(gen, L, R, H, scale=0.5)
        term = rand_terminals(gen, R, T)
        dout = rand(gen, R, T, A + 1)
        out = picture_policy_forward_ref(w, obs, h0, term, L, picture, F)
        (out * dout).sum().backward()
        tensors[f"{name}/obs"] = raw
        for key, t in (("h0", h0), ("terminals", term), ("dout", dout), ("out", out)):
            tensors[f"{name}/{key}"] = f32(t)
        for k, v in w.items():
            tensors[f"{name}/w.{k}"] = f32(v)
            tensors[f"{name}/dw.{k}"] = f32(v.grad)
        cases[name] = {"picture": list(picture), "features": F, "obs_dtype": dtype, "D": D, "H": H, "L": L,
                       "act_sizes": list(heads), "R": R, "T": T}
    write("policy_picture", tensors, "picture policy forward (3 valid ReLU convs on the HWC picture at the end of "
          "each obs row, encoder.linear on [features, conv output], MinGRU scans with resets from h0, decoder) and "
          "backward: dw.* from (out*dout).sum().backward(); conv weights as [out, ky*kx*in]; uint8 obs scaled 1/255; "
          f"every conv pre-activation >= {RELU_MARGIN} of its layer's max away from 0", cases)
