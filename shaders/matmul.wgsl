// matmul.wgsl — the three bias-free products of a linear layer y = x·Wᵀ (W row-major [out, in]),
// on sub-ranges of flat buffers, optionally batched (grid z) and with an epilogue
//     Y = alpha·(product) + beta·Z        (beta = 0: plain store; Z = Y, beta = 1: accumulate)
//
//   matmul_forward          Y[M,N] = Σ_k A[m,k]·B[n,k]    y  = x·Wᵀ   A = x [M,K],  B = W  [N,K]
//   matmul_backward_input   Y[M,N] = Σ_k A[m,k]·B[k,n]    dx = dy·W   A = dy [M,K], B = W  [K,N]
//   matmul_backward_weight  Y[M,N] = Σ_k A[k,m]·B[k,n]    dW = dyᵀ·x  A = dy [K,M], B = x  [K,N]
//
// Shapes: M, N output rows/cols, K the reduced dimension. Every operand has an element offset
// (*_off), a row stride (ld*) and a batch stride (*_bs, used with grid z = batch index).
//
// Bindings: a, b (operands as f32), y (output), z (epilogue input; may alias y), a4, b4 (the same
// operands seen as vec4, for the *_vec4 kernels), then Params. All storage is read_write: Muon
// multiplies matrices that live in one scratch buffer, and a buffer bound read-only and read-write
// in one dispatch is rejected even on disjoint ranges.
//
// Three versions of each product, all under golden test:
//   *_ref    one output per invocation, workgroup WG_X×WG_Y (x → n, y → m): obviously correct.
//   plain    an 8×8 output tile per invocation in registers (16 vec4 accumulators), no workgroup
//            memory, scalar loads: works for any offset/stride (the encoder's D = 413 rows).
//   *_vec4   the same tile with vec4 loads; needs operand offsets and strides that are multiples of
//            4 and rows that hold whole vec4s (forward: K % 4 == 0; the others: ld >= the contiguous
//            size rounded up to 4, e.g. obs rows padded from 413 to 416). ~1.5–2× the plain kernel.
// lavapipe runs invocations across SIMD lanes, so every load is a gather: speed comes from the
// multiply-adds per load (256 per 16 vec4 loads here). Grid: (ceil(N/(8·WG_X)), ceil(M/(8·WG_Y)), batch).
// Rows/columns past the edge are clamped to the last valid one: they compute sums that are never
// stored, which keeps the inner loops branch-free. A tile is indexed only with constants so that
// it stays in registers (a dynamic index spills it to memory).
// Loops stay short: lavapipe stops an invocation silently after 65,535 loop iterations in total.

struct Params {
    M: u32, N: u32, K: u32,
    a_off: u32, b_off: u32, y_off: u32, z_off: u32, a4_off: u32, b4_off: u32,
    lda: u32, ldb: u32, ldy: u32, ldz: u32,
    a_bs: u32, b_bs: u32, y_bs: u32, z_bs: u32,
    alpha: f32, beta: f32,
}

@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> z: array<f32>;
@group(0) @binding(4) var<storage, read_write> a4: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> b4: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> p: Params;

override WG_X: u32 = 8u;
override WG_Y: u32 = 8u;

alias V8 = array<vec4<f32>, 8>;
alias Tile = array<vec4<f32>, 16>;  // row i of the 8×8 tile = (tile[2i], tile[2i+1])
alias Rows = array<u32, 8>;

fn store(m: u32, n: u32, bt: u32, v: f32) {
    var out = p.alpha * v;
    if (p.beta != 0.0) {
        out += p.beta * z[p.z_off + bt * p.z_bs + m * p.ldz + n];
    }
    y[p.y_off + bt * p.y_bs + m * p.ldy + n] = out;
}

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

// ---------------------------------------------------------------- tile helpers

// Element index of the first element of 8 consecutive rows r0.. (clamped to count-1), stride ld.
fn rows8(base: u32, r0: u32, count: u32, ld: u32) -> Rows {
    let c = count - 1u;
    return Rows(base + min(r0, c) * ld, base + min(r0 + 1u, c) * ld, base + min(r0 + 2u, c) * ld,
                base + min(r0 + 3u, c) * ld, base + min(r0 + 4u, c) * ld, base + min(r0 + 5u, c) * ld,
                base + min(r0 + 6u, c) * ld, base + min(r0 + 7u, c) * ld);
}

fn la(i: u32) -> vec4<f32> { return vec4(a[i], a[i + 1u], a[i + 2u], a[i + 3u]); }
fn lb(i: u32) -> vec4<f32> { return vec4(b[i], b[i + 1u], b[i + 2u], b[i + 3u]); }
fn la4(i: u32) -> vec4<f32> { return a4[i >> 2u]; }  // i is a multiple of 4 in the *_vec4 kernels
fn lb4(i: u32) -> vec4<f32> { return b4[i >> 2u]; }

fn dots(x: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>, w3: vec4<f32>) -> vec4<f32> {
    return vec4(dot(x, w0), dot(x, w1), dot(x, w2), dot(x, w3));
}

fn store_row(m: u32, n0: u32, bt: u32, lo: vec4<f32>, hi: vec4<f32>) {
    if (m >= p.M) { return; }
    if (n0 + 0u < p.N) { store(m, n0 + 0u, bt, lo.x); }
    if (n0 + 1u < p.N) { store(m, n0 + 1u, bt, lo.y); }
    if (n0 + 2u < p.N) { store(m, n0 + 2u, bt, lo.z); }
    if (n0 + 3u < p.N) { store(m, n0 + 3u, bt, lo.w); }
    if (n0 + 4u < p.N) { store(m, n0 + 4u, bt, hi.x); }
    if (n0 + 5u < p.N) { store(m, n0 + 5u, bt, hi.y); }
    if (n0 + 6u < p.N) { store(m, n0 + 6u, bt, hi.z); }
    if (n0 + 7u < p.N) { store(m, n0 + 7u, bt, hi.w); }
}

fn store_tile(m0: u32, n0: u32, bt: u32, t: Tile) {
    store_row(m0 + 0u, n0, bt, t[0], t[1]);   store_row(m0 + 1u, n0, bt, t[2], t[3]);
    store_row(m0 + 2u, n0, bt, t[4], t[5]);   store_row(m0 + 3u, n0, bt, t[6], t[7]);
    store_row(m0 + 4u, n0, bt, t[8], t[9]);   store_row(m0 + 5u, n0, bt, t[10], t[11]);
    store_row(m0 + 6u, n0, bt, t[12], t[13]); store_row(m0 + 7u, n0, bt, t[14], t[15]);
}

// forward step over 4 values of k: x[i] = A[m0+i, k..k+3], w[j] = B[n0+j, k..k+3]
fn forward_step(t: ptr<function, Tile>, x: V8, w: V8) {
    (*t)[0] += dots(x[0], w[0], w[1], w[2], w[3]);  (*t)[1] += dots(x[0], w[4], w[5], w[6], w[7]);
    (*t)[2] += dots(x[1], w[0], w[1], w[2], w[3]);  (*t)[3] += dots(x[1], w[4], w[5], w[6], w[7]);
    (*t)[4] += dots(x[2], w[0], w[1], w[2], w[3]);  (*t)[5] += dots(x[2], w[4], w[5], w[6], w[7]);
    (*t)[6] += dots(x[3], w[0], w[1], w[2], w[3]);  (*t)[7] += dots(x[3], w[4], w[5], w[6], w[7]);
    (*t)[8] += dots(x[4], w[0], w[1], w[2], w[3]);  (*t)[9] += dots(x[4], w[4], w[5], w[6], w[7]);
    (*t)[10] += dots(x[5], w[0], w[1], w[2], w[3]); (*t)[11] += dots(x[5], w[4], w[5], w[6], w[7]);
    (*t)[12] += dots(x[6], w[0], w[1], w[2], w[3]); (*t)[13] += dots(x[6], w[4], w[5], w[6], w[7]);
    (*t)[14] += dots(x[7], w[0], w[1], w[2], w[3]); (*t)[15] += dots(x[7], w[4], w[5], w[6], w[7]);
}

// input-gradient step over 4 values of k: x[i] = A[m0+i, k..k+3]; w[2r], w[2r+1] = B[k+r, n0..n0+7]
fn input_step(t: ptr<function, Tile>, x: V8, w: V8) {
    (*t)[0] += x[0].x * w[0] + x[0].y * w[2] + x[0].z * w[4] + x[0].w * w[6];
    (*t)[1] += x[0].x * w[1] + x[0].y * w[3] + x[0].z * w[5] + x[0].w * w[7];
    (*t)[2] += x[1].x * w[0] + x[1].y * w[2] + x[1].z * w[4] + x[1].w * w[6];
    (*t)[3] += x[1].x * w[1] + x[1].y * w[3] + x[1].z * w[5] + x[1].w * w[7];
    (*t)[4] += x[2].x * w[0] + x[2].y * w[2] + x[2].z * w[4] + x[2].w * w[6];
    (*t)[5] += x[2].x * w[1] + x[2].y * w[3] + x[2].z * w[5] + x[2].w * w[7];
    (*t)[6] += x[3].x * w[0] + x[3].y * w[2] + x[3].z * w[4] + x[3].w * w[6];
    (*t)[7] += x[3].x * w[1] + x[3].y * w[3] + x[3].z * w[5] + x[3].w * w[7];
    (*t)[8] += x[4].x * w[0] + x[4].y * w[2] + x[4].z * w[4] + x[4].w * w[6];
    (*t)[9] += x[4].x * w[1] + x[4].y * w[3] + x[4].z * w[5] + x[4].w * w[7];
    (*t)[10] += x[5].x * w[0] + x[5].y * w[2] + x[5].z * w[4] + x[5].w * w[6];
    (*t)[11] += x[5].x * w[1] + x[5].y * w[3] + x[5].z * w[5] + x[5].w * w[7];
    (*t)[12] += x[6].x * w[0] + x[6].y * w[2] + x[6].z * w[4] + x[6].w * w[6];
    (*t)[13] += x[6].x * w[1] + x[6].y * w[3] + x[6].z * w[5] + x[6].w * w[7];
    (*t)[14] += x[7].x * w[0] + x[7].y * w[2] + x[7].z * w[4] + x[7].w * w[6];
    (*t)[15] += x[7].x * w[1] + x[7].y * w[3] + x[7].z * w[5] + x[7].w * w[7];
}

// one k of the input gradient (K tail): x[i] = A[m0+i, k]; w0, w1 = B[k, n0..n0+7]
fn input_step1(t: ptr<function, Tile>, x: array<f32, 8>, w0: vec4<f32>, w1: vec4<f32>) {
    (*t)[0] += x[0] * w0;  (*t)[1] += x[0] * w1;  (*t)[2] += x[1] * w0;  (*t)[3] += x[1] * w1;
    (*t)[4] += x[2] * w0;  (*t)[5] += x[2] * w1;  (*t)[6] += x[3] * w0;  (*t)[7] += x[3] * w1;
    (*t)[8] += x[4] * w0;  (*t)[9] += x[4] * w1;  (*t)[10] += x[5] * w0; (*t)[11] += x[5] * w1;
    (*t)[12] += x[6] * w0; (*t)[13] += x[6] * w1; (*t)[14] += x[7] * w0; (*t)[15] += x[7] * w1;
}

// weight-gradient step for one k: outer product of A[k, m0..m0+7] and B[k, n0..n0+7]
fn weight_step(t: ptr<function, Tile>, x0: vec4<f32>, x1: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>) {
    (*t)[0] += x0.x * w0;  (*t)[1] += x0.x * w1;  (*t)[2] += x0.y * w0;  (*t)[3] += x0.y * w1;
    (*t)[4] += x0.z * w0;  (*t)[5] += x0.z * w1;  (*t)[6] += x0.w * w0;  (*t)[7] += x0.w * w1;
    (*t)[8] += x1.x * w0;  (*t)[9] += x1.x * w1;  (*t)[10] += x1.y * w0; (*t)[11] += x1.y * w1;
    (*t)[12] += x1.z * w0; (*t)[13] += x1.z * w1; (*t)[14] += x1.w * w0; (*t)[15] += x1.w * w1;
}

// ---------------------------------------------------------------- tuned: forward

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_forward(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    let ra = rows8(p.a_off + bt * p.a_bs, m0, p.M, p.lda);
    let rb = rows8(p.b_off + bt * p.b_bs, n0, p.N, p.ldb);
    var t: Tile;
    let K4 = p.K & ~3u;
    for (var k = 0u; k < K4; k += 4u) {
        forward_step(&t,
            V8(la(ra[0] + k), la(ra[1] + k), la(ra[2] + k), la(ra[3] + k),
               la(ra[4] + k), la(ra[5] + k), la(ra[6] + k), la(ra[7] + k)),
            V8(lb(rb[0] + k), lb(rb[1] + k), lb(rb[2] + k), lb(rb[3] + k),
               lb(rb[4] + k), lb(rb[5] + k), lb(rb[6] + k), lb(rb[7] + k)));
    }
    // K tail: pad the last group of 4 with zeros on the A side
    if (K4 < p.K) {
        let r = p.K - K4;
        let m1 = vec4<f32>(1.0, f32(r > 1u), f32(r > 2u), 0.0);
        var x: V8; var w: V8;
        for (var i = 0u; i < 8u; i++) {
            x[i] = vec4(a[ra[i] + K4], a[ra[i] + min(K4 + 1u, p.K - 1u)], a[ra[i] + min(K4 + 2u, p.K - 1u)], 0.0) * m1;
            w[i] = vec4(b[rb[i] + K4], b[rb[i] + min(K4 + 1u, p.K - 1u)], b[rb[i] + min(K4 + 2u, p.K - 1u)], 0.0);
        }
        forward_step(&t, x, w);
    }
    store_tile(m0, n0, bt, t);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_forward_vec4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    let ra = rows8(p.a4_off + bt * p.a_bs, m0, p.M, p.lda);
    let rb = rows8(p.b4_off + bt * p.b_bs, n0, p.N, p.ldb);
    var t: Tile;
    for (var k = 0u; k < p.K; k += 4u) {
        forward_step(&t,
            V8(la4(ra[0] + k), la4(ra[1] + k), la4(ra[2] + k), la4(ra[3] + k),
               la4(ra[4] + k), la4(ra[5] + k), la4(ra[6] + k), la4(ra[7] + k)),
            V8(lb4(rb[0] + k), lb4(rb[1] + k), lb4(rb[2] + k), lb4(rb[3] + k),
               lb4(rb[4] + k), lb4(rb[5] + k), lb4(rb[6] + k), lb4(rb[7] + k)));
    }
    store_tile(m0, n0, bt, t);
}

// ---------------------------------------------------------------- tuned: input gradient

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_input(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    let ra = rows8(p.a_off + bt * p.a_bs, m0, p.M, p.lda);
    let bb = p.b_off + bt * p.b_bs;
    // columns n0+j past N are clamped to N-1 (their sums are never stored)
    let c = rows8(0u, n0, p.N, 1u);
    var t: Tile;
    for (var k = 0u; k < p.K; k++) {
        let r = bb + k * p.ldb;
        input_step1(&t,
            array<f32, 8>(a[ra[0] + k], a[ra[1] + k], a[ra[2] + k], a[ra[3] + k],
                          a[ra[4] + k], a[ra[5] + k], a[ra[6] + k], a[ra[7] + k]),
            vec4(b[r + c[0]], b[r + c[1]], b[r + c[2]], b[r + c[3]]),
            vec4(b[r + c[4]], b[r + c[5]], b[r + c[6]], b[r + c[7]]));
    }
    store_tile(m0, n0, bt, t);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_input_vec4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    let ra = rows8(p.a4_off + bt * p.a_bs, m0, p.M, p.lda);
    // rows of B hold whole vec4s (ldb >= N rounded up to 4): a column group n0+4.. is read whole
    // if it starts inside the matrix, else replaced by the first group (never stored)
    let bb = p.b4_off + bt * p.b_bs + n0;
    let hi = select(0u, 4u, n0 + 4u < p.N);
    var t: Tile;
    let K4 = p.K & ~3u;
    for (var k = 0u; k < K4; k += 4u) {
        let r0 = bb + k * p.ldb; let r1 = r0 + p.ldb; let r2 = r1 + p.ldb; let r3 = r2 + p.ldb;
        input_step(&t,
            V8(la4(ra[0] + k), la4(ra[1] + k), la4(ra[2] + k), la4(ra[3] + k),
               la4(ra[4] + k), la4(ra[5] + k), la4(ra[6] + k), la4(ra[7] + k)),
            V8(lb4(r0), lb4(r0 + hi), lb4(r1), lb4(r1 + hi), lb4(r2), lb4(r2 + hi), lb4(r3), lb4(r3 + hi)));
    }
    for (var k = K4; k < p.K; k++) {
        let r = bb + k * p.ldb;
        input_step1(&t,
            array<f32, 8>(a4[(ra[0] + k) >> 2u][k & 3u], a4[(ra[1] + k) >> 2u][k & 3u],
                          a4[(ra[2] + k) >> 2u][k & 3u], a4[(ra[3] + k) >> 2u][k & 3u],
                          a4[(ra[4] + k) >> 2u][k & 3u], a4[(ra[5] + k) >> 2u][k & 3u],
                          a4[(ra[6] + k) >> 2u][k & 3u], a4[(ra[7] + k) >> 2u][k & 3u]),
            lb4(r), lb4(r + hi));
    }
    store_tile(m0, n0, bt, t);
}

// ---------------------------------------------------------------- tuned: weight gradient

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_weight(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    let ba = p.a_off + bt * p.a_bs;
    let bb = p.b_off + bt * p.b_bs;
    let ci = rows8(0u, m0, p.M, 1u);
    let cj = rows8(0u, n0, p.N, 1u);
    var t: Tile;
    for (var k = 0u; k < p.K; k++) {
        let ia = ba + k * p.lda;
        let ib = bb + k * p.ldb;
        weight_step(&t,
            vec4(a[ia + ci[0]], a[ia + ci[1]], a[ia + ci[2]], a[ia + ci[3]]),
            vec4(a[ia + ci[4]], a[ia + ci[5]], a[ia + ci[6]], a[ia + ci[7]]),
            vec4(b[ib + cj[0]], b[ib + cj[1]], b[ib + cj[2]], b[ib + cj[3]]),
            vec4(b[ib + cj[4]], b[ib + cj[5]], b[ib + cj[6]], b[ib + cj[7]]));
    }
    store_tile(m0, n0, bt, t);
}

@compute @workgroup_size(WG_X, WG_Y, 1)
fn matmul_backward_weight_vec4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n0 = gid.x * 8u; let m0 = gid.y * 8u; let bt = gid.z;
    if (m0 >= p.M || n0 >= p.N) { return; }
    // rows hold whole vec4s (ld >= M, N rounded up to 4): the upper half of a row or column group is
    // read whole if it starts inside the matrix, else replaced by the lower half (never stored)
    let ba = p.a4_off + bt * p.a_bs + m0;
    let bb = p.b4_off + bt * p.b_bs + n0;
    let mh = select(0u, 4u, m0 + 4u < p.M);
    let nh = select(0u, 4u, n0 + 4u < p.N);
    var t: Tile;
    for (var k = 0u; k < p.K; k++) {
        let ia = ba + k * p.lda;
        let ib = bb + k * p.ldb;
        weight_step(&t, la4(ia), la4(ia + mh), lb4(ib), lb4(ib + nh));
    }
    store_tile(m0, n0, bt, t);
}
