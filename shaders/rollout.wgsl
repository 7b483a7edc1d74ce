// rollout.wgsl — store one step of env data into the agent-major rollout buffers.
//
//   obs[n·T + t, 0:Dw] = obs_step[n, 0:Dw];  obs[n·T + t, Dw:obs_stride] = 0 (row padding)
//   Observations travel as u32 words and are copied bit for bit: float32 observations one value per
//   word (Dw = D, rows padded to ceil4(D) for vec4 loads), uint8 observations packed 4 per word,
//   little-endian (value i = byte i%4 of word i/4; Dw = obs_stride = ceil(D/4)), unpacked where read.
//   transitions[n·T + t, TR_REWARD] = rewards_step[n];  transitions[n·T + t, TR_TERMINAL] = terminals_step[n]
//   mask[n·T + t, 0:W] = mask_step[n, 0:W] (when masked = 1: the action mask, one bit per decoder column)
//   (r_t, d_t beside o_t are the outcome of action a_{t−1}, as PufferLib stores them.)
//
// Shapes: obs_step [N, Dw] u32, rewards_step/terminals_step [N], mask_step [N, W] u32, globals [4] u32 =
//   (t, rng_step, seed, flags), obs [N·T, obs_stride] u32, transitions [N·T, TR_WIDTH] (transitions.wgsl),
//   mask [N·T, W] u32. N here is the
//   agents of one dispatch (a chunk that fits the adapter's binding size); agent0 is the chunk's
//   first agent in the step arrays.
// Bindings: obs_step, rewards_step, terminals_step, mask_step, globals (reads); obs, transitions, mask;
//   Params.
// Dispatch: one invocation per (column, agent): grid (ceil(max(obs_stride, W)/WG), N).

struct Params {
    N: u32, Dw: u32, T: u32, obs_stride: u32, agent0: u32, W: u32, masked: u32,
    obs_step_off: u32, rewards_step_off: u32, terminals_step_off: u32, mask_step_off: u32, globals_off: u32,
    obs_off: u32, transitions_off: u32, mask_off: u32,
}

@group(0) @binding(0) var<storage, read> obs_step: array<u32>;
@group(0) @binding(1) var<storage, read> rewards_step: array<f32>;
@group(0) @binding(2) var<storage, read> terminals_step: array<f32>;
@group(0) @binding(3) var<storage, read> mask_step: array<u32>;
@group(0) @binding(4) var<storage, read> globals: array<u32>;
@group(0) @binding(5) var<storage, read_write> obs: array<u32>;
@group(0) @binding(6) var<storage, read_write> transitions: array<f32>;
@group(0) @binding(7) var<storage, read_write> mask: array<u32>;
@group(0) @binding(8) var<uniform> p: Params;

override WG: u32 = 64u;

#include "transitions.wgsl"

@compute @workgroup_size(WG, 1, 1)
fn rollout_store(@builtin(global_invocation_id) gid: vec3<u32>) {
    let col = gid.x; let n = gid.y;
    if (n >= p.N) { return; }
    let t = globals[p.globals_off];
    let src = p.agent0 + n;
    let dst = n * p.T + t;
    if (col < p.obs_stride) {
        var v = 0u;
        if (col < p.Dw) { v = obs_step[p.obs_step_off + src * p.Dw + col]; }
        obs[p.obs_off + dst * p.obs_stride + col] = v;
    }
    if (col == 0u) {
        let tr = p.transitions_off + dst * TR_WIDTH;
        transitions[tr + TR_REWARD] = rewards_step[p.rewards_step_off + src];
        transitions[tr + TR_TERMINAL] = terminals_step[p.terminals_step_off + src];
    }
    if (p.masked != 0u && col < p.W) {
        mask[p.mask_off + dst * p.W + col] = mask_step[p.mask_step_off + src * p.W + col];
    }
}
