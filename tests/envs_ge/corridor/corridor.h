/* corridor — a 1-D test env for envs/c/goexplore.h: walk from cell 0 to cell `length`.
 *
 * Action head {stay, left, right}; one tick per step; the goal (perf 1, reward 1) is pos ==
 * length; timeout at tick == max_ticks. The cell is pos, progress pos / length. The savestate is
 * (pos, tick, spawn); spawn is the env rng at the real start, so a cell's savestate says which
 * real start its route came from. Observation: pos / length, tick / max_ticks, spawn / 2^32.
 */
#include <stddef.h>
#include <stdint.h>

typedef float obs_t;
#include "pufferenv.h"
#include "goexplore.h"

#define OBS_SIZE 3
#define NUM_ATNS 1
#define ACT_SIZES {3}

struct Log {
    float perf;
    float start_perf;
    float start_n;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    int length, max_ticks;
    int pos, tick;       /* savestate: pos, tick, spawn */
    uint32_t spawn;
    GoExplore ge;
};
#define PUF_GOEXPLORE(env) (&(env)->ge)

static GeKey corridor_cell(Env* env, float* progress) {
    *progress = (float)env->pos / (float)env->length;
    return (GeKey)env->pos;
}

static void corridor_advance(Env* env, int action) {
    if (action == 2 && env->pos < env->length) env->pos++;
    if (action == 1 && env->pos > 0) env->pos--;
    env->tick++;
}

static void corridor_replay(Env* env, const unsigned char* actions) { corridor_advance(env, actions[0]); }

static void corridor_obs(Env* env) {
    float* o = env->agents[0].observations;
    o[0] = (float)env->pos / (float)env->length;
    o[1] = (float)env->tick / (float)env->max_ticks;
    o[2] = (float)env->spawn / 4294967296.0f;
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->length = (int)dict_get(kwargs, "length");
    env->max_ticks = (int)dict_get(kwargs, "max_ticks");
    GeSpec spec = {&env->pos, (int)(offsetof(Env, spawn) + sizeof(uint32_t) - offsetof(Env, pos)), 1,
                   env->max_ticks, corridor_cell, corridor_replay,
                   (uint64_t)env->length << 32 | (uint64_t)env->max_ticks};
    ge_init(&env->ge, env, kwargs, spec, env->rng);
}

void puf_reset(Env* env) {
    int start = ge_start(&env->ge, &env->rng);
    if (start != GE_START_RESTORED) {
        env->spawn = env->rng;
        env->rng = env->rng * 1664525u + 1013904223u;  /* the real start consumes the rng */
        env->pos = 0;
        env->tick = 0;
        if (start == GE_START_REPLAY) ge_replay(&env->ge);
    }
    ge_visit(&env->ge);
    corridor_obs(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    float a = agent->actions[0];
    int action = a >= 0.0f && a < 3.0f ? (int)a : 0;
    const unsigned char executed[1] = {(unsigned char)action};
    ge_act(&env->ge, executed);
    corridor_advance(env, action);
    int goal = env->pos == env->length, timeout = !goal && env->tick >= env->max_ticks;
    if (goal) {
        agent->rewards[0] = 1.0f;
        ge_goal(&env->ge);
    } else if (!timeout) {
        agent->rewards[0] = ge_visit(&env->ge);
    }
    if (goal || timeout) {
        int real = ge_real_start(&env->ge);
        env->log.perf += goal ? 1.0f : 0.0f;
        env->log.start_perf += real && goal ? 1.0f : 0.0f;
        env->log.start_n += real ? 1.0f : 0.0f;
        env->log.n += 1.0f;
        agent->terminals[0] = 1.0f;
        puf_reset(env);
        return;
    }
    corridor_obs(env);
}

void puf_render(Env* env) { (void)env; }
void puf_close(Env* env) { ge_close(&env->ge); }

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    if (log->start_n > 0.0f) dict_set(out, "start_perf", log->start_perf / log->start_n);
}
