/* crashy — a test env that misbehaves on purpose, to test isolation (--env.isolate 1) and the
 * in-process crash guard: on the crash_step-th step of env crash_env,
 *   crash_mode 1: a segfault (a NULL write), 2: exit(3), 3: an endless loop (a hang),
 *              5: abort(), 6: an integer division by zero (SIGFPE), 7: SIGILL (a trap
 *              instruction), 8: a stack overflow (endless recursion), 9: raise(SIGBUS);
 *   crash_mode 4: exit(7) inside puf_init (after a message on stderr), 10: a NULL write in
 *              puf_init, 11: a NULL write in puf_reset (of env crash_env); 0: behaves.
 * Otherwise a trivial env: observation = [step / 100, tag], reward 1 for action 1, episodes of
 * 10 steps. */
#ifndef CRASHY_CRASHY_H
#define CRASHY_CRASHY_H

#include <signal.h>

typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 2
#define NUM_ATNS 1
#define ACT_SIZES {2}

struct Log {
    float perf;
    float score;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    int crash_step, crash_mode, crash_env, index, steps, t;
    float ret;
};

/* An env's index in its vecenv, which creates its envs in order in one array (a count would go on
 * across the vecenvs of a process). */
static Env* crashy_last = NULL;
static int crashy_last_index = 0;
static volatile int crashy_zero = 0;  /* volatile: the compiler cannot see the division by zero coming */

static int crashy_recurse(volatile char* below) {
    volatile char frame[256];
    frame[0] = below != NULL ? below[0] : 1;
    return crashy_recurse(frame) + frame[0];  /* not a tail call: every frame stays */
}

static void crashy_null_write(void) {
    volatile int* p = NULL;
    *p = 1;
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->crash_step = (int)dict_get(kwargs, "crash_step");
    env->crash_mode = (int)dict_get(kwargs, "crash_mode");
    env->crash_env = (int)dict_get(kwargs, "crash_env");
    env->index = crashy_last != NULL && env == crashy_last + 1 ? crashy_last_index + 1 : 0;
    crashy_last = env;
    crashy_last_index = env->index;
    if (env->crash_mode == 4) {
        fprintf(stderr, "crashy: crash_mode 4 exits in puf_init\n");
        exit(7);
    }
    if (env->crash_mode == 10 && env->index == env->crash_env) crashy_null_write();
}

static void crashy_observe(Env* env) {
    env->agents[0].observations[0] = (float)env->t / 100.0f;
    env->agents[0].observations[1] = (float)env->index;
}

void puf_reset(Env* env) {
    if (env->crash_mode == 11 && env->index == env->crash_env) crashy_null_write();
    env->t = 0;
    env->ret = 0.0f;
    crashy_observe(env);
}

void puf_step(Env* env) {
    Agent* a = &env->agents[0];
    a->rewards[0] = 0.0f;
    a->terminals[0] = 0.0f;
    env->steps++;
    if (env->index == env->crash_env && env->steps == env->crash_step) {
        fprintf(stderr, "crashy: crash_mode %d at step %d\n", env->crash_mode, env->steps);
        fflush(stderr);
        if (env->crash_mode == 1) crashy_null_write();
        if (env->crash_mode == 2) exit(3);
        if (env->crash_mode == 3) for (volatile int spin = 1; spin;) {}
        if (env->crash_mode == 5) abort();
        if (env->crash_mode == 6) env->t = env->t / crashy_zero;
#if defined(__GNUC__) || defined(__clang__)
        if (env->crash_mode == 7) __builtin_trap();
#endif
        if (env->crash_mode == 8) env->t += crashy_recurse(NULL);
        if (env->crash_mode == 9) raise(SIGBUS);
    }
    float r = a->actions[0] == 1.0f ? 1.0f : 0.0f;
    a->rewards[0] = r;
    env->ret += r;
    if (++env->t >= 10) {
        env->log.perf += env->ret / 10.0f;
        env->log.score += env->ret;
        env->log.n += 1.0f;
        a->terminals[0] = 1.0f;
        puf_reset(env);
        return;
    }
    crashy_observe(env);
}

void puf_render(Env* env) { (void)env; }
void puf_close(Env* env) { (void)env; }
void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
}

#endif
