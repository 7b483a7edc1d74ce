/* goexplore.h — Go-Explore (Ecoffet et al. 2019) for any C env: an archive of the cells the
 * agents reached, the shortest route into each, and episode starts from it.
 *
 * An env opts in with a few calls (envs/ocean/platformer/platformer.h is the worked example):
 *
 *     struct Env { ...; GoExplore ge; };                  // per-env state, zeroed by the host
 *     #define PUF_GOEXPLORE(env) (&(env)->ge)              // lets the host find it
 *     puf_init:  ge_init(&env->ge, env, kwargs, spec, env->rng);
 *     puf_reset: int start = ge_start(&env->ge, &env->rng);
 *                if (start != GE_START_RESTORED) { ...the env's own reset, using env->rng... }
 *                if (start == GE_START_REPLAY) ge_replay(&env->ge);
 *                ge_visit(&env->ge);
 *     puf_step:  ge_act(&env->ge, action_bytes);          // what the env executed this step
 *                ...advance the game...
 *                reached the goal: ge_goal(&env->ge);  still alive: reward += ge_visit(&env->ge);
 *                on episode end, ge_real_start(&env->ge) says whether it began at the real start
 *     puf_close: ge_close(&env->ge);
 *
 * The env describes itself in a GeSpec: its cell function (state -> 64-bit cell key, and its own
 * progress measure in [0, 1], 1 = at the goal), the number of bytes one step's actions take, the
 * longest route (its episode limit in steps), a fingerprint of whatever would make a route replay
 * differently (level, frameskip, time limit), and how to get back into a cell:
 *   - savestate: a pointer and size of the env's plain game data (no pointers in it: never the
 *     Agent pointers or the Log). Starting from a cell copies those bytes back. O(state size).
 *   - replay: a function that advances the game by one recorded step with no reward or log.
 *     Starting from a cell re-runs the env's real start with the route's seed and then the
 *     route. O(route length); needed when the state holds pointers.
 * Either way every cell keeps its route: the env rng before the real start's reset (`seed`) and
 * the actions from there. A route replays from the real start to its cell exactly (the env is
 * deterministic given its rng and actions), which is how the best route to the goal is exported.
 *
 * Config ([env] keys, all optional; without `go_explore` nothing here does anything):
 *   go_explore                 probability that an episode starts from the archive (0 = off)
 *   go_explore_frontier        share of archive starts taken from the frontier (the rest are
 *                              rarity-weighted over all cells)
 *   go_explore_frontier_cells  frontier size: the cells with the greatest progress, ties to the
 *                              shortest route, then the earliest found
 *   go_explore_cells           capacity (see "Full" below)
 *   go_explore_ghost           reward for entering a cell in fewer steps than its archived route
 *   go_explore_replay          1: start from cells by replaying routes even if the env has a
 *                              savestate (slower; checks determinism on every start)
 * An episode started from a cell keeps the clock its route took (the savestate or the replay
 * includes the env's tick), so it races the real time limit and every route it finds is a route
 * from the real start within that limit.
 *
 * Threads: one archive per vecenv, shared by its envs. During a step the archive is read-only:
 * each env appends what it found (new or shorter cells, the goal, the cells its episode entered)
 * to its own pending lists, with no lock and no atomics. The host merges all pending lists into
 * the archive between steps, on one thread, in env order (ge_sync: vecenv.c after vec_step and
 * before vec_log). So a run is the same function of the seed for any thread count, and two env
 * buffers stepped at once only read it.
 *
 * Full: once go_explore_cells cells are archived, a new cell is dropped (counted in
 * archive_dropped) unless its progress beats every archived cell; then the most-entered cell
 * outside the frontier makes room. Known cells still get shorter routes. Pending lists are bounded
 * too (a step that finds more than they hold drops the extra, counted in pending_dropped).
 */
#ifndef GOEXPLORE_H
#define GOEXPLORE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t GeKey;
typedef GeKey (*GeCellFn)(Env* env, float* progress);
typedef void (*GeReplayFn)(Env* env, const unsigned char* actions);

typedef struct GeSpec {
    void* state;          /* plain game data restored at archive starts, or NULL (replay only) */
    int state_size;       /* bytes */
    int action_bytes;     /* bytes recorded per step */
    int max_route;        /* longest route in steps (the episode limit) */
    GeCellFn cell;
    GeReplayFn replay;    /* required without a savestate; used by go_explore_replay = 1 */
    uint64_t fingerprint; /* archives with another fingerprint are refused on load */
} GeSpec;

enum { GE_START_REAL, GE_START_RESTORED, GE_START_REPLAY };
enum { GE_KIND_REAL, GE_KIND_RARE, GE_KIND_FRONTIER };

#define GE_PENDING_CAP 64   /* new/shorter cells one env holds between syncs */
#define GE_VISITS_CAP 256   /* first entries into known cells held between syncs */
#define GE_SEEN_CAP 1024    /* distinct cells remembered per episode (a power of 2) */
#define GE_MAX_FRONTIER 256

typedef struct GeCell {
    GeKey key;
    uint32_t seed;        /* env rng before the real start's reset */
    int32_t len;          /* route length in steps */
    float progress;       /* the env's progress measure at the end of the route */
    uint32_t episodes;    /* episodes that entered the cell (rarity) */
    uint64_t found;       /* archive clock (syncs) when this route was found */
    unsigned char* route; /* [len * action_bytes] */
    int32_t route_cap;    /* steps route can hold */
    int32_t frontier;     /* 1 while in the frontier */
} GeCell;

typedef struct GePending {
    GeKey key;
    uint32_t seed;
    int32_t len;
    float progress;
    size_t at;            /* arena offset: state bytes, then route bytes */
} GePending;

typedef struct GeArchive GeArchive;

typedef struct GoExplore {
    GeArchive* archive;   /* NULL: Go-Explore is off for this env */
    Env* env;
    GeSpec spec;
    int configured;       /* the config names go_explore (the env then logs start_perf) */
    int force_real;       /* the next start is the real one (route replay from outside) */
    uint32_t rng;         /* start selection; the env's own rng is left alone */
    /* the current episode */
    int kind;             /* GE_KIND_* */
    int start_cell;
    uint32_t seed;
    unsigned char* trace; /* [max_route * action_bytes]: the route so far */
    int len;
    int overflow;         /* longer than max_route: nothing more is recorded this episode */
    GeKey last_key;
    int has_last;
    unsigned int* rng_ptr;/* replay starts: the env rng to give back after the replay */
    unsigned int rng_saved;
    GeKey* seen;          /* [GE_SEEN_CAP] open addressing, valid where seen_gen == gen */
    uint32_t* seen_gen;
    uint32_t gen;
    int seen_n;
    /* found since the last sync */
    GePending* pending;   /* [GE_PENDING_CAP] */
    int npending;
    unsigned char* arena;
    size_t arena_used, arena_cap;
    int32_t goal_len;     /* -1: no goal route pending */
    uint32_t goal_seed;
    size_t goal_at;
    GeKey* visits;        /* [GE_VISITS_CAP] */
    int nvisits;
    uint32_t dropped, mismatches;
} GoExplore;

struct GeArchive {
    GeSpec spec;          /* sizes, fingerprint (pointers are the first env's, unused) */
    /* knobs */
    double p_archive, frontier_share, ghost;
    int frontier_size, max_cells, replay;
    /* cells */
    GeCell* cells;
    int n, cap;
    unsigned char* states;/* [cap * state_size] */
    int32_t* table;       /* open addressing: cell index or -1 */
    int table_cap;        /* a power of 2, >= 2 * cap */
    double* cum;          /* rarity weights, prefix sums over cells */
    int cum_dirty;
    int frontier[GE_MAX_FRONTIER];
    int frontier_n;
    float max_progress;
    GeCell goal;          /* the shortest route that reached the goal (len -1: none) */
    uint64_t clock;       /* syncs that merged something: orders routes by when they were found */
    uint64_t inserted, improved, dropped_full, dropped_pending, mismatches;
    /* the envs that share it, in creation (= env) order */
    GoExplore** envs;
    int num_envs, envs_cap;
    int refs;
};

/* ---- small helpers ---- */

static inline uint64_t ge_mix64(uint64_t x) {  /* splitmix64's finalizer */
    x ^= x >> 30; x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27; x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static inline uint32_t ge_rand(uint32_t* s) {  /* xorshift32; never 0 */
    uint32_t x = *s;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    return *s = x;
}

static inline double ge_uniform(uint32_t* s) { return (ge_rand(s) >> 8) * (1.0 / 16777216.0); }

static inline void* ge_alloc(size_t bytes) {
    void* p = calloc(1, bytes > 0 ? bytes : 1);
    if (p == NULL) {
        fprintf(stderr, "goexplore.h: out of memory allocating %zu bytes\n", bytes);
        abort();
    }
    return p;
}

static inline void* ge_grow(void* p, size_t bytes) {
    void* q = realloc(p, bytes > 0 ? bytes : 1);
    if (q == NULL) {
        fprintf(stderr, "goexplore.h: out of memory growing to %zu bytes\n", bytes);
        abort();
    }
    return q;
}

/* An optional [env] key: its value, or `fallback` when the config lacks it. */
static inline double ge_opt(Dict* kwargs, const char* key, double fallback) {
    DictItem* item = kwargs != NULL ? dict_find(kwargs, key) : NULL;
    return item != NULL ? item->value : fallback;
}

/* ---- the archive's cell table (written only by ge_sync / ge_load) ---- */

static inline int ge_find(const GeArchive* a, GeKey key) {
    if (a->n == 0) return -1;
    uint32_t mask = (uint32_t)a->table_cap - 1;
    for (uint32_t h = (uint32_t)ge_mix64(key) & mask;; h = (h + 1) & mask) {
        int32_t i = a->table[h];
        if (i < 0) return -1;
        if (a->cells[i].key == key) return i;
    }
}

static inline void ge_table_put(GeArchive* a, int i) {
    uint32_t mask = (uint32_t)a->table_cap - 1;
    uint32_t h = (uint32_t)ge_mix64(a->cells[i].key) & mask;
    while (a->table[h] >= 0) h = (h + 1) & mask;
    a->table[h] = i;
}

static inline void ge_table_rebuild(GeArchive* a, int table_cap) {
    free(a->table);
    a->table_cap = table_cap;
    a->table = (int32_t*)ge_alloc(sizeof(int32_t) * (size_t)table_cap);
    for (int h = 0; h < table_cap; h++) a->table[h] = -1;
    for (int i = 0; i < a->n; i++) ge_table_put(a, i);
}

/* Linear probing deletion by backward shift (no tombstones). */
static inline void ge_table_remove(GeArchive* a, GeKey key) {
    uint32_t mask = (uint32_t)a->table_cap - 1;
    uint32_t h = (uint32_t)ge_mix64(key) & mask;
    while (a->table[h] >= 0 && a->cells[a->table[h]].key != key) h = (h + 1) & mask;
    if (a->table[h] < 0) return;
    uint32_t hole = h;
    for (uint32_t j = (h + 1) & mask; a->table[j] >= 0; j = (j + 1) & mask) {
        uint32_t home = (uint32_t)ge_mix64(a->cells[a->table[j]].key) & mask;
        /* move j into the hole if its home is not in (hole, j] (cyclically) */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            a->table[hole] = a->table[j];
            hole = j;
        }
    }
    a->table[hole] = -1;
}

static inline void ge_reserve(GeArchive* a, int need) {
    if (need <= a->cap) return;
    int cap = a->cap > 0 ? a->cap : 256;
    while (cap < need) cap *= 2;
    if (cap > a->max_cells) cap = a->max_cells;
    a->cells = (GeCell*)ge_grow(a->cells, sizeof(GeCell) * (size_t)cap);
    memset(a->cells + a->cap, 0, sizeof(GeCell) * (size_t)(cap - a->cap));
    a->states = (unsigned char*)ge_grow(a->states, (size_t)cap * (size_t)a->spec.state_size);
    a->cum = (double*)ge_grow(a->cum, sizeof(double) * (size_t)cap);
    a->cap = cap;
    int table_cap = 16;
    while (table_cap < 2 * cap) table_cap *= 2;
    if (table_cap > a->table_cap) ge_table_rebuild(a, table_cap);
}

/* Frontier order: more progress first, then the shorter route, then the earlier found. */
static inline int ge_before(const GeCell* x, const GeCell* y) {
    if (x->progress != y->progress) return x->progress > y->progress;
    if (x->len != y->len) return x->len < y->len;
    if (x->found != y->found) return x->found < y->found;
    return x->key < y->key;
}

/* Cell i was added or got a shorter route: place it in the frontier (kept sorted). */
static inline void ge_frontier_update(GeArchive* a, int i) {
    GeCell* c = &a->cells[i];
    if (c->frontier) {
        int at = 0;
        while (a->frontier[at] != i) at++;
        memmove(&a->frontier[at], &a->frontier[at + 1], sizeof(int) * (size_t)(a->frontier_n - at - 1));
        a->frontier_n--;
        c->frontier = 0;
    }
    int at = a->frontier_n;
    while (at > 0 && ge_before(c, &a->cells[a->frontier[at - 1]])) at--;
    if (at >= a->frontier_size) return;
    if (a->frontier_n == a->frontier_size) {
        a->cells[a->frontier[a->frontier_n - 1]].frontier = 0;
        a->frontier_n--;
    }
    memmove(&a->frontier[at + 1], &a->frontier[at], sizeof(int) * (size_t)(a->frontier_n - at));
    a->frontier[at] = i;
    a->frontier_n++;
    c->frontier = 1;
}

static inline void ge_set_route(GeArchive* a, GeCell* c, const unsigned char* route, int len) {
    int ab = a->spec.action_bytes;
    if (c->route == NULL || c->route_cap < len) {
        free(c->route);
        c->route_cap = len > 0 ? len : 1;
        c->route = (unsigned char*)ge_alloc((size_t)c->route_cap * (size_t)ab);
    }
    if (len > 0) memcpy(c->route, route, (size_t)len * (size_t)ab);
    c->len = len;
}

/* Offer a route into a cell: kept if the cell is new (and there is room) or the route is
 * strictly shorter than the archived one (equal length: the earlier one stays). */
static inline void ge_offer(GeArchive* a, GeKey key, uint32_t seed, int len, float progress,
                     const unsigned char* state, const unsigned char* route) {
    int ss = a->spec.state_size;
    int i = ge_find(a, key);
    if (i >= 0) {
        GeCell* c = &a->cells[i];
        if (len >= c->len) return;
        c->seed = seed;
        c->found = a->clock;
        ge_set_route(a, c, route, len);
        if (ss > 0) memcpy(a->states + (size_t)i * ss, state, (size_t)ss);
        a->improved++;
        ge_frontier_update(a, i);
        return;
    }
    if (a->n >= a->max_cells) {
        if (!(progress > a->max_progress)) {
            a->dropped_full++;
            return;
        }
        /* Advances the frontier: the most-entered cell outside the frontier makes room. */
        int victim = -1;
        for (int j = 0; j < a->n; j++) {
            if (a->cells[j].frontier) continue;
            if (victim < 0 || a->cells[j].episodes > a->cells[victim].episodes) victim = j;
        }
        if (victim < 0) {
            a->dropped_full++;
            return;
        }
        ge_table_remove(a, a->cells[victim].key);
        i = victim;
        a->dropped_full++;  /* the victim is dropped */
    } else {
        ge_reserve(a, a->n + 1);
        i = a->n++;
    }
    GeCell* c = &a->cells[i];
    c->key = key;
    c->seed = seed;
    c->progress = progress;
    c->episodes = 0;
    c->found = a->clock;
    c->frontier = 0;
    ge_set_route(a, c, route, len);
    if (ss > 0) memcpy(a->states + (size_t)i * ss, state, (size_t)ss);
    ge_table_put(a, i);
    if (progress > a->max_progress) a->max_progress = progress;
    a->inserted++;
    a->cum_dirty = 1;
    ge_frontier_update(a, i);
}

static inline void ge_offer_goal(GeArchive* a, uint32_t seed, int len, const unsigned char* route) {
    if (a->goal.len >= 0 && len >= a->goal.len) return;
    a->goal.seed = seed;
    a->goal.found = a->clock;
    ge_set_route(a, &a->goal, route, len);
}

/* Rarity: weight 1/sqrt(1 + episodes that entered the cell), as Go-Explore's count bonus. */
static inline void ge_rebuild_weights(GeArchive* a) {
    double sum = 0.0;
    for (int i = 0; i < a->n; i++) {
        sum += 1.0 / sqrt(1.0 + (double)a->cells[i].episodes);
        a->cum[i] = sum;
    }
    a->cum_dirty = 0;
}

static inline int ge_sample_rare(const GeArchive* a, double u) {
    double target = u * a->cum[a->n - 1];
    int lo = 0, hi = a->n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a->cum[mid] > target) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* ---- the archive's life: created by the first env of a vecenv that opts in ---- */

static _Thread_local GeArchive* ge_host_archive;  /* the vecenv being created on this thread */

/* Host: around creating one vecenv's envs (envs/c/vecenv.c). Without these calls (a plain C
 * program), every env of the process shares one archive. */
static inline void ge_host_begin(void) { ge_host_archive = NULL; }
static inline GeArchive* ge_host_end(void) {
    GeArchive* a = ge_host_archive;
    ge_host_archive = NULL;
    return a;
}

static inline void ge_clear_cells(GeArchive* a) {
    for (int i = 0; i < a->n; i++) free(a->cells[i].route);
    if (a->cap > 0) memset(a->cells, 0, sizeof(GeCell) * (size_t)a->cap);
    a->n = 0;
    for (int h = 0; h < a->table_cap; h++) a->table[h] = -1;
    a->frontier_n = 0;
    a->max_progress = 0.0f;
    free(a->goal.route);
    memset(&a->goal, 0, sizeof(a->goal));
    a->goal.len = -1;
    a->cum_dirty = 1;
}

static inline void ge_archive_free(GeArchive* a) {
    ge_clear_cells(a);
    free(a->cells);
    free(a->states);
    free(a->table);
    free(a->cum);
    free(a->envs);
    free(a);
}

static inline double ge_clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static inline GeArchive* ge_archive_new(Dict* kwargs, const GeSpec* spec) {
    GeArchive* a = (GeArchive*)ge_alloc(sizeof(GeArchive));
    a->spec = *spec;
    a->p_archive = ge_clamp(ge_opt(kwargs, "go_explore", 0.0), 0.0, 1.0);
    a->frontier_share = ge_clamp(ge_opt(kwargs, "go_explore_frontier", 0.5), 0.0, 1.0);
    a->frontier_size = (int)ge_clamp(ge_opt(kwargs, "go_explore_frontier_cells", 16), 1, GE_MAX_FRONTIER);
    a->max_cells = (int)ge_clamp(ge_opt(kwargs, "go_explore_cells", 65536), 1, 1 << 26);
    a->ghost = ge_opt(kwargs, "go_explore_ghost", 0.0);
    a->replay = ge_opt(kwargs, "go_explore_replay", 0.0) != 0.0 || spec->state == NULL;
    a->goal.len = -1;
    a->cum_dirty = 1;
    ge_table_rebuild(a, 16);
    return a;
}

/* puf_init: describe the env; attaches it to the vecenv's archive when go_explore > 0. */
static inline void ge_init(GoExplore* ge, Env* env, Dict* kwargs, GeSpec spec, unsigned int seed) {
    memset(ge, 0, sizeof(*ge));
    ge->env = env;
    ge->spec = spec;
    ge->goal_len = -1;
    ge->rng = (uint32_t)ge_mix64((uint64_t)seed * 0x9E3779B97F4A7C15ull + 1) | 1u;
    ge->configured = kwargs != NULL && dict_find(kwargs, "go_explore") != NULL;
    if (ge_opt(kwargs, "go_explore", 0.0) <= 0.0) return;
    if (spec.cell == NULL || spec.max_route < 1 || spec.action_bytes < 1 ||
        (spec.state == NULL && spec.replay == NULL)) {
        fprintf(stderr, "goexplore.h: ge_init needs a cell function, max_route >= 1, "
                        "action_bytes >= 1 and a savestate or a replay function\n");
        abort();
    }
    GeArchive* a = ge_host_archive;
    if (a == NULL) a = ge_host_archive = ge_archive_new(kwargs, &spec);
    if (a->spec.state_size != spec.state_size || a->spec.action_bytes != spec.action_bytes ||
        a->spec.max_route != spec.max_route || a->spec.fingerprint != spec.fingerprint) {
        /* envs of one vecenv with different configs cannot share routes */
        fprintf(stderr, "goexplore.h: envs sharing an archive must have the same spec\n");
        abort();
    }
    if (a->num_envs == a->envs_cap) {
        a->envs_cap = a->envs_cap > 0 ? 2 * a->envs_cap : 64;
        a->envs = (GoExplore**)ge_grow(a->envs, sizeof(GoExplore*) * (size_t)a->envs_cap);
    }
    a->envs[a->num_envs++] = ge;
    a->refs++;
    ge->archive = a;
    size_t route_bytes = (size_t)spec.max_route * (size_t)spec.action_bytes;
    ge->trace = (unsigned char*)ge_alloc(route_bytes);
    ge->seen = (GeKey*)ge_alloc(sizeof(GeKey) * GE_SEEN_CAP);
    ge->seen_gen = (uint32_t*)ge_alloc(sizeof(uint32_t) * GE_SEEN_CAP);
    ge->pending = (GePending*)ge_alloc(sizeof(GePending) * GE_PENDING_CAP);
    ge->visits = (GeKey*)ge_alloc(sizeof(GeKey) * GE_VISITS_CAP);
    ge->arena_cap = 4 * (route_bytes + (size_t)spec.state_size);
    ge->arena = (unsigned char*)ge_alloc(ge->arena_cap);
}

/* puf_close. */
static inline void ge_close(GoExplore* ge) {
    GeArchive* a = ge->archive;
    if (a != NULL) {
        for (int i = 0; i < a->num_envs; i++) {
            if (a->envs[i] == ge) a->envs[i] = NULL;
        }
        if (--a->refs == 0) {
            if (ge_host_archive == a) ge_host_archive = NULL;
            ge_archive_free(a);
        }
    }
    free(ge->trace);
    free(ge->seen);
    free(ge->seen_gen);
    free(ge->pending);
    free(ge->visits);
    free(ge->arena);
    memset(ge, 0, sizeof(*ge));
}

/* ---- per step, on the env's thread: reads the archive, writes only its own GoExplore ---- */

/* puf_reset: choose where this episode starts. GE_START_REAL: the env does its own reset with
 * *rng (the value is recorded as the route's seed). GE_START_RESTORED: the savestate was copied
 * back; the env only rebuilds what derives from it (observations). GE_START_REPLAY: *rng holds
 * the route's seed; the env does its own reset, then calls ge_replay. */
static inline int ge_start(GoExplore* ge, unsigned int* rng) {
    ge->kind = GE_KIND_REAL;
    GeArchive* a = ge->archive;
    if (a == NULL) return GE_START_REAL;
    if (++ge->gen == 0) {  /* wrapped: forget every stamp */
        memset(ge->seen_gen, 0, sizeof(uint32_t) * GE_SEEN_CAP);
        ge->gen = 1;
    }
    ge->seen_n = 0;
    ge->has_last = 0;
    ge->len = 0;
    ge->overflow = 0;
    ge->start_cell = -1;
    int real = ge->force_real || a->n == 0 || !(ge_uniform(&ge->rng) < a->p_archive);
    ge->force_real = 0;
    if (real) {
        ge->seed = *rng;
        return GE_START_REAL;
    }
    int i;
    if (a->frontier_n > 0 && ge_uniform(&ge->rng) < a->frontier_share) {
        i = a->frontier[ge_rand(&ge->rng) % (uint32_t)a->frontier_n];
        ge->kind = GE_KIND_FRONTIER;
    } else {
        i = ge_sample_rare(a, ge_uniform(&ge->rng));
        ge->kind = GE_KIND_RARE;
    }
    const GeCell* c = &a->cells[i];
    ge->start_cell = i;
    ge->seed = c->seed;
    ge->len = c->len;
    if (c->len > 0) memcpy(ge->trace, c->route, (size_t)c->len * (size_t)a->spec.action_bytes);
    if (a->replay) {
        ge->rng_ptr = rng;
        ge->rng_saved = *rng;
        *rng = c->seed;
        return GE_START_REPLAY;
    }
    memcpy(ge->spec.state, a->states + (size_t)i * (size_t)a->spec.state_size, (size_t)a->spec.state_size);
    return GE_START_RESTORED;
}

/* puf_reset after a GE_START_REPLAY start and the env's own reset: play the route back, then
 * check that it reached its cell (and its savestate, if the env has one) exactly. */
static inline void ge_replay(GoExplore* ge) {
    GeArchive* a = ge->archive;
    if (a == NULL || ge->start_cell < 0) return;
    int ab = a->spec.action_bytes;
    for (int t = 0; t < ge->len; t++) ge->spec.replay(ge->env, ge->trace + (size_t)t * ab);
    float progress;
    const GeCell* c = &a->cells[ge->start_cell];
    int same = ge->spec.cell(ge->env, &progress) == c->key;
    if (same && a->spec.state_size > 0)
        same = memcmp(ge->spec.state, a->states + (size_t)ge->start_cell * a->spec.state_size,
                      (size_t)a->spec.state_size) == 0;
    if (!same) ge->mismatches++;
    if (ge->rng_ptr != NULL) *ge->rng_ptr = ge->rng_saved;  /* the env's own stream goes on */
    ge->rng_ptr = NULL;
}

/* puf_step: record this step's actions (the env's decoded action indices, action_bytes bytes). */
static inline void ge_act(GoExplore* ge, const unsigned char* actions) {
    if (ge->archive == NULL || ge->overflow) return;
    int ab = ge->spec.action_bytes;
    if (ge->len >= ge->spec.max_route) {
        ge->overflow = 1;
        return;
    }
    memcpy(ge->trace + (size_t)ge->len * ab, actions, (size_t)ab);
    ge->len++;
}

/* 1: first entry this episode, 0: seen before, -1: the set is full (no dedupe). */
static inline int ge_seen_insert(GoExplore* ge, GeKey key) {
    uint32_t mask = GE_SEEN_CAP - 1;
    for (uint32_t h = (uint32_t)ge_mix64(key) & mask;; h = (h + 1) & mask) {
        if (ge->seen_gen[h] != ge->gen) {
            if (ge->seen_n >= GE_SEEN_CAP * 3 / 4) return -1;
            ge->seen_gen[h] = ge->gen;
            ge->seen[h] = key;
            ge->seen_n++;
            return 1;
        }
        if (ge->seen[h] == key) return 0;
    }
}

static inline void ge_pending_add(GoExplore* ge, GeKey key, float progress) {
    size_t ss = (size_t)ge->spec.state_size, rb = (size_t)ge->len * (size_t)ge->spec.action_bytes;
    if (ge->npending >= GE_PENDING_CAP || ge->arena_used + ss + rb > ge->arena_cap) {
        ge->dropped++;
        return;
    }
    GePending* p = &ge->pending[ge->npending++];
    p->key = key;
    p->seed = ge->seed;
    p->len = ge->len;
    p->progress = progress;
    p->at = ge->arena_used;
    if (ss > 0) memcpy(ge->arena + ge->arena_used, ge->spec.state, ss);
    if (rb > 0) memcpy(ge->arena + ge->arena_used + ss, ge->trace, rb);
    ge->arena_used += ss + rb;
}

/* After puf_reset and after each step the agent survived: note the cell it is in. Returns the
 * ghost reward (go_explore_ghost when this entry beats the archived route into the cell). */
static inline float ge_visit(GoExplore* ge) {
    GeArchive* a = ge->archive;
    if (a == NULL || ge->overflow) return 0.0f;
    float progress = 0.0f;
    GeKey key = ge->spec.cell(ge->env, &progress);
    if (ge->has_last && key == ge->last_key) return 0.0f;
    ge->last_key = key;
    ge->has_last = 1;
    int first = ge_seen_insert(ge, key);
    if (first == 0) return 0.0f;  /* entered earlier this episode, by a shorter route */
    if (first == 1 && ge->nvisits < GE_VISITS_CAP) ge->visits[ge->nvisits++] = key;
    int i = ge_find(a, key);
    if (i >= 0 && a->cells[i].len <= ge->len) return 0.0f;
    ge_pending_add(ge, key, progress);
    return i >= 0 ? (float)a->ghost : 0.0f;
}

/* puf_step: the episode reached the goal (call after ge_act of the winning step). */
static inline void ge_goal(GoExplore* ge) {
    if (ge->archive == NULL || ge->overflow) return;
    if (ge->goal_len >= 0 && ge->goal_len <= ge->len) return;
    size_t rb = (size_t)ge->len * (size_t)ge->spec.action_bytes;
    if (ge->arena_used + rb > ge->arena_cap) {
        ge->dropped++;
        return;
    }
    ge->goal_len = ge->len;
    ge->goal_seed = ge->seed;
    ge->goal_at = ge->arena_used;
    if (rb > 0) memcpy(ge->arena + ge->arena_used, ge->trace, rb);
    ge->arena_used += rb;
}

/* For the env's log: did the episode that is ending begin at the real start? */
static inline int ge_real_start(const GoExplore* ge) { return ge->kind == GE_KIND_REAL; }

/* ---- between steps, on the host thread: merge every env's findings in env order ---- */

static inline void ge_sync(GeArchive* a) {
    if (a == NULL) return;
    int ss = a->spec.state_size, merged = 0;
    for (int e = 0; e < a->num_envs; e++) {
        GoExplore* ge = a->envs[e];
        if (ge == NULL) continue;
        merged |= ge->npending > 0 || ge->nvisits > 0 || ge->goal_len >= 0;
        for (int k = 0; k < ge->npending; k++) {
            const GePending* p = &ge->pending[k];
            const unsigned char* at = ge->arena + p->at;
            ge_offer(a, p->key, p->seed, p->len, p->progress, at, at + ss);
        }
        if (ge->goal_len >= 0) ge_offer_goal(a, ge->goal_seed, ge->goal_len, ge->arena + ge->goal_at);
        for (int k = 0; k < ge->nvisits; k++) {
            int i = ge_find(a, ge->visits[k]);
            if (i >= 0) a->cells[i].episodes++;
        }
        if (ge->nvisits > 0) a->cum_dirty = 1;
        a->dropped_pending += ge->dropped;
        a->mismatches += ge->mismatches;
        ge->npending = ge->nvisits = 0;
        ge->arena_used = 0;
        ge->goal_len = -1;
        ge->dropped = ge->mismatches = 0;
    }
    if (a->cum_dirty && a->n > 0) ge_rebuild_weights(a);
    if (merged) a->clock++;  /* the clock orders finds: it ticks on syncs that merged something */
}

/* ---- persistence: one little-endian blob (the host writes it to disk atomically) ----
 *
 *   "PGXARCH1"  u32 version (1)  u32 state_size  u32 action_bytes  u32 max_route
 *   u64 fingerprint  u64 clock  u64 inserted  u64 improved  u64 dropped_full
 *   u32 num_cells  i32 goal_len (-1: none)  u32 goal_seed  u64 goal_found  goal route bytes
 *   per cell: u64 key  u32 seed  i32 len  f32 progress  u32 episodes  u64 found
 *             state bytes  route bytes (len * action_bytes)
 *   u32 CRC-32 (zlib's) of everything before it
 */
#define GE_MAGIC "PGXARCH1"
#define GE_VERSION 1u

typedef struct GeWriter { unsigned char* buf; size_t cap, at; } GeWriter;

static inline void ge_put(GeWriter* w, const void* p, size_t n) {
    if (w->at + n <= w->cap && n > 0) memcpy(w->buf + w->at, p, n);
    w->at += n;
}
#define GE_PUT(w, type, v) do { type ge_v_ = (type)(v); ge_put((w), &ge_v_, sizeof ge_v_); } while (0)

/* CRC-32 (IEEE 802.3, reflected, as zlib.crc32), bitwise: files are written once per checkpoint. */
static inline uint32_t ge_crc32(const unsigned char* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Writes the archive into buf (if cap suffices); returns the bytes it needs. */
static inline size_t ge_save(const GeArchive* a, unsigned char* buf, size_t cap) {
    GeWriter w = {buf, cap, 0};
    size_t ab = (size_t)a->spec.action_bytes, ss = (size_t)a->spec.state_size;
    ge_put(&w, GE_MAGIC, 8);
    GE_PUT(&w, uint32_t, GE_VERSION);
    GE_PUT(&w, uint32_t, ss);
    GE_PUT(&w, uint32_t, ab);
    GE_PUT(&w, uint32_t, a->spec.max_route);
    GE_PUT(&w, uint64_t, a->spec.fingerprint);
    GE_PUT(&w, uint64_t, a->clock);
    GE_PUT(&w, uint64_t, a->inserted);
    GE_PUT(&w, uint64_t, a->improved);
    GE_PUT(&w, uint64_t, a->dropped_full);
    GE_PUT(&w, uint32_t, a->n);
    GE_PUT(&w, int32_t, a->goal.len);
    GE_PUT(&w, uint32_t, a->goal.seed);
    GE_PUT(&w, uint64_t, a->goal.found);
    if (a->goal.len > 0) ge_put(&w, a->goal.route, (size_t)a->goal.len * ab);
    for (int i = 0; i < a->n; i++) {
        const GeCell* c = &a->cells[i];
        GE_PUT(&w, uint64_t, c->key);
        GE_PUT(&w, uint32_t, c->seed);
        GE_PUT(&w, int32_t, c->len);
        GE_PUT(&w, float, c->progress);
        GE_PUT(&w, uint32_t, c->episodes);
        GE_PUT(&w, uint64_t, c->found);
        ge_put(&w, a->states + (size_t)i * ss, ss);
        if (c->len > 0) ge_put(&w, c->route, (size_t)c->len * ab);
    }
    GE_PUT(&w, uint32_t, w.at <= cap ? ge_crc32(buf, w.at) : 0);
    return w.at;
}

typedef struct GeReader { const unsigned char* buf; size_t n, at; int ok; } GeReader;

static inline void ge_get(GeReader* r, void* p, size_t n) {
    if (!r->ok || r->at + n > r->n) {
        r->ok = 0;
        memset(p, 0, n);
        return;
    }
    memcpy(p, r->buf + r->at, n);
    r->at += n;
}

/* Replaces the archive's cells with the blob's; 0 and a message in err when it does not fit. */
static inline int ge_load(GeArchive* a, const unsigned char* buf, size_t n, char* err, int err_len) {
    GeReader r = {buf, n, 0, 1};
    char magic[8];
    uint32_t version, ss, ab, max_route, num, goal_seed;
    int32_t goal_len;
    uint64_t fingerprint, clock, inserted, improved, dropped, goal_found;
    if (n < 12) {
        snprintf(err, err_len, "the file is %zu bytes: too short to be an archive", n);
        return 0;
    }
    uint32_t want;
    memcpy(&want, buf + n - 4, 4);
    ge_get(&r, magic, 8);
    if (memcmp(magic, GE_MAGIC, 8) != 0) {
        snprintf(err, err_len, "not a Go-Explore archive (no %s header)", GE_MAGIC);
        return 0;
    }
    if (ge_crc32(buf, n - 4) != want) {
        snprintf(err, err_len, "the archive is corrupt or truncated (its checksum does not match)");
        return 0;
    }
    ge_get(&r, &version, 4);
    ge_get(&r, &ss, 4);
    ge_get(&r, &ab, 4);
    ge_get(&r, &max_route, 4);
    ge_get(&r, &fingerprint, 8);
    if (version != GE_VERSION) {
        snprintf(err, err_len, "archive format version %u; this build reads version %u", version, GE_VERSION);
        return 0;
    }
    if (ss != (uint32_t)a->spec.state_size || ab != (uint32_t)a->spec.action_bytes ||
        max_route != (uint32_t)a->spec.max_route || fingerprint != a->spec.fingerprint) {
        snprintf(err, err_len, "the archive was made for another env config (state %u B, %u action "
                 "bytes, routes up to %u steps, fingerprint %016llx); this env has %d B, %d, %d, %016llx "
                 "(a different level, frameskip or time limit?)", ss, ab, max_route,
                 (unsigned long long)fingerprint, a->spec.state_size, a->spec.action_bytes,
                 a->spec.max_route, (unsigned long long)a->spec.fingerprint);
        return 0;
    }
    ge_get(&r, &clock, 8);
    ge_get(&r, &inserted, 8);
    ge_get(&r, &improved, 8);
    ge_get(&r, &dropped, 8);
    ge_get(&r, &num, 4);
    if (num > (uint32_t)a->max_cells) {
        snprintf(err, err_len, "the archive holds %u cells; go_explore_cells is %d", num, a->max_cells);
        return 0;
    }
    ge_clear_cells(a);
    ge_get(&r, &goal_len, 4);
    ge_get(&r, &goal_seed, 4);
    ge_get(&r, &goal_found, 8);
    if (goal_len < -1 || goal_len > (int32_t)max_route) r.ok = 0;
    if (r.ok && goal_len >= 0) {
        unsigned char* route = (unsigned char*)ge_alloc((size_t)(goal_len > 0 ? goal_len : 1) * ab);
        ge_get(&r, route, (size_t)goal_len * ab);
        ge_set_route(a, &a->goal, route, goal_len);
        a->goal.seed = goal_seed;
        a->goal.found = goal_found;
        free(route);
    }
    ge_reserve(a, (int)num);
    unsigned char* route = (unsigned char*)ge_alloc((size_t)max_route * ab + 1);
    for (uint32_t k = 0; k < num && r.ok; k++) {
        GeCell c;
        memset(&c, 0, sizeof c);
        ge_get(&r, &c.key, 8);
        ge_get(&r, &c.seed, 4);
        ge_get(&r, &c.len, 4);
        ge_get(&r, &c.progress, 4);
        ge_get(&r, &c.episodes, 4);
        ge_get(&r, &c.found, 8);
        if (c.len < 0 || c.len > (int32_t)max_route || ge_find(a, c.key) >= 0) {
            r.ok = 0;
            break;
        }
        int i = a->n++;
        ge_get(&r, a->states + (size_t)i * ss, ss);
        ge_get(&r, route, (size_t)c.len * ab);
        a->cells[i] = c;
        ge_set_route(a, &a->cells[i], route, c.len);
        ge_table_put(a, i);
        if (c.progress > a->max_progress) a->max_progress = c.progress;
        ge_frontier_update(a, i);
    }
    free(route);
    if (!r.ok || r.at != n - 4) {
        ge_clear_cells(a);
        snprintf(err, err_len, "the archive's contents are inconsistent (bad lengths or duplicate cells)");
        return 0;
    }
    a->clock = clock;
    a->inserted = inserted;
    a->improved = improved;
    a->dropped_full = dropped;
    for (int e = 0; e < a->num_envs; e++) {  /* findings against the old archive are dropped */
        GoExplore* ge = a->envs[e];
        if (ge == NULL) continue;
        ge->npending = ge->nvisits = 0;
        ge->arena_used = 0;
        ge->goal_len = -1;
    }
    if (a->n > 0) ge_rebuild_weights(a);
    return 1;
}

#endif /* GOEXPLORE_H */
