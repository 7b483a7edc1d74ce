/* PufferLib 5.0's env contract restated as declarations only (written here from the 5.0
 * interface in PufferLib's src/pufferenv.h: names, types and signatures; no code of PufferLib's).
 * tests/test_envs5.py compiles puffgpu's envs against this directory instead of envs/, so an
 * env that leans on anything puffgpu adds (the canvas, PUFFGPU, ...) fails there.
 */
#pragma once

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini.h"
#include "raylib.h"
#ifdef PLATFORM_WEB
void puf_web_vsync(void);
#else
static void puf_web_vsync(void) {}
#endif

typedef struct Env Env;
typedef struct Log Log;

typedef struct Agent {
    obs_t* observations;
    float* actions;
    float* rewards;
    float* terminals;
    unsigned char* action_mask;
    int policy;
} Agent;

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
#ifndef PUF_HAS_BOT_POLICY
static inline void puf_set_bot_policy(Env* env, int bot_policy) { (void)env; (void)bot_policy; }
#endif

typedef uint16_t bf16;
float bf16_to_f32(bf16 b);
bf16 f32_to_bf16(float f);
