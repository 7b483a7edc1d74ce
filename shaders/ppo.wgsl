// ppo.wgsl — fused PPO loss with its analytic gradient, and the deterministic reductions of its outputs.
//
// ppo_loss, per element i of the minibatch (M = rows·T elements, every loss a mean over M), heads in order,
// with the head distributions of heads.wgsl (the same functions as sampling and V-trace):
//   discrete head h: l_j = logit, or −1e4 where the action mask says illegal; p = softmax(l),
//     H_h = −Σ p log p, log p(a_h) = log p[a_h]
//   continuous head h (the k-th): μ = clamp(mean, ±1e6), s = clamp(logstd[k], −20, 2), σ = eˢ,
//     a = clamp(action, ±1e6); log p(a_h) = −½((a − μ)/σ)² − ½log 2π − s;  H_h = ½(1 + log 2π) + s
//   logp = Σ_h log p(a_h);  entropy = Σ_h H_h;  ratio = exp(logp − logp_old)
//   L_pg = max(−A·ratio, −A·clip(ratio, 1 ± ε))
//   v_clip = V_old + clip(v − V_old, ±ε_v);  L_v = ½·max((v − R)², (v_clip − R)²)
//   L = L_pg + vf_coef·L_v − ent_coef·entropy
// Gradient written straight into dout (the decoder output's gradient) and the logstd columns of stats:
//   g = d_ratio·ratio with d_ratio = −A/M, or 0 where the clipped branch is strictly larger (clip active)
//   discrete: dL/dl_j = g·(1[j = a_h] − p_j) + (ent_coef/M)·p_j·(log p_j + H_h)   (head h's own entropy);
//     0 for a masked j (its logit was replaced by a constant)
//   continuous: dL/dμ = g·(a − μ)/σ²;  dL/ds = g·((a − μ)²/σ² − 1) − ent_coef/M  (per element, in
//     stats column S + k; PufferLib's formulas at the clamped μ and s: the clamps pass the gradient through)
//     freeze_continuous = 1 (an ablation): both are 0
//   dL/dv = (vf_coef/M)·(v − R), or 0 where the value clip is active and the clipped square is larger
//   (gated on the clip being active: v_clip == v up to an ulp otherwise, and a float compare of the
//   two squares would misfire).
// Stats per element, a row of S + Kc columns: the S = 8 logged statistics (policy loss, value loss,
//   entropy, total loss, old_kl = −log r, kl = (r − 1) − log r, clipfrac = |r − 1| > ε, importance = r),
//   then dL/ds of each continuous head (one buffer for both keeps ppo_loss inside 8 storage buffers).
//
// reduce_stats: logs[slot·S + k] = (Σ_i stats[i·(S + Kc) + k]) / M for every column k < S — one
//   workgroup per column, a fixed summation order (strided partial sums, then a tree): bit-identical
//   run to run.
// reduce_logstd_grad: dlogstd[k] = Σ_i stats[i·(S + Kc) + S + k] (the state-independent logstd's
//   gradient), one workgroup per continuous head, the same fixed order.
//
// Shapes: out/dout [M, out_stride] (A head columns, value, padding), actions [M, K], act_sizes [K] (u32),
//   logstd [Kc], mask [M, W] u32 (bit j of word w = column 32·w + j legal; read only when masked = 1),
//   transitions [M, TR_WIDTH] (transitions.wgsl: the old log-prob and value, the advantage and return),
//   stats [M, S + Kc], logs [slots, S], dlogstd [Kc].
// Bindings: out, actions, transitions, act_sizes, logstd, mask (reads); dout, stats, logs, dlogstd; Params.
// Dispatch: ppo_loss one invocation per element, grid ceil(M/WG); reduce_stats grid S and
//   reduce_logstd_grad grid Kc, WG_REDUCE threads each.

struct Params {
    M: u32, K: u32, A: u32, out_stride: u32, slot: u32, W: u32, masked: u32, Kc: u32, freeze_continuous: u32,
    clip_coef: f32, vf_coef: f32, vf_clip_coef: f32, ent_coef: f32,
    out_off: u32, actions_off: u32, transitions_off: u32, act_sizes_off: u32, logstd_off: u32, mask_off: u32,
    dout_off: u32, stats_off: u32, logs_off: u32, dlogstd_off: u32,
}

const S: u32 = 8u;

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> actions: array<f32>;
@group(0) @binding(2) var<storage, read> transitions: array<f32>;
@group(0) @binding(3) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(4) var<storage, read> logstd: array<f32>;
@group(0) @binding(5) var<storage, read> mask: array<u32>;
@group(0) @binding(6) var<storage, read_write> dout: array<f32>;
@group(0) @binding(7) var<storage, read_write> stats: array<f32>;
@group(0) @binding(8) var<storage, read_write> logs: array<f32>;
@group(0) @binding(9) var<storage, read_write> dlogstd: array<f32>;
@group(0) @binding(10) var<uniform> p: Params;

override WG: u32 = 64u;
override WG_REDUCE: u32 = 256u;

#include "heads.wgsl"
#include "transitions.wgsl"

@compute @workgroup_size(WG, 1, 1)
fn ppo_loss(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.M) { return; }
    let base = p.out_off + i * p.out_stride;
    let mrow = p.mask_off + i * p.W;
    let inv_m = 1.0 / f32(p.M);
    let tr = p.transitions_off + i * TR_WIDTH;
    let st = p.stats_off + i * (S + p.Kc);

    // pass 1: per-head log-probabilities of the taken actions and entropies
    var logp = 0.0;
    var entropy = 0.0;
    var o = 0u;
    var kc = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        if (size == 1u) {
            let s = gaussian_logstd(kc);
            logp += gaussian_logp(gaussian_clamp(actions[p.actions_off + i * p.K + h]), gaussian_mu(base, o), s);
            entropy += gaussian_entropy(s);
            kc += 1u;
        } else {
            let sm = head_softmax(base, mrow, o, size);
            entropy += head_entropy(base, mrow, o, size, sm);
            let a = u32(actions[p.actions_off + i * p.K + h]);
            logp += head_logp(base, mrow, o + a, sm);
        }
        o += size;
    }

    let adv = transitions[tr + TR_ADVANTAGE];
    let logratio = logp - transitions[tr + TR_LOGPROB];
    let ratio = exp(logratio);
    let eps = p.clip_coef;
    let pg1 = -adv * ratio;
    let pg2 = -adv * clamp(ratio, 1.0 - eps, 1.0 + eps);
    let pg_loss = max(pg1, pg2);
    let clipped = ratio < 1.0 - eps || ratio > 1.0 + eps;
    var d_ratio = -adv * inv_m;
    if (clipped && pg2 > pg1) { d_ratio = 0.0; }
    let g = d_ratio * ratio;  // dL/dlogp

    let v = out[base + p.A];
    let v_old = transitions[tr + TR_VALUE];
    let ret = transitions[tr + TR_RETURN];
    let dv = v - v_old;
    let v_clip = v_old + clamp(dv, -p.vf_clip_coef, p.vf_clip_coef);
    let sq = (v - ret) * (v - ret);
    let sq_clip = (v_clip - ret) * (v_clip - ret);
    let v_loss = 0.5 * max(sq, sq_clip);
    let v_clip_active = dv < -p.vf_clip_coef || dv > p.vf_clip_coef;
    var dvalue = p.vf_coef * inv_m * (v - ret);
    if (v_clip_active && sq_clip > sq) { dvalue = 0.0; }

    // pass 2: gradients of the head columns (and of logstd, per element)
    let ent_scale = p.ent_coef * inv_m;
    let frozen = p.freeze_continuous != 0u;
    o = 0u;
    kc = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        if (size == 1u) {
            let sigma = exp(gaussian_logstd(kc));
            let var_ = sigma * sigma;
            let diff = gaussian_clamp(actions[p.actions_off + i * p.K + h]) - gaussian_mu(base, o);
            dout[p.dout_off + i * p.out_stride + o] = select(g * diff / var_, 0.0, frozen);
            stats[st + S + kc] = select(g * (diff * diff / var_ - 1.0) - ent_scale, 0.0, frozen);
            kc += 1u;
        } else {
            let sm = head_softmax(base, mrow, o, size);
            let ent = head_entropy(base, mrow, o, size, sm);
            let a = u32(actions[p.actions_off + i * p.K + h]);
            for (var j = 0u; j < size; j++) {
                let lpj = head_logp(base, mrow, o + j, sm);
                let pj = exp(lpj);
                let d = g * (select(0.0, 1.0, j == a) - pj) + ent_scale * pj * (lpj + ent);
                dout[p.dout_off + i * p.out_stride + o + j] = select(0.0, d, head_legal(mrow, o + j));
            }
        }
        o += size;
    }
    dout[p.dout_off + i * p.out_stride + p.A] = dvalue;
    for (var j = p.A + 1u; j < p.out_stride; j++) { dout[p.dout_off + i * p.out_stride + j] = 0.0; }

    stats[st + 0u] = pg_loss;
    stats[st + 1u] = v_loss;
    stats[st + 2u] = entropy;
    stats[st + 3u] = pg_loss + p.vf_coef * v_loss - p.ent_coef * entropy;
    stats[st + 4u] = -logratio;
    stats[st + 5u] = (ratio - 1.0) - logratio;
    stats[st + 6u] = select(0.0, 1.0, abs(ratio - 1.0) > eps);
    stats[st + 7u] = ratio;
}

#include "reduce.wgsl"

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn reduce_stats(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let k = wid.x;  // stat column
    let j = lid.x;
    var acc = 0.0;
    for (var i = j; i < p.M; i += WG_REDUCE) { acc += stats[p.stats_off + i * (S + p.Kc) + k]; }
    partial[j] = acc;
    tree_sum(j);
    if (j == 0u) { logs[p.logs_off + p.slot * S + k] = partial[0] / f32(p.M); }
}

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn reduce_logstd_grad(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let k = wid.x;  // continuous head
    let j = lid.x;
    var acc = 0.0;
    for (var i = j; i < p.M; i += WG_REDUCE) { acc += stats[p.stats_off + i * (S + p.Kc) + S + k]; }
    partial[j] = acc;
    tree_sum(j);
    if (j == 0u) { dlogstd[p.dlogstd_off + k] = partial[0]; }
}
