// muon.wgsl — PufferLib 5.0's optimizer around the Newton–Schulz matmuls (which run in matmul.wgsl).
//
//   grad_norm_partial, grad_norm: ‖g‖₂ over every gradient; clip = min(max_grad_norm / (‖g‖₂ + 1e−6), 1)
//   muon_momentum:   g ← clip·g;  m ← μ·m + g;  u = g + μ·m   (Nesterov with the updated m)
//   matrix_norms_partial, matrix_norms: per matrix ‖u‖_F
//   muon_normalize:  X = u / max(‖u‖_F, 1e−7)
//   (5 Newton–Schulz iterations on the smaller Gram side: matmul.wgsl, launched by trainer/learner.py)
//   muon_update:     W ← W − lr·√max(1, rows/cols)·X
//
// Shapes: grads, momentum, update (u, then X), weights: the flat parameter layout [n];
//   mats [count, 4] u32 = (offset, size, rows, cols) of every matrix in that layout;
//   norms [count]; scalars [4] = (clip, ‖g‖₂, _, _); globals [4] f32 = (lr, _, _, _);
//   partials [max(ceil(n/CHUNK), count·chunks)]: the first pass's sums of squares.
// Bindings: grads, mats, globals (reads); momentum, update, weights, norms, scalars, partials; Params.
// Dispatch: the norms are deterministic two-pass reductions (fixed order: strided partial sums, then a
//   tree, in both passes), so that a GPU keeps many workgroups busy instead of one walking the buffer:
//   grad_norm_partial ceil(n/CHUNK) workgroups of WG_REDUCE, each summing CHUNK = 16·WG_REDUCE squares;
//   grad_norm 1 workgroup adding those; matrix_norms_partial (chunks, count) workgroups over chunks of
//   CHUNK of each matrix (chunks = ceil(max size/CHUNK)); matrix_norms one workgroup per matrix;
//   muon_momentum ceil(n/WG); muon_normalize / muon_update (ceil(max size/WG), count).

struct Params {
    n: u32, count: u32,
    chunks: u32,  // first-pass workgroups per matrix (matrix_norms*); first-pass workgroups (grad_norm)
    max_grad_norm: f32, mu: f32,
    grads_off: u32, mats_off: u32, globals_off: u32, momentum_off: u32, update_off: u32,
    weights_off: u32, norms_off: u32, scalars_off: u32, partials_off: u32,
}

@group(0) @binding(0) var<storage, read> grads: array<f32>;
@group(0) @binding(1) var<storage, read> mats: array<u32>;
@group(0) @binding(2) var<storage, read> globals: array<f32>;
@group(0) @binding(3) var<storage, read_write> momentum: array<f32>;
@group(0) @binding(4) var<storage, read_write> update: array<f32>;
@group(0) @binding(5) var<storage, read_write> weights: array<f32>;
@group(0) @binding(6) var<storage, read_write> norms: array<f32>;
@group(0) @binding(7) var<storage, read_write> scalars: array<f32>;
@group(0) @binding(8) var<storage, read_write> partials: array<f32>;
@group(0) @binding(9) var<uniform> p: Params;

override WG: u32 = 64u;
override WG_REDUCE: u32 = 256u;
const PER_THREAD: u32 = 16u;  // first pass: each invocation adds 16 squares (CHUNK = 16·WG_REDUCE)

#include "reduce.wgsl"

// Σ of squares of grads[first + j + WG_REDUCE·q] (q < PER_THREAD, index < end), tree-summed over the workgroup
fn grads_sum_sq(j: u32, first: u32, end: u32) -> f32 {
    var acc = 0.0;
    for (var q = 0u; q < PER_THREAD; q++) {
        let i = first + j + q * WG_REDUCE;
        if (i < end) { let v = grads[p.grads_off + i]; acc += v * v; }
    }
    partial[j] = acc;
    tree_sum(j);
    return partial[0];
}

// the same over update
fn update_sum_sq(j: u32, first: u32, end: u32) -> f32 {
    var acc = 0.0;
    for (var q = 0u; q < PER_THREAD; q++) {
        let i = first + j + q * WG_REDUCE;
        if (i < end) { let v = update[p.update_off + i]; acc += v * v; }
    }
    partial[j] = acc;
    tree_sum(j);
    return partial[0];
}

// partials[first .. first + count) strided over the workgroup, tree-summed into partial[0]
fn partials_sum(j: u32, first: u32, count: u32) -> f32 {
    var acc = 0.0;
    for (var i = j; i < count; i += WG_REDUCE) { acc += partials[p.partials_off + first + i]; }
    partial[j] = acc;
    tree_sum(j);
    return partial[0];
}

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn grad_norm_partial(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let s = grads_sum_sq(lid.x, wid.x * WG_REDUCE * PER_THREAD, p.n);
    if (lid.x == 0u) { partials[p.partials_off + wid.x] = s; }
}

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn grad_norm(@builtin(local_invocation_id) lid: vec3<u32>) {
    let total = partials_sum(lid.x, 0u, p.chunks);
    if (lid.x == 0u) {
        let norm = sqrt(total);
        scalars[p.scalars_off] = min(p.max_grad_norm / (norm + 1e-6), 1.0);
        scalars[p.scalars_off + 1u] = norm;
    }
}

@compute @workgroup_size(WG, 1, 1)
fn muon_momentum(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.n) { return; }
    let g = grads[p.grads_off + i] * scalars[p.scalars_off];
    let m = p.mu * momentum[p.momentum_off + i] + g;
    momentum[p.momentum_off + i] = m;
    update[p.update_off + i] = g + p.mu * m;
}

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn matrix_norms_partial(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let mat = wid.y;
    let off = mats[p.mats_off + mat * 4u];
    let size = mats[p.mats_off + mat * 4u + 1u];
    let first = wid.x * WG_REDUCE * PER_THREAD;
    let s = update_sum_sq(lid.x, off + first, off + size);
    if (lid.x == 0u) { partials[p.partials_off + mat * p.chunks + wid.x] = s; }
}

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn matrix_norms(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let total = partials_sum(lid.x, wid.x * p.chunks, p.chunks);
    if (lid.x == 0u) { norms[p.norms_off + wid.x] = sqrt(total); }
}

@compute @workgroup_size(WG, 1, 1)
fn muon_normalize(@builtin(global_invocation_id) gid: vec3<u32>) {
    let mat = gid.y;
    let i = gid.x;
    if (i >= mats[p.mats_off + mat * 4u + 1u]) { return; }
    let e = p.update_off + mats[p.mats_off + mat * 4u] + i;
    update[e] = update[e] / max(norms[p.norms_off + mat], 1e-7);
}

@compute @workgroup_size(WG, 1, 1)
fn muon_update(@builtin(global_invocation_id) gid: vec3<u32>) {
    let mat = gid.y;
    let i = gid.x;
    let m = p.mats_off + mat * 4u;
    if (i >= mats[m + 1u]) { return; }
    let scale = sqrt(max(1.0, f32(mats[m + 2u]) / f32(mats[m + 3u])));
    let off = mats[m] + i;
    weights[p.weights_off + off] -= globals[p.globals_off] * scale * update[p.update_off + off];
}
