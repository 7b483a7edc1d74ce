/* aimjump — a hybrid action space: walk and jump (discrete heads) with a launch angle (a continuous
 * head) to land on a platform across a pit.
 *
 * Side view in tile units. The agent starts on a ledge [0, 4] at a random x in [0, 3]; the pit begins
 * at x = 4; a landing platform of width `platform_width` starts at a random x in [5, 11]. Heads, in
 * this order (ACT_SIZES {3, 1, 2}; the continuous head sits between the discrete ones on purpose):
 *   move  (3): none, left, right — `walk` tiles per step; walking past the edge is a fall;
 *   aim   (1): continuous, the launch angle θ = 25° + 20°·clip(aim, −1, 1) ∈ [5°, 45°];
 *   jump  (2): no, yes — leaps with the fixed launch speed at angle θ (range 9·sin 2θ tiles, from
 *              1.6 at 5° to 9 at 45°), flies for `flight_steps` steps (actions ignored) and lands.
 * Landing on the platform: reward +1. A fall into the pit, or `max_steps` steps without jumping:
 * reward −fail_penalty. Far platforms are out of range from the back of the ledge, so the agent has to
 * walk to the edge first (move), jump (jump) and pick the angle that lands it (aim): with the aim
 * head frozen at its initial N(μ≈0, σ = 1) the angle is a lottery: perf ~0.21 even with the scripted
 * moves and jump timing (uniform random play: ~0.17; the scripted player: 0.99).
 *
 * Observation (6): x / 4, (edge − x) / 4, (platform − x) / 8, platform width, airborne, steps / max_steps.
 * Log: perf = landing rate, score = the same, episode_return, episode_length, falls, timeouts,
 * short (landed before the platform), long (landed beyond it).
 */
#ifndef AIMJUMP_AIMJUMP_H
#define AIMJUMP_AIMJUMP_H

#include <math.h>

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 6
#define NUM_ATNS 3
#define ACT_SIZES {3, 1, 2}

#define AIMJUMP_EDGE 4.0f
#define AIMJUMP_RANGE 9.0f /* v²/g in tiles: the range at 45° */
#define AIMJUMP_DEG 0.017453292519943295f

struct Log {
    float perf;
    float score;
    float episode_return;
    float episode_length;
    float falls;
    float timeouts;
    float short_jumps;
    float long_jumps;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    float walk, platform_width, fail_penalty; /* [env] keys */
    int flight_steps, max_steps;
    float x;                /* position (launch point while airborne) */
    float platform;         /* left end of the landing platform */
    float angle;            /* launch angle of the jump in progress (radians) */
    float land_x;           /* where it lands */
    int airborne;           /* flight steps done, 0 on the ground */
    int steps;
    float episode_return;
};

static inline float aimjump_uniform(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return (float)(*rng >> 8) * (1.0f / 16777216.0f);
}

static void aimjump_observe(Env* env) {
    float* obs = env->agents[0].observations;
    obs[0] = env->x / AIMJUMP_EDGE;
    obs[1] = (AIMJUMP_EDGE - env->x) / AIMJUMP_EDGE;
    obs[2] = (env->platform - env->x) / 8.0f;
    obs[3] = env->platform_width;
    obs[4] = env->airborne > 0 ? 1.0f : 0.0f;
    obs[5] = (float)env->steps / (float)env->max_steps;
}

static void aimjump_new_episode(Env* env) {
    env->x = 3.0f * aimjump_uniform(&env->rng);
    env->platform = 5.0f + 6.0f * aimjump_uniform(&env->rng);
    env->airborne = 0;
    env->steps = 0;
    env->episode_return = 0.0f;
    aimjump_observe(env);
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->walk = (float)dict_get(kwargs, "walk");
    env->platform_width = (float)dict_get(kwargs, "platform_width");
    env->fail_penalty = (float)dict_get(kwargs, "fail_penalty");
    env->flight_steps = (int)dict_get(kwargs, "flight_steps");
    env->max_steps = (int)dict_get(kwargs, "max_steps");
    if (env->flight_steps < 1) env->flight_steps = 1;
    if (env->max_steps < 1) env->max_steps = 1;
}

void puf_reset(Env* env) { aimjump_new_episode(env); }

/* outcome: 0 landed, 1 fell (walked off or jumped short/long), 2 timeout */
static void aimjump_end(Env* env, int outcome, float reward) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = reward;
    agent->terminals[0] = 1.0f;
    env->episode_return += reward;
    env->log.perf += (float)(outcome == 0);
    env->log.score += (float)(outcome == 0);
    env->log.episode_return += env->episode_return;
    env->log.episode_length += (float)env->steps;
    env->log.falls += (float)(outcome == 1);
    env->log.timeouts += (float)(outcome == 2);
    if (outcome == 1 && env->airborne) {
        env->log.short_jumps += (float)(env->land_x < env->platform);
        env->log.long_jumps += (float)(env->land_x > env->platform + env->platform_width);
    }
    env->log.n += 1.0f;
    aimjump_new_episode(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    env->steps += 1;
    if (env->airborne) {
        if (++env->airborne > env->flight_steps) {
            int landed = env->land_x >= env->platform && env->land_x <= env->platform + env->platform_width;
            aimjump_end(env, landed ? 0 : 1, landed ? 1.0f : -env->fail_penalty);
            return;
        }
        aimjump_observe(env);
        return;
    }
    /* untrusted floats: compare before converting (a NaN or huge value cast to int is undefined) */
    float m = agent->actions[0], aim = agent->actions[1], j = agent->actions[2];
    if (j == 1.0f) {
        float a = aim >= 1.0f ? 1.0f : aim <= -1.0f ? -1.0f : (aim == aim ? aim : 0.0f);
        env->angle = (25.0f + 20.0f * a) * AIMJUMP_DEG;
        env->land_x = env->x + AIMJUMP_RANGE * sinf(2.0f * env->angle);
        env->airborne = 1;
        aimjump_observe(env);
        return;
    }
    if (m == 1.0f) env->x = fmaxf(0.0f, env->x - env->walk);
    if (m == 2.0f) env->x += env->walk;
    if (env->x > AIMJUMP_EDGE) {
        env->land_x = env->x;
        aimjump_end(env, 1, -env->fail_penalty);
        return;
    }
    if (env->steps >= env->max_steps) {
        aimjump_end(env, 2, -env->fail_penalty);
        return;
    }
    aimjump_observe(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "falls", log->falls);
    dict_set(out, "timeouts", log->timeouts);
    dict_set(out, "short", log->short_jumps);
    dict_set(out, "long", log->long_jumps);
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* Walks toward the edge while the platform's middle is beyond 95% of the range, then jumps at the angle
 * that lands there. */
static void aimjump_scripted(const obs_t* obs, float* actions) {
    float to_edge = obs[1] * AIMJUMP_EDGE, need = obs[2] * 8.0f + 0.5f * obs[3];
    actions[0] = 0.0f;
    actions[1] = 0.0f;
    actions[2] = 0.0f;
    if (need > 0.95f * AIMJUMP_RANGE && to_edge >= 0.5f) {
        actions[0] = 2.0f;
        return;
    }
    float angle = 0.5f * asinf(fminf(1.0f, need / AIMJUMP_RANGE));
    actions[1] = (angle / AIMJUMP_DEG - 25.0f) / 20.0f;
    actions[2] = 1.0f;
}
#define PUF_SCRIPTED_POLICY aimjump_scripted

/* Side view: ledge and platform (grey, green), the pit, the agent (yellow) and its arc while airborne. */
void puf_render(Env* env) {
    const int S = 12, W = 16 * S, H = 8 * S, ground = 6 * S;
    if (!IsWindowReady()) InitWindow(W, H, "aimjump");
    BeginDrawing();
    ClearBackground((Color){26, 30, 44, 255});
    DrawRectangle(0, ground, (int)(AIMJUMP_EDGE * S), H - ground, (Color){120, 120, 130, 255});
    DrawRectangle((int)(env->platform * S), ground, (int)(env->platform_width * S), H - ground,
                  (Color){90, 170, 110, 255});
    float px = env->x, py = 0.0f;
    if (env->airborne) {
        float t = (float)env->airborne / (float)env->flight_steps; /* fraction of the flight */
        float range = env->land_x - env->x, slope = tanf(env->angle);
        px = env->x + t * range;
        py = slope * (t * range) * (1.0f - t); /* the parabola through launch and landing */
        for (int k = 0; k < 24; k++) {
            float u0 = (float)k / 24.0f, u1 = (float)(k + 1) / 24.0f;
            DrawLine((int)((env->x + u0 * range) * S), ground - (int)(slope * u0 * range * (1.0f - u0) * S),
                     (int)((env->x + u1 * range) * S), ground - (int)(slope * u1 * range * (1.0f - u1) * S),
                     (Color){80, 90, 140, 255});
        }
    }
    DrawRectangle((int)(px * S) - S / 3, ground - (int)(py * S) - S, 2 * S / 3, S, (Color){240, 200, 60, 255});
    EndDrawing();
    puf_web_vsync();
}

#endif /* AIMJUMP_AIMJUMP_H */
