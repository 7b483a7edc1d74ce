/* jsvec.c — the JS env's calls beyond the vecenv's, compiled after vecenv.c into the same module
 * (envs/js/jsenv.py declares them to cffi). */

/* Index of the first env whose game failed (its message: js_vec_message), else -1. Envs stop at
 * their first error and report terminal on every later step. */
int js_vec_failed(VecEnv* vec) {
    for (int e = 0; e < vec->num_envs; e++)
        if (vec->envs[e].failed) return e;
    return -1;
}

const char* js_vec_message(VecEnv* vec, int index) {
    if (index < 0 || index >= vec->num_envs) return "";
    return vec->envs[index].err;
}

/* Starts env `index`'s next episode with seed `seed` (replays of recorded episodes). */
void js_vec_reset_seed(VecEnv* vec, int index, unsigned int seed) {
    if (index < 0 || index >= vec->num_envs) return;
    vec_clear_env_outputs(&vec->envs[index]);
    js_begin_episode(&vec->envs[index], seed);
}

unsigned int js_vec_episode_seed(VecEnv* vec, int index) {
    if (index < 0 || index >= vec->num_envs) return 0;
    return vec->envs[index].episode_seed;
}

/* Score, lives and state code of env `index` as of its last draw: out[3]. */
void js_vec_state(VecEnv* vec, int index, double* out) {
    if (index < 0 || index >= vec->num_envs) return;
    for (int i = 0; i < 3; i++) out[i] = vec->envs[index].out[i];
}
