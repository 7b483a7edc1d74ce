// transitions.wgsl — the columns of a rollout transition row, included by the four files that read or
// write it (rollout.wgsl, sample.wgsl, advantage.wgsl, ppo.wgsl); trainer/kernels/__init__.py's
// TRANSITION names the same columns in the same order (a test checks that they agree).
//
//   transitions [N·T, TR_WIDTH] f32, agent-major (row n·T + t), one row per rollout element:
//     TR_LOGPROB   Σ_h log p(a_h) of the action sampled at t          (sample_actions)
//     TR_VALUE     the value the policy gave o_t when acting          (sample_actions)
//     TR_REWARD    r_t, stored beside o_t: the outcome of a_{t−1}     (rollout_store)
//     TR_TERMINAL  d_t, likewise                                      (rollout_store)
//     TR_ADVANTAGE A_t of the minibatch being learned, live values    (compute_advantage)
//     TR_RETURN    R_t = V_t + A_t, likewise                          (compute_advantage)
// Why one record and not six buffers: every per-element kernel then binds one buffer for all of them,
// which keeps each inside WebGPU's 8 storage buffers per stage, and one element's scalars share a
// cache line.

const TR_LOGPROB: u32 = 0u;
const TR_VALUE: u32 = 1u;
const TR_REWARD: u32 = 2u;
const TR_TERMINAL: u32 = 3u;
const TR_ADVANTAGE: u32 = 4u;
const TR_RETURN: u32 = 5u;
const TR_WIDTH: u32 = 6u;
