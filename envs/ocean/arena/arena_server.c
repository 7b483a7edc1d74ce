/* arena_server — an example game server for the shared-memory protocol (docs/protocol.md): a
 * multi-agent 2D arena with hybrid actions, many agents per process, its own executable.
 *
 *   arena_server --agents 128 --shm /puf-arena-0 [--seed 1] [--frameskip 3] [--per-arena 8]
 *                [--max-steps 256]
 *
 * Agents live in arenas of `per-arena` agents (24 × 12 units, a floor and three one-way platforms,
 * gravity), bump into each other, and each chases its own coin. Heads, in this order:
 *   move (3): left, none, right;   jump (2): no, yes (from the ground);
 *   aim  (1): continuous, the aim angle π·clip(aim, −1, 1) (0 = right, π/2 = up).
 * Every 6 ticks an agent fires along its aim; a shot within 0.3 rad of its coin and within 12
 * units collects it (+1), and so does touching it. The coin then respawns elsewhere. A decision
 * spans `frameskip` ticks (30 Hz) with the same action, rewards summed (the server side's frame
 * skip). After `max-steps` decisions the episode is truncated (truncations = 1) and restarts.
 * It offers the protocol's save/load-state commands (all agents and the RNG, to the file the
 * trainer names).
 *
 * Observation (16 f32): x, y, vx, vy, on_ground, coin dx, dy, distance, cos and sin of the angle
 * to the coin, shot ready, time left, the nearest two other agents' dx, dy.
 * Log: perf = coins / (decisions · frameskip / 6) (1 = every shot hits), score = coins per
 * episode, shot = share of coins taken by a shot, episode_return, episode_length, n.
 *
 * Built by envs/shm/env.py (cc -O2, cached) from the [env] `build` key of envs/ocean/arena/arena.ini.
 */
#include "puffer_server.h"  /* first: it sets the POSIX feature macros */

#include <math.h>

#define ARENA_W 24.0f
#define ARENA_H 12.0f
#define ARENA_DT (1.0f / 30.0f)
#define ARENA_G 40.0f
#define ARENA_SPEED 8.0f
#define ARENA_JUMP 16.0f
#define ARENA_RELOAD 6
#define ARENA_RANGE 12.0f
#define ARENA_CONE 0.3f
#define ARENA_OBS 16
#define ARENA_PI 3.14159265f

typedef struct {
    float x, y, vx, vy, aim;
    float coin_x, coin_y;
    int on_ground, reload, steps;
    float coins, shot_coins, ret;
} ArenaAgent;

static const float arena_platforms[3][3] = {  /* x0, x1, height */
    {2.0f, 9.0f, 3.5f}, {15.0f, 22.0f, 3.5f}, {8.0f, 16.0f, 7.0f}};

static unsigned int arena_rng;
static float arena_uniform(void) {
    arena_rng = arena_rng * 1664525u + 1013904223u;
    return (float)(arena_rng >> 8) * (1.0f / 16777216.0f);
}

static void arena_place_coin(ArenaAgent* a) {
    a->coin_x = 1.0f + 22.0f * arena_uniform();
    a->coin_y = 0.5f + 9.0f * arena_uniform();
}

static void arena_reset_agent(ArenaAgent* a) {
    memset(a, 0, sizeof *a);
    a->x = 1.0f + 22.0f * arena_uniform();
    a->y = 0.0f;
    a->on_ground = 1;
    arena_place_coin(a);
}

static void arena_observe(const ArenaAgent* agents, int lo, int hi, int i, int max_steps, float* o) {
    const ArenaAgent* a = &agents[i];
    float dx = a->coin_x - a->x, dy = a->coin_y - (a->y + 0.5f);
    float dist = sqrtf(dx * dx + dy * dy) + 1e-6f;
    o[0] = a->x / ARENA_W; o[1] = a->y / ARENA_H;
    o[2] = a->vx / ARENA_SPEED; o[3] = a->vy / ARENA_JUMP;
    o[4] = (float)a->on_ground;
    o[5] = dx / ARENA_W; o[6] = dy / ARENA_H; o[7] = dist / ARENA_RANGE;
    o[8] = dx / dist; o[9] = dy / dist;
    o[10] = a->reload == 0 ? 1.0f : 0.0f;
    o[11] = 1.0f - (float)a->steps / (float)max_steps;
    /* the two nearest others in the same arena */
    float best[2] = {1e9f, 1e9f};
    int who[2] = {-1, -1};
    for (int j = lo; j < hi; j++) {
        if (j == i) continue;
        float ex = agents[j].x - a->x, ey = agents[j].y - a->y, d = ex * ex + ey * ey;
        if (d < best[0]) { best[1] = best[0]; who[1] = who[0]; best[0] = d; who[0] = j; }
        else if (d < best[1]) { best[1] = d; who[1] = j; }
    }
    for (int k = 0; k < 2; k++) {
        o[12 + 2 * k] = who[k] < 0 ? 0.0f : (agents[who[k]].x - a->x) / ARENA_W;
        o[13 + 2 * k] = who[k] < 0 ? 0.0f : (agents[who[k]].y - a->y) / ARENA_H;
    }
}

/* One 30 Hz tick of agent a with its decision; returns the reward. */
static float arena_tick(ArenaAgent* a, int move, int jump) {
    float r = 0.0f;
    a->vx = (float)(move - 1) * ARENA_SPEED;
    if (jump && a->on_ground) { a->vy = ARENA_JUMP; a->on_ground = 0; }
    a->vy -= ARENA_G * ARENA_DT;
    float oy = a->y;
    a->x += a->vx * ARENA_DT;
    a->y += a->vy * ARENA_DT;
    if (a->x < 0.0f) a->x = 0.0f;
    if (a->x > ARENA_W) a->x = ARENA_W;
    a->on_ground = 0;
    if (a->y <= 0.0f) { a->y = 0.0f; a->vy = 0.0f; a->on_ground = 1; }
    for (int p = 0; p < 3 && a->vy <= 0.0f; p++) {  /* one-way platforms: land from above */
        const float* pl = arena_platforms[p];
        if (a->x >= pl[0] && a->x <= pl[1] && oy >= pl[2] && a->y < pl[2]) {
            a->y = pl[2]; a->vy = 0.0f; a->on_ground = 1;
        }
    }
    if (a->y > ARENA_H) { a->y = ARENA_H; a->vy = 0.0f; }
    float dx = a->coin_x - a->x, dy = a->coin_y - (a->y + 0.5f);
    float dist = sqrtf(dx * dx + dy * dy);
    int got = 0, by_shot = 0;
    if (dist < 0.8f) got = 1;
    if (a->reload > 0) a->reload--;
    else {
        a->reload = ARENA_RELOAD;
        float err = fabsf(remainderf(atan2f(dy, dx) - a->aim, 2.0f * ARENA_PI));
        if (dist < ARENA_RANGE && err < ARENA_CONE) { got = 1; by_shot = 1; }
    }
    if (got) {
        r += 1.0f;
        a->coins += 1.0f;
        a->shot_coins += (float)by_shot;
        arena_place_coin(a);
    }
    return r;
}

/* Save/load state (the protocol's optional commands): the agents and the RNG, raw, behind a
 * small header that a load checks. Returns 1 on success. */
static int arena_save(const char* path, const ArenaAgent* world, int agents) {
    FILE* f = fopen(path, "wb");
    if (f == NULL) return 0;
    uint32_t head[3] = {0x41524E41u /* "ARNA" */, (uint32_t)agents, (uint32_t)sizeof(ArenaAgent)};
    int ok = fwrite(head, sizeof head, 1, f) == 1 && fwrite(&arena_rng, sizeof arena_rng, 1, f) == 1 &&
             fwrite(world, sizeof(ArenaAgent), (size_t)agents, f) == (size_t)agents;
    return fclose(f) == 0 && ok;
}

static int arena_load(const char* path, ArenaAgent* world, int agents) {
    FILE* f = fopen(path, "rb");
    if (f == NULL) return 0;
    uint32_t head[3];
    unsigned int rng;
    int ok = fread(head, sizeof head, 1, f) == 1 && head[0] == 0x41524E41u && head[1] == (uint32_t)agents &&
             head[2] == (uint32_t)sizeof(ArenaAgent) && fread(&rng, sizeof rng, 1, f) == 1 &&
             fread(world, sizeof(ArenaAgent), (size_t)agents, f) == (size_t)agents;
    fclose(f);
    if (ok) arena_rng = rng;
    return ok;
}

int main(int argc, char** argv) {
    int agents = 64, frameskip = 3, per_arena = 8, max_steps = 256;
    unsigned int seed = 1;
    const char* shm = NULL;
    for (int i = 1; i < argc; i++) {
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && strcmp(argv[i], "--agents") == 0) { agents = atoi(v); i++; }
        else if (v && strcmp(argv[i], "--shm") == 0) { shm = v; i++; }
        else if (v && strcmp(argv[i], "--seed") == 0) { seed = (unsigned)strtoul(v, NULL, 10); i++; }
        else if (v && strcmp(argv[i], "--frameskip") == 0) { frameskip = atoi(v); i++; }
        else if (v && strcmp(argv[i], "--per-arena") == 0) { per_arena = atoi(v); i++; }
        else if (v && strcmp(argv[i], "--max-steps") == 0) { max_steps = atoi(v); i++; }
        else {
            fprintf(stderr, "usage: %s --agents N --shm NAME [--seed S] [--frameskip K] [--per-arena M] "
                    "[--max-steps T] (bad argument '%s')\n", argv[0], argv[i]);
            return 2;
        }
    }
    if (shm == NULL || agents < 1 || frameskip < 1 || per_arena < 1 || max_steps < 1) {
        fprintf(stderr, "%s: --shm NAME is required; --agents, --frameskip, --per-arena and "
                "--max-steps must be >= 1\n", argv[0]);
        return 2;
    }
    static const char* log_names[] = {"perf", "score", "shot", "episode_return", "episode_length", "n"};
    PufServerSpec spec = puf_spec(agents, ARENA_OBS, PUF_DTYPE_F32);
    spec.num_heads = 3;
    spec.act_sizes[0] = 3; spec.act_sizes[1] = 2; spec.act_sizes[2] = 1;
    spec.num_log = 6;
    for (int i = 0; i < 6; i++) spec.log_names[i] = log_names[i];
    spec.frameskip = frameskip;
    PufServer srv;
    char err[512];
    if (puf_server_open(&srv, shm, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "arena_server: %s\n", err);
        return 1;
    }
    ArenaAgent* world = (ArenaAgent*)calloc((size_t)agents, sizeof(ArenaAgent));
    float* obs = (float*)srv.observations;
    float shots_per_episode = (float)max_steps * (float)frameskip / (float)(ARENA_RELOAD + 1);
    for (;;) {
        uint64_t arg = 0;
        uint32_t cmd = puf_server_wait(&srv, &arg);
        if (cmd == PUF_CMD_QUIT) break;
        if (cmd == PUF_CMD_RESET) {
            arena_rng = seed * 2654435761u ^ (unsigned int)arg;
            for (int i = 0; i < agents; i++) arena_reset_agent(&world[i]);
            for (int i = 0; i < agents; i++) {
                int lo = i / per_arena * per_arena, hi = lo + per_arena > agents ? agents : lo + per_arena;
                arena_observe(world, lo, hi, i, max_steps, obs + (size_t)i * ARENA_OBS);
                srv.rewards[i] = srv.terminals[i] = srv.truncations[i] = 0.0f;
            }
            puf_server_reply(&srv, PUF_OK);
            continue;
        }
        if (cmd == PUF_CMD_SAVE || cmd == PUF_CMD_LOAD) {
            int ok = cmd == PUF_CMD_SAVE ? arena_save(srv.h->path, world, agents)
                                         : arena_load(srv.h->path, world, agents);
            if (ok && cmd == PUF_CMD_LOAD) {
                for (int i = 0; i < agents; i++) {
                    int lo = i / per_arena * per_arena, hi = lo + per_arena > agents ? agents : lo + per_arena;
                    arena_observe(world, lo, hi, i, max_steps, obs + (size_t)i * ARENA_OBS);
                    srv.rewards[i] = srv.terminals[i] = srv.truncations[i] = 0.0f;
                }
            }
            if (!ok) {
                char msg[PUF_SHM_MESSAGE_LEN];
                snprintf(msg, sizeof msg, "%s state %.200s failed", cmd == PUF_CMD_SAVE ? "saving" : "loading",
                         srv.h->path);
                puf_server_message(&srv, msg);
            }
            puf_server_reply(&srv, ok ? PUF_OK : PUF_FAILED);
            continue;
        }
        if (cmd != PUF_CMD_STEP) {
            puf_server_reply(&srv, PUF_UNSUPPORTED);
            continue;
        }
        for (int i = 0; i < agents; i++) {
            const float* act = srv.actions + (size_t)i * 3;
            /* untrusted floats: compare before converting */
            int move = act[0] >= 0.0f && act[0] <= 2.0f ? (int)act[0] : 1;
            int jump = act[1] >= 1.0f && act[1] <= 1.0f;
            float aim = act[2] == act[2] ? fmaxf(-1.0f, fminf(1.0f, act[2])) : 0.0f;
            world[i].aim = aim * ARENA_PI;
            float r = 0.0f;
            for (int k = 0; k < frameskip; k++) r += arena_tick(&world[i], move, jump && k == 0);
            srv.rewards[i] = r;
            srv.terminals[i] = 0.0f;
            srv.truncations[i] = 0.0f;
            world[i].ret += r;
            world[i].steps++;
        }
        /* bumping: agents of an arena push each other apart */
        for (int lo = 0; lo < agents; lo += per_arena) {
            int hi = lo + per_arena > agents ? agents : lo + per_arena;
            for (int i = lo; i < hi; i++)
                for (int j = i + 1; j < hi; j++) {
                    float dx = world[j].x - world[i].x, dy = world[j].y - world[i].y;
                    if (fabsf(dx) < 0.6f && fabsf(dy) < 1.0f) {
                        float push = dx >= 0.0f ? 0.3f : -0.3f;
                        world[i].x = fmaxf(0.0f, world[i].x - push);
                        world[j].x = fminf(ARENA_W, world[j].x + push);
                    }
                }
        }
        for (int i = 0; i < agents; i++) {
            ArenaAgent* a = &world[i];
            if (a->steps >= max_steps) {
                float values[6] = {fminf(1.0f, a->coins / shots_per_episode), a->coins,
                                   a->coins > 0.0f ? a->shot_coins / a->coins : 0.0f, a->ret,
                                   (float)a->steps, 1.0f};
                puf_server_log_episode(&srv, values);
                srv.truncations[i] = 1.0f;
                arena_reset_agent(a);
            }
        }
        for (int i = 0; i < agents; i++) {
            int lo = i / per_arena * per_arena, hi = lo + per_arena > agents ? agents : lo + per_arena;
            arena_observe(world, lo, hi, i, max_steps, obs + (size_t)i * ARENA_OBS);
        }
        puf_server_reply(&srv, PUF_OK);
    }
    free(world);
    puf_server_close(&srv);
    return 0;
}
