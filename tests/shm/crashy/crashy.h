/* crashy — a test env that misbehaves on purpose, to test isolation (--env.isolate 1):
 * crash_mode 1: a segfault, 2: exit(3), 3: an endless loop (a hang), each on the crash_step-th
 * step of env 0; 4: exit(7) inside puf_init (after a message on stderr); 0: behaves.
 * Otherwise a trivial env: observation = [step / 100, tag], reward 1 for action 1, episodes of
 * 10 steps. */
#ifndef CRASHY_CRASHY_H
#define CRASHY_CRASHY_H

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
    int crash_step, crash_mode, index, steps, t;
    float ret;
};

static int crashy_count = 0;

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->crash_step = (int)dict_get(kwargs, "crash_step");
    env->crash_mode = (int)dict_get(kwargs, "crash_mode");
    env->index = crashy_count++;
    if (env->crash_mode == 4) {
        fprintf(stderr, "crashy: crash_mode 4 exits in puf_init\n");
        exit(7);
    }
}

static void crashy_observe(Env* env) {
    env->agents[0].observations[0] = (float)env->t / 100.0f;
    env->agents[0].observations[1] = (float)env->index;
}

void puf_reset(Env* env) {
    env->t = 0;
    env->ret = 0.0f;
    crashy_observe(env);
}

void puf_step(Env* env) {
    Agent* a = &env->agents[0];
    a->rewards[0] = 0.0f;
    a->terminals[0] = 0.0f;
    env->steps++;
    if (env->index == 0 && env->steps == env->crash_step) {
        fprintf(stderr, "crashy: crash_mode %d at step %d\n", env->crash_mode, env->steps);
        fflush(stderr);
        if (env->crash_mode == 1) { volatile int* p = NULL; *p = 1; }
        if (env->crash_mode == 2) exit(3);
        if (env->crash_mode == 3) for (volatile int spin = 1; spin;) {}
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
