/* vecenv_driver.c — a plain-C host for any env header: steps the vecenv with random actions and
 * prints the aggregated logs. Used for debugging envs in C and for the sanitizer build:
 *
 *   gcc -g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -Ienvs \
 *       -DENV_HEADER='"platformer/platformer.h"' envs/c/vecenv_driver.c -lm -o /tmp/drv
 *   /tmp/drv --agents 16 --steps 10000 --garbage frameskip=2 max_ticks=1800 fail_penalty=0.1
 *
 * key=value arguments become the [env] Dict (checks/sanitize_envs.sh reads them from the .ini).
 * --garbage mixes NaN, infinities and out-of-range indices into 1% of the actions: an env must
 * treat them safely (C never trusts the host's actions).
 */
#include "vecenv.c"

#include <math.h>

static unsigned int driver_rng = 12345u;
static unsigned int driver_rand(void) {
    driver_rng ^= driver_rng << 13;
    driver_rng ^= driver_rng >> 17;
    driver_rng ^= driver_rng << 5;
    return driver_rng;
}

static void print_log(VecEnv* vec, long step) {
    float n = vec_log(vec);
    Dict* out = vec_log_dict(vec);
    if (n == 0.0f) return;
    printf("step %ld: n=%g", step, n);
    for (int i = 0; i < out->size; i++) printf(" %s=%.4g", out->items[i].key, out->items[i].value);
    printf("\n");
}

int main(int argc, char** argv) {
    int total_agents = 16, threads = 1, garbage = 0;
    long steps = 10000;
    unsigned int seed = 0;
    Dict* kwargs = vec_dict_new("env");
    for (int i = 1; i < argc; i++) {
        char* eq = strchr(argv[i], '=');
        if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc) total_agents = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atol(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) seed = (unsigned)atol(argv[++i]);
        else if (strcmp(argv[i], "--garbage") == 0) garbage = 1;
        else if (eq != NULL) {
            *eq = '\0';
            double value = 0.0;
            if (!puf_ini_number(eq + 1, &value)) value = 0.0;  /* a string value: its text */
            vec_dict_put(kwargs, argv[i], value, eq + 1);
        } else {
            fprintf(stderr, "usage: %s [--agents N] [--steps S] [--threads T] [--seed S] "
                    "[--garbage] key=value...\n(unknown argument '%s')\n", argv[0], argv[i]);
            return 2;
        }
    }
    char err[512];
    VecEnv* vec = vec_create(total_agents, kwargs, seed, threads, err, sizeof(err));
    if (vec == NULL) {
        fprintf(stderr, "vec_create failed: %s\n", err);
        return 1;
    }
    int n = vec_num_agents(vec), mask_size = 0, sizes[NUM_ATNS];
    vec_act_sizes(sizes);
    for (int h = 0; h < NUM_ATNS; h++) mask_size += sizes[h];
    obs_t* obs = (obs_t*)calloc((size_t)n * vec_env_obs_size(vec), sizeof(obs_t));
    float* actions = (float*)calloc((size_t)n * NUM_ATNS, sizeof(float));
    float* rewards = (float*)calloc((size_t)n, sizeof(float));
    float* terminals = (float*)calloc((size_t)n, sizeof(float));
    unsigned char* mask = (unsigned char*)malloc((size_t)n * mask_size);
    memset(mask, 1, (size_t)n * mask_size);
    vec_bind(vec, obs, actions, rewards, terminals, mask);
    vec_reset(vec);

    const float junk[] = {NAN, INFINITY, -INFINITY, -1.0f, 1e30f, -1e30f, 0.5f, 1e9f};
    double reward_sum = 0.0, terminal_sum = 0.0;
    for (long t = 0; t < steps; t++) {
        for (int i = 0; i < n * NUM_ATNS; i++) {
            if (garbage && driver_rand() % 100 == 0) {
                actions[i] = junk[driver_rand() % (sizeof(junk) / sizeof(junk[0]))];
            } else {
                actions[i] = (float)(driver_rand() % (unsigned)sizes[i % NUM_ATNS]);
            }
        }
        vec_step(vec);
        for (int i = 0; i < n; i++) {
            reward_sum += rewards[i];
            terminal_sum += terminals[i];
        }
        if ((t + 1) % (steps / 4 > 0 ? steps / 4 : 1) == 0) print_log(vec, t + 1);
    }
    for (int e = 0; e < vec_num_envs(vec) && e < 2; e++) {  /* exercise rendering too */
        int w, h;
        const unsigned char* px = vec_render(vec, e, &w, &h);
        long sum = 0;
        for (long i = 0; px != NULL && i < (long)w * h * 3; i++) sum += px[i];
        printf("render env %d: %dx%d checksum %ld\n", e, w, h, sum);
    }
    printf("%ld agent steps, reward sum %.3f, terminals %.0f\n", steps * n, reward_sum, terminal_sum);
    vec_close(vec);
    vec_dict_free(kwargs);
    free(obs); free(actions); free(rewards); free(terminals); free(mask);
    return 0;
}
