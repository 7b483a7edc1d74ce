/* bandit — a contextual bandit with two heads: the quickest check that observations reach the
 * policy and that every action head is decoded at the right offset.
 *
 * Each step shows a random context c in 0..3 (one-hot, 4 floats). Head 0 (4 arms) earns 0.5 for
 * choosing c, head 1 (3 arms) earns 0.5 for choosing c % 3. Every step is a whole episode
 * (terminal = 1). perf = both heads right; a random policy gets perf 1/12.
 * Two knobs make the env slow on purpose, changing nothing else, to measure how well env stepping
 * overlaps with inference (tools/bench_train.py --buffers 1,2):
 *   [env] spin: busy work per step (iterations of a hash chain; 10000 take ~23 µs on one core);
 *   [env] wait_us: a sleep per step, for an env whose cost is not on the CPU cores inference
 *   needs (an external simulator, I/O; and the model of a CPU env beside a real GPU, since on
 *   lavapipe inference itself runs on the CPU cores). Linux adds ~50 µs of timer slack per sleep.
 */
#ifndef BANDIT_BANDIT_H
#define BANDIT_BANDIT_H

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOGDI
#define NOGDI   /* windows.h's Rectangle, DrawText, ... would collide with raylib's */
#endif
#ifndef NOUSER
#define NOUSER
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <time.h>
#endif

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 4
#define NUM_ATNS 2
#define ACT_SIZES {4, 3}

struct Log {
    float perf;  /* both heads right */
    float score; /* reward, 0..1 */
    float episode_return;
    float episode_length;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    int context;
    int last_a0, last_a1;  /* for rendering */
    int spin;              /* busy-work iterations per step */
    int wait_us;           /* sleep per step, microseconds */
    unsigned int spin_out; /* the busy work's result, kept so it is not optimized away */
};

static inline unsigned int bandit_rand(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return *rng >> 16;
}

static void bandit_new_context(Env* env) {
    float* obs = env->agents[0].observations;
    env->context = (int)(bandit_rand(&env->rng) % 4);
    for (int i = 0; i < 4; i++) obs[i] = i == env->context ? 1.0f : 0.0f;
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->last_a0 = env->last_a1 = -1;
    double spin = dict_get(kwargs, "spin");
    env->spin = spin > 0.0 && spin < 1e9 ? (int)spin : 0;
    double wait = dict_get(kwargs, "wait_us");
    env->wait_us = wait > 0.0 && wait < 1e6 ? (int)wait : 0;
}

void puf_reset(Env* env) { bandit_new_context(env); }

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    if (env->spin > 0) {  /* a dependent chain: each iteration waits for the previous one */
        unsigned int h = env->spin_out + (unsigned int)env->context;
        for (int i = 0; i < env->spin; i++) h = (h ^ (h >> 15)) * 0x2C1B3C6Du + 0x297A2D39u;
        env->spin_out = h;
    }
    if (env->wait_us > 0) {
#ifdef _WIN32
        Sleep((DWORD)((env->wait_us + 999) / 1000));  /* Windows sleeps whole milliseconds */
#else
        struct timespec ts = {env->wait_us / 1000000, (long)(env->wait_us % 1000000) * 1000L};
        nanosleep(&ts, NULL);
#endif
    }
    float a0 = agent->actions[0], a1 = agent->actions[1];
    /* compare as floats: no conversion of an out-of-range value */
    int right0 = a0 == (float)env->context;
    int right1 = a1 == (float)(env->context % 3);
    float reward = 0.5f * (float)right0 + 0.5f * (float)right1;
    env->last_a0 = right0 ? env->context : -1;
    env->last_a1 = right1 ? env->context % 3 : -1;
    agent->rewards[0] = reward;
    agent->terminals[0] = 1.0f;
    env->log.perf += (float)(right0 && right1);
    env->log.score += reward;
    env->log.episode_return += reward;
    env->log.episode_length += 1.0f;
    env->log.n += 1.0f;
    bandit_new_context(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* Top row: the 4 contexts, current one lit. Bottom: green where the last step's heads were right. */
void puf_render(Env* env) {
    const int C = 16;
    if (!IsWindowReady()) InitWindow(4 * C, 2 * C, "bandit");
    BeginDrawing();
    ClearBackground((Color){30, 30, 40, 255});
    for (int i = 0; i < 4; i++) {
        int lit = i == env->context;
        DrawRectangle(i * C + 2, 2, C - 4, C - 4, lit ? (Color){250, 200, 40, 255} : (Color){70, 70, 80, 255});
    }
    Color right = {60, 200, 60, 255}, wrong = {120, 50, 60, 255};
    DrawRectangle(2, C + 2, 2 * C - 4, C - 4, env->last_a0 >= 0 ? right : wrong);
    DrawRectangle(2 * C + 2, C + 2, 2 * C - 4, C - 4, env->last_a1 >= 0 ? right : wrong);
    EndDrawing();
    puf_web_vsync();
}

#endif /* BANDIT_BANDIT_H */
