/* The shared block between the trainer and one DDNet server run in lockstep (lockstep.c, preloaded
 * into the server; the client side in ddnet_client.h). One block per server process, in a memfd.
 * Times are the server's virtual clock in nanoseconds since it started; counts are datagrams on the
 * server's game socket since it started. */
#ifndef PUFFGPU_LOCKSTEP_H
#define PUFFGPU_LOCKSTEP_H

#include <stdatomic.h>
#include <stdint.h>

#define LOCKSTEP_MAGIC 0x4b434f4cu /* "LOCK" */
#define LOCKSTEP_TICK_NS 20000000  /* DDNet's 50 ticks a second */

typedef struct {
    uint32_t magic;
    _Atomic int32_t pid;           /* the server's, once the library has started in it */
    /* written by the trainer */
    _Atomic int64_t grant_ns;      /* the server may run until this time */
    _Atomic uint64_t need_rx;      /* ... once it has received this many datagrams (the trainer's inputs) */
    /* written by the server */
    _Atomic int64_t now_ns;        /* its clock */
    _Atomic uint64_t rx, tx;       /* datagrams received and sent on the game socket */
    _Atomic int64_t reached_ns;    /* the latest grant it has run: ticks, snapshots and packets done */
    _Atomic uint64_t reached_tx;   /* tx when it got there: what the bots must have received */
    _Atomic uint64_t passes;       /* grants run */
} lockstep_block;

#endif
