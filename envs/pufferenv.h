/* pufferenv.h — the PufferLib 5.0 C env contract, as puffgpu hosts it.
 *
 * An env is one header that compiles unchanged against this file and against PufferLib 5.0's own:
 *
 *     typedef float obs_t;            // BEFORE including this file (Agent points at obs_t rows)
 *     #include "pufferenv.h"
 *     #define OBS_SIZE 413            // obs_t values per agent
 *     #define NUM_ATNS 2              // action heads
 *     #define ACT_SIZES {3, 3}        // size of each head (a head of size 1 is continuous)
 *     typedef struct { float perf; float score; ...; float n; } Log;   // floats only, n last
 *     typedef struct { Log log; Agent agents[1]; int num_agents; unsigned int rng;
 *                      int tag; int boundary_reached; ... } Env;
 *     void puf_init(Env*, Dict* kwargs);   // read [env] keys with dict_get, set num_agents
 *     void puf_reset(Env*);                // write first observations
 *     void puf_step(Env*);                 // read actions; write rewards, terminals, obs;
 *                                          // on episode end: add to log, log.n += 1,
 *                                          // terminal = 1, reset, write the new episode's obs
 *     void puf_render(Env*);               // draw into puf_canvas (see below)
 *     void puf_close(Env*);
 *     void puf_log(Log*, Dict* out);       // name the fields with dict_set; set perf and score
 *
 * The host (envs/vecenv.c) zero-fills every Env, sets env.rng to a per-env seed, calls
 * puf_init, and aims each Agent at its rows of host-owned arrays; the env never allocates them.
 * It zeroes rewards and terminals before every puf_step.
 *
 * Rendering needs no raylib: puf_render draws into the RGB byte canvas `puf_canvas`, sized by
 * puf_canvas_begin(). PufferLib's header has no canvas, so guard drawing code with
 * `#ifdef PUF_CANVAS` to keep the header compiling there too.
 */
#ifndef PUFFERENV_H
#define PUFFERENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUFFGPU 1 /* lets a header tell this host from PufferLib's */

typedef struct {
    obs_t* observations;         /* [OBS_SIZE] */
    float* actions;              /* [NUM_ATNS], discrete indices stored as floats */
    float* rewards;              /* [1] */
    float* terminals;            /* [1], 1 = the episode ended on this step */
    unsigned char* action_mask;  /* [sum of ACT_SIZES], all 1 unless the env writes it */
    int policy;                  /* selfplay policy id; 0 here */
} Agent;

/* Config values and log outputs: PufferLib's key -> double map. Keys are not copied: the owner
 * keeps them alive (the host's config strings; string literals in puf_log). */
typedef struct {
    const char* key;
    double value;
    void* ptr;
} DictItem;

typedef struct {
    DictItem* items;
    int size;
    int capacity;
    /* puffgpu additions, invisible to envs that only call dict_get/dict_set: */
    const char* missing;  /* first key dict_get did not find (the host reports it) */
    DictItem fallback;    /* what dict_get returns for a missing key: value 0 */
} Dict;

static inline DictItem* dict_get_unsafe(Dict* dict, const char* key) {
    for (int i = 0; i < dict->size; i++) {
        if (strcmp(dict->items[i].key, key) == 0) return &dict->items[i];
    }
    return NULL;
}

/* A missing key must not exit() the Python process: remember it, return a zero item, and let
 * the host turn it into an error naming the key. */
static inline DictItem* dict_get(Dict* dict, const char* key) {
    DictItem* item = dict_get_unsafe(dict, key);
    if (item != NULL) return item;
    if (dict->missing == NULL) dict->missing = key;
    memset(&dict->fallback, 0, sizeof(DictItem));
    dict->fallback.key = key;
    return &dict->fallback;
}

/* Sets or adds key; silently drops it when the host-sized item array is full (the host sizes it
 * with room to spare and checks size < capacity afterwards). */
static inline void dict_set(Dict* dict, const char* key, double value) {
    DictItem* item = dict_get_unsafe(dict, key);
    if (item == NULL) {
        if (dict->size >= dict->capacity) return;
        item = &dict->items[dict->size++];
        item->key = key;
        item->ptr = NULL;
    }
    item->value = value;
}

/* ---- Rendering: an RGB canvas instead of raylib ---------------------------------------------- */
#define PUF_CANVAS 1

typedef struct {
    unsigned char* pixels;  /* [height][width][3], row-major, top row first */
    int width;
    int height;
    size_t capacity;        /* bytes allocated */
} PufCanvas;

/* One canvas per compiled env module; rendering is single-threaded (the host calls puf_render
 * from one thread, never during puf_step). */
static PufCanvas puf_canvas;

/* Starts a frame of width x height pixels; returns 0 if it could not allocate. */
static inline int puf_canvas_begin(int width, int height) {
    if (width <= 0 || height <= 0) return 0;
    size_t need = (size_t)width * (size_t)height * 3;
    if (need > puf_canvas.capacity) {
        unsigned char* p = (unsigned char*)realloc(puf_canvas.pixels, need);
        if (p == NULL) return 0;
        puf_canvas.pixels = p;
        puf_canvas.capacity = need;
    }
    puf_canvas.width = width;
    puf_canvas.height = height;
    return 1;
}

static inline void puf_canvas_free(void) {
    free(puf_canvas.pixels);
    memset(&puf_canvas, 0, sizeof(puf_canvas));
}

/* Filled rectangle, clipped to the canvas. */
static inline void puf_fill_rect(int x, int y, int w, int h, unsigned char r, unsigned char g,
                                 unsigned char b) {
    int x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int x1 = x + w > puf_canvas.width ? puf_canvas.width : x + w;
    int y1 = y + h > puf_canvas.height ? puf_canvas.height : y + h;
    for (int yy = y0; yy < y1; yy++) {
        unsigned char* p = puf_canvas.pixels + ((size_t)yy * puf_canvas.width + x0) * 3;
        for (int xx = x0; xx < x1; xx++, p += 3) {
            p[0] = r; p[1] = g; p[2] = b;
        }
    }
}

static inline void puf_clear(unsigned char r, unsigned char g, unsigned char b) {
    puf_fill_rect(0, 0, puf_canvas.width, puf_canvas.height, r, g, b);
}

#endif /* PUFFERENV_H */
