// matmul.wgsl — the three bias-free products of a linear layer y = x·Wᵀ (W row-major [out, in]),
// on sub-ranges of flat buffers, optionally batched and split along K, with an epilogue
//     Y = alpha·(product) + beta·Z        (beta = 0: plain store; Z = Y, beta = 1: accumulate)
//
//   matmul_forward          Y[M,N] = Σ_k A[m,k]·B[n,k]    y  = x·Wᵀ   A = x [M,K],  B = W  [N,K]
//   matmul_backward_input   Y[M,N] = Σ_k A[m,k]·B[k,n]    dx = dy·W   A = dy [M,K], B = W  [K,N]
//   matmul_backward_weight  Y[M,N] = Σ_k A[k,m]·B[k,n]    dW = dyᵀ·x  A = dy [K,M], B = x  [K,N]
//
// Shapes: M, N output rows/cols, K the reduced dimension. Every operand has an element offset
// (*_off), a row stride (ld*) and a batch stride (*_bs). tr = 1 stores Y transposed (y[n·ldy + m]).
// Split-K (splits > 1): split s of the product covers k in [s·kc, min(K, (s+1)·kc)) and stores its raw
// partial sums to part[((s·batch + bt)·M + m)·N + n]; matmul_splitk_reduce then adds the splits in the
// order s = 0, 1, … and applies the epilogue. Same splits → same result bit for bit, run to run.
//
// Bindings: a, b (operands as f32), z (epilogue input), a4, b4 (the same operands seen as vec4, for
// VEC4 = 1), all read-only (a = b, Muon's Gram products, and z = a are allowed), then y (output) and
// part (split-K partial sums), writable, then Params. WebGPU forbids a writable binding overlapping
// another binding of its buffer, and a buffer bound both read-only and writable in one dispatch: so
// an accumulating product (Z = Y) binds no z and is built with Z_IS_Y = 1 (epilogue.wgsl), reading Z
// through y, and no operand may share a buffer with y (the runtime refuses such a dispatch).
//
// Needs no optional feature (the lavapipe-shaped subgroup kernels live in matmul_subgroup.wgsl).
// Entry points per product (trainer/kernels/matmul.py declares the variants; one is picked per shape):
//   *_ref    one output per invocation, workgroup WG_X×WG_Y (x → n, y → m), grid (ceil(N/WG_X),
//            ceil(M/WG_Y), batch): the obviously correct version.
//   *_tile   register blocks for 32/64-wide GPUs: workgroup 8×8 = 64 invocations, each computing a
//            (4·BR)×4 block (BR = 1: 4×4, "tile4x4"; BR = 2: 8×4, "tile8x4") of Y held in mat4x4
//            registers, 4 values of k per loop step; VEC4 = 1 loads vec4s along each operand's
//            contiguous dimension (offsets and strides multiples of 4, rows holding whole vec4s: the
//            launcher checks), VEC4 = 0 loads scalars (any offset/stride, e.g. the encoder's D = 413).
//            Grid (ceil(N/32), ceil(M/(32·BR)), batch·splits).
//   *_wgmem  workgroup-memory tiles ("wgmem"): 16×16 = 256 invocations share 64×16 tiles of A and B
//            staged in workgroup memory, 16 values of k per stage; each invocation computes a 4×4 block,
//            a workgroup 64×64 outputs. Scalar global loads (any offset/stride), vec4 reads of the tiles.
//            Grid (ceil(N/64), ceil(M/64), batch·splits).
//   matmul_splitk_reduce  one invocation per output: Σ_s part[s] in order, then the epilogue.
//            Grid (x, y, batch) with x·y·64 ≥ M·N (x ≤ 32768).
// Edges: rows/columns past M/N are clamped to valid ones (sums never stored), values of k past the end
// of a split are zeroed on both operands (so even a non-finite value past K adds nothing).
// Loops stay short: lavapipe stops an invocation silently after 65,535 loop iterations in total
// (the launcher checks the longest loop).

struct Params {
    M: u32, N: u32, K: u32,
    a_off: u32, b_off: u32, y_off: u32, z_off: u32, a4_off: u32, b4_off: u32, part_off: u32,
    lda: u32, ldb: u32, ldy: u32, ldz: u32,
    a_bs: u32, b_bs: u32, y_bs: u32, z_bs: u32,
    alpha: f32, beta: f32,
    tr: u32,      // 1: Y stored transposed
    batch: u32,   // products in the batch (grid z = batch·splits for the tile and wgmem kernels)
    splits: u32,  // 1: store Y with the epilogue; > 1: store raw partial sums to part
    kc: u32,      // K per split (a multiple of 4; K when splits = 1)
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> z: array<f32>;
@group(0) @binding(4) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b4: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

override WG_X: u32 = 16u;  // *_ref workgroup
override WG_Y: u32 = 16u;
override BR: u32 = 1u;     // *_tile: row groups of 4 per invocation (1: 4×4 block, 2: 8×4)
override VEC4: u32 = 0u;   // *_tile: 1 = vec4 loads

// the product an entry point computes (the tile and wgmem kernels each have one body for all three)
const FORWARD: u32 = 0u;
const BACKWARD_INPUT: u32 = 1u;
const BACKWARD_WEIGHT: u32 = 2u;

#include "epilogue.wgsl"

// ---------------------------------------------------------------- reference kernels

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_forward_ref(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = gid.x; let m = gid.y; let bt = gid.z;
    if (m >= p.M || n >= p.N) { return; }
    let ia = p.a_off + bt * p.a_bs + m * p.lda;
    let ib = p.b_off + bt * p.b_bs + n * p.ldb;
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) { s += a[ia + k] * b[ib + k]; }
    store(m, n, bt, s);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_input_ref(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = gid.x; let m = gid.y; let bt = gid.z;
    if (m >= p.M || n >= p.N) { return; }
    let ia = p.a_off + bt * p.a_bs + m * p.lda;
    let ib = p.b_off + bt * p.b_bs + n;
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) { s += a[ia + k] * b[ib + k * p.ldb]; }
    store(m, n, bt, s);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_weight_ref(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = gid.x; let m = gid.y; let bt = gid.z;
    if (m >= p.M || n >= p.N) { return; }
    let ia = p.a_off + bt * p.a_bs + m;
    let ib = p.b_off + bt * p.b_bs + n;
    var s = 0.0;
    for (var k = 0u; k < p.K; k++) { s += a[ia + k * p.lda] * b[ib + k * p.ldb]; }
    store(m, n, bt, s);
}

// ---------------------------------------------------------------- split-K bookkeeping

// What the workgroup at grid z works on: batch entry bt, split s, k in [k0, k1).
struct Job { bt: u32, s: u32, k0: u32, k1: u32 }

fn job(z: u32) -> Job {
    let bt = z % p.batch;
    let s = z / p.batch;
    let k0 = s * p.kc;
    return Job(bt, s, k0, min(p.K, k0 + p.kc));
}

// One output of a block: stored with the epilogue, or as a raw partial sum of split j.s.
fn put(m: u32, n: u32, j: Job, v: f32) {
    if (m >= p.M || n >= p.N) { return; }
    if (p.splits > 1u) {
        part[p.part_off + ((j.s * p.batch + j.bt) * p.M + m) * p.N + n] = v;
    } else {
        store(m, n, j.bt, v);
    }
}

// acc[c][r] = Y[m0 + r, n0 + c] (a mat4x4's columns are Y's columns); constant indices keep it in registers
fn put_col(m0: u32, n: u32, j: Job, v: vec4<f32>) {
    put(m0, n, j, v.x); put(m0 + 1u, n, j, v.y); put(m0 + 2u, n, j, v.z); put(m0 + 3u, n, j, v.w);
}

fn put_block(m0: u32, n0: u32, j: Job, acc: mat4x4<f32>) {
    put_col(m0, n0, j, acc[0]); put_col(m0, n0 + 1u, j, acc[1]);
    put_col(m0, n0 + 2u, j, acc[2]); put_col(m0, n0 + 3u, j, acc[3]);
}

@compute @workgroup_size(64, 1, 1)
fn matmul_splitk_reduce(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = gid.y * nw.x * 64u + gid.x;  // m·N + n
    let bt = gid.z;
    let mn = p.M * p.N;
    if (i >= mn) { return; }
    var at = p.part_off + bt * mn + i;
    let stride = p.batch * mn;
    var s = 0.0;
    for (var t = 0u; t < p.splits; t++) {
        s += part[at];
        at += stride;
    }
    store(i / p.N, i % p.N, bt, s);
}

// ---------------------------------------------------------------- register-tile kernels (*_tile)
// Per loop step, 4 values of k: the block update is a 4×4 matrix product acc += X·Y with
// X[kk][r] = A-value (row m0 + r, k + kk) and Y[c][kk] = B-value (k + kk, column n0 + c); each operand's
// 4×4 piece is loaded as 4 runs of 4 consecutive floats and transposed where its runs go the other way.

fn base_a(bt: u32) -> u32 { return select(p.a_off, p.a4_off, VEC4 != 0u) + bt * p.a_bs; }
fn base_b(bt: u32) -> u32 { return select(p.b_off, p.b4_off, VEC4 != 0u) + bt * p.b_bs; }

// 4 consecutive floats from element i (VEC4: i is a multiple of 4)
fn run_a(i: u32) -> vec4<f32> {
    if (VEC4 != 0u) { return a4[i >> 2u]; }
    return vec4(a[i], a[i + 1u], a[i + 2u], a[i + 3u]);
}
fn run_b(i: u32) -> vec4<f32> {
    if (VEC4 != 0u) { return b4[i >> 2u]; }
    return vec4(b[i], b[i + 1u], b[i + 2u], b[i + 3u]);
}

// the last step of a split: only the first `valid` values of k count (runs along k)
fn keep(v: vec4<f32>, valid: u32) -> vec4<f32> {
    return select(vec4(0.0), v, vec4(0u, 1u, 2u, 3u) < vec4(valid));
}
// runs across k (one row of the operand per k): rows past the split are clamped (a valid read) and zeroed
fn row_at(k: u32, kk: u32, valid: u32) -> u32 { return select(k, k + kk, kk < valid); }
fn keep_row(v: vec4<f32>, kk: u32, valid: u32) -> vec4<f32> { return select(vec4(0.0), v, kk < valid); }

// A-piece of forward/backward_input (A rows run along k): X = transpose(rows)
fn a_rows(r: vec4<u32>, k: u32, valid: u32) -> mat4x4<f32> {
    return transpose(mat4x4(keep(run_a(r.x + k), valid), keep(run_a(r.y + k), valid),
                            keep(run_a(r.z + k), valid), keep(run_a(r.w + k), valid)));
}
// A-piece of backward_weight (A rows run along m, one row per k): X = rows
fn a_cols(base: u32, m0: u32, k: u32, valid: u32) -> mat4x4<f32> {
    return mat4x4(keep_row(run_a(base + row_at(k, 0u, valid) * p.lda + m0), 0u, valid),
                  keep_row(run_a(base + row_at(k, 1u, valid) * p.lda + m0), 1u, valid),
                  keep_row(run_a(base + row_at(k, 2u, valid) * p.lda + m0), 2u, valid),
                  keep_row(run_a(base + row_at(k, 3u, valid) * p.lda + m0), 3u, valid));
}
// B-piece of forward (B rows run along k): Y = rows
fn b_rows(r: vec4<u32>, k: u32, valid: u32) -> mat4x4<f32> {
    return mat4x4(keep(run_b(r.x + k), valid), keep(run_b(r.y + k), valid),
                  keep(run_b(r.z + k), valid), keep(run_b(r.w + k), valid));
}
// B-piece of backward_input/backward_weight (B rows run along n, one row per k): Y = transpose(rows)
fn b_cols(base: u32, n0: u32, k: u32, valid: u32) -> mat4x4<f32> {
    return transpose(mat4x4(keep_row(run_b(base + row_at(k, 0u, valid) * p.ldb + n0), 0u, valid),
                            keep_row(run_b(base + row_at(k, 1u, valid) * p.ldb + n0), 1u, valid),
                            keep_row(run_b(base + row_at(k, 2u, valid) * p.ldb + n0), 2u, valid),
                            keep_row(run_b(base + row_at(k, 3u, valid) * p.ldb + n0), 3u, valid)));
}

// element indices of rows r0..r0+3 (clamped to count-1) of a row-major operand
fn rows4(base: u32, r0: u32, count: u32, ld: u32) -> vec4<u32> {
    let c = count - 1u;
    return vec4(base + min(r0, c) * ld, base + min(r0 + 1u, c) * ld, base + min(r0 + 2u, c) * ld,
                base + min(r0 + 3u, c) * ld);
}

// the first column of a 4-wide run across a row, moved to 0 when it lies wholly past the edge
// (its sums are never stored; a run that straddles the edge reads the row's vec4 padding)
fn run_start(c0: u32, count: u32) -> u32 { return select(0u, c0, c0 < count); }

// The three products share one body (form = FORWARD, BACKWARD_INPUT or BACKWARD_WEIGHT, a constant in
// each entry point, so the branches on it fold away). Where this invocation's pieces start:
// ra0/ra1 = rows m0.. and m0+4.. of A (forward, backward_input: A rows run along k), ma0/ma1 = columns
// m0 and m0+4 of A (backward_weight: A rows run along m); rb = rows n0.. of B (forward: B rows run
// along k), nb = column n0 of B (backward_*: B rows run along n).
struct TileOperands { ra0: vec4<u32>, ra1: vec4<u32>, ab: u32, ma0: u32, ma1: u32, rb: vec4<u32>, bb: u32, nb: u32 }

fn tile_operands(form: u32, bt: u32, m0: u32, n0: u32) -> TileOperands {
    let ab = base_a(bt); let bb = base_b(bt);
    return TileOperands(rows4(ab, m0, p.M, p.lda), rows4(ab, m0 + 4u, p.M, p.lda), ab, run_start(m0, p.M),
                        run_start(m0 + 4u, p.M), rows4(bb, n0, p.N, p.ldb), bb, run_start(n0, p.N));
}

// A-piece of row group g (0: rows m0.., 1: m0+4..) and the B-piece at k, `valid` values of k inside the split
fn a_piece(form: u32, t: TileOperands, g: u32, k: u32, valid: u32) -> mat4x4<f32> {
    if (form == BACKWARD_WEIGHT) { return a_cols(t.ab, select(t.ma0, t.ma1, g == 1u), k, valid); }
    return a_rows(select(t.ra0, t.ra1, g == 1u), k, valid);
}
fn b_piece(form: u32, t: TileOperands, k: u32, valid: u32) -> mat4x4<f32> {
    if (form == FORWARD) { return b_rows(t.rb, k, valid); }
    return b_cols(t.bb, t.nb, k, valid);
}

// one step of 4 values of k: acc0 (rows m0..) and, for BR = 2, acc1 (rows m0+4..) += X·Y
fn tile_step(form: u32, t: TileOperands, k: u32, valid: u32, acc0: ptr<function, mat4x4<f32>>,
             acc1: ptr<function, mat4x4<f32>>) {
    let y4 = b_piece(form, t, k, valid);
    *acc0 += a_piece(form, t, 0u, k, valid) * y4;
    if (BR > 1u) { *acc1 += a_piece(form, t, 1u, k, valid) * y4; }
}

// The steps of a split: whole steps with valid = 4 (a constant, so keep/keep_row fold away), then the
// tail step (fewer than 4 values of k left) through the same tile_step.
fn tile(form: u32, wg: vec3<u32>, li: vec3<u32>) {
    let j = job(wg.z);
    let n0 = (wg.x * 8u + li.x) * 4u;
    let m0 = (wg.y * 8u + li.y) * 4u * BR;
    let t = tile_operands(form, j.bt, m0, n0);
    var acc0 = mat4x4<f32>(); var acc1 = mat4x4<f32>();
    let kfull = j.k0 + (j.k1 - j.k0) / 4u * 4u;
    for (var k = j.k0; k < kfull; k += 4u) { tile_step(form, t, k, 4u, &acc0, &acc1); }
    if (kfull < j.k1) { tile_step(form, t, kfull, j.k1 - kfull, &acc0, &acc1); }
    put_block(m0, n0, j, acc0);
    if (BR > 1u) { put_block(m0 + 4u, n0, j, acc1); }
}

@compute @workgroup_size(8, 8, 1)
fn matmul_forward_tile(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    tile(FORWARD, wg, li);
}

@compute @workgroup_size(8, 8, 1)
fn matmul_backward_input_tile(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    tile(BACKWARD_INPUT, wg, li);
}

@compute @workgroup_size(8, 8, 1)
fn matmul_backward_weight_tile(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    tile(BACKWARD_WEIGHT, wg, li);
}

// ---------------------------------------------------------------- workgroup-memory kernels (*_wgmem)
// Stage by stage, 16 values of k each: invocation t loads 4 values of A (rows 4g..4g+3 of the workgroup's
// 64, at k + kk) and 4 of B into workgroup memory as one vec4 each, sa[kk·16 + g] and sb[kk·16 + g],
// with (kk, g) chosen so that neighbouring invocations read neighbouring addresses; then every
// invocation adds 16 rank-1 updates to its 4×4 block, one vec4 of each tile per update.

var<workgroup> sa: array<vec4<f32>, 256>;
var<workgroup> sb: array<vec4<f32>, 256>;

// A-value (row m, k) and B-value (k, column n) of product `form`, zero past the split
fn a_at(form: u32, base: u32, m: u32, k: u32, k1: u32) -> f32 {
    let mm = min(m, p.M - 1u); let kk = min(k, k1 - 1u);
    var v: f32;
    if (form == BACKWARD_WEIGHT) { v = a[base + kk * p.lda + mm]; } else { v = a[base + mm * p.lda + kk]; }
    return select(0.0, v, k < k1);
}
fn b_at(form: u32, base: u32, n: u32, k: u32, k1: u32) -> f32 {
    let nn = min(n, p.N - 1u); let kk = min(k, k1 - 1u);
    var v: f32;
    if (form == FORWARD) { v = b[base + nn * p.ldb + kk]; } else { v = b[base + kk * p.ldb + nn]; }
    return select(0.0, v, k < k1);
}
fn a4_at(form: u32, base: u32, m: u32, k: u32, k1: u32) -> vec4<f32> {
    return vec4(a_at(form, base, m, k, k1), a_at(form, base, m + 1u, k, k1), a_at(form, base, m + 2u, k, k1),
                a_at(form, base, m + 3u, k, k1));
}
fn b4_at(form: u32, base: u32, n: u32, k: u32, k1: u32) -> vec4<f32> {
    return vec4(b_at(form, base, n, k, k1), b_at(form, base, n + 1u, k, k1), b_at(form, base, n + 2u, k, k1),
                b_at(form, base, n + 3u, k, k1));
}

fn wgmem(form: u32, wg: vec3<u32>, li: vec3<u32>) {
    let j = job(wg.z);
    let t = li.y * 16u + li.x;
    let along_k = vec2(t % 16u, t / 16u);    // (kk, g): operands whose rows run along k
    let across_k = vec2(t / 16u, t % 16u);   // operands whose rows run along m or n
    let ea = select(along_k, across_k, form == BACKWARD_WEIGHT);
    let eb = select(across_k, along_k, form == FORWARD);
    let mw = wg.y * 64u; let nw = wg.x * 64u;
    let ab = p.a_off + j.bt * p.a_bs; let bb = p.b_off + j.bt * p.b_bs;
    var acc = mat4x4<f32>();
    for (var k = j.k0; k < j.k1; k += 16u) {
        sa[ea.x * 16u + ea.y] = a4_at(form, ab, mw + 4u * ea.y, k + ea.x, j.k1);
        sb[eb.x * 16u + eb.y] = b4_at(form, bb, nw + 4u * eb.y, k + eb.x, j.k1);
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk++) {
            let x = sa[kk * 16u + li.y];
            let w = sb[kk * 16u + li.x];
            acc += mat4x4(x * w.x, x * w.y, x * w.z, x * w.w);
        }
        workgroupBarrier();
    }
    put_block(mw + 4u * li.y, nw + 4u * li.x, j, acc);
}

@compute @workgroup_size(16, 16, 1)
fn matmul_forward_wgmem(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    wgmem(FORWARD, wg, li);
}

@compute @workgroup_size(16, 16, 1)
fn matmul_backward_input_wgmem(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    wgmem(BACKWARD_INPUT, wg, li);
}

@compute @workgroup_size(16, 16, 1)
fn matmul_backward_weight_wgmem(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    wgmem(BACKWARD_WEIGHT, wg, li);
}
