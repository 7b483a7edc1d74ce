/* jsenv.h — a p5.js-style JavaScript game as a PufferLib env: one QuickJS-ng runtime per env.
 *
 * The game is one .js file with global setup() and draw() (p5.js style) plus the RL lifecycle
 * resetGame(seed) and getGameState() -> {score, lives, gameState}. envs/js/env.py builds this
 * header once per picture size and action count (JS_PICTURE_* and JS_NUM_ACTIONS are defined
 * by a small generated header that includes this one) and links the engine objects it compiled
 * once from the quickjs-ng source distribution.
 *
 * Division of labour: envs/js/p5.js (the prelude, evaluated in every runtime before the game, and
 * in the browser page too) holds all p5 state (colors, modes, transforms, the key table) and
 * turns every drawing call into four primitives on pixel coordinates; this file implements those
 * primitives on the env's canvases (p5_poly, p5_ellipse, p5_image, p5_background), and
 * envs/js/web/raster.js implements the same four with the same arithmetic, in doubles, in the
 * same order, so the browser shows exactly the frames the agent sees. No anti-aliasing: a pixel
 * is covered when its center is inside the shape.
 *
 * Threads: a QuickJS runtime may run on one thread at a time, and it measures its stack from
 * the thread that last declared itself (JS_UpdateStackTop), so every entry into an env's runtime
 * calls JS_UpdateStackTop first: the vecenv may step an env on a different thread from one call
 * to the next (another thread count, another env buffer). Envs share nothing, so the vecenv's
 * threads step them in parallel.
 *
 * Limits: each runtime has a memory limit ([js] memory_mb) and an interrupt handler that stops a
 * call into the game after [js] step_mops million JS operations (counted, not timed, so the limit
 * does not depend on the machine's load); either becomes an error naming the game.
 */
#ifndef PUF_JSENV_H
#define PUF_JSENV_H

/* Frames must be bit-identical to the browser's, which computes in IEEE doubles without fused
 * multiply-add. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#ifndef JS_PICTURE_WIDTH
#define JS_PICTURE_WIDTH 64
#endif
#ifndef JS_PICTURE_HEIGHT
#define JS_PICTURE_HEIGHT 64
#endif
#ifndef JS_PICTURE_CHANNELS
#define JS_PICTURE_CHANNELS 3
#endif
#ifndef JS_NUM_ACTIONS
#define JS_NUM_ACTIONS 8
#endif

typedef unsigned char obs_t;
#include "pufferenv.h"
#include "quickjs.h"

#define OBS_SIZE (JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * JS_PICTURE_CHANNELS)
#define NUM_ATNS 1
#define ACT_SIZES {JS_NUM_ACTIONS}
#define PICTURE_WIDTH JS_PICTURE_WIDTH
#define PICTURE_HEIGHT JS_PICTURE_HEIGHT
#define PICTURE_CHANNELS JS_PICTURE_CHANNELS

#define JS_MAX_CANVASES 64
#define JS_MAX_CANVAS_PIXELS (1 << 20)
#define JS_FBUF 16384 /* doubles the prelude passes geometry in */
#define JS_ERR 2048

struct Log {
    float perf;           /* 1 if the episode ended in WIN */
    float score;          /* getGameState().score at the end */
    float lives;
    float wins;
    float episode_length;
    float episode_return;
    float n;
};

typedef struct JsP5 JsP5; /* envs/js/p5native.h */

typedef struct JsCanvas {
    unsigned char* px; /* [h][w][ch] */
    int w, h, ch;      /* ch 3: the picture (opaque); 4: a createGraphics buffer (RGBA) */
} JsCanvas;

struct Env {
    Log log;
    Agent agents[1];
    int num_agents;
    unsigned int rng;
    int tag;
    int boundary_reached;
    JSRuntime* rt;
    JSContext* ctx;
    JSValue host;     /* the prelude's __puf object */
    JSValue fn_step, fn_hold, fn_reset;
    double fbuf[JS_FBUF];
    double out[4];    /* score, lives, state code (0 playing, 1 WIN, 2 GAMEOVER, 3 EXIT) */
    double final_out[4];           /* out at the last episode's end */
    unsigned char* final_frame;    /* canvas 0 at the last episode's end (replays compare it) */
    JsCanvas canvas[JS_MAX_CANVASES];
    int num_canvases, target;
    long ops_left, ops_budget;
    size_t memory_limit;
    int max_steps, steps, failed;
    int frameskip;    /* frames per step: the first with the action's presses, the rest held keys only */
    int rasterize;    /* 0: the primitives draw nothing (tools/bench_env.py times the game alone) */
    int native_p5;    /* 1: the frequent p5 calls in C (p5native.h); 0: the prelude's JS for all */
    JsP5* p5;
    double last_score, episode_return;
    char game[1024];
    char err[JS_ERR];
};


static const char* js_basename(const char* path) {
    const char* b = path;
    for (const char* p = path; *p; p++)
        if (*p == '/' || *p == '\\') b = p + 1;
    return b;
}

static void js_fail(Env* env, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(env->err, sizeof(env->err), fmt, ap);
    va_end(ap);
    env->failed = 1;  /* the host finds the message in the env (envs/js/jsvec.c) */
}

/* ---- errors: the game's file and line first, then the JS stack ---------------------------- */
/* ":<line>" of the first frame of `stack` in the game's file (where = "" if none). */
static void js_game_line(Env* env, const char* stack, char* where, size_t n) {
    const char* hit = stack ? strstr(stack, js_basename(env->game)) : NULL;
    if (hit == NULL && stack) hit = strstr(stack, env->game);
    const char* colon = hit ? strchr(hit, ':') : NULL;
    where[0] = '\0';
    if (colon != NULL) snprintf(where, n, ":%d", atoi(colon + 1));
}

static void js_report(Env* env, const char* during) {
    JSContext* ctx = env->ctx;
    JSValue exc = JS_GetException(ctx);
    const char* name = js_basename(env->game);
    if (env->ops_left <= 0) {  /* the interrupt handler stopped it: the line it was running */
        char where[64] = "";
        JSValue st = JS_IsError(exc) ? JS_GetPropertyStr(ctx, exc, "stack") : JS_UNDEFINED;
        const char* stack = JS_IsString(st) ? JS_ToCString(ctx, st) : NULL;
        js_game_line(env, stack, where, sizeof where);
        js_fail(env, "%s%s: %s ran more than %ld million JS operations without returning (an "
                "endless loop?); raise [js] step_mops if the game really needs more (%s)",
                name, where, during, env->ops_budget / 100, env->game);
        if (stack) JS_FreeCString(ctx, stack);
        JS_FreeValue(ctx, st);
        JS_FreeValue(ctx, exc);
        return;
    }
    const char* msg = JS_ToCString(ctx, exc);
    const char* stack = NULL;
    JSValue st = JS_UNDEFINED;
    if (JS_IsError(exc)) {
        st = JS_GetPropertyStr(ctx, exc, "stack");
        if (JS_IsString(st)) stack = JS_ToCString(ctx, st);
    }
    const char* text = msg ? msg : "(an exception that cannot be printed)";
    int oom = strstr(text, "out of memory") != NULL;
    if (!oom && JS_IsNull(exc)) { /* out of memory even for the error object: QuickJS throws null */
        JSMemoryUsage use;
        JS_ComputeMemoryUsage(env->rt, &use);
        oom = use.malloc_size + ((size_t)1 << 20) >= env->memory_limit;
    }
    if (oom) {
        js_fail(env, "%s: the game's JS heap ran out of its %zu MB during %s (runaway "
                "allocation?); raise [js] memory_mb if the game really needs more (%s)", name,
                env->memory_limit >> 20, during, env->game);
    } else {
        char where[64];  /* the first frame of the stack that is in the game's file gives its line */
        js_game_line(env, stack, where, sizeof where);
        js_fail(env, "%s%s: %s during %s\n%s(game file %s)", name, where, text, during,
                stack && *stack ? stack : "", env->game);
    }
    if (stack) JS_FreeCString(ctx, stack);
    if (msg) JS_FreeCString(ctx, msg);
    JS_FreeValue(ctx, st);
    JS_FreeValue(ctx, exc);
}

static int js_interrupt(JSRuntime* rt, void* opaque) {
    (void)rt;
    Env* env = (Env*)opaque;
    return --env->ops_left <= 0;
}

/* ---- the four drawing primitives (envs/js/web/raster.js has the same rules) --------------- */
static inline void js_blend(JsCanvas* c, int x, int y, int r, int g, int b, int a) {
    unsigned char* p = c->px + ((size_t)y * c->w + x) * c->ch;
    if (a >= 255) {
        p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b;
        if (c->ch == 4) p[3] = 255;
        return;
    }
    if (a <= 0) return;
    if (c->ch == 4 && p[3] == 0) {
        p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b; p[3] = (unsigned char)a;
        return;
    }
    int k = 255 - a;
    p[0] = (unsigned char)((r * a + p[0] * k + 127) / 255);
    p[1] = (unsigned char)((g * a + p[1] * k + 127) / 255);
    p[2] = (unsigned char)((b * a + p[2] * k + 127) / 255);
    if (c->ch == 4) p[3] = (unsigned char)(a + (p[3] * k + 127) / 255);
}

static inline void js_span(JsCanvas* c, int y, int x0, int x1, int r, int g, int b, int a) {
    if (y < 0 || y >= c->h) return;
    if (x0 < 0) x0 = 0;
    if (x1 > c->w) x1 = c->w;
    if (a >= 255 && c->ch == 3) { /* opaque on the picture: what js_blend writes, without its tests */
        unsigned char* p = c->px + ((size_t)y * c->w + x0) * 3;
        for (int x = x0; x < x1; x++, p += 3) { p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b; }
        return;
    }
    if (a <= 0) return;
    for (int x = x0; x < x1; x++) js_blend(c, x, y, r, g, b, a);
}

/* Polygon (n vertices in pixel coordinates, f[2i], f[2i+1]), nonzero winding: pixel (x, y) is
 * covered when its center (x + 0.5, y + 0.5) is inside. */
static void p5_poly(JsCanvas* c, const double* f, int n, int r, int g, int b, int a) {
    if (n < 3) return;
    double ymin = f[1], ymax = f[1];
    for (int i = 0; i < n; i++) {
        double x = f[2 * i], y = f[2 * i + 1];
        if (!(x == x) || !(y == y) || x - x != 0 || y - y != 0) return; /* NaN or infinite */
        if (y < ymin) ymin = y;
        if (y > ymax) ymax = y;
    }
    int y0 = (int)fmax(ceil(ymin - 0.5), 0.0), y1 = (int)fmin(floor(ymax - 0.5), (double)c->h - 1);
    /* an axis-aligned rectangle (rect() without rotation, either vertex order): each row between
     * its two vertical edges, which the general loop below would find at x = their x exactly
     * (ax + (yc - ay) * 0 / (by - ay)) on the rows with ymin <= yc < ymax */
    int h1 = n == 4 && f[0] == f[6] && f[2] == f[4] && f[1] == f[3] && f[5] == f[7];
    int h2 = n == 4 && f[0] == f[2] && f[4] == f[6] && f[1] == f[7] && f[3] == f[5];
    if (h1 || h2) {
        double xa = h1 ? f[2] : f[4], xb = f[0];
        double lo = ceil(fmin(xa, xb) - 0.5), hi = ceil(fmax(xa, xb) - 0.5);
        if (lo < 0) lo = 0;
        if (hi > c->w) hi = c->w;
        if (!(lo < hi)) return;
        for (int y = y0; y <= y1; y++)
            if (y + 0.5 < ymax) js_span(c, y, (int)lo, (int)hi, r, g, b, a);
        return;
    }
    double xs[512];
    int dirs[512];
    for (int y = y0; y <= y1; y++) {
        double yc = y + 0.5;
        int m = 0;
        for (int i = 0; i < n && m < 512; i++) {
            int j = i + 1 == n ? 0 : i + 1;
            double ax = f[2 * i], ay = f[2 * i + 1], bx = f[2 * j], by = f[2 * j + 1];
            int d;
            if (ay <= yc && yc < by) d = 1;
            else if (by <= yc && yc < ay) d = -1;
            else continue;
            double x = ax + (yc - ay) * (bx - ax) / (by - ay);
            int k = m++;
            while (k > 0 && xs[k - 1] > x) { xs[k] = xs[k - 1]; dirs[k] = dirs[k - 1]; k--; }
            xs[k] = x;
            dirs[k] = d;
        }
        int wind = 0;
        double start = 0;
        for (int k = 0; k < m; k++) {
            int before = wind;
            wind += dirs[k];
            if (before == 0 && wind != 0) start = xs[k];
            else if (before != 0 && wind == 0) {
                double lo = ceil(start - 0.5), hi = ceil(xs[k] - 0.5);
                if (lo < 0) lo = 0;
                if (hi > c->w) hi = c->w;
                if (lo < hi) js_span(c, y, (int)lo, (int)hi, r, g, b, a);
            }
        }
    }
}

/* Ellipse, ring or sector. f: cx cy (pixel center), ia ib ic id (pixel offset -> local u, v),
 * ku kv (outer: u²ku + v²kv <= 1), kui kvi (inner, excluded when < 1; 0 0 = none), mode (0
 * whole, 1 sector of sweep <= pi, 2 larger sector), sx sy ex ey (start/end directions, local),
 * x0 y0 x1 y1 (pixels to test). */
static void p5_ellipse(JsCanvas* c, const double* f, int r, int g, int b, int a) {
    double cx = f[0], cy = f[1], ia = f[2], ib = f[3], ic = f[4], id = f[5];
    double ku = f[6], kv = f[7], kui = f[8], kvi = f[9];
    int mode = (int)f[10];
    double sx = f[11], sy = f[12], ex = f[13], ey = f[14];
    for (int i = 0; i < 19; i++)
        if (!(f[i] == f[i]) || f[i] - f[i] != 0) return;
    int x0 = (int)fmax(f[15], 0.0), y0 = (int)fmax(f[16], 0.0);
    int x1 = (int)fmin(f[17], (double)c->w), y1 = (int)fmin(f[18], (double)c->h);
    int inner = kui != 0 || kvi != 0;
    for (int y = y0; y < y1; y++) {
        for (int x = x0; x < x1; x++) {
            double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
            double u = ia * dx + ib * dy, v = ic * dx + id * dy;
            if (u * u * ku + v * v * kv > 1) continue;
            if (inner && u * u * kui + v * v * kvi < 1) continue;
            if (mode != 0) {
                double cs = sx * v - sy * u, ce = u * ey - v * ex;
                if (mode == 1 ? !(cs >= 0 && ce >= 0) : (cs < 0 && ce < 0)) continue;
            }
            js_blend(c, x, y, r, g, b, a);
        }
    }
}

/* Draws canvas `src` (nearest pixel): destination pixel center (px, py) samples source pixel
 * (floor(a px + b py + e), floor(c px + d py + f)); f: a b c d e f x0 y0 x1 y1. */
static void p5_image(JsCanvas* dst, const JsCanvas* src, const double* f) {
    for (int i = 0; i < 10; i++)
        if (!(f[i] == f[i]) || f[i] - f[i] != 0) return;
    int x0 = (int)fmax(f[6], 0.0), y0 = (int)fmax(f[7], 0.0);
    int x1 = (int)fmin(f[8], (double)dst->w), y1 = (int)fmin(f[9], (double)dst->h);
    for (int y = y0; y < y1; y++) {
        for (int x = x0; x < x1; x++) {
            double px = x + 0.5, py = y + 0.5;
            double sxf = floor(f[0] * px + f[1] * py + f[4]), syf = floor(f[2] * px + f[3] * py + f[5]);
            if (sxf < 0 || syf < 0 || sxf >= src->w || syf >= src->h) continue;
            const unsigned char* s = src->px + ((size_t)syf * src->w + (size_t)sxf) * src->ch;
            js_blend(dst, x, y, s[0], s[1], s[2], src->ch == 4 ? s[3] : 255);
        }
    }
}

static void p5_background(JsCanvas* c, int r, int g, int b, int a) {
    if (a >= 255 && c->ch == 3 && c->h > 0) { /* opaque: one row, copied */
        size_t row = (size_t)c->w * 3;
        js_span(c, 0, 0, c->w, r, g, b, a);
        for (int y = 1; y < c->h; y++) memcpy(c->px + y * row, c->px, row);
        return;
    }
    for (int y = 0; y < c->h; y++) js_span(c, y, 0, c->w, r, g, b, a);
}

/* ---- the native object the prelude receives (__native) ------------------------------------ */
static Env* js_env(JSContext* ctx) { return (Env*)JS_GetContextOpaque(ctx); }

static int js_ints(JSContext* ctx, int argc, JSValueConst* argv, int* out, int n) {
    for (int i = 0; i < n; i++) {
        double v = 0;
        if (i < argc && JS_ToFloat64(ctx, &v, argv[i]) < 0) return -1;
        out[i] = (v == v && v > -2e9 && v < 2e9) ? (int)v : 0;
    }
    return 0;
}

static JSValue js_n_poly(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    if (!env->rasterize) return JS_UNDEFINED;
    int v[5];
    if (js_ints(ctx, argc, argv, v, 5) < 0) return JS_EXCEPTION;
    if (v[0] < 0 || v[0] > JS_FBUF / 2) return JS_ThrowRangeError(ctx, "too many vertices (%d)", v[0]);
    p5_poly(&env->canvas[env->target], env->fbuf, v[0], v[1], v[2], v[3], v[4]);
    return JS_UNDEFINED;
}

static JSValue js_n_ellipse(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    if (!env->rasterize) return JS_UNDEFINED;
    int v[4];
    if (js_ints(ctx, argc, argv, v, 4) < 0) return JS_EXCEPTION;
    p5_ellipse(&env->canvas[env->target], env->fbuf, v[0], v[1], v[2], v[3]);
    return JS_UNDEFINED;
}

static JSValue js_n_image(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    if (!env->rasterize) return JS_UNDEFINED;
    int v[1];
    if (js_ints(ctx, argc, argv, v, 1) < 0) return JS_EXCEPTION;
    if (v[0] < 0 || v[0] >= env->num_canvases || v[0] == env->target) return JS_UNDEFINED;
    p5_image(&env->canvas[env->target], &env->canvas[v[0]], env->fbuf);
    return JS_UNDEFINED;
}

static JSValue js_n_background(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    if (!env->rasterize) return JS_UNDEFINED;
    int v[4];
    if (js_ints(ctx, argc, argv, v, 4) < 0) return JS_EXCEPTION;
    p5_background(&env->canvas[env->target], v[0], v[1], v[2], v[3]);
    return JS_UNDEFINED;
}

/* clear(): a graphics buffer becomes transparent, the picture black. */
static JSValue js_n_clear(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val; (void)argc; (void)argv;
    Env* env = js_env(ctx);
    JsCanvas* c = &env->canvas[env->target];
    memset(c->px, 0, (size_t)c->w * c->h * c->ch);
    return JS_UNDEFINED;
}

static JSValue js_n_target(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    int v[1];
    if (js_ints(ctx, argc, argv, v, 1) < 0) return JS_EXCEPTION;
    if (v[0] < 0 || v[0] >= env->num_canvases) return JS_ThrowRangeError(ctx, "no canvas %d", v[0]);
    env->target = v[0];
    return JS_UNDEFINED;
}

/* canvas(w, h) -> id of a new transparent RGBA buffer (createGraphics). */
static JSValue js_n_canvas(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    int v[2];
    if (js_ints(ctx, argc, argv, v, 2) < 0) return JS_EXCEPTION;
    if (env->num_canvases >= JS_MAX_CANVASES)
        return JS_ThrowRangeError(ctx, "createGraphics: more than %d buffers", JS_MAX_CANVASES - 1);
    if (v[0] < 1 || v[1] < 1 || (long)v[0] * v[1] > JS_MAX_CANVAS_PIXELS)
        return JS_ThrowRangeError(ctx, "createGraphics: %d x %d pixels is out of range", v[0], v[1]);
    JsCanvas* c = &env->canvas[env->num_canvases];
    c->px = (unsigned char*)calloc((size_t)v[0] * v[1], 4);
    if (c->px == NULL) return JS_ThrowOutOfMemory(ctx);
    c->w = v[0];
    c->h = v[1];
    c->ch = 4;
    return JS_NewInt32(ctx, env->num_canvases++);
}

static const JSCFunctionListEntry js_native_funcs[] = {
    JS_CFUNC_DEF("poly", 5, js_n_poly),
    JS_CFUNC_DEF("ellipse", 4, js_n_ellipse),
    JS_CFUNC_DEF("image", 1, js_n_image),
    JS_CFUNC_DEF("background", 4, js_n_background),
    JS_CFUNC_DEF("clear", 0, js_n_clear),
    JS_CFUNC_DEF("target", 1, js_n_target),
    JS_CFUNC_DEF("canvas", 2, js_n_canvas),
};

#include "p5native.h"

/* ---- lifecycle ---------------------------------------------------------------------------- */
static char* js_read_file(const char* path, size_t* len) {
    FILE* fp = fopen(path, "rb");
    if (fp == NULL) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char* buf = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
    if (buf != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) { free(buf); buf = NULL; }
    fclose(fp);
    if (buf != NULL) { buf[n] = '\0'; *len = (size_t)n; }
    return buf;
}

/* Compiled scripts, kept per module: the second env of a file reuses the first one's bytecode
 * instead of parsing the prelude and the game again (the source is compared, so an edited file is
 * compiled afresh). A lock, as two vecenvs may be created at once from two Python threads. */
typedef struct JsCompiled { char* path; char* src; size_t len; uint8_t* bc; size_t bc_len; } JsCompiled;
static JsCompiled js_compiled[2];
static char js_compiled_busy;

static void js_compiled_lock(void) {
    while (__atomic_test_and_set(&js_compiled_busy, __ATOMIC_ACQUIRE)) {
    }
}
static void js_compiled_unlock(void) { __atomic_clear(&js_compiled_busy, __ATOMIC_RELEASE); }

static JsCompiled* js_compiled_for(const char* path, const char* src, size_t len) {
    for (int i = 0; i < 2; i++) {
        JsCompiled* c = &js_compiled[i];
        if (c->path && strcmp(c->path, path) == 0 && c->len == len && memcmp(c->src, src, len) == 0) return c;
    }
    return NULL;
}

static void js_compiled_keep(const char* path, const char* src, size_t len, const uint8_t* bc, size_t bc_len) {
    JsCompiled* c = &js_compiled[0];
    for (int i = 0; i < 2; i++)  /* the slot of this path, else the first free one, else slot 1 */
        if (js_compiled[i].path && strcmp(js_compiled[i].path, path) == 0) { c = &js_compiled[i]; goto have; }
    c = js_compiled[0].path == NULL ? &js_compiled[0] : &js_compiled[1];
have:
    free(c->path); free(c->src); free(c->bc);
    c->path = dict_strdup(path);
    c->src = (char*)malloc(len + 1);
    c->bc = (uint8_t*)malloc(bc_len);
    if (c->path == NULL || c->src == NULL || c->bc == NULL) {
        free(c->path); free(c->src); free(c->bc);
        memset(c, 0, sizeof(*c));
        return;
    }
    memcpy(c->src, src, len);
    c->len = len;
    memcpy(c->bc, bc, bc_len);
    c->bc_len = bc_len;
}

static int js_eval_file(Env* env, const char* path, const char* during) {
    size_t len = 0;
    char* src = js_read_file(path, &len);
    if (src == NULL) {
        js_fail(env, "cannot read %s", path);
        return 0;
    }
    env->ops_left = env->ops_budget * 4;
    JSContext* ctx = env->ctx;
    js_compiled_lock();
    JsCompiled* done = js_compiled_for(path, src, len);
    JSValue fn;
    if (done != NULL) {
        fn = JS_ReadObject(ctx, done->bc, done->bc_len, JS_READ_OBJ_BYTECODE);
        js_compiled_unlock();
    } else {
        js_compiled_unlock();
        fn = JS_Eval(ctx, src, len, path, JS_EVAL_TYPE_GLOBAL | JS_EVAL_FLAG_COMPILE_ONLY);
        if (!JS_IsException(fn)) {
            size_t bc_len = 0;
            uint8_t* bc = JS_WriteObject(ctx, &bc_len, fn, JS_WRITE_OBJ_BYTECODE);
            if (bc != NULL) {
                js_compiled_lock();
                js_compiled_keep(path, src, len, bc, bc_len);
                js_compiled_unlock();
                js_free(ctx, bc);
            }
        }
    }
    free(src);
    JSValue r = JS_IsException(fn) ? fn : JS_EvalFunction(ctx, fn);  /* EvalFunction frees fn */
    if (JS_IsException(r)) {
        js_report(env, during);
        return 0;
    }
    JS_FreeValue(ctx, r);
    return 1;
}

/* Calls host.<fn>(arg); 1 = ok. */
static int js_call(Env* env, JSValue fn, double arg, const char* during, long budget) {
    JS_UpdateStackTop(env->rt);
    env->ops_left = budget;
    JSValue a = JS_NewFloat64(env->ctx, arg);
    JSValue r = JS_Call(env->ctx, fn, env->host, 1, &a);
    JS_FreeValue(env->ctx, a);
    if (JS_IsException(r)) {
        js_report(env, during);
        return 0;
    }
    JS_FreeValue(env->ctx, r);
    return 1;
}

static void js_write_obs(Env* env) {
    const unsigned char* px = env->canvas[0].px;
    unsigned char* obs = env->agents[0].observations;
    if (obs == NULL) return;
#if JS_PICTURE_CHANNELS == 3
    memcpy(obs, px, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
#else
    for (int i = 0; i < JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT; i++) {
        const unsigned char* p = px + 3 * i;  /* ITU-R BT.601 luma, integer */
        obs[i] = (unsigned char)((p[0] * 77 + p[1] * 150 + p[2] * 29 + 128) >> 8);
    }
#endif
}

static void js_set_fn(Env* env, JSValue* slot, const char* name) {
    *slot = JS_GetPropertyStr(env->ctx, env->host, name);
}

void puf_init(Env* env, Dict* kwargs) {
    env->num_agents = 1;
    env->host = env->fn_step = env->fn_hold = env->fn_reset = JS_UNDEFINED;
    const char* game = dict_get_str(kwargs, "js_game");
    const char* prelude = dict_get_str(kwargs, "js_prelude");
    const char* actions = dict_get_str(kwargs, "js_actions");
    double mem_mb = dict_get(kwargs, "memory_mb");
    double mops = dict_get(kwargs, "step_mops");
    env->max_steps = (int)dict_get(kwargs, "max_steps");
    env->frameskip = (int)dict_get(kwargs, "frameskip");
    if (env->frameskip < 1) env->frameskip = 1;
    env->rasterize = dict_get(kwargs, "rasterize") != 0;
    env->native_p5 = dict_get(kwargs, "native_p5") != 0;
    snprintf(env->game, sizeof(env->game), "%s", game);
    env->memory_limit = (size_t)(mem_mb > 1 ? mem_mb : 1) << 20;
    env->ops_budget = (long)((mops > 0.01 ? mops : 0.01) * 100.0); /* a handler call per ~10K ops */

    JsCanvas* c = &env->canvas[0];
    c->w = JS_PICTURE_WIDTH;
    c->h = JS_PICTURE_HEIGHT;
    c->ch = 3;
    c->px = (unsigned char*)calloc((size_t)c->w * c->h, 3);
    env->final_frame = (unsigned char*)calloc((size_t)c->w * c->h, 3);
    env->num_canvases = 1;
    env->p5 = (JsP5*)calloc(1, sizeof(JsP5));
    if (env->p5 != NULL) p5_native_init(env);
    env->rt = JS_NewRuntime();
    env->ctx = env->rt ? JS_NewContext(env->rt) : NULL;
    if (c->px == NULL || env->ctx == NULL || env->p5 == NULL) {
        js_fail(env, "%s: out of memory creating its JS runtime", js_basename(game));
        return;
    }
    JS_SetMemoryLimit(env->rt, env->memory_limit);
    JS_SetInterruptHandler(env->rt, js_interrupt, env);
    JS_SetContextOpaque(env->ctx, env);
    JSContext* ctx = env->ctx;
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue native = JS_NewObject(ctx);
    JS_SetPropertyFunctionList(ctx, native, js_native_funcs,
                               (int)(sizeof(js_native_funcs) / sizeof(js_native_funcs[0])));
    JSValue fb = JS_NewArrayBuffer(ctx, (uint8_t*)env->fbuf, sizeof(env->fbuf), 0, NULL, NULL, false);
    JSValue ob = JS_NewArrayBuffer(ctx, (uint8_t*)env->out, sizeof(env->out), 0, NULL, NULL, false);
    JS_SetPropertyStr(ctx, native, "fbuf", fb);
    JS_SetPropertyStr(ctx, native, "obuf", ob);
    if (env->native_p5) { /* the picture's p5 state in C memory, and the C functions */
        JS_SetPropertyStr(ctx, native, "state",
                          JS_NewArrayBuffer(ctx, (uint8_t*)env->p5->s, sizeof(env->p5->s), 0, NULL, NULL, false));
        JS_SetPropertyStr(ctx, native, "rstate",
                          JS_NewArrayBuffer(ctx, (uint8_t*)env->p5->rs, sizeof(env->p5->rs), 0, NULL, NULL, false));
        JS_SetPropertyStr(ctx, native, "p5", JS_NewCFunction(ctx, js_n_p5, "p5", 1));
    }
    JS_SetPropertyStr(ctx, native, "width", JS_NewInt32(ctx, JS_PICTURE_WIDTH));
    JS_SetPropertyStr(ctx, native, "height", JS_NewInt32(ctx, JS_PICTURE_HEIGHT));
    JS_SetPropertyStr(ctx, native, "actions", JS_NewString(ctx, actions));
    JS_SetPropertyStr(ctx, native, "game", JS_NewString(ctx, js_basename(game)));
    JS_SetPropertyStr(ctx, global, "__native", native);
    JS_FreeValue(ctx, global);
    JS_UpdateStackTop(env->rt);
    if (!js_eval_file(env, prelude, "the p5 prelude")) return;
    global = JS_GetGlobalObject(ctx);
    env->host = JS_GetPropertyStr(ctx, global, "__puf");
    JS_FreeValue(ctx, global);
    js_set_fn(env, &env->fn_step, "step");
    js_set_fn(env, &env->fn_hold, "hold");
    js_set_fn(env, &env->fn_reset, "reset");
    if (!js_eval_file(env, game, "loading the game")) return;
    JSValue fn_load = JS_GetPropertyStr(ctx, env->host, "load");
    int ok = js_call(env, fn_load, 0, "setup(), resetGame(0) and the first draw()", env->ops_budget * 4);
    JS_FreeValue(ctx, fn_load);
    if (!ok) return;
    env->last_score = env->out[0];
    env->steps = 0;
}

static void js_begin_episode(Env* env, unsigned int seed) {
    env->steps = 0;
    env->episode_return = 0;
    if (!env->failed && js_call(env, env->fn_reset, (double)seed, "resetGame() and its first draw()",
                                env->ops_budget)) {
        env->last_score = env->out[0];
    }
    js_write_obs(env);
}

static unsigned int js_next_seed(Env* env) {
    unsigned int x = env->rng; /* xorshift32; env->rng is never 0 after the mix below */
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    env->rng = x ? x : 0x9E3779B9u;
    return env->rng;
}

void puf_reset(Env* env) {
    if (env->rng == 0) env->rng = 0x9E3779B9u;
    js_begin_episode(env, js_next_seed(env));
}

void puf_step(Env* env) {
    Agent* ag = &env->agents[0];
    ag->rewards[0] = 0;
    ag->terminals[0] = 0;
    if (env->failed) {
        ag->terminals[0] = 1;
        return;
    }
    float fa = ag->actions[0];
    int action = (fa >= 0 && fa < JS_NUM_ACTIONS) ? (int)fa : 0;
    for (int f = 0; f < env->frameskip; f++) {
        if (f > 0 && env->out[2] != 0) break;  /* the game ended on an earlier frame of this step */
        if (!js_call(env, f == 0 ? env->fn_step : env->fn_hold, action,
                     f == 0 ? "a step (keyPressed(), draw(), getGameState())" : "a held frame (draw(), getGameState())",
                     env->ops_budget)) {
            ag->terminals[0] = 1;
            return;
        }
    }
    double score = env->out[0];
    double reward = score - env->last_score;
    env->last_score = score;
    env->episode_return += reward;
    env->steps++;
    ag->rewards[0] = (float)reward;
    int code = (int)env->out[2];
    if (code != 0 || env->steps >= env->max_steps) {
        ag->terminals[0] = 1;
        env->log.perf += code == 1;
        env->log.wins += code == 1;
        env->log.score += (float)score;
        env->log.lives += (float)env->out[1];
        env->log.episode_length += (float)env->steps;
        env->log.episode_return += (float)env->episode_return;
        env->log.n += 1;
        memcpy(env->final_out, env->out, sizeof(env->out));
        if (env->final_frame != NULL)
            memcpy(env->final_frame, env->canvas[0].px, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
        js_begin_episode(env, js_next_seed(env));
        return;
    }
    js_write_obs(env);
}

void puf_render(Env* env) {
    if (!puf_canvas_begin(JS_PICTURE_WIDTH, JS_PICTURE_HEIGHT) || env->canvas[0].px == NULL) return;
    memcpy(puf_canvas.pixels, env->canvas[0].px, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
    puf_canvas.dirty = 1;
}

void puf_close(Env* env) {
    if (env->ctx != NULL) {
        JS_FreeValue(env->ctx, env->fn_step);
        JS_FreeValue(env->ctx, env->fn_hold);
        JS_FreeValue(env->ctx, env->fn_reset);
        JS_FreeValue(env->ctx, env->host);
        if (env->p5 != NULL) p5_native_free(env);
        JS_FreeContext(env->ctx);
    }
    if (env->rt != NULL) JS_FreeRuntime(env->rt);
    env->ctx = NULL;
    env->rt = NULL;
    for (int i = 0; i < env->num_canvases; i++) free(env->canvas[i].px);
    free(env->final_frame);
    env->final_frame = NULL;
    free(env->p5);
    env->p5 = NULL;
    env->num_canvases = 0;
}

void puf_log(Log* log, Dict* out) {
    dict_set(out, "perf", log->perf);
    dict_set(out, "score", log->score);
    dict_set(out, "lives", log->lives);
    dict_set(out, "wins", log->wins);
    dict_set(out, "episode_length", log->episode_length);
    dict_set(out, "episode_return", log->episode_return);
}

#endif /* PUF_JSENV_H */
