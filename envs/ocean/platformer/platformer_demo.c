/* platformer_demo.c — the platformer in a terminal, no Python: the scripted policy plays, drawn
 * as ASCII (P player, # solid, = one-way, ^ spikes, G flag).
 *
 *   gcc -O2 -Ienvs envs/ocean/platformer/platformer_demo.c -lm -o /tmp/platformer_demo
 *   /tmp/platformer_demo            # watch one episode at 30 steps/s
 *   /tmp/platformer_demo 1000       # no drawing: run 1000 episodes, print the flag rate
 */
#include <time.h>

#include "platformer.h"

static void draw_ascii(const Env* env, int step, float ret) {
    int px = (int)floorf(env->x + 0.5f * PLATFORMER_PW), py = (int)floorf(env->y + 0.5f * PLATFORMER_PH);
    int cam = px - 30;
    if (cam < 0) cam = 0;
    if (cam > PLATFORMER_COLS - 60) cam = PLATFORMER_COLS - 60;
    printf("\033[H");  /* cursor home: redraw in place */
    for (int ty = 0; ty < PLATFORMER_ROWS; ty++) {
        for (int tx = cam; tx < cam + 60; tx++) {
            char c = platformer_level[ty][tx];
            putchar(tx == px && ty == py ? '@' : (c == 'P' ? '.' : c));
        }
        putchar('\n');
    }
    printf("step %4d  x %6.2f  return %+.3f   \n", step, env->x, ret);
    fflush(stdout);
}

int main(int argc, char** argv) {
    int episodes = argc > 1 ? atoi(argv[1]) : 0;
    int watch = episodes == 0;
    if (watch) episodes = 1;

    Dict kwargs = {0};
    dict_set(&kwargs, "frameskip", 2);
    dict_set(&kwargs, "max_ticks", 1800);
    dict_set(&kwargs, "fail_penalty", 0.1);
    float obs[OBS_SIZE], actions[NUM_ATNS], reward, terminal;
    unsigned char mask[6];
    Env env;
    memset(&env, 0, sizeof(env));
    env.agents[0] = (Agent){obs, actions, &reward, &terminal, mask, 0};
    puf_init(&env, &kwargs);

    int flags = 0;
    for (int ep = 0; ep < episodes; ep++) {
        env.rng = (unsigned int)ep;
        puf_reset(&env);
        float ret = 0.0f;
        if (watch) printf("\033[2J");
        for (int step = 0;; step++) {
            platformer_scripted(obs, actions);
            float reached = 0.0f, before = env.log.perf, last_x = env.x;
            puf_step(&env);
            ret += reward;
            reached = env.log.perf - before;
            if (watch) {
                draw_ascii(&env, step, ret);
                struct timespec ts = {0, 33 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            if (terminal) {
                flags += reached > 0.0f;
                if (!watch && reached == 0.0f && ep - flags < 5)
                    printf("episode %d failed near x = %.2f after %d steps\n", ep, last_x, step + 1);
                if (watch) printf("%s after %d steps, return %.3f\n",
                                  reached > 0.0f ? "flag reached" : "episode failed", step + 1, ret);
                break;
            }
        }
    }
    printf("flag rate %.4f over %d episodes (mean episode_length %.1f)\n",
           (float)flags / episodes, episodes, env.log.episode_length / env.log.n);
    puf_close(&env);
    dict_clear(&kwargs);
    return flags == episodes ? 0 : 1;
}
