/* jsvec.c — the JS env's calls beyond the vecenv's, compiled after vecenv.c into the same module
 * (envs/js/env.py declares them to cffi). */

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

/* Score, lives and state code of env `index` as of its last draw: out[3]. */
void js_vec_state(VecEnv* vec, int index, double* out) {
    if (index < 0 || index >= vec->num_envs) return;
    for (int i = 0; i < 3; i++) out[i] = vec->envs[index].out[i];
}

/* The RGB picture ([H][W][3]) and score, lives, state code at env `index`'s last episode end
 * (the observation already shows the next episode). */
void js_vec_final(VecEnv* vec, int index, unsigned char* frame, double* out) {
    if (index < 0 || index >= vec->num_envs) return;
    Env* env = &vec->envs[index];
    if (env->final_frame != NULL)
        memcpy(frame, env->final_frame, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
    for (int i = 0; i < 3; i++) out[i] = env->final_out[i];
}

/* The RGB picture of env `index` now ([H][W][3], also for grayscale observations). */
void js_vec_frame(VecEnv* vec, int index, unsigned char* frame) {
    if (index < 0 || index >= vec->num_envs) return;
    memcpy(frame, vec->envs[index].canvas[0].px, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
}

/* How many lines env `index` prefetches for (jsenv.h's js_prefetch: 0 until it has recorded). */
int js_vec_prefetch_lines(VecEnv* vec, int index) {
    if (index < 0 || index >= vec->num_envs) return 0;
    return vec->envs[index].pf_n;
}
