// matmul_subgroup.wgsl — the lavapipe-shaped kernels of the three linear-layer products (the same
// formulas, shapes, epilogue and bindings as matmul.wgsl, which holds the portable kernels). This file
// is compiled only when the adapter has the optional 'subgroup' feature (and it is not disabled with
// PUFFGPU_DISABLE_FEATURES=subgroup): it uses subgroup built-ins in its entry-point signatures.
//
//   matmul_forward_sg8[_vec4]          Y[M,N] = Σ_k A[m,k]·B[n,k]    y  = x·Wᵀ
//   matmul_backward_input_sg8[_vec4]   Y[M,N] = Σ_k A[m,k]·B[k,n]    dx = dy·W
//   matmul_backward_weight_sg8[_vec4]  Y[M,N] = Σ_k A[k,m]·B[k,n]    dW = dyᵀ·x
//   Y = alpha·(product) + beta·Z; tr = 1 stores Y transposed (y[n·ldy + m]): the forward launcher swaps
//   A and B for narrow outputs (yᵀ = B·Aᵀ).
//
// Shapes: M, N output rows/cols, K the reduced dimension; every operand has an element offset (*_off),
// a row stride (ld*) and a batch stride (*_bs, grid z = batch index).
// Bindings: a, b (operands as f32), z (epilogue input), a4, b4 (the operands seen as vec4, for the
// *_vec4 kernels), read-only; y (output), writable; then Params. Z = Y is Z_IS_Y = 1 (epilogue.wgsl).
// Variants (trainer/kernels/matmul.py): sg8 = scalar loads, any offset/stride (the encoder's D = 413 rows);
// sg8_vec4 = vec4 loads; needs operand offsets and strides that are multiples of 4 and rows holding
// whole vec4s (forward: also K % 4 == 0).
//
// A workgroup is one subgroup of 8 lanes (lavapipe runs 8 invocations per 256-bit SIMD op) computing
// 8·RG rows × 64 columns; each lane keeps 8·RG × 8 outputs in registers (RG Tiles).
// Grid: (ceil(N/64), ceil(M/(8·RG)), batch); RG (override) = 1, 2 or 4 chosen by the launcher.
// Why this shape — measured on lavapipe (Mesa 22.3, LLVM 15): every storage load is done lane by
// lane (~3 ns per vec4 per invocation, scalar loads ~2x that per float; addresses that are equal in
// all lanes are not detected), while a subgroupBroadcast costs ~0.3 ns. So each lane loads only
// what is its own (its columns of B) and the rows of A, which all 8 lanes need, are loaded once —
// one row per lane — and handed around with subgroupBroadcast. An 8×8-per-invocation kernel in
// which every lane loads the same A rows itself spends ~60% of its time in loads (~7 GFLOP/s on one
// thread, against ~13–15 for this shape). Where subgroups are not 8 lanes wide (real GPUs; llvmpipe with
// LP_NATIVE_VECTOR_WIDTH=128) a uniform branch takes a path where each lane loads all rows itself.
// This 8-invocation shape wastes most of a 32/64-wide GPU SIMD: on GPUs the tuner picks matmul.wgsl's
// tile kernels instead.
// Rows/columns past the edge are clamped to valid ones: they compute sums that are never stored,
// which keeps the inner loops branch-free. Tiles are indexed only with constants (helpers and loops of
// constant trip count, unrolled) so that they stay in registers: one dynamic index, even in the final
// store, moves a whole tile to memory and halves the speed.
// Loops stay short: lavapipe stops an invocation silently after 65,535 loop iterations in total
// (the launcher checks K against it).
// The six entry points (three products × scalar/vec4 loads) stay separate, unlike matmul.wgsl's
// one-body tile and wgmem kernels, for register use: each product steps through k its own way
// (forward_step, input_step, weight_step) and each load kind keeps different values live, and written
// out per entry point every tile index is a visible constant, which keeps the tiles in registers.
//
// subgroup_size_probe: y[0] = the subgroup size the adapter runs a 64-invocation workgroup with
// (tools/gpu_report.py prints it; wgpu-py 0.32 does not report the adapter's subgroup sizes).

struct Params {
    M: u32, N: u32, K: u32,
    a_off: u32, b_off: u32, y_off: u32, z_off: u32, a4_off: u32, b4_off: u32,
    lda: u32, ldb: u32, ldy: u32, ldz: u32,
    a_bs: u32, b_bs: u32, y_bs: u32, z_bs: u32,
    alpha: f32, beta: f32,
    tr: u32,  // 1: Y stored transposed (see above)
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> z: array<f32>;
@group(0) @binding(4) var<storage, read> a4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> b4: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> p: Params;

override RG: u32 = 4u;  // row groups of 8 per workgroup (1, 2 or 4)

alias V8 = array<vec4<f32>, 8>;
// A lane's 8×8 output tile is four matrices q0..q3: row i of the tile = (q[i/2][2(i%2)], q[i/2][2(i%2) + 1]),
// i.e. matrix q holds rows 2q and 2q+1, each as two vec4 columns (low and high 4 outputs). Matrices, not an
// array<vec4<f32>, 16>: naga (wgpu 0.32) decorates every array type with an ArrayStride, which SPIR-V forbids
// on a function-scope variable (VUID-StandaloneSpirv-None-10684); a matrix variable carries no layout.
alias M4 = mat4x4<f32>;
alias Rows = array<u32, 8>;

#include "epilogue.wgsl"


// ---------------------------------------------------------------- tile helpers

// A lane's 8 output columns (its share of the subgroup's 64) and row pointers.
alias Cols = array<u32, 8>;

// Element index of the first element of 8 rows r0, r0+s, .. r0+7s (each clamped to count-1), stride ld.
fn rows8(base: u32, r0: u32, s: u32, count: u32, ld: u32) -> Rows {
    let c = count - 1u;
    return Rows(base + min(r0, c) * ld, base + min(r0 + s, c) * ld, base + min(r0 + 2u * s, c) * ld,
                base + min(r0 + 3u * s, c) * ld, base + min(r0 + 4u * s, c) * ld, base + min(r0 + 5u * s, c) * ld,
                base + min(r0 + 6u * s, c) * ld, base + min(r0 + 7u * s, c) * ld);
}

// The 8 columns n, n+8, .. n+56 (forward: lanes interleave so that a subgroup covers 64 columns).
fn cols_step8(n: u32) -> Cols { return Cols(n, n + 8u, n + 16u, n + 24u, n + 32u, n + 40u, n + 48u, n + 56u); }

// The 8 columns q, q+1, q+2, q+3, q+32, .. q+35: two vec4 groups 32 apart (see the product kernels).
fn cols_vec4(q: u32) -> Cols {
    return Cols(q, q + 1u, q + 2u, q + 3u, q + 32u, q + 33u, q + 34u, q + 35u);
}

// Start of a vec4 column group, replaced by group 0 when it lies past the edge (its sums are never stored;
// the row holds whole vec4s up to N rounded up to 4, which the launcher checks).
fn group4(q: u32, count: u32) -> u32 { return select(0u, q, q < count); }

// one vec4 load (element index a multiple of 4)
fn la4(i: u32) -> vec4<f32> { return a4[i >> 2u]; }
fn lb4(i: u32) -> vec4<f32> { return b4[i >> 2u]; }

// Loads of A[row, k..k+3] and B[row, k..k+3] at the end of a row of K elements: indices past K are
// clamped to K-1 (valid reads) and the A side is zeroed there, so the last partial step adds nothing.
fn kmask(k: u32) -> vec4<bool> { return vec4(k, k + 1u, k + 2u, k + 3u) < vec4(p.K); }
fn la_k(i: u32, k: u32) -> vec4<f32> {
    let e = p.K - 1u;
    return select(vec4(0.0), vec4(a[i + k], a[i + min(k + 1u, e)], a[i + min(k + 2u, e)], a[i + min(k + 3u, e)]), kmask(k));
}
fn lb_k(i: u32, k: u32) -> vec4<f32> {
    let e = p.K - 1u;
    return vec4(b[i + min(k, e)], b[i + min(k + 1u, e)], b[i + min(k + 2u, e)], b[i + min(k + 3u, e)]);
}
fn la4_k(i: u32, k: u32) -> vec4<f32> { return select(vec4(0.0), a4[(i + k) >> 2u], kmask(k)); }  // row holds whole vec4s

// 8 rows of an operand at reduced index k (the per-lane loading path and the B tiles)
fn la_8(r: Rows, k: u32) -> V8 {
    return V8(la_k(r[0], k), la_k(r[1], k), la_k(r[2], k), la_k(r[3], k), la_k(r[4], k), la_k(r[5], k), la_k(r[6], k), la_k(r[7], k));
}
fn lb_8(r: Rows, k: u32) -> V8 {
    return V8(lb_k(r[0], k), lb_k(r[1], k), lb_k(r[2], k), lb_k(r[3], k), lb_k(r[4], k), lb_k(r[5], k), lb_k(r[6], k), lb_k(r[7], k));
}
fn la4k_8(r: Rows, k: u32) -> V8 {
    return V8(la4_k(r[0], k), la4_k(r[1], k), la4_k(r[2], k), la4_k(r[3], k), la4_k(r[4], k), la4_k(r[5], k), la4_k(r[6], k), la4_k(r[7], k));
}
fn la4_8(r: Rows, k: u32) -> V8 {
    return V8(la4(r[0] + k), la4(r[1] + k), la4(r[2] + k), la4(r[3] + k), la4(r[4] + k), la4(r[5] + k), la4(r[6] + k), la4(r[7] + k));
}
fn lb4_8(r: Rows, k: u32) -> V8 {
    return V8(lb4(r[0] + k), lb4(r[1] + k), lb4(r[2] + k), lb4(r[3] + k), lb4(r[4] + k), lb4(r[5] + k), lb4(r[6] + k), lb4(r[7] + k));
}


// Every lane gets lane l's v, for l = 0..7 (a register shuffle; a memory load costs ~10x more on lavapipe).
fn bcast8(v: vec4<f32>) -> V8 {
    return V8(subgroupBroadcast(v, 0u), subgroupBroadcast(v, 1u), subgroupBroadcast(v, 2u), subgroupBroadcast(v, 3u),
              subgroupBroadcast(v, 4u), subgroupBroadcast(v, 5u), subgroupBroadcast(v, 6u), subgroupBroadcast(v, 7u));
}

// B[k .. k+3 (clamped to K-1), the lane's 8 columns cc] for the scalar input-gradient kernel: w[2r], w[2r+1]
fn input_rows(bb: u32, k: u32, cc: Cols) -> V8 {
    let i0 = bb + min(k, p.K - 1u) * p.ldb; let i1 = bb + min(k + 1u, p.K - 1u) * p.ldb;
    let i2 = bb + min(k + 2u, p.K - 1u) * p.ldb; let i3 = bb + min(k + 3u, p.K - 1u) * p.ldb;
    return V8(lb_lo(i0, cc), lb_hi(i0, cc), lb_lo(i1, cc), lb_hi(i1, cc),
              lb_lo(i2, cc), lb_hi(i2, cc), lb_lo(i3, cc), lb_hi(i3, cc));
}

// B[row at i, the lane's columns cc[0..3] (lo) or cc[4..7] (hi)] (scalar loads; cc already clamped)
fn lb_lo(i: u32, cc: Cols) -> vec4<f32> { return vec4(b[i + cc[0]], b[i + cc[1]], b[i + cc[2]], b[i + cc[3]]); }
fn lb_hi(i: u32, cc: Cols) -> vec4<f32> { return vec4(b[i + cc[4]], b[i + cc[5]], b[i + cc[6]], b[i + cc[7]]); }

// The weight gradient's A[k, m0 .. m0+31] as 8 vec4s at row start ia: shared through the subgroup
// (each lane loads its 4 rows mr) or, without 8-lane subgroups, loaded by each lane (rows clamped to em).
// Returned as a value built with constant indices: no function-scope array (see M4).
fn weight_rows(sg8: bool, ia: u32, mr: vec4<u32>, m0: u32, em: u32) -> V8 {
    if (sg8) { return bcast8(vec4(a[ia + mr.x], a[ia + mr.y], a[ia + mr.z], a[ia + mr.w])); }
    return V8(la_m4(ia, m0, em), la_m4(ia, m0 + 4u, em), la_m4(ia, m0 + 8u, em), la_m4(ia, m0 + 12u, em),
              la_m4(ia, m0 + 16u, em), la_m4(ia, m0 + 20u, em), la_m4(ia, m0 + 24u, em), la_m4(ia, m0 + 28u, em));
}
fn la_m4(ia: u32, m: u32, em: u32) -> vec4<f32> {
    return vec4(a[ia + min(m, em)], a[ia + min(m + 1u, em)], a[ia + min(m + 2u, em)], a[ia + min(m + 3u, em)]);
}
// the same with vec4 loads (rows hold whole vec4s; ga = the lane's group)
fn weight_rows4(sg8: bool, ia: u32, ga: u32, m0: u32) -> V8 {
    if (sg8) { return bcast8(la4(ia + ga)); }
    return V8(la4(ia + group4(m0, p.M)), la4(ia + group4(m0 + 4u, p.M)), la4(ia + group4(m0 + 8u, p.M)),
              la4(ia + group4(m0 + 12u, p.M)), la4(ia + group4(m0 + 16u, p.M)), la4(ia + group4(m0 + 20u, p.M)),
              la4(ia + group4(m0 + 24u, p.M)), la4(ia + group4(m0 + 28u, p.M)));
}

fn dots(x: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>, w3: vec4<f32>) -> vec4<f32> {
    return vec4(dot(x, w0), dot(x, w1), dot(x, w2), dot(x, w3));
}

fn store_row(m: u32, cols: Cols, bt: u32, lo: vec4<f32>, hi: vec4<f32>) {
    if (m >= p.M) { return; }
    if (cols[0] < p.N) { store(m, cols[0], bt, lo.x); }
    if (cols[1] < p.N) { store(m, cols[1], bt, lo.y); }
    if (cols[2] < p.N) { store(m, cols[2], bt, lo.z); }
    if (cols[3] < p.N) { store(m, cols[3], bt, lo.w); }
    if (cols[4] < p.N) { store(m, cols[4], bt, hi.x); }
    if (cols[5] < p.N) { store(m, cols[5], bt, hi.y); }
    if (cols[6] < p.N) { store(m, cols[6], bt, hi.z); }
    if (cols[7] < p.N) { store(m, cols[7], bt, hi.w); }
}

// rows m0..m0+7 of the tile; row i of the tile = (t[2i], t[2i+1]), in the order of `cols`
fn store_tile(m0: u32, cols: Cols, bt: u32, q0: M4, q1: M4, q2: M4, q3: M4) {
    store_row(m0 + 0u, cols, bt, q0[0], q0[1]);   store_row(m0 + 1u, cols, bt, q0[2], q0[3]);
    store_row(m0 + 2u, cols, bt, q1[0], q1[1]);   store_row(m0 + 3u, cols, bt, q1[2], q1[3]);
    store_row(m0 + 4u, cols, bt, q2[0], q2[1]);   store_row(m0 + 5u, cols, bt, q2[2], q2[3]);
    store_row(m0 + 6u, cols, bt, q3[0], q3[1]); store_row(m0 + 7u, cols, bt, q3[2], q3[3]);
}

// the RG tiles of a lane (t0 = a0..a3, t1 = b0..b3, t2 = c0..c3, t3 = d0..d3)
fn store_tiles(m0: u32, cols: Cols, bt: u32, a0: M4, a1: M4, a2: M4, a3: M4, b0: M4, b1: M4, b2: M4, b3: M4,
               c0: M4, c1: M4, c2: M4, c3: M4, d0: M4, d1: M4, d2: M4, d3: M4) {
    store_tile(m0, cols, bt, a0, a1, a2, a3);
    if (RG > 1u) { store_tile(m0 + 8u, cols, bt, b0, b1, b2, b3); }
    if (RG > 2u) { store_tile(m0 + 16u, cols, bt, c0, c1, c2, c3); store_tile(m0 + 24u, cols, bt, d0, d1, d2, d3); }
}

// forward step over 4 values of k: x[i] = A[m0+i, k..k+3], w[j] = B[col j, k..k+3]
fn forward_step(q0: ptr<function, M4>, q1: ptr<function, M4>, q2: ptr<function, M4>, q3: ptr<function, M4>, 
                x: V8, w: V8) {
    (*q0)[0] += dots(x[0], w[0], w[1], w[2], w[3]);  (*q0)[1] += dots(x[0], w[4], w[5], w[6], w[7]);
    (*q0)[2] += dots(x[1], w[0], w[1], w[2], w[3]);  (*q0)[3] += dots(x[1], w[4], w[5], w[6], w[7]);
    (*q1)[0] += dots(x[2], w[0], w[1], w[2], w[3]);  (*q1)[1] += dots(x[2], w[4], w[5], w[6], w[7]);
    (*q1)[2] += dots(x[3], w[0], w[1], w[2], w[3]);  (*q1)[3] += dots(x[3], w[4], w[5], w[6], w[7]);
    (*q2)[0] += dots(x[4], w[0], w[1], w[2], w[3]);  (*q2)[1] += dots(x[4], w[4], w[5], w[6], w[7]);
    (*q2)[2] += dots(x[5], w[0], w[1], w[2], w[3]); (*q2)[3] += dots(x[5], w[4], w[5], w[6], w[7]);
    (*q3)[0] += dots(x[6], w[0], w[1], w[2], w[3]); (*q3)[1] += dots(x[6], w[4], w[5], w[6], w[7]);
    (*q3)[2] += dots(x[7], w[0], w[1], w[2], w[3]); (*q3)[3] += dots(x[7], w[4], w[5], w[6], w[7]);
}

// input-gradient step over 4 values of k: x[i] = A[m0+i, k..k+3]; w[2r], w[2r+1] = B[k+r, the lane's 8 columns]
fn input_step(q0: ptr<function, M4>, q1: ptr<function, M4>, q2: ptr<function, M4>, q3: ptr<function, M4>, 
              x: V8, w: V8) {
    (*q0)[0] += x[0].x * w[0] + x[0].y * w[2] + x[0].z * w[4] + x[0].w * w[6];
    (*q0)[1] += x[0].x * w[1] + x[0].y * w[3] + x[0].z * w[5] + x[0].w * w[7];
    (*q0)[2] += x[1].x * w[0] + x[1].y * w[2] + x[1].z * w[4] + x[1].w * w[6];
    (*q0)[3] += x[1].x * w[1] + x[1].y * w[3] + x[1].z * w[5] + x[1].w * w[7];
    (*q1)[0] += x[2].x * w[0] + x[2].y * w[2] + x[2].z * w[4] + x[2].w * w[6];
    (*q1)[1] += x[2].x * w[1] + x[2].y * w[3] + x[2].z * w[5] + x[2].w * w[7];
    (*q1)[2] += x[3].x * w[0] + x[3].y * w[2] + x[3].z * w[4] + x[3].w * w[6];
    (*q1)[3] += x[3].x * w[1] + x[3].y * w[3] + x[3].z * w[5] + x[3].w * w[7];
    (*q2)[0] += x[4].x * w[0] + x[4].y * w[2] + x[4].z * w[4] + x[4].w * w[6];
    (*q2)[1] += x[4].x * w[1] + x[4].y * w[3] + x[4].z * w[5] + x[4].w * w[7];
    (*q2)[2] += x[5].x * w[0] + x[5].y * w[2] + x[5].z * w[4] + x[5].w * w[6];
    (*q2)[3] += x[5].x * w[1] + x[5].y * w[3] + x[5].z * w[5] + x[5].w * w[7];
    (*q3)[0] += x[6].x * w[0] + x[6].y * w[2] + x[6].z * w[4] + x[6].w * w[6];
    (*q3)[1] += x[6].x * w[1] + x[6].y * w[3] + x[6].z * w[5] + x[6].w * w[7];
    (*q3)[2] += x[7].x * w[0] + x[7].y * w[2] + x[7].z * w[4] + x[7].w * w[6];
    (*q3)[3] += x[7].x * w[1] + x[7].y * w[3] + x[7].z * w[5] + x[7].w * w[7];
}

// weight-gradient step for one k: outer product of A[k, m0..m0+7] = (x0, x1) and B[k, the lane's 8 columns]
fn weight_step(q0: ptr<function, M4>, q1: ptr<function, M4>, q2: ptr<function, M4>, q3: ptr<function, M4>, 
               x0: vec4<f32>, x1: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>) {
    (*q0)[0] += x0.x * w0;  (*q0)[1] += x0.x * w1;  (*q0)[2] += x0.y * w0;  (*q0)[3] += x0.y * w1;
    (*q1)[0] += x0.z * w0;  (*q1)[1] += x0.z * w1;  (*q1)[2] += x0.w * w0;  (*q1)[3] += x0.w * w1;
    (*q2)[0] += x1.x * w0;  (*q2)[1] += x1.x * w1;  (*q2)[2] += x1.y * w0; (*q2)[3] += x1.y * w1;
    (*q3)[0] += x1.z * w0; (*q3)[1] += x1.z * w1; (*q3)[2] += x1.w * w0; (*q3)[3] += x1.w * w1;
}

// ---------------------------------------------------------------- sg8: forward
// Lane c owns columns n = 64·wg.x + c + 8j (j = 0..7): the rows of B it reads are its own. Rows
// m0 + 8g + i (g < RG) are the same for all 8 lanes: lane c loads row m0 + 8g + c and bcast8 hands
// every lane all 8. Without 8-lane subgroups each lane loads the 8 rows itself (same sums).

@compute @workgroup_size(8, 1, 1)
fn matmul_forward_sg8(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                  @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_step8(wg.x * 64u + c);
    let rb = rows8(p.b_off + bt * p.b_bs, wg.x * 64u + c, 8u, p.N, p.ldb);
    let ab = p.a_off + bt * p.a_bs;
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    if (sg8) {
        let ra = rows8(ab, m0 + c, 8u, p.M, p.lda);  // [g] = row m0 + 8g + c
        for (var k = 0u; k < p.K; k += 4u) {
            let w = lb_8(rb, k);
            forward_step(&t0_0, &t0_1, &t0_2, &t0_3, bcast8(la_k(ra[0], k)), w);
            if (RG > 1u) { forward_step(&t1_0, &t1_1, &t1_2, &t1_3, bcast8(la_k(ra[1], k)), w); }
            if (RG > 2u) {
                forward_step(&t2_0, &t2_1, &t2_2, &t2_3, bcast8(la_k(ra[2], k)), w);
                forward_step(&t3_0, &t3_1, &t3_2, &t3_3, bcast8(la_k(ra[3], k)), w);
            }
        }
    } else {
        let r0 = rows8(ab, m0, 1u, p.M, p.lda); let r1 = rows8(ab, m0 + 8u, 1u, p.M, p.lda);
        let r2 = rows8(ab, m0 + 16u, 1u, p.M, p.lda); let r3 = rows8(ab, m0 + 24u, 1u, p.M, p.lda);
        for (var k = 0u; k < p.K; k += 4u) {
            let w = lb_8(rb, k);
            forward_step(&t0_0, &t0_1, &t0_2, &t0_3, la_8(r0, k), w);
            if (RG > 1u) { forward_step(&t1_0, &t1_1, &t1_2, &t1_3, la_8(r1, k), w); }
            if (RG > 2u) {
                forward_step(&t2_0, &t2_1, &t2_2, &t2_3, la_8(r2, k), w);
                forward_step(&t3_0, &t3_1, &t3_2, &t3_3, la_8(r3, k), w);
            }
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

@compute @workgroup_size(8, 1, 1)
fn matmul_forward_sg8_vec4(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                       @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_step8(wg.x * 64u + c);
    let rb = rows8(p.b4_off + bt * p.b_bs, wg.x * 64u + c, 8u, p.N, p.ldb);
    let ab = p.a4_off + bt * p.a_bs;
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    if (sg8) {
        let ra = rows8(ab, m0 + c, 8u, p.M, p.lda);
        for (var k = 0u; k < p.K; k += 4u) {
            let w = lb4_8(rb, k);
            forward_step(&t0_0, &t0_1, &t0_2, &t0_3, bcast8(la4(ra[0] + k)), w);
            if (RG > 1u) { forward_step(&t1_0, &t1_1, &t1_2, &t1_3, bcast8(la4(ra[1] + k)), w); }
            if (RG > 2u) {
                forward_step(&t2_0, &t2_1, &t2_2, &t2_3, bcast8(la4(ra[2] + k)), w);
                forward_step(&t3_0, &t3_1, &t3_2, &t3_3, bcast8(la4(ra[3] + k)), w);
            }
        }
    } else {
        let r0 = rows8(ab, m0, 1u, p.M, p.lda); let r1 = rows8(ab, m0 + 8u, 1u, p.M, p.lda);
        let r2 = rows8(ab, m0 + 16u, 1u, p.M, p.lda); let r3 = rows8(ab, m0 + 24u, 1u, p.M, p.lda);
        for (var k = 0u; k < p.K; k += 4u) {
            let w = lb4_8(rb, k);
            forward_step(&t0_0, &t0_1, &t0_2, &t0_3, la4_8(r0, k), w);
            if (RG > 1u) { forward_step(&t1_0, &t1_1, &t1_2, &t1_3, la4_8(r1, k), w); }
            if (RG > 2u) {
                forward_step(&t2_0, &t2_1, &t2_2, &t2_3, la4_8(r2, k), w);
                forward_step(&t3_0, &t3_1, &t3_2, &t3_3, la4_8(r3, k), w);
            }
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

// ---------------------------------------------------------------- sg8: input gradient
// Lane c owns the column groups q..q+3 and q+32..q+35, q = 64·wg.x + 4c: B's rows are read as vec4s
// along n. Rows of A (m0 + 8g + i, k..k+3) are shared as in the forward kernel. The last step of K is
// padded: A's values past K are zeroed (la*_k) and B's rows past K clamped to K-1.

@compute @workgroup_size(8, 1, 1)
fn matmul_backward_input_sg8(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                         @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_vec4(wg.x * 64u + 4u * c);
    let e = p.N - 1u;  // scalar loads: clamp each column
    let cc = Cols(min(cols[0], e), min(cols[1], e), min(cols[2], e), min(cols[3], e),
                  min(cols[4], e), min(cols[5], e), min(cols[6], e), min(cols[7], e));
    let bb = p.b_off + bt * p.b_bs;
    let ab = p.a_off + bt * p.a_bs;
    let ra = rows8(ab, m0 + c, 8u, p.M, p.lda);
    let r0 = rows8(ab, m0, 1u, p.M, p.lda); let r1 = rows8(ab, m0 + 8u, 1u, p.M, p.lda);
    let r2 = rows8(ab, m0 + 16u, 1u, p.M, p.lda); let r3 = rows8(ab, m0 + 24u, 1u, p.M, p.lda);
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    for (var k = 0u; k < p.K; k += 4u) {
        let w = input_rows(bb, k, cc);
        if (sg8) {
            input_step(&t0_0, &t0_1, &t0_2, &t0_3, bcast8(la_k(ra[0], k)), w);
            if (RG > 1u) { input_step(&t1_0, &t1_1, &t1_2, &t1_3, bcast8(la_k(ra[1], k)), w); }
            if (RG > 2u) {
                input_step(&t2_0, &t2_1, &t2_2, &t2_3, bcast8(la_k(ra[2], k)), w);
                input_step(&t3_0, &t3_1, &t3_2, &t3_3, bcast8(la_k(ra[3], k)), w);
            }
        } else {
            input_step(&t0_0, &t0_1, &t0_2, &t0_3, la_8(r0, k), w);
            if (RG > 1u) { input_step(&t1_0, &t1_1, &t1_2, &t1_3, la_8(r1, k), w); }
            if (RG > 2u) {
                input_step(&t2_0, &t2_1, &t2_2, &t2_3, la_8(r2, k), w);
                input_step(&t3_0, &t3_1, &t3_2, &t3_3, la_8(r3, k), w);
            }
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

@compute @workgroup_size(8, 1, 1)
fn matmul_backward_input_sg8_vec4(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                              @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_vec4(wg.x * 64u + 4u * c);
    let g0 = group4(cols[0], p.N); let g1 = group4(cols[4], p.N);
    let bb = p.b4_off + bt * p.b_bs;
    let ab = p.a4_off + bt * p.a_bs;
    let ra = rows8(ab, m0 + c, 8u, p.M, p.lda);
    let r0 = rows8(ab, m0, 1u, p.M, p.lda); let r1 = rows8(ab, m0 + 8u, 1u, p.M, p.lda);
    let r2 = rows8(ab, m0 + 16u, 1u, p.M, p.lda); let r3 = rows8(ab, m0 + 24u, 1u, p.M, p.lda);
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    for (var k = 0u; k < p.K; k += 4u) {
        let e = p.K - 1u;
        let i0 = bb + k * p.ldb; let i1 = bb + min(k + 1u, e) * p.ldb;
        let i2 = bb + min(k + 2u, e) * p.ldb; let i3 = bb + min(k + 3u, e) * p.ldb;
        let w = V8(lb4(i0 + g0), lb4(i0 + g1), lb4(i1 + g0), lb4(i1 + g1),
                   lb4(i2 + g0), lb4(i2 + g1), lb4(i3 + g0), lb4(i3 + g1));
        if (sg8) {
            input_step(&t0_0, &t0_1, &t0_2, &t0_3, bcast8(la4_k(ra[0], k)), w);
            if (RG > 1u) { input_step(&t1_0, &t1_1, &t1_2, &t1_3, bcast8(la4_k(ra[1], k)), w); }
            if (RG > 2u) {
                input_step(&t2_0, &t2_1, &t2_2, &t2_3, bcast8(la4_k(ra[2], k)), w);
                input_step(&t3_0, &t3_1, &t3_2, &t3_3, bcast8(la4_k(ra[3], k)), w);
            }
        } else {
            input_step(&t0_0, &t0_1, &t0_2, &t0_3, la4k_8(r0, k), w);
            if (RG > 1u) { input_step(&t1_0, &t1_1, &t1_2, &t1_3, la4k_8(r1, k), w); }
            if (RG > 2u) {
                input_step(&t2_0, &t2_1, &t2_2, &t2_3, la4k_8(r2, k), w);
                input_step(&t3_0, &t3_1, &t3_2, &t3_3, la4k_8(r3, k), w);
            }
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

// ---------------------------------------------------------------- sg8: weight gradient
// Columns as in the input gradient (B's rows read as vec4s along n). A's rows run along m: lane l
// loads A[k, m0 + 4l .. m0 + 4l + 3], so one load per lane and bcast8 cover 32 rows (8·RG are used).
// One k per step: K up to ~65,000 (lavapipe's loop limit), which the launcher checks.

@compute @workgroup_size(8, 1, 1)
fn matmul_backward_weight_sg8(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                          @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_vec4(wg.x * 64u + 4u * c);
    let e = p.N - 1u;
    let cc = Cols(min(cols[0], e), min(cols[1], e), min(cols[2], e), min(cols[3], e),
                  min(cols[4], e), min(cols[5], e), min(cols[6], e), min(cols[7], e));
    let em = p.M - 1u;
    let mc = min(m0 + 4u * c, em);  // this lane's 4 rows m (clamped) in the shared path
    let mr = vec4(mc, min(m0 + 4u * c + 1u, em), min(m0 + 4u * c + 2u, em), min(m0 + 4u * c + 3u, em));
    let ba = p.a_off + bt * p.a_bs;
    let bb = p.b_off + bt * p.b_bs;
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    for (var k = 0u; k < p.K; k++) {
        let ia = ba + k * p.lda;
        let ib = bb + k * p.ldb;
        let w0 = vec4(b[ib + cc[0]], b[ib + cc[1]], b[ib + cc[2]], b[ib + cc[3]]);
        let w1 = vec4(b[ib + cc[4]], b[ib + cc[5]], b[ib + cc[6]], b[ib + cc[7]]);
        let x = weight_rows(sg8, ia, mr, m0, em);
        weight_step(&t0_0, &t0_1, &t0_2, &t0_3, x[0], x[1], w0, w1);
        if (RG > 1u) { weight_step(&t1_0, &t1_1, &t1_2, &t1_3, x[2], x[3], w0, w1); }
        if (RG > 2u) {
            weight_step(&t2_0, &t2_1, &t2_2, &t2_3, x[4], x[5], w0, w1);
            weight_step(&t3_0, &t3_1, &t3_2, &t3_3, x[6], x[7], w0, w1);
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

@compute @workgroup_size(8, 1, 1)
fn matmul_backward_weight_sg8_vec4(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32,
                               @builtin(subgroup_invocation_id) sl: u32, @builtin(subgroup_size) ss: u32) {
    let sg8 = ss == 8u;
    let c = select(li, sl, sg8);
    let m0 = wg.y * 8u * RG; let bt = wg.z;
    let cols = cols_vec4(wg.x * 64u + 4u * c);
    let g0 = group4(cols[0], p.N); let g1 = group4(cols[4], p.N);
    let ga = group4(m0 + 4u * c, p.M);
    let ba = p.a4_off + bt * p.a_bs;
    let bb = p.b4_off + bt * p.b_bs;
    var t0_0: M4; var t0_1: M4; var t0_2: M4; var t0_3: M4; var t1_0: M4; var t1_1: M4; var t1_2: M4; var t1_3: M4;
    var t2_0: M4; var t2_1: M4; var t2_2: M4; var t2_3: M4; var t3_0: M4; var t3_1: M4; var t3_2: M4; var t3_3: M4;
    for (var k = 0u; k < p.K; k++) {
        let ia = ba + k * p.lda;
        let ib = bb + k * p.ldb;
        let w0 = lb4(ib + g0); let w1 = lb4(ib + g1);
        let x = weight_rows4(sg8, ia, ga, m0);
        weight_step(&t0_0, &t0_1, &t0_2, &t0_3, x[0], x[1], w0, w1);
        if (RG > 1u) { weight_step(&t1_0, &t1_1, &t1_2, &t1_3, x[2], x[3], w0, w1); }
        if (RG > 2u) {
            weight_step(&t2_0, &t2_1, &t2_2, &t2_3, x[4], x[5], w0, w1);
            weight_step(&t3_0, &t3_1, &t3_2, &t3_3, x[6], x[7], w0, w1);
        }
    }
    store_tiles(m0, cols, bt, t0_0, t0_1, t0_2, t0_3, t1_0, t1_1, t1_2, t1_3,
                t2_0, t2_1, t2_2, t2_3, t3_0, t3_1, t3_2, t3_3);
}

// ---------------------------------------------------------------- subgroup size probe

@compute @workgroup_size(64, 1, 1)
fn subgroup_size_probe(@builtin(local_invocation_index) li: u32, @builtin(subgroup_size) ss: u32) {
    if (li == 0u) { y[p.y_off] = f32(ss); }
}
