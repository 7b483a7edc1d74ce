// advantage.wgsl — GAE / V-trace for one minibatch, from the live values (PufferLib 5.0, G3).
//
//   A_{T−1} = 0; for t = T−2 … 0:
//     nd = 1 − d_{t+1};  ρ = min(ratio_t, ρ̄);  c = min(ratio_t, c̄)   (GAE: ρ = c = 1)
//     δ = ρ·(r_{t+1} + γ·V_{t+1}·nd − V_t);  A_t = δ + γ·λ·c·nd·A_{t+1}
//   returns R_t = V_t + A_t;  rewards clamped to [−1, 1];  V = live value (decoder column A).
//   ratio_t = exp(logp_new − logp_old) (V-trace only), logp_new = Σ_h log p(a_h) over the heads in order:
//     discrete: log softmax(l)[a_h], l = the head's logits with −1e4 where the action mask says illegal;
//     continuous (the k-th): −½((a − μ)/σ)² − ½log 2π − s, μ = clamp(mean, ±1e6),
//     s = clamp(logstd[k], −20, 2), σ = eˢ, a = clamp(action, ±1e6)   (as ppo.wgsl)
//   (r_t, d_t stored beside o_t are the outcome of a_{t−1}: the transition t → t+1 uses r_{t+1}, d_{t+1}.)
//
// Shapes (minibatch rows, row = r·T + t): out [R·T, out_stride] (A head columns, value), actions [R·T, K],
//   logprobs (old) [R·T], rewards [R·T], terminals [R·T], act_sizes [K] (u32), logstd [Kc],
//   mask [R·T, W] u32 (bit j of word w = column 32·w + j legal; read only when masked = 1);
//   advantages, returns [R·T].
// Bindings: out, actions, logprobs, rewards, terminals, act_sizes, logstd, mask (reads); advantages,
//   returns; Params.
// Dispatch: one invocation per agent row (the recursion runs backwards over T): grid ceil(R/WG).

struct Params {
    R: u32, T: u32, K: u32, A: u32, out_stride: u32, W: u32, masked: u32,
    vtrace: u32,
    gamma: f32, lambda: f32, rho_clip: f32, c_clip: f32,
    out_off: u32, actions_off: u32, logprobs_off: u32, rewards_off: u32, terminals_off: u32,
    act_sizes_off: u32, logstd_off: u32, mask_off: u32, advantages_off: u32, returns_off: u32,
}

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> actions: array<f32>;
@group(0) @binding(2) var<storage, read> logprobs: array<f32>;
@group(0) @binding(3) var<storage, read> rewards: array<f32>;
@group(0) @binding(4) var<storage, read> terminals: array<f32>;
@group(0) @binding(5) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(6) var<storage, read> logstd: array<f32>;
@group(0) @binding(7) var<storage, read> mask: array<u32>;
@group(0) @binding(8) var<storage, read_write> advantages: array<f32>;
@group(0) @binding(9) var<storage, read_write> returns: array<f32>;
@group(0) @binding(10) var<uniform> p: Params;

override WG: u32 = 64u;

const MASKED_LOGIT: f32 = -1e4;
const MU_MAX: f32 = 1e6;
const HALF_LOG_2PI: f32 = 0.9189385332046727;

// the logit of column col of minibatch row `row` as the distribution sees it (masked → −1e4)
fn logit(row: u32, col: u32) -> f32 {
    var ok = true;
    if (p.masked != 0u) { ok = ((mask[p.mask_off + row * p.W + col / 32u] >> (col % 32u)) & 1u) != 0u; }
    return select(MASKED_LOGIT, out[p.out_off + row * p.out_stride + col], ok);
}

// logp_new(row) = Σ_h log p(a_h)
fn logp_new(row: u32) -> f32 {
    var lp = 0.0;
    var o = 0u;
    var kc = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        let act = actions[p.actions_off + row * p.K + h];
        if (size == 1u) {
            let s = clamp(logstd[p.logstd_off + kc], -20.0, 2.0);
            let mu = clamp(out[p.out_off + row * p.out_stride + o], -MU_MAX, MU_MAX);
            let z = (clamp(act, -MU_MAX, MU_MAX) - mu) / exp(s);
            lp += -0.5 * z * z - HALF_LOG_2PI - s;
            kc += 1u;
        } else {
            var mx = logit(row, o);
            for (var j = 1u; j < size; j++) { mx = max(mx, logit(row, o + j)); }
            var total = 0.0;
            for (var j = 0u; j < size; j++) { total += exp(logit(row, o + j) - mx); }
            lp += logit(row, o + u32(act)) - mx - log(total);
        }
        o += size;
    }
    return lp;
}

fn value(row: u32) -> f32 { return out[p.out_off + row * p.out_stride + p.A]; }

@compute @workgroup_size(WG, 1, 1)
fn compute_advantage(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x;
    if (r >= p.R) { return; }
    let T = p.T;
    let last = r * T + T - 1u;
    var adv = 0.0;
    var v_next = value(last);
    advantages[p.advantages_off + last] = 0.0;
    returns[p.returns_off + last] = v_next;
    for (var i = 1u; i < T; i++) {
        let row = last - i;
        let v = value(row);
        let nd = 1.0 - terminals[p.terminals_off + row + 1u];
        let rew = clamp(rewards[p.rewards_off + row + 1u], -1.0, 1.0);
        var rho = 1.0;
        var c = 1.0;
        if (p.vtrace != 0u) {
            let ratio = exp(logp_new(row) - logprobs[p.logprobs_off + row]);
            rho = min(ratio, p.rho_clip);
            c = min(ratio, p.c_clip);
        }
        let delta = rho * (rew + p.gamma * v_next * nd - v);
        adv = delta + p.gamma * p.lambda * c * nd * adv;
        advantages[p.advantages_off + row] = adv;
        returns[p.returns_off + row] = v + adv;
        v_next = v;
    }
}
