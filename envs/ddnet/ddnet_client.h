/* Bot clients of an unmodified DDNet server: its UDP protocol (Teeworlds 0.6 with DDNet's security
 * token), written for puffgpu from the protocol's public description (docs/design.md, "DDNet").
 *
 * One ddc_env holds every bot of every server of one vecenv. A network thread polls all their UDP
 * sockets (poll() with a 5 ms timeout: no busy loop), runs each connection (sequence numbers,
 * acks, resends of vital chunks, keep-alives), walks the join handshake (INFO, READY, STARTINFO,
 * ENTERGAME), decodes every snapshot (Huffman, variable-length ints, deltas against the acked
 * snapshot, the CRC) into a few numbers per bot (ddc_field), and answers each snapshot with the
 * bot's current input, acking it. The trainer's thread writes inputs (ddc_input) and calls
 * ddc_send_inputs to send them at once, and waits for ticks with ddc_wait_tick. Linux and macOS.
 */
#ifndef DDNET_CLIENT_H
#define DDNET_CLIENT_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lockstep.h"

/* ---- what the trainer reads: one int32 row of DDC_NFIELDS per bot ---- */
enum ddc_field {
    DDC_PHASE,        /* 0 connecting, 1 sent INFO, 2 sent READY, 3 sent STARTINFO, 4 sent ENTERGAME, 5 got a snapshot */
    DDC_CID,          /* our client id on the server (-1 unknown) */
    DDC_TICK,         /* game tick of the latest decoded snapshot */
    DDC_HAS_CHAR,     /* our character is in that snapshot (0: dead, spectating or not spawned yet) */
    DDC_X, DDC_Y, DDC_VX, DDC_VY,          /* CharacterCore: position (1/32 tile), velocity (1/256 units a tick) */
    DDC_DIRECTION, DDC_JUMPED, DDC_HOOKED_PLAYER, DDC_HOOK_STATE, DDC_HOOK_X, DDC_HOOK_Y,
    DDC_WEAPON, DDC_AMMO,
    DDC_DDNET,        /* DDNetCharacter was in the snapshot: the next five are valid */
    DDC_FLAGS, DDC_FREEZE_END, DDC_JUMPS, DDC_JUMPED_TOTAL, DDC_FREEZE_START,
    DDC_NUM_OTHERS,   /* other characters in the snapshot (the nearest DDC_OTHERS follow) */
    DDC_OTHERS_AT,    /* DDC_OTHERS × (x, y, vx, vy), nearest first */
    DDC_SNAPS = DDC_OTHERS_AT + 4 * 4,  /* snapshots decoded */
    DDC_SNAP_ERRORS,  /* snapshots dropped: missing delta base, bad delta, CRC mismatch */
    DDC_INPUTS_SENT,
    DDC_CONNECTS,     /* connection attempts (a reconnect after a timeout or a server restart adds one) */
    DDC_RECV_TIME_MS, /* milliseconds (mod 2^31) of the latest packet from the server */
    DDC_MAP_CHANGES,  /* maps the server sent (the join's, then each change or reload: the ticks start over) */
    DDC_ABSENT_TICK,  /* tick of the latest snapshot without our character (-1: none yet): with a snapshot every
                         tick a death or a kill shows here even when the respawn came before the trainer looked */
    DDC_DEATHS,       /* the server's kill messages naming us (a death, a kill_pl): counted in the order of the
                         snapshots, so one that came with a snapshot in which we live again still shows */
    DDC_NFIELDS
};
#define DDC_OTHERS 4
#define DDC_INPUT_SIZE 10 /* Direction, TargetX, TargetY, Jump, Fire (held 0/1), Hook, PlayerFlags, WantedWeapon, NextWeapon, PrevWeapon */

/* ---- protocol constants (0.6) ---- */
#define DDC_MAX_PACKET 1400
#define DDC_MAX_SEQ 1024
#define DDC_PF_CONTROL 1
#define DDC_PF_RESEND 4
#define DDC_PF_COMPRESSION 8
#define DDC_CF_VITAL 1
#define DDC_CF_RESEND 2
enum { CTRL_KEEPALIVE, CTRL_CONNECT, CTRL_CONNECTACCEPT, CTRL_ACCEPT, CTRL_CLOSE };
enum { SYS_INFO = 1, SYS_MAP_CHANGE = 2, SYS_CON_READY = 4, SYS_SNAP = 5, SYS_SNAPEMPTY = 6, SYS_SNAPSINGLE = 7,
       SYS_READY = 14, SYS_ENTERGAME = 15, SYS_INPUT = 16, SYS_RCON_CMD = 17, SYS_RCON_AUTH = 18 };
enum { GAME_SV_KILLMSG = 4, GAME_SV_READYTOENTER = 8, GAME_CL_STARTINFO = 20 };
enum { OBJ_CHARACTER = 9, OBJ_PLAYERINFO = 10 };
#define DDC_VERSION "0.6 626fce9a778df4d4"
#define DDC_DDNET_VERSION 16040     /* the client version we announce: DDNet 16.4, the server's own */
#define DDC_DDNET_VERSION_STR "DDNet 16.4 (puffgpu bot)"
#define DDC_MAX_ITEMS 1024
#define DDC_MAX_INTS 16384          /* a snapshot's item data: 64 KiB, the protocol's limit */
#define DDC_SNAP_KEEP 4             /* decoded snapshots kept per bot as delta bases */
#define DDC_MAX_PARTS 64
#define DDC_RESEND_SLOTS 64
#define DDC_LOST_MS 3000           /* lockstep: a datagram not here after this long without progress is lost */

/* ---- Huffman (the protocol's fixed tree, built from its frequency table: ddc_huffman_init) ---- */
typedef struct { uint16_t leaf[2]; int16_t symbol; } ddc_hnode;
static ddc_hnode ddc_hnodes[257 * 2];
static int ddc_hroot = -1;
/* the node each DDC_LUT_BITS-bit prefix leads to from the root (stopping at a leaf), and the bits
 * that took: most codes are decoded with one lookup instead of a walk bit by bit */
#define DDC_LUT_BITS 10
static uint16_t ddc_hlut_node[1 << DDC_LUT_BITS];
static uint8_t ddc_hlut_bits[1 << DDC_LUT_BITS];

/* Builds the tree exactly as the protocol does: the 256 byte frequencies plus EOF (1), merged two
 * lowest at a time after a stable descending bubble sort, so both ends agree on every code. */
static void ddc_huffman_init(const unsigned *freq) {
    unsigned f[257]; int id[257], left = 257, n = 257;
    for (int i = 0; i < 257; i++) {
        f[i] = i == 256 ? 1 : freq[i]; id[i] = i;
        ddc_hnodes[i].leaf[0] = ddc_hnodes[i].leaf[1] = 0xffff; ddc_hnodes[i].symbol = (int16_t)i;
    }
    while (left > 1) {
        for (int changed = 1; changed;) {
            changed = 0;
            for (int i = 0; i < left - 1; i++)
                if (f[i] < f[i + 1]) {
                    unsigned tf = f[i]; f[i] = f[i + 1]; f[i + 1] = tf;
                    int ti = id[i]; id[i] = id[i + 1]; id[i + 1] = ti; changed = 1;
                }
        }
        ddc_hnodes[n].leaf[0] = (uint16_t)id[left - 1];
        ddc_hnodes[n].leaf[1] = (uint16_t)id[left - 2];
        ddc_hnodes[n].symbol = -1;
        id[left - 2] = n; f[left - 2] += f[left - 1];
        n++; left--;
    }
    for (int v = 0; v < (1 << DDC_LUT_BITS); v++) {
        int node = n - 1, b = 0;
        while (b < DDC_LUT_BITS && ddc_hnodes[node].symbol < 0) node = ddc_hnodes[node].leaf[(v >> b++) & 1];
        ddc_hlut_node[v] = (uint16_t)node; ddc_hlut_bits[v] = (uint8_t)b;
    }
    ddc_hroot = n - 1;
}

/* bits are read least significant first; the EOF symbol ends the data. Returns the size or -1.
 * A code starts with one table lookup of its first DDC_LUT_BITS bits; a longer one goes on bit by
 * bit; the input's last bits (fewer than the table needs) go bit by bit too. */
static int ddc_huffman_decompress(const uint8_t *in, int in_size, uint8_t *out, int out_cap) {
    const uint8_t *end = in + in_size;
    uint64_t bits = 0; int nbits = 0, size = 0;
    for (;;) {
        while (nbits <= 56 && in < end) { bits |= (uint64_t)*in++ << nbits; nbits += 8; }
        if (nbits == 0) return size; /* the last byte's padding may stop mid-code: DDNet accepts that */
        int node = ddc_hroot;
        if (nbits >= DDC_LUT_BITS) {
            int v = (int)(bits & ((1u << DDC_LUT_BITS) - 1));
            node = ddc_hlut_node[v];
            bits >>= ddc_hlut_bits[v]; nbits -= ddc_hlut_bits[v];
        }
        while (ddc_hnodes[node].symbol < 0) {
            if (nbits == 0) return size;
            node = ddc_hnodes[node].leaf[bits & 1];
            bits >>= 1; nbits--;
        }
        if (ddc_hnodes[node].symbol == 256) return size;
        if (size >= out_cap) return -1;
        out[size++] = (uint8_t)ddc_hnodes[node].symbol;
    }
}

/* ---- variable-length ints: 6 bits + sign in the first byte, 7 bits in each next ---- */
static uint8_t *ddc_pack_int(uint8_t *p, int v) {
    int sign = v < 0; unsigned u = sign ? ~(unsigned)v : (unsigned)v;
    *p = (uint8_t)((sign << 6) | (u & 0x3f)); u >>= 6;
    while (u) { *p++ |= 0x80; *p = u & 0x7f; u >>= 7; }
    return p + 1;
}

static const uint8_t *ddc_unpack_int(const uint8_t *p, const uint8_t *end, int *out) {
    if (p >= end) return NULL;
    int sign = (*p >> 6) & 1; unsigned u = *p & 0x3f; int shift = 6;
    while (*p & 0x80) {
        if (++p >= end || shift > 27) return NULL;
        u |= (unsigned)(*p & 0x7f) << shift; shift += 7;
    }
    *out = (int)(u ^ (unsigned)-sign);
    return p + 1;
}

/* ---- decoded snapshots ---- */
#define DDC_HASH (2 * DDC_MAX_ITEMS)   /* open addressing, a power of two: items by key */
typedef struct {
    int tick, num_items, num_ints;
    int key[DDC_MAX_ITEMS], off[DDC_MAX_ITEMS], size[DDC_MAX_ITEMS]; /* size in ints */
    uint16_t hash[DDC_HASH];   /* item index + 1 (0: empty), so a zeroed snapshot is an empty one */
    int32_t data[DDC_MAX_INTS];
} ddc_snap;

static unsigned ddc_slot_of(int key) { return ((unsigned)key * 2654435761u) >> 21 & (DDC_HASH - 1); }

static int ddc_find(const ddc_snap *s, int key) {
    for (unsigned h = ddc_slot_of(key);; h = (h + 1) & (DDC_HASH - 1)) {
        int i = s->hash[h] - 1;
        if (i < 0) return -1;
        if (s->key[i] == key) return i;
    }
}

static void ddc_clear(ddc_snap *s) {
    s->num_items = s->num_ints = 0;
    memset(s->hash, 0, sizeof s->hash);
}

static int32_t *ddc_new_item(ddc_snap *s, int key, int size) {
    if (s->num_items >= DDC_MAX_ITEMS || s->num_ints + size > DDC_MAX_INTS) return NULL;
    int i = s->num_items++;
    s->key[i] = key; s->off[i] = s->num_ints; s->size[i] = size; s->num_ints += size;
    unsigned h = ddc_slot_of(key);
    while (s->hash[h]) h = (h + 1) & (DDC_HASH - 1);
    s->hash[h] = (uint16_t)(i + 1);
    return s->data + s->off[i];
}

/* sizes (ints) of the 0.6 objects and events whose deltas leave the size out; others carry it */
static const int ddc_item_sizes[21] = {0, 10, 6, 5, 4, 3, 8, 4, 15, 22, 5, 17, 3, 2, 2, 2, 2, 3, 3, 3, 3};

/* to = from with the delta applied; 0 or a negative error */
static int ddc_unpack_delta(const ddc_snap *from, ddc_snap *to, const int *d, int n) {
    const int *end = d + n;
    if (n < 3) return -1;
    int num_deleted = d[0], num_updates = d[1];
    if (d[2] != 0 || num_deleted < 0 || num_updates < 0 || num_deleted > n - 3) return -2;
    const int *deleted = d + 3;
    d += 3 + num_deleted;
    ddc_clear(to);
    for (int i = 0; i < from->num_items; i++) {
        int keep = 1;
        for (int k = 0; k < num_deleted; k++) if (deleted[k] == from->key[i]) { keep = 0; break; }
        if (!keep) continue;
        int32_t *p = ddc_new_item(to, from->key[i], from->size[i]);
        if (!p) return -3;
        memcpy(p, from->data + from->off[i], sizeof(int32_t) * from->size[i]);
    }
    for (int u = 0; u < num_updates; u++) {
        if (end - d < 2) return -4;
        int type = *d++, id = *d++, size;
        if (type < 0 || type > 0x7fff || id < 0 || id > 0xffff) return -5;
        if (type < 21 && ddc_item_sizes[type]) size = ddc_item_sizes[type];
        else {
            if (end - d < 1 || *d < 0 || *d > DDC_MAX_INTS) return -6;
            size = *d++;
        }
        if (end - d < size) return -7;
        int key = (type << 16) | id;
        int j = ddc_find(to, key);
        int32_t *p = j >= 0 ? to->data + to->off[j] : ddc_new_item(to, key, size);
        if (!p || (j >= 0 && to->size[j] != size)) return -8;
        int f = ddc_find(from, key);
        if (f >= 0 && from->size[f] == size) {
            const int32_t *old = from->data + from->off[f];
            for (int k = 0; k < size; k++) p[k] = (int32_t)((uint32_t)old[k] + (uint32_t)d[k]);
        } else {
            for (int k = 0; k < size; k++) p[k] = d[k];
        }
        d += size;
    }
    return 0;
}

static int ddc_crc(const ddc_snap *s) {
    uint32_t c = 0;
    for (int i = 0; i < s->num_items; i++)
        for (int k = 0; k < s->size[i]; k++) c += (uint32_t)s->data[s->off[i] + k];
    return (int)c;
}

/* ---- one bot: a connection and its snapshots ---- */
typedef struct {
    int32_t seq; int16_t flags; int16_t size; int64_t last_send_ms; uint8_t data[256];
} ddc_resend;

typedef struct {
    int fd;
    struct sockaddr_in server;
    int server_index;
    int connected;             /* got CONNECTACCEPT */
    uint8_t token[4];
    int seq, ack, peer_ack, request_resend;
    ddc_resend resend[DDC_RESEND_SLOTS];
    int num_resend;
    int64_t last_send_ms, last_recv_ms, connect_ms;
    pthread_mutex_t lock;      /* the trainer's thread sends inputs too */
    int fire_count;            /* the protocol's Fire is a count of presses and releases */
    /* snapshots */
    ddc_snap *snaps;           /* DDC_SNAP_KEEP, ring */
    int snap_next;
    ddc_snap *work;
    uint8_t *parts; int part_size[DDC_MAX_PARTS]; int parts_tick; uint64_t parts_got; /* bit k: part k */
    int ack_tick;              /* latest decoded snapshot's tick: sent back as acked */
    char name[16];
    int rcon_authed;           /* sent RCON_AUTH on this connection */
    int lost;                  /* the connection is to be started over (by the network thread) */
    _Atomic uint64_t *sent;    /* datagrams sent to this bot's server (the lockstep count) */
} ddc_bot;

typedef struct {
    int num_bots, num_servers;
    ddc_bot *bots;
    int32_t *state;            /* [num_bots, DDC_NFIELDS] */
    int32_t *input;            /* [num_bots, DDC_INPUT_SIZE] */
    int32_t ddnet_char_uuid[4];
    char rcon_password[64];
    uint8_t clientver_uuid[16]; /* DDNet's "clientver@ddnet.tw" message */
    pthread_t thread;
    volatile int running;
    pthread_mutex_t tick_lock;
    pthread_cond_t tick_cond;
    int64_t decode_ns, decode_count, decode_max_ns; /* snapshot decoding cost */
    uint8_t *scratch;          /* decompression buffers of the network thread */
    int32_t *ints;
    /* lockstep (lockstep.h): the servers run the ticks the trainer grants, nothing more */
    int lockstep;
    _Atomic uint64_t *sent, *received;  /* [num_servers] datagrams to and from each server (all its bots) */
    lockstep_block **blocks;            /* [num_servers] */
    int *wake_fd, *done_fd;             /* [num_servers] eventfds: the trainer wakes the server, the server us */
    uint64_t lost;                      /* waits that went on without datagrams a server counted as sent */
    uint64_t *seen;                     /* [num_servers] received[s] at the last look of ddc_lockstep_wait */
    int64_t *progress_ms;               /* [num_servers] when received[s] last grew (or the grant began) */
    int32_t *server_tick;               /* [num_servers] the newest tick of its bots when the last wait ended */
    int32_t *bot_tick;                  /* [num_bots] each bot's tick then */
    int64_t looked_ms;                  /* when ddc_lockstep_wait last looked */
} ddc_env;

static int64_t ddc_now_ms(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
static int64_t ddc_now_ns(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* header (3 bytes) + chunks + the token; never compressed (the server accepts both) */
static void ddc_send_packet(ddc_bot *b, int flags, int num_chunks, const uint8_t *chunks, int size) {
    uint8_t buf[DDC_MAX_PACKET + 8];
    if (size + 7 > (int)sizeof buf) return;
    if (b->request_resend) { flags |= DDC_PF_RESEND; b->request_resend = 0; }
    buf[0] = (uint8_t)(((flags << 4) & 0xf0) | ((b->ack >> 8) & 0x3));
    buf[1] = (uint8_t)(b->ack & 0xff);
    buf[2] = (uint8_t)num_chunks;
    memcpy(buf + 3, chunks, size);
    memcpy(buf + 3 + size, b->token, 4);
    if (sendto(b->fd, buf, 3 + size + 4, 0, (struct sockaddr *)&b->server, sizeof b->server) >= 0)
        atomic_fetch_add(b->sent, 1);
    b->last_send_ms = ddc_now_ms();
}

static void ddc_send_control(ddc_bot *b, int msg, const void *extra, int extra_size) {
    uint8_t c[64]; c[0] = (uint8_t)msg;
    if (extra_size) memcpy(c + 1, extra, extra_size);
    ddc_send_packet(b, DDC_PF_CONTROL, 0, c, 1 + extra_size);
}

static int ddc_chunk_header(uint8_t *p, int flags, int size, int seq) {
    p[0] = (uint8_t)(((flags & 3) << 6) | ((size >> 4) & 0x3f));
    p[1] = (uint8_t)(size & 0xf);
    if (flags & DDC_CF_VITAL) { p[1] |= (uint8_t)((seq >> 2) & 0xf0); p[2] = (uint8_t)(seq & 0xff); return 3; }
    return 2;
}

/* one vital message, kept until the server acks it */
static void ddc_send_vital(ddc_bot *b, const uint8_t *msg, int size) {
    if (size > 256) return;
    if (b->num_resend >= DDC_RESEND_SLOTS) {
        /* the server acks nothing: a message that could not be resent would stall every later one */
        b->connected = 0; b->connect_ms = 0; b->num_resend = 0; b->lost = 1;
        return;
    }
    b->seq = (b->seq + 1) % DDC_MAX_SEQ;
    ddc_resend *r = &b->resend[b->num_resend++];
    r->seq = b->seq; r->size = (int16_t)size; memcpy(r->data, msg, size); r->last_send_ms = ddc_now_ms();
    uint8_t c[300]; int h = ddc_chunk_header(c, DDC_CF_VITAL, size, b->seq);
    memcpy(c + h, msg, size);
    ddc_send_packet(b, 0, 1, c, h + size);
}

static void ddc_resend_all(ddc_bot *b) {
    for (int i = 0; i < b->num_resend; i++) {
        ddc_resend *r = &b->resend[i];
        uint8_t c[300]; int h = ddc_chunk_header(c, DDC_CF_VITAL | DDC_CF_RESEND, r->size, r->seq);
        memcpy(c + h, r->data, r->size);
        ddc_send_packet(b, 0, 1, c, h + r->size);
        r->last_send_ms = ddc_now_ms();
    }
}

/* the server acked everything up to `ack` (sequence numbers wrap at 1024) */
static void ddc_acked(ddc_bot *b, int ack) {
    int k = 0;
    for (int i = 0; i < b->num_resend; i++) {
        int behind = (ack - b->resend[i].seq + DDC_MAX_SEQ) % DDC_MAX_SEQ;
        if (behind < DDC_MAX_SEQ / 2) continue; /* acked */
        b->resend[k++] = b->resend[i];
    }
    b->num_resend = k;
}

static uint8_t *ddc_msg_id(uint8_t *p, int id, int sys) { return ddc_pack_int(p, (id << 1) | sys); }
static uint8_t *ddc_pack_str(uint8_t *p, const char *s) { size_t n = strlen(s) + 1; memcpy(p, s, n); return p + n; }

/* the bot's game view starts over (a new connection, or a new map: its ticks restart at 0) */
static void ddc_forget_snapshots(ddc_env *e, int i) {
    ddc_bot *b = &e->bots[i];
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    b->snap_next = 0; b->ack_tick = -1; b->parts_tick = -1; b->parts_got = 0;
    for (int k = 0; k < DDC_SNAP_KEEP; k++) b->snaps[k].tick = -1;
    pthread_mutex_lock(&e->tick_lock);
    st[DDC_HAS_CHAR] = 0; st[DDC_DDNET] = 0; st[DDC_TICK] = -1; st[DDC_ABSENT_TICK] = -1;
    if (e->bot_tick) e->bot_tick[i] = -1; /* not current: a joining client gets snapshots only now and then */
    pthread_cond_broadcast(&e->tick_cond);
    pthread_mutex_unlock(&e->tick_lock);
}

/* the state rows are written under tick_lock, which ddc_copy_state takes */
static void ddc_set_phase(ddc_env *e, int i, int phase) {
    pthread_mutex_lock(&e->tick_lock);
    e->state[(size_t)i * DDC_NFIELDS + DDC_PHASE] = phase;
    if (phase == 0) e->state[(size_t)i * DDC_NFIELDS + DDC_CID] = -1;
    pthread_mutex_unlock(&e->tick_lock);
}

static void ddc_reset_connection(ddc_env *e, int i) {
    ddc_bot *b = &e->bots[i];
    b->connected = 0; b->rcon_authed = 0; b->seq = 0; b->ack = 0; b->peer_ack = 0; b->request_resend = 0; b->num_resend = 0;
    memset(b->token, 0xff, 4); /* "unknown": the server answers CONNECT+TKEN with its own token */
    ddc_set_phase(e, i, 0);
    ddc_forget_snapshots(e, i);
    b->connect_ms = 0;
}

static void ddc_send_connect(ddc_env *e, int i) {
    ddc_bot *b = &e->bots[i];
    static const uint8_t magic[4] = {'T', 'K', 'E', 'N'};
    ddc_send_control(b, CTRL_CONNECT, magic, 4);
    if (!b->connect_ms) e->state[(size_t)i * DDC_NFIELDS + DDC_CONNECTS]++;
    b->connect_ms = ddc_now_ms();
}

/* the input message: acked snapshot tick, intended tick, size, the 10 input ints. Non-vital. */
static void ddc_send_input_locked(ddc_env *e, int i) {
    ddc_bot *b = &e->bots[i];
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    const int32_t *in = e->input + (size_t)i * DDC_INPUT_SIZE;
    if (st[DDC_PHASE] < 4) return;
    int want_fire = in[4] != 0;
    if ((b->fire_count & 1) != want_fire) b->fire_count = (b->fire_count + 1) & 0x3f;
    uint8_t msg[128], *p = ddc_msg_id(msg, SYS_INPUT, 1);
    p = ddc_pack_int(p, b->ack_tick);
    p = ddc_pack_int(p, b->ack_tick + 1); /* the server applies it at its next tick at the latest */
    p = ddc_pack_int(p, DDC_INPUT_SIZE * 4);
    for (int k = 0; k < DDC_INPUT_SIZE; k++) p = ddc_pack_int(p, k == 4 ? b->fire_count : in[k]);
    uint8_t c[160]; int size = (int)(p - msg), h = ddc_chunk_header(c, 0, size, 0);
    memcpy(c + h, msg, size);
    ddc_send_packet(b, 0, 1, c, h + size);
    st[DDC_INPUTS_SENT]++;
}

/* the snapshot's own numbers into the bot's state row */
static void ddc_extract(ddc_env *e, int i, const ddc_snap *s) {
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    int cid = st[DDC_CID];
    for (int k = 0; k < s->num_items; k++)
        if ((s->key[k] >> 16) == OBJ_PLAYERINFO && s->size[k] >= 2 && s->data[s->off[k]] == 1)
            cid = s->data[s->off[k] + 1];
    st[DDC_CID] = cid;
    int me = cid >= 0 ? ddc_find(s, (OBJ_CHARACTER << 16) | cid) : -1;
    st[DDC_HAS_CHAR] = me >= 0;
    if (me < 0) st[DDC_ABSENT_TICK] = s->tick;
    if (me >= 0) {
        const int32_t *c = s->data + s->off[me];
        st[DDC_X] = c[1]; st[DDC_Y] = c[2]; st[DDC_VX] = c[3]; st[DDC_VY] = c[4];
        st[DDC_DIRECTION] = c[6]; st[DDC_JUMPED] = c[7]; st[DDC_HOOKED_PLAYER] = c[8]; st[DDC_HOOK_STATE] = c[9];
        st[DDC_HOOK_X] = c[11]; st[DDC_HOOK_Y] = c[12]; st[DDC_WEAPON] = c[19]; st[DDC_AMMO] = c[18];
    }
    /* DDNetCharacter: an extended item whose type id the snapshot maps to its UUID (type-0 items) */
    st[DDC_DDNET] = 0;
    for (int k = 0; k < s->num_items && me >= 0; k++) {
        if ((s->key[k] >> 16) != 0 || s->size[k] != 4 || memcmp(s->data + s->off[k], e->ddnet_char_uuid, 16)) continue;
        int type = s->key[k] & 0xffff;
        int j = ddc_find(s, (type << 16) | cid);
        if (j >= 0 && s->size[j] >= 8) {
            const int32_t *d = s->data + s->off[j];
            st[DDC_DDNET] = 1; st[DDC_FLAGS] = d[0]; st[DDC_FREEZE_END] = d[1]; st[DDC_JUMPS] = d[2];
            st[DDC_JUMPED_TOTAL] = d[5]; st[DDC_FREEZE_START] = d[7];
        }
        break;
    }
    /* the nearest other characters */
    int n = 0; int64_t dist[DDC_OTHERS]; int32_t *o = st + DDC_OTHERS_AT;
    int mx = st[DDC_X], my = st[DDC_Y];
    for (int k = 0; k < s->num_items; k++) {
        if ((s->key[k] >> 16) != OBJ_CHARACTER || k == me || s->size[k] < 5) continue;
        const int32_t *c = s->data + s->off[k];
        int64_t dx = c[1] - mx, dy = c[2] - my, d2 = dx * dx + dy * dy;
        int pos = n < DDC_OTHERS ? n : DDC_OTHERS;
        while (pos > 0 && dist[pos - 1] > d2) {
            if (pos < DDC_OTHERS) { dist[pos] = dist[pos - 1]; memcpy(o + 4 * pos, o + 4 * (pos - 1), 16); }
            pos--;
        }
        if (pos < DDC_OTHERS) { dist[pos] = d2; o[4 * pos] = c[1]; o[4 * pos + 1] = c[2]; o[4 * pos + 2] = c[3]; o[4 * pos + 3] = c[4]; }
        n++;
    }
    st[DDC_NUM_OTHERS] = n;
    for (int k = n; k < DDC_OTHERS; k++) memset(o + 4 * k, 0, 16);
}

static ddc_snap ddc_empty_snap; /* the base of a delta against "nothing" */

static const ddc_snap *ddc_base(const ddc_bot *b, int delta_tick) {
    if (delta_tick < 0) return &ddc_empty_snap;
    for (int k = 0; k < DDC_SNAP_KEEP; k++) if (b->snaps[k].tick == delta_tick) return &b->snaps[k];
    return NULL;
}

/* the next ring slot that is not `base` */
static ddc_snap *ddc_slot(ddc_bot *b, const ddc_snap *base) {
    if (&b->snaps[b->snap_next] == base) b->snap_next = (b->snap_next + 1) % DDC_SNAP_KEEP;
    ddc_snap *to = &b->snaps[b->snap_next];
    b->snap_next = (b->snap_next + 1) % DDC_SNAP_KEEP;
    return to;
}

/* publishes a decoded snapshot: the state row, under the lock the trainer's copy takes */
static void ddc_publish(ddc_env *e, int i, const ddc_snap *s) {
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    e->bots[i].ack_tick = s->tick;
    pthread_mutex_lock(&e->tick_lock);
    ddc_extract(e, i, s);
    st[DDC_TICK] = s->tick; st[DDC_SNAPS]++;
    if (st[DDC_PHASE] < 5) st[DDC_PHASE] = 5;
    if (!e->lockstep) pthread_cond_broadcast(&e->tick_cond); /* ddc_wait_tick; lockstep's wait counts datagrams */
    pthread_mutex_unlock(&e->tick_lock);
    /* ack it at once, with the current input. Not in lockstep: there the trainer's next input acks
     * it, and an earlier one for the same tick would be the one the server applies */
    if (!e->lockstep) ddc_send_input_locked(e, i);
}

/* a whole snapshot's delta bytes (tick, base tick, crc) → decoded, stored and published */
static void ddc_snapshot(ddc_env *e, int i, int tick, int delta_tick, int crc, const uint8_t *data, int size) {
    ddc_bot *b = &e->bots[i];
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    int64_t t0 = ddc_now_ns();
    const ddc_snap *base = ddc_base(b, delta_tick);
    if (!base) { st[DDC_SNAP_ERRORS]++; return; }
    int n = 0; const uint8_t *p = data, *end = data + size;
    while (p < end && n < DDC_MAX_INTS) { p = ddc_unpack_int(p, end, &e->ints[n]); if (!p) break; n++; }
    if (!p) { st[DDC_SNAP_ERRORS]++; return; }
    ddc_snap *to = ddc_slot(b, base);
    if (ddc_unpack_delta(base, to, e->ints, n) || ddc_crc(to) != crc) { to->tick = -1; st[DDC_SNAP_ERRORS]++; return; }
    to->tick = tick;
    int64_t dt = ddc_now_ns() - t0;
    e->decode_ns += dt; e->decode_count++; if (dt > e->decode_max_ns) e->decode_max_ns = dt;
    ddc_publish(e, i, to);
}

static void ddc_on_message(ddc_env *e, int i, const uint8_t *p, const uint8_t *end) {
    ddc_bot *b = &e->bots[i];
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    int msg;
    if (!(p = ddc_unpack_int(p, end, &msg))) return;
    int sys = msg & 1; msg >>= 1;
    uint8_t out[256], *q;
    if (sys && msg == SYS_MAP_CHANGE) { /* the map is read from the same file the server loads */
        ddc_forget_snapshots(e, i); /* a new map's ticks start at 0 again */
        pthread_mutex_lock(&e->tick_lock); st[DDC_MAP_CHANGES]++; pthread_mutex_unlock(&e->tick_lock);
        q = ddc_msg_id(out, SYS_READY, 1);
        ddc_send_vital(b, out, (int)(q - out)); ddc_set_phase(e, i, 2);
    } else if (sys && msg == SYS_CON_READY) {
        q = ddc_msg_id(out, GAME_CL_STARTINFO, 0);
        q = ddc_pack_str(q, b->name); q = ddc_pack_str(q, "puffgpu"); q = ddc_pack_int(q, -1);
        q = ddc_pack_str(q, "default"); q = ddc_pack_int(q, 0); q = ddc_pack_int(q, 0); q = ddc_pack_int(q, 0);
        ddc_send_vital(b, out, (int)(q - out)); ddc_set_phase(e, i, 3);
    } else if (!sys && msg == GAME_SV_KILLMSG) {  /* killer, victim, weapon, mode special */
        int killer, victim;
        if (!(p = ddc_unpack_int(p, end, &killer)) || !(p = ddc_unpack_int(p, end, &victim))) return;
        pthread_mutex_lock(&e->tick_lock);
        if (victim == st[DDC_CID] && victim >= 0) st[DDC_DEATHS]++;
        pthread_mutex_unlock(&e->tick_lock);
    } else if (!sys && msg == GAME_SV_READYTOENTER) {
        q = ddc_msg_id(out, SYS_ENTERGAME, 1);
        ddc_send_vital(b, out, (int)(q - out)); ddc_set_phase(e, i, 4);
    } else if (sys && (msg == SYS_SNAP || msg == SYS_SNAPSINGLE || msg == SYS_SNAPEMPTY)) {
        int tick, delta, num_parts = 1, part = 0, crc = 0, part_size = 0;
        if (!(p = ddc_unpack_int(p, end, &tick)) || !(p = ddc_unpack_int(p, end, &delta))) return;
        delta = tick - delta;
        if (msg == SYS_SNAP) {
            if (!(p = ddc_unpack_int(p, end, &num_parts)) || !(p = ddc_unpack_int(p, end, &part))) return;
        }
        if (msg != SYS_SNAPEMPTY) {
            if (!(p = ddc_unpack_int(p, end, &crc)) || !(p = ddc_unpack_int(p, end, &part_size))) return;
            if (part_size < 0 || part_size > end - p) return;
        }
        if (num_parts < 1 || num_parts > DDC_MAX_PARTS || part < 0 || part >= num_parts) return;
        if (tick <= b->ack_tick) return; /* old */
        if (msg == SYS_SNAPEMPTY) {
            /* the snapshot equals its base: stored again under the new tick */
            const ddc_snap *base = ddc_base(b, delta);
            if (!base) { st[DDC_SNAP_ERRORS]++; return; }
            ddc_snap *to = ddc_slot(b, base);
            memcpy(to, base, sizeof *to); to->tick = tick;
            ddc_publish(e, i, to);
            return;
        }
        if (num_parts == 1) { ddc_snapshot(e, i, tick, delta, crc, p, part_size); return; }
        if (b->parts_tick != tick) { b->parts_tick = tick; b->parts_got = 0; }
        if (part_size > 1024) return;
        memcpy(b->parts + part * 1024, p, part_size); b->part_size[part] = part_size;
        b->parts_got |= 1ull << part;
        if (b->parts_got == (num_parts == 64 ? ~0ull : (1ull << num_parts) - 1)) {
            int size = 0;
            for (int k = 0; k < num_parts; k++) { memmove(e->scratch + size, b->parts + k * 1024, b->part_size[k]); size += b->part_size[k]; }
            b->parts_tick = -1;
            ddc_snapshot(e, i, tick, delta, crc, e->scratch, size);
        }
    }
}

static void ddc_on_packet(ddc_env *e, int i, uint8_t *buf, int size) {
    ddc_bot *b = &e->bots[i];
    int32_t *st = e->state + (size_t)i * DDC_NFIELDS;
    if (size < 3) return;
    int flags = buf[0] >> 4, ack = ((buf[0] & 0x3) << 8) | buf[1], num_chunks = buf[2];
    if (flags & 2) return; /* connless */
    uint8_t *data = buf + 3; int n = size - 3;
    uint8_t *plain = e->scratch + 65536;
    if (flags & DDC_PF_COMPRESSION) {
        n = ddc_huffman_decompress(data, n, plain, DDC_MAX_PACKET * 4);
        if (n < 0) return;
        data = plain;
    }
    b->last_recv_ms = ddc_now_ms();
    st[DDC_RECV_TIME_MS] = (int32_t)(b->last_recv_ms & 0x7fffffff);
    if (flags & DDC_PF_CONTROL) {
        if (n < 1) return;
        if (data[0] == CTRL_CONNECTACCEPT && !b->connected) {
            if (n >= 9 && !memcmp(data + 1, "TKEN", 4)) memcpy(b->token, data + 5, 4);
            b->connected = 1;
            ddc_send_control(b, CTRL_ACCEPT, NULL, 0);
            /* DDNet's client version first (an extended message: id 0, then its UUID): the server then
             * shows us the real client ids (kill_pl needs ours) and every player, not 16 */
            uint8_t out[96], *q = ddc_msg_id(out, 0, 1);
            memcpy(q, e->clientver_uuid, 16); q += 16;
            for (int k = 0; k < 16; k++) *q++ = (uint8_t)rand(); /* connection id */
            q = ddc_pack_int(q, DDC_DDNET_VERSION); q = ddc_pack_str(q, DDC_DDNET_VERSION_STR);
            ddc_send_vital(b, out, (int)(q - out));
            q = ddc_msg_id(out, SYS_INFO, 1);
            q = ddc_pack_str(q, DDC_VERSION); q = ddc_pack_str(q, "");
            ddc_send_vital(b, out, (int)(q - out));
            ddc_set_phase(e, i, 1);
        } else if (data[0] == CTRL_CLOSE) {
            ddc_reset_connection(e, i); /* the server closed us (a restart, a kick): reconnect */
        }
        return;
    }
    if (!b->connected) return;
    if (n < 4 || memcmp(data + n - 4, b->token, 4)) return; /* not our server's packet */
    n -= 4;
    ddc_acked(b, ack);
    if (flags & DDC_PF_RESEND) ddc_resend_all(b);
    const uint8_t *p = data, *end = data + n;
    for (int c = 0; c < num_chunks && p + 2 <= end; c++) {
        int cflags = (p[0] >> 6) & 3, csize = ((p[0] & 0x3f) << 4) | (p[1] & 0xf), seq = -1;
        if (cflags & DDC_CF_VITAL) {
            if (p + 3 > end) return;
            seq = ((p[1] & 0xf0) << 2) | p[2]; p += 3;
        } else p += 2;
        if (csize > end - p) return;
        const uint8_t *chunk = p; p += csize;
        if (cflags & DDC_CF_VITAL) {
            if (seq == (b->ack + 1) % DDC_MAX_SEQ) b->ack = seq;
            else {
                int behind = (b->ack - seq + DDC_MAX_SEQ) % DDC_MAX_SEQ;
                if (behind >= DDC_MAX_SEQ / 2) b->request_resend = 1; /* ahead of us: a gap */
                continue; /* old, or out of order */
            }
        }
        ddc_on_message(e, i, chunk, chunk + csize);
    }
}

/* reads every datagram waiting for bot i (the network thread; counts into got_from) */
static int ddc_receive(ddc_env *e, int i, uint8_t *buf, int cap) {
    ddc_bot *b = &e->bots[i];
    int got_any = 0;
    pthread_mutex_lock(&b->lock);
    for (int k = 0; k < 64; k++) {
        ssize_t got = recv(b->fd, buf, cap, MSG_DONTWAIT);
        if (got < 0) break;
        ddc_on_packet(e, i, buf, (int)got);
        got_any++;
    }
    pthread_mutex_unlock(&b->lock);
    return got_any;
}

static void *ddc_thread(void *arg) {
    ddc_env *e = arg;
    struct pollfd *fds = calloc(e->num_bots + e->num_servers, sizeof *fds);
    uint64_t *got_from = calloc(e->num_servers, sizeof *got_from), any = 0;
    uint8_t buf[2048];
    int64_t last_timers = 0, last_sweep = 0;
    while (e->running && fds && got_from) {
        if (e->lockstep) {
            /* a server's datagrams come in a burst while it runs a grant, which ends with its `done`
             * signal: read its bots' sockets then, all at once, rather than be woken by each datagram;
             * whatever comes between grants (the join's answers) is swept up every 5 ms */
            int n = 0;
            for (int s = 0; s < e->num_servers; s++)
                if (e->blocks[s]) { fds[n].fd = e->done_fd[s]; fds[n].events = POLLIN; fds[n].revents = 0; n++; }
            int r = poll(fds, n, 5), signalled = 0;
            int64_t now = ddc_now_ms();
            int sweep = r <= 0 || now - last_sweep >= 5;
            for (int k = 0, s = 0; s < e->num_servers; s++) {
                if (!e->blocks[s]) continue;
                int ready = r > 0 && (fds[k++].revents & POLLIN);
                if (ready) { uint64_t v; if (read(e->done_fd[s], &v, sizeof v) < 0) { /* drained */ } }
                if (!ready && !sweep) continue;
                signalled |= ready;
                for (int i = 0; i < e->num_bots; i++)
                    if (e->bots[i].server_index == s) { int g = ddc_receive(e, i, buf, sizeof buf); got_from[s] += g; any += g; }
            }
            if (sweep) last_sweep = now;
            if (signalled && !any) {  /* its datagrams were swept up before: the wait is over all the same */
                pthread_mutex_lock(&e->tick_lock);
                pthread_cond_broadcast(&e->tick_cond);
                pthread_mutex_unlock(&e->tick_lock);
            }
        } else {
            for (int i = 0; i < e->num_bots; i++) { fds[i].fd = e->bots[i].fd; fds[i].events = POLLIN; fds[i].revents = 0; }
            int r = poll(fds, e->num_bots, 5);
            if (r > 0)
                for (int i = 0; i < e->num_bots; i++) {
                    if (!(fds[i].revents & POLLIN)) continue;
                    int g = ddc_receive(e, i, buf, sizeof buf);
                    got_from[e->bots[i].server_index] += g; any += g;
                }
        }
        if (any) {  /* counted once handled, for ddc_lockstep_wait */
            pthread_mutex_lock(&e->tick_lock);
            for (int s = 0; s < e->num_servers; s++) { atomic_fetch_add(&e->received[s], got_from[s]); got_from[s] = 0; }
            if (e->lockstep) pthread_cond_broadcast(&e->tick_cond);
            pthread_mutex_unlock(&e->tick_lock);
            any = 0;
        }
        int64_t now = ddc_now_ms();
        if (now - last_timers < 20) continue;
        last_timers = now;
        for (int i = 0; i < e->num_bots; i++) {
            ddc_bot *b = &e->bots[i];
            pthread_mutex_lock(&b->lock);
            if (b->lost) { b->lost = 0; ddc_reset_connection(e, i); }
            if (!b->connected) {
                if (now - b->connect_ms > 500) ddc_send_connect(e, i);
            } else {
                if (b->num_resend && now - b->resend[0].last_send_ms > 1000) ddc_resend_all(b);
                /* server gone: start over (in lockstep a server is silent while the trainer does not
                 * step; the trainer tells a hung one by its grants) */
                if (!e->lockstep && now - b->last_recv_ms > 10000) ddc_reset_connection(e, i);
                else if (now - b->last_send_ms > 500) ddc_send_control(b, CTRL_KEEPALIVE, NULL, 0);
            }
            pthread_mutex_unlock(&b->lock);
        }
    }
    free(fds); free(got_from);
    return NULL;
}

/* ---- the API ---- */

/* bots[i] connects to 127.0.0.1:ports[server_of[i]]; freq: the protocol's 256 Huffman frequencies */
static ddc_env *ddc_create(int num_bots, const int *server_of, const int *ports, const unsigned *freq,
                           const int32_t *ddnet_char_uuid, const uint8_t *clientver_uuid, const char *name_prefix,
                           const char *rcon_password) {
    if (ddc_hroot < 0) ddc_huffman_init(freq);
    ddc_env *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->num_bots = num_bots;
    e->bots = calloc(num_bots, sizeof *e->bots);
    e->state = calloc((size_t)num_bots * DDC_NFIELDS, sizeof(int32_t));
    e->input = calloc((size_t)num_bots * DDC_INPUT_SIZE, sizeof(int32_t));
    e->scratch = malloc(65536 * 2);
    e->ints = malloc(sizeof(int32_t) * DDC_MAX_INTS);
    for (int i = 0; i < num_bots; i++) if (server_of[i] >= e->num_servers) e->num_servers = server_of[i] + 1;
    e->sent = calloc(e->num_servers + 1, sizeof *e->sent);
    e->received = calloc(e->num_servers + 1, sizeof *e->received);
    e->blocks = calloc(e->num_servers + 1, sizeof *e->blocks);
    e->wake_fd = calloc(e->num_servers + 1, sizeof *e->wake_fd);
    e->done_fd = calloc(e->num_servers + 1, sizeof *e->done_fd);
    e->seen = calloc(e->num_servers + 1, sizeof *e->seen);
    e->progress_ms = calloc(e->num_servers + 1, sizeof *e->progress_ms);
    e->server_tick = malloc(sizeof(int32_t) * (e->num_servers + 1));
    e->bot_tick = malloc(sizeof(int32_t) * (num_bots + 1));
    for (int s = 0; e->server_tick && s < e->num_servers; s++) e->server_tick[s] = -1;
    for (int i = 0; e->bot_tick && i < num_bots; i++) e->bot_tick[i] = -1;
    if (!e->bots || !e->state || !e->input || !e->scratch || !e->ints || !e->sent || !e->received || !e->blocks ||
        !e->wake_fd || !e->done_fd || !e->seen || !e->progress_ms || !e->server_tick || !e->bot_tick) {
        num_bots = 0; e->num_bots = 0;
    }
    memcpy(e->ddnet_char_uuid, ddnet_char_uuid, 16);
    memcpy(e->clientver_uuid, clientver_uuid, 16);
    snprintf(e->rcon_password, sizeof e->rcon_password, "%s", rcon_password);
    pthread_mutex_init(&e->tick_lock, NULL);
    pthread_condattr_t ca;  /* timed waits on the monotonic clock: a wall-clock step cannot stretch them */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->tick_cond, &ca);
    pthread_condattr_destroy(&ca);
    for (int i = 0; i < num_bots; i++) {
        ddc_bot *b = &e->bots[i];
        b->fd = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in me = {0};
        me.sin_family = AF_INET; me.sin_addr.s_addr = htonl(INADDR_LOOPBACK); me.sin_port = 0;
        if (b->fd < 0 || bind(b->fd, (struct sockaddr *)&me, sizeof me) < 0) {
            if (b->fd >= 0) close(b->fd);
            e->num_bots = i; return e;  /* the caller sees fewer bots than asked and destroys it */
        }
        b->server.sin_family = AF_INET; b->server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        b->server.sin_port = htons((uint16_t)ports[server_of[i]]);
        b->server_index = server_of[i];
        b->sent = &e->sent[server_of[i]];
        pthread_mutex_init(&b->lock, NULL);
        b->snaps = malloc(sizeof(ddc_snap) * DDC_SNAP_KEEP);
        b->parts = malloc(DDC_MAX_PARTS * 1024);
        if (!b->snaps || !b->parts) { close(b->fd); free(b->snaps); free(b->parts); e->num_bots = i; return e; }
        snprintf(b->name, sizeof b->name, "%s%d", name_prefix, i);
        ddc_reset_connection(e, i);
        e->input[(size_t)i * DDC_INPUT_SIZE + 6] = 1; /* PlayerFlags: playing */
    }
    e->running = 1;  /* before the thread starts: it loops while this is set */
    if (pthread_create(&e->thread, NULL, ddc_thread, e) != 0) { e->running = 0; e->num_bots = 0; }
    return e;
}

static int ddc_num_bots(ddc_env *e) { return e->num_bots; }

/* a consistent copy of every bot's state row (the network thread writes them under this lock) */
static void ddc_copy_state(ddc_env *e, int32_t *out) {
    pthread_mutex_lock(&e->tick_lock);
    memcpy(out, e->state, sizeof(int32_t) * (size_t)e->num_bots * DDC_NFIELDS);
    pthread_mutex_unlock(&e->tick_lock);
}
static int32_t *ddc_state(ddc_env *e) { return e->state; }
static int32_t *ddc_input(ddc_env *e) { return e->input; }

/* sends every bot's current input now (the trainer's decision), instead of at the next snapshot */
static void ddc_send_inputs(ddc_env *e, int lo, int hi) {
    for (int i = lo; i < hi && i < e->num_bots; i++) {
        pthread_mutex_lock(&e->bots[i].lock);
        ddc_send_input_locked(e, i);
        pthread_mutex_unlock(&e->bots[i].lock);
    }
}

/* one line to the server's remote console over bot i's connection (logged in with the password
 * first); vital, so it arrives in order. 0, or -1 when the bot is not in the game. */
static int ddc_rcon(ddc_env *e, int i, const char *line) {
    ddc_bot *b = &e->bots[i];
    uint8_t out[256], *q;
    if (strlen(line) > 200) return -1;
    pthread_mutex_lock(&b->lock);
    int ok = e->state[(size_t)i * DDC_NFIELDS + DDC_PHASE] >= 4;
    if (ok && !b->rcon_authed) {
        q = ddc_msg_id(out, SYS_RCON_AUTH, 1);
        q = ddc_pack_str(q, ""); q = ddc_pack_str(q, e->rcon_password); q = ddc_pack_int(q, 0); /* no command list */
        ddc_send_vital(b, out, (int)(q - out));
        b->rcon_authed = 1;
    }
    if (ok) {
        q = ddc_msg_id(out, SYS_RCON_CMD, 1); q = ddc_pack_str(q, line);
        ddc_send_vital(b, out, (int)(q - out));
    }
    pthread_mutex_unlock(&b->lock);
    return ok ? 0 : -1;
}

/* drops bot i's connection and connects again (a restarted server: its port is the same) */
static void ddc_reconnect(ddc_env *e, int i) {
    pthread_mutex_lock(&e->bots[i].lock);
    if (e->bots[i].connected) ddc_send_control(&e->bots[i], CTRL_CLOSE, NULL, 0);
    ddc_reset_connection(e, i);
    pthread_mutex_unlock(&e->bots[i].lock);
}

/* waits until every bot in [lo, hi) whose want[i] >= 0 has a snapshot with tick >= want[i], or
 * timeout_ms passes; returns how many are still behind */
static int ddc_wait_tick(ddc_env *e, int lo, int hi, const int32_t *want, int timeout_ms) {
    struct timespec until; clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t ns = until.tv_nsec + (int64_t)timeout_ms * 1000000;
    until.tv_sec += ns / 1000000000; until.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&e->tick_lock);
    int behind;
    for (;;) {
        behind = 0;
        for (int i = lo; i < hi; i++)
            if (want[i] >= 0 && e->state[(size_t)i * DDC_NFIELDS + DDC_TICK] < want[i]) behind++;
        if (!behind || pthread_cond_timedwait(&e->tick_cond, &e->tick_lock, &until) == ETIMEDOUT) break;
    }
    if (behind) { /* count again after the timeout */
        behind = 0;
        for (int i = lo; i < hi; i++)
            if (want[i] >= 0 && e->state[(size_t)i * DDC_NFIELDS + DDC_TICK] < want[i]) behind++;
    }
    pthread_mutex_unlock(&e->tick_lock);
    return behind;
}

/* ---- lockstep (lockstep.h, lockstep.c): the trainer grants each server its ticks ---- */

/* server s runs in lockstep from now on: its shared block and its two eventfds (we write `wake`,
 * the server writes `done`). Also after a restart of the server (its counts start at 0 again). */
static void ddc_lockstep_attach(ddc_env *e, int s, void *block, int wake, int done) {
    if (s < 0 || s >= e->num_servers) return;
    pthread_mutex_lock(&e->tick_lock);
    e->blocks[s] = block; e->wake_fd[s] = wake; e->done_fd[s] = done;
    atomic_store(&e->sent[s], 0); atomic_store(&e->received[s], 0);
    e->server_tick[s] = -1;
    e->lockstep = 1;
    pthread_mutex_unlock(&e->tick_lock);
}

/* Whether every bot of server s that had the server's newest snapshot when the last wait ended has
 * it again (under tick_lock). Such a bot acked it with its next input, so the server sends it one
 * every grant; a snapshot still missing is late, whatever the counts say (a datagram forgiven as
 * lost that came after all leaves the count ahead). remember: note the ticks for the next wait. */
static int ddc_current(ddc_env *e, int s, int remember) {
    int32_t newest = -1;
    for (int i = 0; i < e->num_bots; i++)
        if (e->bots[i].server_index == s && e->state[(size_t)i * DDC_NFIELDS + DDC_PHASE] == 5 &&
            e->state[(size_t)i * DDC_NFIELDS + DDC_TICK] > newest)
            newest = e->state[(size_t)i * DDC_NFIELDS + DDC_TICK];
    if (!remember && newest < e->server_tick[s]) return 1; /* its ticks started over (a map change) */
    for (int i = 0; i < e->num_bots; i++) {
        if (e->bots[i].server_index != s) continue;
        int32_t tick = e->state[(size_t)i * DDC_NFIELDS + DDC_TICK];
        if (remember) e->bot_tick[i] = tick;
        else if (e->server_tick[s] >= 0 && e->bot_tick[i] == e->server_tick[s] && tick < newest &&
                 e->state[(size_t)i * DDC_NFIELDS + DDC_PHASE] == 5) return 0;
    }
    if (remember) e->server_tick[s] = newest;
    return 1;
}

/* whether a datagram waits in the socket of one of server s's bots */
static int ddc_pending(ddc_env *e, int s) {
    for (int i = 0; i < e->num_bots; i++) {
        if (e->bots[i].server_index != s) continue;
        struct pollfd f = {e->bots[i].fd, POLLIN, 0};
        if (poll(&f, 1, 0) > 0) return 1;
    }
    return 0;
}

/* lets server s run until its clock reads grant_ns, once it has every datagram our bots sent it so far */
static void ddc_lockstep_grant(ddc_env *e, int s, int64_t grant_ns) {
    lockstep_block *blk = e->blocks[s];
    if (!blk) return;
    atomic_store(&blk->need_rx, atomic_load(&e->sent[s]));
    atomic_store(&blk->grant_ns, grant_ns);  /* after need_rx: the server reads them in the other order */
    uint64_t one = 1;
    if (write(e->wake_fd[s], &one, sizeof one) < 0) { /* a full counter is a wake too */ }
}

/* waits until every attached server has run its grant and our bots have handled every datagram it
 * sent until then (its snapshots of the granted tick), or timeout_ms passes; done[s] = 1 for the
 * servers that made it. Returns how many did not. The network thread reads a server's datagrams
 * when it signals `done` and wakes this wait. */
static int ddc_lockstep_wait(ddc_env *e, int timeout_ms, int32_t *done) {
    int64_t deadline = ddc_now_ms() + timeout_ms;
    for (int s = 0; s < e->num_servers; s++) done[s] = e->blocks[s] == NULL;
    /* A datagram that has not come in DDC_LOST_MS of this wait looking (every 50 ms at most: time it
     * did not look, the process stopped or starved, does not count) after the server got there or the
     * last came, with none waiting in its server's bots' sockets, was lost (a full receive buffer):
     * the wait counts in e->lost and goes on. A late one that comes after all cannot fool the bots
     * held to their own snapshots (ddc_current). */
    int late;
    pthread_mutex_lock(&e->tick_lock);
    for (;;) {
        late = 0;
        int64_t now = ddc_now_ms();
        for (int s = 0; s < e->num_servers; s++) {
            lockstep_block *blk = e->blocks[s];
            if (!blk) continue;
            int reached = atomic_load(&blk->reached_ns) >= atomic_load(&blk->grant_ns);
            uint64_t got = atomic_load(&e->received[s]), want = atomic_load(&blk->reached_tx);
            if (got != e->seen[s] || !reached || now - e->looked_ms > 200) { e->seen[s] = got; e->progress_ms[s] = now; }
            if (reached && got < want && now - e->progress_ms[s] > DDC_LOST_MS && !ddc_pending(e, s)) {
                atomic_store(&e->received[s], want); e->lost++; got = want;
            }
            done[s] = reached && got >= want && ddc_current(e, s, 0);
            late += !done[s];
        }
        e->looked_ms = now;
        if (!late || now >= deadline) break;
        struct timespec until; clock_gettime(CLOCK_MONOTONIC, &until);
        int64_t step = deadline - now < 50 ? deadline - now : 50;
        int64_t ns = until.tv_nsec + step * 1000000;
        until.tv_sec += ns / 1000000000; until.tv_nsec = ns % 1000000000;
        pthread_cond_timedwait(&e->tick_cond, &e->tick_lock, &until);
    }
    for (int s = 0; s < e->num_servers; s++)
        if (e->blocks[s] && done[s]) ddc_current(e, s, 1);
    pthread_mutex_unlock(&e->tick_lock);
    return late;
}

/* waits of ddc_lockstep_wait that went on without datagrams a server counted as sent (lost) */
static int64_t ddc_lockstep_lost(ddc_env *e) { return (int64_t)e->lost; }

/* mean and max snapshot decode time (ns) since the last call, and how many */
static void ddc_decode_stats(ddc_env *e, int64_t *out) {
    pthread_mutex_lock(&e->tick_lock);
    out[0] = e->decode_count ? e->decode_ns / e->decode_count : 0; out[1] = e->decode_max_ns; out[2] = e->decode_count;
    e->decode_ns = e->decode_count = e->decode_max_ns = 0;
    pthread_mutex_unlock(&e->tick_lock);
}

static void ddc_destroy(ddc_env *e) {
    if (!e) return;
    if (e->running) { e->running = 0; pthread_join(e->thread, NULL); }
    for (int i = 0; i < e->num_bots; i++) {
        ddc_bot *b = &e->bots[i];
        if (b->connected) ddc_send_control(b, CTRL_CLOSE, NULL, 0);
        close(b->fd); free(b->snaps); free(b->parts);
    }
    free(e->bots); free(e->state); free(e->input); free(e->scratch); free(e->ints);
    free((void *)e->sent); free((void *)e->received); free(e->blocks); free(e->wake_fd); free(e->done_fd);
    free(e->seen); free(e->progress_ms); free(e->server_tick); free(e->bot_tick); free(e);
}

/* test hooks: the pieces the protocol tests check against a reference */
static int ddc_test_huffman(const unsigned *freq, const uint8_t *in, int n, uint8_t *out, int cap) {
    if (ddc_hroot < 0) ddc_huffman_init(freq);
    return ddc_huffman_decompress(in, n, out, cap);
}
static int ddc_test_unpack_ints(const uint8_t *in, int n, int32_t *out, int cap) {
    const uint8_t *p = in, *end = in + n; int k = 0;
    while (p < end && k < cap) { p = ddc_unpack_int(p, end, &out[k]); if (!p) return -1; k++; }
    return k;
}

#endif
