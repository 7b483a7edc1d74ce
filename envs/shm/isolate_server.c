/* isolate_server.c — the generic server: any env header, stepped in its own process over the
 * shared-memory protocol, so that a crash inside the env (a segfault, an exit()) ends this
 * process and not the trainer's (`--env.isolate 1`; envs/shm/env.py builds and supervises it).
 *
 * Built once per env header (cached like the env modules):
 *   cc -O3 -fopenmp -DENV_HEADER='"/path/to/env.h"' -I/path/to -Ienvs envs/shm/isolate_server.c -lm
 * Run:
 *   isolate_server --agents N --shm NAME [--seed S] [--threads T] key=value...
 * key=value pairs are the env's [env] config (as in vecenv_driver.c). The vecenv's own arrays are
 * the block's: every Agent points straight into shared memory, so a step copies nothing here.
 * The log is the vecenv's (puf_log's names): after each step the averages of the episodes that
 * ended are added to the block's sums weighted by their count, so the trainer's sum / n over all
 * servers is what vec_log over all envs would give.
 */
#include "puffer_server.h"  /* first: it sets the POSIX feature macros */

#include "vecenv.c"

static int iso_dtype(void) {
    const char* t = vec_obs_type();
    if (strcmp(t, "float32") == 0) return PUF_DTYPE_F32;
    if (strcmp(t, "uint8") == 0) return PUF_DTYPE_U8;
    if (strcmp(t, "int8") == 0) return PUF_DTYPE_I8;
    if (strcmp(t, "int16") == 0) return PUF_DTYPE_I16;
    if (strcmp(t, "uint16") == 0) return PUF_DTYPE_U16;
    if (strcmp(t, "int32") == 0) return PUF_DTYPE_I32;
    if (strcmp(t, "uint32") == 0) return PUF_DTYPE_U32;
    if (strcmp(t, "float64") == 0) return PUF_DTYPE_F64;
    return 0;
}

int main(int argc, char** argv) {
    int agents = 1, threads = 1;
    unsigned int seed = 0;
    const char* shm = NULL;
    Dict* kwargs = vec_dict_new("env");
    for (int i = 1; i < argc; i++) {
        char* eq = strchr(argv[i], '=');
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v && strcmp(argv[i], "--agents") == 0) { agents = atoi(v); i++; }
        else if (v && strcmp(argv[i], "--shm") == 0) { shm = v; i++; }
        else if (v && strcmp(argv[i], "--seed") == 0) { seed = (unsigned)strtoul(v, NULL, 10); i++; }
        else if (v && strcmp(argv[i], "--threads") == 0) { threads = atoi(v); i++; }
        else if (eq != NULL && argv[i][0] != '-') {
            *eq = '\0';
            vec_dict_put(kwargs, argv[i], 0.0, eq + 1);
        } else {
            fprintf(stderr, "usage: %s --agents N --shm NAME [--seed S] [--threads T] key=value... "
                    "(bad argument '%s')\n", argv[0], argv[i]);
            return 2;
        }
    }
    if (shm == NULL) {
        fprintf(stderr, "%s: --shm NAME is required\n", argv[0]);
        return 2;
    }
    if (iso_dtype() == 0) {
        fprintf(stderr, "%s: obs_t is %s, which the protocol has no dtype for\n", argv[0], vec_obs_type());
        return 1;
    }
    char err[1024];
    VecEnv* vec = vec_create(agents, kwargs, seed, threads, err, (int)sizeof err);
    if (vec == NULL) {
        fprintf(stderr, "creating the envs failed: %s\n", err);
        return 1;
    }
    /* the log's names: what puf_log names for an all-zero Log, then "n" */
    Log zero;
    memset(&zero, 0, sizeof zero);
    Dict names;
    memset(&names, 0, sizeof names);
    puf_log(&zero, &names);
    /* the row after puf_init: an env drawn at a configured size sizes it with PUF_OBS_SIZE */
    PufServerSpec spec = puf_spec(vec->num_agents, vec_env_obs_size(vec), iso_dtype());
    spec.num_heads = NUM_ATNS;
    for (int i = 0; i < NUM_ATNS; i++) spec.act_sizes[i] = vec_act_sizes_table[i];
    spec.masks = 1;
#if defined(PICTURE_HEIGHT) && defined(PICTURE_WIDTH) && defined(PICTURE_CHANNELS)
    spec.picture[0] = PICTURE_HEIGHT; spec.picture[1] = PICTURE_WIDTH; spec.picture[2] = PICTURE_CHANNELS;
#else
    /* a picture declared by the [env] keys picture_height/width/channels (checked in Python) */
    if (dict_find(kwargs, "picture_height") && dict_find(kwargs, "picture_width") && dict_find(kwargs, "picture_channels")) {
        spec.picture[0] = (uint32_t)dict_get(kwargs, "picture_height");
        spec.picture[1] = (uint32_t)dict_get(kwargs, "picture_width");
        spec.picture[2] = (uint32_t)dict_get(kwargs, "picture_channels");
    }
#endif
    int fields = names.size < PUF_SHM_MAX_LOG - 1 ? names.size : PUF_SHM_MAX_LOG - 1;
    int n_index = fields;
    for (int i = 0; i < fields; i++) {
        spec.log_names[i] = names.items[i].key;
        if (strcmp(names.items[i].key, "n") == 0) n_index = i;
    }
    spec.num_log = n_index == fields ? fields + 1 : fields;
    if (n_index == fields) spec.log_names[fields] = "n";
    PufServer srv;
    if (puf_server_open(&srv, shm, &spec, err, (int)sizeof err) != 0) {
        fprintf(stderr, "isolate_server: %s\n", err);
        return 1;
    }
    vec_bind(vec, srv.observations, srv.actions, srv.rewards, srv.terminals, srv.masks);
    for (;;) {
        uint64_t arg = 0;
        uint32_t cmd = puf_server_wait(&srv, &arg);
        if (cmd == PUF_CMD_QUIT) break;
        if (cmd == PUF_CMD_RESET) {
            for (int e = 0; e < vec->num_envs; e++) vec->envs[e].rng = vec_seed_mix((unsigned int)arg, (unsigned int)e);
            vec_reset(vec);
            puf_server_reply(&srv, PUF_OK);
            continue;
        }
        if (cmd != PUF_CMD_STEP) {
            puf_server_reply(&srv, PUF_UNSUPPORTED);
            continue;
        }
        vec_step(vec);
        float n = vec_log(vec);
        if (n > 0.0f) {
            Dict* out = vec_log_dict(vec);
            for (int i = 0; i < out->size; i++) {
                int at = i < fields && strcmp(out->items[i].key, spec.log_names[i]) == 0 ? i : -1;
                for (int j = 0; at < 0 && j < fields; j++)
                    if (strcmp(out->items[i].key, spec.log_names[j]) == 0) at = j;
                if (at >= 0 && at != n_index) srv.log[at] += (float)out->items[i].value * n;
            }
            srv.log[n_index] += n;
        }
        puf_server_reply(&srv, PUF_OK);
    }
    puf_server_close(&srv);
    vec_close(vec);
    dict_clear(&names);
    vec_dict_free(kwargs);
    return 0;
}
