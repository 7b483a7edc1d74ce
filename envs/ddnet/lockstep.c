/* Lockstep for an unmodified DDNet-Server: a library the server is started with (LD_PRELOAD) that
 * gives it a clock the trainer advances, so the game runs exactly the ticks the trainer grants, as
 * fast as the CPU allows, and stands still in between. Linux.
 *
 * How the server keeps time (DDNet 16.4, src/engine/server/server.cpp CServer::Run and
 * src/base/system.cpp): every reading of its clock is time_get(), which is
 * std::chrono::steady_clock::now() minus the reading at start-up. Each pass of its main loop reads
 * the clock, runs every tick whose start time has passed (tick N starts at the game's start time +
 * N * 20 ms), sends one snapshot round if it ran any, handles the packets that came in, and then
 * sleeps in net_socket_read_wait(), a select() on its UDP socket with the time left until the next
 * tick as the timeout. So two calls decide everything: steady_clock::now() (the game's time) and
 * select() (its sleep). This library answers the first from a virtual time held in shared memory
 * and replaces the second with a wait for the trainer:
 *
 *   - the trainer sends every bot's input, then writes `need_rx` (datagrams its bots have sent this
 *     server so far) and raises `grant_ns` by ticks x 20 ms, and wakes the server (eventfd);
 *   - with a grant pending, the server's select() returns at once while datagrams are waiting (the
 *     server reads them without any time passing); once it has received `need_rx` datagrams, it
 *     sets the virtual time to `grant_ns` and returns, so the next pass runs exactly the granted
 *     ticks with every input already applied, sends the snapshot, and comes back to select();
 *   - that next select() publishes `reached_ns` (= the grant) and `reached_tx` (datagrams the
 *     server had sent by then, snapshot included) and signals the trainer (eventfd); the trainer's
 *     client waits until its bots have received that many datagrams from this server;
 *   - with no grant pending the server sleeps until one comes; datagrams wake it too (the join,
 *     keep-alives), but only LOCKSTEP_BATCH_MS after the first, unless a grant comes sooner: a
 *     step's inputs are followed by its grant, so they wake the server once, not once each.

 * Datagrams are counted on both sides, not parsed, so nothing depends on the protocol's contents.
 * A datagram that does not come keeps the server waiting: on a busy machine one can be late by
 * seconds (the kernel's loopback delivery waits for a core too), and going on without it would
 * apply an input late. One truly lost would hold the server until the trainer's hang timeout
 * restarts it.
 *
 * The block lives in a memfd the trainer creates and passes by number (PUFFGPU_LOCKSTEP =
 * "memfd,wake_fd,done_fd,port"); without that variable every call passes straight through. Other
 * threads of the server (its database worker, its job pool) see the same virtual time.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lockstep.h"

#define LOCKSTEP_BATCH_MS 2    /* datagrams without a grant wait this long for one before the server reads them */
#define LOCKSTEP_IDLE_MS 100   /* an idle wait returns this often (no time passes): the server looks at its
                                  signals (SIGTERM) there, and a signal may land on another of its threads */

static lockstep_block *blk;    /* NULL: pass-through */
static int wake_fd = -1, done_fd = -1, game_port = -1, game_fd = -1;
static int64_t base_ns;        /* the real clock when the library started: the virtual clock's zero */
static int advanced;           /* the last select() let time move: the next one publishes the grant as reached */

static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_recv)(int, void *, size_t, int);
static int (*real_recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
static int (*real_bind)(int, const struct sockaddr *, socklen_t);
static int64_t (*real_steady_now)(void);

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

__attribute__((constructor)) static void lockstep_init(void) {
    real_select = dlsym(RTLD_NEXT, "select");
    real_sendto = dlsym(RTLD_NEXT, "sendto");
    real_recv = dlsym(RTLD_NEXT, "recv");
    real_recvmmsg = dlsym(RTLD_NEXT, "recvmmsg");
    real_bind = dlsym(RTLD_NEXT, "bind");
    real_steady_now = dlsym(RTLD_NEXT, "_ZNSt6chrono3_V212steady_clock3nowEv");
    base_ns = monotonic_ns();
    const char *spec = getenv("PUFFGPU_LOCKSTEP");
    int memfd;
    if (!spec || sscanf(spec, "%d,%d,%d,%d", &memfd, &wake_fd, &done_fd, &game_port) != 4) return;
    void *p = mmap(NULL, sizeof(lockstep_block), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    close(memfd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "puffgpu lockstep: cannot map the shared block (fd %d): %s\n", memfd, strerror(errno));
        _exit(70);
    }
    blk = p;
    if (blk->magic != LOCKSTEP_MAGIC) {
        fprintf(stderr, "puffgpu lockstep: the shared block is not a lockstep block (magic %08x)\n", blk->magic);
        _exit(70);
    }
    atomic_store(&blk->pid, (int32_t)getpid());
    unsetenv("PUFFGPU_LOCKSTEP"); /* not for the server's own children */
}

/* std::chrono::steady_clock::now(): a time_point is one int64 of nanoseconds, returned in a register */
int64_t _ZNSt6chrono3_V212steady_clock3nowEv(void) {
    if (!blk) return real_steady_now ? real_steady_now() : monotonic_ns();
    return base_ns + atomic_load(&blk->now_ns);
}

/* the game's socket: the UDP socket bound to the server's port */
int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    int r = real_bind(fd, addr, len);
    if (r == 0 && blk && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        int type = 0; socklen_t tl = sizeof type;
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_DGRAM && ntohs(in->sin_port) == game_port)
            game_fd = fd;
    }
    return r;
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen) {
    ssize_t r = real_sendto(fd, buf, n, flags, to, tolen);
    if (blk && fd == game_fd && r >= 0) atomic_fetch_add(&blk->tx, 1);
    return r;
}

ssize_t recv(int fd, void *buf, size_t n, int flags) {
    ssize_t r = real_recv(fd, buf, n, flags);
    if (blk && fd == game_fd && r >= 0) atomic_fetch_add(&blk->rx, 1);
    return r;
}

int recvmmsg(int fd, struct mmsghdr *msgs, unsigned int vlen, int flags, struct timespec *timeout) {
    int r = real_recvmmsg(fd, msgs, vlen, flags, timeout);
    if (blk && fd == game_fd && r > 0) atomic_fetch_add(&blk->rx, (uint64_t)r);
    return r;
}

static int readable(fd_set *readfds) {
    FD_ZERO(readfds);
    FD_SET(game_fd, readfds);
    return 1;
}

static void drain(int fd) {
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0) { /* another wake drained it already */ }
}

static void signal_fd(int fd) {
    uint64_t one = 1;
    if (fd >= 0 && write(fd, &one, sizeof one) < 0) { /* full or gone: the reader polls the block anyway */ }
}

/* the server's sleep between passes of its main loop: see the top of this file */
static int lockstep_wait(fd_set *readfds) {
    if (advanced) {
        advanced = 0;
        atomic_store(&blk->reached_tx, atomic_load(&blk->tx));
        atomic_store(&blk->reached_ns, atomic_load(&blk->now_ns));
        atomic_fetch_add(&blk->passes, 1);
        signal_fd(done_fd);
    }
    for (;;) {
        struct pollfd fds[2] = {{wake_fd, POLLIN, 0}, {game_fd, POLLIN, 0}};
        int64_t grant = atomic_load(&blk->grant_ns);
        int pending = grant > atomic_load(&blk->now_ns);
        if (pending) {
            if (poll(&fds[1], 1, 0) > 0) return readable(readfds); /* what has come first */
            if (atomic_load(&blk->rx) >= atomic_load(&blk->need_rx)) {
                atomic_store(&blk->now_ns, grant);
                advanced = 1;
                FD_ZERO(readfds);
                return 0;
            }
        }
        int r = poll(fds, 2, LOCKSTEP_IDLE_MS);
        if ((r < 0 && errno == EINTR) || r == 0) { FD_ZERO(readfds); return 0; }
        if (r > 0 && (fds[0].revents & POLLIN)) drain(wake_fd);
        else if (r > 0 && !pending) {
            /* datagrams while no grant is pending: most are the bots' inputs, the grant close
             * behind them; wait a little for it, so that they wake the server once, not one by one */
            struct pollfd wake = {wake_fd, POLLIN, 0};
            if (poll(&wake, 1, LOCKSTEP_BATCH_MS) > 0) drain(wake_fd);
            else return readable(readfds);
        }
    }
}

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout) {
    if (blk && game_fd >= 0 && game_fd < nfds && readfds && !writefds && !exceptfds && FD_ISSET(game_fd, readfds))
        return lockstep_wait(readfds);
    return real_select(nfds, readfds, writefds, exceptfds, timeout);
}
