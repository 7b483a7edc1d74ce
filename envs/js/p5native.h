/* p5native.h — the frequent p5 calls on the picture as C functions in each env's QuickJS context
 * (included by envs/js/jsenv.h). The prelude envs/js/p5.js keeps the reference implementation of
 * every call (the browser page runs only that); here the picture renderer's state is the same
 * memory the prelude's Float64Array views (JsP5.s, slots as in p5.js), so a C call and a JS call
 * are interchangeable within a frame. Every function computes what its JS twin computes, in IEEE
 * doubles in the same order (fp-contract is off in jsenv.h): frames stay bit-identical. Inputs the
 * fast path does not cover (strings, colors, arrays, other color modes, objects) go to the JS
 * function, so results and error messages are the JS ones.
 */
#ifndef PUF_P5NATIVE_H
#define PUF_P5NATIVE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* slots of a renderer's state (p5.js: S_*) */
enum {
    P5_M = 0, P5_FILL = 6, P5_STROKE = 10, P5_DOFILL = 14, P5_DOSTROKE = 15, P5_SW = 16, P5_RECTM = 17,
    P5_ELLIPSEM = 18, P5_CMODE = 19, P5_FAST = 20, P5_MAXES = 21, P5_TEXTSIZE = 25, P5_ANGLEM = 26,
    P5_PUSHED = 27, P5_BASE = 27, P5_IMAGEM = 33, P5_DEPTH = 34, P5_STACK = 35, P5_STACK_MAX = 256,
    P5_SLOTS = P5_STACK + P5_PUSHED * P5_STACK_MAX
};

/* the functions, by magic number; each has its JS twin in JsP5.slow */
enum {
    P5F_FILL, P5F_STROKE, P5F_NOFILL, P5F_NOSTROKE, P5F_STROKEWEIGHT, P5F_BACKGROUND, P5F_RECT, P5F_SQUARE,
    P5F_ELLIPSE, P5F_CIRCLE, P5F_LINE, P5F_TRIANGLE, P5F_QUAD, P5F_TRANSLATE, P5F_ROTATE, P5F_SCALE, P5F_PUSH,
    P5F_POP, P5F_RESETMATRIX, P5F_SIN, P5F_COS, P5F_TAN, P5F_ASIN, P5F_ACOS, P5F_ATAN, P5F_ATAN2, P5F_EXP,
    P5F_LOG, P5F_POW, P5F_MATHRANDOM, P5F_RANDOM, P5F_COUNT
};
/* where each goes: 1 a global, 2 a Math method, 3 both */
static const struct { const char* name; int where; int length; } p5_funcs[P5F_COUNT] = {
    {"fill", 1, 4}, {"stroke", 1, 4}, {"noFill", 1, 0}, {"noStroke", 1, 0}, {"strokeWeight", 1, 1},
    {"background", 1, 4}, {"rect", 1, 4}, {"square", 1, 3}, {"ellipse", 1, 4}, {"circle", 1, 3}, {"line", 1, 4},
    {"triangle", 1, 6}, {"quad", 1, 8}, {"translate", 1, 2}, {"rotate", 1, 1}, {"scale", 1, 2}, {"push", 1, 0},
    {"pop", 1, 0}, {"resetMatrix", 1, 0}, {"sin", 3, 1}, {"cos", 3, 1}, {"tan", 3, 1}, {"asin", 3, 1},
    {"acos", 3, 1}, {"atan", 3, 1}, {"atan2", 3, 2}, {"exp", 3, 1}, {"log", 3, 1}, {"pow", 3, 2},
    {"random", 2, 0}, {"random", 1, 2},
};

struct JsP5 {
    double s[P5_SLOTS]; /* the picture renderer's state (the prelude's main.S) */
    double rs[1];       /* mulberry32's state (the prelude's RS) */
    JSValue slow[P5F_COUNT];
    int ready;
};

/* ---- the deterministic math of p5.js (fdlibm kernels), operation for operation ------------- */
static const double P5_PI = 3.141592653589793, P5_HALF_PI = 1.5707963267948966, P5_TWO_PI = 6.283185307179586;

static double p5_twopow(double k) { /* 2^k exactly, k integer */
    if (k > 1023) return p5_twopow(1023) * p5_twopow(k - 1023);
    if (k < -1022) return p5_twopow(-1022) * p5_twopow(k + 1022 < -1022 ? -1022 : k + 1022);
    uint64_t bits = (uint64_t)((int)k + 1023) << 52;
    double d;
    memcpy(&d, &bits, 8);
    return d;
}
static double p5_ksin(double x) {
    double z = x * x;
    return x + x * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 + z * (-1.98412698298579493134e-04
        + z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
}
static double p5_kcos(double x) {
    double z = x * x;
    return 1 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 + z * (2.48015872894767294178e-05
        + z * (-2.75573143513906633035e-07 + z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
}
static double p5_reduce(double x, int* q) {
    double n = floor(x * 0.6366197723675814 + 0.5);
    double r = ((x - n * 1.57079632673412561417) - n * 6.07710050630396597660e-11) - n * 2.02226624879595063154e-21;
    *q = (int)fmod(fmod(n, 4) + 4, 4);
    return r;
}
static double p5_sin(double x) {
    if (!(x - x == 0)) return NAN;
    if (fabs(x) < 0.7853981633974483) return p5_ksin(x);
    int q;
    double r = p5_reduce(x, &q);
    return q == 0 ? p5_ksin(r) : q == 1 ? p5_kcos(r) : q == 2 ? -p5_ksin(r) : -p5_kcos(r);
}
static double p5_cos(double x) {
    if (!(x - x == 0)) return NAN;
    if (fabs(x) < 0.7853981633974483) return p5_kcos(x);
    int q;
    double r = p5_reduce(x, &q);
    return q == 0 ? p5_kcos(r) : q == 1 ? -p5_ksin(r) : q == 2 ? -p5_kcos(r) : p5_ksin(r);
}
static double p5_tan(double x) { return p5_sin(x) / p5_cos(x); }
static const double P5_ATANHI[] = {4.63647609000806093515e-01, 7.85398163397448278999e-01, 9.82793723247329054082e-01, 1.57079632679489655800e+00};
static const double P5_ATANLO[] = {2.26987774529616870924e-17, 3.06161699786838301793e-17, 1.39033110312309984516e-17, 6.12323399573676603587e-17};
static double p5_atan(double x) {
    if (x != x) return NAN;
    int neg = x < 0, id;
    double ax = neg ? -x : x;
    if (ax > 1e17) return neg ? -P5_HALF_PI : P5_HALF_PI;
    if (ax < 0.4375) id = -1;
    else if (ax < 1.1875) {
        if (ax < 0.6875) { id = 0; ax = (2 * ax - 1) / (2 + ax); } else { id = 1; ax = (ax - 1) / (ax + 1); }
    } else if (ax < 2.4375) { id = 2; ax = (ax - 1.5) / (1 + 1.5 * ax); } else { id = 3; ax = -1 / ax; }
    double z = ax * ax, w = z * z;
    double s1 = z * (3.33333333333329318027e-01 + w * (1.42857142725034663711e-01 + w * (9.09088713343650656196e-02
        + w * (6.66107313738753120669e-02 + w * (4.97687799461593236017e-02 + w * 1.62858201153657823623e-02)))));
    double s2 = w * (-1.99999999998764832476e-01 + w * (-1.11111104054623557880e-01 + w * (-7.69187620504482999495e-02
        + w * (-5.83357013379057348645e-02 + w * -3.65315727442169155270e-02))));
    double r;
    if (id < 0) r = ax - ax * (s1 + s2);
    else r = P5_ATANHI[id] - ((ax * (s1 + s2) - P5_ATANLO[id]) - ax);
    return neg ? -r : r;
}
static double p5_atan2(double y, double x) {
    if (x != x || y != y) return NAN;
    if (x == 0 && y == 0) return (1 / x < 0) ? (1 / y < 0 ? -P5_PI : P5_PI) : (1 / y < 0 ? -0.0 : 0.0);
    if (isinf(x) || isinf(y)) {
        double fx = x == INFINITY ? 1 : x == -INFINITY ? -1 : 0, fy = y == INFINITY ? 1 : y == -INFINITY ? -1 : 0;
        return p5_atan2(fy != 0 ? fy : (y >= 0 ? 0.0 : -0.0), fx != 0 ? fx : (x >= 0 ? 1e-300 : -1e-300));
    }
    if (x == 0) return y > 0 ? P5_HALF_PI : -P5_HALF_PI;
    double a = p5_atan(fabs(y / x));
    if (x > 0) return y >= 0 && 1 / y > 0 ? a : -a;
    return y >= 0 && (y > 0 || 1 / y > 0) ? P5_PI - a : a - P5_PI;
}
static double p5_asin(double x) {
    if (!(x >= -1 && x <= 1)) return NAN;
    return p5_atan2(x, sqrt((1 - x) * (1 + x)));
}
static double p5_acos(double x) {
    if (!(x >= -1 && x <= 1)) return NAN;
    return p5_atan2(sqrt((1 - x) * (1 + x)), x);
}
static double p5_exp(double x) {
    if (x != x) return NAN;
    if (x > 709.782712893384) return INFINITY;
    if (x < -745.1332191019412) return 0;
    double k = floor(x * 1.44269504088896338700 + 0.5);
    double hi = x - k * 6.93147180369123816490e-01, lo = k * 1.90821492927058770002e-10;
    double r = hi - lo, z = r * r;
    double c = r - z * (1.66666666666666019037e-01 + z * (-2.77777777770155933842e-03 + z * (6.61375632143793436117e-05
        + z * (-1.65339022054652515390e-06 + z * 4.13813679705723846039e-08))));
    double y = 1 - ((lo - (r * c) / (2 - c)) - hi);
    return y * p5_twopow(k);
}
static double p5_log(double x) {
    if (x != x || x < 0) return NAN;
    if (x == 0) return -INFINITY;
    if (x == INFINITY) return INFINITY;
    double k = 0;
    if (x < 2.2250738585072014e-308) { x *= 18014398509481984.0; k = -54; } /* 2^54: subnormals */
    uint64_t bits;
    memcpy(&bits, &x, 8);
    uint32_t hx = (uint32_t)(bits >> 32);
    k += (double)(hx >> 20) - 1023;
    hx &= 0x000fffffu;
    uint32_t i = (hx + 0x95f64u) & 0x100000u; /* normalize the mantissa into [sqrt(2)/2, sqrt(2)) */
    bits = ((uint64_t)(hx | (i ^ 0x3ff00000u)) << 32) | (bits & 0xffffffffu);
    k += (double)(i >> 20);
    double fx;
    memcpy(&fx, &bits, 8);
    double f = fx - 1;
    double s = f / (2 + f), z = s * s, w = z * z;
    double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    double R = t2 + t1, hfsq = 0.5 * f * f;
    return k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + R) + k * 1.90821492927058770002e-10)) - f);
}
static double p5_powi(double x, double n) { /* x^n for an integer n, by squaring */
    double r = 1, b = x, e = n < 0 ? -n : n;
    while (e > 0) { if (fmod(e, 2) == 1) r *= b; b *= b; e = floor(e / 2); }
    return n < 0 ? 1 / r : r;
}
static double p5_pow(double x, double y) {
    if (y == 0) return 1;
    if (x != x || y != y) return NAN;
    if (y == floor(y) && fabs(y) <= 1024) return p5_powi(x, y);
    if (x == 0) return y > 0 ? 0 : INFINITY;
    if (x < 0) {
        if (y != floor(y)) return NAN;
        int odd = floor(y / 2) * 2 != y;
        double r = p5_exp(y * p5_log(-x));
        return odd ? -r : r;
    }
    if (y == 0.5) return sqrt(x);
    return p5_exp(y * p5_log(x));
}
static double p5_rnd(JsP5* p) { /* mulberry32, as the prelude's rnd() */
    uint32_t rs = (uint32_t)(int64_t)p->rs[0] + 0x6D2B79F5u;
    p->rs[0] = (double)(int32_t)rs;
    uint32_t t = (rs ^ (rs >> 15)) * (rs | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return (double)(t ^ (t >> 14)) / 4294967296.0;
}

/* ---- drawing on the picture, as the prelude's Renderer methods ---------------------------- */
static void p5_poly_at(Env* env, const double* f, int n, const double* col) {
    if (env->rasterize) p5_poly(&env->canvas[0], f, n, (int)col[0], (int)col[1], (int)col[2], (int)col[3]);
}
static void p5_fill_poly(Env* env, const double* pts, int n, int at) { /* local points */
    if (n < 3) return;
    const double* m = env->p5->s;
    double* F = env->fbuf;
    for (int i = 0; i < n; i++) {
        double x = pts[2 * i], y = pts[2 * i + 1];
        F[2 * i] = m[0] * x + m[2] * y + m[4];
        F[2 * i + 1] = m[1] * x + m[3] * y + m[5];
    }
    p5_poly_at(env, F, n, m + at);
}
static double p5_pixel_scale(const double* m) { return sqrt(fabs(m[0] * m[3] - m[1] * m[2])); }
static double p5_half_width(const double* m, int thin) {
    double s = p5_pixel_scale(m), w = m[P5_SW];
    if (thin && w * s < 1 && s > 0) w = 1 / s;
    return w / 2;
}
static void p5_segment(Env* env, double x0, double y0, double x1, double y1, double hw, int at) {
    double dx = x1 - x0, dy = y1 - y0, len = sqrt(dx * dx + dy * dy);
    if (!(len > 0)) {
        double q[8] = {x0 - hw, y0 - hw, x0 + hw, y0 - hw, x0 + hw, y0 + hw, x0 - hw, y0 + hw};
        p5_fill_poly(env, q, 4, at);
        return;
    }
    double ux = dx / len * hw, uy = dy / len * hw;
    double q[8] = {x0 - ux - uy, y0 - uy + ux, x1 + ux - uy, y1 + uy + ux, x1 + ux + uy, y1 + uy - ux, x0 - ux + uy, y0 - uy - ux};
    p5_fill_poly(env, q, 4, at);
}
static void p5_outline(Env* env, const double* pts, int n, int closed) {
    const double* S = env->p5->s;
    if (!S[P5_DOSTROKE] || !(S[P5_SW] > 0)) return;
    double hw = p5_half_width(S, !S[P5_DOFILL]);
    for (int i = 0; i + 1 < n || (closed && i < n && n > 2); i++) {
        int j = (i + 1) % n;
        p5_segment(env, pts[2 * i], pts[2 * i + 1], pts[2 * j], pts[2 * j + 1], hw, P5_STROKE);
    }
}
static void p5_shape_poly(Env* env, const double* pts, int n) {
    if (env->p5->s[P5_DOFILL]) p5_fill_poly(env, pts, n, P5_FILL);
    p5_outline(env, pts, n, 1);
}
static void p5_ellipse_prim(Env* env, double cx, double cy, double rx, double ry, double rxi, double ryi, int at) {
    const double* m = env->p5->s;
    double det = m[0] * m[3] - m[1] * m[2];
    if (!(rx > 0 && ry > 0) || det == 0 || !(det - det == 0)) return;
    double F[19];
    double pcx = m[0] * cx + m[2] * cy + m[4], pcy = m[1] * cx + m[3] * cy + m[5];
    F[0] = pcx; F[1] = pcy;
    F[2] = m[3] / det; F[3] = -m[2] / det; F[4] = -m[1] / det; F[5] = m[0] / det;
    F[6] = 1 / (rx * rx); F[7] = 1 / (ry * ry);
    if (rxi > 0 && ryi > 0) { F[8] = 1 / (rxi * rxi); F[9] = 1 / (ryi * ryi); } else { F[8] = 0; F[9] = 0; }
    F[10] = 0; F[11] = 0; F[12] = 0; F[13] = 0; F[14] = 0;
    double hx = sqrt((m[0] * rx) * (m[0] * rx) + (m[2] * ry) * (m[2] * ry));
    double hy = sqrt((m[1] * rx) * (m[1] * rx) + (m[3] * ry) * (m[3] * ry));
    F[15] = floor(pcx - hx) - 1; F[16] = floor(pcy - hy) - 1; F[17] = floor(pcx + hx) + 2; F[18] = floor(pcy + hy) + 2;
    if (env->rasterize)
        p5_ellipse(&env->canvas[0], F, (int)m[at], (int)m[at + 1], (int)m[at + 2], (int)m[at + 3]);
}
static double fmin_js(double a, double b) { /* Math.min of two: NaN wins, -0 < +0 */
    if (a != a || b != b) return NAN;
    if (a == b) return signbit(a) ? a : b;
    return a < b ? a : b;
}
static void p5_mode_box(double mode, double* b) { /* x y w h -> the corner box */
    double x = b[0], y = b[1], w = b[2], h = b[3];
    if (mode == 2) { x -= w / 2; y -= h / 2; }
    else if (mode == 3) { x -= w; y -= h; w *= 2; h *= 2; }
    else if (mode == 1) { double x0 = fmin_js(x, w), y0 = fmin_js(y, h); w = fabs(w - x); h = fabs(h - y); x = x0; y = y0; }
    b[0] = x; b[1] = y; b[2] = w; b[3] = h;
}
static int p5_byte(double v) { /* the prelude's byte() */
    return v > 0 ? (v < 255 ? (int)(v + 0.5) : 255) : 0;
}

/* ---- the C functions ------------------------------------------------------------------------ */
/* a number, or undefined (missing): the cases a fast path takes; anything else goes to JS */
static inline int p5_plain(int argc, JSValueConst* argv, int n) {
    for (int i = 0; i < n && i < argc; i++)
        if (!JS_IsNumber(argv[i]) && !JS_IsUndefined(argv[i])) return 0;
    return 1;
}
static inline double p5_num_(JSContext* ctx, int argc, JSValueConst* argv, int i) {
    if (i >= argc || JS_IsUndefined(argv[i])) return NAN;
    double v = NAN;
    JS_ToFloat64(ctx, &v, argv[i]); /* a number (p5_plain): cannot fail */
    return v;
}
#define p5_num(argc, argv, i) p5_num_(ctx, argc, argv, i)
static inline int p5_undef(int argc, JSValueConst* argv, int i) { return i >= argc || JS_IsUndefined(argv[i]); }
/* rect/ellipse's (x, y, w[, h]) and square/circle's (x, y, size) as the box x y w h, before the mode */
static void p5_box_args(JSContext* ctx, int argc, JSValueConst* argv, int square, double b[4]) {
    b[0] = p5_num(argc, argv, 0); b[1] = p5_num(argc, argv, 1); b[2] = p5_num(argc, argv, 2);
    b[3] = square || p5_undef(argc, argv, 3) ? b[2] : p5_num(argc, argv, 3);
}

static JSValue p5_call(JSContext* ctx, int argc, JSValueConst* argv, int magic);

static JSValue p5_fn(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv, int magic) {
    Env* env = js_env(ctx);
    js_pf_some(env); /* the next env's lines, a few at a time (jsenv.h) */
    JsP5* p = env->p5;
    double* S = p->s;
    (void)this_val;
    switch (magic) {
    case P5F_FILL:
    case P5F_STROKE:
    case P5F_BACKGROUND: {
        /* the prelude's fastRgb: the first argument a number, RGB mode with 255 maxes */
        if (argc < 1 || !JS_IsNumber(argv[0]) || S[P5_FAST] != 1 || !p5_plain(argc, argv, 4)) break;
        double c[4];
        if (p5_undef(argc, argv, 2)) {
            int g = p5_byte(p5_num(argc, argv, 0));
            c[0] = c[1] = c[2] = g;
            c[3] = p5_undef(argc, argv, 1) ? 255 : p5_byte(p5_num(argc, argv, 1));
        } else {
            c[0] = p5_byte(p5_num(argc, argv, 0)); c[1] = p5_byte(p5_num(argc, argv, 1));
            c[2] = p5_byte(p5_num(argc, argv, 2));
            c[3] = p5_undef(argc, argv, 3) ? 255 : p5_byte(p5_num(argc, argv, 3));
        }
        if (magic == P5F_BACKGROUND) {
            if (env->rasterize) p5_background(&env->canvas[0], (int)c[0], (int)c[1], (int)c[2], (int)c[3]);
        } else {
            int at = magic == P5F_FILL ? P5_FILL : P5_STROKE;
            memcpy(S + at, c, sizeof(c));
            S[magic == P5F_FILL ? P5_DOFILL : P5_DOSTROKE] = 1;
        }
        return JS_UNDEFINED;
    }
    case P5F_NOFILL: S[P5_DOFILL] = 0; return JS_UNDEFINED;
    case P5F_NOSTROKE: S[P5_DOSTROKE] = 0; return JS_UNDEFINED;
    case P5F_STROKEWEIGHT:
        if (!p5_plain(argc, argv, 1)) break;
        S[P5_SW] = p5_num(argc, argv, 0);
        return JS_UNDEFINED;
    case P5F_RECT:
    case P5F_SQUARE: {
        if (!p5_plain(argc, argv, magic == P5F_RECT ? 4 : 3)) break;
        double b[4];
        p5_box_args(ctx, argc, argv, magic == P5F_SQUARE, b);
        if (S[P5_RECTM] != 0) p5_mode_box(S[P5_RECTM], b);
        double x = b[0], y = b[1], w = b[2], h = b[3];
        if (S[P5_DOFILL]) {
            const double* m = S;
            double* F = env->fbuf;
            double x1 = x + w, y1 = y + h;
            F[0] = m[0] * x + m[2] * y + m[4]; F[1] = m[1] * x + m[3] * y + m[5];
            F[2] = m[0] * x1 + m[2] * y + m[4]; F[3] = m[1] * x1 + m[3] * y + m[5];
            F[4] = m[0] * x1 + m[2] * y1 + m[4]; F[5] = m[1] * x1 + m[3] * y1 + m[5];
            F[6] = m[0] * x + m[2] * y1 + m[4]; F[7] = m[1] * x + m[3] * y1 + m[5];
            p5_poly_at(env, F, 4, S + P5_FILL);
        }
        if (S[P5_DOSTROKE] && S[P5_SW] > 0) {
            double pts[8] = {x, y, x + w, y, x + w, y + h, x, y + h};
            p5_outline(env, pts, 4, 1);
        }
        return JS_UNDEFINED;
    }
    case P5F_ELLIPSE:
    case P5F_CIRCLE: {
        if (!p5_plain(argc, argv, magic == P5F_ELLIPSE ? 4 : 3)) break;
        double b[4];
        p5_box_args(ctx, argc, argv, magic == P5F_CIRCLE, b);
        p5_mode_box(S[P5_ELLIPSEM], b);
        double cx = b[0] + b[2] / 2, cy = b[1] + b[3] / 2, rx = fabs(b[2]) / 2, ry = fabs(b[3]) / 2;
        if (S[P5_DOFILL]) p5_ellipse_prim(env, cx, cy, rx, ry, 0, 0, P5_FILL);
        if (S[P5_DOSTROKE] && S[P5_SW] > 0) {
            double hw = p5_half_width(S, !S[P5_DOFILL]);
            p5_ellipse_prim(env, cx, cy, rx + hw, ry + hw, rx - hw, ry - hw, P5_STROKE);
        }
        return JS_UNDEFINED;
    }
    case P5F_LINE: {
        if (!p5_plain(argc, argv, 4)) break;
        if (!S[P5_DOSTROKE] || !(S[P5_SW] > 0)) return JS_UNDEFINED;
        p5_segment(env, p5_num(argc, argv, 0), p5_num(argc, argv, 1), p5_num(argc, argv, 2), p5_num(argc, argv, 3),
                   p5_half_width(S, 1), P5_STROKE);
        return JS_UNDEFINED;
    }
    case P5F_TRIANGLE:
    case P5F_QUAD: {
        int n = magic == P5F_TRIANGLE ? 3 : 4;
        if (!p5_plain(argc, argv, 2 * n)) break;
        double pts[8];
        for (int i = 0; i < 2 * n; i++) pts[i] = p5_num(argc, argv, i);
        p5_shape_poly(env, pts, n);
        return JS_UNDEFINED;
    }
    case P5F_TRANSLATE: {
        if (!p5_plain(argc, argv, 2)) break;
        double x = p5_num(argc, argv, 0), y = p5_num(argc, argv, 1);
        S[4] += S[0] * x + S[2] * y;
        S[5] += S[1] * x + S[3] * y;
        return JS_UNDEFINED;
    }
    case P5F_ROTATE: {
        if (!p5_plain(argc, argv, 1)) break;
        double a = p5_num(argc, argv, 0);
        if (S[P5_ANGLEM] == 1) a = a * P5_PI / 180;
        double c = p5_cos(a), s = p5_sin(a), *m = S;
        double a0 = m[0] * c + m[2] * s, b0 = m[1] * c + m[3] * s;
        m[2] = m[2] * c - m[0] * s; m[3] = m[3] * c - m[1] * s; m[0] = a0; m[1] = b0;
        return JS_UNDEFINED;
    }
    case P5F_SCALE: {
        if (!p5_plain(argc, argv, 2)) break;
        double x = p5_num(argc, argv, 0), y = p5_undef(argc, argv, 1) ? x : p5_num(argc, argv, 1);
        S[0] *= x; S[1] *= x; S[2] *= y; S[3] *= y;
        return JS_UNDEFINED;
    }
    case P5F_PUSH: {
        double d = S[P5_DEPTH];
        if (d >= P5_STACK_MAX) break; /* the JS push() throws its error */
        memcpy(S + P5_STACK + (int)d * P5_PUSHED, S, P5_PUSHED * sizeof(double));
        S[P5_DEPTH] = d + 1;
        return JS_UNDEFINED;
    }
    case P5F_POP: {
        double d = S[P5_DEPTH];
        if (d == 0) return JS_UNDEFINED;
        memcpy(S, S + P5_STACK + ((int)d - 1) * P5_PUSHED, P5_PUSHED * sizeof(double));
        S[P5_DEPTH] = d - 1;
        return JS_UNDEFINED;
    }
    case P5F_RESETMATRIX: memcpy(S + P5_M, S + P5_BASE, 6 * sizeof(double)); return JS_UNDEFINED;
    case P5F_MATHRANDOM: return JS_NewFloat64(ctx, p5_rnd(p));
    case P5F_RANDOM: {
        if (!p5_plain(argc, argv, 2)) break; /* arrays, strings: the JS random() */
        double r = p5_rnd(p);
        if (p5_undef(argc, argv, 0)) return JS_NewFloat64(ctx, r);
        double a = p5_num(argc, argv, 0);
        if (p5_undef(argc, argv, 1)) return JS_NewFloat64(ctx, r * a);
        double b = p5_num(argc, argv, 1);
        return JS_NewFloat64(ctx, a + r * (b - a));
    }
    default: { /* the math kernels: numbers only (JS's own coercions differ for strings) */
        int two = magic == P5F_ATAN2 || magic == P5F_POW;
        if (argc < (two ? 2 : 1) || !JS_IsNumber(argv[0]) || (two && !JS_IsNumber(argv[1]))) break;
        double x = p5_num(argc, argv, 0), y = two ? p5_num(argc, argv, 1) : 0, r;
        switch (magic) {
        case P5F_SIN: r = p5_sin(x); break;
        case P5F_COS: r = p5_cos(x); break;
        case P5F_TAN: r = p5_tan(x); break;
        case P5F_ASIN: r = p5_asin(x); break;
        case P5F_ACOS: r = p5_acos(x); break;
        case P5F_ATAN: r = p5_atan(x); break;
        case P5F_ATAN2: r = p5_atan2(x, y); break;
        case P5F_EXP: r = p5_exp(x); break;
        case P5F_LOG: r = p5_log(x); break;
        default: r = p5_pow(x, y); break;
        }
        return JS_NewFloat64(ctx, r);
    }
    }
    return p5_call(ctx, argc, argv, magic);
}

/* the JS twin, for the inputs the fast path leaves to it */
static JSValue p5_call(JSContext* ctx, int argc, JSValueConst* argv, int magic) {
    return JS_Call(ctx, js_env(ctx)->p5->slow[magic], JS_UNDEFINED, argc, argv);
}

/* N.p5(slow): keeps slow's functions as the JS twins, installs the C functions as globals and
 * Math methods (as the prelude defines them: writable, configurable). */
static JSValue js_n_p5(JSContext* ctx, JSValueConst this_val, int argc, JSValueConst* argv) {
    (void)this_val;
    Env* env = js_env(ctx);
    if (argc < 1 || !JS_IsObject(argv[0])) return JS_ThrowTypeError(ctx, "p5: an object of the JS functions");
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue math = JS_GetPropertyStr(ctx, global, "Math");
    for (int i = 0; i < P5F_COUNT; i++) {
        const char* key = p5_funcs[i].where == 2 ? "mathRandom" : p5_funcs[i].name;
        JSValue fn = JS_GetPropertyStr(ctx, argv[0], key);
        if (!JS_IsFunction(ctx, fn)) {
            JS_FreeValue(ctx, fn); JS_FreeValue(ctx, math); JS_FreeValue(ctx, global);
            return JS_ThrowTypeError(ctx, "p5: no JS function %s", key);
        }
        JS_FreeValue(ctx, env->p5->slow[i]);
        env->p5->slow[i] = fn;
    }
    for (int i = 0; i < P5F_COUNT; i++) {
        JSValue f = JS_NewCFunctionMagic(ctx, p5_fn, p5_funcs[i].name, p5_funcs[i].length, JS_CFUNC_generic_magic, i);
        if (p5_funcs[i].where & 2)
            JS_DefinePropertyValueStr(ctx, math, p5_funcs[i].name, JS_DupValue(ctx, f),
                                      JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
        if (p5_funcs[i].where & 1) JS_SetPropertyStr(ctx, global, p5_funcs[i].name, JS_DupValue(ctx, f));
        JS_FreeValue(ctx, f);
    }
    JS_FreeValue(ctx, math);
    JS_FreeValue(ctx, global);
    env->p5->ready = 1;
    return JS_UNDEFINED;
}

static void p5_native_init(Env* env) {
    for (int i = 0; i < P5F_COUNT; i++) env->p5->slow[i] = JS_UNDEFINED;
}
static void p5_native_free(Env* env) {
    for (int i = 0; i < P5F_COUNT; i++) {
        JS_FreeValue(env->ctx, env->p5->slow[i]);
        env->p5->slow[i] = JS_UNDEFINED;
    }
}

#endif /* PUF_P5NATIVE_H */
