/* pufferenv.h — the PufferLib 5.0 C env contract, as puffgpu hosts it.
 *
 * Source-compatible both ways with PufferLib 5.0's own pufferenv.h (written here from its
 * interface, PufferLib's src/pufferenv.h at 64da1a6b): the same type names, forward typedefs,
 * function set and signatures. An env header looks like this:
 *
 *     #include "raylib.h"               // optional: this file includes it too
 *     typedef float obs_t;              // BEFORE this file (Agent points at obs_t rows)
 *     #include "pufferenv.h"
 *     #define OBS_SIZE 413              // obs_t values per agent
 *     #define NUM_ATNS 2                // action heads
 *     #define ACT_SIZES {3, 3}          // size of each head (a head of size 1 is continuous)
 *     struct Log { float perf; float score; ...; float n; };       // floats only
 *     struct Env { Log log; Agent agents[1]; int num_agents; unsigned int rng;
 *                  int tag; int boundary_reached; ... };
 *     void puf_init(Env*, Dict* kwargs);   // read [env] keys: double v = dict_get(kwargs, "key");
 *                                          // set num_agents (env->rng is preset per env)
 *     void puf_reset(Env*);                // write first observations
 *     void puf_step(Env*);                 // clear own rewards/terminals, read actions, write
 *                                          // rewards, terminals, obs; on episode end: add to
 *                                          // log, log.n += 1, terminal = 1, reset, new obs
 *     void puf_render(Env*);               // draw with raylib, then puf_web_vsync()
 *     void puf_close(Env*);
 *     void puf_log(Log*, Dict* out);       // name the fields with dict_set; set perf and score
 *
 * The host (envs/c/vecenv.c) zero-fills every Env, sets env.rng, calls puf_init, and aims each
 * Agent at its rows of host-owned arrays; the env never allocates them. Logs are summed over
 * envs and divided by the total n. PufferLib's trainer zeroes rewards and terminals before a
 * step but its CPU evaluator does not, so an env clears its own at the top of puf_step.
 *
 * puffgpu differs only where a Python host needs it: raylib is puffgpu's software subset
 * (envs/c/raylib.h: the canvas, no window); a key missing from the config returns to the host,
 * which names it, instead of exiting (envs/c/ini.h); an env may define PUF_SCRIPTED_POLICY (a
 * rule-based policy for demos and tests). PufferLib's mascot-animation loader (pva_*, 3D
 * raylib models) is not included.
 */
#ifndef PUFFERENV_H
#define PUFFERENV_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"
#include "raylib.h"

#define PUFFGPU 1 /* lets a header tell this host from PufferLib's */

/* The web build waits for the browser's frame here; elsewhere it does nothing. */
#ifdef PLATFORM_WEB
void puf_web_vsync(void);
#else
static void puf_web_vsync(void) {}
#endif

typedef struct Env Env;
typedef struct Log Log;

typedef struct Agent {
    obs_t* observations;         /* [OBS_SIZE] */
    float* actions;              /* [NUM_ATNS], discrete indices stored as floats */
    float* rewards;              /* [1] */
    float* terminals;            /* [1], 1 = the episode ended on this step */
    unsigned char* action_mask;  /* [sum of ACT_SIZES], all 1 unless the env writes it */
    int policy;                  /* selfplay policy id; 0 here */
} Agent;

/* Which backend an env is built for: PUF_CPU (stepped per env on CPU threads, as here) or
 * PUF_GPU (PufferLib's CUDA envs, which this host does not run). */
#define PUF_CPU 0
#define PUF_GPU 1
#ifndef PUF_BACKEND
#define PUF_BACKEND PUF_CPU
#endif

void puf_init(Env* env, Dict* kwargs);
void puf_reset(Env* env);
void puf_step(Env* env);
void puf_render(Env* env);
void puf_close(Env* env);
void puf_log(Log* log, Dict* out);

/* Envs with scripted opponents define PUF_HAS_BOT_POLICY and their own puf_set_bot_policy. */
#ifndef PUF_HAS_BOT_POLICY
static inline void puf_set_bot_policy(Env* env, int bot_policy) {
    (void)env;
    (void)bot_policy;
}
#endif

/* bfloat16 observations: the top 16 bits of a float32 (truncation). */
typedef uint16_t bf16;

static inline bf16 f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    return (bf16)(bits >> 16);
}

static inline float bf16_to_f32(bf16 b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

#endif /* PUFFERENV_H */
