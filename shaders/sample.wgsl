// sample.wgsl — per-head sampling from the decoder output during the rollout.
//
//   per agent n and head h (logits l = out[n, o_h .. o_h + size_h)):
//     p_j = softmax(l)_j;  u = uniform in (0, 1] from a counter-based hash of (seed, step, n, h)
//     a_h = first j with u < cdf_j, else the last index   (inverse CDF)
//   logprob = Σ_h log p_{a_h};  value = out[n, A]
//   Actions are stored as float indices, for the env (actions_step) and the rollout (actions).
//
// Shapes: out [N, ldo] (A logits then the value; ldo ≥ A+1), act_sizes [K] (u32),
//   globals [4] u32 = (t, step, seed, unused), actions_step [N, K],
//   rollout storage (agent-major, row = n·T + t): actions [N·T, K], logprobs [N·T], values [N·T].
// Bindings: out, act_sizes, globals (reads); actions_step, actions, logprobs, values (writes); Params.
// Dispatch: one invocation per agent, grid ceil(N/WG).
// Same seed, step and logits → same actions (no hidden state: the RNG is a hash of the counter).

struct Params {
    N: u32, K: u32, A: u32, ldo: u32, T: u32,
    out_off: u32, act_sizes_off: u32, globals_off: u32,
    actions_step_off: u32, actions_off: u32, logprobs_off: u32, values_off: u32,
}

@group(0) @binding(0) var<storage, read> out: array<f32>;
@group(0) @binding(1) var<storage, read> act_sizes: array<u32>;
@group(0) @binding(2) var<storage, read> globals: array<u32>;
@group(0) @binding(3) var<storage, read_write> actions_step: array<f32>;
@group(0) @binding(4) var<storage, read_write> actions: array<f32>;
@group(0) @binding(5) var<storage, read_write> logprobs: array<f32>;
@group(0) @binding(6) var<storage, read_write> values: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

override WG: u32 = 64u;

// PCG hash (Jarzynski & Olano 2020): a good 32-bit mix, cheap on any GPU
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// uniform in (0, 1]: 24 random bits, shifted up by one ulp so that u > 0
fn uniform01(seed: u32, step: u32, agent: u32, head: u32) -> f32 {
    let bits = pcg(seed ^ pcg(step ^ pcg(agent ^ pcg(head))));
    return (f32(bits >> 8u) + 1.0) * (1.0 / 16777216.0);
}

@compute @workgroup_size(WG, 1, 1)
fn sample_actions(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = gid.x;
    if (n >= p.N) { return; }
    let t = globals[p.globals_off];
    let step = globals[p.globals_off + 1u];
    let seed = globals[p.globals_off + 2u];
    let row = p.out_off + n * p.ldo;
    let dst = n * p.T + t;
    var logprob = 0.0;
    var o = 0u;
    for (var h = 0u; h < p.K; h++) {
        let size = act_sizes[p.act_sizes_off + h];
        var mx = out[row + o];
        for (var j = 1u; j < size; j++) { mx = max(mx, out[row + o + j]); }
        var total = 0.0;
        for (var j = 0u; j < size; j++) { total += exp(out[row + o + j] - mx); }
        let u = uniform01(seed, step, n, h);
        var pick = size - 1u;
        var cdf = 0.0;
        for (var j = 0u; j < size; j++) {
            cdf += exp(out[row + o + j] - mx) / total;
            if (u < cdf) { pick = j; break; }
        }
        logprob += out[row + o + pick] - mx - log(total);
        actions_step[p.actions_step_off + n * p.K + h] = f32(pick);
        actions[p.actions_off + dst * p.K + h] = f32(pick);
        o += size;
    }
    logprobs[p.logprobs_off + dst] = logprob;
    values[p.values_off + dst] = out[row + p.A];
}
