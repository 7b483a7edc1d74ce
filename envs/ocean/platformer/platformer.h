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
 *
 * Optional [env] keys (absent: the values in brackets, which are the level above):
 *   level [0]            0: the 100x18 level above. 1: a 104x26 level whose route has a Z-shaped
 *                        detour (run right, drop down a hole, run back left a tier below, drop
 *                        again, run right along the bottom past pits and spikes to the flag).
 *   progress_reward [1]  0: no reward for progress, only the flag's +1 (and -fail_penalty).
 *   go_explore ...       Go-Explore starts (envs/c/goexplore.h). The cell is (tile of the player's
 *                        center, vx sign, on ground / rising / falling); progress is the breadth-
 *                        first distance to the flag through non-solid tiles, 1 - d / d(spawn),
 *                        which follows the detour. Starts restore a savestate: the game data
 *                        x .. best_progress below holds no pointers, so a memcpy of those 44
 *                        bytes is a complete, exact restore (cheaper than replaying a route of
 *                        hundreds of steps); go_explore_replay = 1 replays routes instead.
 * Level 1 reports score as the best progress along the route (x is not progress on a detour).
 * With go_explore configured, the log adds start_perf (flag rate of episodes that began at the
 * real start) and real_starts (their share).
 *
 * Variants that show the same game differently (envs/ocean/pixel_platformer: a picture) include this
 * header with PLATFORMER_CUSTOM_OBS defined. They typedef obs_t and define OBS_SIZE first, may add
 * fields to Env with PLATFORMER_ENV_EXTRA, and after the include define
 * platformer_write_obs(env) and platformer_custom_init(env, kwargs) (called at the end of
 * puf_init). Level, physics, reward, log and rendering stay this file's; the vector observation
 * and its scripted policy are left out.
 */
#ifndef PLATFORMER_PLATFORMER_H
#define PLATFORMER_PLATFORMER_H

#include <math.h>
#include <stddef.h>

#include "raylib.h"
#ifndef PLATFORMER_CUSTOM_OBS
typedef float obs_t;
#endif
#include "pufferenv.h"
#include "../../c/goexplore.h"  /* puffgpu's Go-Explore helper (envs/c/), by path: PufferLib's include path lacks it */

#define PLATFORMER_COLS 100
#define PLATFORMER_ROWS 18
#define PLATFORMER_VIEW_W 15
#define PLATFORMER_VIEW_H 9
#define PLATFORMER_CHANNELS 3
#define PLATFORMER_WINDOW (PLATFORMER_CHANNELS * PLATFORMER_VIEW_W * PLATFORMER_VIEW_H)

#ifndef PLATFORMER_CUSTOM_OBS
#define OBS_SIZE (PLATFORMER_WINDOW + 8)
#endif
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

/* Level 1: sparse reward + Go-Explore's test level. Rows 0 and below the tiers are solid, so the
 * only way from the top tier (spawn) to the flag is the Z: right to the hole at columns 40-41,
 * left along the middle tier to the hole at 13-14, right along the bottom to column 100. */
#define PLATFORMER_SPARSE_COLS 104
#define PLATFORMER_SPARSE_ROWS 26
static const char platformer_level_sparse[PLATFORMER_SPARSE_ROWS][PLATFORMER_SPARSE_COLS + 1] = {
    "########################################################################################################",
    "#...........................................############################################################",
    "#...........................................############################################################",
    "#...........................................############################################################",
    "#...........................=====...........############################################################",
    "#...........................................############################################################",
    "#...............###.........................############################################################",
    "#.P.............###................^^.......############################################################",
    "#########...###########....#############..##############################################################",
    "#########^^^###########^^^^#############..##############################################################",
    "########################################..##############################################################",
    "############................................####....................................................G..#",
    "############................................####....................................................G..#",
    "############................................####....................................................G..#",
    "############..............##................####....................................................G..#",
    "############..............##................####....................................................G..#",
    "#############..####...############...###########....................................................G..#",
    "#############..####^^^############^^^###########....................................................G..#",
    "#############..#################################....................................................G..#",
    "############...........................................................###..........................G..#",
    "############...........................................................###..........................G..#",
    "############.......................##....................====.......######...=========..............G..#",
    "############.......................##...............................######....^^^^^^^...............G..#",
    "########################...############################........##########################...############",
    "########################...############################........##########################...############",
    "########################...############################........##########################...############",
};

struct Log {
    float perf;            /* 1 if the flag was reached */
    float score;           /* progress toward the flag, 0..1 */
    float episode_return;
    float episode_length;  /* agent steps */
    float deaths;
    float timeouts;
    float start_perf;      /* 1 if the flag was reached by an episode that began at the real start */
    float start_n;         /* 1 if the episode began at the real start (not from the archive) */
    float ge;              /* 1 if the config names go_explore: puf_log then reports the two above */
    float n;
};

/* One level: its tiles and the tables built from them once. */
typedef struct PlatformerMap {
    const char* tiles;     /* rows lines of `stride` chars */
    int stride, cols, rows;
    float* obs;            /* [(rows + 2 pad) * tw * channels], see platformer_build_tables */
    float* dist;           /* [rows * cols] tiles to the flag through non-solid tiles, -1 unreachable */
    int tw;
    float goal_x, spawn_x, spawn_y, spawn_dist;
    int route_score;       /* score = progress along the route (level 1), else along x */
} PlatformerMap;

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
    int progress_reward;
    const PlatformerMap* map;
    /* game state, x .. best_progress: plain data, Go-Explore's savestate.
     * player: (x, y) is the top-left corner of its 0.8 x 0.9 box */
    float x, y, vx, vy;
    int on_ground;
    int coyote;
    int drop_row;          /* one-way row being dropped through until landing, -1 if none */
    int tick;
    float start_x, best_x; /* progress is measured from start_x to the map's goal_x */
    float best_progress;   /* best progress along the route (the map's dist) */
    /* per episode, not saved: an episode started from the archive counts its own */
    float episode_return;
    int episode_length;
    GoExplore ge;
#ifdef PLATFORMER_ENV_EXTRA
    PLATFORMER_ENV_EXTRA
#endif
};
#define PUF_GOEXPLORE(env) (&(env)->ge)
#define PLATFORMER_STATE_BYTES (offsetof(Env, best_progress) + sizeof(float) - offsetof(Env, x))
_Static_assert(PLATFORMER_STATE_BYTES == 11 * 4, "the savestate x .. best_progress must stay "
               "contiguous plain data: add new game state inside it and update this count");

/* ---- Level tables, built once (puf_init runs serially on the host's thread) ---- */

#define PLATFORMER_PAD_X ((PLATFORMER_VIEW_W - 1) / 2)
#define PLATFORMER_PAD_Y ((PLATFORMER_VIEW_H - 1) / 2)
#define PLATFORMER_TABLE_FLOATS(cols, rows) \
    (((rows) + 2 * PLATFORMER_PAD_Y) * ((cols) + 2 * PLATFORMER_PAD_X) * PLATFORMER_CHANNELS)
static float platformer_obs_table0[PLATFORMER_TABLE_FLOATS(PLATFORMER_COLS, PLATFORMER_ROWS)];
static float platformer_obs_table1[PLATFORMER_TABLE_FLOATS(PLATFORMER_SPARSE_COLS, PLATFORMER_SPARSE_ROWS)];
static float platformer_dist0[PLATFORMER_ROWS * PLATFORMER_COLS];
static float platformer_dist1[PLATFORMER_SPARSE_ROWS * PLATFORMER_SPARSE_COLS];
#define PLATFORMER_NUM_LEVELS 2
static PlatformerMap platformer_maps[PLATFORMER_NUM_LEVELS] = {
    {&platformer_level[0][0], PLATFORMER_COLS + 1, PLATFORMER_COLS, PLATFORMER_ROWS,
     platformer_obs_table0, platformer_dist0, 0, 0.0f, 0.0f, 0.0f, 0.0f, 0},
    {&platformer_level_sparse[0][0], PLATFORMER_SPARSE_COLS + 1, PLATFORMER_SPARSE_COLS,
     PLATFORMER_SPARSE_ROWS, platformer_obs_table1, platformer_dist1, 0, 0.0f, 0.0f, 0.0f, 0.0f, 1},
};
static int platformer_tables_ready;

static inline char platformer_map_tile(const PlatformerMap* m, int tx, int ty) {
    if (tx < 0 || tx >= m->cols) return '#';
    if (ty < 0 || ty >= m->rows) return '.';
    return m->tiles[ty * m->stride + tx];
}

/* Breadth-first distance (4-neighbours, through tiles that are neither solid nor spikes) from
 * the flag column to every tile: the progress measure, which follows detours that x does not. */
static void platformer_build_dist(PlatformerMap* m, int flag_col) {
    int n = m->rows * m->cols, head = 0, tail = 0;
    int* queue = (int*)malloc(sizeof(int) * (size_t)n);
    if (queue == NULL) abort();
    for (int i = 0; i < n; i++) m->dist[i] = -1.0f;
    for (int ty = 0; ty < m->rows; ty++) {
        if (platformer_map_tile(m, flag_col, ty) == 'G') {
            m->dist[ty * m->cols + flag_col] = 0.0f;
            queue[tail++] = ty * m->cols + flag_col;
        }
    }
    while (head < tail) {
        int i = queue[head++], tx = i % m->cols, ty = i / m->cols;
        const int step[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
        for (int k = 0; k < 4; k++) {
            int nx = tx + step[k][0], ny = ty + step[k][1];
            if (nx < 0 || nx >= m->cols || ny < 0 || ny >= m->rows) continue;
            char c = platformer_map_tile(m, nx, ny);
            if (c == '#' || c == '^' || m->dist[ny * m->cols + nx] >= 0.0f) continue;
            m->dist[ny * m->cols + nx] = m->dist[i] + 1.0f;
            queue[tail++] = ny * m->cols + nx;
        }
    }
    free(queue);
}

/* Progress of a tile in [0, 1]: 1 - distance / the spawn's distance (0 if unreachable). */
static inline float platformer_progress_at(const PlatformerMap* m, int tx, int ty) {
    if (tx < 0) tx = 0;
    if (tx > m->cols - 1) tx = m->cols - 1;
    if (ty < 0) ty = 0;
    if (ty > m->rows - 1) ty = m->rows - 1;
    float d = m->dist[ty * m->cols + tx];
    if (d < 0.0f) return 0.0f;
    float p = 1.0f - d / m->spawn_dist;
    return p < 0.0f ? 0.0f : p;
}

/* Padded so that any 15x9 window around an in-map tile is one contiguous run per row:
 * outside columns are solid walls, rows above the map are empty, rows below it are hazard. */
static void platformer_build_map(PlatformerMap* m) {
    int flag_col = m->cols;
    m->tw = m->cols + 2 * PLATFORMER_PAD_X;
    for (int ty = -PLATFORMER_PAD_Y; ty < m->rows + PLATFORMER_PAD_Y; ty++) {
        for (int tx = -PLATFORMER_PAD_X; tx < m->cols + PLATFORMER_PAD_X; tx++) {
            char c = platformer_map_tile(m, tx, ty);
            float* t = m->obs + ((size_t)(ty + PLATFORMER_PAD_Y) * m->tw + (tx + PLATFORMER_PAD_X)) *
                                    PLATFORMER_CHANNELS;
            t[0] = (c == '#') ? 1.0f : 0.0f;
            t[1] = (c == '=') ? 1.0f : 0.0f;
            t[2] = (c == '^' || ty >= m->rows) ? 1.0f : 0.0f;
            if (c == 'G' && tx < flag_col) flag_col = tx;
            if (c == 'P') {
                m->spawn_x = (float)tx;
                m->spawn_y = (float)(ty + 1) - PLATFORMER_PH;
            }
        }
    }
    m->goal_x = (float)flag_col - PLATFORMER_PW;  /* the player's right edge touches the flag */
    platformer_build_dist(m, flag_col);
    int sx = (int)floorf(m->spawn_x + 0.5f * PLATFORMER_PW), sy = (int)floorf(m->spawn_y + 0.5f * PLATFORMER_PH);
    m->spawn_dist = m->dist[sy * m->cols + sx];
    if (m->spawn_dist < 1.0f) m->spawn_dist = 1.0f;
}

static void platformer_build_tables(void) {
    if (platformer_tables_ready) return;
    for (int i = 0; i < PLATFORMER_NUM_LEVELS; i++) platformer_build_map(&platformer_maps[i]);
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

static inline int platformer_solid(const PlatformerMap* m, int tx, int ty) {
    return platformer_map_tile(m, tx, ty) == '#';
}

/* ---- Observation ---- */

#ifdef PLATFORMER_CUSTOM_OBS
static void platformer_write_obs(Env* env);
static void platformer_custom_init(Env* env, Dict* kwargs);
#else
static void platformer_write_obs(Env* env) {
    const PlatformerMap* m = env->map;
    float* obs = env->agents[0].observations;
    float cx = env->x + 0.5f * PLATFORMER_PW, cy = env->y + 0.5f * PLATFORMER_PH;
    int tx = (int)floorf(cx), ty = (int)floorf(cy);
    /* Only terminal frames (never observed: the env resets first) leave the map; clamp anyway so
     * the window never reads outside the padded table. */
    if (tx < 0) tx = 0;
    if (tx > m->cols - 1) tx = m->cols - 1;
    if (ty < 0) ty = 0;
    if (ty > m->rows - 1) ty = m->rows - 1;
    for (int r = 0; r < PLATFORMER_VIEW_H; r++) {
        memcpy(obs + r * PLATFORMER_VIEW_W * PLATFORMER_CHANNELS,
               m->obs + ((size_t)(ty + r) * m->tw + tx) * PLATFORMER_CHANNELS,
               sizeof(float) * PLATFORMER_VIEW_W * PLATFORMER_CHANNELS);
    }
    float* s = obs + PLATFORMER_WINDOW;
    s[0] = cx / (float)m->cols;
    s[1] = cy / (float)m->rows;
    s[2] = cx - floorf(cx);
    s[3] = cy - floorf(cy);
    s[4] = env->vx / PLATFORMER_RUN_SPEED;
    s[5] = env->vy / PLATFORMER_MAX_FALL;
    s[6] = (float)env->on_ground;
    s[7] = (float)env->tick / (float)env->max_ticks;
}
#endif

/* ---- Physics ---- */

enum { PLATFORMER_ALIVE, PLATFORMER_DEAD, PLATFORMER_FLAG };

/* Lower 60% of a spike tile, narrowed by 0.1 on each side, kills. */
static int platformer_touches_spike(const Env* env) {
    const PlatformerMap* m = env->map;
    int x0 = (int)floorf(env->x), x1 = (int)floorf(env->x + PLATFORMER_PW);
    int y0 = (int)floorf(env->y), y1 = (int)floorf(env->y + PLATFORMER_PH);
    for (int ty = y0; ty <= y1; ty++) {
        for (int tx = x0; tx <= x1; tx++) {
            if (platformer_map_tile(m, tx, ty) != '^') continue;
            if (env->x + PLATFORMER_PW > tx + 0.1f && env->x < tx + 0.9f &&
                env->y + PLATFORMER_PH > ty + 0.4f && env->y < ty + 1.0f) return 1;
        }
    }
    return 0;
}

static int platformer_tick(Env* env, int move, int vert) {
    const PlatformerMap* m = env->map;
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
            char c = platformer_map_tile(m, tx, row);
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
                if (platformer_solid(m, tx, ty)) {
                    env->x = (float)tx - PLATFORMER_PW;
                    env->vx = 0.0f;
                    break;
                }
            }
        } else if (env->vx < 0.0f) {
            int tx = (int)floorf(env->x + eps);
            for (int ty = y0; ty <= y1; ty++) {
                if (platformer_solid(m, tx, ty)) {
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
                char c = platformer_map_tile(m, tx, ty);
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
                if (platformer_solid(m, tx, ty)) {
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

    if (env->x >= m->goal_x) return PLATFORMER_FLAG;
    if (env->y > (float)m->rows || platformer_touches_spike(env)) return PLATFORMER_DEAD;
    return PLATFORMER_ALIVE;
}

/* One agent step: up to frameskip ticks (stopping at the flag or a death), then the progress
 * bookkeeping. Everything a step does to the game state happens here, so a route replayed
 * through it (Go-Explore) reaches exactly the state the step reached. */
static int platformer_advance(Env* env, int move, int vert) {
    const PlatformerMap* m = env->map;
    int outcome = PLATFORMER_ALIVE;
    for (int k = 0; k < env->frameskip && outcome == PLATFORMER_ALIVE; k++) {
        outcome = platformer_tick(env, move, vert);
        env->tick++;
    }
    float progress_x = outcome == PLATFORMER_FLAG ? m->goal_x : fminf(env->x, m->goal_x);
    if (progress_x > env->best_x) env->best_x = progress_x;
    float p = outcome == PLATFORMER_FLAG ? 1.0f
            : platformer_progress_at(m, (int)floorf(env->x + 0.5f * PLATFORMER_PW),
                                     (int)floorf(env->y + 0.5f * PLATFORMER_PH));
    if (p > env->best_progress) env->best_progress = p;
    return outcome;
}

/* ---- Go-Explore: the cell, the replay step ---- */

/* Tile of the player's center, vx sign, and on ground / rising / falling. */
static GeKey platformer_cell(Env* env, float* progress) {
    int tx = (int)floorf(env->x + 0.5f * PLATFORMER_PW), ty = (int)floorf(env->y + 0.5f * PLATFORMER_PH);
    int run = env->vx > 1.0f ? 2 : env->vx < -1.0f ? 0 : 1;
    int air = env->on_ground ? 0 : env->vy < 0.0f ? 1 : 2;
    *progress = platformer_progress_at(env->map, tx, ty);
    return (GeKey)(uint32_t)(tx + 16) | (GeKey)(uint32_t)(ty + 16) << 16 | (GeKey)(run * 3 + air) << 32;
}

static void platformer_replay(Env* env, const unsigned char* actions) {
    platformer_advance(env, actions[0], actions[1]);
}

static float platformer_score(const Env* env) {
    if (env->map->route_score) return env->best_progress;
    return (env->best_x - env->start_x) / (env->map->goal_x - env->start_x);
}

/* ---- Contract ---- */

/* An optional [env] key (absent: the fallback). */
static double platformer_opt(Dict* kwargs, const char* key, double fallback) {
    DictItem* item = dict_find(kwargs, key);
    return item != NULL ? item->value : fallback;
}

void puf_init(Env* env, Dict* kwargs) {
    platformer_build_tables();
    env->num_agents = 1;
    env->frameskip = (int)dict_get(kwargs, "frameskip");
    env->max_ticks = (int)dict_get(kwargs, "max_ticks");
    env->fail_penalty = (float)dict_get(kwargs, "fail_penalty");
    int level = (int)platformer_opt(kwargs, "level", 0);
    env->progress_reward = platformer_opt(kwargs, "progress_reward", 1) != 0.0;
    if (env->frameskip < 1) env->frameskip = 1;
    if (env->max_ticks < 1) env->max_ticks = 1;
    if (level < 0 || level >= PLATFORMER_NUM_LEVELS) level = 0;
    env->map = &platformer_maps[level];
    /* Routes replay identically only under the same level, physics, frameskip and time limit. */
    uint64_t fingerprint = ge_mix64(0x706C6174666F726Dull ^ (uint64_t)level ^
                                    (uint64_t)env->frameskip << 8 ^ (uint64_t)env->max_ticks << 24);
    GeSpec spec = {&env->x, (int)PLATFORMER_STATE_BYTES, 2,
                   (env->max_ticks + env->frameskip - 1) / env->frameskip, platformer_cell,
                   platformer_replay, fingerprint};
    ge_init(&env->ge, env, kwargs, spec, env->rng);
#ifdef PLATFORMER_CUSTOM_OBS
    platformer_custom_init(env, kwargs);
#endif
}

/* The real start. Spawn jitter of up to one tile gives the policies varied starts. */
static void platformer_spawn(Env* env) {
    const PlatformerMap* m = env->map;
    env->x = m->spawn_x + (float)(platformer_rand(&env->rng) % 1024) / 1024.0f;
    env->y = m->spawn_y;
    env->vx = 0.0f;
    env->vy = 0.0f;
    env->on_ground = 1;
    env->coyote = PLATFORMER_COYOTE_TICKS;
    env->drop_row = -1;
    env->tick = 0;
    env->start_x = env->x;
    env->best_x = env->x;
    env->best_progress = platformer_progress_at(m, (int)floorf(env->x + 0.5f * PLATFORMER_PW),
                                                (int)floorf(env->y + 0.5f * PLATFORMER_PH));
}

void puf_reset(Env* env) {
    int start = ge_start(&env->ge, &env->rng);  /* the real start unless go_explore says otherwise */
    if (start != GE_START_RESTORED) {
        platformer_spawn(env);
        if (start == GE_START_REPLAY) ge_replay(&env->ge);
    }
    env->episode_return = 0.0f;
    env->episode_length = 0;
    ge_visit(&env->ge);
    platformer_write_obs(env);
}

void puf_step(Env* env) {
    Agent* agent = &env->agents[0];
    agent->rewards[0] = 0.0f;  /* PufferLib's CPU evaluator does not clear them for the env */
    agent->terminals[0] = 0.0f;
    int move = platformer_action(agent->actions[0], 3);
    int vert = platformer_action(agent->actions[1], 3);
    const unsigned char executed[2] = {(unsigned char)move, (unsigned char)vert};
    ge_act(&env->ge, executed);
    float best_x = env->best_x;
    int outcome = platformer_advance(env, move, vert);
    float span = env->map->goal_x - env->start_x;
    float reward = 0.0f;
    if (env->progress_reward && env->best_x > best_x) reward = (env->best_x - best_x) / span;
    int timeout = outcome == PLATFORMER_ALIVE && env->tick >= env->max_ticks;
    if (outcome == PLATFORMER_FLAG) {
        reward += 1.0f;
        ge_goal(&env->ge);
    } else if (outcome == PLATFORMER_DEAD || timeout) {
        reward -= env->fail_penalty;
    } else {
        reward += ge_visit(&env->ge);  /* the ghost reward, if on */
    }
    env->episode_return += reward;
    env->episode_length++;
    agent->rewards[0] = reward;

    if (outcome != PLATFORMER_ALIVE || timeout) {
        int real = ge_real_start(&env->ge);
        env->log.perf += outcome == PLATFORMER_FLAG ? 1.0f : 0.0f;
        env->log.score += platformer_score(env);
        env->log.episode_return += env->episode_return;
        env->log.episode_length += (float)env->episode_length;
        env->log.deaths += outcome == PLATFORMER_DEAD ? 1.0f : 0.0f;
        env->log.timeouts += timeout ? 1.0f : 0.0f;
        env->log.start_perf += real && outcome == PLATFORMER_FLAG ? 1.0f : 0.0f;
        env->log.start_n += real ? 1.0f : 0.0f;
        env->log.ge += env->ge.configured ? 1.0f : 0.0f;
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
    if (log->ge > 0.0f) {  /* every field was divided by n: ratios of two fields are exact */
        if (log->start_n > 0.0f) dict_set(out, "start_perf", log->start_perf / log->start_n);
        dict_set(out, "real_starts", log->start_n / log->ge);
    }
}

void puf_close(Env* env) {
    ge_close(&env->ge);
    if (IsWindowReady()) CloseWindow();
}

/* ---- Rendering with raylib: a 32x18-tile camera that follows the player, 8 px per tile ---- */
#define PLATFORMER_TILE_PX 8
#define PLATFORMER_CAM_W 32

static void platformer_rect(int x, int y, int w, int h, unsigned char r, unsigned char g, unsigned char b) {
    DrawRectangle(x, y, w, h, (Color){r, g, b, 255});
}

void puf_render(Env* env) {
    const PlatformerMap* m = env->map;
    const int T = PLATFORMER_TILE_PX;
    if (!IsWindowReady()) {
        InitWindow(PLATFORMER_CAM_W * T, m->rows * T, "platformer");
        SetTargetFPS(60 / (env->frameskip > 0 ? env->frameskip : 1));
    }
    BeginDrawing();
    ClearBackground((Color){92, 148, 252, 255});  /* sky */
    float cam = env->x + 0.5f * PLATFORMER_PW - 0.4f * PLATFORMER_CAM_W;
    if (cam < 0.0f) cam = 0.0f;
    if (cam > (float)(m->cols - PLATFORMER_CAM_W)) cam = (float)(m->cols - PLATFORMER_CAM_W);
    int cam_px = (int)floorf(cam * T);
    for (int ty = 0; ty < m->rows; ty++) {
        for (int tx = (int)cam; tx <= (int)cam + PLATFORMER_CAM_W && tx < m->cols; tx++) {
            int px = tx * T - cam_px, py = ty * T;
            switch (platformer_map_tile(m, tx, ty)) {
            case '#':
                if (ty > 0 && platformer_map_tile(m, tx, ty - 1) != '#') {  /* grass on top */
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
                if (platformer_map_tile(m, tx, ty - 1) != 'G')  /* the flag on top of the pole */
                    platformer_rect(px + 5, py + 1, T - 2, 5, 240, 40, 40);
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
    float progress = platformer_score(env);
    platformer_rect(0, 0, (int)(progress * PLATFORMER_CAM_W * T), 2, 255, 220, 0);
    EndDrawing();
    puf_web_vsync();
}

#ifndef PLATFORMER_CUSTOM_OBS
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
#endif

#endif /* PLATFORMER_PLATFORMER_H */
