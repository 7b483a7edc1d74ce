/* squares — a test env written in PufferLib 5.0's style (puffgpu's tests/envs5): several agents
 * per env, uint8 observations, named struct Log/Env, dict_get as a double, raylib drawing, and an
 * ini with PufferLib's own keys. It compiles unchanged against PufferLib 5.0's pufferenv.h.
 *
 * Each env holds `agents_per_env` agents, each on its own ring of SQUARES_CELLS cells with a
 * target cell. Action (one head of 3): step left, stay, step right. Reaching the target earns +1
 * and a new target appears elsewhere; every step costs `step_penalty`. All agents of an env end
 * their episode together after `max_steps` steps. Observation (uint8, 0/1): the agent's cell
 * one-hot, then the target's cell one-hot. perf = fraction of steps that moved toward the target
 * (a random policy: about 1/3).
 */
#include <stdlib.h>
#include <string.h>

#include "raylib.h"
typedef unsigned char obs_t;
#include "pufferenv.h"

#define SQUARES_CELLS 8
#define SQUARES_MAX_AGENTS 8
#define OBS_SIZE (2 * SQUARES_CELLS)
#define NUM_ATNS 1
#define ACT_SIZES {3}

struct Log {
    float perf;
    float score;  /* targets reached per episode */
    float episode_return;
    float episode_length;
    float n;
};

struct Env {
    Log log;
    Agent agents[SQUARES_MAX_AGENTS];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    int max_steps;
    float step_penalty;
    int tick;
    int pos[SQUARES_MAX_AGENTS];
    int target[SQUARES_MAX_AGENTS];
    int reached[SQUARES_MAX_AGENTS];
    int good_steps[SQUARES_MAX_AGENTS];
    float returns[SQUARES_MAX_AGENTS];
};

static unsigned int squares_rand(Env* env) {
    env->rng = env->rng * 1664525u + 1013904223u;
    return env->rng >> 8;
}

/* Ring distance from a to b, and the step (-1, 0, +1) that shortens it. */
static int squares_dist(int a, int b) {
    int d = (b - a + SQUARES_CELLS) % SQUARES_CELLS;
    return d <= SQUARES_CELLS / 2 ? d : SQUARES_CELLS - d;
}

static void squares_new_target(Env* env, int i) {
    int t = (int)(squares_rand(env) % (SQUARES_CELLS - 1));
    env->target[i] = t >= env->pos[i] ? t + 1 : t;  /* any cell but the agent's own */
}

static void squares_write_obs(Env* env, int i) {
    obs_t* obs = env->agents[i].observations;
    memset(obs, 0, OBS_SIZE * sizeof(obs_t));
    obs[env->pos[i]] = 1;
    obs[SQUARES_CELLS + env->target[i]] = 1;
}

void puf_init(Env* env, Dict* kwargs) {
    int n = (int)dict_get(kwargs, "agents_per_env");
    env->num_agents = n < 1 ? 1 : n > SQUARES_MAX_AGENTS ? SQUARES_MAX_AGENTS : n;
    env->max_steps = (int)dict_get(kwargs, "max_steps");
    if (env->max_steps < 1) env->max_steps = 1;
    env->step_penalty = dict_get(kwargs, "step_penalty");
}

void puf_reset(Env* env) {
    env->tick = 0;
    for (int i = 0; i < env->num_agents; i++) {
        env->pos[i] = (int)(squares_rand(env) % SQUARES_CELLS);
        squares_new_target(env, i);
        env->reached[i] = 0;
        env->good_steps[i] = 0;
        env->returns[i] = 0.0f;
        squares_write_obs(env, i);
    }
}

void puf_step(Env* env) {
    env->tick++;
    for (int i = 0; i < env->num_agents; i++) {
        Agent* agent = &env->agents[i];
        agent->rewards[0] = 0.0f;
        agent->terminals[0] = 0.0f;
        float a = agent->actions[0];
        int move = (a >= 0.0f && a < 3.0f) ? (int)a - 1 : 0;  /* garbage counts as "stay" */
        int before = squares_dist(env->pos[i], env->target[i]);
        env->pos[i] = (env->pos[i] + move + SQUARES_CELLS) % SQUARES_CELLS;
        int after = squares_dist(env->pos[i], env->target[i]);
        env->good_steps[i] += after < before;
        float reward = -env->step_penalty;
        if (after == 0) {
            reward += 1.0f;
            env->reached[i]++;
            squares_new_target(env, i);
        }
        agent->rewards[0] = reward;
        env->returns[i] += reward;
    }
    if (env->tick >= env->max_steps) {
        for (int i = 0; i < env->num_agents; i++) {
            env->log.perf += (float)env->good_steps[i] / (float)env->tick;
            env->log.score += (float)env->reached[i];
            env->log.episode_return += env->returns[i];
            env->log.episode_length += (float)env->tick;
            env->log.n += 1.0f;
            env->agents[i].terminals[0] = 1.0f;
        }
        puf_reset(env);
        return;
    }
    for (int i = 0; i < env->num_agents; i++) squares_write_obs(env, i);
}

#define SQUARES_PX 12

void puf_render(Env* env) {
    int width = SQUARES_CELLS * SQUARES_PX, height = env->num_agents * SQUARES_PX + 12;
    if (!IsWindowReady()) {
        InitWindow(width, height, "squares");
        SetTargetFPS(30);
    }
    BeginDrawing();
    ClearBackground((Color){6, 24, 24, 255});
    for (int i = 0; i < env->num_agents; i++) {
        int y = 12 + i * SQUARES_PX;
        for (int c = 0; c < SQUARES_CELLS; c++) {
            DrawRectangleLines(c * SQUARES_PX, y, SQUARES_PX, SQUARES_PX, DARKGRAY);
        }
        DrawCircle(env->target[i] * SQUARES_PX + SQUARES_PX / 2, y + SQUARES_PX / 2, 3, GOLD);
        DrawRectangle(env->pos[i] * SQUARES_PX + 2, y + 2, SQUARES_PX - 4, SQUARES_PX - 4,
                      Fade(SKYBLUE, 0.8f));
    }
    DrawLine(0, 11, width, 11, GRAY);
    DrawText(TextFormat("T%d", env->tick), 1, 1, 10, RAYWHITE);
    EndDrawing();
    puf_web_vsync();
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "n", log->n);
}
