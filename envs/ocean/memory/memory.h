/* memory — recall a cue after a delay: only a recurrent policy can solve it.
 *
 * Each episode shows a random cue (0 or 1) in the first observation only, then `delay` steps of
 * observations that carry no cue, then an "answer now" observation. The action taken at that
 * answer step (head of 2) earns reward 1 if it equals the cue, and the episode ends; actions
 * before it are ignored. A memoryless policy is right half the time (perf 0.5).
 * Observation (4 floats): [1 (a constant: the bias-free encoder gets a bias input), cue is 0,
 * cue is 1, answer now].
 */
#ifndef MEMORY_MEMORY_H
#define MEMORY_MEMORY_H

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 4
#define NUM_ATNS 1
#define ACT_SIZES {2}
#define MEMORY_MAX_DELAY 1000

struct Log {
    float perf;  /* answered correctly */
    float score;
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
    int delay;  /* steps between the cue and the answer step */
    int cue;
    int t;      /* steps since the cue; the answer step is t == delay */
};

static inline unsigned int memory_rand(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return *rng >> 16;
}

static void memory_write_obs(Env* env) {
    float* obs = env->agents[0].observations;
    obs[0] = 1.0f;
    obs[1] = env->t == 0 && env->cue == 0 ? 1.0f : 0.0f;
    obs[2] = env->t == 0 && env->cue == 1 ? 1.0f : 0.0f;
    obs[3] = env->t == env->delay ? 1.0f : 0.0f;
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    double delay = dict_get(kwargs, "delay");
    env->delay = delay < 0.0 ? 0 : delay > MEMORY_MAX_DELAY ? MEMORY_MAX_DELAY : (int)delay;
}

void puf_reset(Env* env) {
    env->cue = (int)(memory_rand(&env->rng) & 1);
    env->t = 0;
    memory_write_obs(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    if (env->t < env->delay) {
        env->t++;
        memory_write_obs(env);
        return;
    }
    float a = agent->actions[0];
    int correct = (a >= 0.0f && a < 2.0f) && (int)a == env->cue;
    agent->rewards[0] = (float)correct;
    agent->terminals[0] = 1.0f;
    env->log.perf += (float)correct;
    env->log.score += (float)correct;
    env->log.episode_return += (float)correct;
    env->log.episode_length += (float)(env->delay + 1);
    env->log.n += 1.0f;
    puf_reset(env);
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

/* A row of delay+1 cells: the cue's color in the first, the current step outlined. */
void puf_render(Env* env) {
    const int C = 16, cells = env->delay + 1;
    if (!IsWindowReady()) InitWindow(cells * C, C, "memory");
    BeginDrawing();
    ClearBackground((Color){30, 30, 40, 255});
    for (int i = 0; i < cells; i++) {
        int x = i * C;
        if (i == env->t) DrawRectangle(x, 0, C, C, (Color){240, 240, 240, 255});
        Color cell = {(unsigned char)(i == cells - 1 ? 90 : 60), 60, 70, 255};
        if (i == 0) cell = env->cue == 0 ? (Color){230, 60, 60, 255} : (Color){60, 110, 230, 255};
        DrawRectangle(x + 2, 2, C - 4, C - 4, cell);
    }
    EndDrawing();
    puf_web_vsync();
}

#endif /* MEMORY_MEMORY_H */
