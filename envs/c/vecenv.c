/* vecenv.c — steps many copies of one env header on CPU threads (PufferLib 5.0's CPU vecenv):
 * OpenMP's when the compiler has it, else the portable pool of threadpool.h (same partition).
 *
 * Compiled once per env with -DENV_HEADER='"path/to/env.h"' (envs/build.py does it through cffi;
 * envs/c/vecenv_driver.c includes this file for plain-C and sanitizer runs).
 *
 * Layout: envs are created by puf_init on zeroed Env structs until the sum of their num_agents
 * reaches total_agents (N = that sum, so N >= total_agents). Agent rows follow env order, then
 * agent order. The host owns the flat arrays
 *     observations [N][OBS_SIZE] obs_t, actions [N][NUM_ATNS] f32, rewards [N] f32,
 *     terminals [N] f32, action_mask [N][sum ACT_SIZES] u8
 * and vec_bind aims every Agent at its rows. An env whose [env] keys size its observation (a
 * picture drawn at a configured size) also defines PUF_OBS_SIZE(env), its row size after puf_init;
 * OBS_SIZE is then only the size at its ini's defaults, and every env of a vecenv must agree.
 * PufferLib's num_buffers groups are contiguous env
 * ranges [lo, hi): vec_step_range steps one, and two ranges may be stepped at once from two host
 * threads (they share no memory). Nothing is allocated per step.
 *
 * Crash guard (POSIX; the host turns it on with vec_guard_enable): a fatal signal (SIGSEGV,
 * SIGBUS, SIGFPE, SIGILL, SIGABRT) raised while a thread runs an env's puf_* function jumps back
 * to that thread's entry into the envs, marks the vecenv dead and names the signal, the function
 * and the env (vec_crash_message); the host raises an error and never calls into these envs
 * again. A signal anywhere else goes to the handler that was there before (Python's
 * faulthandler, or the default: the process dies as it would have). docs/design.md section 10
 * says what is and is not safe after such a signal.
 */
#include ENV_HEADER

#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#define VEC_THREADS_KIND "openmp"
#else
#include "threadpool.h"
#define VEC_THREADS_KIND POOL_THREADS_KIND
#endif

static const int vec_act_sizes_table[NUM_ATNS] = ACT_SIZES;
/* A brace list shorter than NUM_ATNS would leave heads of size 0, a longer one would be cut. */
_Static_assert(sizeof((int[])ACT_SIZES) / sizeof(int) == NUM_ATNS,
               "ACT_SIZES must list exactly NUM_ATNS head sizes");

/* Env.agents is either an array (its size bounds num_agents) or a pointer the env sets. The
 * address of an array member is an Agent (*)[n], of a pointer member an Agent** (standard C11
 * _Generic, which MSVC has too; no GCC builtins). */
#define VEC_AGENTS_IS_POINTER _Generic(&((Env*)0)->agents, Agent**: 1, default: 0)
#define VEC_MAX_AGENTS_PER_ENV \
    (VEC_AGENTS_IS_POINTER ? (1 << 30) : (int)(sizeof(((Env*)0)->agents) / sizeof(Agent)))
#define VEC_LOG_FIELDS ((int)(sizeof(Log) / sizeof(float)))

/* An env's observation row: OBS_SIZE, or what PUF_OBS_SIZE(env) says after its puf_init. */
#ifdef PUF_OBS_SIZE
#define VEC_ENV_OBS_SIZE(env) ((int)(PUF_OBS_SIZE(env)))
#else
#define VEC_ENV_OBS_SIZE(env) ((int)(OBS_SIZE))
#endif

/* A picture declared in the header: the last H*W*C values of each observation row, rows from the
 * top, channels last. An env drawn at a configured size declares it with the [env] keys
 * picture_height/picture_width/picture_channels instead (envs/c/env.py reads those). */
#if defined(PICTURE_WIDTH) || defined(PICTURE_HEIGHT) || defined(PICTURE_CHANNELS)
#if !defined(PICTURE_WIDTH) || !defined(PICTURE_HEIGHT) || !defined(PICTURE_CHANNELS)
#error "a picture is declared by all three of PICTURE_WIDTH, PICTURE_HEIGHT and PICTURE_CHANNELS"
#endif
#define VEC_PICTURE_H (PICTURE_HEIGHT)
#define VEC_PICTURE_W (PICTURE_WIDTH)
#define VEC_PICTURE_C (PICTURE_CHANNELS)
#else
#define VEC_PICTURE_H 0
#define VEC_PICTURE_W 0
#define VEC_PICTURE_C 0
#endif

typedef struct VecEnv {
    Env* envs;        /* [num_envs] */
    int num_envs;
    int num_agents;   /* N = sum of envs[i].num_agents */
    int obs_size;     /* values per observation row (VEC_ENV_OBS_SIZE, equal for every env) */
    int num_threads;
    int clear_outputs; /* zero rewards/terminals before puf_step, as PufferLib's trainer does */
    Dict log_out;     /* what puf_log names (C-owned: dict_set may grow it) */
    void* archive;    /* the envs' shared Go-Explore archive, if they use one (goexplore_vec.h) */
    Dict* init_kwargs; /* puf_init's, while vec_create runs */
    Log* log_sum;     /* puf_log's, while vec_log_range runs */
    int init_ok;
    volatile int dead; /* a fatal signal ended a call into the envs: never call into them again */
    char crash[256];  /* what happened (vec_crash_message) */
} VecEnv;

/* ---- The crash guard ---------------------------------------------------------------------- */
#if !defined(_WIN32)
#define VEC_GUARD 1
#include <pthread.h>
#include <signal.h>

/* Per thread (a pthread key, not _Thread_local: the handler must read it without the dynamic TLS
 * allocation a first access may do, and pthread_getspecific never allocates). */
typedef struct VecGuard {
    sigjmp_buf jump;                /* the thread's entry into the envs */
    volatile sig_atomic_t armed;    /* 1 while the thread runs env code */
    volatile int env;               /* the env it runs */
    const char* volatile fn;        /* and which function */
    volatile int signal, code;      /* what was caught */
    void* volatile addr;
    void* stack;                    /* the alternate signal stack it got from us, or NULL */
} VecGuard;

#define VEC_GUARD_SIGNALS 5
#define VEC_GUARD_STACK ((size_t)64 << 10)  /* a handler that catches a stack overflow runs here */
static const int vec_guard_signals[VEC_GUARD_SIGNALS] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static struct sigaction vec_guard_previous[VEC_GUARD_SIGNALS];
static volatile sig_atomic_t vec_guard_chained[VEC_GUARD_SIGNALS];
static pthread_key_t vec_guard_key;
static pthread_once_t vec_guard_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t vec_guard_lock = PTHREAD_MUTEX_INITIALIZER;
static int vec_guard_on;

static void vec_guard_thread_end(void* p) {
    VecGuard* g = (VecGuard*)p;
    if (g->stack != NULL) {
        stack_t off;
        memset(&off, 0, sizeof off);
        off.ss_flags = SS_DISABLE;
        sigaltstack(&off, NULL);
        free(g->stack);
    }
    free(g);
}

static void vec_guard_key_init(void) { pthread_key_create(&vec_guard_key, vec_guard_thread_end); }

/* Not ours: the handler that was installed before, once (a second fault is already the end),
 * else the default action, so the process dies of this signal as it would have without us. */
static void vec_guard_chain(int sig, siginfo_t* info, void* context) {
    int i = 0;
    while (i < VEC_GUARD_SIGNALS - 1 && vec_guard_signals[i] != sig) i++;
    struct sigaction* prev = &vec_guard_previous[i];
    if (!vec_guard_chained[i]) {
        vec_guard_chained[i] = 1;
        if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction != NULL) {
            prev->sa_sigaction(sig, info, context);
            return;
        }
        if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
            prev->sa_handler(sig);
            return;
        }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info == NULL || info->si_code <= 0) raise(sig);  /* sent (abort, kill): send it again */
    /* a fault: returning runs the faulting instruction again, which now kills the process */
}

static void vec_guard_handler(int sig, siginfo_t* info, void* context) {
    VecGuard* g = (VecGuard*)pthread_getspecific(vec_guard_key);
    if (g != NULL && g->armed) {
        g->armed = 0;
        g->signal = sig;
        g->code = info != NULL ? info->si_code : 0;
        g->addr = info != NULL ? info->si_addr : NULL;
        siglongjmp(g->jump, 1);
    }
    vec_guard_chain(sig, info, context);
}

/* Ours is the handler of every guarded signal: installed on the first call and again whenever
 * someone replaced it since (faulthandler.enable() after the env was made), remembering theirs. */
static void vec_guard_install(void) {
    for (int i = 0; i < VEC_GUARD_SIGNALS; i++) {
        struct sigaction now;
        if (sigaction(vec_guard_signals[i], NULL, &now) != 0) continue;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == vec_guard_handler) continue;
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = vec_guard_handler;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        pthread_mutex_lock(&vec_guard_lock);
        if (sigaction(vec_guard_signals[i], &ours, &now) == 0 &&
            !((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == vec_guard_handler)) {
            vec_guard_previous[i] = now;
            vec_guard_chained[i] = 0;
        }
        pthread_mutex_unlock(&vec_guard_lock);
    }
}

/* This thread's guard, made on its first entry into the envs (with an alternate signal stack if
 * it has none, so that a stack overflow in env code is caught too); NULL if out of memory. */
static VecGuard* vec_guard_thread(void) {
    VecGuard* g = (VecGuard*)pthread_getspecific(vec_guard_key);
    if (g != NULL) return g;
    g = (VecGuard*)calloc(1, sizeof(VecGuard));
    if (g == NULL) return NULL;
    stack_t old;
    if (sigaltstack(NULL, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
        stack_t st;
        memset(&st, 0, sizeof st);
        st.ss_sp = malloc(VEC_GUARD_STACK);
        st.ss_size = VEC_GUARD_STACK;
        if (st.ss_sp != NULL && sigaltstack(&st, NULL) == 0) g->stack = st.ss_sp;
        else free(st.ss_sp);
    }
    if (pthread_setspecific(vec_guard_key, g) != 0) {
        vec_guard_thread_end(g);
        return NULL;
    }
    return g;
}

static const char* vec_signal_text(int sig, int code) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV, an invalid memory access";
    case SIGBUS: return "SIGBUS, a misaligned or unmapped memory access";
    case SIGFPE:
        if (code == FPE_INTDIV) return "SIGFPE, an integer division by zero";
        if (code == FPE_INTOVF) return "SIGFPE, an integer overflow";
        return "SIGFPE, an arithmetic error";
    case SIGILL: return "SIGILL, an illegal instruction";
    case SIGABRT: return "SIGABRT: abort() was called (a failed assert?)";
    default: return "a fatal signal";
    }
}

/* Back from the jump (an ordinary context again): the signal is still blocked in this thread,
 * since the handler did not return; unblock it and record the first crash. */
static void vec_guard_caught(VecEnv* vec, VecGuard* g) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, g->signal);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    pthread_mutex_lock(&vec_guard_lock);
    if (!vec->dead) {
        char where[48] = "";
        if ((g->signal == SIGSEGV || g->signal == SIGBUS) && g->code > 0)  /* a fault, not a sent signal */
            snprintf(where, sizeof where, " at address 0x%llx", (unsigned long long)(uintptr_t)g->addr);
        char env[32] = "";
        if (g->env >= 0) snprintf(env, sizeof env, " of env %d", g->env);
        snprintf(vec->crash, sizeof vec->crash, "%s%s, in %s%s", vec_signal_text(g->signal, g->code), where,
                 g->fn, env);
        vec->dead = 1;
    }
    pthread_mutex_unlock(&vec_guard_lock);
}
#else
#define VEC_GUARD 0
#endif

/* 1: catch fatal signals in env code from now on (envs/c/env.py asks; the isolation server and
 * the plain-C driver do not, so there a crash stays a crash, for the supervisor or a debugger). */
void vec_guard_enable(int on) {
#if VEC_GUARD
    pthread_once(&vec_guard_once, vec_guard_key_init);
    vec_guard_on = on != 0;
    if (vec_guard_on) vec_guard_install();
#else
    (void)on;
#endif
}
int vec_crashed(VecEnv* vec) { return vec->dead; }
const char* vec_crash_message(VecEnv* vec) { return vec->crash; }

/* run(vec, lo, hi, guard) on this thread: the one way host code enters env code. With the guard
 * on, a fatal signal in any env ends this thread's share and marks the vecenv dead; each share
 * stops before its next env once the vecenv is dead. `run` marks the env it calls with VEC_AT,
 * for the message (one store per env; the jump target is set once per share). */
#if VEC_GUARD
#define VEC_AT(g, e) do { if ((g) != NULL) (g)->env = (e); } while (0)
#else
typedef struct VecGuard VecGuard;
#define VEC_AT(g, e) ((void)(g), (void)(e))
#endif
typedef void (*vec_run_fn)(VecEnv* vec, int lo, int hi, VecGuard* g);

static void vec_run_envs(VecEnv* vec, int lo, int hi, const char* fn, vec_run_fn run) {
#if VEC_GUARD
    VecGuard* g = vec_guard_on ? vec_guard_thread() : NULL;
    if (g != NULL) {
        if (sigsetjmp(g->jump, 0) != 0) {
            vec_guard_caught(vec, g);
            return;
        }
        g->fn = fn;
        g->env = lo;
        g->armed = 1;
        run(vec, lo, hi, g);
        g->armed = 0;
        return;
    }
#endif
    (void)fn;
    run(vec, lo, hi, NULL);
}

/* ---- Compile-time facts about the env, for the Python side ---- */
int vec_obs_size(void) { return OBS_SIZE; }
/* (height, width, channels) of the header's picture macros; zeros if it declares none. */
void vec_picture(int* out) {
    out[0] = VEC_PICTURE_H;
    out[1] = VEC_PICTURE_W;
    out[2] = VEC_PICTURE_C;
}
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
/* What steps the envs: "openmp", "pthreads" or "win32" (threadpool.h). */
const char* vec_threads_kind(void) { return VEC_THREADS_KIND; }

/* ---- Config dicts, built by the host (C-allocated, as dict_set may realloc them) ---- */
Dict* vec_dict_new(const char* name) {
    Dict* d = (Dict*)calloc(1, sizeof(Dict));
    if (d != NULL) d->name = dict_strdup(name);
    return d;
}
/* key = value: with its ini text (str), parsed as PufferLib's ini reader does (numbers with `_`,
 * true/false, comma lists); without (str NULL), the number `value`. */
void vec_dict_put(Dict* d, const char* key, double value, const char* str) {
    if (str == NULL) {
        dict_set(d, key, value);
        return;
    }
    puf_ini_parse_item(dict_set_str(d, key, str), str);
}
void vec_dict_free(Dict* d) {
    if (d == NULL) return;
    dict_clear(d);
    free(d);
}
int vec_dict_size(Dict* d) { return d->size; }
const char* vec_dict_key(Dict* d, int i) { return d->items[i].key; }
double vec_dict_value(Dict* d, int i) { return d->items[i].value; }

/* env.rng: PufferLib presets it to the env index; puffgpu mixes in a user seed (murmur3's
 * finalizer) so that runs with different seeds differ while seed 0 stays reproducible. */
static unsigned int vec_seed_mix(unsigned int seed, unsigned int index) {
    uint32_t h = index * 0x9E3779B9u ^ (seed * 0x85EBCA6Bu + seed);
    h ^= h >> 16; h *= 0x85EBCA6Bu;
    h ^= h >> 13; h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/* puf_init of env e (lo) with a missing config key caught (init_ok = 0). Nothing is live across
 * the jump. */
static void vec_init_env(VecEnv* vec, int e, int hi, VecGuard* g) {
    (void)hi, (void)g;
    jmp_buf jump;
    vec->init_ok = 0;
    if (setjmp(jump) != 0) {
        puf_dict_missing_jump = NULL;
        return;
    }
    puf_dict_missing_jump = &jump;
    puf_init(&vec->envs[e], vec->init_kwargs);
    puf_dict_missing_jump = NULL;
    vec->init_ok = 1;
}

/* Returns NULL and writes a message into err on failure; a fatal signal in puf_init (with the
 * guard on) returns a dead vecenv instead, whose vec_crash_message says what happened. */
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
    vec->clear_outputs = 1;
    vec->log_out.name = dict_strdup("log");
    int agents = 0, n = 0;
#ifdef GOEXPLORE_H
    ge_host_begin();  /* the first env that opts in creates this vecenv's archive */
#endif
    while (agents < total_agents) {
        Env* env = &envs[n];
        env->rng = vec_seed_mix(seed, (unsigned int)n);
        vec->init_kwargs = kwargs;
        vec_run_envs(vec, n, n + 1, "puf_init", vec_init_env);
        if (vec->dead) return vec;  /* nothing of these envs is touched again, not even to free it */
        if (!vec->init_ok) {
            snprintf(err, err_len,
                     "the env reads [env] key '%s' with dict_get, but the config has no such key; "
                     "add it to the [env] section of the env's .ini",
                     puf_dict_missing_key);
            goto fail;  /* this env stopped halfway through puf_init: do not close it */
        }
        n++;
        vec->num_envs = n; /* so the failure path closes this env too */
        int max = VEC_MAX_AGENTS_PER_ENV;
        if (env->num_agents < 1 || env->num_agents > max) {
            snprintf(err, err_len, "puf_init set num_agents = %d; it must be in [1, %d] (the size "
                     "of Env.agents)", env->num_agents, max);
            goto fail;
        }
        Agent* first = NULL;  /* the pointer's value (memcpy: no type-punned dereference) */
        if (VEC_AGENTS_IS_POINTER) memcpy(&first, &env->agents, sizeof(first));
        if (VEC_AGENTS_IS_POINTER && first == NULL) {
            snprintf(err, err_len, "Env.agents is a pointer and puf_init left it NULL; point it "
                     "at num_agents Agent structs");
            goto fail;
        }
        int size = VEC_ENV_OBS_SIZE(env);
        if (size < 1) {
            snprintf(err, err_len, "puf_init left %d observation values per agent (PUF_OBS_SIZE): the "
                     "env rejected the [env] keys that size its observation (its header says which "
                     "values it accepts)", size);
            goto fail;
        }
        if (n > 1 && size != vec->obs_size) {
            snprintf(err, err_len, "env %d has %d observation values per agent (PUF_OBS_SIZE), env 0 "
                     "has %d; every env of a vecenv needs the same", n - 1, size, vec->obs_size);
            goto fail;
        }
        vec->obs_size = size;
        agents += env->num_agents;
    }
    vec->num_agents = agents;
#ifdef GOEXPLORE_H
    vec->archive = ge_host_end();
#endif
    return vec;
fail:
#ifdef GOEXPLORE_H
    ge_host_end();  /* closing the envs frees the archive */
#endif
    for (int i = 0; i < vec->num_envs; i++) puf_close(&vec->envs[i]);
    dict_clear(&vec->log_out);
    free(vec->envs);
    free(vec);
    return NULL;
}

int vec_num_envs(VecEnv* vec) { return vec->num_envs; }
int vec_num_agents(VecEnv* vec) { return vec->num_agents; }
int vec_env_obs_size(VecEnv* vec) { return vec->obs_size; }
/* Agents of each env: out[num_envs]. */
void vec_env_agents(VecEnv* vec, int* out) {
    for (int e = 0; e < vec->num_envs; e++) out[e] = vec->envs[e].num_agents;
}
void vec_set_threads(VecEnv* vec, int num_threads) {
    vec->num_threads = num_threads < 1 ? 1 : num_threads;
}
/* 0: leave rewards/terminals to the env, as PufferLib's CPU evaluator does (tests use it to
 * check that an env clears its own). */
void vec_set_clear_outputs(VecEnv* vec, int on) { vec->clear_outputs = on != 0; }

void vec_bind(VecEnv* vec, void* observations, float* actions, float* rewards, float* terminals,
              unsigned char* action_mask) {
    int mask_size = 0;
    for (int i = 0; i < NUM_ATNS; i++) mask_size += vec_act_sizes_table[i];
    int row = 0;
    for (int e = 0; e < vec->num_envs; e++) {
        Env* env = &vec->envs[e];
        for (int a = 0; a < env->num_agents; a++, row++) {
            Agent* agent = &env->agents[a];
            agent->observations = (obs_t*)observations + (size_t)row * vec->obs_size;
            agent->actions = actions + (size_t)row * NUM_ATNS;
            agent->rewards = rewards + row;
            agent->terminals = terminals + row;
            agent->action_mask = action_mask + (size_t)row * mask_size;
            agent->policy = 0;
        }
    }
}

static inline void vec_clear_env_outputs(Env* env) {
    for (int a = 0; a < env->num_agents; a++) {
        env->agents[a].rewards[0] = 0.0f;
        env->agents[a].terminals[0] = 0.0f;
    }
}

static void vec_reset_range(VecEnv* vec, int lo, int hi, VecGuard* g) {
    for (int e = lo; e < hi && !vec->dead; e++) {
        VEC_AT(g, e);
        vec_clear_env_outputs(&vec->envs[e]);
        puf_reset(&vec->envs[e]);
    }
}

static void vec_step_range_in(VecEnv* vec, int lo, int hi, VecGuard* g) {
    int clear = vec->clear_outputs;
    for (int e = lo; e < hi && !vec->dead; e++) {
        VEC_AT(g, e);
        if (clear) vec_clear_env_outputs(&vec->envs[e]);
#ifdef PUF_PREFETCH_NEXT /* an env header may bring the next env's memory in while this one steps */
        if (e + 1 < hi) PUF_PREFETCH_NEXT(&vec->envs[e], &vec->envs[e + 1], hi - lo);
#endif
        puf_step(&vec->envs[e]);
    }
}

static void vec_reset_envs(void* arg, int lo, int hi) { vec_run_envs((VecEnv*)arg, lo, hi, "puf_reset", vec_reset_range); }
static void vec_step_envs(void* arg, int lo, int hi) { vec_run_envs((VecEnv*)arg, lo, hi, "puf_step", vec_step_range_in); }

/* fn over envs [lo, hi) on `threads` threads, statically partitioned: thread i of t takes the
 * i-th contiguous chunk (q = n / t envs, the first n mod t one more), OpenMP's schedule(static)
 * and threadpool.h's split. One call of fn per thread: its entry into the envs (the guard's jump
 * target) is set once per step, not once per env. */
static void vec_parallel(VecEnv* vec, int lo, int hi, int threads, void (*fn)(void*, int, int)) {
    if (threads <= 1 || hi - lo <= 1) {  /* what thread 0 would run, without a team's start and join */
        fn(vec, lo, hi);
        return;
    }
#ifdef _OPENMP
    #pragma omp parallel num_threads(threads)
    {
        int t = omp_get_num_threads(), i = omp_get_thread_num(), n = hi - lo;
        int q = n / t, r = n % t;
        int a = lo + i * q + (i < r ? i : r);
        fn(vec, a, a + q + (i < r ? 1 : 0));
    }
#else
    pool_parallel_for(lo, hi, threads, fn, vec);
#endif
}

/* Each returns 0, or 1 when a fatal signal in the envs made the vecenv dead (vec_crash_message). */
int vec_reset(VecEnv* vec) {
    if (vec->dead) return 1;
#if VEC_GUARD
    if (vec_guard_on) vec_guard_install();
#endif
    vec_parallel(vec, 0, vec->num_envs, vec->num_threads, vec_reset_envs);
    return vec->dead;
}

/* Steps envs [lo, hi) with `threads` threads (< 1: the vecenv's count). */
int vec_step_range(VecEnv* vec, int lo, int hi, int threads) {
    if (vec->dead) return 1;
#if VEC_GUARD
    if (vec_guard_on) vec_guard_install();
#endif
    if (lo < 0) lo = 0;
    if (hi > vec->num_envs) hi = vec->num_envs;
    if (threads < 1) threads = vec->num_threads;
    vec_parallel(vec, lo, hi, threads, vec_step_envs);
    return vec->dead;
}

int vec_step(VecEnv* vec) {
    if (vec_step_range(vec, 0, vec->num_envs, vec->num_threads)) return 1;
#ifdef GOEXPLORE_H
    ge_sync((GeArchive*)vec->archive);  /* between steps, in env order: deterministic */
#endif
    return 0;
}

/* PufferLib's vec_log over envs [lo, hi): sum every Log field over envs with n != 0, clear those
 * logs, divide all fields by the total n, and let puf_log name them into vec_log_dict(vec).
 * Returns the total n (0: nothing finished since the last call, and the dict is left empty). */
static void vec_log_call(VecEnv* vec, int lo, int hi, VecGuard* g) {
    (void)lo, (void)hi, (void)g;
    puf_log(vec->log_sum, &vec->log_out);
}

float vec_log_range(VecEnv* vec, int lo, int hi) {
    if (vec->dead) return 0.0f;
    Log sum;
    memset(&sum, 0, sizeof(Log));
    float* s = (float*)&sum;
    if (lo < 0) lo = 0;
    if (hi > vec->num_envs) hi = vec->num_envs;
#ifdef GOEXPLORE_H
    ge_sync((GeArchive*)vec->archive);  /* env buffers stepped apart merge here, once an epoch */
#endif
    for (int e = lo; e < hi; e++) {
        Log* log = &vec->envs[e].log;
        if (log->n == 0.0f) continue;
        const float* l = (const float*)log;
        for (int i = 0; i < VEC_LOG_FIELDS; i++) s[i] += l[i];
        memset(log, 0, sizeof(Log));
    }
    float total = sum.n;
    for (int i = 0; i < vec->log_out.size; i++) dict_item_clear(&vec->log_out.items[i]);
    vec->log_out.size = 0;
    if (total == 0.0f) return 0.0f;
    for (int i = 0; i < VEC_LOG_FIELDS; i++) s[i] /= total;
    vec->log_sum = &sum;
    vec_run_envs(vec, -1, 0, "puf_log", vec_log_call);  /* -1: no env's own call */
    return vec->dead ? 0.0f : total;
}

float vec_log(VecEnv* vec) { return vec_log_range(vec, 0, vec->num_envs); }
Dict* vec_log_dict(VecEnv* vec) { return &vec->log_out; }

/* Episodes finished by each env since its log was last cleared: out[num_envs]. Lets an evaluator
 * take exactly the first episode of every env (fair: short episodes are not over-counted). */
void vec_log_counts(VecEnv* vec, float* out) {
    for (int e = 0; e < vec->num_envs; e++) out[e] = vec->envs[e].log.n;
}

/* Renders env `index` into the canvas; returns the pixels ([*height][*width][3]) or NULL if the
 * env drew nothing. Valid until the next render call. */
static void vec_render_env(VecEnv* vec, int e, int hi, VecGuard* g) {
    (void)hi, (void)g;
    puf_render(&vec->envs[e]);
}

const unsigned char* vec_render(VecEnv* vec, int index, int* width, int* height) {
    *width = 0;
    *height = 0;
    if (vec->dead || index < 0 || index >= vec->num_envs) return NULL;
    puf_canvas.dirty = 0;
    vec_run_envs(vec, index, index + 1, "puf_render", vec_render_env);
    if (vec->dead || puf_canvas.pixels == NULL || puf_canvas.width <= 0 || !puf_canvas.dirty) return NULL;
    *width = puf_canvas.width;
    *height = puf_canvas.height;
    return puf_canvas.pixels;
}

/* Keyboard and mouse state for raylib's IsKeyDown/IsKeyPressed/GetMousePosition (GLFW key
 * codes, which are raylib's). A press stays visible to IsKeyPressed until the next frame. */
void vec_set_key(int key, int down) {
    if (key < 0 || key >= 512) return;
    if (down && !(puf_canvas.keys[key] & 1)) puf_canvas.keys[key] |= 2;
    puf_canvas.keys[key] = (unsigned char)((puf_canvas.keys[key] & 2) | (down ? 1 : 0));
}
void vec_set_mouse(float x, float y, int buttons) {
    puf_canvas.mouse_pos = (Vector2){x, y};
    for (int b = 0; b < 8; b++) {
        int down = (buttons >> b) & 1;
        if (down && !(puf_canvas.mouse[b] & 1)) puf_canvas.mouse[b] |= 2;
        puf_canvas.mouse[b] = (unsigned char)((puf_canvas.mouse[b] & 2) | down);
    }
}

/* An env may ship a rule-based policy on its observation (for demos and tests) by defining
 * PUF_SCRIPTED_POLICY as a function void f(const obs_t* obs, float* actions), or, when reading
 * the observation needs the env's configuration (a picture drawn at a configured size),
 * PUF_SCRIPTED_ENV_POLICY as void f(Env* env, int agent), which reads that agent's observation
 * and writes its actions. */
int vec_has_scripted(void) {
#if defined(PUF_SCRIPTED_POLICY) || defined(PUF_SCRIPTED_ENV_POLICY)
    return 1;
#else
    return 0;
#endif
}

#if defined(PUF_SCRIPTED_POLICY) || defined(PUF_SCRIPTED_ENV_POLICY)
static void vec_scripted_range(VecEnv* vec, int lo, int hi, VecGuard* g) {
    for (int e = lo; e < hi; e++) {
        VEC_AT(g, e);
        Env* env = &vec->envs[e];
        for (int a = 0; a < env->num_agents; a++) {
#ifdef PUF_SCRIPTED_ENV_POLICY
            PUF_SCRIPTED_ENV_POLICY(env, a);
#else
            PUF_SCRIPTED_POLICY(env->agents[a].observations, env->agents[a].actions);
#endif
        }
    }
}
#endif

void vec_scripted(VecEnv* vec) {
#if defined(PUF_SCRIPTED_POLICY) || defined(PUF_SCRIPTED_ENV_POLICY)
    if (!vec->dead) vec_run_envs(vec, 0, vec->num_envs, "the scripted policy", vec_scripted_range);
#else
    (void)vec;
#endif
}

/* A dead vecenv is left as it is (leaked): its envs' memory is not to be trusted, not even by free. */
void vec_close(VecEnv* vec) {
    if (vec == NULL || vec->dead) return;
    for (int e = 0; e < vec->num_envs; e++) puf_close(&vec->envs[e]);
    dict_clear(&vec->log_out);
    free(vec->envs);
    free(vec);
}

#ifdef GOEXPLORE_H  /* Go-Explore's side, only for a header that includes goexplore.h */
#include "goexplore_vec.h"
#endif
