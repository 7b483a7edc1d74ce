/* bench_server — a synthetic game server for measuring the protocol itself (tools/bench_env.py):
 * each step writes every agent's whole observation (as a game would: N × D floats), a reward and
 * a terminal every `episode` steps; no game logic.
 *
 *   bench_server --agents 127 --obs-size 1397 --shm NAME [--heads 3] [--episode 1000]
 *
 * DDNet-shaped: 8 of these × 127 agents × 1,397 floats. With --agents 1 --obs-size 1 it measures
 * the bare round trip (ring, wake, reply, wake).
 */
#include "puffer_server.h"

int main(int argc, char** argv) {
    int agents = 1, obs_size = 1, heads = 3, episode = 1000;
    const char* shm = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--agents") == 0) agents = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--obs-size") == 0) obs_size = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--heads") == 0) heads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--episode") == 0) episode = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--shm") == 0) shm = argv[i + 1];
        else if (strcmp(argv[i], "--seed") != 0) { fprintf(stderr, "bench_server: bad argument %s\n", argv[i]); return 2; }
    }
    if (shm == NULL || agents < 1 || obs_size < 1 || heads < 1 || heads > PUF_SHM_MAX_HEADS || episode < 1) {
        fprintf(stderr, "usage: bench_server --agents N --obs-size D --shm NAME [--heads K] [--episode T]\n");
        return 2;
    }
    PufServerSpec spec = puf_spec(agents, obs_size, PUF_DTYPE_F32);
    spec.num_heads = heads;
    for (int k = 0; k < heads; k++) spec.act_sizes[k] = 3;
    spec.num_log = 2;
    spec.log_names[0] = "episode_length";
    spec.log_names[1] = "n";
    PufServer srv;
    char err[256];
    if (puf_server_open(&srv, shm, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "bench_server: %s\n", err);
        return 1;
    }
    float* obs = (float*)srv.observations;
    unsigned int t = 0;
    for (;;) {
        uint64_t arg;
        uint32_t cmd = puf_server_wait(&srv, &arg);
        if (cmd == PUF_CMD_QUIT) break;
        if (cmd != PUF_CMD_STEP && cmd != PUF_CMD_RESET) { puf_server_reply(&srv, PUF_UNSUPPORTED); continue; }
        t = cmd == PUF_CMD_RESET ? 0 : t + 1;
        int end = t > 0 && t % (unsigned)episode == 0;
        for (int i = 0; i < agents; i++) {
            float* o = obs + (size_t)i * obs_size;
            float base = (float)((t + (unsigned)i) & 255) * (1.0f / 255.0f);
            for (int j = 0; j < obs_size; j++) o[j] = base + (float)(j & 15) * (1.0f / 64.0f);
            srv.rewards[i] = srv.actions[(size_t)i * heads] * 0.1f;
            srv.terminals[i] = (float)end;
            srv.truncations[i] = 0.0f;
            if (end) {
                float v[2] = {(float)episode, 1.0f};
                puf_server_log_episode(&srv, v);
            }
        }
        puf_server_reply(&srv, PUF_OK);
    }
    puf_server_close(&srv);
    return 0;
}
