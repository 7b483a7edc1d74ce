"""The shared-memory env protocol, Python side (docs/protocol.md; C side: puffer_server.h).

    from envs.shm import protocol
    block = protocol.Block.attach("/puf-123-0")   # map a server's block, check its header
    block.observations                             # numpy views of its arrays
    lib = protocol.native()                        # the cffi module of puffer_server.h's client half

One block per server process: a 4096-byte header, then [actions | observations | rewards |
terminals | truncations | masks | log], each on a 64-byte boundary. The server creates and sizes the
block (it alone knows its observation size and heads); the trainer maps it and unlinks the name at
once, so no name outlives the pair whatever kills them later. POSIX shared memory (Linux, macOS);
Windows is refused with a clear error.

native() is the cffi module of puffer_server.h's client half, built through envs/build/ like
every other piece of C.
"""
from __future__ import annotations

import mmap
import os
import sys
from pathlib import Path

import numpy as np
import psutil

from ..build import load_cffi

SHM_DIR = Path(__file__).resolve().parent  # puffer_server.h: the protocol in C

MAGIC = b"PUFSHMEM"
VERSION = 1
HEADER_SIZE = 4096
ALIGN = 64
MAX_HEADS = 16
MAX_LOG = 32
NAME_LEN = 32
MESSAGE_LEN = 256
PATH_LEN = 1024

CMD_NONE, CMD_STEP, CMD_RESET, CMD_SAVE, CMD_LOAD, CMD_QUIT = range(6)
OK, UNSUPPORTED, FAILED = 0, -1, -2
FLAG_READY, FLAG_FAILED, FLAG_CLOSED = 1, 2, 4

# protocol dtype code <-> numpy dtype
DTYPES = {1: np.dtype(np.float32), 2: np.dtype(np.uint8), 3: np.dtype(np.int8), 4: np.dtype(np.int16),
          5: np.dtype(np.uint16), 6: np.dtype(np.int32), 7: np.dtype(np.uint32), 8: np.dtype(np.float64)}
DTYPE_CODES = {v: k for k, v in DTYPES.items()}

# The header, little-endian, as puffer_server.h's PufShmHeader (offsets asserted there).
HEADER = np.dtype({
    "names": ["magic", "version", "header_size", "block_size", "num_agents", "obs_size", "obs_dtype",
              "num_heads", "act_sizes", "mask_size", "picture", "num_log", "server_pid",
              "off_actions", "off_observations", "off_rewards", "off_terminals", "off_truncations",
              "off_masks", "off_log", "flags", "frameskip",
              "request_seq", "command", "arg", "server_waiting", "trainer_pid",
              "reply_seq", "status", "trainer_waiting", "steps", "message", "log_names", "path"],
    "formats": ["S8", "<u4", "<u4", "<u8", "<u4", "<u4", "<u4", "<u4", ("<u4", 16), "<u4", ("<u4", 3),
                "<u4", "<i4", "<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "<u8", "<u4", "<u4",
                "<u4", "<u4", "<u8", "<u4", "<u4",
                "<u4", "<i4", "<u4", "<u4", f"S{MESSAGE_LEN}", (f"S{NAME_LEN}", MAX_LOG), f"S{PATH_LEN}"],
    "offsets": [0, 8, 12, 16, 24, 28, 32, 36, 40, 104, 108, 120, 124, 128, 136, 144, 152, 160, 168, 176,
                184, 188, 192, 196, 200, 208, 212, 256, 260, 264, 268, 320, 576, 1600],
    "itemsize": HEADER_SIZE})
# 4-byte words a side publishes or sleeps on (index = byte offset / 4)
WORD_REQUEST_SEQ, WORD_REPLY_SEQ, WORD_FLAGS = 192 // 4, 256 // 4, 184 // 4


class ProtocolError(RuntimeError):
    """A block that does not speak this protocol, or disagrees with what the trainer expects."""


def supported():
    """None where shared-memory servers run (Linux, macOS), else the reason why not."""
    if sys.platform == "win32":
        return ("shared-memory env servers are not supported on Windows yet (they need named file "
                "mappings and events); run the env in-process, or use Linux or macOS")
    return None


def check_supported():
    why = supported()
    if why:
        raise NotImplementedError(why)


def _align(x):
    return (x + ALIGN - 1) // ALIGN * ALIGN


def layout(num_agents, obs_size, dtype, num_heads, mask_size, num_log):
    """{array: offset} and the block size, as puf_shm_layout() computes them."""
    n, at, off = num_agents, HEADER_SIZE, {}
    for name, nbytes in (("actions", n * num_heads * 4), ("observations", n * obs_size * np.dtype(dtype).itemsize),
                         ("rewards", n * 4), ("terminals", n * 4), ("truncations", n * 4),
                         ("masks", n * mask_size), ("log", num_log * 4)):
        off[name] = at
        at = _align(at + nbytes)
    return off, at


# ---- POSIX shared memory: shm_open through CPython's _posixshmem (what multiprocessing uses,
# without its resource tracker, which would unlink blocks it does not own) ----

def _posixshmem():
    check_supported()
    import _posixshmem
    return _posixshmem


def shm_exists(name):
    try:
        fd = _posixshmem().shm_open(name, os.O_RDONLY, 0)
    except FileNotFoundError:
        return False
    os.close(fd)
    return True


def shm_unlink(name):
    """Removes a block's name (mappings stay valid); a name already gone is fine."""
    try:
        _posixshmem().shm_unlink(name)
        return True
    except FileNotFoundError:
        return False


def pid_alive(pid):
    """Whether process `pid` runs: a pid from a header (server_pid, trainer_pid), whose process
    need not be ours, so only the OS can say (psutil asks it the same way on every OS). 0 or less
    (not declared) counts as alive; a zombie (exited, not yet reaped by its parent: a server started
    by a script that has not waited for it) does not."""
    if pid <= 0:
        return True
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # ZombieProcess, where an OS reports a zombie that way, included
        return False
    except psutil.AccessDenied:  # it exists; another user's
        return True


def block_server_pid(name):
    """The server_pid in the header of the block named `name`; None if there is no such block or
    its header is not that far yet."""
    try:
        fd = _posixshmem().shm_open(name, os.O_RDONLY, 0)
    except FileNotFoundError:
        return None
    try:
        raw = os.pread(fd, 4, HEADER.fields["server_pid"][1])
    finally:
        os.close(fd)
    return int.from_bytes(raw, "little", signed=True) if len(raw) == 4 else None


def stale(name):
    """Whether `name` holds the block of a server that no longer runs (its header's server_pid is
    gone), as puffer_server.h's puf_shm_stale: a server started again on the name may take it over."""
    pid = block_server_pid(name)
    return pid is not None and not pid_alive(pid)


def _map(name, create_size=None):
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create_size else 0)
    try:
        fd = _posixshmem().shm_open(name, flags, 0o600)
    except FileExistsError:
        if not stale(name):
            raise
        shm_unlink(name)  # a dead server's block: take the name over
        fd = _posixshmem().shm_open(name, flags, 0o600)
    try:
        if create_size:
            os.ftruncate(fd, create_size)
        size = os.fstat(fd).st_size
        return mmap.mmap(fd, size), size
    finally:
        os.close(fd)


class Block:
    """One server's mapped block: the header as a numpy record (`h`), the arrays as numpy views."""

    def __init__(self, name, mm, size):
        self.name, self._mm, self.size = name, mm, size
        self._buf = np.frombuffer(mm, dtype=np.uint8)
        self.h = self._buf[:HEADER_SIZE].view(HEADER)[0] if size >= HEADER_SIZE else None
        self.words = self._buf[:HEADER_SIZE].view("<u4")  # the header as 32-bit words

    # -- creating (a Python server) and attaching (the trainer) --
    @classmethod
    def create(cls, name, num_agents, obs_size, act_sizes, obs_dtype=np.float32, masks=False,
               picture=None, log_names=(), frameskip=1):
        """Creates, sizes and fills a new block (what puf_server_open does in C); not yet ready:
        the caller sets FLAG_READY once its arrays hold what they should."""
        act_sizes = [int(a) for a in act_sizes]
        dtype = np.dtype(obs_dtype)
        if dtype not in DTYPE_CODES:
            raise ValueError(f"obs_dtype {dtype} is not one of the protocol's: {', '.join(map(str, DTYPE_CODES))}")
        if not 1 <= len(act_sizes) <= MAX_HEADS or min(act_sizes) < 1:
            raise ValueError(f"act_sizes {act_sizes}: 1..{MAX_HEADS} heads of size >= 1")
        if len(log_names) > MAX_LOG or any(len(n.encode()) >= NAME_LEN for n in log_names):
            raise ValueError(f"log_names: at most {MAX_LOG} names of at most {NAME_LEN - 1} bytes")
        mask_size = sum(act_sizes) if masks else 0
        off, size = layout(num_agents, obs_size, dtype, len(act_sizes), mask_size, len(log_names))
        mm, size = _map(name, size)
        b = cls(name, mm, size)
        h = b.h
        h["magic"], h["version"], h["header_size"], h["block_size"] = MAGIC, VERSION, HEADER_SIZE, size
        h["num_agents"], h["obs_size"], h["obs_dtype"] = num_agents, obs_size, DTYPE_CODES[dtype]
        h["num_heads"], h["mask_size"], h["num_log"] = len(act_sizes), mask_size, len(log_names)
        h["act_sizes"][:len(act_sizes)] = act_sizes
        h["picture"][:] = picture or (0, 0, 0)
        for k, v in off.items():
            h["off_" + k] = v
        for i, n in enumerate(log_names):
            h["log_names"][i] = n.encode()
        h["server_pid"], h["frameskip"] = os.getpid(), frameskip
        b._views()
        if mask_size:
            b.masks[:] = 1
        return b

    @classmethod
    def attach_ready(cls, name, who=None):
        """attach() once the server has marked its block ready; None while it is not (not there
        yet, not sized yet, or its header not yet complete)."""
        try:
            mm, size = _map(name)
        except (FileNotFoundError, ValueError):  # ValueError: mmap of a block not yet sized
            return None
        b = cls(name, mm, size)
        ready = 0
        if size >= HEADER_SIZE:  # an acquire load (C's), so the header it guards reads complete
            ffi, lib = native().ffi, native().lib
            ready = lib.puf_py_load(ffi.cast("uint32_t*", ffi.from_buffer(b._buf)) + WORD_FLAGS) & FLAG_READY
        if not ready:
            b.close()
            return None
        try:
            b.check(None, who or name)
        except Exception:
            b.close()
            raise
        b._views()
        return b

    @classmethod
    def attach(cls, name, expect=None, who=None):
        """Maps an existing block and checks its header (magic, version, sizes, offsets); `expect`
        {field: value} are further checks (obs_size, obs_dtype, act_sizes, ...), a mismatch
        naming both sides' values. `who` names the server in errors."""
        mm, size = _map(name)
        b = cls(name, mm, size)
        try:
            if size < HEADER_SIZE:
                raise ProtocolError(f"shared-memory block {name} has {size} bytes, less than a header ({HEADER_SIZE})")
            b.check(expect, who or name)
        except Exception:
            b.close()
            raise
        b._views()
        return b

    def check(self, expect=None, who=""):
        h = self.h
        where = f"shared-memory block {self.name}" + (f" of {who}" if who and who != self.name else "")
        if self.size < HEADER_SIZE or bytes(h["magic"]) != MAGIC:
            raise ProtocolError(f"{where} is not a puffgpu env block: magic {bytes(h['magic'])!r}, expected {MAGIC!r}")
        if int(h["version"]) != VERSION:
            raise ProtocolError(f"{where}: the server speaks protocol version {int(h['version'])}, this trainer "
                                f"version {VERSION}")
        if int(h["header_size"]) != HEADER_SIZE:
            raise ProtocolError(f"{where}: header size {int(h['header_size'])} bytes, this trainer expects {HEADER_SIZE}")
        if int(h["obs_dtype"]) not in DTYPES:
            raise ProtocolError(f"{where}: observation dtype code {int(h['obs_dtype'])} is unknown; known: "
                                + ", ".join(f"{k} = {v}" for k, v in DTYPES.items()))
        k = int(h["num_heads"])
        if not 1 <= k <= MAX_HEADS or min(h["act_sizes"][:k]) < 1:
            raise ProtocolError(f"{where}: {k} action heads of sizes {list(h['act_sizes'][:k])}; need 1..{MAX_HEADS} "
                                f"heads of size >= 1")
        mask = int(h["mask_size"])
        if mask not in (0, int(h["act_sizes"][:k].sum())):
            raise ProtocolError(f"{where}: mask size {mask}, but the heads {list(h['act_sizes'][:k])} need "
                                f"{int(h['act_sizes'][:k].sum())} (or 0: no masks)")
        if int(h["num_log"]) > MAX_LOG:
            raise ProtocolError(f"{where}: {int(h['num_log'])} log fields, at most {MAX_LOG}")
        off, size = layout(int(h["num_agents"]), int(h["obs_size"]), DTYPES[int(h["obs_dtype"])], k, mask,
                           int(h["num_log"]))
        got = {n: int(h["off_" + n]) for n in off}
        if got != off or int(h["block_size"]) != size or self.size < size:
            # name the first field that disagrees, with both values, and what the header's sizes imply
            sizes = (f"num_agents {int(h['num_agents'])}, obs_size {int(h['obs_size'])} "
                     f"({DTYPES[int(h['obs_dtype'])]}), {k} heads, mask_size {mask}, num_log {int(h['num_log'])}")
            wrong = [f"off_{n} = {got[n]}, but the sizes put {n} at {off[n]}" for n in off if got[n] != off[n]]
            if int(h["block_size"]) != size:
                wrong.append(f"block_size = {int(h['block_size'])}, but the sizes need {size}")
            if self.size < size:
                wrong.append(f"the block maps {self.size} bytes, fewer than the {size} its sizes need")
            raise ProtocolError(f"{where}: {wrong[0]} (header sizes: {sizes}; each array starts on a "
                                f"{ALIGN}-byte boundary after the {HEADER_SIZE}-byte header)"
                                + (f"; also {'; '.join(wrong[1:])}" if len(wrong) > 1 else ""))
        for key, want in (expect or {}).items():
            have = self.spec()[key]
            if have != want:
                raise ProtocolError(f"{where}: the server has {key} = {have!r}, the trainer expects {want!r}")

    def spec(self):
        """What the server declared, as plain Python values."""
        h = self.h
        k = int(h["num_heads"])
        pic = tuple(int(x) for x in h["picture"])
        return {"version": int(h["version"]), "num_agents": int(h["num_agents"]), "obs_size": int(h["obs_size"]),
                "obs_dtype": str(DTYPES[int(h["obs_dtype"])]), "act_sizes": tuple(int(a) for a in h["act_sizes"][:k]),
                "masks": int(h["mask_size"]) > 0, "picture": pic if pic[0] else None,
                "log_names": self.log_names(), "frameskip": int(h["frameskip"])}

    def log_names(self):
        return [bytes(n).decode("utf-8", "replace") for n in self.h["log_names"][:int(self.h["num_log"])]]

    def _views(self):
        h, buf = self.h, self._buf
        n, k, d = int(h["num_agents"]), int(h["num_heads"]), int(h["obs_size"])
        dtype = DTYPES[int(h["obs_dtype"])]

        def view(field, dt, count, shape):
            o = int(h["off_" + field])
            return buf[o:o + count * np.dtype(dt).itemsize].view(dt).reshape(shape)
        self.actions = view("actions", np.float32, n * k, (n, k))
        self.observations = view("observations", dtype, n * d, (n, d))
        self.rewards = view("rewards", np.float32, n, (n,))
        self.terminals = view("terminals", np.float32, n, (n,))
        self.truncations = view("truncations", np.float32, n, (n,))
        m = int(h["mask_size"])
        self.masks = view("masks", np.uint8, n * m, (n, m)) if m else None
        self.log = view("log", np.float32, int(h["num_log"]), (int(h["num_log"]),))

    @property
    def address(self):
        """The block's base address for C (keeps self alive)."""
        return native().ffi.from_buffer(self._buf)

    def message(self):
        return bytes(self.h["message"]).split(b"\0", 1)[0].decode("utf-8", "replace")

    def close(self):
        for attr in ("actions", "observations", "rewards", "terminals", "truncations", "masks", "log", "h",
                     "words", "_buf"):
            self.__dict__.pop(attr, None)
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:  # a view still alive elsewhere: the mapping goes with it
                pass
            self._mm = None


# ---- the C helper (cffi) and server executables, built into the env cache ----

CDEF = """
typedef struct PufLink {
    unsigned char* base; const float* actions; void* observations; float* rewards; float* terminals;
    float* truncations; unsigned char* masks; uint32_t seq; int pending;
} PufLink;
void puf_client_ring(PufLink* l, uint32_t command, uint64_t arg);
void puf_client_ring_all(PufLink* links, int n, uint32_t command, uint64_t arg);
int puf_client_first_error(const PufLink* links, int n);
void puf_client_copy_out(PufLink* l);
int puf_client_wait_all(PufLink* links, int n, int64_t timeout_ns, int spin, int copy);
int puf_py_server_wait(unsigned char* base, uint32_t seen, int64_t timeout_ns, int spin);
void puf_py_server_reply(unsigned char* base, uint32_t seq, int32_t status);
void puf_py_store(uint32_t* p, uint32_t v);
uint32_t puf_py_load(uint32_t* p);
int puf_default_spin(void);
"""

def native():
    """The cffi module of puffer_server.h's client half (and the helpers Python servers use);
    compiled on first use into the env cache."""
    check_supported()
    return load_cffi("shm", CDEF, '#include "puffer_server.h"\n', includes=[SHM_DIR])
