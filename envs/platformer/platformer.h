/* platformer — run right through one fixed side-scrolling level and touch the flag.
 *
 * Level: 100x18 tiles (row 0 at the top, y grows downward): '#' solid, '=' one-way platform
 * (land on it from above, jump up through it, drop through it), '^' spikes, 'G' flag column,
 * 'P' spawn. Falling below the map or touching a spike's lower part kills.
 * Physics at 60 Hz in tile units; `frameskip` ticks per agent step.
 * Actions: head 0 move {none, left, right}, head 1 vertical {none, jump, drop through}.
 * Observation (413 floats): a 15x9 tile window centered on the player's tile, rows dy = -4..4,
 * columns dx = -7..7, 3 channels per tile [solid, one-way, hazard (spike or below the map)];
 * then cx/100, cy/18, frac x, frac y (player center within its tile), vx/9, vy/20, on_ground,
 * tick/max_ticks.
 * Reward: the increase of the furthest x reached, scaled so spawn -> flag sums to 1; +1 at the
 * flag; -fail_penalty on death or timeout. Terminal on flag, death or timeout; auto-reset.
 */
#ifndef PLATFORMER_PLATFORMER_H
#define PLATFORMER_PLATFORMER_H

#include <math.h>

#include "raylib.h"
typedef float obs_t;
#include "pufferenv.h"

#define PLATFORMER_COLS 100
#define PLATFORMER_ROWS 18
#define PLATFORMER_VIEW_W 15
#define PLATFORMER_VIEW_H 9
#define PLATFORMER_CHANNELS 3
#define PLATFORMER_WINDOW (PLATFORMER_CHANNELS * PLATFORMER_VIEW_W * PLATFORMER_VIEW_H)

#define OBS_SIZE (PLATFORMER_WINDOW + 8)
#define NUM_ATNS 2
#define ACT_SIZES {3, 3}

enum { PLATFORMER_MOVE_NONE, PLATFORMER_MOVE_LEFT, PLATFORMER_MOVE_RIGHT };
enum { PLATFORMER_VERT_NONE, PLATFORMER_VERT_JUMP, PLATFORMER_VERT_DROP };

/* Physics constants, tile units and seconds. Jump apex 16^2/(2*50) = 2.56 tiles; a running jump
 * covers 2*16/50*9 = 5.76 tiles at equal height. */
#define PLATFORMER_DT (1.0f / 60.0f)
#define PLATFORMER_GRAVITY 50.0f
#define PLATFORMER_JUMP_SPEED 16.0f
#define PLATFORMER_MAX_FALL 20.0f
#define PLATFORMER_RUN_SPEED 9.0f
#define PLATFORMER_GROUND_ACCEL 80.0f
#define PLATFORMER_AIR_ACCEL 40.0f
#define PLATFORMER_COYOTE_TICKS 6
#define PLATFORMER_PW 0.8f
#define PLATFORMER_PH 0.9f

static const char platformer_level[PLATFORMER_ROWS][PLATFORMER_COLS + 1] = {
    "#..................................................................................................#",
    "#..................................................................................................#",
    "#..................................................................................................#",
    "#..................................................................................................#",
    "#..................................................................................................#",
    "#..................................................................................................#",
    "#..............................................................................................G...#",
    "#..............................................................................................G...#",
    "#..............................................................................................G...#",
    "#..............................................................................................G...#",
    "#..............................................................................................G...#",
    "#..............................................................................................G...#",
    "#....................................................................######....................G...#",
    "#..................####.................===........=========.......########...............===..G...#",
    "#.P................####......^^^....................^^^^^^^......##########....................G...#",
    "############..########################.......##############################...########...###########",
    "############..########################.......##############################...########^^^###########",
    "############..########################.......##############################...######################",
};

struct Log {
    float perf;            /* 1 if the flag was reached */
    float score;           /* progress toward the flag, 0..1 */
    float episode_return;
    float episode_length;  /* agent steps */
    float deaths;
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
    /* config */
    int frameskip;
    int max_ticks;
    float fail_penalty;
    /* player: (x, y) is the top-left corner of its 0.8 x 0.9 box */
    float x, y, vx, vy;
    int on_ground;
    int coyote;
    int drop_row;          /* one-way row being dropped through until landing, -1 if none */
    int tick;
    float start_x, best_x; /* progress is measured from start_x to platformer_goal_x */
    float episode_return;
    int episode_length;
};

/* ---- Level tables, built once (puf_init runs serially on the host's thread) ---- */

/* Padded so that any 15x9 window around an in-map tile is one contiguous run per row:
 * outside columns are solid walls, rows above the map are empty, rows below it are hazard. */
#define PLATFORMER_PAD_X ((PLATFORMER_VIEW_W - 1) / 2)
#define PLATFORMER_PAD_Y ((PLATFORMER_VIEW_H - 1) / 2)
#define PLATFORMER_TW (PLATFORMER_COLS + 2 * PLATFORMER_PAD_X)
#define PLATFORMER_TH (PLATFORMER_ROWS + 2 * PLATFORMER_PAD_Y)
static float platformer_obs_table[PLATFORMER_TH][PLATFORMER_TW][PLATFORMER_CHANNELS];
static float platformer_goal_x;  /* x at which the player's right edge touches the flag column */
static float platformer_spawn_x, platformer_spawn_y;
static int platformer_tables_ready;

static char platformer_tile(int tx, int ty) {
    if (tx < 0 || tx >= PLATFORMER_COLS) return '#';
    if (ty < 0 || ty >= PLATFORMER_ROWS) return '.';
    return platformer_level[ty][tx];
}

static void platformer_build_tables(void) {
    if (platformer_tables_ready) return;
    int flag_col = PLATFORMER_COLS;
    for (int ty = -PLATFORMER_PAD_Y; ty < PLATFORMER_ROWS + PLATFORMER_PAD_Y; ty++) {
        for (int tx = -PLATFORMER_PAD_X; tx < PLATFORMER_COLS + PLATFORMER_PAD_X; tx++) {
            char c = platformer_tile(tx, ty);
            float* t = platformer_obs_table[ty + PLATFORMER_PAD_Y][tx + PLATFORMER_PAD_X];
            t[0] = (c == '#') ? 1.0f : 0.0f;
            t[1] = (c == '=') ? 1.0f : 0.0f;
            t[2] = (c == '^' || ty >= PLATFORMER_ROWS) ? 1.0f : 0.0f;
            if (c == 'G' && tx < flag_col) flag_col = tx;
            if (c == 'P') {
                platformer_spawn_x = (float)tx;
                platformer_spawn_y = (float)(ty + 1) - PLATFORMER_PH;
            }
        }
    }
    platformer_goal_x = (float)flag_col - PLATFORMER_PW;
    platformer_tables_ready = 1;
}

/* ---- Helpers ---- */

static inline unsigned int platformer_rand(unsigned int* rng) {
    *rng = *rng * 1664525u + 1013904223u;  /* LCG: any state, including 0, is fine */
    return *rng >> 8;
}

/* Action float -> index in [0, n); anything else (NaN, out of range) counts as 0. Compares
 * before converting, so no float->int conversion is ever undefined. */
static inline int platformer_action(float a, int n) {
    if (!(a >= 0.0f && a < (float)n)) return 0;
    return (int)a;
}

static inline int platformer_solid(int tx, int ty) { return platformer_tile(tx, ty) == '#'; }

/* ---- Observation ---- */

static void platformer_write_obs(Env* env) {
    float* obs = env->agents[0].observations;
    float cx = env->x + 0.5f * PLATFORMER_PW, cy = env->y + 0.5f * PLATFORMER_PH;
    int tx = (int)floorf(cx), ty = (int)floorf(cy);
    /* Only terminal frames (never observed: the env resets first) leave the map; clamp anyway so
     * the window never reads outside the padded table. */
    if (tx < 0) tx = 0;
    if (tx > PLATFORMER_COLS - 1) tx = PLATFORMER_COLS - 1;
    if (ty < 0) ty = 0;
    if (ty > PLATFORMER_ROWS - 1) ty = PLATFORMER_ROWS - 1;
    for (int r = 0; r < PLATFORMER_VIEW_H; r++) {
        memcpy(obs + r * PLATFORMER_VIEW_W * PLATFORMER_CHANNELS, platformer_obs_table[ty + r][tx],
               sizeof(float) * PLATFORMER_VIEW_W * PLATFORMER_CHANNELS);
    }
    float* s = obs + PLATFORMER_WINDOW;
    s[0] = cx / (float)PLATFORMER_COLS;
    s[1] = cy / (float)PLATFORMER_ROWS;
    s[2] = cx - floorf(cx);
    s[3] = cy - floorf(cy);
    s[4] = env->vx / PLATFORMER_RUN_SPEED;
    s[5] = env->vy / PLATFORMER_MAX_FALL;
    s[6] = (float)env->on_ground;
    s[7] = (float)env->tick / (float)env->max_ticks;
}

/* ---- Physics ---- */

enum { PLATFORMER_ALIVE, PLATFORMER_DEAD, PLATFORMER_FLAG };

/* Lower 60% of a spike tile, narrowed by 0.1 on each side, kills. */
static int platformer_touches_spike(const Env* env) {
    int x0 = (int)floorf(env->x), x1 = (int)floorf(env->x + PLATFORMER_PW);
    int y0 = (int)floorf(env->y), y1 = (int)floorf(env->y + PLATFORMER_PH);
    for (int ty = y0; ty <= y1; ty++) {
        for (int tx = x0; tx <= x1; tx++) {
            if (platformer_tile(tx, ty) != '^') continue;
            if (env->x + PLATFORMER_PW > tx + 0.1f && env->x < tx + 0.9f &&
                env->y + PLATFORMER_PH > ty + 0.4f && env->y < ty + 1.0f) return 1;
        }
    }
    return 0;
}

static int platformer_tick(Env* env, int move, int vert) {
    const float eps = 1e-4f;
    /* Horizontal: approach the target speed at ground or air acceleration. */
    float target = move == PLATFORMER_MOVE_LEFT ? -PLATFORMER_RUN_SPEED
                 : move == PLATFORMER_MOVE_RIGHT ? PLATFORMER_RUN_SPEED : 0.0f;
    float dv = (env->on_ground ? PLATFORMER_GROUND_ACCEL : PLATFORMER_AIR_ACCEL) * PLATFORMER_DT;
    if (env->vx < target) env->vx = fminf(env->vx + dv, target);
    else env->vx = fmaxf(env->vx - dv, target);

    /* Jump from the ground or within coyote time after leaving it. */
    if (vert == PLATFORMER_VERT_JUMP && env->coyote > 0) {
        env->vy = -PLATFORMER_JUMP_SPEED;
        env->coyote = 0;
        env->on_ground = 0;
    }
    /* Drop through: only while standing on one-way tiles and no solid tile. */
    if (vert == PLATFORMER_VERT_DROP && env->on_ground) {
        int row = (int)floorf(env->y + PLATFORMER_PH + eps);
        int x0 = (int)floorf(env->x), x1 = (int)floorf(env->x + PLATFORMER_PW - eps);
        int oneway = 0, solid = 0;
        for (int tx = x0; tx <= x1; tx++) {
            char c = platformer_tile(tx, row);
            oneway |= c == '=';
            solid |= c == '#';
        }
        if (oneway && !solid) {
            env->drop_row = row;
            env->on_ground = 0;
            env->coyote = 0;
        }
    }
    env->vy = fminf(env->vy + PLATFORMER_GRAVITY * PLATFORMER_DT, PLATFORMER_MAX_FALL);

    /* Move x, then resolve against solid tiles (speeds are < 1 tile per tick). */
    env->x += env->vx * PLATFORMER_DT;
    {
        int y0 = (int)floorf(env->y + eps), y1 = (int)floorf(env->y + PLATFORMER_PH - eps);
        if (env->vx > 0.0f) {
            int tx = (int)floorf(env->x + PLATFORMER_PW - eps);
            for (int ty = y0; ty <= y1; ty++) {
                if (platformer_solid(tx, ty)) {
                    env->x = (float)tx - PLATFORMER_PW;
                    env->vx = 0.0f;
                    break;
                }
            }
        } else if (env->vx < 0.0f) {
            int tx = (int)floorf(env->x + eps);
            for (int ty = y0; ty <= y1; ty++) {
                if (platformer_solid(tx, ty)) {
                    env->x = (float)(tx + 1);
                    env->vx = 0.0f;
                    break;
                }
            }
        }
    }

    /* Move y, then resolve: solid from both sides, one-way only when falling onto its top. */
    float old_bottom = env->y + PLATFORMER_PH;
    env->y += env->vy * PLATFORMER_DT;
    int landed = 0;
    {
        int x0 = (int)floorf(env->x + eps), x1 = (int)floorf(env->x + PLATFORMER_PW - eps);
        if (env->vy > 0.0f) {
            int ty = (int)floorf(env->y + PLATFORMER_PH - eps);
            for (int tx = x0; tx <= x1; tx++) {
                char c = platformer_tile(tx, ty);
                int hit = c == '#' ||
                          (c == '=' && ty != env->drop_row && old_bottom <= (float)ty + eps);
                if (hit) {
                    env->y = (float)ty - PLATFORMER_PH;
                    env->vy = 0.0f;
                    landed = 1;
                    break;
                }
            }
        } else if (env->vy < 0.0f) {
            int ty = (int)floorf(env->y + eps);
            for (int tx = x0; tx <= x1; tx++) {
                if (platformer_solid(tx, ty)) {
                    env->y = (float)(ty + 1);
                    env->vy = 0.0f;
                    break;
                }
            }
        }
    }
    /* Gravity pulls a standing player into the floor every tick, so "landed this tick" is
     * exactly "on the ground". */
    env->on_ground = landed;
    if (landed) {
        env->coyote = PLATFORMER_COYOTE_TICKS;
        env->drop_row = -1;
    } else if (env->coyote > 0) {
        env->coyote--;
    }

    if (env->x >= platformer_goal_x) return PLATFORMER_FLAG;
    if (env->y > (float)PLATFORMER_ROWS || platformer_touches_spike(env)) return PLATFORMER_DEAD;
    return PLATFORMER_ALIVE;
}

/* ---- Contract ---- */

void puf_init(Env* env, Dict* kwargs) {
    platformer_build_tables();
    env->num_agents = 1;
    env->frameskip = (int)dict_get(kwargs, "frameskip");
    env->max_ticks = (int)dict_get(kwargs, "max_ticks");
    env->fail_penalty = (float)dict_get(kwargs, "fail_penalty");
    if (env->frameskip < 1) env->frameskip = 1;
    if (env->max_ticks < 1) env->max_ticks = 1;
}

void puf_reset(Env* env) {
    /* Spawn jitter of up to one tile gives the scripted and learned policies varied starts. */
    env->x = platformer_spawn_x + (float)(platformer_rand(&env->rng) % 1024) / 1024.0f;
    env->y = platformer_spawn_y;
    env->vx = 0.0f;
    env->vy = 0.0f;
    env->on_ground = 1;
    env->coyote = PLATFORMER_COYOTE_TICKS;
    env->drop_row = -1;
    env->tick = 0;
    env->start_x = env->x;
    env->best_x = env->x;
    env->episode_return = 0.0f;
    env->episode_length = 0;
    platformer_write_obs(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;  /* PufferLib's CPU evaluator does not clear them for the env */
    agent->terminals[0] = 0.0f;
    int move = platformer_action(agent->actions[0], 3);
    int vert = platformer_action(agent->actions[1], 3);
    int outcome = PLATFORMER_ALIVE;
    for (int k = 0; k < env->frameskip && outcome == PLATFORMER_ALIVE; k++) {
        outcome = platformer_tick(env, move, vert);
        env->tick++;
    }
    float span = platformer_goal_x - env->start_x;
    float progress_x = outcome == PLATFORMER_FLAG ? platformer_goal_x : fminf(env->x, platformer_goal_x);
    float reward = 0.0f;
    if (progress_x > env->best_x) {
        reward = (progress_x - env->best_x) / span;
        env->best_x = progress_x;
    }
    int timeout = outcome == PLATFORMER_ALIVE && env->tick >= env->max_ticks;
    if (outcome == PLATFORMER_FLAG) reward += 1.0f;
    else if (outcome == PLATFORMER_DEAD || timeout) reward -= env->fail_penalty;
    env->episode_return += reward;
    env->episode_length++;
    agent->rewards[0] = reward;

    if (outcome != PLATFORMER_ALIVE || timeout) {
        env->log.perf += outcome == PLATFORMER_FLAG ? 1.0f : 0.0f;
        env->log.score += (env->best_x - env->start_x) / span;
        env->log.episode_return += env->episode_return;
        env->log.episode_length += (float)env->episode_length;
        env->log.deaths += outcome == PLATFORMER_DEAD ? 1.0f : 0.0f;
        env->log.timeouts += timeout ? 1.0f : 0.0f;
        env->log.n += 1.0f;
        agent->terminals[0] = 1.0f;
        puf_reset(env);
        return;
    }
    platformer_write_obs(env);
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "episode_return", log->episode_return);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "deaths", log->deaths);
    dict_set(out, "timeouts", log->timeouts);
}

void puf_close(Env* env) {
    (void)env;
    if (IsWindowReady()) CloseWindow();
}

/* ---- Rendering with raylib: a 32x18-tile camera that follows the player, 8 px per tile ---- */
#define PLATFORMER_TILE_PX 8
#define PLATFORMER_CAM_W 32

static void platformer_rect(int x, int y, int w, int h, unsigned char r, unsigned char g, unsigned char b) {
    DrawRectangle(x, y, w, h, (Color){r, g, b, 255});
}

void puf_render(Env* env) {
    const int T = PLATFORMER_TILE_PX;
    if (!IsWindowReady()) {
        InitWindow(PLATFORMER_CAM_W * T, PLATFORMER_ROWS * T, "platformer");
        SetTargetFPS(60 / (env->frameskip > 0 ? env->frameskip : 1));
    }
    BeginDrawing();
    ClearBackground((Color){92, 148, 252, 255});  /* sky */
    float cam = env->x + 0.5f * PLATFORMER_PW - 0.4f * PLATFORMER_CAM_W;
    if (cam < 0.0f) cam = 0.0f;
    if (cam > (float)(PLATFORMER_COLS - PLATFORMER_CAM_W)) cam = (float)(PLATFORMER_COLS - PLATFORMER_CAM_W);
    int cam_px = (int)floorf(cam * T);
    for (int ty = 0; ty < PLATFORMER_ROWS; ty++) {
        for (int tx = (int)cam; tx <= (int)cam + PLATFORMER_CAM_W && tx < PLATFORMER_COLS; tx++) {
            int px = tx * T - cam_px, py = ty * T;
            switch (platformer_level[ty][tx]) {
            case '#':
                if (ty > 0 && platformer_level[ty - 1][tx] != '#') {  /* grass on top */
                    platformer_rect(px, py, T, T, 136, 84, 40);
                    platformer_rect(px, py, T, 2, 56, 176, 56);
                } else {
                    platformer_rect(px, py, T, T, 112, 68, 32);
                    platformer_rect(px + 1, py + 1, T - 2, T - 2, 128, 78, 38);
                }
                break;
            case '=':
                platformer_rect(px, py, T, 3, 200, 160, 90);
                platformer_rect(px, py + 3, T, 1, 130, 100, 50);
                break;
            case '^':  /* one triangle in the lower part, like its hitbox */
                for (int i = 0; i < 5; i++) {
                    int w = 2 + 2 * i > T ? T : 2 + 2 * i;
                    platformer_rect(px + (T - w) / 2, py + T - 5 + i, w, 1, 210, 210, 220);
                }
                break;
            case 'G':
                platformer_rect(px + 3, py, 2, T, 230, 230, 230);
                if (ty == 6) platformer_rect(px + 5, py + 1, T - 2, 5, 240, 40, 40);
                break;
            default:
                break;
            }
        }
    }
    /* player: red body, white eye on the side it is moving to */
    int px = (int)floorf(env->x * T) - cam_px, py = (int)floorf(env->y * T);
    int pw = (int)(PLATFORMER_PW * T + 0.5f), ph = (int)(PLATFORMER_PH * T + 0.5f);
    platformer_rect(px, py, pw, ph, 220, 40, 40);
    platformer_rect(env->vx < 0.0f ? px + 1 : px + pw - 3, py + 2, 2, 2, 255, 255, 255);
    /* progress bar along the top edge */
    float progress = (env->best_x - env->start_x) / (platformer_goal_x - env->start_x);
    platformer_rect(0, 0, (int)(progress * PLATFORMER_CAM_W * T), 2, 255, 220, 0);
    EndDrawing();
    puf_web_vsync();
}

/* ---- A rule-based policy on the observation: proves the level is solvable from what the
 * agent sees. Always run right; jump when the next column holds a wall or a spike at body height,
 * or when looking down it the first thing within 4 rows is a hazard or nothing (a pit). ---- */
#define PLATFORMER_OBS_AT(obs, dx, dy, c) \
    (obs)[(((dy) + PLATFORMER_PAD_Y) * PLATFORMER_VIEW_W + (dx) + PLATFORMER_PAD_X) * PLATFORMER_CHANNELS + (c)]

static void platformer_scripted(const obs_t* obs, float* actions) {
    int on_ground = obs[PLATFORMER_WINDOW + 6] > 0.5f;
    int wall = PLATFORMER_OBS_AT(obs, 1, 0, 0) > 0.5f;
    int spike = PLATFORMER_OBS_AT(obs, 1, 0, 2) > 0.5f;
    int pit = 1;
    for (int dy = 1; dy <= PLATFORMER_PAD_Y; dy++) {
        if (PLATFORMER_OBS_AT(obs, 1, dy, 2) > 0.5f) break;  /* hazard first: a pit */
        if (PLATFORMER_OBS_AT(obs, 1, dy, 0) > 0.5f || PLATFORMER_OBS_AT(obs, 1, dy, 1) > 0.5f) {
            pit = 0;  /* floor first: walk (or step down) */
            break;
        }
    }
    actions[0] = (float)PLATFORMER_MOVE_RIGHT;
    actions[1] = (float)(on_ground && (wall || spike || pit) ? PLATFORMER_VERT_JUMP
                                                            : PLATFORMER_VERT_NONE);
}
#define PUF_SCRIPTED_POLICY platformer_scripted

#endif /* PLATFORMER_PLATFORMER_H */
