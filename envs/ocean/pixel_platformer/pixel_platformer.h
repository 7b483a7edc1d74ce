/* pixel_platformer — the platformer (envs/ocean/platformer: the same level, physics, actions, reward and
 * log), but the agent sees only a picture of the screen around the player.
 *
 * Observation: picture_height x picture_width x picture_channels bytes (obs_t unsigned char, rows
 * from the top, channels last), the [env] keys that declare the picture. Channels 3: RGB; 1: one
 * gray level per material (below). The view is 16 tiles wide and as tall as the picture's aspect
 * makes it (16 at a square picture), so a tile is width/16 pixels (4 at 64x64, 3 at 48x48, 2.25 at
 * the smallest picture the trainer's convolutions take, 36x36). The player's left edge sits 4.5
 * tiles from the left edge (10.7 tiles of the level ahead are in sight: more than a running jump's
 * 5.8); vertically the camera centers the player but stays within the map and the two rows below
 * it, so on level 0 it does not move (rows 4..19 in view, the bottom two the deadly void).
 *
 * Drawn by sampling the scene at every pixel's center in fixed point (1/1024 tile), straight into
 * the observation row: exact, the same on every platform and thread, no canvas shared between
 * threads. Materials, each drawn as its hitbox so that what kills or carries is what is seen:
 *     sky             RGB ( 92, 148, 252)  gray 170
 *     solid ground    RGB (136,  84,  40)  gray  70
 *     one-way         RGB (240, 200,  80)  gray 210  the top half of its tile
 *     spikes          RGB (255, 255, 255)  gray 255  the lower 60% of the tile, 0.1 in from each side
 *     flag column     RGB ( 40, 220,  40)  gray 120  whole tiles (touching the column wins)
 *     below the map   RGB (  0,   0,   0)  gray   0  falling into it kills
 *     player          RGB (230,  30,  30)  gray  35  its 0.8 x 0.9 box, drawn last
 *
 * env.render() draws the platformer's own wide view; env.agent_view() (envs.play, GIFs) shows
 * the picture. Its scripted policy reads only the picture and reaches the flag from every spawn
 * at 64x64x3, 48x48x1 and 36x36x1. Keys: picture_height and picture_width (whole numbers 1..1024), picture_channels
 * (1 or 3); other values leave a row of 0 values and creating the envs fails. Plus the
 * platformer's own keys (frameskip, max_ticks, fail_penalty, level, progress_reward, go_explore).
 */
#ifndef PIXEL_PLATFORMER_PIXEL_PLATFORMER_H
#define PIXEL_PLATFORMER_PIXEL_PLATFORMER_H

typedef unsigned char obs_t;
#define PLATFORMER_CUSTOM_OBS 1
#define OBS_SIZE (64 * 64 * 3) /* at the ini's defaults; the row is PUF_OBS_SIZE(env) */
#define PUF_OBS_SIZE(env) ((env)->pic_h * (env)->pic_w * (env)->pic_c)
#define PLATFORMER_ENV_EXTRA int pic_h, pic_w, pic_c;
#include "../platformer/platformer.h"

#define PIXPLAT_ONE 1024           /* fixed point: 1/1024 tile */
#define PIXPLAT_VIEW_TILES 16      /* view width in tiles */
#define PIXPLAT_PLAYER_LEFT 4608   /* the player's left edge: 4.5 tiles from the view's left edge */
#define PIXPLAT_BELOW_ROWS 2       /* rows of the void below the map the camera may show */
#define PIXPLAT_MAX_SIDE 1024

enum { PIXPLAT_SKY, PIXPLAT_SOLID, PIXPLAT_ONEWAY, PIXPLAT_SPIKE, PIXPLAT_FLAG, PIXPLAT_VOID,
       PIXPLAT_PLAYER, PIXPLAT_MATERIALS };
static const unsigned char pixplat_colors[PIXPLAT_MATERIALS][4] = {  /* R, G, B, gray */
    {92, 148, 252, 170}, {136, 84, 40, 70}, {240, 200, 80, 210}, {255, 255, 255, 255},
    {40, 220, 40, 120}, {0, 0, 0, 0}, {230, 30, 30, 35},
};

static void platformer_custom_init(Env* env, Dict* kwargs) {
    double h = dict_get(kwargs, "picture_height"), w = dict_get(kwargs, "picture_width");
    double c = dict_get(kwargs, "picture_channels");
    int ok = h >= 1 && h <= PIXPLAT_MAX_SIDE && w >= 1 && w <= PIXPLAT_MAX_SIDE &&
             (c == 1 || c == 3) && h == floor(h) && w == floor(w);
    /* A picture this env cannot draw leaves a row of 0 values, which the host reports. */
    env->pic_h = ok ? (int)h : 0;
    env->pic_w = ok ? (int)w : 0;
    env->pic_c = ok ? (int)c : 0;
}

static inline int pixplat_floor_div(int a, int b) {
    int q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The material seen at a point of tile c (fx, fy: the point within the tile, 0..ONE). */
static inline int pixplat_material(char c, int fx, int fy) {
    switch (c) {
    case '#': return PIXPLAT_SOLID;
    case '=': return fy < PIXPLAT_ONE / 2 ? PIXPLAT_ONEWAY : PIXPLAT_SKY;
    case '^':  /* platformer_touches_spike's box: x in (0.1, 0.9), y in (0.4, 1) of the tile */
        return 10 * fy > 4 * PIXPLAT_ONE && 10 * fx > PIXPLAT_ONE && 10 * fx < 9 * PIXPLAT_ONE
                   ? PIXPLAT_SPIKE : PIXPLAT_SKY;
    case 'G': return PIXPLAT_FLAG;
    default: return PIXPLAT_SKY;
    }
}

static void platformer_write_obs(Env* env) {
    const PlatformerMap* m = env->map;
    const int H = env->pic_h, W = env->pic_w, C = env->pic_c, ONE = PIXPLAT_ONE;
    obs_t* out = env->agents[0].observations;
    /* A pixel's center lies (2i + 1) * VIEW * ONE / (2W) fixed-point units from the view's edge
     * (square pixels: the same scale down). */
    const long long num = (long long)PIXPLAT_VIEW_TILES * ONE, den = 2LL * W;
    int x0 = (int)floorf(env->x * (float)ONE), y0 = (int)floorf(env->y * (float)ONE);
    int x1 = x0 + (int)(PLATFORMER_PW * ONE), y1 = y0 + (int)(PLATFORMER_PH * ONE);
    int cam_x = x0 - PIXPLAT_PLAYER_LEFT;
    int view_h = (int)((long long)H * num / W);
    int hi = (m->rows + PIXPLAT_BELOW_ROWS) * ONE - view_h, lo = hi < 0 ? hi : 0;
    int cam_y = (y0 + y1) / 2 - view_h / 2;
    cam_y = cam_y < lo ? lo : cam_y > hi ? hi : cam_y;
    /* per column: its tile column (-1: beyond the map's sides, solid), the point within it */
    int col_tx[PIXPLAT_MAX_SIDE], col_fx[PIXPLAT_MAX_SIDE];
    unsigned char col_player[PIXPLAT_MAX_SIDE], mat[PIXPLAT_MAX_SIDE];
    for (int i = 0; i < W; i++) {
        int wx = cam_x + (int)((2LL * i + 1) * num / den);
        int tx = pixplat_floor_div(wx, ONE);
        col_fx[i] = wx - tx * ONE;
        col_tx[i] = tx >= 0 && tx < m->cols ? tx : -1;
        col_player[i] = wx >= x0 && wx < x1;
    }
    for (int j = 0; j < H; j++) {
        int wy = cam_y + (int)((2LL * j + 1) * num / den);
        int ty = pixplat_floor_div(wy, ONE), fy = wy - ty * ONE;
        const char* tiles = ty >= 0 && ty < m->rows ? m->tiles + (size_t)ty * m->stride : NULL;
        for (int i = 0; i < W; i++) {
            /* the void below the map; solid beyond its sides, empty above (platformer_map_tile) */
            mat[i] = ty >= m->rows ? PIXPLAT_VOID : col_tx[i] < 0 ? PIXPLAT_SOLID
                   : tiles == NULL ? PIXPLAT_SKY : pixplat_material(tiles[col_tx[i]], col_fx[i], fy);
        }
        if (wy >= y0 && wy < y1) {  /* the player, drawn last */
            for (int i = 0; i < W; i++) if (col_player[i]) mat[i] = PIXPLAT_PLAYER;
        }
        obs_t* row = out + (size_t)j * W * C;
        if (C == 1) {
            for (int i = 0; i < W; i++) row[i] = pixplat_colors[mat[i]][3];
        } else {
            for (int i = 0; i < W; i++, row += 3) memcpy(row, pixplat_colors[mat[i]], 3);
        }
    }
}

/* ---- A rule-based policy on the picture alone: the platformer's scripted rule (run right; jump
 * from the ground at a wall, a spike or a pit just ahead) read off the pixels, which shows the
 * picture holds what the level needs. A policy that needs the picture's configured size is a
 * PUF_SCRIPTED_ENV_POLICY. ---- */

/* The material of pixel (i, j), or -1 outside the picture. */
static int pixplat_seen(const Env* env, int i, int j) {
    if (i < 0 || i >= env->pic_w || j < 0 || j >= env->pic_h) return -1;
    const obs_t* p = env->agents[0].observations + ((size_t)j * env->pic_w + i) * env->pic_c;
    for (int k = 0; k < PIXPLAT_MATERIALS; k++) {
        const unsigned char* c = pixplat_colors[k];
        if (env->pic_c == 1 ? p[0] == c[3] : p[0] == c[0] && p[1] == c[1] && p[2] == c[2]) return k;
    }
    return -1;
}

static void pixplat_scripted(Env* env, int agent) {
    float* actions = env->agents[agent].actions;
    int i0 = env->pic_w, i1 = -1, j0 = env->pic_h, j1 = -1;
    for (int j = 0; j < env->pic_h; j++) {
        for (int i = 0; i < env->pic_w; i++) {
            if (pixplat_seen(env, i, j) != PIXPLAT_PLAYER) continue;
            i0 = i < i0 ? i : i0; i1 = i > i1 ? i : i1;
            j0 = j < j0 ? j : j0; j1 = j > j1 ? j : j1;
        }
    }
    actions[0] = (float)PLATFORMER_MOVE_RIGHT;
    actions[1] = (float)PLATFORMER_VERT_NONE;
    if (i1 < 0) return;
    float tile = (float)env->pic_w / (float)PIXPLAT_VIEW_TILES;  /* pixels per tile */
    int below = (int)ceilf(0.35f * tile);  /* the ground is within 0.1 tile + a pixel of the feet */
    int on_ground = 0;
    for (int j = j1 + 1; j <= j1 + below; j++) {
        for (int i = i0; i <= i1; i++) {
            int k = pixplat_seen(env, i, j);
            on_ground |= k == PIXPLAT_SOLID || k == PIXPLAT_ONEWAY;
        }
    }
    /* the next tile column: pixels 0.5 to 1.5 tiles past the player's center (a spike is drawn
     * 0.1 tile in from each side of its tile, so one column could fall between two) */
    float center = (float)(i0 + i1 + 1) * 0.5f;
    int wall = 0, spike = 0, pit = 0;
    for (int i = (int)(center + 0.5f * tile); i <= (int)(center + 1.5f * tile); i++) {
        for (int j = j0; j <= j1 + below; j++) {
            int k = pixplat_seen(env, i, j);
            wall |= j <= j1 && k == PIXPLAT_SOLID;
            spike |= k == PIXPLAT_SPIKE;
        }
        int floor_seen = 0;  /* looking down: ground first, or a pit */
        for (int j = j1 + 1; j <= j1 + (int)(4.0f * tile) && !floor_seen; j++) {
            int k = pixplat_seen(env, i, j);
            if (k == PIXPLAT_SPIKE || k == PIXPLAT_VOID) break;
            floor_seen = k == PIXPLAT_SOLID || k == PIXPLAT_ONEWAY;
        }
        pit |= !floor_seen;
    }
    if (on_ground && (wall || spike || pit)) actions[1] = (float)PLATFORMER_VERT_JUMP;
}
#define PUF_SCRIPTED_ENV_POLICY pixplat_scripted

#endif /* PIXEL_PLATFORMER_PIXEL_PLATFORMER_H */
