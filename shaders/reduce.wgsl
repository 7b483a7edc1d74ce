// reduce.wgsl — the fixed-order workgroup reduction shared by ppo.wgsl and muon.wgsl (included).
//
//   tree_sum(j): partial[0] = Σ_j partial[j] over j < WG_REDUCE, adding halves in a fixed order
//   (partial[j] += partial[j + half] for half = WG_REDUCE/2, …, 1): bit-identical run to run, unlike
//   atomics. Every invocation j of the workgroup writes its own partial[j] first, then calls it in
//   uniform control flow. The includer declares `override WG_REDUCE: u32` (a power of two ≤ 1024).

var<workgroup> partial: array<f32, 1024>;

fn tree_sum(j: u32) {
    workgroupBarrier();
    for (var half = WG_REDUCE / 2u; half > 0u; half /= 2u) {
        if (j < half) { partial[j] += partial[j + half]; }
        workgroupBarrier();
    }
}
