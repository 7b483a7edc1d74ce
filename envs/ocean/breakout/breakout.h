/* breakout — bounce a ball off a paddle into a wall of bricks, seen as a 64x64 RGB picture.
 *
 * The observation is the picture alone (PICTURE_* below: 64x64x3 bytes, rows from the top, RGB),
 * drawn straight into the observation row, so every thread draws its own envs and frames are
 * exact. Everything moves in whole 1/16 pixels (integer physics: the same on every platform):
 *     walls       gray, 2 px: left x 0-1, right x 62-63, top y 0-1 (the bottom is open)
 *     bricks      6 rows x 10 columns of 6x3 px cells from y = 8, drawn 5x2 (a 1 px gap), one
 *                 color per row (red, orange, yellow, green, blue, purple from the top)
 *     paddle      10x2 px at y = 58-59, moves 2 px a step (fast: 4), stays between the walls
 *     ball        2x2 px white; held above the paddle until fire (or auto_launch steps)
 * The ball moves 2 px a step vertically in 4 substeps (never through a 2 px wall or brick); a
 * paddle hit sends it off at an angle set by where it hit (the edge: steep sideways, the middle:
 * nearly straight up).
 * Actions (one head of 8): 0 none, 1 left, 2 right, 3 fire, 4 left + fire, 5 right + fire,
 * 6 fast left, 7 fast right.
 * Reward: +1/60 per brick (clearing the wall sums to 1); -miss_penalty per ball lost. The episode
 * ends when the wall is cleared, the last ball is lost, or after max_steps steps.
 * Log: perf = share of the wall cleared (1 = all), score = bricks broken, lives_lost.
 */
#ifndef BREAKOUT_BREAKOUT_H
#define BREAKOUT_BREAKOUT_H

#include "raylib.h"
typedef unsigned char obs_t;
#include "pufferenv.h"

#define PICTURE_HEIGHT 64
#define PICTURE_WIDTH 64
#define PICTURE_CHANNELS 3
#define OBS_SIZE (PICTURE_HEIGHT * PICTURE_WIDTH * PICTURE_CHANNELS)
#define NUM_ATNS 1
#define ACT_SIZES {8}

#define BREAKOUT_SUB 16                 /* physics units per pixel */
#define BREAKOUT_SIZE 64
#define BREAKOUT_WALL 2
#define BREAKOUT_ROWS 6
#define BREAKOUT_COLS 10
#define BREAKOUT_BRICKS (BREAKOUT_ROWS * BREAKOUT_COLS)
#define BREAKOUT_BRICK_W 6
#define BREAKOUT_BRICK_H 3
#define BREAKOUT_BRICK_TOP 8
#define BREAKOUT_PADDLE_W 10
#define BREAKOUT_PADDLE_H 2
#define BREAKOUT_PADDLE_Y 58
#define BREAKOUT_PADDLE_SPEED 2
#define BREAKOUT_BALL 2
#define BREAKOUT_SUBSTEPS 4
#define BREAKOUT_BALL_VY 32             /* 1/16 px per step: 2 px */
#define BREAKOUT_BALL_VX_MAX 32

enum { BREAKOUT_NONE, BREAKOUT_LEFT, BREAKOUT_RIGHT, BREAKOUT_FIRE, BREAKOUT_LEFT_FIRE,
       BREAKOUT_RIGHT_FIRE, BREAKOUT_FAST_LEFT, BREAKOUT_FAST_RIGHT };

struct Log {
    float perf;            /* share of the wall cleared */
    float score;           /* bricks broken */
    float episode_return;
    float episode_length;
    float lives_lost;
    float cleared;         /* 1 if the whole wall was cleared */
    float n;
};

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    /* config */
    int max_steps, lives_start, auto_launch;
    float miss_penalty;
    /* game: positions of top-left corners in 1/16 px */
    unsigned char bricks[BREAKOUT_BRICKS];  /* 1 = standing */
    int bricks_left;
    int paddle_x;          /* whole pixels */
    int ball_x, ball_y, ball_vx, ball_vy;
    int held;              /* the ball rides on the paddle until launched */
    int held_steps;
    int lives, steps;
    float episode_return;
};

static const unsigned char breakout_row_colors[BREAKOUT_ROWS][3] = {
    {220, 50, 50}, {240, 140, 40}, {230, 210, 60}, {60, 190, 70}, {60, 120, 230}, {160, 80, 210},
};
static const unsigned char breakout_wall_color[3] = {142, 142, 142};
static const unsigned char breakout_paddle_color[3] = {200, 72, 200};
static const unsigned char breakout_ball_color[3] = {255, 255, 255};

static inline unsigned int breakout_rand(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;
    return *rng >> 8;
}

/* ---- Picture ---- */

static void breakout_fill(obs_t* pic, int x, int y, int w, int h, const unsigned char* c) {
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + w > BREAKOUT_SIZE ? BREAKOUT_SIZE : x + w;
    int y1 = y + h > BREAKOUT_SIZE ? BREAKOUT_SIZE : y + h;
    for (int j = y0; j < y1; j++) {
        obs_t* p = pic + ((size_t)j * BREAKOUT_SIZE + x0) * 3;
        for (int i = x0; i < x1; i++, p += 3) {
            p[0] = c[0];
            p[1] = c[1];
            p[2] = c[2];
        }
    }
}

static void breakout_write_obs(Env* env) {
    obs_t* pic = env->agents[0].observations;
    memset(pic, 0, OBS_SIZE);
    breakout_fill(pic, 0, 0, BREAKOUT_SIZE, BREAKOUT_WALL, breakout_wall_color);
    breakout_fill(pic, 0, 0, BREAKOUT_WALL, BREAKOUT_SIZE, breakout_wall_color);
    breakout_fill(pic, BREAKOUT_SIZE - BREAKOUT_WALL, 0, BREAKOUT_WALL, BREAKOUT_SIZE, breakout_wall_color);
    for (int r = 0; r < BREAKOUT_ROWS; r++) {
        for (int c = 0; c < BREAKOUT_COLS; c++) {
            if (!env->bricks[r * BREAKOUT_COLS + c]) continue;
            breakout_fill(pic, BREAKOUT_WALL + c * BREAKOUT_BRICK_W, BREAKOUT_BRICK_TOP + r * BREAKOUT_BRICK_H,
                          BREAKOUT_BRICK_W - 1, BREAKOUT_BRICK_H - 1, breakout_row_colors[r]);
        }
    }
    breakout_fill(pic, env->paddle_x, BREAKOUT_PADDLE_Y, BREAKOUT_PADDLE_W, BREAKOUT_PADDLE_H,
                  breakout_paddle_color);
    breakout_fill(pic, env->ball_x / BREAKOUT_SUB, env->ball_y / BREAKOUT_SUB, BREAKOUT_BALL,
                  BREAKOUT_BALL, breakout_ball_color);
}

/* ---- Game ---- */

static void breakout_hold_ball(Env* env) {
    env->held = 1;
    env->held_steps = 0;
    env->ball_x = (env->paddle_x + (BREAKOUT_PADDLE_W - BREAKOUT_BALL) / 2) * BREAKOUT_SUB;
    env->ball_y = (BREAKOUT_PADDLE_Y - BREAKOUT_BALL) * BREAKOUT_SUB;
    env->ball_vx = 0;
    env->ball_vy = 0;
}

static void breakout_launch(Env* env) {
    static const int vx[4] = {-16, -8, 8, 16};
    env->held = 0;
    env->ball_vx = vx[breakout_rand(&env->rng) % 4];
    env->ball_vy = -BREAKOUT_BALL_VY;
}

/* The brick cell under pixel (x, y), or -1. */
static inline int breakout_brick_at(const Env* env, int x, int y) {
    int c = (x - BREAKOUT_WALL), r = (y - BREAKOUT_BRICK_TOP);
    if (c < 0 || r < 0) return -1;
    c /= BREAKOUT_BRICK_W;
    r /= BREAKOUT_BRICK_H;
    if (c >= BREAKOUT_COLS || r >= BREAKOUT_ROWS) return -1;
    int i = r * BREAKOUT_COLS + c;
    return env->bricks[i] ? i : -1;
}

/* Breaks the standing bricks the ball's box overlaps (at its position in 1/16 px); returns how
 * many, and whether a wall is hit through *wall. */
static int breakout_collide(Env* env, int bx, int by, int* wall) {
    int x0 = bx / BREAKOUT_SUB, y0 = by / BREAKOUT_SUB;
    int x1 = (bx + BREAKOUT_BALL * BREAKOUT_SUB - 1) / BREAKOUT_SUB;
    int y1 = (by + BREAKOUT_BALL * BREAKOUT_SUB - 1) / BREAKOUT_SUB;
    *wall = x0 < BREAKOUT_WALL || x1 >= BREAKOUT_SIZE - BREAKOUT_WALL || y0 < BREAKOUT_WALL;
    int broken = 0;
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            int i = breakout_brick_at(env, x, y);
            if (i < 0) continue;
            env->bricks[i] = 0;
            env->bricks_left--;
            broken++;
        }
    }
    return broken;
}

/* One step of ball flight; returns bricks broken, sets *lost when the ball leaves the bottom. */
static int breakout_move_ball(Env* env, int* lost) {
    int broken = 0, wall;
    *lost = 0;
    for (int s = 0; s < BREAKOUT_SUBSTEPS; s++) {
        /* x, then y, each reverted and reflected on a hit */
        int nx = env->ball_x + env->ball_vx / BREAKOUT_SUBSTEPS;
        int hit = breakout_collide(env, nx, env->ball_y, &wall);
        if (hit || wall) {
            env->ball_vx = -env->ball_vx;
            broken += hit;
        } else {
            env->ball_x = nx;
        }
        int ny = env->ball_y + env->ball_vy / BREAKOUT_SUBSTEPS;
        hit = breakout_collide(env, env->ball_x, ny, &wall);
        if (hit || wall) {
            env->ball_vy = -env->ball_vy;
            broken += hit;
            continue;
        }
        env->ball_y = ny;
        /* the paddle, from above only */
        int top = BREAKOUT_PADDLE_Y * BREAKOUT_SUB;
        int bottom = env->ball_y + BREAKOUT_BALL * BREAKOUT_SUB;
        int px0 = env->paddle_x * BREAKOUT_SUB, px1 = px0 + BREAKOUT_PADDLE_W * BREAKOUT_SUB;
        if (env->ball_vy > 0 && bottom > top && bottom <= top + BREAKOUT_PADDLE_H * BREAKOUT_SUB &&
            env->ball_x + BREAKOUT_BALL * BREAKOUT_SUB > px0 && env->ball_x < px1) {
            /* where it hit, -6..+6 px from the paddle's center, sets the angle */
            int offset = (env->ball_x + BREAKOUT_BALL * BREAKOUT_SUB / 2) - (px0 + px1) / 2;
            int vx = offset / 3;  /* 1/16 px per step: up to +-32 at the paddle's edges */
            if (vx > BREAKOUT_BALL_VX_MAX) vx = BREAKOUT_BALL_VX_MAX;
            if (vx < -BREAKOUT_BALL_VX_MAX) vx = -BREAKOUT_BALL_VX_MAX;
            vx = vx / BREAKOUT_SUBSTEPS * BREAKOUT_SUBSTEPS;  /* whole units per substep */
            if (vx == 0) vx = env->ball_vx >= 0 ? BREAKOUT_SUBSTEPS : -BREAKOUT_SUBSTEPS;
            env->ball_vx = vx;
            env->ball_vy = -BREAKOUT_BALL_VY;
            env->ball_y = top - BREAKOUT_BALL * BREAKOUT_SUB;
        }
        if (env->ball_y >= BREAKOUT_SIZE * BREAKOUT_SUB) {
            *lost = 1;
            break;
        }
    }
    return broken;
}

/* ---- Contract ---- */

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->max_steps = (int)dict_get(kwargs, "max_steps");
    env->lives_start = (int)dict_get(kwargs, "lives");
    env->auto_launch = (int)dict_get(kwargs, "auto_launch");
    env->miss_penalty = (float)dict_get(kwargs, "miss_penalty");
    if (env->max_steps < 1) env->max_steps = 1;
    if (env->lives_start < 1) env->lives_start = 1;
    if (env->auto_launch < 1) env->auto_launch = 1;
}

void puf_reset(Env* env) {
    memset(env->bricks, 1, sizeof(env->bricks));
    env->bricks_left = BREAKOUT_BRICKS;
    env->paddle_x = (BREAKOUT_SIZE - BREAKOUT_PADDLE_W) / 2 - 4 + (int)(breakout_rand(&env->rng) % 9);
    env->lives = env->lives_start;
    env->steps = 0;
    env->episode_return = 0.0f;
    breakout_hold_ball(env);
    breakout_write_obs(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;
    agent->terminals[0] = 0.0f;
    float a = agent->actions[0];
    int action = a >= 0.0f && a < 8.0f ? (int)a : BREAKOUT_NONE;  /* compare first: NaN -> none */
    int dir = action == BREAKOUT_LEFT || action == BREAKOUT_LEFT_FIRE || action == BREAKOUT_FAST_LEFT ? -1
            : action == BREAKOUT_RIGHT || action == BREAKOUT_RIGHT_FIRE || action == BREAKOUT_FAST_RIGHT ? 1 : 0;
    int speed = action >= BREAKOUT_FAST_LEFT ? 2 * BREAKOUT_PADDLE_SPEED : BREAKOUT_PADDLE_SPEED;
    int fire = action == BREAKOUT_FIRE || action == BREAKOUT_LEFT_FIRE || action == BREAKOUT_RIGHT_FIRE;
    env->paddle_x += dir * speed;
    if (env->paddle_x < BREAKOUT_WALL) env->paddle_x = BREAKOUT_WALL;
    if (env->paddle_x > BREAKOUT_SIZE - BREAKOUT_WALL - BREAKOUT_PADDLE_W)
        env->paddle_x = BREAKOUT_SIZE - BREAKOUT_WALL - BREAKOUT_PADDLE_W;

    float reward = 0.0f;
    int lost = 0;
    if (env->held) {
        breakout_hold_ball(env);  /* rides along */
        env->held_steps++;
        if (fire || env->held_steps >= env->auto_launch) breakout_launch(env);
    } else {
        int broken = breakout_move_ball(env, &lost);
        reward += (float)broken / (float)BREAKOUT_BRICKS;
    }
    if (lost) {
        reward -= env->miss_penalty;
        env->lives--;
        if (env->lives > 0) breakout_hold_ball(env);
    }
    env->steps++;
    env->episode_return += reward;
    agent->rewards[0] = reward;
    if (env->bricks_left == 0 || env->lives <= 0 || env->steps >= env->max_steps) {
        int broken = BREAKOUT_BRICKS - env->bricks_left;
        env->log.perf += (float)broken / (float)BREAKOUT_BRICKS;
        env->log.score += (float)broken;
        env->log.episode_return += env->episode_return;
        env->log.episode_length += (float)env->steps;
        env->log.lives_lost += (float)(env->lives_start - env->lives);
        env->log.cleared += env->bricks_left == 0 ? 1.0f : 0.0f;
        env->log.n += 1.0f;
        agent->terminals[0] = 1.0f;
        puf_reset(env);
        return;
    }
    breakout_write_obs(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "lives_lost", log->lives_lost);
    dict_set(out, "cleared", log->cleared);
}

/* The agent's picture, 4 screen pixels per picture pixel. */
#define BREAKOUT_SCALE 4
void puf_render(Env* env) {
    if (!IsWindowReady()) {
        InitWindow(BREAKOUT_SIZE * BREAKOUT_SCALE, BREAKOUT_SIZE * BREAKOUT_SCALE, "breakout");
        SetTargetFPS(30);
    }
    BeginDrawing();
    ClearBackground(BLACK);
    const obs_t* pic = env->agents[0].observations;
    for (int y = 0; y < BREAKOUT_SIZE; y++) {
        for (int x = 0; x < BREAKOUT_SIZE; x++) {
            const obs_t* p = pic + ((size_t)y * BREAKOUT_SIZE + x) * 3;
            if (p[0] | p[1] | p[2])
                DrawRectangle(x * BREAKOUT_SCALE, y * BREAKOUT_SCALE, BREAKOUT_SCALE, BREAKOUT_SCALE,
                              (Color){p[0], p[1], p[2], 255});
        }
    }
    EndDrawing();
    puf_web_vsync();
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* ---- A rule-based policy on the picture: keep the paddle under the ball, fire when held ---- */
static int breakout_find_x(const obs_t* pic, int y0, int y1, const unsigned char* color, int* center) {
    int lo = BREAKOUT_SIZE, hi = -1;
    for (int y = y0; y < y1; y++) {
        for (int x = 0; x < BREAKOUT_SIZE; x++) {
            const obs_t* p = pic + ((size_t)y * BREAKOUT_SIZE + x) * 3;
            if (p[0] == color[0] && p[1] == color[1] && p[2] == color[2]) {
                if (x < lo) lo = x;
                if (x > hi) hi = x;
            }
        }
    }
    if (hi < 0) return 0;
    *center = lo + hi;  /* twice the center: stays whole */
    return 1;
}

static void breakout_scripted(const obs_t* obs, float* actions) {
    int ball2 = 0, paddle2 = 0;
    int ball = breakout_find_x(obs, BREAKOUT_WALL, BREAKOUT_PADDLE_Y, breakout_ball_color, &ball2);
    int paddle = breakout_find_x(obs, BREAKOUT_PADDLE_Y, BREAKOUT_PADDLE_Y + 1, breakout_paddle_color, &paddle2);
    int d = ball && paddle ? ball2 - paddle2 : 0;  /* twice the offset */
    actions[0] = (float)(d < -8 ? BREAKOUT_FAST_LEFT : d < -2 ? BREAKOUT_LEFT_FIRE
                       : d > 8 ? BREAKOUT_FAST_RIGHT : d > 2 ? BREAKOUT_RIGHT_FIRE : BREAKOUT_FIRE);
}
#define PUF_SCRIPTED_POLICY breakout_scripted

#endif /* BREAKOUT_BREAKOUT_H */
