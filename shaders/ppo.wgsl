// ppo.wgsl — fused PPO loss with its analytic gradient, and the deterministic reduction of its stats.
//
// ppo_loss, per element i of the minibatch (M = rows·T elements, every loss a mean over M):
//   per head h: p = softmax(logits_h), H_h = −Σ p log p;  logp = Σ_h log p[a_h];  entropy = Σ_h H_h
//   ratio = exp(logp − logp_old)
//   L_pg = max(−A·ratio, −A·clip(ratio, 1 ± ε))
//   v_clip = V_old + clip(v − V_old, ±ε_v);  L_v = ½·max((v − R)², (v_clip − R)²)
//   L = L_pg + vf_coef·L_v − ent_coef·entropy
// Gradient written straight into dout (the decoder output's gradient):
//   g = d_ratio·ratio with d_ratio = −A/M, or 0 where the clipped branch is strictly larger (clip active)
//   dL/dlogit_j = g·(1[j = a_h] − p_j) + (ent_coef/M)·p_j·(log p_j + H_h)     (head h's own entropy)
//   dL/dv = (vf_coef/M)·(v − R), or 0 where the value clip is active and the clipped square is larger
//   (gated on the clip being active: v_clip == v up to an ulp otherwise, and a float compare of the
//   two squares would misfire).
// Stats per element (S = 8 columns): policy loss, value loss, entropy, total loss,
//   old_kl = −log r, kl = (r − 1) − log r, clipfrac = |r − 1| > ε, importance = r.
//
// reduce_stats: logs[slot·S + k] = (Σ_i stats[i·S + k]) / M for every column k — one workgroup per
//   column, a fixed summation order (strided partial sums, then a tree): bit-identical run to run.
//
// Shapes: out/dout [M, ldo] (A logits, value, padding), actions [M, K], act_sizes [K] (u32),
//   logprobs, values (rollout: old log-prob and value), advantages, returns [M], stats [M, S], logs [slots, S].
// Bindings: out, actions, logprobs, values, advantages, returns, act_sizes (reads); dout, stats, logs; Params.
// Dispatch: ppo_loss one invocation per element, grid ceil(M/WG); reduce_stats grid S, WG_REDUCE threads.

struct Params {
    M: u32, K: u32, A: u32, ldo: u32, slot: u32,
    clip_coef: f32, vf_coef: f32, vf_clip_coef: f32, ent_coef: f32,
    out_off: u32, actions_off: u32, logprobs_off: u32, values_off: u32, advantages_off: u32,
    returns_off: u32, act_sizes_off: u32, dout_off: u32, stats_off: u32, logs_off: u32,
}

const S: u32 = 8u;

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> actions: array<f32>;
@group(0) @binding(2) var<storage, read> logprobs: array<f32>;
@group(0) @binding(3) var<storage, read> values: array<f32>;
@group(0) @binding(4) var<storage, read> advantages: array<f32>;
@group(0) @binding(5) var<storage, read> returns: array<f32>;
@group(0) @binding(6) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(7) var<storage, read_write> dout: array<f32>;
@group(0) @binding(8) var<storage, read_write> stats: array<f32>;
@group(0) @binding(9) var<storage, read_write> logs: array<f32>;
@group(0) @binding(10) var<uniform> p: Params;

override WG: u32 = 64u;
override WG_REDUCE: u32 = 256u;

// log Σ exp over one head's logits out[b .. b+size)
fn head_lse(b: u32, size: u32) -> f32 {
    var mx = out[b];
    for (var j = 1u; j < size; j++) { mx = max(mx, out[b + j]); }
    var total = 0.0;
    for (var j = 0u; j < size; j++) { total += exp(out[b + j] - mx); }
    return mx + log(total);
}

// entropy −Σ p log p of one head, given its log-sum-exp
fn head_entropy(b: u32, size: u32, lse: f32) -> f32 {
    var ent = 0.0;
    for (var j = 0u; j < size; j++) {
        let lpj = out[b + j] - lse;
        ent -= exp(lpj) * lpj;
    }
    return ent;
}

@compute @workgroup_size(WG, 1, 1)
fn ppo_loss(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.M) { return; }
    let base = p.out_off + i * p.ldo;
    let inv_m = 1.0 / f32(p.M);

    // pass 1: per-head log-sum-exp, logp of the taken actions, entropies
    var logp = 0.0;
    var entropy = 0.0;
    var o = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        let lse = head_lse(base + o, size);
        entropy += head_entropy(base + o, size, lse);
        let a = u32(actions[p.actions_off + i * p.K + h]);
        logp += out[base + o + a] - lse;
        o += size;
    }

    let adv = advantages[p.advantages_off + i];
    let logratio = logp - logprobs[p.logprobs_off + i];
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
    let v_old = values[p.values_off + i];
    let ret = returns[p.returns_off + i];
    let dv = v - v_old;
    let v_clip = v_old + clamp(dv, -p.vf_clip_coef, p.vf_clip_coef);
    let sq = (v - ret) * (v - ret);
    let sq_clip = (v_clip - ret) * (v_clip - ret);
    let v_loss = 0.5 * max(sq, sq_clip);
    let v_clip_active = dv < -p.vf_clip_coef || dv > p.vf_clip_coef;
    var dvalue = p.vf_coef * inv_m * (v - ret);
    if (v_clip_active && sq_clip > sq) { dvalue = 0.0; }

    // pass 2: gradients of the logits
    let ent_scale = p.ent_coef * inv_m;
    o = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        let lse = head_lse(base + o, size);
        let ent = head_entropy(base + o, size, lse);
        let a = u32(actions[p.actions_off + i * p.K + h]);
        for (var j = 0u; j < size; j++) {
            let lpj = out[base + o + j] - lse;
            let pj = exp(lpj);
            dout[p.dout_off + i * p.ldo + o + j] = g * (select(0.0, 1.0, j == a) - pj) + ent_scale * pj * (lpj + ent);
        }
        o += size;
    }
    dout[p.dout_off + i * p.ldo + p.A] = dvalue;
    for (var j = p.A + 1u; j < p.ldo; j++) { dout[p.dout_off + i * p.ldo + j] = 0.0; }

    let s = p.stats_off + i * S;
    stats[s + 0u] = pg_loss;
    stats[s + 1u] = v_loss;
    stats[s + 2u] = entropy;
    stats[s + 3u] = pg_loss + p.vf_coef * v_loss - p.ent_coef * entropy;
    stats[s + 4u] = -logratio;
    stats[s + 5u] = (ratio - 1.0) - logratio;
    stats[s + 6u] = select(0.0, 1.0, abs(ratio - 1.0) > eps);
    stats[s + 7u] = ratio;
}

var<workgroup> partial: array<f32, 1024>;

@compute @workgroup_size(WG_REDUCE, 1, 1)
fn reduce_stats(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let k = wid.x;  // stat column
    let j = lid.x;
    var acc = 0.0;
    for (var i = j; i < p.M; i += WG_REDUCE) { acc += stats[p.stats_off + i * S + k]; }
    partial[j] = acc;
    workgroupBarrier();
    for (var half = WG_REDUCE / 2u; half > 0u; half /= 2u) {
        if (j < half) { partial[j] += partial[j + half]; }
        workgroupBarrier();
    }
    if (j == 0u) { logs[p.logs_off + p.slot * S + k] = partial[0] / f32(p.M); }
}
