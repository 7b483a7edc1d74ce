/* goexplore_vec.h — the vecenv's side of Go-Explore (envs/c/goexplore.h), included at the end of
 * vecenv.c. Every env module exports these functions (the cffi declarations are shared); they
 * do something only for an env that includes goexplore.h and defines PUF_GOEXPLORE(env).
 *
 * vecenv.c creates the archive with the envs (ge_host_begin/ge_host_end around puf_init), keeps
 * it in VecEnv.archive, and merges the envs' findings between steps (ge_sync at the end of
 * vec_step and at the start of vec_log_range, both on the host thread while no env steps).
 */
#if defined(GOEXPLORE_H) && defined(PUF_GOEXPLORE)
#define VEC_GE 1
#else
#define VEC_GE 0
#endif

/* Archive figures, in this order (names in envs/c/goexplore.py): cells, frontier progress (the
 * most progress of any cell, 1 once a route reached the goal), steps of
 * the best route to the goal (0: none yet), cells dropped because it was full, findings dropped
 * because a pending list was full, routes replaced by shorter ones, syncs, frontier size,
 * replay mismatches, capacity. Returns 1 with an archive, 0 for an env that supports Go-Explore
 * with it off, -1 for an env without it. *fingerprint: the env's route fingerprint. */
int vec_ge_info(VecEnv* vec, double* out, int n, uint64_t* fingerprint) {
    for (int i = 0; i < n; i++) out[i] = 0.0;
    *fingerprint = 0;
#if VEC_GE
    if (vec->num_envs > 0) *fingerprint = PUF_GOEXPLORE(&vec->envs[0])->spec.fingerprint;
    GeArchive* a = (GeArchive*)vec->archive;
    if (a == NULL) return 0;
    double progress = a->goal.len >= 0 ? 1.0 : (double)a->max_progress;
    double v[] = {(double)a->n, progress, (double)(a->goal.len >= 0 ? a->goal.len : 0),
                  (double)a->dropped_full, (double)a->dropped_pending, (double)a->improved,
                  (double)a->clock, (double)a->frontier_n, (double)a->mismatches, (double)a->max_cells};
    for (int i = 0; i < n && i < (int)(sizeof(v) / sizeof(v[0])); i++) out[i] = v[i];
    return 1;
#else
    (void)vec;
    return -1;
#endif
}

/* Merges pending findings now (vec_step and vec_log do it themselves). */
void vec_ge_sync(VecEnv* vec) {
#if VEC_GE
    ge_sync((GeArchive*)vec->archive);
#else
    (void)vec;
#endif
}

/* Serializes the archive into buf when cap suffices; returns the bytes it needs (-1: none).
 * Sizes are 64-bit on every OS (long is 32-bit on Windows). */
int64_t vec_ge_save(VecEnv* vec, unsigned char* buf, int64_t cap) {
#if VEC_GE
    GeArchive* a = (GeArchive*)vec->archive;
    if (a == NULL) return -1;
    ge_sync(a);
    return (int64_t)ge_save(a, buf, cap > 0 ? (size_t)cap : 0);
#else
    (void)vec, (void)buf, (void)cap;
    return -1;
#endif
}

/* Replaces the archive with a saved one; 0 and a message in err when it does not fit. */
int vec_ge_load(VecEnv* vec, const unsigned char* buf, int64_t n, char* err, int err_len) {
#if VEC_GE
    GeArchive* a = (GeArchive*)vec->archive;
    if (a == NULL) {
        snprintf(err, err_len, "Go-Explore is off for this env (set [env] go_explore > 0)");
        return 0;
    }
    return ge_load(a, buf, n > 0 ? (size_t)n : 0, err, err_len);
#else
    (void)vec, (void)buf, (void)n;
    snprintf(err, err_len, "this env does not use envs/c/goexplore.h");
    return 0;
#endif
}

/* Env `index` starts a new episode at the real start with env rng = seed (a route's seed):
 * what an exported route replays from. Returns -1 for an env without Go-Explore. */
int vec_ge_reset_real(VecEnv* vec, int index, unsigned int seed) {
#if VEC_GE
    if (index < 0 || index >= vec->num_envs) return -1;
    Env* env = &vec->envs[index];
    PUF_GOEXPLORE(env)->force_real = 1;
    env->rng = seed;
    vec_clear_env_outputs(env);
    puf_reset(env);
    return 0;
#else
    (void)vec, (void)index, (void)seed;
    return -1;
#endif
}

/* Env `index`'s cell key and progress now, and its savestate bytes (up to cap). Returns the
 * savestate size, or -1 for an env without Go-Explore. */
int vec_ge_probe(VecEnv* vec, int index, uint64_t* key, float* progress, unsigned char* state, int cap) {
#if VEC_GE
    if (index < 0 || index >= vec->num_envs) return -1;
    Env* env = &vec->envs[index];
    GoExplore* ge = PUF_GOEXPLORE(env);
    *key = ge->spec.cell(env, progress);
    int ss = ge->spec.state_size;
    if (ss > 0 && cap >= ss) memcpy(state, ge->spec.state, (size_t)ss);
    return ss;
#else
    (void)vec, (void)index, (void)state, (void)cap;
    *key = 0;
    *progress = 0.0f;
    return -1;
#endif
}
