/* cardplay — action masks: play a card from a hand that only the action mask shows.
 *
 * Every step of an episode (`rounds` steps) deals a new hand: each card 0..7 is held with
 * probability 1/2 (at least one, never all eight), and a target 0..7 is shown in the observation.
 * The hand is not in the observation: Agent.action_mask (1 = held = legal) is the only place it
 * appears. Playing the held card closest to the target earns 1/rounds (ties: either neighbour);
 * another held card earns 0; a card that is not held is illegal and ends the episode at once with
 * reward -illegal_penalty. A policy that ignores the mask plays an unheld card about half the time;
 * one that samples from the masked distribution only has to learn which held card is best.
 *
 * Observation (9): target one-hot (8), then rounds played / rounds.
 * Log: perf = best plays / rounds (after an illegal play the remaining rounds count as misses),
 * score = the same fraction, episode_return, episode_length, illegal = episodes ended by an illegal
 * play. Uniform play over the legal cards: perf ~0.32; uniform play ignoring the mask: ~0.03
 * (99.6% of episodes end at an illegal play).
 */
#ifndef CARDPLAY_CARDPLAY_H
#define CARDPLAY_CARDPLAY_H

#include <math.h>

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define OBS_SIZE 9
#define NUM_ATNS 1
#define ACT_SIZES {8}
#define CARDPLAY_CARDS 8

struct Log {
    float perf;
    float score;
    float episode_return;
    float episode_length;
    float illegal;
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    int rounds;            /* plays per episode ([env] rounds) */
    float illegal_penalty; /* reward of an illegal play ([env] illegal_penalty) */
    int round;
    int target;
    unsigned char held[CARDPLAY_CARDS];
    int best_plays;
    float episode_return;
    int last_card, last_result; /* for rendering: -1 none; result 0 miss, 1 best, 2 illegal */
};

static inline unsigned int cardplay_rand(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return *rng >> 8;
}

/* a new hand and target; the hand goes to the action mask only */
static void cardplay_deal(Env* env) {
    Agent* agent = &env->agents[0];
    int count;
    do {
        unsigned int bits = cardplay_rand(&env->rng);
        count = 0;
        for (int c = 0; c < CARDPLAY_CARDS; c++) {
            env->held[c] = (unsigned char)((bits >> c) & 1u);
            count += env->held[c];
        }
    } while (count == 0 || count == CARDPLAY_CARDS);
    env->target = (int)(cardplay_rand(&env->rng) % CARDPLAY_CARDS);
    for (int c = 0; c < CARDPLAY_CARDS; c++) {
        agent->action_mask[c] = env->held[c];
        agent->observations[c] = c == env->target ? 1.0f : 0.0f;
    }
    agent->observations[CARDPLAY_CARDS] = (float)env->round / (float)env->rounds;
}

/* distance from the target to the closest held card */
static int cardplay_best_distance(const Env* env) {
    int best = CARDPLAY_CARDS;
    for (int c = 0; c < CARDPLAY_CARDS; c++) {
        int d = abs(c - env->target);
        if (env->held[c] && d < best) best = d;
    }
    return best;
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->rounds = (int)dict_get(kwargs, "rounds");
    if (env->rounds < 1) env->rounds = 1;
    env->illegal_penalty = (float)dict_get(kwargs, "illegal_penalty");
    env->last_card = -1;
}

static void cardplay_new_episode(Env* env) {
    env->round = 0;
    env->best_plays = 0;
    env->episode_return = 0.0f;
    cardplay_deal(env);
}

void puf_reset(Env* env) {
    env->last_card = -1;
    cardplay_new_episode(env);
}

static void cardplay_end(Env* env, int illegal) {
    Agent* agent = &env->agents[0];
    agent->terminals[0] = 1.0f;
    float perf = (float)env->best_plays / (float)env->rounds;
    env->log.perf += perf;
    env->log.score += perf;
    env->log.episode_return += env->episode_return;
    env->log.episode_length += (float)env->round;
    env->log.illegal += (float)illegal;
    env->log.n += 1.0f;
    cardplay_new_episode(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    float a = agent->actions[0];
    /* compare as a float first: a NaN or huge value cast to int is undefined behaviour */
    int card = (a >= 0.0f && a < (float)CARDPLAY_CARDS) ? (int)a : -1;
    env->round += 1;
    env->last_card = card;
    if (card < 0 || !env->held[card]) {
        env->last_result = 2;
        agent->rewards[0] = -env->illegal_penalty;
        env->episode_return -= env->illegal_penalty;
        cardplay_end(env, 1);
        return;
    }
    int best = abs(card - env->target) == cardplay_best_distance(env);
    env->last_result = best;
    if (best) {
        env->best_plays += 1;
        agent->rewards[0] = 1.0f / (float)env->rounds;
        env->episode_return += agent->rewards[0];
    }
    if (env->round >= env->rounds) {
        cardplay_end(env, 0);
        return;
    }
    cardplay_deal(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "illegal", log->illegal);
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* A rule-based player that ignores the mask: it plays the target card itself (illegal whenever that
 * card is not held). Shows what happens without masks: about half the episodes end at the first play. */
static void cardplay_ignore_mask(const obs_t* obs, float* actions) {
    int target = 0;
    for (int c = 1; c < CARDPLAY_CARDS; c++) {
        if (obs[c] > obs[target]) target = c;
    }
    actions[0] = (float)target;
}
#define PUF_SCRIPTED_POLICY cardplay_ignore_mask

/* The 8 cards in a row: held ones light, the target outlined in yellow, the last play below
 * (green = best, grey = a worse held card, red = illegal); a progress bar of the rounds at the bottom. */
void puf_render(Env* env) {
    const int C = 20, W = CARDPLAY_CARDS * C;
    if (!IsWindowReady()) InitWindow(W, 3 * C, "cardplay");
    BeginDrawing();
    ClearBackground((Color){24, 28, 36, 255});
    for (int c = 0; c < CARDPLAY_CARDS; c++) {
        int x = c * C;
        if (c == env->target) DrawRectangle(x + 1, 1, C - 2, C - 2, (Color){240, 200, 40, 255});
        Color card = env->held[c] ? (Color){220, 220, 235, 255} : (Color){60, 60, 70, 255};
        DrawRectangle(x + 4, 4, C - 8, C - 8, card);
        if (c == env->last_card) {
            Color played = env->last_result == 2 ? (Color){220, 50, 60, 255}
                         : env->last_result == 1 ? (Color){60, 200, 60, 255} : (Color){120, 120, 60, 255};
            DrawRectangle(x + 4, C + 4, C - 8, C - 8, played);
        }
    }
    DrawRectangle(0, 2 * C + C / 2, W * env->round / env->rounds, C / 3, (Color){90, 160, 230, 255});
    EndDrawing();
    puf_web_vsync();
}

#endif /* CARDPLAY_CARDPLAY_H */
