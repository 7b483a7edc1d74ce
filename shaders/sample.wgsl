// sample.wgsl — per-head sampling from the decoder output during the rollout.
//
//   per agent n and head h, in head order (columns o_h .. o_h + size_h of out[n]), with the head
//   distributions of heads.wgsl (masked logits, softmax, clamped Gaussian):
//   discrete head (size ≥ 2): p_j = softmax(l)_j, l_j = out[n, o_h + j] or −1e4 where the action mask
//     says illegal;  u = uniform in (0, 1] from a counter-based hash of (seed, rng_step, n, h)
//     a_h = first j with u < cdf_j, else the last legal index (inverse CDF);  log p_{a_h}
//     deterministic: a_h = the first j with the largest l_j
//   continuous head (size 1, the k-th such head): μ = clamp(out[n, o_h], ±1e6),
//     s = clamp(logstd[k], −20, 2), σ = eˢ; ε ~ N(0, 1) by Box–Muller from two hashed uniforms;
//     a_h = clamp(μ + σ·ε, ±1e6)  (deterministic: a_h = μ);  log p = −½((a_h − μ)/σ)² − ½log 2π − s
//   logprob = Σ_h log p(a_h);  value = out[n, A]  (the rollout's TR_LOGPROB and TR_VALUE at step t)
//   Actions are stored as floats (discrete indices or Gaussian samples), for the env (actions_step)
//   and the rollout (actions).
//
// Shapes: out [N, out_stride] (A head columns then the value; out_stride ≥ A+1), act_sizes [K] (u32),
//   globals [4] u32 = (t, rng_step, seed, flags: bit 0 = deterministic), logstd [Kc],
//   mask [N, W] u32 (bit j of word w = column 32·w + j legal; read only when masked = 1),
//   actions_step [N, K], rollout storage (agent-major, row = n·T + t): actions [N·T, K],
//   transitions [N·T, TR_WIDTH] (transitions.wgsl).
// Bindings: out, act_sizes, globals, logstd, mask (reads); actions_step, actions, transitions (writes);
//   Params.
// Dispatch: one invocation per agent, grid ceil(N/WG).
// Same seed, rng_step and logits → same actions (no hidden state: the RNG is a hash of the counter).

struct Params {
    N: u32, K: u32, A: u32, out_stride: u32, T: u32, W: u32, masked: u32,
    out_off: u32, act_sizes_off: u32, globals_off: u32, logstd_off: u32, mask_off: u32,
    actions_step_off: u32, actions_off: u32, transitions_off: u32,
}

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(2) var<storage, read> globals: array<u32>;
@group(0) @binding(3) var<storage, read> logstd: array<f32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> actions_step: array<f32>;
@group(0) @binding(6) var<storage, read_write> actions: array<f32>;
@group(0) @binding(7) var<storage, read_write> transitions: array<f32>;
@group(0) @binding(8) var<uniform> p: Params;

override WG: u32 = 64u;

#include "heads.wgsl"
#include "transitions.wgsl"

const TWO_PI: f32 = 6.283185307179586;

// PCG hash (Jarzynski & Olano 2020): a good 32-bit mix, cheap on any GPU
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// uniform in (0, 1]: 24 random bits, shifted up by one ulp so that u > 0
fn uniform01(seed: u32, rng_step: u32, agent: u32, head: u32) -> f32 {
    let bits = pcg(seed ^ pcg(rng_step ^ pcg(agent ^ pcg(head))));
    return (f32(bits >> 8u) + 1.0) * (1.0 / 16777216.0);
}

// N(0, 1) by Box–Muller: u1 is the head's own uniform, u2 a second stream (high bit of the head index)
fn normal01(seed: u32, rng_step: u32, agent: u32, head: u32) -> f32 {
    let u1 = uniform01(seed, rng_step, agent, head);
    let u2 = uniform01(seed, rng_step, agent, head ^ 0x80000000u);
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

@compute @workgroup_size(WG, 1, 1)
fn sample_actions(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = gid.x;
    if (n >= p.N) { return; }
    let t = globals[p.globals_off];
    let rng_step = globals[p.globals_off + 1u];
    let seed = globals[p.globals_off + 2u];
    let deterministic = (globals[p.globals_off + 3u] & 1u) != 0u;
    let row = p.out_off + n * p.out_stride;
    let mrow = p.mask_off + n * p.W;
    let dst = n * p.T + t;
    var logprob = 0.0;
    var o = 0u;
    var kc = 0u;  // continuous heads so far
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        var a: f32;
        if (size == 1u) {
            let mu = gaussian_mu(row, o);
            let s = gaussian_logstd(kc);
            a = mu;
            if (!deterministic) { a = gaussian_clamp(mu + exp(s) * normal01(seed, rng_step, n, h)); }
            logprob += gaussian_logp(a, mu, s);
            kc += 1u;
        } else {
            let sm = head_softmax(row, mrow, o, size);
            var pick = 0u;
            if (deterministic) {  // the first of the largest logits
                for (var j = 1u; j < size; j++) {
                    if (head_logit(row, mrow, o + j) > head_logit(row, mrow, o + pick)) { pick = j; }
                }
            } else {
                let u = uniform01(seed, rng_step, n, h);
                pick = size - 1u;  // rounding left cdf < u: the last legal index (the last one if none is)
                for (var j = size; j > 0u; j--) {
                    if (head_legal(mrow, o + j - 1u)) { pick = j - 1u; break; }
                }
                var cdf = 0.0;
                for (var j = 0u; j < size; j++) {
                    cdf += exp(head_logit(row, mrow, o + j) - sm.mx) / sm.sum;
                    if (u < cdf) { pick = j; break; }
                }
            }
            logprob += head_logp(row, mrow, o + pick, sm);
            a = f32(pick);
        }
        actions_step[p.actions_step_off + n * p.K + h] = a;
        actions[p.actions_off + dst * p.K + h] = a;
        o += size;
    }
    let tr = p.transitions_off + dst * TR_WIDTH;
    transitions[tr + TR_LOGPROB] = logprob;
    transitions[tr + TR_VALUE] = out[row + p.A];
}
