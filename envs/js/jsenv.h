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
 * to the next (another thread count, another env buffer). Envs share no state, so the vecenv's
 * threads step them in parallel; what is common to them holds no results: the engine's table of
 * guessed property indexes (hints, checked before use) and the region their heaps' pages come
 * from (jsheap.h, locked when an env takes a slice).
 *
 * A step (puf_step): the frames run the host contract in C (js_frame, below), drawing straight
 * into the observation row (js_picture_follow); the prelude's JS contract is kept for reset, for
 * native_p5 = 0 and for the browser page, and tests/test_js_host.py checks that the two agree.
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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

#include "jsheap.h"

typedef struct JsP5 JsP5; /* envs/js/p5native.h */
typedef struct JsHost JsHost; /* below, js_frame */

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
    /* what a step reads, together at the front (with many envs on a core each line here is a miss) */
    JSRuntime* rt;
    JSContext* ctx;
    JsP5* p5;
    JsHost* hc;       /* the host contract in C (js_frame), with native_p5; NULL: the prelude's step() */
    JsHeap* heap;     /* where the runtime's pages come from (jsheap.h) */
    double out[4];    /* score, lives, state code (0 playing, 1 WIN, 2 GAMEOVER, 3 EXIT) */
    double last_score, episode_return;
    long ops_left, ops_budget;
    int max_steps, steps, failed;
    int frameskip;    /* frames per step: the first with the action's presses, the rest held keys only */
    int rasterize;    /* 0: the primitives draw nothing (tools/bench_env.py times the game alone) */
    int native_p5;    /* 1: the frequent p5 calls in C (p5native.h); 0: the prelude's JS for all */
    int pf_n, pf_pos, pf_countdown; /* js_prefetch: lines in pf, the next env's read so far, steps
                                     * until this env's are recorded again */
    uintptr_t* pf;    /* [JS_PF_LINES] the lines this env's step touches first */
    struct Env* pf_next; /* the env stepped after this one, whose lines this step prefetches */
    int num_canvases, target;
    JsCanvas canvas[JS_MAX_CANVASES];
    double fbuf[JS_FBUF];
    JSValue host;     /* the prelude's __puf object */
    JSValue fn_step, fn_hold, fn_reset;
    double final_out[4];           /* out at the last episode's end */
    unsigned char* final_frame;    /* canvas 0 at the last episode's end (replays compare it) */
    unsigned char* own_px;         /* the picture's memory until an RGB observation row is bound */
    size_t memory_limit;
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

/* n RGB pixels of one color: 8 pixels (24 bytes) at a time in three 8-byte stores */
typedef struct JsRgb { uint64_t w[3]; unsigned char c[3]; } JsRgb;
static inline JsRgb js_rgb(int r, int g, int b) {
    JsRgb k;
    unsigned char pat[24];
    for (int i = 0; i < 8; i++) { pat[3 * i] = (unsigned char)r; pat[3 * i + 1] = (unsigned char)g; pat[3 * i + 2] = (unsigned char)b; }
    memcpy(k.w, pat, 24);
    memcpy(k.c, pat, 3);
    return k;
}
static inline void js_fill_rgb(unsigned char* p, int n, const JsRgb* k) {
    for (; n >= 8; n -= 8, p += 24) { memcpy(p, &k->w[0], 8); memcpy(p + 8, &k->w[1], 8); memcpy(p + 16, &k->w[2], 8); }
    for (; n > 0; n--, p += 3) { p[0] = k->c[0]; p[1] = k->c[1]; p[2] = k->c[2]; }
}

static inline void js_span(JsCanvas* c, int y, int x0, int x1, int r, int g, int b, int a) {
    if (y < 0 || y >= c->h) return;
    if (x0 < 0) x0 = 0;
    if (x1 > c->w) x1 = c->w;
    if (a >= 255 && c->ch == 3) { /* opaque on the picture: what js_blend writes, without its tests */
        if (x0 < x1) {
            JsRgb k = js_rgb(r, g, b);
            js_fill_rgb(c->px + ((size_t)y * c->w + x0) * 3, x1 - x0, &k);
        }
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
        if (a >= 255 && c->ch == 3) { /* opaque on the picture: js_span's rows, the color built once */
            JsRgb k = js_rgb(r, g, b);
            for (int y = y0 < 0 ? 0 : y0; y <= y1 && y < c->h; y++)
                if (y + 0.5 < ymax) js_fill_rgb(c->px + ((size_t)y * c->w + (int)lo) * 3, (int)hi - (int)lo, &k);
            return;
        }
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
    /* each pixel's test, over up to 256 pixels of a row into a mask, then the row drawn; the
     * common case tests two pixels at once (SSE2 lanes compute the same IEEE operations in the
     * same order: the same pixels) */
    unsigned char hit[256];
    for (int y = y0; y < y1; y++) {
        double dy = y + 0.5 - cy, bu = ib * dy, bv = id * dy;
        for (int xs = x0; xs < x1; xs += 256) {
            int n = x1 - xs < 256 ? x1 - xs : 256;
            if (!inner && mode == 0) { /* a whole ellipse: the common case */
                int i = 0;
#if defined(__SSE2__)
                { /* two pixels at a time: the same operations, in the same order, per lane */
                    __m128d xd = _mm_set_pd(xs + 1.5, xs + 0.5), two = _mm_set1_pd(2.0), one = _mm_set1_pd(1.0);
                    __m128d vcx = _mm_set1_pd(cx), via = _mm_set1_pd(ia), vic = _mm_set1_pd(ic);
                    __m128d vbu = _mm_set1_pd(bu), vbv = _mm_set1_pd(bv), vku = _mm_set1_pd(ku), vkv = _mm_set1_pd(kv);
                    for (; i + 1 < n; i += 2, xd = _mm_add_pd(xd, two)) {
                        __m128d dx = _mm_sub_pd(xd, vcx);
                        __m128d u = _mm_add_pd(_mm_mul_pd(via, dx), vbu), v = _mm_add_pd(_mm_mul_pd(vic, dx), vbv);
                        __m128d q = _mm_add_pd(_mm_mul_pd(_mm_mul_pd(u, u), vku), _mm_mul_pd(_mm_mul_pd(v, v), vkv));
                        int out = _mm_movemask_pd(_mm_cmpgt_pd(q, one)); /* NaN: not > 1, inside */
                        hit[i] = !(out & 1);
                        hit[i + 1] = !(out & 2);
                    }
                }
#endif
                for (; i < n; i++) {
                    double dx = (xs + i) + 0.5 - cx;
                    double u = ia * dx + bu, v = ic * dx + bv;
                    hit[i] = !(u * u * ku + v * v * kv > 1);
                }
            } else {
                for (int i = 0; i < n; i++) {
                    double dx = (xs + i) + 0.5 - cx;
                    double u = ia * dx + bu, v = ic * dx + bv;
                    int in = !(u * u * ku + v * v * kv > 1);
                    if (inner) in &= !(u * u * kui + v * v * kvi < 1);
                    if (mode != 0) {
                        double cs = sx * v - sy * u, ce = u * ey - v * ex;
                        in &= mode == 1 ? (cs >= 0) & (ce >= 0) : !((cs < 0) & (ce < 0));
                    }
                    hit[i] = (unsigned char)in;
                }
            }
            if (a >= 255 && c->ch == 3) { /* opaque on the picture: js_blend's store */
                unsigned char* p = c->px + ((size_t)y * c->w + xs) * 3;
                for (int i = 0; i < n; i++, p += 3)
                    if (hit[i]) { p[0] = (unsigned char)r; p[1] = (unsigned char)g; p[2] = (unsigned char)b; }
            } else {
                for (int i = 0; i < n; i++)
                    if (hit[i]) js_blend(c, xs + i, y, r, g, b, a);
            }
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
    if (a >= 255 && c->ch == 3 && c->h > 0) { /* opaque: one memset, or one row copied in doubling blocks */
        size_t all = (size_t)c->w * c->h * 3, done = (size_t)c->w * 3;
        if (r == g && g == b) {
            memset(c->px, r, all);
            return;
        }
        js_span(c, 0, 0, c->w, r, g, b, a);
        for (; done < all; done *= 2) memcpy(c->px + done, c->px, done < all - done ? done : all - done);
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

/* ---- the next env's lines, prefetched ---------------------------------------------------------
 * With many envs on a core, each step reads its env's JS heap back from L3: a few hundred lines
 * (function objects, bytecode, closures, arenas, objects), each a dependent load the hardware
 * cannot foresee. So every JS_PF_EVERY steps an env records the lines its step touches first (the
 * engine's recorder, envs/js/engine_patches.py: the functions called, the arenas allocated from,
 * plus the host's own structures), and while the vecenv steps an env it prefetches the next
 * env's lines, JS_PF_CHUNK at the start and JS_PF_CHUNK at each p5 call, so that they arrive while
 * this one runs instead of all at once. A stale line (an object freed since) costs one prefetch;
 * a prefetch never faults. With fewer than JS_PF_MIN_ENVS envs on a thread they stay in its L2
 * anyway and nothing is prefetched. */
#define JS_PF_LINES 1024
#define JS_PF_EVERY 2000
#define JS_PF_CHUNK 16
#define JS_PF_MIN_ENVS 24
int puf_record(JSRuntime* rt, uintptr_t* lines, int cap);

static inline void js_pf_some(Env* env) {
    Env* nx = env->pf_next;
    if (nx == NULL) return;
    int i = env->pf_pos, n = nx->pf_n, end = i + JS_PF_CHUNK < n ? i + JS_PF_CHUNK : n;
    for (const uintptr_t* l = nx->pf; i < end; i++) __builtin_prefetch((const void*)l[i], 0, 3);
    env->pf_pos = i;
    if (i >= n) env->pf_next = NULL;
}

/* the vecenv's hook, before it steps env `cur` (envs/c/vecenv.c) */
#define PUF_PREFETCH_NEXT(cur, next, envs_on_thread) \
    do { \
        if ((envs_on_thread) >= JS_PF_MIN_ENVS) { \
            (cur)->pf_next = (next); \
            (cur)->pf_pos = 0; \
            js_pf_some(cur); \
        } \
    } while (0)

static int js_cmp_line(const void* a, const void* b) {
    uintptr_t x = *(const uintptr_t*)a, y = *(const uintptr_t*)b;
    return x < y ? -1 : x > y;
}

static inline int js_pf_begin(Env* env) {
    if (env->pf == NULL || --env->pf_countdown > 0) return 0;
    puf_record(env->rt, env->pf, JS_PF_LINES);
    return 1;
}

static void js_pf_end(Env* env) {
    int n = puf_record(env->rt, NULL, 0);
    uintptr_t* l = env->pf;
    const void* own[] = {env, (char*)env + 64, (char*)env + 128, (char*)env + 192, env->hc, env->p5, env->rt, env->ctx};
    for (int i = 0; i < (int)(sizeof(own) / sizeof(own[0])) && n < JS_PF_LINES; i++)
        if (own[i] != NULL) l[n++] = (uintptr_t)own[i] & ~(uintptr_t)63;
    qsort(l, (size_t)n, sizeof(uintptr_t), js_cmp_line); /* in address order, each line once */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || l[i] != l[m - 1]) l[m++] = l[i];
    env->pf_n = m;
    env->pf_countdown = JS_PF_EVERY;
}

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

/* An RGB picture is drawn straight into the env's observation row, the one copy the trainer
 * reads: no per-step copy, and 12 KB less per env for the caches at 64x64. Until the host binds
 * the rows (vec_bind, after puf_init) the env draws into its own memory; the first call that sees
 * a row moves the picture there (and again if the host binds other rows: it keeps the old ones
 * alive until then, as every host here binds once). Drawing persists across frames as in p5, so
 * the row holds the game's canvas: a host must not write into it. */
static inline void js_picture_follow(Env* env) {
#if JS_PICTURE_CHANNELS == 3
    unsigned char* obs = env->agents[0].observations;
    JsCanvas* c = &env->canvas[0];
    if (obs != NULL && c->px != obs && c->px != NULL) {
        memcpy(obs, c->px, (size_t)JS_PICTURE_WIDTH * JS_PICTURE_HEIGHT * 3);
        c->px = obs;
    }
#else
    (void)env;
#endif
}

/* ---- the host contract in C ------------------------------------------------------------------
 * A frame of a step is what the prelude's __puf.step(action) / hold(action) do (keys(), frame(),
 * readState() in envs/js/p5.js), done here with the same reads and writes of the same globals in
 * the same order: keys go into a table that the C keyIsDown reads (the prelude's is a Set),
 * keyIsPressed, keyCode and key are set as keys() sets them and keyPressed() is called once per
 * pressed key; frameCount += 1, the picture's matrix reset, main.shape = null, draw(), then
 * getGameState(), whose result C reads when it is a plain object with own data properties score
 * (a finite number), lives (a number) and gameState (one of the four state names): reading those
 * has no side effects, so anything else goes, unread, to the prelude's state() for its JS
 * conversions and errors. The prelude's `current = null` at the end of frame() is left out: it
 * only makes the next JS drawing call re-send its target, which the host still holds.
 * Measured on flappy_bird.js: the prelude's step cost ~11K instructions a frame in the interpreter
 * (a Set, closures, an action index as a double key, the state name looked up as an atom). */
#define JS_MAX_KEYS 15
typedef struct JsKeys { unsigned char nheld, npressed, held[JS_MAX_KEYS], pressed[JS_MAX_KEYS]; } JsKeys;
#define JS_MAX_NAMES 32
/* in the engine (envs/js/engine_patches.py): the value of an own data property found by a guess */
JSValue* puf_own_data(JSValueConst obj, JSAtom atom, uint16_t* slot, int write);
enum { JS_G_KEYISPRESSED, JS_G_KEYPRESSED, JS_G_KEYCODE, JS_G_KEYCODE_READ, JS_G_KEY, JS_G_FRAMECOUNT,
       JS_G_FRAMECOUNT_PUT, JS_G_SHAPE, JS_G_DRAW, JS_G_GETGAMESTATE, JS_G_SCORE, JS_G_LIVES, JS_G_GAMESTATE,
       JS_G_COUNT };
struct JsHost {
    uint64_t down[4];      /* keyIsDown: codes 0-255 */
    uint16_t guess[JS_G_COUNT]; /* the property indexes each access found last (puf_own_data) */
    JSValue global, main, fn_state, fn_need, fn_tick, fn_keyname;
    JSAtom at_frameCount, at_keyIsPressed, at_keyCode, at_key, at_keyPressed, at_draw, at_getGameState,
        at_shape, at_score, at_lives, at_gameState;
    JSClassID plain;       /* the class of {} */
    JSValue last_state;    /* the last result of getGameState() read here */
    JSValue names[4];      /* "PLAYING", "WIN", "GAMEOVER", "EXIT" as the game returned them (held) */
    JsKeys act[JS_NUM_ACTIONS];
    int num_keys;          /* the prelude's keyName(code) of the codes met so far */
    unsigned char key_code[JS_MAX_NAMES];
    JSValue key_name[JS_MAX_NAMES];
};

/* "0 | 37 | p32 | 37 p32": envs/js/env.py checked and normalised it, the prelude's parseActions()
 * reads the same text; 1 = ok */
static int js_parse_actions(JsHost* h, const char* text) {
    int a = 0;
    const char* p = text;
    memset(h->act, 0, sizeof(h->act));
    while (*p && a < JS_NUM_ACTIONS) {
        JsKeys* k = &h->act[a];
        while (*p && *p != '|') {
            while (*p == ' ' || *p == '\t') p++;
            if (!*p || *p == '|') break;
            int press = *p == 'p';
            if (press) p++;
            char* end;
            long code = strtol(p, &end, 10);
            if (end == p) return 0;
            p = end;
            if (code <= 0 || code > 255) continue; /* "0": no key */
            if (press && k->npressed < JS_MAX_KEYS) k->pressed[k->npressed++] = (unsigned char)code;
            else if (!press && k->nheld < JS_MAX_KEYS) k->held[k->nheld++] = (unsigned char)code;
            else return 0;
        }
        if (*p == '|') p++;
        a++;
    }
    return a == JS_NUM_ACTIONS;
}

/* keyIsDown(code): the prelude's down.has(code) for a Set of the numbers 1-255 */
static JSValue js_n_keyisdown(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    JsHost* h = js_env(ctx)->hc;
    if (argc < 1 || !JS_IsNumber(argv[0])) return JS_FALSE;
    double v;
    JS_ToFloat64(ctx, &v, argv[0]);
    if (!(v >= 0 && v <= 255) || v != (int)v) return JS_FALSE;
    int c = (int)v;
    return JS_NewBool(ctx, (h->down[c >> 6] >> (c & 63)) & 1);
}

static JSValue js_key_name(Env* env, int code) {
    JsHost* h = env->hc;
    for (int i = 0; i < h->num_keys; i++)
        if (h->key_code[i] == code) return JS_DupValue(env->ctx, h->key_name[i]);
    JSValue c = JS_NewInt32(env->ctx, code);
    JSValue name = JS_Call(env->ctx, h->fn_keyname, JS_UNDEFINED, 1, &c);
    if (JS_IsException(name) || h->num_keys == JS_MAX_NAMES) return name;
    h->key_code[h->num_keys] = (unsigned char)code;
    h->key_name[h->num_keys++] = JS_DupValue(env->ctx, name);
    return name;
}

/* N.host(main): the prelude hands over its picture renderer; the C host contract and keyIsDown */
static JSValue js_n_host(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    JsHost* h = env->hc;
    if (h == NULL || argc < 1 || !JS_IsObject(argv[0])) return JS_ThrowTypeError(ctx, "host: the picture renderer");
    JS_FreeValue(ctx, h->main);
    h->main = JS_DupValue(ctx, argv[0]);
    JSValue kd = JS_NewCFunction(ctx, js_n_keyisdown, "keyIsDown", 1);
    if (JS_IsException(kd)) return JS_EXCEPTION;
    JSAtom at = JS_NewAtom(ctx, "keyIsDown");
    int ok = JS_SetProperty(ctx, h->global, at, kd) >= 0;
    JS_FreeAtom(ctx, at);
    return ok ? JS_UNDEFINED : JS_EXCEPTION;
}

static JsHost* js_host_new(Env* env, const char* actions) {
    JsHost* h = (JsHost*)calloc(1, sizeof(JsHost));
    if (h == NULL) return NULL;
    JSContext* ctx = env->ctx;
    if (!js_parse_actions(h, actions)) { free(h); return NULL; }
    h->global = JS_GetGlobalObject(ctx);
    h->main = h->fn_state = h->fn_need = h->fn_tick = h->fn_keyname = h->last_state = JS_UNDEFINED;
    for (int i = 0; i < 4; i++) h->names[i] = JS_UNDEFINED;
    h->at_frameCount = JS_NewAtom(ctx, "frameCount");
    h->at_keyIsPressed = JS_NewAtom(ctx, "keyIsPressed");
    h->at_keyCode = JS_NewAtom(ctx, "keyCode");
    h->at_key = JS_NewAtom(ctx, "key");
    h->at_keyPressed = JS_NewAtom(ctx, "keyPressed");
    h->at_draw = JS_NewAtom(ctx, "draw");
    h->at_getGameState = JS_NewAtom(ctx, "getGameState");
    h->at_shape = JS_NewAtom(ctx, "shape");
    h->at_score = JS_NewAtom(ctx, "score");
    h->at_lives = JS_NewAtom(ctx, "lives");
    h->at_gameState = JS_NewAtom(ctx, "gameState");
    JSValue o = JS_NewObject(ctx);
    h->plain = JS_GetClassID(o);
    JS_FreeValue(ctx, o);
    return h;
}

static void js_host_free(Env* env) {
    JsHost* h = env->hc;
    if (h == NULL) return;
    JSContext* ctx = env->ctx;
    JSValue vals[] = {h->global, h->main, h->fn_state, h->fn_need, h->fn_tick, h->fn_keyname, h->last_state};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) JS_FreeValue(ctx, vals[i]);
    for (int i = 0; i < 4; i++) JS_FreeValue(ctx, h->names[i]);
    for (int i = 0; i < h->num_keys; i++) JS_FreeValue(ctx, h->key_name[i]);
    JSAtom atoms[] = {h->at_frameCount, h->at_keyIsPressed, h->at_keyCode, h->at_key, h->at_keyPressed, h->at_draw,
                      h->at_getGameState, h->at_shape, h->at_score, h->at_lives, h->at_gameState};
    for (size_t i = 0; i < sizeof(atoms) / sizeof(atoms[0]); i++) JS_FreeAtom(ctx, atoms[i]);
    free(h);
    env->hc = NULL;
}

/* the state code of a gameState string as the prelude's STATES[name] gives it; -1: not one of the
 * four names (the prelude's state() decides) */
static int js_state_code(Env* env, JSValueConst v) {
    static const char* const names[4] = {"PLAYING", "WIN", "GAMEOVER", "EXIT"};
    JsHost* h = env->hc;
    for (int i = 0; i < 4; i++)  /* the same string as last time (a game returns its literals) */
        if (JS_IsString(h->names[i]) && JS_VALUE_GET_PTR(h->names[i]) == JS_VALUE_GET_PTR(v)) return i;
    size_t len;
    const char* s = JS_ToCStringLen(env->ctx, &len, v);
    if (s == NULL) { JS_FreeValue(env->ctx, JS_GetException(env->ctx)); return -1; }
    int code = -1;
    for (int i = 0; i < 4; i++)
        if (len == strlen(names[i]) && memcmp(s, names[i], len) == 0) code = i;
    JS_FreeCString(env->ctx, s);
    if (code >= 0) {
        JS_FreeValue(env->ctx, h->names[code]);
        h->names[code] = JS_DupValue(env->ctx, v);
    }
    return code;
}

/* obj.<atom> = v for an own writable data property, else JS's assignment (setters, errors) */
static inline int js_put(Env* env, JSValueConst obj, JSAtom atom, int site, JSValue v) {
    JSValue* p = puf_own_data(obj, atom, &env->hc->guess[site], 1);
    if (p != NULL) {
        JSValue old = *p;
        *p = v;
        JS_FreeValue(env->ctx, old);
        return 1;
    }
    return JS_SetProperty(env->ctx, obj, atom, v) >= 0;
}

/* obj.<atom>: an own data property's value, else JS's property read (getters, prototypes) */
static inline JSValue js_get(Env* env, JSValueConst obj, JSAtom atom, int site) {
    JSValue* p = puf_own_data(obj, atom, &env->hc->guess[site], 0);
    return p != NULL ? JS_DupValue(env->ctx, *p) : JS_GetProperty(env->ctx, obj, atom);
}

/* an own data property of a plain object, read without side effects: its value (borrowed from
 * obj), or NULL */
static inline JSValue* js_peek(Env* env, JSValueConst obj, JSAtom atom, int site) {
    return puf_own_data(obj, atom, &env->hc->guess[site], 0);
}

/* getGameState()'s result into env->out, as the prelude's state(s); 1 = ok (s is consumed) */
static int js_read_state(Env* env, JSValue s) {
    JsHost* h = env->hc;
    JSContext* ctx = env->ctx;
    if (JS_GetClassID(s) == h->plain) {
        JSValue *sc, *lv, *gs;
        double score = 0, lives = 0;
        int code = -1;
        if ((sc = js_peek(env, s, h->at_score, JS_G_SCORE)) != NULL && JS_IsNumber(*sc) &&
            (lv = js_peek(env, s, h->at_lives, JS_G_LIVES)) != NULL && JS_IsNumber(*lv) &&
            (gs = js_peek(env, s, h->at_gameState, JS_G_GAMESTATE)) != NULL && JS_IsString(*gs)) {
            JS_ToFloat64(ctx, &score, *sc);
            JS_ToFloat64(ctx, &lives, *lv);
            if (score - score == 0) code = js_state_code(env, *gs);
        }
        if (code >= 0) {
            /* held until the next frame's: its shape (and the engine's shape for its last field)
             * then still exists for the next object literal, instead of being freed and rebuilt */
            JS_FreeValue(ctx, h->last_state);
            h->last_state = s;
            env->out[0] = score;
            env->out[1] = (lives != lives || lives == 0) ? 0 : lives; /* +s.lives || 0 */
            env->out[2] = code;
            return 1;
        }
    }
    JSValue r = JS_Call(ctx, h->fn_state, JS_UNDEFINED, 1, (JSValueConst*)&s);
    JS_FreeValue(ctx, s);
    if (JS_IsException(r)) return 0;
    JS_FreeValue(ctx, r);
    return 1;
}

static inline int js_set_global(Env* env, JSAtom atom, int site, JSValue v) {
    return js_put(env, env->hc->global, atom, site, v);
}

/* a global function, or the prelude's need(name) error */
static JSValue js_global_fn(Env* env, JSAtom atom, int site, const char* name) {
    JSContext* ctx = env->ctx;
    JSValue f = js_get(env, env->hc->global, atom, site);
    if (JS_IsException(f) || JS_IsFunction(ctx, f)) return f;
    JS_FreeValue(ctx, f);
    JSValue n = JS_NewString(ctx, name);
    JSValue r = JS_Call(ctx, env->hc->fn_need, JS_UNDEFINED, 1, (JSValueConst*)&n);
    JS_FreeValue(ctx, n);
    return r; /* need() throws; were it to return, it returns G[name], as frame() calls */
}

/* One frame: keys (press: the action's pressed keys too), draw(), getGameState(); 1 = ok. */
static int js_frame(Env* env, int action, int press, const char* during) {
    JsHost* h = env->hc;
    JSContext* ctx = env->ctx;
    JS_UpdateStackTop(env->rt);
    env->ops_left = env->ops_budget;
    const JsKeys* k = &h->act[action];
    int npressed = press ? k->npressed : 0;
    h->down[0] = h->down[1] = h->down[2] = h->down[3] = 0;
    for (int i = 0; i < k->nheld; i++) h->down[k->held[i] >> 6] |= 1ull << (k->held[i] & 63);
    for (int i = 0; i < npressed; i++) h->down[k->pressed[i] >> 6] |= 1ull << (k->pressed[i] & 63);
    if (!js_set_global(env, h->at_keyIsPressed, JS_G_KEYISPRESSED, JS_NewBool(ctx, k->nheld + npressed > 0))) goto fail;
    JSValue on_press = js_get(env, h->global, h->at_keyPressed, JS_G_KEYPRESSED);
    if (JS_IsException(on_press)) goto fail;
    int call = JS_IsFunction(ctx, on_press);
    for (int i = 0; i < npressed; i++) {
        JSValue name = js_key_name(env, k->pressed[i]);
        if (JS_IsException(name) || !js_set_global(env, h->at_keyCode, JS_G_KEYCODE, JS_NewInt32(ctx, k->pressed[i])) ||
            !js_set_global(env, h->at_key, JS_G_KEY, name)) { JS_FreeValue(ctx, on_press); goto fail; }
        if (call) {
            JSValue r = JS_Call(ctx, on_press, JS_UNDEFINED, 0, NULL);
            if (JS_IsException(r)) { JS_FreeValue(ctx, on_press); goto fail; }
            JS_FreeValue(ctx, r);
        }
    }
    JS_FreeValue(ctx, on_press);
    if (npressed == 0 && k->nheld > 0) { /* G.keyCode = last held; G.key = keyName(G.keyCode) */
        if (!js_set_global(env, h->at_keyCode, JS_G_KEYCODE, JS_NewInt32(ctx, k->held[k->nheld - 1]))) goto fail;
        JSValue kc = js_get(env, h->global, h->at_keyCode, JS_G_KEYCODE_READ);
        if (JS_IsException(kc)) goto fail;
        JSValue name;
        if (JS_VALUE_GET_TAG(kc) == JS_TAG_INT && JS_VALUE_GET_INT(kc) > 0 && JS_VALUE_GET_INT(kc) < 256) {
            name = js_key_name(env, JS_VALUE_GET_INT(kc));
        } else {
            name = JS_Call(ctx, h->fn_keyname, JS_UNDEFINED, 1, (JSValueConst*)&kc);
        }
        JS_FreeValue(ctx, kc);
        if (JS_IsException(name) || !js_set_global(env, h->at_key, JS_G_KEY, name)) goto fail;
    }
    /* frame(): G.frameCount += 1 */
    JSValue fc = js_get(env, h->global, h->at_frameCount, JS_G_FRAMECOUNT);
    if (JS_VALUE_GET_TAG(fc) == JS_TAG_INT && JS_VALUE_GET_INT(fc) < INT32_MAX) {
        if (!js_set_global(env, h->at_frameCount, JS_G_FRAMECOUNT_PUT, JS_NewInt32(ctx, JS_VALUE_GET_INT(fc) + 1))) goto fail;
    } else if (JS_IsNumber(fc)) {
        double d;
        JS_ToFloat64(ctx, &d, fc);
        if (!js_set_global(env, h->at_frameCount, JS_G_FRAMECOUNT_PUT, JS_NewFloat64(ctx, d + 1))) goto fail;
    } else {
        if (JS_IsException(fc)) goto fail;
        JS_FreeValue(ctx, fc);
        JSValue r = JS_Call(ctx, h->fn_tick, JS_UNDEFINED, 0, NULL);
        if (JS_IsException(r)) goto fail;
        JS_FreeValue(ctx, r);
    }
    memcpy(env->p5->s + P5_M, env->p5->s + P5_BASE, 6 * sizeof(double)); /* main.resetMatrix() */
    if (!js_put(env, h->main, h->at_shape, JS_G_SHAPE, JS_NULL)) goto fail;
    JSValue draw = js_global_fn(env, h->at_draw, JS_G_DRAW, "draw");
    if (JS_IsException(draw)) goto fail;
    JSValue r = JS_Call(ctx, draw, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, draw);
    if (JS_IsException(r)) goto fail;
    JS_FreeValue(ctx, r);
    /* readState() */
    JSValue get = js_global_fn(env, h->at_getGameState, JS_G_GETGAMESTATE, "getGameState");
    if (JS_IsException(get)) goto fail;
    JSValue s = JS_Call(ctx, get, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, get);
    if (JS_IsException(s) || !js_read_state(env, s)) goto fail;
    return 1;
fail:
    js_report(env, during);
    return 0;
}

static void js_write_obs(Env* env) {
#if JS_PICTURE_CHANNELS == 3
    (void)env; /* the picture is the observation row (js_picture_follow) */
#else
    const unsigned char* px = env->canvas[0].px;
    unsigned char* obs = env->agents[0].observations;
    if (obs == NULL) return;
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
    c->px = env->own_px = (unsigned char*)calloc((size_t)c->w * c->h, 3);
    env->final_frame = (unsigned char*)calloc((size_t)c->w * c->h, 3);
    env->pf = (uintptr_t*)malloc(sizeof(uintptr_t) * JS_PF_LINES); /* NULL: no prefetching */
    env->pf_countdown = 2; /* the second step records: the first may still be setting up */
    env->num_canvases = 1;
    env->p5 = (JsP5*)calloc(1, sizeof(JsP5));
    if (env->p5 != NULL) p5_native_init(env);
    env->rt = jsh_new_runtime(&env->heap);
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
        env->hc = js_host_new(env, actions);
        if (env->hc != NULL) JS_SetPropertyStr(ctx, native, "host", JS_NewCFunction(ctx, js_n_host, "host", 1));
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
    if (env->hc != NULL) {
        if (JS_IsUndefined(env->hc->main)) { /* the prelude did not take the C host: its JS steps */
            js_host_free(env);
        } else {
            js_set_fn(env, &env->hc->fn_state, "state");
            js_set_fn(env, &env->hc->fn_need, "need");
            js_set_fn(env, &env->hc->fn_tick, "tick");
            js_set_fn(env, &env->hc->fn_keyname, "keyName");
        }
    }
    if (!js_eval_file(env, game, "loading the game")) return;
    JSValue fn_load = JS_GetPropertyStr(ctx, env->host, "load");
    int ok = js_call(env, fn_load, 0, "setup(), resetGame(0) and the first draw()", env->ops_budget * 4);
    JS_FreeValue(ctx, fn_load);
    if (!ok) return;
    env->last_score = env->out[0];
    env->steps = 0;
}

static void js_begin_episode(Env* env, unsigned int seed) {
    js_picture_follow(env);
    env->steps = 0;
    env->episode_return = 0;
    if (env->hc != NULL) memset(env->hc->down, 0, sizeof(env->hc->down)); /* reset(): down.clear() */
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
    js_picture_follow(env);
    ag->rewards[0] = 0;
    ag->terminals[0] = 0;
    if (env->failed) {
        ag->terminals[0] = 1;
        return;
    }
    float fa = ag->actions[0];
    int action = (fa >= 0 && fa < JS_NUM_ACTIONS) ? (int)fa : 0;
    int rec = js_pf_begin(env);
    for (int f = 0; f < env->frameskip; f++) {
        if (f > 0 && env->out[2] != 0) break;  /* the game ended on an earlier frame of this step */
        const char* during = f == 0 ? "a step (keyPressed(), draw(), getGameState())" : "a held frame (draw(), getGameState())";
        if (env->hc != NULL ? !js_frame(env, action, f == 0, during)
                            : !js_call(env, f == 0 ? env->fn_step : env->fn_hold, action, during, env->ops_budget)) {
            if (rec) js_pf_end(env);
            env->pf_next = NULL;
            ag->terminals[0] = 1;
            return;
        }
    }
    if (rec) js_pf_end(env);
    env->pf_next = NULL;
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
        js_host_free(env);
        JS_FreeContext(env->ctx);
    }
    if (env->rt != NULL) JS_FreeRuntime(env->rt);
    jsh_close(env->heap);
    env->heap = NULL;
    env->ctx = NULL;
    env->rt = NULL;
    free(env->own_px);
    env->own_px = NULL;
    for (int i = 1; i < env->num_canvases; i++) free(env->canvas[i].px);
    free(env->final_frame);
    free(env->pf);
    env->pf = NULL;
    env->pf_n = 0;
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
