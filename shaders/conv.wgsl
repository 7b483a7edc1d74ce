// conv.wgsl — the picture encoder's convolutions around the matmul: im2col, ReLU, the ReLU mask,
// col2im, and the uint8 observation unpack. The products themselves are matmul.wgsl's.
//
// A conv layer (valid padding, no bias): input [frames, in_h, in_w, in_c] (HWC rows), weight
// W [out_c, k, k, in_c] = a matrix [out_c, patch] with patch = k·k·in_c in (ky, kx, c) order,
// output [frames, out_h, out_w, out_c] with out_h = (in_h − k)/s + 1 (floor), places = out_h·out_w.
//
//   conv_im2col          cols[f·places + oy·out_w + ox, (ky·k + kx)·in_c + c] = x[f, oy·s + ky, ox·s + kx, c]
//                        x read from rows of src at row_stride, the picture starting at value `offset`:
//                        packed = 1: src holds uint8 values 4 per u32, little-endian (value v of a row is
//                        byte v%4 of word v/4), x = byte/255; packed = 0: src holds f32 (seen as u32 bits)
//   conv_relu            y = max(y, 0), in place
//   conv_relu_backward   dy = dy·[y > 0], in place (y is the post-ReLU output: y > 0 ⇔ pre > 0)
//   conv_col2im          dx[f, yy, xx, c] = [y[f, yy, xx, c] > 0] · Σ_{oy, ox covering yy, xx}
//                            dcols[f·places + oy·out_w + ox, (yy − oy·s)·k·in_c + (xx − ox·s)·in_c + c]
//                        a gather: each input element sums its ≤ ceil(k/s)² patch entries, oy then ox
//                        ascending (a fixed order, no atomics); y is the layer's input (the previous
//                        layer's post-ReLU output), so dx is already that layer's pre-activation grad
//   obs_unpack           out[f, j] = byte j of packed row f / divisor, j < count (divisor 255 or 1)
//
// Shapes: src [frames, row_stride] (u32 words when packed, else f32); cols, dcols [frames·places, patch];
//   y, dy [frames, out_size] (conv_relu*) or [frames, in_size] (conv_col2im, with dx); out [frames, ld_out].
//   frames here is one chunk of whole frames (the launcher offsets every range to the chunk).
// Bindings: src, dcols, y, dy, cols, out, and src4, dcols4, y4, dy4, cols4: the same ranges seen as vec4s;
//   a dispatch binds the one view of each range its path reads (wide or not), the other is left empty, as
//   WebGPU forbids a writable binding that overlaps another. src and dcols are read-only; y is writable
//   although conv_relu_backward and conv_col2im only read it: conv_relu writes it in place, and callers
//   may keep y and dy in one buffer, which WebGPU allows only if both bindings are writable (a buffer is
//   bound either read-only or writable in one dispatch) and their ranges 256 bytes apart; Params.
// wide = 1 (the launcher sets it where offsets, strides and sizes are multiples of 4 floats): 4 values
//   per load and store. lavapipe loads storage lane by lane, at the same cost for one float or four,
//   so this is 3–4× fewer memory operations. Packed uint8 pictures take it at any byte alignment:
//   the 4 bytes of an output vec4 are shifted out of 2 neighbouring words.
// Dispatch: one invocation per unit of work, 64-invocation workgroups, grid (x, y) with x ≤ 32768 and
//   idx = gid.x + gid.y·x·64:
//   conv_im2col          one invocation per (patch row, ky, piece): copies `piece` of the k·in_c contiguous
//                        values of a kernel row (all of them unless the launcher splits a row into
//                        `pieces` to keep enough invocations in flight)
//   conv_relu(_backward) one invocation per element (per 4 when wide)
//   conv_col2im          one invocation per input element (per 4 channels when wide), ≤ ceil(k/s)² loads
//   obs_unpack           one invocation per output value

struct Params {
    total: u32,                       // invocations that own work
    frames: u32,
    in_h: u32, in_w: u32, in_c: u32,
    out_h: u32, out_w: u32,
    kernel: u32, stride: u32,
    places: u32, patch_len: u32,      // patch_len: k·k·in_c ("patch" is reserved in WGSL)
    packed: u32,                      // conv_im2col: 1 = uint8 4 per u32 (÷255), 0 = f32
    row_stride: u32,                  // src row stride (u32 words when packed, else floats)
    offset: u32,                      // index of the picture's first value within a src row
    count: u32, ld_out: u32,          // obs_unpack
    divisor: f32,                     // obs_unpack: 255 (a picture env's features) or 1 (raw uint8 values)
    piece: u32, pieces: u32,          // conv_im2col: values per invocation, invocations per kernel row
    wide: u32,                        // 1: vec4 loads and stores (see above)
    src_off: u32, dcols_off: u32, y_off: u32, dy_off: u32, cols_off: u32, out_off: u32,
    src4_off: u32, dcols4_off: u32, y4_off: u32, dy4_off: u32, cols4_off: u32,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> dcols: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> cols: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> dcols4: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> y4: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> dy4: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> cols4: array<vec4<f32>>;
@group(0) @binding(11) var<uniform> p: Params;

override WG: u32 = 64u;

fn flat_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// value v (0-based, in values) of src row f: a byte of a packed word ÷ 255, or an f32
fn src_value(f: u32, v: u32) -> f32 {
    if (p.packed != 0u) {
        let word = src[p.src_off + f * p.row_stride + v / 4u];
        return f32((word >> (8u * (v % 4u))) & 0xffu) / 255.0;
    }
    return bitcast<f32>(src[p.src_off + f * p.row_stride + v]);
}

fn unpack_bytes(b: u32) -> vec4<f32> {
    return vec4<f32>(f32(b & 0xffu), f32((b >> 8u) & 0xffu), f32((b >> 16u) & 0xffu), f32(b >> 24u)) / 255.0;
}

@compute @workgroup_size(WG, 1, 1)
fn conv_im2col(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_index(gid, nwg);
    if (idx >= p.total) { return; }
    let k = p.kernel;
    let part = idx % p.pieces;
    let row = idx / p.pieces / k;      // patch row: f·places + oy·out_w + ox
    let ky = (idx / p.pieces) % k;
    let f = row / p.places;
    let place = row % p.places;
    let oy = place / p.out_w;
    let ox = place % p.out_w;
    let seg = k * p.in_c;              // kx, c contiguous in the input row and in the patch
    let v0 = p.offset + ((oy * p.stride + ky) * p.in_w + ox * p.stride) * p.in_c;
    let c0 = row * p.patch_len + ky * seg;
    let j0 = part * p.piece;
    let end = min(seg, j0 + p.piece);
    if (p.wide == 0u) {
        for (var j = j0; j < end; j++) {
            cols[p.cols_off + c0 + j] = src_value(f, v0 + j);
        }
    } else if (p.packed != 0u) {
        // 4 values = the bytes at v..v+3 of the row: one word when v is word-aligned, else the high
        // bytes of one word and the low bytes of the next (kept for the next 4)
        let v = v0 + j0;
        let sh = 8u * (v % 4u);
        var w = p.src_off + f * p.row_stride + v / 4u;
        var lo = src[w];
        for (var j = j0; j < end; j += 4u) {
            var b = lo;
            if (sh != 0u) {
                let hi = src[w + 1u];
                b = (lo >> sh) | (hi << (32u - sh));
                lo = hi;
            } else if (j + 4u < end) {
                lo = src[w + 1u];
            }
            w += 1u;
            cols4[(p.cols4_off + c0 + j) / 4u] = unpack_bytes(b);
        }
    } else {
        let s0 = p.src4_off + f * p.row_stride + v0;
        for (var j = j0; j < end; j += 4u) {
            cols4[(p.cols4_off + c0 + j) / 4u] = bitcast<vec4<f32>>(src4[(s0 + j) / 4u]);
        }
    }
}

@compute @workgroup_size(WG, 1, 1)
fn conv_relu(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_index(gid, nwg);
    if (idx >= p.total) { return; }
    if (p.wide != 0u) {
        let i = p.y4_off / 4u + idx;
        y4[i] = max(y4[i], vec4<f32>(0.0));
    } else {
        let i = p.y_off + idx;
        y[i] = max(y[i], 0.0);
    }
}

@compute @workgroup_size(WG, 1, 1)
fn conv_relu_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_index(gid, nwg);
    if (idx >= p.total) { return; }
    if (p.wide != 0u) {
        let i = p.dy4_off / 4u + idx;
        dy4[i] = select(vec4<f32>(0.0), dy4[i], y4[p.y4_off / 4u + idx] > vec4<f32>(0.0));
    } else {
        let i = p.dy_off + idx;
        dy[i] = select(0.0, dy[i], y[p.y_off + idx] > 0.0);
    }
}

@compute @workgroup_size(WG, 1, 1)
fn conv_col2im(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_index(gid, nwg);
    if (idx >= p.total) { return; }
    let lanes = select(1u, 4u, p.wide != 0u);  // channels per invocation
    let e0 = idx * lanes;                      // first input element (f, yy, xx, c) of this invocation
    let in_size = p.in_h * p.in_w * p.in_c;
    let f = e0 / in_size;
    let e = e0 % in_size;
    let c = e % p.in_c;
    let xx = (e / p.in_c) % p.in_w;
    let yy = e / (p.in_c * p.in_w);
    let k = p.kernel;
    let s = p.stride;
    // outputs whose window covers (yy, xx): oy·s ≤ yy < oy·s + k, clamped to the output
    let oy_lo = select(0u, (yy + 1u - k + s - 1u) / s, yy + 1u > k);
    let oy_hi = min(yy / s, p.out_h - 1u);
    let ox_lo = select(0u, (xx + 1u - k + s - 1u) / s, xx + 1u > k);
    let ox_hi = min(xx / s, p.out_w - 1u);
    if (p.wide != 0u) {
        var acc = vec4<f32>(0.0);
        for (var oy = oy_lo; oy <= oy_hi; oy++) {
            for (var ox = ox_lo; ox <= ox_hi; ox++) {
                let row = f * p.places + oy * p.out_w + ox;
                let col = ((yy - oy * s) * k + (xx - ox * s)) * p.in_c + c;
                acc += dcols4[(p.dcols4_off + row * p.patch_len + col) / 4u];
            }
        }
        dy4[p.dy4_off / 4u + idx] = select(vec4<f32>(0.0), acc, y4[p.y4_off / 4u + idx] > vec4<f32>(0.0));
        return;
    }
    var acc = 0.0;
    for (var oy = oy_lo; oy <= oy_hi; oy++) {
        for (var ox = ox_lo; ox <= ox_hi; ox++) {
            let row = f * p.places + oy * p.out_w + ox;
            let col = ((yy - oy * s) * k + (xx - ox * s)) * p.in_c + c;
            acc += dcols[p.dcols_off + row * p.patch_len + col];
        }
    }
    dy[p.dy_off + idx] = select(0.0, acc, y[p.y_off + idx] > 0.0);
}

@compute @workgroup_size(WG, 1, 1)
fn obs_unpack(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = flat_index(gid, nwg);
    if (idx >= p.total) { return; }
    let f = idx / p.count;
    let j = idx % p.count;
    let word = src[p.src_off + f * p.row_stride + j / 4u];
    out[p.out_off + f * p.ld_out + j] = f32((word >> (8u * (j % 4u))) & 0xffu) / p.divisor;
}
