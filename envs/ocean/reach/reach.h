/* reach — continuous control: steer a point mass onto a target with two Gaussian action heads.
 *
 * The arena is the square [-1, 1]². Each episode starts the agent and the target at random points at
 * least `min_distance` apart. Actions are two continuous heads (ACT_SIZES {1, 1}: a head of size 1 is
 * continuous): the velocity command (vx, vy), each clipped to [-1, 1] and scaled by `speed` per step.
 * The agent must stop on the target: the episode succeeds once it has stayed within `radius` of the
 * target for `hold_steps` consecutive steps (reward +1), and times out after `max_steps` steps. Each
 * step also pays the progress toward the target (the decrease of the distance) and costs
 * `action_cost`·(vx² + vy²) of the clipped command (a motor cost, as in most control tasks: without it
 * a noisy, saturated bang-bang command would be as good as a precise one).
 *
 * A policy whose means do not depend on the observation succeeds by chance only: with the initial
 * σ = 1 that is a random walk (perf ~0.005 with the defaults; the scripted controller: 1.0). Perf rises only as the means learn to
 * point at the target and to hold still on it, and σ shrinks enough not to kick the agent off it
 * (clipping makes a large σ harmless while travelling, not while holding).
 *
 * Observation (6): x, y, target x − x, target y − y, steps held / hold_steps, steps / max_steps.
 * Log: perf = fraction of episodes that reach the target, score = 1 − final distance / start distance
 * (1 on a reach), episode_return, episode_length, timeouts.
 */
#ifndef REACH_REACH_H
#define REACH_REACH_H

#include <math.h>

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 6
#define NUM_ATNS 2
#define ACT_SIZES {1, 1}

struct Log {
    float perf;
    float score;
    float episode_return;
    float episode_length;
    float timeouts;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    float speed, radius, min_distance, action_cost; /* [env] keys */
    int max_steps, hold_steps;
    int held;
    float x, y, tx, ty;
    float start_distance, distance;
    int steps;
    float episode_return;
    float trail[64][2]; /* recent positions, for rendering */
    int trail_len;
};

static inline float reach_uniform(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return (float)(*rng >> 8) * (1.0f / 16777216.0f);
}

static inline float reach_clip(float v) {
    /* NaN fails both comparisons: it becomes 0 (no move) rather than poisoning the state */
    if (v >= 1.0f) return 1.0f;
    if (v <= -1.0f) return -1.0f;
    return v == v ? v : 0.0f;
}

static void reach_observe(Env* env) {
    float* obs = env->agents[0].observations;
    obs[0] = env->x;
    obs[1] = env->y;
    obs[2] = env->tx - env->x;
    obs[3] = env->ty - env->y;
    obs[4] = (float)env->held / (float)env->hold_steps;
    obs[5] = (float)env->steps / (float)env->max_steps;
}

static void reach_new_episode(Env* env) {
    do {
        env->x = 2.0f * reach_uniform(&env->rng) - 1.0f;
        env->y = 2.0f * reach_uniform(&env->rng) - 1.0f;
        env->tx = 2.0f * reach_uniform(&env->rng) - 1.0f;
        env->ty = 2.0f * reach_uniform(&env->rng) - 1.0f;
        env->distance = hypotf(env->tx - env->x, env->ty - env->y);
    } while (env->distance < env->min_distance);
    env->start_distance = env->distance;
    env->steps = 0;
    env->held = 0;
    env->episode_return = 0.0f;
    env->trail_len = 0;
    reach_observe(env);
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->speed = (float)dict_get(kwargs, "speed");
    env->radius = (float)dict_get(kwargs, "radius");
    env->min_distance = (float)dict_get(kwargs, "min_distance");
    env->action_cost = (float)dict_get(kwargs, "action_cost");
    env->max_steps = (int)dict_get(kwargs, "max_steps");
    env->hold_steps = (int)dict_get(kwargs, "hold_steps");
    if (env->max_steps < 1) env->max_steps = 1;
    if (env->hold_steps < 1) env->hold_steps = 1;
}

void puf_reset(Env* env) { reach_new_episode(env); }

static void reach_end(Env* env, int reached) {
    env->agents[0].terminals[0] = 1.0f;
    env->log.perf += (float)reached;
    env->log.score += reached ? 1.0f : fmaxf(0.0f, 1.0f - env->distance / env->start_distance);
    env->log.episode_return += env->episode_return;
    env->log.episode_length += (float)env->steps;
    env->log.timeouts += (float)!reached;
    env->log.n += 1.0f;
    reach_new_episode(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    if (env->trail_len < 64) {
        env->trail[env->trail_len][0] = env->x;
        env->trail[env->trail_len][1] = env->y;
        env->trail_len++;
    }
    float vx = reach_clip(agent->actions[0]), vy = reach_clip(agent->actions[1]);
    env->x = fminf(1.0f, fmaxf(-1.0f, env->x + env->speed * vx));
    env->y = fminf(1.0f, fmaxf(-1.0f, env->y + env->speed * vy));
    env->steps += 1;
    float d = hypotf(env->tx - env->x, env->ty - env->y);
    float reward = env->distance - d - env->action_cost * (vx * vx + vy * vy);
    env->distance = d;
    env->held = d <= env->radius ? env->held + 1 : 0;
    int reached = env->held >= env->hold_steps;
    if (reached) reward += 1.0f;
    agent->rewards[0] = reward;
    env->episode_return += reward;
    if (reached || env->steps >= env->max_steps) {
        reach_end(env, reached);
        return;
    }
    reach_observe(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "timeouts", log->timeouts);
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* Steers straight at the target and stops on it (what the Gaussian means should learn). */
static void reach_scripted(const obs_t* obs, float* actions) {
    float dx = obs[2], dy = obs[3];
    float m = fmaxf(fabsf(dx), fabsf(dy));
    float gain = m > 0.06f ? 1.0f / m : 1.0f / 0.06f; /* full speed, then exactly onto the target */
    actions[0] = dx * gain;
    actions[1] = dy * gain;
}
#define PUF_SCRIPTED_POLICY reach_scripted

/* Top view: the target (green disc of the reach radius), the agent's recent trail and the agent. */
void puf_render(Env* env) {
    const int S = 160;
    const float half = 0.5f * (float)(S - 1);
    if (!IsWindowReady()) InitWindow(S, S, "reach");
    BeginDrawing();
    ClearBackground((Color){20, 24, 32, 255});
    DrawCircle((int)((env->tx + 1.0f) * half), (int)((1.0f - env->ty) * half), env->radius * half,
               (Color){60, 190, 90, 255});
    for (int i = 0; i < env->trail_len; i++) {
        DrawRectangle((int)((env->trail[i][0] + 1.0f) * half), (int)((1.0f - env->trail[i][1]) * half), 2, 2,
                      (Color){90, 110, 170, 255});
    }
    DrawRectangle((int)((env->x + 1.0f) * half) - 3, (int)((1.0f - env->y) * half) - 3, 7, 7,
                  (Color){240, 200, 60, 255});
    EndDrawing();
    puf_web_vsync();
}

#endif /* REACH_REACH_H */
