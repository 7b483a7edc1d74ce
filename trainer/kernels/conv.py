"""conv.wgsl: the picture encoder's three convolutions, built on the tuned matmul.

    conv_forward        ys[i] = ReLU(conv_i(x_i)), x_0 = the picture of each observation row, x_i = ys[i−1]
    conv_backward       dys[i] → pre-activation gradients in place, dw[i], and dys[i−1] for i ≥ 1
    obs_unpack          uint8 values packed 4 per u32 → float32 (÷ 255 for a picture env, raw otherwise)

A layer is valid-padded, bias-free, weight [out_c, k, k, in_c] read as a matrix [out_c, patch]
(patch = k·k·in_c, columns in (ky, kx, c) order), activations HWC per frame. The forward pass of a
chunk of whole frames is
    conv_im2col: patch matrix cols [chunk·places, patch]   →   matmul_forward: ys rows = cols·Wᵀ
    (chunk·places rows × out_c, which is the HWC layout)   →   conv_relu in place
and the backward pass of a layer, last to first,
    conv_relu_backward (last layer only: the mask of the others is applied by col2im),
    conv_im2col again, matmul_backward_weight dW (+)= dyᵀ·cols (the first chunk overwrites, later
    chunks accumulate in order: deterministic), and for i ≥ 1 matmul_backward_input dcols = dy·W
    into the same scratch, then conv_col2im: a gather per input element (no atomics) times the
    input's ReLU mask, into dys[i−1].

The patch matrix is never stored whole: `ConvScratch` holds one chunk's (SCRATCH_BYTES at most;
a 4096-frame minibatch at 64×64×3 would need ~700 MB), and chunks are whole frames so col2im never
needs another chunk's patches. The chunk (`conv_chunk`) also keeps every matmul's K within
lavapipe's loop limit. The small kernels load and store vec4s where offsets and sizes allow (`wide`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..gpu import GPUError, Plan, Range
from . import GPU_MIN_INVOCATIONS, HEAVY_WORK, MAX_LOOP, ceil_div, need
from .matmul import matmul_backward_input, matmul_backward_weight, matmul_forward
from ..spec import ConvLayer, conv_layers  # noqa: F401  (the geometry lives in spec; callers use conv.conv_layers too)

SCRATCH_BYTES = 32 << 20  # the bounded patch matrix: 32 MiB, 194 frames at 64×64×3
WG = 64
MAX_GX = 32768  # workgroups along x; more go to grid y


@dataclass(frozen=True)
class PictureInput:
    """Where layer 0 reads its picture: the last H·W·C values of each observation row.

    packed: uint8 values 4 per u32 word (little-endian), scaled by 1/255; else float32 as is.
    row_stride: u32 words (packed) or floats per observation row. offset: index of the picture's
    first value within the row, in values (bytes when packed)."""
    packed: bool
    row_stride: int
    offset: int = 0

    def row_values(self) -> int:
        return self.row_stride * (4 if self.packed else 1)


def _scratch_floats(layers) -> int:
    """Patch-matrix floats per frame: the largest layer's places·patch."""
    return max(layer.places * layer.patch for layer in layers)


def conv_chunk(layers, frames: int, scratch_bytes: int = SCRATCH_BYTES, max_binding: int | None = None) -> int:
    """Frames per chunk: as many as the patch scratch (scratch_bytes, and one binding of max_binding
    bytes if given) holds, with every product's K = chunk·places within lavapipe's loop limit, spread
    evenly over ceil(frames/chunk) chunks."""
    if frames < 1:
        raise GPUError(f"conv_chunk: frames must be positive, got {frames}")
    per_frame = 4 * _scratch_floats(layers)
    cap = scratch_bytes if max_binding is None else min(scratch_bytes, max_binding)
    chunk = min(frames, cap // per_frame, MAX_LOOP // max(layer.places for layer in layers))
    if chunk < 1:
        big = max(layers, key=lambda layer: layer.places * layer.patch)
        raise GPUError(f"conv_chunk: one frame's patch matrix ({big.label()}: {per_frame} B, "
                       f"{max(layer.places for layer in layers)} places) does not fit {cap} B of scratch and "
                       f"{MAX_LOOP} rows per product; use a smaller picture or a larger scratch_bytes")
    return ceil_div(frames, ceil_div(frames, chunk))


class ConvScratch:
    """The bounded patch buffer for `chunk` frames: im2col's patch matrix, reused by the backward pass
    for dcols = dy·W (a layer's dW reads its patches before dcols overwrites them; dispatches run in order)."""

    def __init__(self, gpu, layers, chunk: int):
        if chunk < 1:
            raise GPUError(f"ConvScratch: chunk must be positive, got {chunk}")
        self.gpu, self.layers, self.chunk = gpu, list(layers), chunk
        self.floats = chunk * _scratch_floats(self.layers)
        if 4 * self.floats > gpu.limits["max-storage-buffer-binding-size"]:
            raise GPUError(f"ConvScratch: {chunk} frames need {4 * self.floats} B of patches, more than the adapter "
                           f"binds ({gpu.limits['max-storage-buffer-binding-size']} B); use conv_chunk(...) frames")
        self.buffer = gpu.buffer(4 * self.floats, f"conv patches [{chunk} frames]")

    def cols(self, layer: ConvLayer, frames: int) -> Range:
        return self.buffer.f32(0, frames * layer.places * layer.patch)


def _aligned(r: Range) -> bool:
    """Whether r starts on a 16-byte boundary (vec4 loads and stores)."""
    return r.offset % 16 == 0


def _views(wide: bool, **ranges: Range) -> dict:
    """Each range bound under one view, the vec4 one (`name4`) where the path is wide, the other left
    empty: two views of one range in one dispatch overlap, which WebGPU forbids for writable bindings."""
    out = {}
    for name, r in ranges.items():
        out[name], out[name + "4"] = (None, r) if wide else (r, None)
    return out


def _grid(total: int) -> tuple[int, int]:
    blocks = max(1, ceil_div(total, WG))
    gx = min(blocks, MAX_GX)
    return gx, ceil_div(blocks, gx)


def _layer_params(layer: ConvLayer, frames: int) -> dict:
    return dict(frames=frames, in_h=layer.in_h, in_w=layer.in_w, in_c=layer.in_c, out_h=layer.out_h,
                out_w=layer.out_w, kernel=layer.kernel, stride=layer.stride, places=layer.places, patch_len=layer.patch)


# ------------------------------------------------------------------------------------ elementary launchers

def conv_im2col(plan: Plan, src: Range, pic: PictureInput, layer: ConvLayer, frames: int, cols: Range):
    """cols [frames·places, patch] = the patches of `frames` rows of src (the picture at pic.offset)."""
    label = f"conv_im2col {layer.label()} frames={frames}"
    if pic.offset < 0 or pic.offset + layer.in_size > pic.row_values():
        raise GPUError(f"{label}: the picture ({layer.in_size} values at offset {pic.offset}) does not fit a row of "
                       f"{pic.row_stride} {'u32 words (4 values each)' if pic.packed else 'floats'}")
    need(label, "src", src, (frames - 1) * pic.row_stride + ceil_div(pic.offset + layer.in_size, 4 if pic.packed else 1))
    rows = frames * layer.places
    need(label, "cols", cols, rows * layer.patch)
    # a kernel row's k·in_c values are contiguous in both the picture and the patch: one invocation copies
    # them all (fewest invocations: lavapipe's pace), split in pieces only where a big chunk would
    # otherwise keep fewer than GPU_MIN_INVOCATIONS in flight. wide: vec4 stores (and vec4 loads of an
    # f32 source; a packed one is shifted out of words at any byte alignment)
    seg = layer.kernel * layer.in_c
    wide = (seg % 4 == 0 and _aligned(cols) and (pic.packed or (
        _aligned(src) and pic.row_stride % 4 == 0 and pic.offset % 4 == 0 and layer.in_c % 4 == 0)))
    unit = 4 if wide else 1
    pieces = 1
    while (rows * layer.kernel * pieces < GPU_MIN_INVOCATIONS and pieces * unit < seg
           and rows * layer.patch >= HEAVY_WORK):
        pieces *= 2
    piece = ceil_div(ceil_div(seg, pieces), unit) * unit
    pieces = ceil_div(seg, piece)
    total = rows * layer.kernel * pieces
    k = plan.gpu.kernel("conv.wgsl", "conv_im2col", WG=WG)
    params = dict(_layer_params(layer, frames), total=total, packed=int(pic.packed), row_stride=pic.row_stride,
                  offset=pic.offset, piece=piece, pieces=pieces, wide=int(wide))
    views = {**_views(wide and not pic.packed, src=src), **_views(wide, cols=cols)}  # packed: words, shifted
    return plan.add(k, _grid(total), params, **views).note(
        invocations=total, serial=ceil_div(piece, unit), work=rows * layer.patch)


def conv_relu(plan: Plan, y: Range, count: int):
    """y[0:count] = max(y, 0) in place."""
    need(f"conv_relu count={count}", "y", y, count)
    wide = count % 4 == 0 and _aligned(y)
    total = count // 4 if wide else count
    k = plan.gpu.kernel("conv.wgsl", "conv_relu", WG=WG)
    return plan.add(k, _grid(total), dict(total=total, wide=int(wide)), **_views(wide, y=y)).note(
        invocations=total, serial=1, work=count)


def conv_relu_backward(plan: Plan, y: Range, dy: Range, count: int):
    """dy[0:count] *= [y > 0] in place (y post-ReLU)."""
    label = f"conv_relu_backward count={count}"
    need(label, "y", y, count)
    need(label, "dy", dy, count)
    wide = count % 4 == 0 and _aligned(y) and _aligned(dy)
    total = count // 4 if wide else count
    k = plan.gpu.kernel("conv.wgsl", "conv_relu_backward", WG=WG)
    views = _views(wide, y=y, dy=dy)
    return plan.add(k, _grid(total), dict(total=total, wide=int(wide)), **views).note(
        invocations=total, serial=1, work=count)


def conv_col2im(plan: Plan, dcols: Range, layer: ConvLayer, frames: int, y: Range, dx: Range):
    """dx [frames, in_size] = [y > 0]·col2im(dcols [frames·places, patch]), y = the layer's (post-ReLU) input."""
    label = f"conv_col2im {layer.label()} frames={frames}"
    need(label, "dcols", dcols, frames * layer.places * layer.patch)
    count = frames * layer.in_size
    need(label, "y", y, count)
    need(label, "dx", dx, count)
    cover = ceil_div(layer.kernel, layer.stride) ** 2
    wide = layer.in_c % 4 == 0 and _aligned(dcols) and _aligned(y) and _aligned(dx)  # 4 channels at a time
    total = count // 4 if wide else count
    k = plan.gpu.kernel("conv.wgsl", "conv_col2im", WG=WG)
    views = _views(wide, dcols=dcols, y=y, dy=dx)
    return plan.add(k, _grid(total), dict(_layer_params(layer, frames), total=total, wide=int(wide)), **views).note(
        invocations=total, serial=cover, work=count * cover)


def obs_unpack(plan: Plan, obs: Range, row_stride_words: int, count: int, out: Range, ld_out: int, frames: int,
               divisor: float = 255.0):
    """out[f, 0:count] = the first `count` uint8 values of packed row f ÷ divisor (rows of row_stride_words
    u32 words, 4 values each, little-endian), for f < frames; out rows at stride ld_out floats.

    divisor 255: a picture env's values in [0, 1]; 1: the raw values, as PufferLib feeds a uint8 env
    without a picture (grid codes, counts) to its encoder."""
    label = f"obs_unpack frames={frames} count={count}"
    if min(frames, count, row_stride_words) < 1:
        raise GPUError(f"{label}: frames, count and row_stride_words must be positive (row_stride_words={row_stride_words})")
    if count > 4 * row_stride_words:
        raise GPUError(f"{label}: a packed row of {row_stride_words} words holds {4 * row_stride_words} values, "
                       f"fewer than count={count}")
    if ld_out < count:
        raise GPUError(f"{label}: ld_out={ld_out} is shorter than count={count}")
    need(label, "obs", obs, (frames - 1) * row_stride_words + ceil_div(count, 4))
    need(label, "out", out, (frames - 1) * ld_out + count)
    gpu = plan.gpu
    k = gpu.kernel("conv.wgsl", "obs_unpack", WG=WG)
    max_bind = gpu.limits["max-storage-buffer-binding-size"] - 256
    per = max(4 * row_stride_words, 4 * ld_out)
    step = max(1, min(frames, max_bind // per, (MAX_GX * 65535 * WG) // max(count, 1)))
    for f0 in range(0, frames, step):
        n = min(step, frames - f0)
        total = n * count
        plan.add(k, _grid(total), dict(total=total, count=count, ld_out=ld_out, row_stride=row_stride_words, divisor=divisor),
                 src=obs.f32(f0 * row_stride_words, (n - 1) * row_stride_words + ceil_div(count, 4)),
                 out=out.f32(f0 * ld_out, (n - 1) * ld_out + count)).note(invocations=total, serial=1, work=total)
    return plan


# ------------------------------------------------------------------------------------ the encoder's convolutions

def _check(label, obs, src, w, ys, frames, layers, scratch, dys=None, dw=None):
    layers = list(layers)
    if frames < 1:
        raise GPUError(f"{label}: frames must be positive, got {frames}")
    for name, lst in (("w", w), ("ys", ys), ("dys", dys), ("dw", dw)):
        if lst is not None and len(lst) != len(layers):
            raise GPUError(f"{label}: {name} has {len(lst)} ranges for {len(layers)} layers")
    for i in range(1, len(layers)):
        a, b = layers[i - 1], layers[i]
        if (b.in_h, b.in_w, b.in_c) != (a.out_h, a.out_w, a.out_c):
            raise GPUError(f"{label}: layer {i} reads {b.in_h}x{b.in_w}x{b.in_c} but layer {i - 1} writes "
                           f"{a.out_h}x{a.out_w}x{a.out_c}")
    if scratch.floats < scratch.chunk * _scratch_floats(layers):
        raise GPUError(f"{label}: the scratch holds {scratch.floats} floats, fewer than {scratch.chunk} frames of "
                       f"these layers' patches ({scratch.chunk * _scratch_floats(layers)}); build ConvScratch for them")
    first = layers[0]
    if src.offset < 0 or src.offset + first.in_size > src.row_values():
        raise GPUError(f"{label}: the picture ({first.in_h}x{first.in_w}x{first.in_c} = {first.in_size} values at "
                       f"offset {src.offset}) does not fit an observation row of {src.row_stride} "
                       f"{'u32 words (4 uint8 values each)' if src.packed else 'floats'}")
    need(label, "obs", obs, (frames - 1) * src.row_stride
         + ceil_div(src.offset + first.in_size, 4 if src.packed else 1))
    for i, layer in enumerate(layers):
        need(label, f"w[{i}]", w[i], layer.out_c * layer.patch)
        need(label, f"ys[{i}]", ys[i], frames * layer.out_size)
        if dys is not None:
            need(label, f"dys[{i}]", dys[i], frames * layer.out_size)
        if dw is not None:
            need(label, f"dw[{i}]", dw[i], layer.out_c * layer.patch)
    return layers


def _chunks(frames: int, chunk: int):
    for f0 in range(0, frames, chunk):
        yield f0, min(chunk, frames - f0)


def _layer_input(i, obs, src, ys, layers, f0, n):
    """(range, PictureInput) layer i reads for frames [f0, f0 + n): the observation rows or ys[i−1]."""
    if i == 0:
        rows = obs.f32(f0 * src.row_stride, (n - 1) * src.row_stride
                       + ceil_div(src.offset + layers[0].in_size, 4 if src.packed else 1))
        return rows, src
    size = layers[i].in_size
    return ys[i - 1].f32(f0 * size, n * size), PictureInput(False, size, 0)


def conv_forward(plan: Plan, obs: Range, src: PictureInput, w: list[Range], ys: list[Range], frames: int,
                 layers, scratch: ConvScratch):
    """ys[i] [frames, layers[i].out_size] = ReLU(conv_i(...)) (HWC), from the picture of `frames` obs rows,
    in chunks of scratch.chunk whole frames."""
    label = f"conv_forward frames={frames} {layers[0].in_h}x{layers[0].in_w}x{layers[0].in_c}"
    layers = _check(label, obs, src, w, ys, frames, layers, scratch)
    for f0, n in _chunks(frames, scratch.chunk):
        for i, layer in enumerate(layers):
            x, pic = _layer_input(i, obs, src, ys, layers, f0, n)
            cols = scratch.cols(layer, n)
            conv_im2col(plan, x, pic, layer, n, cols)
            y = ys[i].f32(f0 * layer.out_size, n * layer.out_size)
            matmul_forward(plan, cols, w[i], y, n * layer.places, layer.out_c, layer.patch)
            conv_relu(plan, y, n * layer.out_size)
    return plan


def conv_backward(plan: Plan, obs: Range, src: PictureInput, w: list[Range], ys: list[Range], dys: list[Range],
                  dw: list[Range], frames: int, layers, scratch: ConvScratch):
    """From dys[-1] (the gradient of the last conv output): every dys[i] becomes layer i's pre-activation
    gradient (dys[-1] in place; dys[i−1] overwritten by col2im), dw[i] overwritten. No gradient to the
    picture. ys are conv_forward's outputs for the same obs and w."""
    label = f"conv_backward frames={frames} {layers[0].in_h}x{layers[0].in_w}x{layers[0].in_c}"
    layers = _check(label, obs, src, w, ys, frames, layers, scratch, dys, dw)
    last = layers[-1]
    for f0, n in _chunks(frames, scratch.chunk):
        conv_relu_backward(plan, ys[-1].f32(f0 * last.out_size, n * last.out_size),
                           dys[-1].f32(f0 * last.out_size, n * last.out_size), n * last.out_size)
        for i in reversed(range(len(layers))):
            layer = layers[i]
            x, pic = _layer_input(i, obs, src, ys, layers, f0, n)
            cols = scratch.cols(layer, n)
            dy = dys[i].f32(f0 * layer.out_size, n * layer.out_size)
            conv_im2col(plan, x, pic, layer, n, cols)
            matmul_backward_weight(plan, dy, cols, dw[i], layer.out_c, layer.patch, n * layer.places,
                                   accumulate=f0 > 0)
            if i > 0:
                matmul_backward_input(plan, dy, w[i], cols, n * layer.places, layer.patch, layer.out_c)
                size = layer.in_size
                conv_col2im(plan, cols, layer, n, ys[i - 1].f32(f0 * size, n * size),
                            dys[i - 1].f32(f0 * size, n * size))
    return plan
