"""conv.wgsl + the matmul against torch goldens: the picture encoder's three convolutions forward and
backward (uint8 packed and float32 pictures, features before the picture, non-square and one-channel
pictures), obs_unpack, edge coverage, chunked ≡ unchunked, determinism, the bounded scratch, the
dispatch-shape rule and the errors for bad shapes and ranges."""
import numpy as np
import pytest

from golden.check import assert_close, meta
from golden.runs import ConvNet as Net, cases, conv_case, conv_net
from trainer.gpu import GPUError
from trainer.kernels import GPU_MAX_SERIAL, GPU_MIN_INVOCATIONS, HEAVY_WORK, MAX_LOOP, conv
from trainer.autotune import GpuRule, using

CASES = cases("conv")


class Pinned:
    """A chooser that always answers one matmul choice (e.g. "tile4x4/s1"): the same kernel and summation
    order whatever the chunk's row count, so outputs can be compared bit for bit across chunkings."""

    def __init__(self, gpu, text):
        self.gpu, self.text = gpu, text

    def choose(self, family, shape, bench):
        return family.pin(self.text, shape, self.gpu)


def picture_input(m):
    return conv.PictureInput(bool(m["packed"]), m["row_stride"], m["offset"])


@pytest.mark.parametrize("name,packed_activations", [(n, False) for n in CASES] + [
    ("wide80x60_b3_u8_features", True), ("rgb64_b3_f32_features", True)])
def test_conv_golden(gpu, name, packed_activations):
    """packed_activations: ys and dys in one buffer at offsets that are not all multiples of 4 floats,
    which takes the scalar paths of im2col, ReLU and col2im (and binds one buffer as both y and dy)."""
    for label, got, want, tol in conv_case(gpu, name, packed_activations=packed_activations):
        assert_close(label, got, want, tol)


def test_conv_goldens_cover_the_shapes():
    """Batch 1, 3 and 32; 64×64×3, non-square and one-channel pictures; uint8 and float32 rows, with and
    without features before the picture; gradients on several of them."""
    ms = [meta("conv", n) for n in CASES]
    assert {m["frames"] for m in ms} >= {1, 3, 32}
    shapes = {(m["height"], m["width"], m["channels"]) for m in ms}
    assert {(64, 64, 3), (60, 80, 3), (84, 84, 1)} <= shapes
    assert {(m["packed"], m["features"] > 0) for m in ms} == {(True, True), (True, False), (False, True),
                                                              (False, False)}
    assert sum(m["backward"] for m in ms) >= 3 and any(m["backward"] and m["packed"] for m in ms)


def test_obs_unpack(gpu):
    rng = np.random.default_rng(3)
    frames, count, words, ld_out = 5, 23, 7, 26  # count not a multiple of 4; padded rows on both sides
    raw = rng.integers(0, 256, (frames, 4 * words), dtype=np.uint8)
    obs = gpu.array(raw.view(np.uint32), "obs")
    out = gpu.array(np.full((frames, ld_out), -1.0, np.float32), "out")
    plan = gpu.plan("obs_unpack")
    conv.obs_unpack(plan, obs.range(), words, count, out.range(), ld_out, frames)
    gpu.run(plan)
    got = gpu.read(out).reshape(frames, ld_out)
    want = raw[:, :count].astype(np.float32) / np.float32(255)
    assert np.array_equal(got[:, :count], want)  # byte/255 rounded once, as obs.float()/255
    assert np.all(got[:, count:] == -1.0)  # the padding is left alone
    plan = gpu.plan("obs_unpack raw")
    conv.obs_unpack(plan, obs.range(), words, count, out.range(), ld_out, frames, divisor=1.0)
    gpu.run(plan)
    got = gpu.read(out).reshape(frames, ld_out)
    assert np.array_equal(got[:, :count], raw[:, :count].astype(np.float32))  # a uint8 env without a picture


def _random_weights(rng, layers):
    return [(rng.uniform(-1, 1, (l.out_c, l.patch)) * np.sqrt(6 / l.patch)).astype(np.float32) for l in layers]


def _seen_extent(layers):
    """(rows, cols) of the picture that reach the last layer's output: each layer reads input rows
    [0, (last output row read by the next layer)·s + k), which can stop short of the picture's edge."""
    ext = []
    for dim in ("h", "w"):
        last = getattr(layers[-1], f"out_{dim}") - 1  # every place of the last layer is used
        for l in reversed(layers):
            last = last * l.stride + l.kernel - 1
        ext.append(last + 1)
    return tuple(ext)


@pytest.mark.parametrize("hwc", [(64, 64, 3), (60, 80, 3), (84, 84, 1), (39, 37, 2)])
def test_conv_coverage(gpu, hwc):
    """Perturb the first/last row and column of the picture: exactly the layer-0 outputs whose windows
    cover them change, and the last layer's output changes exactly when the edit lies within the rows and
    columns the three strides reach (at 64×64 the last 4 rows and columns are read by layer 0's last
    outputs, which layer 1's stride 2 never reaches; at 84×84 every pixel is seen)."""
    H, W, C = hwc
    layers = conv.conv_layers(H, W, C)
    l0 = layers[0]
    rng = np.random.default_rng(11)
    base = rng.uniform(0.2, 0.8, (H, W, C)).astype(np.float32)
    edits = {"first row": (slice(0, 1), slice(None)), "last row": (slice(H - 1, H), slice(None)),
             "first col": (slice(None), slice(0, 1)), "last col": (slice(None), slice(W - 1, W))}
    frames = [base] + [base.copy() for _ in edits]
    for f, (rows, cols) in zip(frames[1:], edits.values()):
        f[rows, cols, :] = 1.0 - f[rows, cols, :] + 0.5  # a large change of every channel
    obs = np.stack(frames).reshape(len(frames), -1)
    net = Net(gpu, layers, _random_weights(rng, layers), obs, conv.PictureInput(False, H * W * C), len(frames))
    ys = net.forward()
    y0 = ys[0].reshape(len(frames), l0.out_h, l0.out_w, l0.out_c)
    k, s = l0.kernel, l0.stride
    seen_h, seen_w = _seen_extent(layers)
    for j, (what, (rows, cols)) in enumerate(edits.items(), start=1):
        changed = np.any(y0[j] != y0[0], axis=-1)  # [out_h, out_w]
        r, c = np.arange(H)[rows], np.arange(W)[cols]
        oy, ox = np.arange(l0.out_h)[:, None], np.arange(l0.out_w)[:, None]
        cover_y = ((oy * s <= r.max()) & (r.min() < oy * s + k)).any(axis=1)
        cover_x = ((ox * s <= c.max()) & (c.min() < ox * s + k)).any(axis=1)
        covered = cover_y[:, None] & cover_x[None, :]
        assert not np.any(changed & ~covered), f"{hwc} {what}: outputs outside the covering windows changed"
        if covered.any():  # ReLU may hide a few places; most covering windows must see the change
            assert changed[covered].mean() > 0.5, f"{hwc} {what}: the covering layer-0 outputs did not change"
        seen = r.min() < seen_h and c.min() < seen_w
        assert np.any(ys[2][j] != ys[2][0]) == seen, f"{hwc} {what}: seen by the last layer = {seen}"
    assert _seen_extent(conv.conv_layers(64, 64, 3)) == (60, 60)
    assert _seen_extent(conv.conv_layers(84, 84, 1)) == (84, 84)


@pytest.mark.parametrize("pin", ["tile4x4/s1", "sg8"])
def test_conv_chunked_matches_unchunked(gpu, pin):
    """11 frames in chunks of 4 (4 + 4 + 3) vs one chunk, with one matmul kernel pinned: the forward
    outputs and every dys are the same bits (each row is computed alike in any chunk); dW is summed
    chunk by chunk, so it matches to rounding."""
    if pin == "sg8" and not gpu.has("subgroup"):
        pytest.skip("sg8 needs the 'subgroup' feature (absent or disabled by PUFFGPU_DISABLE_FEATURES)")
    H, W, C, F, frames = 40, 44, 3, 3, 11  # small pictures keep this quick; uint8 rows with features
    layers = conv.conv_layers(H, W, C)
    rng = np.random.default_rng(5)
    words = -(-(F + H * W * C) // 4)
    raw = rng.integers(0, 256, (frames, 4 * words), dtype=np.uint8)
    ws = _random_weights(rng, layers)
    dy = rng.uniform(-1, 1, (frames, layers[-1].out_size)).astype(np.float32)
    src = conv.PictureInput(True, words, F)
    out = []
    with using(gpu, Pinned(gpu, pin)):
        for chunk in (4, frames):
            net = Net(gpu, layers, ws, raw, src, frames, chunk)
            out.append((net.forward(), *net.backward(dy)))
    (ys_a, dys_a, dw_a), (ys_b, dys_b, dw_b) = out
    for i in range(3):
        assert np.array_equal(ys_a[i], ys_b[i]), f"ys[{i}] differs between chunks of 4 and 11"
        assert np.array_equal(dys_a[i], dys_b[i]), f"dys[{i}] differs between chunks of 4 and 11"
        assert_close(f"dw{i} chunks of 4 vs 11", dw_a[i], dw_b[i], "conv_grad")


def test_conv_deterministic(gpu):
    """Two runs of forward + backward (the default kernel choice, 3 chunks) give the same bits."""
    net, c, m = conv_net(gpu, "rgb64_b3_f32_features", chunk=1)
    runs = [(net.forward(), *net.backward(c["dy_last"])) for _ in range(2)]
    for a, b in zip(runs[0], runs[1]):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_conv_layers_and_chunk():
    layers = conv.conv_layers(64, 64, 3)
    assert [(l.out_h, l.out_w, l.out_c) for l in layers] == [(15, 15, 32), (6, 6, 64), (4, 4, 64)]
    assert layers[-1].out_size == 1024 and sum(l.macs for l in layers) == 3_151_872  # multiply-adds per frame
    wide = conv.conv_layers(60, 80, 3)  # height 60, width 80
    assert [(l.out_h, l.out_w) for l in wide] == [(14, 19), (6, 8), (4, 6)]
    assert conv.conv_layers(36, 36, 1)[-1].places == 1
    for h, w in ((35, 64), (64, 35), (8, 8)):
        with pytest.raises(ValueError, match=r"too small .* at least 36x36"):
            conv.conv_layers(h, w, 3)
    # a 4096-frame minibatch needs ~700 MB of patches at 64×64×3; the scratch stays bounded
    chunk = conv.conv_chunk(layers, 4096)
    per_frame = max(l.places * l.patch for l in layers)
    assert 4 * chunk * per_frame <= conv.SCRATCH_BYTES and chunk * layers[0].places <= MAX_LOOP
    assert 4096 * per_frame * 4 > 600e6 and chunk >= 64
    assert conv.conv_chunk(layers, 11, scratch_bytes=4 * per_frame * 4) == 4  # 3 chunks of 4, 4, 3
    assert conv.conv_chunk(layers, 7) == 7
    with pytest.raises(GPUError, match="does not fit"):
        conv.conv_chunk(layers, 5, scratch_bytes=1000)


def test_conv_range_errors(gpu):
    layers = conv.conv_layers(36, 36, 1)
    frames = 2
    obs = gpu.buffer(4 * frames * 36 * 36, "obs")
    w = [gpu.buffer(4 * l.out_c * l.patch, f"w{i}").range() for i, l in enumerate(layers)]
    ys = [gpu.buffer(4 * frames * l.out_size, f"ys{i}").range() for i, l in enumerate(layers)]
    scratch = conv.ConvScratch(gpu, layers, 1)
    src = conv.PictureInput(False, 36 * 36)
    conv.conv_forward(gpu.plan("ok"), obs.range(), src, w, ys, frames, layers, scratch)
    short = ys[:1] + [ys[1].f32(0, ys[1].count - 1)] + ys[2:]
    with pytest.raises(GPUError, match=r"conv_forward .*ys\[1\] needs 1152 floats .* holds 1151"):
        conv.conv_forward(gpu.plan("bad"), obs.range(), src, w, short, frames, layers, scratch)
    with pytest.raises(GPUError, match=r"picture .* does not fit an observation row"):
        conv.conv_forward(gpu.plan("bad"), obs.range(), conv.PictureInput(False, 36 * 36, 1), w, ys, frames,
                          layers, scratch)
    with pytest.raises(GPUError, match=r"obs needs"):
        conv.conv_forward(gpu.plan("bad"), obs.range(), src, w, ys, frames + 1, layers, scratch)
    with pytest.raises(GPUError, match=r"w has 2 ranges for 3 layers"):
        conv.conv_forward(gpu.plan("bad"), obs.range(), src, w[:2], ys, frames, layers, scratch)
    dys = [r for r in ys]
    with pytest.raises(GPUError, match=r"dw\[2\] needs"):
        conv.conv_backward(gpu.plan("bad"), obs.range(), src, w, ys, dys, w[:2] + [w[2].f32(0, 5)], frames,
                           layers, scratch)
    other = conv.ConvScratch(gpu, conv.conv_layers(36, 36, 1, convs=((4, 8, 4), (4, 3, 1), (4, 3, 1))), 1)
    with pytest.raises(GPUError, match="build ConvScratch for them"):
        conv.conv_forward(gpu.plan("bad"), obs.range(), src, w, ys, frames, layers, other)
    with pytest.raises(GPUError, match="holds 8 values, fewer than count=9"):
        conv.obs_unpack(gpu.plan("bad"), obs.range(), 2, 9, ys[0], 9, 1)


def test_conv_dispatch_shapes_under_the_gpu_rule(gpu):
    """At 64×64×3 and a 512-frame minibatch, with the static GPU choice for the matmuls, every heavy
    dispatch of the conv forward and backward keeps >= 16K invocations and <= 1K serial iterations."""
    layers = conv.conv_layers(64, 64, 3)
    frames = 512
    words = 64 * 64 * 3 // 4
    big = gpu.buffer(4 * frames * sum(l.out_size for l in layers), "activations")
    offs = np.cumsum([0] + [frames * l.out_size for l in layers])
    ys = [big.f32(int(offs[i]), frames * l.out_size) for i, l in enumerate(layers)]
    obs = gpu.buffer(4 * frames * words, "obs").range()
    wbuf = gpu.buffer(4 * sum(l.out_c * l.patch for l in layers), "w")
    woffs = np.cumsum([0] + [l.out_c * l.patch for l in layers])
    w = [wbuf.f32(int(woffs[i]), l.out_c * l.patch) for i, l in enumerate(layers)]
    dbig, dwbuf = gpu.buffer(big.nbytes, "dactivations"), gpu.buffer(wbuf.nbytes, "dw")
    dys = [dbig.f32(r.offset // 4, r.count) for r in ys]
    dw = [dwbuf.f32(r.offset // 4, r.count) for r in w]
    scratch = conv.ConvScratch(gpu, layers, conv.conv_chunk(layers, frames))
    plan = gpu.plan("shape")
    with using(gpu, GpuRule()):
        src = conv.PictureInput(True, words)
        conv.conv_forward(plan, obs, src, w, ys, frames, layers, scratch)
        conv.conv_backward(plan, obs, src, w, ys, dys, dw, frames, layers, scratch)  # shapes only, never run
    heavy = [d for d in plan.infos if d.work is not None and d.work >= HEAVY_WORK]
    assert heavy and all(d.serial is not None for d in plan.infos)
    for d in heavy:
        assert d.invocations >= GPU_MIN_INVOCATIONS and d.serial <= GPU_MAX_SERIAL, d


def _patches_np(x, layer):
    """numpy im2col: x [B, H, W, C] → [B, places, k·k·C] in (ky, kx, c) order."""
    k, s = layer.kernel, layer.stride
    return np.stack([x[:, oy * s:oy * s + k, ox * s:ox * s + k, :].reshape(len(x), -1)
                     for oy in range(layer.out_h) for ox in range(layer.out_w)], axis=1)


@pytest.mark.parametrize("which,frames,packed,offset,cols_at", [
    (2, 120, False, 0, 0),   # layer 2 at 64×64 over 120 frames: heavy with few rows, kernel rows split in pieces
    (0, 3, False, 4, 0),     # a 4-channel float picture after 4 features: vec4 loads and stores
    (0, 3, False, 4, 1),     # the same into patches 1 float past a vec4 boundary: the scalar path
    (0, 3, True, 5, 0),      # packed uint8 at byte 5: vec4 stores, bytes shifted out of 2 words
    (0, 3, True, 5, 1),      # packed uint8, scalar path
])
def test_conv_im2col(gpu, which, frames, packed, offset, cols_at):
    """conv_im2col's paths against numpy's patches, bit for bit."""
    layer = conv.conv_layers(64, 64, 3)[2] if which == 2 else conv.conv_layers(40, 44, 4)[0]
    rng = np.random.default_rng(2)
    size = layer.in_size
    if packed:
        words = -(-(offset + size) // 4) + 1
        raw = rng.integers(0, 256, (frames, 4 * words), dtype=np.uint8)
        x = raw[:, offset:offset + size].astype(np.float32) / np.float32(255)
        xb, src = gpu.array(raw.view(np.uint32), "x"), conv.PictureInput(True, words, offset)
    else:
        stride = offset + size + 4
        rows = rng.standard_normal((frames, stride)).astype(np.float32)
        x = rows[:, offset:offset + size]
        xb, src = gpu.array(rows, "x"), conv.PictureInput(False, stride, offset)
    n = frames * layer.places * layer.patch
    cols = gpu.buffer(4 * (n + cols_at), "cols")
    plan = gpu.plan("im2col")
    conv.conv_im2col(plan, xb.range(), src, layer, frames, cols.f32(cols_at, n))
    params = plan.infos[-1].params
    assert params["wide"] == int(cols_at == 0) and (params["pieces"] > 1) == (which == 2)
    gpu.run(plan)
    want = _patches_np(x.reshape(frames, layer.in_h, layer.in_w, layer.in_c), layer)
    assert np.array_equal(gpu.read(cols)[cols_at:].reshape(want.shape), want)
