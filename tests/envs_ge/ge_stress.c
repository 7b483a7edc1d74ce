/* ge_stress.c — envs/c/goexplore.h under threads, for ThreadSanitizer.
 *
 * Several pthreads step disjoint env ranges of one vecenv at the same time (what OpenMP threads
 * and PufferLib's env buffers do), all reading the one archive; between steps the main thread
 * merges what they found (vec_ge_sync). Built without OpenMP, because TSan cannot see libgomp's
 * own synchronization and reports false races inside it. Prints the archive's cell count and
 * checksum, which must not depend on the thread count. Without OpenMP, vec_step_range steps each
 * range on envs/c/threadpool.h's workers: --pool-threads P (default 1) gives every host thread P of
 * them, so several callers share the pool at once, as the trainer's two env buffers do.
 * tests/test_goexplore.py builds and runs it:
 *
 *   cc -g -O1 -fsanitize=thread -Ienvs/ocean -Ienvs/c -DENV_HEADER='"platformer_sparse/platformer_sparse.h"' \
 *      tests/envs_ge/ge_stress.c -lm -lpthread -o /tmp/ge_stress
 *   /tmp/ge_stress --agents 64 --steps 300 --threads 8 level=1 frameskip=4 ... go_explore=0.8
 */
#include "vecenv.c"

#include <pthread.h>

typedef struct Range { VecEnv* vec; int lo, hi, pool_threads; } Range;

static void* stress_step(void* arg) {
    Range* r = (Range*)arg;
    vec_step_range(r->vec, r->lo, r->hi, r->pool_threads);
    return NULL;
}

int main(int argc, char** argv) {
    int agents = 64, steps = 300, threads = 4, pool_threads = 1;
    Dict* kwargs = vec_dict_new("env");
    for (int i = 1; i < argc; i++) {
        char* eq = strchr(argv[i], '=');
        if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc) agents = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc) steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--pool-threads") == 0 && i + 1 < argc) pool_threads = atoi(argv[++i]);
        else if (eq != NULL) {
            *eq = '\0';
            double value = 0.0;
            if (!puf_ini_number(eq + 1, &value)) value = 0.0;
            vec_dict_put(kwargs, argv[i], value, eq + 1);
        } else {
            fprintf(stderr, "usage: %s [--agents N] [--steps S] [--threads T] [--pool-threads P] key=value...\n", argv[0]);
            return 2;
        }
    }
    char err[512];
    VecEnv* vec = vec_create(agents, kwargs, 7, 1, err, sizeof(err));
    if (vec == NULL) {
        fprintf(stderr, "vec_create failed: %s\n", err);
        return 1;
    }
    int n = vec_num_agents(vec), mask_size = 0, sizes[NUM_ATNS];
    vec_act_sizes(sizes);
    for (int h = 0; h < NUM_ATNS; h++) mask_size += sizes[h];
    obs_t* obs = (obs_t*)calloc((size_t)n * OBS_SIZE, sizeof(obs_t));
    float* actions = (float*)calloc((size_t)n * NUM_ATNS, sizeof(float));
    float* rewards = (float*)calloc((size_t)n, sizeof(float));
    float* terminals = (float*)calloc((size_t)n, sizeof(float));
    unsigned char* mask = (unsigned char*)malloc((size_t)n * mask_size);
    memset(mask, 1, (size_t)n * mask_size);
    vec_bind(vec, obs, actions, rewards, terminals, mask);
    vec_reset(vec);
    if (threads < 1) threads = 1;
    pthread_t* tids = (pthread_t*)calloc((size_t)threads, sizeof(pthread_t));
    Range* ranges = (Range*)calloc((size_t)threads, sizeof(Range));
    int envs = vec_num_envs(vec);
    uint32_t rng = 12345u;
    for (int t = 0; t < steps; t++) {
        for (int i = 0; i < n * NUM_ATNS; i++) {
            rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
            actions[i] = (float)(rng % (uint32_t)sizes[i % NUM_ATNS]);
        }
        for (int k = 0; k < threads; k++) {
            ranges[k] = (Range){vec, envs * k / threads, envs * (k + 1) / threads, pool_threads};
            if (pthread_create(&tids[k], NULL, stress_step, &ranges[k]) != 0) {
                fprintf(stderr, "pthread_create failed\n");
                return 1;
            }
        }
        for (int k = 0; k < threads; k++) pthread_join(tids[k], NULL);
        if (t % 3 == 0) vec_ge_sync(vec);  /* some steps merge later (as with env buffers) */
        if (t % 50 == 49) vec_log(vec);
    }
    int64_t size = vec_ge_save(vec, NULL, 0);
    if (size < 0) {
        fprintf(stderr, "no archive: set go_explore > 0\n");
        return 1;
    }
    unsigned char* blob = (unsigned char*)malloc((size_t)size);
    vec_ge_save(vec, blob, size);
    uint32_t crc, cells;
    memcpy(&crc, blob + size - 4, 4);
    memcpy(&cells, blob + 8 + 4 * 4 + 8 * 5, 4);
    printf("%d threads: %d agents x %d steps, archive %u cells, %lld bytes, crc %08x\n", threads, n,
           steps, cells, (long long)size, crc);
    free(blob);
    free(tids);
    free(ranges);
    vec_close(vec);
    vec_dict_free(kwargs);
    free(obs); free(actions); free(rewards); free(terminals); free(mask);
    return 0;
}
