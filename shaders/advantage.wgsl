// advantage.wgsl — GAE / V-trace for one minibatch, from the live values (PufferLib 5.0, G3).
//
//   A_{T−1} = 0; for t = T−2 … 0:
//     nd = 1 − d_{t+1};  ρ = min(ratio_t, ρ̄);  c = min(ratio_t, c̄)   (GAE: ρ = c = 1)
//     δ = ρ·(r_{t+1} + γ·V_{t+1}·nd − V_t);  A_t = δ + γ·λ·c·nd·A_{t+1}
//   returns R_t = V_t + A_t;  rewards clamped to [−1, 1];  V = live value (decoder column A).
//   ratio_t = exp(logp_new − logp_old) (V-trace only), logp_new = Σ_h log p(a_h) over the heads in order,
//   with the head distributions of heads.wgsl (the same functions as sampling and the PPO loss):
//     discrete: log softmax(l)[a_h], l = the head's logits with −1e4 where the action mask says illegal;
//     continuous (the k-th): −½((a − μ)/σ)² − ½log 2π − s, μ = clamp(mean, ±1e6),
//     s = clamp(logstd[k], −20, 2), σ = eˢ, a = clamp(action, ±1e6)
//   (r_t, d_t stored beside o_t are the outcome of a_{t−1}: the transition t → t+1 uses r_{t+1}, d_{t+1}.)
//
// Shapes (minibatch rows, row = r·T + t): out [R·T, out_stride] (A head columns, value), actions [R·T, K],
//   act_sizes [K] (u32), logstd [Kc], mask [R·T, W] u32 (bit j of word w = column 32·w + j legal; read
//   only when masked = 1), transitions [R·T, TR_WIDTH] (transitions.wgsl): reads the old log-probability,
//   reward and terminal of each row, writes its advantage and return.
// Bindings: out, actions, act_sizes, logstd, mask (reads); transitions (read and written); Params.
// Dispatch: one invocation per agent row (the recursion runs backwards over T): grid ceil(R/WG).

struct Params {
    R: u32, T: u32, K: u32, A: u32, out_stride: u32, W: u32, masked: u32,
    vtrace: u32,
    gamma: f32, lambda: f32, rho_clip: f32, c_clip: f32,
    out_off: u32, actions_off: u32, act_sizes_off: u32, logstd_off: u32, mask_off: u32, transitions_off: u32,
}

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> actions: array<f32>;
@group(0) @binding(2) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(3) var<storage, read> logstd: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> transitions: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

override WG: u32 = 64u;

#include "heads.wgsl"
#include "transitions.wgsl"

// column col of minibatch row i's transition
fn tr(i: u32, col: u32) -> u32 { return p.transitions_off + i * TR_WIDTH + col; }

// logp_new(i) = Σ_h log p(a_h) of minibatch row i (= r·T + t)
fn logp_new(i: u32) -> f32 {
    let row = p.out_off + i * p.out_stride;
    let mrow = p.mask_off + i * p.W;
    var lp = 0.0;
    var o = 0u;
    var kc = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        let act = actions[p.actions_off + i * p.K + h];
        if (size == 1u) {
            lp += gaussian_logp(gaussian_clamp(act), gaussian_mu(row, o), gaussian_logstd(kc));
            kc += 1u;
        } else {
            lp += head_logp(row, mrow, o + u32(act), head_softmax(row, mrow, o, size));
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
    transitions[tr(last, TR_ADVANTAGE)] = 0.0;
    transitions[tr(last, TR_RETURN)] = v_next;
    for (var i = 1u; i < T; i++) {
        let row = last - i;
        let v = value(row);
        let nd = 1.0 - transitions[tr(row + 1u, TR_TERMINAL)];
        let rew = clamp(transitions[tr(row + 1u, TR_REWARD)], -1.0, 1.0);
        var rho = 1.0;
        var c = 1.0;
        if (p.vtrace != 0u) {
            let ratio = exp(logp_new(row) - transitions[tr(row, TR_LOGPROB)]);
            rho = min(ratio, p.rho_clip);
            c = min(ratio, p.c_clip);
        }
        let delta = rho * (rew + p.gamma * v_next * nd - v);
        adv = delta + p.gamma * p.lambda * c * nd * adv;
        transitions[tr(row, TR_ADVANTAGE)] = adv;
        transitions[tr(row, TR_RETURN)] = v + adv;
        v_next = v;
    }
}
