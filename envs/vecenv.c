/* vecenv.c — steps many copies of one env header on OpenMP threads (PufferLib 5.0's CPU vecenv).
 *
 * Compiled once per env with -DENV_HEADER='"path/to/env.h"' (envs/build.py does it through cffi;
 * envs/vecenv_driver.c includes this file for plain-C and sanitizer runs).
 *
 * Layout: envs are created by puf_init on zeroed Env structs until the sum of their num_agents
 * reaches total_agents (N = that sum, so N >= total_agents; exactly total_agents when every env
 * has one agent). Agent rows follow env order, then agent order. The host owns four flat arrays
 *     observations [N][OBS_SIZE] obs_t, actions [N][NUM_ATNS] f32, rewards [N] f32,
 *     terminals [N] f32, action_mask [N][sum ACT_SIZES] u8
 * and vec_bind aims every Agent at its rows. Nothing is allocated after vec_create.
 */
#include ENV_HEADER

#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const int vec_act_sizes_table[NUM_ATNS] = ACT_SIZES;

#define VEC_MAX_AGENTS_PER_ENV ((int)(sizeof(((Env*)0)->agents) / sizeof(Agent)))
#define VEC_LOG_FIELDS ((int)(sizeof(Log) / sizeof(float)))

typedef struct VecEnv {
    Env* envs;        /* [num_envs] */
    int num_envs;
    int num_agents;   /* N = sum of envs[i].num_agents */
    int num_threads;
} VecEnv;

/* ---- Compile-time facts about the env, for the Python side ---- */
int vec_obs_size(void) { return OBS_SIZE; }
int vec_num_atns(void) { return NUM_ATNS; }
void vec_act_sizes(int* out) {
    for (int i = 0; i < NUM_ATNS; i++) out[i] = vec_act_sizes_table[i];
}
int vec_obs_bytes(void) { return (int)sizeof(obs_t); }
const char* vec_obs_type(void) {
    return _Generic((obs_t)0,
        float: "float32", double: "float64",
        unsigned char: "uint8", signed char: "int8", char: "int8",
        short: "int16", unsigned short: "uint16", int: "int32", unsigned int: "uint32",
        default: "unknown");
}
int vec_log_fields(void) { return VEC_LOG_FIELDS; }

/* env.rng: PufferLib presets it to the env index; puffgpu mixes in a user seed (murmur3's
 * finalizer) so that runs with different seeds differ while seed 0 stays reproducible. */
static unsigned int vec_seed_mix(unsigned int seed, unsigned int index) {
    uint32_t h = index * 0x9E3779B9u ^ (seed * 0x85EBCA6Bu + seed);
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/* Returns NULL and writes a message into err on failure. */
VecEnv* vec_create(int total_agents, Dict* kwargs, unsigned int seed, int num_threads, char* err,
                   int err_len) {
    if (total_agents <= 0) {
        snprintf(err, err_len, "total_agents must be >= 1, got %d", total_agents);
        return NULL;
    }
    VecEnv* vec = (VecEnv*)calloc(1, sizeof(VecEnv));
    /* Every env holds >= 1 agent, so total_agents envs always suffice. Allocated once and never
     * moved: an env may keep pointers into itself. */
    Env* envs = vec ? (Env*)calloc((size_t)total_agents, sizeof(Env)) : NULL;
    if (envs == NULL) {
        free(vec);
        snprintf(err, err_len, "out of memory allocating %d envs of %zu bytes", total_agents,
                 sizeof(Env));
        return NULL;
    }
    vec->envs = envs;
    vec->num_threads = num_threads < 1 ? 1 : num_threads;
    int agents = 0, n = 0;
    while (agents < total_agents) {
        Env* env = &envs[n];
        env->rng = vec_seed_mix(seed, (unsigned int)n);
        kwargs->missing = NULL;
        puf_init(env, kwargs);
        n++;
        vec->num_envs = n; /* so vec_close closes this env on failure too */
        if (kwargs->missing != NULL) {
            snprintf(err, err_len,
                     "the env reads [env] key '%s' with dict_get, but the config has no such key; "
                     "add it to the [env] section of the env's .ini",
                     kwargs->missing);
            goto fail;
        }
        if (env->num_agents < 1 || env->num_agents > VEC_MAX_AGENTS_PER_ENV) {
            snprintf(err, err_len, "puf_init set num_agents = %d; it must be in [1, %d] (the size "
                     "of Env.agents)", env->num_agents, VEC_MAX_AGENTS_PER_ENV);
            goto fail;
        }
        agents += env->num_agents;
    }
    vec->num_agents = agents;
    return vec;
fail:
    for (int i = 0; i < vec->num_envs; i++) puf_close(&vec->envs[i]);
    free(vec->envs);
    free(vec);
    return NULL;
}

int vec_num_envs(VecEnv* vec) { return vec->num_envs; }
int vec_num_agents(VecEnv* vec) { return vec->num_agents; }
void vec_set_threads(VecEnv* vec, int num_threads) {
    vec->num_threads = num_threads < 1 ? 1 : num_threads;
}

void vec_bind(VecEnv* vec, void* observations, float* actions, float* rewards, float* terminals,
              unsigned char* action_mask) {
    int mask_size = 0;
    for (int i = 0; i < NUM_ATNS; i++) mask_size += vec_act_sizes_table[i];
    int row = 0;
    for (int e = 0; e < vec->num_envs; e++) {
        Env* env = &vec->envs[e];
        for (int a = 0; a < env->num_agents; a++, row++) {
            Agent* agent = &env->agents[a];
            agent->observations = (obs_t*)observations + (size_t)row * OBS_SIZE;
            agent->actions = actions + (size_t)row * NUM_ATNS;
            agent->rewards = rewards + row;
            agent->terminals = terminals + row;
            agent->action_mask = action_mask + (size_t)row * mask_size;
            agent->policy = 0;
        }
    }
}

static inline void vec_clear_outputs(Env* env) {
    for (int a = 0; a < env->num_agents; a++) {
        env->agents[a].rewards[0] = 0.0f;
        env->agents[a].terminals[0] = 0.0f;
    }
}

void vec_reset(VecEnv* vec) {
    Env* envs = vec->envs;
    int n = vec->num_envs;
    #pragma omp parallel for schedule(static) num_threads(vec->num_threads)
    for (int e = 0; e < n; e++) {
        vec_clear_outputs(&envs[e]);
        puf_reset(&envs[e]);
    }
}

/* Steps envs [lo, hi): a contiguous group, e.g. one of PufferLib's num_buffers halves. */
void vec_step_range(VecEnv* vec, int lo, int hi) {
    Env* envs = vec->envs;
    if (lo < 0) lo = 0;
    if (hi > vec->num_envs) hi = vec->num_envs;
    #pragma omp parallel for schedule(static) num_threads(vec->num_threads)
    for (int e = lo; e < hi; e++) {
        vec_clear_outputs(&envs[e]);
        puf_step(&envs[e]);
    }
}

void vec_step(VecEnv* vec) { vec_step_range(vec, 0, vec->num_envs); }

/* PufferLib's vec_log over envs [lo, hi): sum every Log field over envs with n != 0, clear those
 * logs, divide all fields by the total n, and let puf_log name them into `out`. Returns the total
 * n (0: nothing finished since the last call, and `out` is left empty). */
float vec_log_range(VecEnv* vec, int lo, int hi, Dict* out) {
    Log sum;
    memset(&sum, 0, sizeof(Log));
    float* s = (float*)&sum;
    if (lo < 0) lo = 0;
    if (hi > vec->num_envs) hi = vec->num_envs;
    for (int e = lo; e < hi; e++) {
        Log* log = &vec->envs[e].log;
        if (log->n == 0.0f) continue;
        const float* l = (const float*)log;
        for (int i = 0; i < VEC_LOG_FIELDS; i++) s[i] += l[i];
        memset(log, 0, sizeof(Log));
    }
    float total = sum.n;
    out->size = 0;
    if (total == 0.0f) return 0.0f;
    for (int i = 0; i < VEC_LOG_FIELDS; i++) s[i] /= total;
    puf_log(&sum, out);
    return total;
}

float vec_log(VecEnv* vec, Dict* out) { return vec_log_range(vec, 0, vec->num_envs, out); }

/* Episodes finished by each env since its log was last cleared: out[num_envs]. Lets an evaluator
 * take exactly the first episode of every env (fair: short episodes are not over-counted). */
void vec_log_counts(VecEnv* vec, float* out) {
    for (int e = 0; e < vec->num_envs; e++) out[e] = vec->envs[e].log.n;
}

/* Renders env `index` into the canvas; returns the pixels ([*height][*width][3]) or NULL if the
 * env drew nothing. Valid until the next render call. */
const unsigned char* vec_render(VecEnv* vec, int index, int* width, int* height) {
    *width = 0;
    *height = 0;
    if (index < 0 || index >= vec->num_envs) return NULL;
    puf_canvas.width = 0;
    puf_canvas.height = 0;
    puf_render(&vec->envs[index]);
    if (puf_canvas.pixels == NULL || puf_canvas.width <= 0) return NULL;
    *width = puf_canvas.width;
    *height = puf_canvas.height;
    return puf_canvas.pixels;
}

/* An env may ship a rule-based policy on its observation (for demos and tests) by defining
 * PUF_SCRIPTED_POLICY as a function void f(const obs_t* obs, float* actions). */
int vec_has_scripted(void) {
#ifdef PUF_SCRIPTED_POLICY
    return 1;
#else
    return 0;
#endif
}

void vec_scripted(VecEnv* vec) {
#ifdef PUF_SCRIPTED_POLICY
    for (int e = 0; e < vec->num_envs; e++) {
        Env* env = &vec->envs[e];
        for (int a = 0; a < env->num_agents; a++) {
            PUF_SCRIPTED_POLICY(env->agents[a].observations, env->agents[a].actions);
        }
    }
#else
    (void)vec;
#endif
}

void vec_close(VecEnv* vec) {
    if (vec == NULL) return;
    for (int e = 0; e < vec->num_envs; e++) puf_close(&vec->envs[e]);
    free(vec->envs);
    free(vec);
}
