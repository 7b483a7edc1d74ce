"""The trainer's end of lockstep (lockstep.c): one channel per server slot, kept across restarts.

    ch = LockstepChannel()
    ch.reset()                                  # before each (re)start of the server: time 0, counts 0
    Popen(..., env={**os.environ, **ch.environment(port, library)}, pass_fds=ch.pass_fds)
    client.ddc_lockstep_attach(s, ch.address, ch.wake_fd, ch.done_fd)
    ch.stats()                                  # {'passes': ..., 'game_seconds': ...}
    grant_time(ticks, grants)                   # the clock reading a grant sets
    ch.close()

The block is a memfd (no name in /dev/shm, so nothing is left behind however the trainer ends); the
two eventfds wake the server (the trainer writes) and the trainer (the server writes). The server
inherits all three by number. Linux only, like LD_PRELOAD itself.
"""
from __future__ import annotations

import mmap
import os
import struct
import sys

MAGIC = 0x4B434F4C          # lockstep.h LOCKSTEP_MAGIC
TICK_NS = 20_000_000        # lockstep.h LOCKSTEP_TICK_NS: DDNet's 50 ticks a second
BLOCK_SIZE = 4096
# lockstep_block's fields after magic and pid (lockstep.h), each 8 bytes, from offset 8
FIELDS = ("grant_ns", "need_rx", "now_ns", "rx", "tx", "reached_ns", "reached_tx", "passes")


def supported() -> str | None:
    """None where lockstep can run, else why not."""
    if not sys.platform.startswith("linux"):
        return f"lockstep needs Linux (LD_PRELOAD, memfd, eventfd), not {sys.platform}"
    if not hasattr(os, "memfd_create") or not hasattr(os, "eventfd"):
        return "lockstep needs os.memfd_create and os.eventfd (Python >= 3.10 on Linux)"
    return None


def grant_time(ticks: int, grants: int) -> int:
    """The clock reading that lets a server run exactly `ticks` ticks since it started, at its
    `grants`-th grant. Tick N runs once the clock is past the game's start + N x 20 ms (strictly),
    so half a tick more; and one nanosecond more per grant: a map change or reload restarts the
    game's clock at the reading of the moment (a grant's), and the next grant must be past it by
    more than its whole ticks, or it would run one tick too few and every later snapshot would fall
    a tick off the grid (DDNet sends a joining client a snapshot only on ticks that are multiples
    of 10)."""
    return ticks * TICK_NS + TICK_NS // 2 + min(grants, TICK_NS // 2 - 1)


class LockstepChannel:
    def __init__(self):
        self.memfd = os.memfd_create("puffgpu-ddnet-lockstep", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.memfd, BLOCK_SIZE)
            self.block = mmap.mmap(self.memfd, BLOCK_SIZE)
            self.wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.done_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        except BaseException:
            os.close(self.memfd)
            raise
        self.reset()

    @property
    def pass_fds(self) -> tuple:
        return self.memfd, self.wake_fd, self.done_fd

    def environment(self, port: int, library) -> dict:
        return {"LD_PRELOAD": str(library), "PUFFGPU_LOCKSTEP": f"{self.memfd},{self.wake_fd},{self.done_fd},{port}"}

    def reset(self):
        """A fresh block for a fresh server process (its clock and counts start at 0)."""
        self.block[:] = bytes(BLOCK_SIZE)
        self.block[0:4] = struct.pack("<I", MAGIC)
        for fd in (self.wake_fd, self.done_fd):
            try:
                os.eventfd_read(fd)
            except BlockingIOError:
                pass

    def field(self, name: str) -> int:
        return struct.unpack_from("<q", self.block, 8 + 8 * FIELDS.index(name))[0]

    def stats(self) -> dict:
        return {"passes": self.field("passes"), "game_seconds": self.field("now_ns") / 1e9}

    def close(self):
        for fd in (self.wake_fd, self.done_fd, self.memfd):
            try:
                os.close(fd)
            except OSError:
                pass
        # the mapping goes with the object (the client may still hold its address until it is destroyed)
