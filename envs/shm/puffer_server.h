/* puffer_server.h — the puffgpu shared-memory env protocol (docs/protocol.md), one header for
 * both ends: a game server includes it to serve its agents to a trainer, and the trainer's side
 * (envs/shm/env.py, through cffi) uses the client half. C99 and C++ compile it (gcc, clang); POSIX
 * only (Linux, macOS).
 *
 * A server, in short:
 *
 *     #include "puffer_server.h"
 *     PufServerSpec spec = puf_spec(agents, OBS_SIZE, PUF_DTYPE_F32);
 *     spec.num_heads = 3; spec.act_sizes[0] = 3; spec.act_sizes[1] = 2; spec.act_sizes[2] = 1;
 *     spec.num_log = 3; spec.log_names[0] = "perf"; spec.log_names[1] = "score"; spec.log_names[2] = "n";
 *     PufServer srv; char err[256];
 *     if (puf_server_open(&srv, shm_name, &spec, err, sizeof err) != 0) { fputs(err, stderr); return 1; }
 *     for (;;) {
 *         uint64_t arg;
 *         uint32_t cmd = puf_server_wait(&srv, &arg);          // parked until the trainer rings
 *         if (cmd == PUF_CMD_QUIT) break;
 *         if (cmd == PUF_CMD_STEP) step_all_agents(&srv);       // read srv.actions, write the rest
 *         else if (cmd == PUF_CMD_RESET) reset_all((unsigned)arg);
 *         puf_server_reply(&srv, cmd == PUF_CMD_STEP || cmd == PUF_CMD_RESET ? PUF_OK : PUF_UNSUPPORTED);
 *     }
 *     puf_server_close(&srv);
 *
 * The block: a 4096-byte header (PufShmHeader, offsets fixed below), then the arrays
 * [actions | observations | rewards | terminals | truncations | masks | log], each starting on a
 * 64-byte boundary. Lockstep through two sequence counters: the trainer writes actions, then
 * request_seq += 1 (release); the server sees it (acquire), steps every agent, writes its arrays,
 * then reply_seq = request_seq (release). Each side waits by spinning briefly on the counter, then
 * sleeping on it (a futex on Linux; elsewhere short sleeps); a side that sleeps sets its *_waiting
 * word so the other knows to wake it, and a side that never sleeps costs the other no syscall.
 */
#ifndef PUFFER_SERVER_H
#define PUFFER_SERVER_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#if !defined(_POSIX_C_SOURCE) && !defined(__APPLE__)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#ifdef __cplusplus
extern "C" {
#define PUF_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define PUF_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define PUF_SHM_MAGIC "PUFSHMEM"      /* 8 bytes, no terminator */
#define PUF_SHM_VERSION 1u
#define PUF_SHM_HEADER_SIZE 4096u
#define PUF_SHM_ALIGN 64u
#define PUF_SHM_MAX_HEADS 16
#define PUF_SHM_MAX_LOG 32
#define PUF_SHM_NAME_LEN 32           /* log field names: NUL-terminated, at most 31 bytes */
#define PUF_SHM_MESSAGE_LEN 256
#define PUF_SHM_PATH_LEN 1024

/* observation dtypes (numpy names in docs/protocol.md) */
enum { PUF_DTYPE_F32 = 1, PUF_DTYPE_U8 = 2, PUF_DTYPE_I8 = 3, PUF_DTYPE_I16 = 4, PUF_DTYPE_U16 = 5,
       PUF_DTYPE_I32 = 6, PUF_DTYPE_U32 = 7, PUF_DTYPE_F64 = 8 };
/* commands (trainer -> server) */
enum { PUF_CMD_NONE = 0, PUF_CMD_STEP = 1, PUF_CMD_RESET = 2, PUF_CMD_SAVE = 3, PUF_CMD_LOAD = 4,
       PUF_CMD_QUIT = 5 };
/* reply status (server -> trainer) */
enum { PUF_OK = 0, PUF_UNSUPPORTED = -1, PUF_FAILED = -2 };
/* flags (server-owned state word) */
enum { PUF_FLAG_READY = 1, PUF_FLAG_FAILED = 2, PUF_FLAG_CLOSED = 4 };

typedef struct PufShmHeader {
    char magic[8];                       /*    0 "PUFSHMEM" */
    uint32_t version;                    /*    8 PUF_SHM_VERSION */
    uint32_t header_size;                /*   12 4096: offset of the first possible array */
    uint64_t block_size;                 /*   16 bytes of the whole block */
    uint32_t num_agents;                 /*   24 N */
    uint32_t obs_size;                   /*   28 D values per agent */
    uint32_t obs_dtype;                  /*   32 PUF_DTYPE_* */
    uint32_t num_heads;                  /*   36 K <= 16 */
    uint32_t act_sizes[PUF_SHM_MAX_HEADS]; /* 40 head sizes (1 = continuous), unused entries 0 */
    uint32_t mask_size;                  /*  104 0 (no masks) or sum(act_sizes) */
    uint32_t picture[3];                 /*  108 height, width, channels (0, 0, 0: none) */
    uint32_t num_log;                    /*  120 log fields, one of them named "n" */
    int32_t server_pid;                  /*  124 */
    uint64_t off_actions;                /*  128 f32 [N][K] */
    uint64_t off_observations;           /*  136 dtype [N][D] */
    uint64_t off_rewards;                /*  144 f32 [N] */
    uint64_t off_terminals;              /*  152 f32 [N] */
    uint64_t off_truncations;            /*  160 f32 [N] */
    uint64_t off_masks;                  /*  168 u8 [N][mask_size] */
    uint64_t off_log;                    /*  176 f32 [num_log] */
    uint32_t flags;                      /*  184 PUF_FLAG_* (server) */
    uint32_t frameskip;                  /*  188 informational: ticks per decision */
    /* trainer's cache line */
    uint32_t request_seq;                /*  192 bumped by the trainer for each command */
    uint32_t command;                    /*  196 PUF_CMD_* of request_seq */
    uint64_t arg;                        /*  200 the command's argument (reset: seed) */
    uint32_t server_waiting;             /*  208 1 while the server sleeps on request_seq */
    uint32_t trainer_pid;                /*  212 informational */
    uint8_t pad0[40];                    /*  216 */
    /* server's cache line */
    uint32_t reply_seq;                  /*  256 = request_seq once the command is done */
    int32_t status;                      /*  260 PUF_OK, PUF_UNSUPPORTED, PUF_FAILED */
    uint32_t trainer_waiting;            /*  264 1 while the trainer sleeps on reply_seq */
    uint32_t steps;                      /*  268 steps served (wraps), informational */
    uint8_t pad1[48];                    /*  272 */
    char message[PUF_SHM_MESSAGE_LEN];   /*  320 server's last error text, NUL-terminated */
    char log_names[PUF_SHM_MAX_LOG][PUF_SHM_NAME_LEN]; /* 576 */
    char path[PUF_SHM_PATH_LEN];         /* 1600 save/load state: the file (trainer writes) */
    uint8_t pad2[PUF_SHM_HEADER_SIZE - 2624];
} PufShmHeader;

PUF_STATIC_ASSERT(sizeof(PufShmHeader) == PUF_SHM_HEADER_SIZE, "header is 4096 bytes");
PUF_STATIC_ASSERT(offsetof(PufShmHeader, request_seq) == 192, "request line at 192");
PUF_STATIC_ASSERT(offsetof(PufShmHeader, reply_seq) == 256, "reply line at 256");
PUF_STATIC_ASSERT(offsetof(PufShmHeader, message) == 320, "message at 320");
PUF_STATIC_ASSERT(offsetof(PufShmHeader, log_names) == 576, "log names at 576");
PUF_STATIC_ASSERT(offsetof(PufShmHeader, path) == 1600, "path at 1600");

/* ---- atomics (GCC/Clang builtins: the same in C and C++) ---- */
static inline uint32_t puf_load_acquire(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static inline void puf_store_release(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline uint32_t puf_load_seq(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void puf_store_seq(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static inline void puf_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline int64_t puf_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleeps while *addr == expected, at most timeout_ns (a wake, a change or a spurious return ends
 * it early; the caller re-checks). Linux: a shared (not private) futex, as the word lives in a
 * mapping of two processes. Elsewhere: a short sleep. */
static inline void puf_sleep_on(uint32_t* addr, uint32_t expected, int64_t timeout_ns) {
#ifdef __linux__
    struct timespec ts;
    ts.tv_sec = (time_t)(timeout_ns / 1000000000);
    ts.tv_nsec = (long)(timeout_ns % 1000000000);
    syscall(SYS_futex, addr, FUTEX_WAIT, expected, &ts, NULL, 0);
#else
    (void)addr; (void)expected;
    struct timespec ts;
    ts.tv_sec = 0;
    ts.tv_nsec = timeout_ns < 50000 ? (long)timeout_ns : 50000;  /* 50 us granularity */
    nanosleep(&ts, NULL);
#endif
}

static inline void puf_wake(uint32_t* addr) {
#ifdef __linux__
    syscall(SYS_futex, addr, FUTEX_WAKE, 1, NULL, NULL, 0);
#else
    (void)addr;
#endif
}

/* Default spin before sleeping: PUFFER_SHM_SPIN (iterations of a pause instruction; 0 = sleep at
 * once, -1 = never sleep), else 100 (a few microseconds: on busy cores a longer spin only
 * delays the side it waits for; docs/protocol.md has the measurements). */
static inline int puf_default_spin(void) {
    const char* s = getenv("PUFFER_SHM_SPIN");
    return s && *s ? atoi(s) : 100;
}

/* Waits until *seq != old (returns 1) or timeout_ns passes (returns 0; timeout_ns < 0: forever).
 * `waiting` is this side's flag that tells the other side to wake it. */
static inline int puf_wait_change(uint32_t* seq, uint32_t old, uint32_t* waiting, int64_t timeout_ns,
                                  int spin) {
    int64_t t0 = (spin < 0 && timeout_ns >= 0) ? puf_now_ns() : 0;
    for (int i = 0; spin < 0 || i < spin; i++) {
        if (puf_load_acquire(seq) != old) return 1;
        puf_cpu_relax();
        /* spin-only (spin < 0) still honours the timeout */
        if (spin < 0 && timeout_ns >= 0 && (i & 1023) == 1023 && puf_now_ns() - t0 > timeout_ns) return 0;
    }
    int64_t deadline = timeout_ns < 0 ? INT64_MAX : puf_now_ns() + timeout_ns;
    for (;;) {
        puf_store_seq(waiting, 1);
        if (puf_load_seq(seq) != old) {
            puf_store_seq(waiting, 0);
            return 1;
        }
        int64_t left = deadline - puf_now_ns();
        if (left <= 0) {
            puf_store_seq(waiting, 0);
            return puf_load_acquire(seq) != old;
        }
        puf_sleep_on(seq, old, left > 100000000 ? 100000000 : left);
        puf_store_seq(waiting, 0);
        if (puf_load_acquire(seq) != old) return 1;
    }
}

/* Publishes *seq = value and wakes the other side if it sleeps on it. */
static inline void puf_publish(uint32_t* seq, uint32_t value, uint32_t* other_waiting) {
    puf_store_seq(seq, value);
    if (puf_load_seq(other_waiting)) puf_wake(seq);
}

static inline size_t puf_dtype_size(uint32_t dtype) {
    switch (dtype) {
        case PUF_DTYPE_F32: case PUF_DTYPE_I32: case PUF_DTYPE_U32: return 4;
        case PUF_DTYPE_U8: case PUF_DTYPE_I8: return 1;
        case PUF_DTYPE_I16: case PUF_DTYPE_U16: return 2;
        case PUF_DTYPE_F64: return 8;
        default: return 0;
    }
}

static inline uint64_t puf_align(uint64_t x) { return (x + PUF_SHM_ALIGN - 1) / PUF_SHM_ALIGN * PUF_SHM_ALIGN; }

/* Fills the array offsets and block_size of a header whose sizes are set. */
static inline void puf_shm_layout(PufShmHeader* h) {
    uint64_t n = h->num_agents, at = PUF_SHM_HEADER_SIZE;
    h->off_actions = at;      at = puf_align(at + n * h->num_heads * 4);
    h->off_observations = at; at = puf_align(at + n * h->obs_size * puf_dtype_size(h->obs_dtype));
    h->off_rewards = at;      at = puf_align(at + n * 4);
    h->off_terminals = at;    at = puf_align(at + n * 4);
    h->off_truncations = at;  at = puf_align(at + n * 4);
    h->off_masks = at;        at = puf_align(at + n * h->mask_size);
    h->off_log = at;          at = puf_align(at + (uint64_t)h->num_log * 4);
    h->block_size = at;
}

/* ================================ server side ================================ */

typedef struct PufServerSpec {
    int num_agents;
    int obs_size;
    int obs_dtype;                        /* PUF_DTYPE_* */
    int num_heads;
    int act_sizes[PUF_SHM_MAX_HEADS];
    int masks;                            /* 1: the server writes action masks */
    int picture[3];                       /* height, width, channels; 0s: no picture */
    int num_log;
    const char* log_names[PUF_SHM_MAX_LOG]; /* one must be "n" (episodes) */
    int frameskip;                        /* informational */
} PufServerSpec;

static inline PufServerSpec puf_spec(int num_agents, int obs_size, int obs_dtype) {
    PufServerSpec s;
    memset(&s, 0, sizeof s);
    s.num_agents = num_agents;
    s.obs_size = obs_size;
    s.obs_dtype = obs_dtype;
    s.frameskip = 1;
    return s;
}

typedef struct PufServer {
    PufShmHeader* h;
    unsigned char* base;
    size_t size;
    char name[256];
    int unlinked;
    pid_t parent;
    uint32_t seen;         /* last request_seq taken */
    int spin;
    /* the arrays (pointers into the block) */
    float* actions;        /* [N][K] */
    void* observations;    /* [N][D] of obs_dtype */
    float* rewards;        /* [N] */
    float* terminals;      /* [N] */
    float* truncations;    /* [N] */
    unsigned char* masks;  /* [N][mask_size] or NULL */
    float* log;            /* [num_log]: sums since the trainer last cleared them; log[log_n] episodes */
    int log_n;             /* index of the "n" field */
} PufServer;

static const char* volatile puf_server_signal_name = NULL;

/* 1 if `name` holds the block of a server that no longer runs (its header's server_pid is gone):
 * a server restarted on the same name (attach mode) may then unlink it and create its own. */
static int puf_shm_stale(const char* name) {
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) return 0;
    int32_t pid = 0;
    int got = pread(fd, &pid, sizeof pid, (off_t)offsetof(PufShmHeader, server_pid)) == (ssize_t)sizeof pid;
    close(fd);
    return got && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* SIGTERM/SIGINT/SIGHUP (and the parent-death signal): unlink the block's name if the trainer has
 * not done it yet, then exit. shm_unlink and _exit are async-signal-safe enough for this. */
static void puf_server_on_signal(int sig) {
    const char* name = puf_server_signal_name;
    if (name != NULL) shm_unlink(name);
    _exit(128 + sig);
}

/* Creates the block `name` (e.g. "/puf-123-0"; at most 31 characters on macOS), lays out the
 * header from `spec`, and marks it ready. Returns 0, or -1 with a message in err. On Linux the
 * server also asks to get SIGTERM when its parent dies, and everywhere puf_server_wait polls
 * getppid(): a server never outlives its trainer. */
static inline int puf_server_open(PufServer* s, const char* name, const PufServerSpec* spec, char* err,
                                  int err_len) {
    memset(s, 0, sizeof *s);
    s->log_n = -1;
    if (spec->num_agents < 1 || spec->obs_size < 1 || puf_dtype_size((uint32_t)spec->obs_dtype) == 0 ||
        spec->num_heads < 1 || spec->num_heads > PUF_SHM_MAX_HEADS || spec->num_log < 0 ||
        spec->num_log > PUF_SHM_MAX_LOG) {
        snprintf(err, (size_t)err_len, "bad server spec: agents %d, obs_size %d, obs_dtype %d, heads %d "
                 "(1..%d), log fields %d (0..%d)", spec->num_agents, spec->obs_size, spec->obs_dtype,
                 spec->num_heads, PUF_SHM_MAX_HEADS, spec->num_log, PUF_SHM_MAX_LOG);
        return -1;
    }
    int mask_size = 0;
    for (int i = 0; i < spec->num_heads; i++) {
        if (spec->act_sizes[i] < 1) {
            snprintf(err, (size_t)err_len, "bad server spec: head %d has size %d (1 = continuous, >= 2 "
                     "= discrete choices)", i, spec->act_sizes[i]);
            return -1;
        }
        mask_size += spec->act_sizes[i];
    }
    for (int i = 0; i < spec->num_log; i++) {
        if (spec->log_names[i] == NULL || strlen(spec->log_names[i]) >= PUF_SHM_NAME_LEN) {
            snprintf(err, (size_t)err_len, "bad server spec: log name %d is missing or longer than %d bytes",
                     i, PUF_SHM_NAME_LEN - 1);
            return -1;
        }
    }
    if (strlen(name) >= sizeof s->name) {
        snprintf(err, (size_t)err_len, "shared-memory name too long (%zu bytes, at most %zu)", strlen(name),
                 sizeof s->name - 1);
        return -1;
    }
    strcpy(s->name, name);
    PufShmHeader proto;
    memset(&proto, 0, sizeof proto);
    proto.num_agents = (uint32_t)spec->num_agents;
    proto.obs_size = (uint32_t)spec->obs_size;
    proto.obs_dtype = (uint32_t)spec->obs_dtype;
    proto.num_heads = (uint32_t)spec->num_heads;
    proto.mask_size = spec->masks ? (uint32_t)mask_size : 0u;
    proto.num_log = (uint32_t)spec->num_log;
    puf_shm_layout(&proto);

    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST && puf_shm_stale(name)) {  /* a dead server's block: take the name over */
        shm_unlink(name);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    if (fd < 0) {
        snprintf(err, (size_t)err_len, "shm_open(%s): %s", name, strerror(errno));
        return -1;
    }
    puf_server_signal_name = s->name;  /* from here on, a signal unlinks the name */
    if (ftruncate(fd, (off_t)proto.block_size) != 0) {
        snprintf(err, (size_t)err_len, "ftruncate(%s, %llu): %s", name,
                 (unsigned long long)proto.block_size, strerror(errno));
        close(fd);
        shm_unlink(name);
        return -1;
    }
    void* p = mmap(NULL, (size_t)proto.block_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(err, (size_t)err_len, "mmap(%s): %s", name, strerror(errno));
        shm_unlink(name);
        return -1;
    }
    s->base = (unsigned char*)p;
    s->size = (size_t)proto.block_size;
    s->h = (PufShmHeader*)p;
    PufShmHeader* h = s->h;
    memcpy(h, &proto, sizeof proto);  /* a fresh shm block is zeroed; the header starts complete */
    memcpy(h->magic, PUF_SHM_MAGIC, 8);
    h->version = PUF_SHM_VERSION;
    h->header_size = PUF_SHM_HEADER_SIZE;
    for (int i = 0; i < spec->num_heads; i++) h->act_sizes[i] = (uint32_t)spec->act_sizes[i];
    for (int i = 0; i < 3; i++) h->picture[i] = (uint32_t)spec->picture[i];
    for (int i = 0; i < spec->num_log; i++) {
        strncpy(h->log_names[i], spec->log_names[i], PUF_SHM_NAME_LEN - 1);
        if (strcmp(spec->log_names[i], "n") == 0) s->log_n = i;
    }
    h->server_pid = (int32_t)getpid();
    h->frameskip = (uint32_t)(spec->frameskip > 0 ? spec->frameskip : 1);
    s->actions = (float*)(s->base + h->off_actions);
    s->observations = s->base + h->off_observations;
    s->rewards = (float*)(s->base + h->off_rewards);
    s->terminals = (float*)(s->base + h->off_terminals);
    s->truncations = (float*)(s->base + h->off_truncations);
    s->masks = h->mask_size ? s->base + h->off_masks : NULL;
    if (s->masks) memset(s->masks, 1, (size_t)h->num_agents * h->mask_size);
    s->log = (float*)(s->base + h->off_log);
    s->seen = 0;
    s->spin = puf_default_spin();
    s->parent = getppid();

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = puf_server_on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != s->parent) puf_server_on_signal(SIGTERM);  /* it died before prctl */
#endif
    puf_store_seq(&h->flags, PUF_FLAG_READY);
    return 0;
}

/* Parks the server until the trainer rings; returns the command (PUF_CMD_*) and its argument.
 * Returns PUF_CMD_QUIT when the trainer is gone (parent changed). */
static inline uint32_t puf_server_wait(PufServer* s, uint64_t* arg) {
    PufShmHeader* h = s->h;
    while (!puf_wait_change(&h->request_seq, s->seen, &h->server_waiting, 200000000, s->spin)) {
        if (getppid() != s->parent) return PUF_CMD_QUIT;
        /* an attached server's trainer is not its parent: the trainer's pid in the header tells. When
         * it is gone the server forgets it and waits for the next trainer to map the block. */
        uint32_t trainer = h->trainer_pid;
        if (trainer != 0 && kill((pid_t)trainer, 0) != 0 && errno == ESRCH) h->trainer_pid = 0;
    }
    s->seen = puf_load_acquire(&h->request_seq);
    if (arg) *arg = h->arg;
    return h->command;
}

/* The command is done: publish the arrays and the status. */
static inline void puf_server_reply(PufServer* s, int status) {
    PufShmHeader* h = s->h;
    h->status = status;
    if (h->command == PUF_CMD_STEP) h->steps++;
    puf_publish(&h->reply_seq, s->seen, &h->trainer_waiting);
}

/* Writes an error text the trainer shows (with PUF_FAILED or when the server gives up). */
static inline void puf_server_message(PufServer* s, const char* text) {
    strncpy(s->h->message, text, PUF_SHM_MESSAGE_LEN - 1);
    s->h->message[PUF_SHM_MESSAGE_LEN - 1] = '\0';
}

/* Adds one finished episode's fields to the log (values in log_names order, "n" excluded or not:
 * the n field is counted here, whatever `values` holds there). */
static inline void puf_server_log_episode(PufServer* s, const float* values) {
    for (int i = 0; i < (int)s->h->num_log; i++) {
        if (i == s->log_n) s->log[i] += 1.0f;
        else s->log[i] += values[i];
    }
}

static inline void puf_server_close(PufServer* s) {
    if (s->h == NULL) return;
    puf_store_seq(&s->h->flags, puf_load_seq(&s->h->flags) | PUF_FLAG_CLOSED);
    shm_unlink(s->name);  /* usually gone already: the trainer unlinks once it has mapped it */
    puf_server_signal_name = NULL;
    munmap(s->base, s->size);
    s->h = NULL;
}

/* ================================ trainer side ================================ */
/* Used by envs/shm/env.py through cffi: the trainer maps each block itself and hands its base
 * address here; a link also holds where that server's rows live in the trainer's own arrays. */

typedef struct PufLink {
    unsigned char* base;        /* the mapped block */
    const float* actions;       /* trainer's rows [rows][K] */
    void* observations;         /* trainer's rows [rows][D], or NULL: read in place */
    float* rewards;             /* or NULL: read in place */
    float* terminals;           /* terminal OR truncated */
    float* truncations;
    unsigned char* masks;       /* [rows][sum act_sizes]; only copied if the server writes masks */
    uint32_t seq;               /* the request in flight */
    int pending;                /* 1 between ring and reply */
} PufLink;

/* Sends a command (copying the actions in first for PUF_CMD_STEP). */
static inline void puf_client_ring(PufLink* l, uint32_t command, uint64_t arg) {
    PufShmHeader* h = (PufShmHeader*)l->base;
    if (command == PUF_CMD_STEP)
        memcpy(l->base + h->off_actions, l->actions, (size_t)h->num_agents * h->num_heads * 4);
    h->command = command;
    h->arg = arg;
    l->seq = h->request_seq + 1u;
    l->pending = 1;
    puf_publish(&h->request_seq, l->seq, &h->server_waiting);
}

/* Rings links[0..n) with the same command (each its own copy of the actions for a step). */
static inline void puf_client_ring_all(PufLink* links, int n, uint32_t command, uint64_t arg) {
    for (int i = 0; i < n; i++) puf_client_ring(&links[i], command, arg);
}

/* The index of the first of links[0..n) whose last reply was not PUF_OK, or -1. */
static inline int puf_client_first_error(const PufLink* links, int n) {
    for (int i = 0; i < n; i++)
        if (((const PufShmHeader*)links[i].base)->status != PUF_OK) return i;
    return -1;
}

/* Copies a replied server's arrays into the trainer's rows. */
static inline void puf_client_copy_out(PufLink* l) {
    PufShmHeader* h = (PufShmHeader*)l->base;
    size_t n = h->num_agents;
    /* NULL: the trainer reads that array in place (one server: its arrays are views of the block) */
    if (l->observations)
        memcpy(l->observations, l->base + h->off_observations, n * h->obs_size * puf_dtype_size(h->obs_dtype));
    if (l->rewards) memcpy(l->rewards, l->base + h->off_rewards, n * 4);
    const float* term = (const float*)(l->base + h->off_terminals);
    const float* trunc = (const float*)(l->base + h->off_truncations);
    for (size_t i = 0; i < n; i++) {
        l->terminals[i] = (term[i] != 0.0f || trunc[i] != 0.0f) ? 1.0f : 0.0f;
        l->truncations[i] = trunc[i];
    }
    if (h->mask_size && l->masks) memcpy(l->masks, l->base + h->off_masks, n * h->mask_size);
}

/* Waits for the replies of links[0..n) (each pending one), copying each one's arrays out as it
 * arrives, until all have replied or `timeout_ns` passes. Returns how many are still pending. */
static inline int puf_client_wait_all(PufLink* links, int n, int64_t timeout_ns, int spin, int copy) {
    int64_t deadline = puf_now_ns() + timeout_ns;
    int left = 0;
    for (int i = 0; i < n; i++) {
        PufLink* l = &links[i];
        if (!l->pending) continue;
        PufShmHeader* h = (PufShmHeader*)l->base;
        int64_t rest = deadline - puf_now_ns();
        if (rest < 0) rest = 0;
        if (puf_load_acquire(&h->reply_seq) != l->seq &&
            !(puf_wait_change(&h->reply_seq, l->seq - 1u, &h->trainer_waiting, rest, spin) &&
              puf_load_acquire(&h->reply_seq) == l->seq)) {
            left++;
            continue;
        }
        l->pending = 0;
        if (copy) puf_client_copy_out(l);
    }
    return left;
}

/* Python servers (envs/shm/server.py) wait and reply through these. */
static inline int puf_py_server_wait(unsigned char* base, uint32_t seen, int64_t timeout_ns, int spin) {
    PufShmHeader* h = (PufShmHeader*)base;
    return puf_wait_change(&h->request_seq, seen, &h->server_waiting, timeout_ns, spin);
}
static inline void puf_py_server_reply(unsigned char* base, uint32_t seq, int32_t status) {
    PufShmHeader* h = (PufShmHeader*)base;
    h->status = status;
    if (h->command == PUF_CMD_STEP) h->steps++;
    puf_publish(&h->reply_seq, seq, &h->trainer_waiting);
}
static inline void puf_py_store(uint32_t* p, uint32_t v) { puf_store_seq(p, v); }
static inline uint32_t puf_py_load(uint32_t* p) { return puf_load_seq(p); }

#ifdef __cplusplus
}
#endif
#endif /* PUFFER_SERVER_H */
