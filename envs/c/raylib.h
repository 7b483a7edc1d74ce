/* raylib.h — puffgpu's raylib-compatible subset: raylib's 2D drawing API rasterised in software
 * into puffgpu's RGB canvas. No window, no GPU, no display, no raylib library.
 *
 * PufferLib 5.0 envs `#include "raylib.h"` and draw in puf_render with raylib calls. This header
 * has the same names, types, colors, key codes and signatures for the part of raylib those envs
 * use (written here from raylib's public API; docs/design.md says why a subset), so such an env
 * compiles, trains and renders headless:
 *   - window calls open no window: InitWindow sizes the canvas, IsWindowReady says whether it has
 *     one, WindowShouldClose is false, SetTargetFPS/SetConfigFlags do nothing;
 *   - drawing calls write pixels into the canvas (alpha-blended; BeginMode2D cameras and scissor
 *     rectangles apply); the host turns the canvas into frames (viewer window, PNG, GIF);
 *   - text uses a built-in 3x5 pixel font (lowercase drawn as uppercase);
 *   - textures are not decoded: LoadTexture reads the size from a PNG header when it can and
 *     DrawTexture* fills the destination rectangle with the tint color;
 *   - input reads what the host passes in (vec_set_key); headless, no key is ever down.
 * 3D (BeginMode3D, models, meshes, shaders), audio, render textures and image editing are not
 * part of the subset: an env calling one fails to build, and puffgpu's builder names the call.
 *
 * puffgpu's own canvas calls (puf_canvas_begin, puf_fill_rect, puf_clear) draw into the same
 * canvas; PUF_CANVAS is defined when they are available.
 */
#ifndef RAYLIB_H
#define RAYLIB_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUFFGPU_RAYLIB_SUBSET 1
#define RAYLIB_VERSION "5.5 (puffgpu software subset)"

#ifndef PI
#define PI 3.14159265358979323846f
#endif
#ifndef DEG2RAD
#define DEG2RAD (PI / 180.0f)
#endif
#ifndef RAD2DEG
#define RAD2DEG (180.0f / PI)
#endif
#define CLITERAL(type) (type)

/* ---- Types -------------------------------------------------------------------------------- */
typedef struct Vector2 { float x; float y; } Vector2;
typedef struct Vector3 { float x; float y; float z; } Vector3;
typedef struct Vector4 { float x; float y; float z; float w; } Vector4;
typedef Vector4 Quaternion;
typedef struct Matrix {
    float m0, m4, m8, m12;
    float m1, m5, m9, m13;
    float m2, m6, m10, m14;
    float m3, m7, m11, m15;
} Matrix;
typedef struct Color { unsigned char r; unsigned char g; unsigned char b; unsigned char a; } Color;
typedef struct Rectangle { float x; float y; float width; float height; } Rectangle;
typedef struct Image { void* data; int width; int height; int mipmaps; int format; } Image;
typedef struct Texture { unsigned int id; int width; int height; int mipmaps; int format; } Texture;
typedef Texture Texture2D;
typedef struct GlyphInfo { int value; int offsetX; int offsetY; int advanceX; Image image; } GlyphInfo;
typedef struct Font {
    int baseSize; int glyphCount; int glyphPadding; Texture2D texture; Rectangle* recs;
    GlyphInfo* glyphs;
} Font;
typedef struct Camera2D { Vector2 offset; Vector2 target; float rotation; float zoom; } Camera2D;

/* ---- Colors (raylib's palette) ------------------------------------------------------------ */
#define LIGHTGRAY  CLITERAL(Color){ 200, 200, 200, 255 }
#define GRAY       CLITERAL(Color){ 130, 130, 130, 255 }
#define DARKGRAY   CLITERAL(Color){ 80, 80, 80, 255 }
#define YELLOW     CLITERAL(Color){ 253, 249, 0, 255 }
#define GOLD       CLITERAL(Color){ 255, 203, 0, 255 }
#define ORANGE     CLITERAL(Color){ 255, 161, 0, 255 }
#define PINK       CLITERAL(Color){ 255, 109, 194, 255 }
#define RED        CLITERAL(Color){ 230, 41, 55, 255 }
#define MAROON     CLITERAL(Color){ 190, 33, 55, 255 }
#define GREEN      CLITERAL(Color){ 0, 228, 48, 255 }
#define LIME       CLITERAL(Color){ 0, 158, 47, 255 }
#define DARKGREEN  CLITERAL(Color){ 0, 117, 44, 255 }
#define SKYBLUE    CLITERAL(Color){ 102, 191, 255, 255 }
#define BLUE       CLITERAL(Color){ 0, 121, 241, 255 }
#define DARKBLUE   CLITERAL(Color){ 0, 82, 172, 255 }
#define PURPLE     CLITERAL(Color){ 200, 122, 255, 255 }
#define VIOLET     CLITERAL(Color){ 135, 60, 190, 255 }
#define DARKPURPLE CLITERAL(Color){ 112, 31, 126, 255 }
#define BEIGE      CLITERAL(Color){ 211, 176, 131, 255 }
#define BROWN      CLITERAL(Color){ 127, 106, 79, 255 }
#define DARKBROWN  CLITERAL(Color){ 76, 63, 47, 255 }
#define WHITE      CLITERAL(Color){ 255, 255, 255, 255 }
#define BLACK      CLITERAL(Color){ 0, 0, 0, 255 }
#define BLANK      CLITERAL(Color){ 0, 0, 0, 0 }
#define MAGENTA    CLITERAL(Color){ 255, 0, 255, 255 }
#define RAYWHITE   CLITERAL(Color){ 245, 245, 245, 255 }

/* ---- Enums (raylib's values; key codes are GLFW's, so glfw key events map one to one) ----- */
typedef enum {
    FLAG_VSYNC_HINT = 0x40, FLAG_FULLSCREEN_MODE = 0x2, FLAG_WINDOW_RESIZABLE = 0x4,
    FLAG_WINDOW_UNDECORATED = 0x8, FLAG_WINDOW_HIDDEN = 0x80, FLAG_WINDOW_MINIMIZED = 0x200,
    FLAG_WINDOW_MAXIMIZED = 0x400, FLAG_WINDOW_UNFOCUSED = 0x800, FLAG_WINDOW_TOPMOST = 0x1000,
    FLAG_WINDOW_ALWAYS_RUN = 0x100, FLAG_WINDOW_TRANSPARENT = 0x10, FLAG_WINDOW_HIGHDPI = 0x2000,
    FLAG_MSAA_4X_HINT = 0x20, FLAG_INTERLACED_HINT = 0x10000
} ConfigFlags;

typedef enum {
    LOG_ALL = 0, LOG_TRACE, LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR, LOG_FATAL, LOG_NONE
} TraceLogLevel;

typedef enum {
    KEY_NULL = 0, KEY_APOSTROPHE = 39, KEY_COMMA = 44, KEY_MINUS = 45, KEY_PERIOD = 46,
    KEY_SLASH = 47, KEY_ZERO = 48, KEY_ONE, KEY_TWO, KEY_THREE, KEY_FOUR, KEY_FIVE, KEY_SIX,
    KEY_SEVEN, KEY_EIGHT, KEY_NINE, KEY_SEMICOLON = 59, KEY_EQUAL = 61, KEY_A = 65, KEY_B, KEY_C,
    KEY_D, KEY_E, KEY_F, KEY_G, KEY_H, KEY_I, KEY_J, KEY_K, KEY_L, KEY_M, KEY_N, KEY_O, KEY_P,
    KEY_Q, KEY_R, KEY_S, KEY_T, KEY_U, KEY_V, KEY_W, KEY_X, KEY_Y, KEY_Z,
    KEY_LEFT_BRACKET = 91, KEY_BACKSLASH = 92, KEY_RIGHT_BRACKET = 93, KEY_GRAVE = 96,
    KEY_SPACE = 32, KEY_ESCAPE = 256, KEY_ENTER = 257, KEY_TAB = 258, KEY_BACKSPACE = 259,
    KEY_INSERT = 260, KEY_DELETE = 261, KEY_RIGHT = 262, KEY_LEFT = 263, KEY_DOWN = 264,
    KEY_UP = 265, KEY_PAGE_UP = 266, KEY_PAGE_DOWN = 267, KEY_HOME = 268, KEY_END = 269,
    KEY_CAPS_LOCK = 280, KEY_SCROLL_LOCK = 281, KEY_NUM_LOCK = 282, KEY_PRINT_SCREEN = 283,
    KEY_PAUSE = 284, KEY_F1 = 290, KEY_F2, KEY_F3, KEY_F4, KEY_F5, KEY_F6, KEY_F7, KEY_F8,
    KEY_F9, KEY_F10, KEY_F11, KEY_F12, KEY_LEFT_SHIFT = 340, KEY_LEFT_CONTROL = 341,
    KEY_LEFT_ALT = 342, KEY_LEFT_SUPER = 343, KEY_RIGHT_SHIFT = 344, KEY_RIGHT_CONTROL = 345,
    KEY_RIGHT_ALT = 346, KEY_RIGHT_SUPER = 347, KEY_KB_MENU = 348
} KeyboardKey;

typedef enum {
    MOUSE_BUTTON_LEFT = 0, MOUSE_BUTTON_RIGHT = 1, MOUSE_BUTTON_MIDDLE = 2, MOUSE_BUTTON_SIDE = 3,
    MOUSE_BUTTON_EXTRA = 4, MOUSE_BUTTON_FORWARD = 5, MOUSE_BUTTON_BACK = 6
} MouseButton;
#define MOUSE_LEFT_BUTTON MOUSE_BUTTON_LEFT
#define MOUSE_RIGHT_BUTTON MOUSE_BUTTON_RIGHT
#define MOUSE_MIDDLE_BUTTON MOUSE_BUTTON_MIDDLE

typedef enum {
    TEXTURE_FILTER_POINT = 0, TEXTURE_FILTER_BILINEAR, TEXTURE_FILTER_TRILINEAR,
    TEXTURE_FILTER_ANISOTROPIC_4X, TEXTURE_FILTER_ANISOTROPIC_8X, TEXTURE_FILTER_ANISOTROPIC_16X
} TextureFilter;

typedef enum {
    BLEND_ALPHA = 0, BLEND_ADDITIVE, BLEND_MULTIPLIED, BLEND_ADD_COLORS, BLEND_SUBTRACT_COLORS,
    BLEND_ALPHA_PREMULTIPLY, BLEND_CUSTOM, BLEND_CUSTOM_SEPARATE
} BlendMode;

/* ---- The canvas: an RGB frame every drawing call writes into ------------------------------- */
#define PUF_CANVAS 1

typedef struct {
    unsigned char* pixels;  /* [height][width][3], row-major, top row first */
    int width;
    int height;
    size_t capacity;        /* bytes allocated */
    int dirty;              /* set by every draw; the host clears it before puf_render */
    int window_ready;       /* InitWindow was called (and CloseWindow not since) */
    int clip_x0, clip_y0, clip_x1, clip_y1;  /* scissor rectangle, clipped to the canvas */
    int camera_on;
    Camera2D camera;
    long frames;            /* EndDrawing calls: GetTime/GetFrameTime count in frames */
    int target_fps;
    unsigned char keys[512];  /* bit 0 down, bit 1 pressed since the last frame */
    unsigned char mouse[8];
    Vector2 mouse_pos;
} PufCanvas;

/* One canvas per compiled env module; rendering is single-threaded (the host calls puf_render
 * from one thread, never during puf_step). */
static PufCanvas puf_canvas;

static inline void puf_canvas_reset_clip(void) {
    puf_canvas.clip_x0 = 0;
    puf_canvas.clip_y0 = 0;
    puf_canvas.clip_x1 = puf_canvas.width;
    puf_canvas.clip_y1 = puf_canvas.height;
}

/* Starts a frame of width x height pixels (contents kept if the size is unchanged); returns 0
 * if it could not allocate. */
static inline int puf_canvas_begin(int width, int height) {
    if (width <= 0 || height <= 0) return 0;
    size_t need = (size_t)width * (size_t)height * 3;
    if (need > puf_canvas.capacity) {
        unsigned char* p = (unsigned char*)realloc(puf_canvas.pixels, need);
        if (p == NULL) return 0;
        puf_canvas.pixels = p;
        puf_canvas.capacity = need;
    }
    if (width != puf_canvas.width || height != puf_canvas.height) memset(puf_canvas.pixels, 0, need);
    puf_canvas.width = width;
    puf_canvas.height = height;
    puf_canvas_reset_clip();
    puf_canvas.dirty = 1;
    return 1;
}

static inline void puf_canvas_free(void) {
    free(puf_canvas.pixels);
    puf_canvas.pixels = NULL;
    puf_canvas.capacity = 0;
    puf_canvas.width = puf_canvas.height = 0;
    puf_canvas.window_ready = 0;
    puf_canvas_reset_clip();
}

/* Fills pixels [x0, x1) of row y, blending by alpha, clipped. */
static inline void puf_span(int y, int x0, int x1, Color c) {
    if (c.a == 0 || y < puf_canvas.clip_y0 || y >= puf_canvas.clip_y1) return;
    if (x0 < puf_canvas.clip_x0) x0 = puf_canvas.clip_x0;
    if (x1 > puf_canvas.clip_x1) x1 = puf_canvas.clip_x1;
    if (x0 >= x1) return;
    puf_canvas.dirty = 1;
    unsigned char* p = puf_canvas.pixels + ((size_t)y * puf_canvas.width + x0) * 3;
    if (c.a == 255) {
        for (int x = x0; x < x1; x++, p += 3) { p[0] = c.r; p[1] = c.g; p[2] = c.b; }
        return;
    }
    unsigned a = c.a, b = 255 - c.a;
    for (int x = x0; x < x1; x++, p += 3) {
        p[0] = (unsigned char)((c.r * a + p[0] * b + 127) / 255);
        p[1] = (unsigned char)((c.g * a + p[1] * b + 127) / 255);
        p[2] = (unsigned char)((c.b * a + p[2] * b + 127) / 255);
    }
}

/* puffgpu's own drawing calls (PufferLib's header has none: prefer the raylib ones). */
static inline void puf_fill_rect(int x, int y, int w, int h, unsigned char r, unsigned char g,
                                 unsigned char b) {
    Color c = {r, g, b, 255};
    for (int yy = y; yy < y + h; yy++) puf_span(yy, x, x + w, c);
}

static inline void puf_clear(unsigned char r, unsigned char g, unsigned char b) {
    puf_fill_rect(0, 0, puf_canvas.width, puf_canvas.height, r, g, b);
}

/* ---- Geometry helpers: world -> canvas (BeginMode2D), convex fills by pixel centers -------- */
static inline Vector2 puf_xf(Vector2 p) {
    if (!puf_canvas.camera_on) return p;
    const Camera2D* c = &puf_canvas.camera;
    float x = (p.x - c->target.x) * c->zoom, y = (p.y - c->target.y) * c->zoom;
    if (c->rotation != 0.0f) {
        float s = sinf(c->rotation * DEG2RAD), k = cosf(c->rotation * DEG2RAD);
        float rx = x * k - y * s;
        y = x * s + y * k;
        x = rx;
    }
    return (Vector2){x + c->offset.x, y + c->offset.y};
}

static inline float puf_xf_scale(void) { return puf_canvas.camera_on ? puf_canvas.camera.zoom : 1.0f; }

static inline int puf_camera_rotated(void) {
    return puf_canvas.camera_on && puf_canvas.camera.rotation != 0.0f;
}

/* Fills a convex polygon given in canvas coordinates (either winding): pixels whose centers lie
 * inside. */
static inline void puf_fill_convex(const Vector2* v, int n, Color c) {
    if (n < 3 || puf_canvas.pixels == NULL) return;
    float ymin = v[0].y, ymax = v[0].y;
    for (int i = 1; i < n; i++) { ymin = fminf(ymin, v[i].y); ymax = fmaxf(ymax, v[i].y); }
    int y0 = (int)ceilf(ymin - 0.5f), y1 = (int)floorf(ymax - 0.5f);
    if (y0 < puf_canvas.clip_y0) y0 = puf_canvas.clip_y0;
    if (y1 > puf_canvas.clip_y1 - 1) y1 = puf_canvas.clip_y1 - 1;
    for (int y = y0; y <= y1; y++) {
        float yc = y + 0.5f, xl = INFINITY, xr = -INFINITY;
        for (int i = 0; i < n; i++) {
            Vector2 a = v[i], b = v[(i + 1) % n];
            if ((a.y <= yc && yc < b.y) || (b.y <= yc && yc < a.y)) {
                float x = a.x + (yc - a.y) * (b.x - a.x) / (b.y - a.y);
                xl = fminf(xl, x);
                xr = fmaxf(xr, x);
            }
        }
        if (xl > xr) continue;
        int x0 = (int)ceilf(xl - 0.5f), x1 = (int)floorf(xr - 0.5f) + 1;
        puf_span(y, x0, x1, c);
    }
}

/* World-space convex polygon: transformed by the camera, then filled. */
static inline void puf_fill_world(const Vector2* v, int n, Color c) {
    Vector2 t[64];
    if (n > 64) n = 64;
    for (int i = 0; i < n; i++) t[i] = puf_xf(v[i]);
    puf_fill_convex(t, n, c);
}

/* Axis-aligned world rectangle. */
static inline void puf_fill_rectf(float x, float y, float w, float h, Color c) {
    if (w < 0) { x += w; w = -w; }
    if (h < 0) { y += h; h = -h; }
    if (puf_camera_rotated()) {
        Vector2 q[4] = {{x, y}, {x + w, y}, {x + w, y + h}, {x, y + h}};
        puf_fill_world(q, 4, c);
        return;
    }
    Vector2 a = puf_xf((Vector2){x, y}), b = puf_xf((Vector2){x + w, y + h});
    int x0 = (int)ceilf(a.x - 0.5f), x1 = (int)ceilf(b.x - 0.5f);
    int y0 = (int)ceilf(a.y - 0.5f), y1 = (int)ceilf(b.y - 0.5f);
    for (int yy = y0; yy < y1; yy++) puf_span(yy, x0, x1, c);
}

/* Pixels whose centers lie within the ellipse (rx, ry) around a canvas point. */
static inline void puf_fill_ellipse_px(Vector2 ctr, float rx, float ry, Color c) {
    if (rx <= 0 || ry <= 0) return;
    int y0 = (int)ceilf(ctr.y - ry - 0.5f), y1 = (int)floorf(ctr.y + ry - 0.5f);
    for (int y = y0; y <= y1; y++) {
        float dy = (y + 0.5f - ctr.y) / ry;
        if (dy * dy > 1.0f) continue;
        float hw = rx * sqrtf(1.0f - dy * dy);
        puf_span(y, (int)ceilf(ctr.x - hw - 0.5f), (int)floorf(ctr.x + hw - 0.5f) + 1, c);
    }
}

/* Per-pixel ring/sector: inner <= distance <= outer and the angle (degrees, clockwise on
 * screen from +x, as raylib measures it) within [a0, a1]. */
static inline void puf_fill_ring_px(Vector2 ctr, float inner, float outer, float a0, float a1, Color c) {
    if (outer <= 0) return;
    int full = fabsf(a1 - a0) >= 360.0f;
    if (a1 < a0) { float t = a0; a0 = a1; a1 = t; }
    int y0 = (int)floorf(ctr.y - outer), y1 = (int)ceilf(ctr.y + outer);
    int x0 = (int)floorf(ctr.x - outer), x1 = (int)ceilf(ctr.x + outer);
    for (int y = y0; y <= y1; y++) {
        for (int x = x0; x <= x1; x++) {
            float dx = x + 0.5f - ctr.x, dy = y + 0.5f - ctr.y, d = sqrtf(dx * dx + dy * dy);
            if (d < inner || d > outer) continue;
            if (!full) {
                float a = atan2f(dy, dx) * RAD2DEG;
                while (a < a0) a += 360.0f;
                while (a >= a0 + 360.0f) a -= 360.0f;
                if (a > a1) continue;
            }
            puf_span(y, x, x + 1, c);
        }
    }
}

/* A 1-pixel line between canvas points (DDA over pixel centers). */
static inline void puf_line_px(Vector2 a, Vector2 b, Color c) {
    float dx = b.x - a.x, dy = b.y - a.y;
    int steps = (int)ceilf(fmaxf(fabsf(dx), fabsf(dy)));
    if (steps < 1) steps = 1;
    if (steps > 1 << 16) steps = 1 << 16;
    for (int i = 0; i <= steps; i++) {
        float t = (float)i / (float)steps;
        int x = (int)floorf(a.x + dx * t), y = (int)floorf(a.y + dy * t);
        puf_span(y, x, x + 1, c);
    }
}

static inline void puf_line_world(Vector2 a, Vector2 b, float thick, Color c) {
    if (thick <= 1.0f) {
        puf_line_px(puf_xf(a), puf_xf(b), c);
        return;
    }
    float dx = b.x - a.x, dy = b.y - a.y, len = sqrtf(dx * dx + dy * dy);
    if (len <= 0.0f) return;
    float nx = -dy / len * thick * 0.5f, ny = dx / len * thick * 0.5f;
    Vector2 q[4] = {{a.x + nx, a.y + ny}, {b.x + nx, b.y + ny}, {b.x - nx, b.y - ny}, {a.x - nx, a.y - ny}};
    puf_fill_world(q, 4, c);
}

/* ---- Window and frame ---------------------------------------------------------------------- */
static inline void InitWindow(int width, int height, const char* title) {
    (void)title;
    if (puf_canvas_begin(width, height)) puf_canvas.window_ready = 1;
}
static inline void CloseWindow(void) { puf_canvas_free(); }
static inline bool IsWindowReady(void) { return puf_canvas.window_ready != 0; }
static inline bool WindowShouldClose(void) { return false; }
static inline bool IsWindowFocused(void) { return puf_canvas.window_ready != 0; }
static inline void SetTargetFPS(int fps) { puf_canvas.target_fps = fps; }
static inline void SetConfigFlags(unsigned int flags) { (void)flags; }
static inline void SetWindowTitle(const char* title) { (void)title; }
static inline void SetWindowSize(int width, int height) { puf_canvas_begin(width, height); }
static inline void ToggleFullscreen(void) {}
static inline void SetExitKey(int key) { (void)key; }
static inline int GetScreenWidth(void) { return puf_canvas.width; }
static inline int GetScreenHeight(void) { return puf_canvas.height; }
static inline int GetRenderWidth(void) { return puf_canvas.width; }
static inline int GetRenderHeight(void) { return puf_canvas.height; }
static inline int GetFPS(void) { return puf_canvas.target_fps > 0 ? puf_canvas.target_fps : 60; }
static inline float GetFrameTime(void) { return 1.0f / (float)GetFPS(); }
static inline double GetTime(void) { return (double)puf_canvas.frames / (double)GetFPS(); }
static inline void SetTraceLogLevel(int level) { (void)level; }
static inline void TraceLog(int level, const char* text, ...) {
    if (level < LOG_WARNING) return;
    va_list args;
    va_start(args, text);
    fputs(level >= LOG_ERROR ? "raylib ERROR: " : "raylib WARNING: ", stderr);
    vfprintf(stderr, text, args);
    fputc('\n', stderr);
    va_end(args);
}
static inline int GetRandomValue(int min, int max) {
    if (min > max) { int t = min; min = max; max = t; }
    return min + (int)((unsigned)rand() % (unsigned)(max - min + 1));
}
static inline void SetRandomSeed(unsigned int seed) { srand(seed); }

static inline void BeginDrawing(void) {
    if (puf_canvas.pixels == NULL) puf_canvas_begin(1, 1);
}
static inline void EndDrawing(void) {
    puf_canvas.frames++;
    puf_canvas.camera_on = 0;
    puf_canvas_reset_clip();
    for (int i = 0; i < 512; i++) puf_canvas.keys[i] &= 1;
    for (int i = 0; i < 8; i++) puf_canvas.mouse[i] &= 1;
}
static inline void ClearBackground(Color c) {
    int x0 = puf_canvas.clip_x0, y0 = puf_canvas.clip_y0;
    int x1 = puf_canvas.clip_x1, y1 = puf_canvas.clip_y1;
    puf_canvas_reset_clip();
    c.a = 255;
    for (int y = 0; y < puf_canvas.height; y++) puf_span(y, 0, puf_canvas.width, c);
    puf_canvas.clip_x0 = x0; puf_canvas.clip_y0 = y0; puf_canvas.clip_x1 = x1; puf_canvas.clip_y1 = y1;
}
static inline void BeginMode2D(Camera2D camera) {
    puf_canvas.camera = camera;
    puf_canvas.camera_on = 1;
}
static inline void EndMode2D(void) { puf_canvas.camera_on = 0; }
static inline Vector2 GetWorldToScreen2D(Vector2 p, Camera2D camera) {
    Camera2D saved = puf_canvas.camera;
    int on = puf_canvas.camera_on;
    puf_canvas.camera = camera;
    puf_canvas.camera_on = 1;
    Vector2 r = puf_xf(p);
    puf_canvas.camera = saved;
    puf_canvas.camera_on = on;
    return r;
}
static inline Vector2 GetScreenToWorld2D(Vector2 p, Camera2D c) {
    float x = p.x - c.offset.x, y = p.y - c.offset.y;
    if (c.rotation != 0.0f) {
        float s = sinf(-c.rotation * DEG2RAD), k = cosf(-c.rotation * DEG2RAD);
        float rx = x * k - y * s;
        y = x * s + y * k;
        x = rx;
    }
    float z = c.zoom != 0.0f ? c.zoom : 1.0f;
    return (Vector2){x / z + c.target.x, y / z + c.target.y};
}
static inline void BeginScissorMode(int x, int y, int width, int height) {
    puf_canvas_reset_clip();
    if (x > puf_canvas.clip_x0) puf_canvas.clip_x0 = x;
    if (y > puf_canvas.clip_y0) puf_canvas.clip_y0 = y;
    if (x + width < puf_canvas.clip_x1) puf_canvas.clip_x1 = x + width;
    if (y + height < puf_canvas.clip_y1) puf_canvas.clip_y1 = y + height;
}
static inline void EndScissorMode(void) { puf_canvas_reset_clip(); }
static inline void BeginBlendMode(int mode) { (void)mode; }
static inline void EndBlendMode(void) {}

/* ---- Input (what the host passed in; nothing when headless) --------------------------------- */
static inline bool IsKeyDown(int key) { return key >= 0 && key < 512 && (puf_canvas.keys[key] & 1); }
static inline bool IsKeyUp(int key) { return !IsKeyDown(key); }
static inline bool IsKeyPressed(int key) { return key >= 0 && key < 512 && (puf_canvas.keys[key] & 2); }
static inline bool IsKeyPressedRepeat(int key) { return IsKeyPressed(key); }
static inline bool IsKeyReleased(int key) { (void)key; return false; }
static inline int GetKeyPressed(void) { return 0; }
static inline int GetCharPressed(void) { return 0; }
static inline bool IsMouseButtonDown(int b) { return b >= 0 && b < 8 && (puf_canvas.mouse[b] & 1); }
static inline bool IsMouseButtonUp(int b) { return !IsMouseButtonDown(b); }
static inline bool IsMouseButtonPressed(int b) { return b >= 0 && b < 8 && (puf_canvas.mouse[b] & 2); }
static inline bool IsMouseButtonReleased(int b) { (void)b; return false; }
static inline Vector2 GetMousePosition(void) { return puf_canvas.mouse_pos; }
static inline int GetMouseX(void) { return (int)puf_canvas.mouse_pos.x; }
static inline int GetMouseY(void) { return (int)puf_canvas.mouse_pos.y; }
static inline Vector2 GetMouseDelta(void) { return (Vector2){0.0f, 0.0f}; }
static inline float GetMouseWheelMove(void) { return 0.0f; }
static inline void SetMousePosition(int x, int y) { puf_canvas.mouse_pos = (Vector2){(float)x, (float)y}; }

/* ---- Colors ---------------------------------------------------------------------------------- */
static inline Color Fade(Color c, float alpha) {
    alpha = alpha < 0.0f ? 0.0f : alpha > 1.0f ? 1.0f : alpha;
    c.a = (unsigned char)(255.0f * alpha);
    return c;
}
static inline Color ColorAlpha(Color c, float alpha) { return Fade(c, alpha); }
static inline Color GetColor(unsigned int hex) {
    return (Color){(unsigned char)(hex >> 24), (unsigned char)(hex >> 16), (unsigned char)(hex >> 8),
                   (unsigned char)hex};
}
static inline int ColorToInt(Color c) {
    return (int)(((unsigned)c.r << 24) | ((unsigned)c.g << 16) | ((unsigned)c.b << 8) | c.a);
}
static inline Color ColorFromHSV(float hue, float saturation, float value) {
    float rgb[3];
    for (int i = 0; i < 3; i++) {  /* k = 5, 3, 1 for r, g, b */
        float k = fmodf((float)(5 - 2 * i) + hue / 60.0f, 6.0f);
        float t = fminf(fminf(k, 4.0f - k), 1.0f);
        rgb[i] = value - value * saturation * fmaxf(0.0f, t);
    }
    return (Color){(unsigned char)(rgb[0] * 255.0f), (unsigned char)(rgb[1] * 255.0f),
                   (unsigned char)(rgb[2] * 255.0f), 255};
}
static inline Color ColorBrightness(Color c, float factor) {
    factor = factor < -1.0f ? -1.0f : factor > 1.0f ? 1.0f : factor;
    float ch[3] = {c.r, c.g, c.b};
    for (int i = 0; i < 3; i++) ch[i] = factor < 0 ? ch[i] * (1 + factor) : ch[i] + (255 - ch[i]) * factor;
    return (Color){(unsigned char)ch[0], (unsigned char)ch[1], (unsigned char)ch[2], c.a};
}
static inline Color puf_lerp_color(Color a, Color b, float t) {
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return (Color){(unsigned char)(a.r + (b.r - a.r) * t), (unsigned char)(a.g + (b.g - a.g) * t),
                   (unsigned char)(a.b + (b.b - a.b) * t), (unsigned char)(a.a + (b.a - a.a) * t)};
}

/* ---- Shapes ---------------------------------------------------------------------------------- */
static inline void DrawPixel(int x, int y, Color c) { puf_fill_rectf((float)x, (float)y, 1, 1, c); }
static inline void DrawPixelV(Vector2 p, Color c) { puf_fill_rectf(p.x, p.y, 1, 1, c); }
static inline void DrawLine(int x0, int y0, int x1, int y1, Color c) {
    puf_line_world((Vector2){x0 + 0.5f, y0 + 0.5f}, (Vector2){x1 + 0.5f, y1 + 0.5f}, 1.0f, c);
}
static inline void DrawLineV(Vector2 a, Vector2 b, Color c) { puf_line_world(a, b, 1.0f, c); }
static inline void DrawLineEx(Vector2 a, Vector2 b, float thick, Color c) { puf_line_world(a, b, thick, c); }
static inline void DrawLineStrip(const Vector2* points, int n, Color c) {
    for (int i = 0; i + 1 < n; i++) puf_line_world(points[i], points[i + 1], 1.0f, c);
}
static inline void DrawCircleV(Vector2 center, float radius, Color c) {
    float s = puf_xf_scale();
    puf_fill_ellipse_px(puf_xf(center), radius * s, radius * s, c);
}
static inline void DrawCircle(int cx, int cy, float radius, Color c) {
    DrawCircleV((Vector2){(float)cx, (float)cy}, radius, c);
}
static inline void DrawCircleGradient(int cx, int cy, float radius, Color inner, Color outer) {
    Vector2 ctr = puf_xf((Vector2){(float)cx, (float)cy});
    float r = radius * puf_xf_scale();
    for (int y = (int)floorf(ctr.y - r); y <= (int)ceilf(ctr.y + r); y++) {
        for (int x = (int)floorf(ctr.x - r); x <= (int)ceilf(ctr.x + r); x++) {
            float dx = x + 0.5f - ctr.x, dy = y + 0.5f - ctr.y, d = sqrtf(dx * dx + dy * dy);
            if (d <= r) puf_span(y, x, x + 1, puf_lerp_color(inner, outer, d / r));
        }
    }
}
static inline void DrawCircleLinesV(Vector2 center, float radius, Color c) {
    float r = radius * puf_xf_scale();
    puf_fill_ring_px(puf_xf(center), r - 1.0f, r, 0.0f, 360.0f, c);
}
static inline void DrawCircleLines(int cx, int cy, float radius, Color c) {
    DrawCircleLinesV((Vector2){(float)cx, (float)cy}, radius, c);
}
static inline void DrawCircleSector(Vector2 center, float radius, float a0, float a1, int segments, Color c) {
    (void)segments;
    float s = puf_xf_scale(), rot = puf_canvas.camera_on ? puf_canvas.camera.rotation : 0.0f;
    puf_fill_ring_px(puf_xf(center), 0.0f, radius * s, a0 + rot, a1 + rot, c);
}
static inline void DrawCircleSectorLines(Vector2 center, float radius, float a0, float a1, int segments, Color c) {
    (void)segments;
    float s = puf_xf_scale(), rot = puf_canvas.camera_on ? puf_canvas.camera.rotation : 0.0f;
    puf_fill_ring_px(puf_xf(center), radius * s - 1.0f, radius * s, a0 + rot, a1 + rot, c);
}
static inline void DrawRing(Vector2 center, float inner, float outer, float a0, float a1, int segments, Color c) {
    (void)segments;
    float s = puf_xf_scale(), rot = puf_canvas.camera_on ? puf_canvas.camera.rotation : 0.0f;
    puf_fill_ring_px(puf_xf(center), inner * s, outer * s, a0 + rot, a1 + rot, c);
}
static inline void DrawRingLines(Vector2 center, float inner, float outer, float a0, float a1, int segments, Color c) {
    DrawCircleSectorLines(center, inner, a0, a1, segments, c);
    DrawCircleSectorLines(center, outer, a0, a1, segments, c);
}
static inline void DrawEllipse(int cx, int cy, float rx, float ry, Color c) {
    float s = puf_xf_scale();
    puf_fill_ellipse_px(puf_xf((Vector2){(float)cx, (float)cy}), rx * s, ry * s, c);
}
static inline void DrawEllipseLines(int cx, int cy, float rx, float ry, Color c) {
    Vector2 prev = {cx + rx, (float)cy};
    for (int i = 1; i <= 64; i++) {
        float a = 2.0f * PI * (float)i / 64.0f;
        Vector2 p = {cx + rx * cosf(a), cy + ry * sinf(a)};
        puf_line_world(prev, p, 1.0f, c);
        prev = p;
    }
}
static inline void DrawRectangle(int x, int y, int w, int h, Color c) {
    puf_fill_rectf((float)x, (float)y, (float)w, (float)h, c);
}
static inline void DrawRectangleV(Vector2 pos, Vector2 size, Color c) { puf_fill_rectf(pos.x, pos.y, size.x, size.y, c); }
static inline void DrawRectangleRec(Rectangle r, Color c) { puf_fill_rectf(r.x, r.y, r.width, r.height, c); }
/* rec rotated by `rotation` degrees around `origin` (relative to rec's top-left), which lands
 * on (rec.x, rec.y). */
static inline void DrawRectanglePro(Rectangle rec, Vector2 origin, float rotation, Color c) {
    float s = sinf(rotation * DEG2RAD), k = cosf(rotation * DEG2RAD);
    float xs[4] = {-origin.x, rec.width - origin.x, rec.width - origin.x, -origin.x};
    float ys[4] = {-origin.y, -origin.y, rec.height - origin.y, rec.height - origin.y};
    Vector2 q[4];
    for (int i = 0; i < 4; i++) q[i] = (Vector2){rec.x + xs[i] * k - ys[i] * s, rec.y + xs[i] * s + ys[i] * k};
    puf_fill_world(q, 4, c);
}
static inline void DrawRectangleLinesEx(Rectangle r, float thick, Color c) {
    if (thick > r.width / 2 || thick > r.height / 2) { DrawRectangleRec(r, c); return; }
    puf_fill_rectf(r.x, r.y, r.width, thick, c);
    puf_fill_rectf(r.x, r.y + r.height - thick, r.width, thick, c);
    puf_fill_rectf(r.x, r.y + thick, thick, r.height - 2 * thick, c);
    puf_fill_rectf(r.x + r.width - thick, r.y + thick, thick, r.height - 2 * thick, c);
}
static inline void DrawRectangleLines(int x, int y, int w, int h, Color c) {
    DrawRectangleLinesEx((Rectangle){(float)x, (float)y, (float)w, (float)h}, 1.0f, c);
}
static inline void DrawRectangleRounded(Rectangle r, float roundness, int segments, Color c) {
    (void)segments;
    float rad = fminf(r.width, r.height) * 0.5f * fminf(fmaxf(roundness, 0.0f), 1.0f);
    if (rad < 1.0f) { DrawRectangleRec(r, c); return; }
    puf_fill_rectf(r.x + rad, r.y, r.width - 2 * rad, r.height, c);
    puf_fill_rectf(r.x, r.y + rad, rad, r.height - 2 * rad, c);
    puf_fill_rectf(r.x + r.width - rad, r.y + rad, rad, r.height - 2 * rad, c);
    float s = puf_xf_scale();
    float cx[4] = {r.x + rad, r.x + r.width - rad, r.x + r.width - rad, r.x + rad};
    float cy[4] = {r.y + rad, r.y + rad, r.y + r.height - rad, r.y + r.height - rad};
    float a0[4] = {180.0f, 270.0f, 0.0f, 90.0f};
    for (int i = 0; i < 4; i++) puf_fill_ring_px(puf_xf((Vector2){cx[i], cy[i]}), 0.0f, rad * s, a0[i], a0[i] + 90.0f, c);
}
static inline void DrawRectangleRoundedLines(Rectangle r, float roundness, int segments, Color c) {
    (void)roundness; (void)segments;
    DrawRectangleLinesEx(r, 1.0f, c);
}
static inline void DrawRectangleRoundedLinesEx(Rectangle r, float roundness, int segments, float thick, Color c) {
    (void)roundness; (void)segments;
    DrawRectangleLinesEx(r, thick, c);
}
static inline void DrawRectangleGradientEx(Rectangle r, Color tl, Color bl, Color br, Color tr) {
    int h = (int)r.height, w = (int)r.width;
    for (int j = 0; j < h; j++) {
        float v = h > 1 ? (float)j / (float)(h - 1) : 0.0f;
        Color left = puf_lerp_color(tl, bl, v), right = puf_lerp_color(tr, br, v);
        for (int i = 0; i < w; i++) {
            float u = w > 1 ? (float)i / (float)(w - 1) : 0.0f;
            puf_fill_rectf(r.x + i, r.y + j, 1, 1, puf_lerp_color(left, right, u));
        }
    }
}
static inline void DrawRectangleGradientV(int x, int y, int w, int h, Color top, Color bottom) {
    DrawRectangleGradientEx((Rectangle){(float)x, (float)y, (float)w, (float)h}, top, bottom, bottom, top);
}
static inline void DrawRectangleGradientH(int x, int y, int w, int h, Color left, Color right) {
    DrawRectangleGradientEx((Rectangle){(float)x, (float)y, (float)w, (float)h}, left, left, right, right);
}
static inline void DrawTriangle(Vector2 a, Vector2 b, Vector2 c, Color color) {
    Vector2 t[3] = {a, b, c};
    puf_fill_world(t, 3, color);
}
static inline void DrawTriangleLines(Vector2 a, Vector2 b, Vector2 c, Color color) {
    puf_line_world(a, b, 1.0f, color);
    puf_line_world(b, c, 1.0f, color);
    puf_line_world(c, a, 1.0f, color);
}
static inline void DrawTriangleFan(const Vector2* points, int n, Color c) {
    for (int i = 1; i + 1 < n; i++) DrawTriangle(points[0], points[i], points[i + 1], c);
}
static inline void DrawTriangleStrip(const Vector2* points, int n, Color c) {
    for (int i = 0; i + 2 < n; i++) DrawTriangle(points[i], points[i + 1], points[i + 2], c);
}
static inline void puf_poly_points(Vector2 center, int sides, float radius, float rotation, Vector2* out) {
    for (int i = 0; i < sides; i++) {
        float a = (rotation + 360.0f * (float)i / (float)sides) * DEG2RAD;
        out[i] = (Vector2){center.x + radius * cosf(a), center.y + radius * sinf(a)};
    }
}
static inline void DrawPoly(Vector2 center, int sides, float radius, float rotation, Color c) {
    Vector2 p[64];
    if (sides < 3) sides = 3;
    if (sides > 64) sides = 64;
    puf_poly_points(center, sides, radius, rotation, p);
    puf_fill_world(p, sides, c);
}
static inline void DrawPolyLinesEx(Vector2 center, int sides, float radius, float rotation, float thick, Color c) {
    Vector2 p[64];
    if (sides < 3) sides = 3;
    if (sides > 64) sides = 64;
    puf_poly_points(center, sides, radius, rotation, p);
    for (int i = 0; i < sides; i++) puf_line_world(p[i], p[(i + 1) % sides], thick, c);
}
static inline void DrawPolyLines(Vector2 center, int sides, float radius, float rotation, Color c) {
    DrawPolyLinesEx(center, sides, radius, rotation, 1.0f, c);
}

/* ---- Text: a 3x5 pixel font ------------------------------------------------------------------ */
/* Glyphs for ' ' .. '`' and '{' .. '~' (lowercase letters draw as uppercase): 5 rows of 3
 * pixels, '#' on, read top row first. */
static const char* const puf_font_glyphs[] = {
    "...............", ".#..#..#.....#.", "#.##.#.........", "#.#####.#####.#",    /*  !"# */
    ".####..#..####.", "#.#..#.#.#..#.#", ".#.#.#.#.#.#.##", ".#..#..........",    /* $%&' */
    "..#.#..#..#...#", "#...#..#..#.#..", "...#.#.#.#.#...", "....#.###.#....",    /* ()*+ */
    "..........#.#..", "......###......", ".............#.", "..#..#.#.#..#..",    /* ,-./ */
    "####.##.##.####", ".#.##..#..#.###", "##...#.#.#..###", "##...#.#...###.",    /* 0123 */
    "#.##.####..#..#", "####..##...###.", ".###..####.####", "###..#..#.#..#.",    /* 4567 */
    "####.#####.####", "####.####..###.", "....#.....#....", "....#.....#.#..",    /* 89:; */
    "..#.#.#...#...#", "...###...###...", "#...#...#.#.#..", "##...#.#.....#.",    /* <=>? */
    ".#.#.#####...##", ".#.#.#####.##.#", "##.#.###.#.###.", ".###..#..#...##",    /* @ABC */
    "##.#.##.##.###.", "####..##.#..###", "####..##.#..#..", ".###..#.##.#.##",    /* DEFG */
    "#.##.#####.##.#", "###.#..#..#.###", "..#..#..##.#.#.", "#.##.###.#.##.#",    /* HIJK */
    "#..#..#..#..###", "#.########.##.#", "##.#.##.##.##.#", ".#.#.##.##.#.#.",    /* LMNO */
    "##.#.###.#..#..", ".#.#.##.###..##", "##.#.###.#.##.#", ".###...#...###.",    /* PQRS */
    "###.#..#..#..#.", "#.##.##.##.####", "#.##.##.##.#.#.", "#.##.########.#",    /* TUVW */
    "#.##.#.#.#.##.#", "#.##.#.#..#..#.", "###..#.#.#..###", "##.#..#..#..##.",    /* XYZ[ */
    "#..#...#...#..#", ".##..#..#..#.##", ".#.#.#.........", "............###",    /* \]^_ */
    "#...#..........", ".##.#.##..#..##", ".#..#..#..#..#.", "##..#..##.#.##.",    /* `{|} */
    "....####.......",                                                             /* ~ */
};

static inline const char* puf_glyph(int ch) {
    if (ch >= 'a' && ch <= 'z') ch -= 32;
    if (ch >= 32 && ch <= 96) return puf_font_glyphs[ch - 32];
    if (ch >= 123 && ch <= 126) return puf_font_glyphs[65 + ch - 123];
    return puf_font_glyphs['?' - 32];
}

/* Pixel scale of the 3x5 font for a raylib font size (raylib's default font is 10 px). */
static inline int puf_font_scale(float size) {
    int s = (int)(size / 7.0f);
    return s < 1 ? 1 : s;
}

static inline void puf_draw_text(const char* text, float x, float y, float size, float spacing, Color c) {
    if (text == NULL) return;
    int s = puf_font_scale(size);
    float adv = 4.0f * s + spacing, cx = x;
    for (const char* p = text; *p; p++) {
        if (*p == '\n') { cx = x; y += 7.0f * s; continue; }
        const char* g = puf_glyph((unsigned char)*p);
        for (int i = 0; i < 15 && g[i]; i++) {
            if (g[i] == '#') puf_fill_rectf(cx + (i % 3) * s, y + (i / 3) * s, (float)s, (float)s, c);
        }
        cx += adv;
    }
}

static inline int MeasureText(const char* text, int size) {
    if (text == NULL || *text == '\0') return 0;
    int s = puf_font_scale((float)size), best = 0, n = 0;
    for (const char* p = text;; p++) {
        if (*p == '\n' || *p == '\0') {
            if (n > best) best = n;
            n = 0;
            if (*p == '\0') break;
        } else {
            n++;
        }
    }
    return best * 4 * s - s;
}
static inline void DrawText(const char* text, int x, int y, int size, Color c) {
    puf_draw_text(text, (float)x, (float)y, (float)size, 0.0f, c);
}
static inline Font GetFontDefault(void) {
    Font f;
    memset(&f, 0, sizeof(f));
    f.baseSize = 10;
    f.glyphCount = 95;
    return f;
}
static inline Font LoadFont(const char* path) { (void)path; return GetFontDefault(); }
static inline Font LoadFontEx(const char* path, int size, int* codepoints, int count) {
    (void)path; (void)codepoints; (void)count;
    Font f = GetFontDefault();
    f.baseSize = size;
    return f;
}
static inline void UnloadFont(Font font) { (void)font; }
static inline void DrawTextEx(Font font, const char* text, Vector2 pos, float size, float spacing, Color c) {
    (void)font;
    puf_draw_text(text, pos.x, pos.y, size, spacing, c);
}
static inline Vector2 MeasureTextEx(Font font, const char* text, float size, float spacing) {
    (void)font;
    int lines = 1;
    for (const char* p = text; p && *p; p++) lines += *p == '\n';
    int s = puf_font_scale(size);
    float w = (float)MeasureText(text, (int)size);
    int n = text ? (int)strlen(text) : 0;
    return (Vector2){w + (n > 1 ? (n - 1) * spacing : 0.0f), (float)(lines * 7 * s - 2 * s)};
}
static inline void DrawFPS(int x, int y) {
    char buf[32];
    snprintf(buf, sizeof(buf), "%d FPS", GetFPS());
    DrawText(buf, x, y, 20, LIME);
}
/* printf into one of 4 rotating buffers, as raylib does (valid until 4 more calls). */
static inline const char* TextFormat(const char* fmt, ...) {
    static char buffers[4][1024];
    static int next;
    char* buf = buffers[next];
    next = (next + 1) % 4;
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof(buffers[0]), fmt, args);
    va_end(args);
    return buf;
}
static inline unsigned int TextLength(const char* text) { return text ? (unsigned int)strlen(text) : 0u; }
static inline bool TextIsEqual(const char* a, const char* b) { return a && b && strcmp(a, b) == 0; }

/* ---- Textures: not decoded; a placeholder of the right size ---------------------------------- */
/* Width and height from a PNG file's header; 16 x 16 if unreadable. */
static inline void puf_png_size(const char* path, int* w, int* h) {
    *w = *h = 16;
    FILE* f = path ? fopen(path, "rb") : NULL;
    unsigned char b[24];
    if (f == NULL) return;
    if (fread(b, 1, 24, f) == 24 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') {
        *w = (b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19];
        *h = (b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23];
    }
    fclose(f);
}
static inline Image LoadImage(const char* path) {
    Image im;
    memset(&im, 0, sizeof(im));
    puf_png_size(path, &im.width, &im.height);
    im.mipmaps = 1;
    return im;
}
static inline void UnloadImage(Image image) { (void)image; }
static inline Texture2D LoadTextureFromImage(Image image) {
    Texture2D t = {1u, image.width, image.height, 1, 0};  /* id 1: "loaded", so envs carry on */
    return t;
}
static inline Texture2D LoadTexture(const char* path) { return LoadTextureFromImage(LoadImage(path)); }
static inline void UnloadTexture(Texture2D texture) { (void)texture; }
static inline bool IsTextureValid(Texture2D texture) { return texture.id != 0; }
static inline bool IsTextureReady(Texture2D texture) { return texture.id != 0; }
static inline void SetTextureFilter(Texture2D texture, int filter) { (void)texture; (void)filter; }
static inline void DrawTexturePro(Texture2D t, Rectangle src, Rectangle dst, Vector2 origin, float rotation, Color tint) {
    (void)t; (void)src;
    DrawRectanglePro(dst, origin, rotation, tint);
}
static inline void DrawTextureEx(Texture2D t, Vector2 pos, float rotation, float scale, Color tint) {
    DrawRectanglePro((Rectangle){pos.x, pos.y, t.width * scale, t.height * scale}, (Vector2){0, 0}, rotation, tint);
}
static inline void DrawTextureV(Texture2D t, Vector2 pos, Color tint) { DrawTextureEx(t, pos, 0.0f, 1.0f, tint); }
static inline void DrawTexture(Texture2D t, int x, int y, Color tint) {
    DrawTextureEx(t, (Vector2){(float)x, (float)y}, 0.0f, 1.0f, tint);
}
static inline void DrawTextureRec(Texture2D t, Rectangle src, Vector2 pos, Color tint) {
    (void)t;
    puf_fill_rectf(pos.x, pos.y, fabsf(src.width), fabsf(src.height), tint);
}

/* ---- Collisions and small helpers ------------------------------------------------------------ */
static inline bool CheckCollisionRecs(Rectangle a, Rectangle b) {
    return a.x < b.x + b.width && a.x + a.width > b.x && a.y < b.y + b.height && a.y + a.height > b.y;
}
static inline bool CheckCollisionCircles(Vector2 c1, float r1, Vector2 c2, float r2) {
    float dx = c2.x - c1.x, dy = c2.y - c1.y;
    return dx * dx + dy * dy <= (r1 + r2) * (r1 + r2);
}
static inline bool CheckCollisionCircleRec(Vector2 c, float r, Rectangle rec) {
    float nx = fmaxf(rec.x, fminf(c.x, rec.x + rec.width)), ny = fmaxf(rec.y, fminf(c.y, rec.y + rec.height));
    float dx = c.x - nx, dy = c.y - ny;
    return dx * dx + dy * dy <= r * r;
}
static inline bool CheckCollisionPointRec(Vector2 p, Rectangle r) {
    return p.x >= r.x && p.x < r.x + r.width && p.y >= r.y && p.y < r.y + r.height;
}
static inline bool CheckCollisionPointCircle(Vector2 p, Vector2 c, float r) {
    float dx = p.x - c.x, dy = p.y - c.y;
    return dx * dx + dy * dy <= r * r;
}

#endif /* RAYLIB_H */
