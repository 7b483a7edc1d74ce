"""Envs in other processes: game servers over the shared-memory protocol, presented as one vecenv.

    env = envs.make("arena", 512)                        # envs/ocean/arena/arena.ini names a server command
    env = envs.make("platformer", 1024, config={"isolate": 1})   # a C env header in child processes
    env.reset(); env.step(actions); env.log()             # the VecEnv interface

An env ini with `[env] command = ...` is a server env: `processes` copies of the command start (the
words {agents}, {name}, {seed}, {index}, {build}, {python} and any [env] key in braces are filled
in; `build = file.c` beside the ini is compiled, cached, into {build}), or, with `attach =
/name0,/name1`, the trainer maps blocks that servers someone else started have created. Each
server creates its block (docs/protocol.md); the trainer maps it, checks it and unlinks its name
at once, so no /dev/shm file outlives the two processes whatever ends them. `isolate = 1` runs an
ordinary env header the same way, in a generic server (envs/shm/isolate_server.c) built around it.

A step copies each server's action rows into its block, rings every server, then waits for each
(spin, then futex) and copies its observations, rewards, terminals and masks into the trainer's
own contiguous arrays (one memcpy per array per server, in C, without the GIL): the servers step
in parallel while the trainer waits, and are parked while it infers.

Faults: a server that exits, crashes, or does not answer within `timeout` seconds is reported
(exit status and the tail of its output), killed, restarted and reset; its agents' episodes end
as truncated (terminals and truncations 1, reward 0) and training goes on. env/server_restarts
counts restarts. A server that cannot start, or a header that disagrees with the others (version,
sizes, dtype, agent count), is an error naming both sides' values. The processes are the env
supervisor's (envs/supervisor.py: start, readiness, restarts, log tails, close). close() quits
the servers; an atexit hook and a SIGTERM hook do it too, and servers exit by themselves when
their parent dies.

Attach mode: the trainer writes its pid into each block (trainer_pid), watches each server's pid
from the header while it waits, and quits the servers at close(). An attached server that dies or
hangs ends its agents' episodes as truncated, and the trainer waits up to `reattach` seconds
(default 60) for a server to create the block again (the dead server's block is unlinked so that
the name is free), then maps it, checks it declares the same, resets it and goes on; after that,
an error. An attached server whose trainer died (its pid gone) forgets it and waits for the next.
"""
from __future__ import annotations

import itertools
import os
import shlex
import sys
import time

import numpy as np

from ..build import build_executable
from ..errors import EnvError
from ..interface import EnvBase, check_counts, merge_config, spread_seed, usable_cpus
from ..kind import SHM_KEYS
from ..supervisor import Supervisor
from .protocol import (CMD_LOAD, CMD_QUIT, CMD_RESET, CMD_SAVE, CMD_STEP, OK, PATH_LEN, UNSUPPORTED, Block,
                       ProtocolError, SHM_DIR, block_server_pid, check_supported, native, pid_alive, shm_exists,
                       shm_unlink, stale)

# Spin iterations before sleeping (see ShmVecEnv._choose_spins; docs/protocol.md has the measurements)
LONG_SPIN, SHORT_SPIN = 20000, 100
SERVER_KEYS = {"command", "build", "attach", "processes", "timeout", "reattach", "isolate"}
ISOLATE_SOURCE = SHM_DIR / "isolate_server.c"
SLICE_NS = 50_000_000  # the trainer checks that its servers live this often while waiting
STARTUP_S = 5.0  # a launched server has max(timeout, this) to create its block (an attached one: timeout)
QUIT_S = 2.0  # how long close() waits for an attached server to exit after quit, to remove a block it left
STALE_ADVICE = ("a server written to an earlier version of docs/protocol.md leaves its block behind when it quits "
                "or dies, and a server started again on the name then fails with 'File exists'")

_counter = itertools.count()


class ServerError(EnvError):
    """A server could not be started, connected or restarted, or answered with an error (a fault
    during training that a restart can mend is a warning, not this)."""


def _mismatch(spec, expect):
    """The first (key, declared, expected) where a server's spec differs from `expect`, or None."""
    return next(((k, spec[k], want) for k, want in (expect or {}).items() if spec[k] != want), None)


class _Server:
    """One server and its block: `child` is its process (envs.supervisor.Child) when the trainer
    started it, None when it is attached; `gen` counts its starts (or attachments)."""

    def __init__(self, index, agents, seed):
        self.index, self.agents, self.seed = index, agents, seed
        self.gen = 0
        self.child = None
        self.block = None
        self.name = None
        self.rows = (0, 0)
        self.rung_at = 0.0


class ShmVecEnv(EnvBase):
    """See the module docstring; make it with envs.make()."""

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
                 num_buffers=1, isolate=False):
        check_supported()
        check_counts(total_agents, seed)
        self.check_actions = check_actions
        self._servers = []
        self._id = next(_counter)
        self._closed = False
        self._seed = int(seed)
        self._sup = Supervisor(source.name, "server", ServerError, owner_close=self.close)
        config = dict(config or {})
        if isolate:
            self._setup_isolate(source, total_agents, config, num_threads)
        else:
            self._setup_command(source, total_agents, config)
        self.spin, self.server_spin = self._choose_spins()
        try:
            self._start_all()
            self._bind(num_buffers)
        except BaseException:
            self.close()
            raise

    # ---- configuration ----

    def _setup_command(self, source, total_agents, overrides):
        ini = source.path
        self.name = source.name
        self.header = None
        values = merge_config(source.env_config(), overrides, ini, ini)
        self.config = values
        self.timeout = float(values["timeout"])
        self.reattach = float(values["reattach"])
        if not self.timeout > 0 or self.reattach < 0:
            raise ValueError(f"{ini}: [env] timeout = {values['timeout']!r} must be > 0 and reattach = "
                             f"{values['reattach']!r} >= 0 (seconds)")
        attach = values.get("attach")
        self._attach = [a.strip() for a in str(attach).split(",") if a.strip()] if attach not in (None, "", 0) else []
        if self._attach:
            self._argv = None
            procs = len(self._attach)
        else:
            if "command" not in values:
                raise ValueError(f"{ini}: a server env needs [env] command = ... (or attach = names)")
            procs = int(values["processes"]) or 1
            build = values.get("build")
            exe = build_executable(ini.parent / str(build), includes=[SHM_DIR]) if build else None
            self._argv = self._template(str(values["command"]), values, exe, ini)
        self._cwd = ini.parent
        self._make_servers(total_agents, procs)

    def _template(self, command, values, exe, ini):
        words = shlex.split(command)
        known = {k: v for k, v in values.items() if k not in SERVER_KEYS}
        known.update(build=str(exe) if exe else "", python=sys.executable)

        def fill(word, server):
            try:
                return word.format(**known, agents=server.agents, name=server.name, seed=server.seed,
                                   index=server.index)
            except (KeyError, IndexError, ValueError) as e:
                raise ValueError(f"{ini}: [env] command word {word!r}: {e!r} is not a known key; use {{agents}}, "
                                 f"{{name}}, {{seed}}, {{index}}, {{build}}, {{python}} or an [env] key") from None
        return lambda server: [fill(w, server) for w in words]

    def _setup_isolate(self, source, total_agents, overrides, num_threads):
        header = source.path
        self.name, self.header = source.name, header
        own = source.env_config()  # a key the env itself reads stays the env's too
        shm_cfg = {k: overrides.get(k, v) if k in own else overrides.pop(k, v) for k, v in SHM_KEYS.items()}
        self.timeout = float(shm_cfg["timeout"])
        self.reattach = 0.0
        self.config = merge_config(own, overrides, source.name, source.ini)
        # default one server (its envs on OpenMP threads, as in-process; the trainer reads its
        # arrays in place); more processes confine a crash to fewer agents, at one copy per step
        procs = int(shm_cfg["processes"]) or 1
        procs = max(1, min(procs, total_agents))
        threads = max(1, min(int(num_threads or usable_cpus()), usable_cpus()) // procs)
        exe = build_executable(ISOLATE_SOURCE, name=f"isolate_{header.stem}", openmp=True,
                                   defines=[f'ENV_HEADER="{header}"'], includes=[header.parent, SHM_DIR])
        pairs = [f"{k}={repr(v) if isinstance(v, float) else v}" for k, v in self.config.items()]
        self._attach = []
        self._argv = lambda s: [str(exe), "--agents", str(s.agents), "--shm", s.name, "--seed", str(s.seed),
                                "--threads", str(threads), *pairs]
        self._cwd = header.parent
        self.config = {**self.config, **shm_cfg, "isolate": 1}
        self._make_servers(total_agents, procs)

    def _make_servers(self, total_agents, procs):
        self.num_agents_asked = int(total_agents)
        if procs > total_agents:
            raise ValueError(f"{procs} server processes for {total_agents} agents: each needs at least one")
        base, extra = divmod(int(total_agents), procs)
        for i in range(procs):
            self._servers.append(_Server(i, base + (i < extra), spread_seed(self._seed, i)))

    # ---- processes ----

    def _command(self, s):
        """How server s is started (again): a new block name each start, and its argv."""
        def command(child):
            s.gen = child.gen
            s.name = f"/puf{os.getpid()}-{self._id}-{s.index}-{s.gen}"
            assert len(s.name) <= 31, s.name  # macOS's limit on shared-memory names
            if shm_exists(s.name):
                shm_unlink(s.name)  # a stale block of a dead run with the same pid
            child.detail = f"block {s.name}"
            return self._argv(s)
        return command

    def _describe(self, s):
        if s.child is None:
            return f"attached server {s.index} (block {s.name})"
        return self._sup.describe(s.child)

    def _connect(self, s, expect):
        """Waits for the server's block, maps it, checks it and unlinks its name."""
        def ready():
            try:
                return Block.attach_ready(s.name, who=f"server {s.index}")
            except ProtocolError as e:
                raise ServerError(f"{self.name}: {e}") from None
            except FileNotFoundError:
                return None
        if s.child is not None:
            b = self._sup.wait_ready(s.child, ready, max(self.timeout, STARTUP_S), lambda: (
                f"marked its block {s.name} ready" if shm_exists(s.name) else f"created its block {s.name}"))
        else:
            deadline = time.monotonic() + self.timeout
            while (b := ready()) is None:
                if stale(s.name):  # a dead server's block that never became ready
                    self._stale(s, None)
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"{self.name}: " + (f"the block {s.name} exists but its server has not marked it ready"
                                            if shm_exists(s.name) else f"no server has created the block {s.name} yet")
                        + f" (waited {self.timeout:g} s, [env] timeout); attach mode maps blocks of servers started "
                        f"beforehand: start the server, or fix attach = ... in the env's ini")
                time.sleep(0.002)
        if s.child is None and not pid_alive(int(b.h["server_pid"])):  # its server is gone: say so now
            self._stale(s, b)
        if not self._attach:
            shm_unlink(s.name)  # both sides have it mapped: the name is no longer needed
        b.h["trainer_pid"] = os.getpid()  # an attached server watches it to learn that its trainer died
        spec = b.spec()
        wrong = _mismatch(spec, expect)
        if wrong:
            b.close()
            raise ServerError(f"{self.name}: server {s.index} (block {s.name}) has {wrong[0]} = {wrong[1]!r}, "
                              f"but server 0 has {wrong[2]!r}; every server must declare the same")
        s.block = b
        return spec

    def _stale(self, s, b):
        """An attached block whose server has exited: removed, and an error that says what to do."""
        pid = int(b.h["server_pid"]) if b is not None else block_server_pid(s.name)
        if b is not None:
            b.close()
        shm_unlink(s.name)
        raise ServerError(f"{self.name}: the block {s.name} belongs to server pid {pid}, which has exited "
                          f"({STALE_ADVICE}); the trainer removed it: start the server again, then the trainer")

    def _start_all(self):
        env = {**os.environ, "PUFFER_SHM_SPIN": str(self.server_spin)}
        for s in self._servers:
            if self._attach:
                s.name = self._attach[s.index]
            else:  # the protocol's servers watch their parent themselves: no die_with_trainer here
                s.child = self._sup.add(s.index, self._command(s), cwd=self._cwd, env=env)
                self._sup.start(s.child)
        self.spec = None
        for s in self._servers:
            spec = self._connect(s, None if self.spec is None else self._same(self.spec))
            if self.spec is None:
                self.spec = spec
            s.declared = spec["num_agents"]
            # a server runs the agents it was asked for; an isolated header, like the in-process vecenv,
            # may make more (whole envs until the count is reached)
            if s.declared != s.agents and (self.header is None or s.declared < s.agents):
                raise ServerError(f"{self.name}: server {s.index} (block {s.name}) declares num_agents = "
                                  f"{s.declared}, but it was asked for {s.agents} ({self.num_agents_asked} agents over "
                                  f"{len(self._servers)} server(s)); " + (
                                      "attached servers must together hold vec.total_agents: set it to their total"
                                      if self._attach else "a server must create exactly the agents its {agents} "
                                      "argument names"))
        spec = self.spec
        self.obs_size = spec["obs_size"]
        self.obs_dtype = np.dtype(spec["obs_dtype"])
        self.act_sizes = spec["act_sizes"]
        self.picture = spec["picture"]
        self.frameskip = spec["frameskip"]
        self.num_agents = sum(s.declared for s in self._servers)
        self._log_carry = np.zeros(len(spec["log_names"]), np.float64)
        self.num_envs = len(self._servers)

    @staticmethod
    def _same(spec):
        return {k: spec[k] for k in ("version", "obs_size", "obs_dtype", "act_sizes", "masks", "picture", "log_names")}

    def _bind(self, num_buffers):
        n, k = self.num_agents, len(self.act_sizes)
        # One server: the trainer reads its observations and rewards in place (views of the block,
        # replaced by the new block's after a restart). More: one copy per array per server into
        # contiguous arrays, as the rows of several blocks cannot form one numpy array.
        self._zero_copy = len(self._servers) == 1
        self._retired = []  # blocks of restarted servers that views may still point into
        if self._zero_copy:
            self._observations, self._rewards = self._servers[0].block.observations, self._servers[0].block.rewards
        else:
            self._observations = np.zeros((n, self.obs_size), self.obs_dtype)
            self._rewards = np.zeros(n, np.float32)
        self._actions = np.zeros((n, k), np.float32)
        self._terminals = np.zeros(n, np.float32)
        self._truncations = np.zeros(n, np.float32)
        self._action_mask = np.ones((n, sum(self.act_sizes)), np.uint8)
        self._setup_actions()
        mod = native()
        self._ffi, self._lib = mod.ffi, mod.lib
        self._links = self._ffi.new("PufLink[]", len(self._servers))
        r = 0
        for s in self._servers:
            s.rows = (r, r + s.declared)
            r += s.declared
            self._link(s)
        if not isinstance(num_buffers, (int, np.integer)) or num_buffers < 1 or len(self._servers) % num_buffers:
            raise ValueError(f"num_buffers = {num_buffers} must divide the {len(self._servers)} server processes "
                             f"(a buffer is a group of whole servers)")
        per = len(self._servers) // num_buffers
        self.buffers = [(b * per, (b + 1) * per, self._servers[b * per].rows[0], self._servers[(b + 1) * per - 1].rows[1])
                        for b in range(num_buffers)]

    def _choose_spins(self):
        """Spin iterations before sleeping: (the trainer's, the servers'). A waiter that spins keeps
        its core and sees the change in a few us; one that sleeps pays a futex wake-up (~100 us
        on the 2-core CI machine) but leaves its core to others. The trainer waits while the
        servers step: it spins long when the servers and it fit on the usable cores, and briefly
        when they are oversubscribed (a spinner then delays the servers it waits for). A server
        waits while the trainer infers, when the GPU driver may want every core (lavapipe's GPU is
        the CPU): it spins briefly. PUFFER_SHM_SPIN set by the user wins for both; attached
        servers keep their own."""
        if os.environ.get("PUFFER_SHM_SPIN", "").strip():
            spin = int(native().lib.puf_default_spin())
            return spin, spin
        return (LONG_SPIN if len(self._servers) + 1 <= usable_cpus() else SHORT_SPIN), SHORT_SPIN

    def _link(self, s):
        ffi, l = self._ffi, self._links[s.index]
        r0, r1 = s.rows

        def ptr(arr, ctype):
            return ffi.cast(ctype, ffi.from_buffer(arr[r0:r1])) if r1 > r0 else ffi.NULL
        s.keep = [s.block.address]
        l.base = ffi.cast("unsigned char*", s.keep[0])
        l.actions = ptr(self._actions, "float*")
        l.observations = ffi.NULL if self._zero_copy else ptr(self._observations, "void*")  # NULL: read in place
        l.rewards = ffi.NULL if self._zero_copy else ptr(self._rewards, "float*")
        l.terminals = ptr(self._terminals, "float*")
        l.truncations = ptr(self._truncations, "float*")
        l.masks = ptr(self._action_mask, "unsigned char*")
        l.pending = 0
        l.seq = int(s.block.h["request_seq"])

    # ---- the env interface (interface.Env) ----

    @property
    def observations(self):
        """[N, D]: with one server process a view of its block, read in place (a new view after a
        restart: read the property each step rather than keeping the array); with more, the
        trainer's own copy."""
        return self._observations

    @property
    def terminals(self):
        """1 where the episode ended on this step: by the game (a terminal) or cut short (a
        truncation: a time limit, or a server restart)."""
        return self._terminals

    @property
    def truncations(self):
        return self._truncations

    threads_kind = "processes"

    @property
    def num_threads(self):
        return len(self._servers)

    def _live_check(self):
        if self._closed:
            raise RuntimeError(f"{self.name} env is closed")

    def reset(self, seed=None):
        """Resets every server (a reset command with a per-server seed)."""
        self._live_check()
        base = self._seed if seed is None else int(seed)
        self._run(0, len(self._servers), CMD_RESET, lambda s: spread_seed(base, s.index))
        return self._observations

    def step(self, actions=None):
        self.step_buffer(None, actions)

    def step_buffer(self, b, actions=None, threads=None):
        self._live_check()
        lo, hi, r0, r1 = (0, len(self._servers), 0, self.num_agents) if b is None else self.buffers[b]
        self._take_actions(actions, r0, r1)
        self._run(lo, hi, CMD_STEP, None)

    def _run(self, lo, hi, cmd, arg):
        """Rings servers [lo, hi) with `cmd`, waits for all, restarting any that fails."""
        now = time.monotonic()
        if arg is None:  # the same argument for all: one C call
            self._lib.puf_client_ring_all(self._links + lo, hi - lo, cmd, 0)
        for s in self._servers[lo:hi]:
            if arg is not None:
                self._lib.puf_client_ring(self._links + s.index, cmd, arg(s))
            s.rung_at = now
        while self._lib.puf_client_wait_all(self._links + lo, hi - lo, SLICE_NS, self.spin, 1):
            now = time.monotonic()
            for s in self._servers[lo:hi]:
                if not self._links[s.index].pending:
                    continue
                if s.child is None:  # attached: its pid in the header says whether it lives
                    pid = int(s.block.h["server_pid"])
                    if not pid_alive(pid):
                        self._reattach(s, f"exited (pid {pid} is gone)")
                    elif now - s.rung_at > self.timeout:
                        self._reattach(s, f"did not answer within {self.timeout:g} s")
                    continue
                if s.child.poll() is not None:
                    self._restart(s, "exited")
                elif now - s.rung_at > self.timeout:
                    self._restart(s, f"did not answer within {self.timeout:g} s")
        bad = self._lib.puf_client_first_error(self._links + lo, hi - lo)
        for s in self._servers[lo + max(bad, 0):hi] if bad >= 0 else ():
            status = int(s.block.h["status"])
            if status != OK and cmd in (CMD_STEP, CMD_RESET):
                pid = s.child.pid if s.child else "unknown: attached"
                raise ServerError(f"{self.name}: server {s.index} (pid {pid}, block {s.name}) answered a "
                                  f"{'step' if cmd == CMD_STEP else 'reset'} with status {status}: "
                                  f"{s.block.message() or 'no message'}")

    def _restart(self, s, why):
        """A failed server: reported, killed and started again by the supervisor, then reset; its
        rows end their episodes as truncated."""
        def ready(child):
            if s.block is not None:  # the replaced server's block: its episodes' log sums still count
                self._retire(s.block)
                s.block = s.keep = None
            self._connect(s, {**self._same(self.spec), "num_agents": s.declared})
            self._adopt(s)
            deadline = time.monotonic() + self.timeout
            while self._lib.puf_client_wait_all(self._links + s.index, 1, SLICE_NS, self.spin, 1):
                if child.poll() is not None or time.monotonic() > deadline:
                    break
            if self._links[s.index].pending:
                raise ServerError(f"{self.name}: server {s.index} failed during its reset after a restart")
        self._sup.restart(s.child, why, ready, f"its {s.declared} agents' episodes end as truncated")
        self._truncate(s)

    def _retire(self, block):
        """A replaced server's block: the episodes that ended in it still count (its log sums); with
        one server views of it may be alive, so it is unmapped at close()."""
        self._harvest_log(block)
        if self._zero_copy:
            self._retired.append(block)
        else:
            block.close()

    def _adopt(self, s):
        """Links server s's new block in and rings its reset, seeded by its generation."""
        if self._zero_copy:
            self._observations, self._rewards = s.block.observations, s.block.rewards
        self._link(s)
        self._lib.puf_client_ring(self._links + s.index, CMD_RESET, (s.seed + s.gen * 0x85EBCA6B) & 0xFFFFFFFF)

    def _truncate(self, s):
        """Server s's agents' episodes end as truncated on the step in progress (it was replaced)."""
        r0, r1 = s.rows
        self._rewards[r0:r1] = 0
        self._terminals[r0:r1] = 1
        self._truncations[r0:r1] = 1

    def _reattach(self, s, why):
        """An attached server died or hangs: its agents' episodes end as truncated and the trainer
        waits up to [env] reattach seconds for a server to create the block again, then maps it."""
        old_pid = int(s.block.h["server_pid"])
        line = f"{self.name}: attached server {s.index} (pid {old_pid}, block {s.name}) {why}"
        self.faults.append(line)
        print(f"warning: {line}\n  its {s.declared} agents' episodes end as truncated; waiting up to "
              f"{self.reattach:g} s ([env] reattach) for a server to create {s.name} again", file=sys.stderr, flush=True)
        old, s.block, s.keep = s.block, None, None
        self._retire(old)
        if not pid_alive(old_pid):
            shm_unlink(s.name)  # the dead server's block: a new server can create the name again
        deadline = time.monotonic() + self.reattach
        while True:
            try:
                b = Block.attach_ready(s.name, who=f"server {s.index}")
            except FileNotFoundError:
                b = None
            except ProtocolError as e:
                raise ServerError(f"{self.name}: {e}") from None
            pid = int(b.h["server_pid"]) if b is not None else 0
            if b is not None and pid != old_pid and pid_alive(pid):
                break
            if b is not None:
                b.close()
                if not pid_alive(pid):  # a dead server's block (the hung one, exited since): free the name now
                    shm_unlink(s.name)
                    print(f"note: {self.name}: removed the block {s.name} of server pid {pid}, which has exited "
                          f"without removing it ({STALE_ADVICE}); start the server again on {s.name}",
                          file=sys.stderr, flush=True)
            if time.monotonic() > deadline:
                raise ServerError(f"{self.name}: attached server {s.index} (block {s.name}) {why}, and no server "
                                  f"created {s.name} again within {self.reattach:g} s ([env] reattach)")
            time.sleep(0.02)
        wrong = _mismatch(b.spec(), {**self._same(self.spec), "num_agents": s.declared})
        if wrong:
            b.close()
            raise ServerError(f"{self.name}: the server attached again on {s.name} has {wrong[0]} = {wrong[1]!r}, "
                              f"the one before had {wrong[2]!r}; it must declare the same")
        b.h["trainer_pid"] = os.getpid()
        s.block = b
        self._sup.restarts += 1
        s.gen += 1
        self._adopt(s)
        deadline = time.monotonic() + self.timeout
        while self._lib.puf_client_wait_all(self._links + s.index, 1, SLICE_NS, self.spin, 1):
            if not pid_alive(int(s.block.h["server_pid"])) or time.monotonic() > deadline:
                raise ServerError(f"{self.name}: the server attached again on {s.name} did not answer its reset")
        print(f"note: {self.name}: a server (pid {int(s.block.h['server_pid'])}) attached again on {s.name}; "
              f"training goes on", file=sys.stderr, flush=True)
        self._truncate(s)

    def save_state(self, path):
        """Asks every server to save its whole state (the protocol's optional save command) to
        `<path>.<server index>`; returns those paths. NotImplementedError if a server does not
        offer it."""
        return self._state_command(CMD_SAVE, path)

    def load_state(self, path):
        """Restores what save_state(path) saved: each server reloads its file and writes its
        observations; the trainer's arrays hold them afterwards."""
        return self._state_command(CMD_LOAD, path)

    def _state_command(self, cmd, path):
        self._live_check()
        paths = [f"{os.fspath(path)}.{s.index}" for s in self._servers]
        for s, p in zip(self._servers, paths):
            raw = os.path.abspath(p).encode("utf-8")
            if len(raw) >= PATH_LEN:
                raise ValueError(f"state path {p} is longer than the protocol's {PATH_LEN - 1} bytes")
            s.block.h["path"] = raw
        now = time.monotonic()
        self._lib.puf_client_ring_all(self._links, len(self._servers), cmd, 0)
        for s in self._servers:
            s.rung_at = now
        while self._lib.puf_client_wait_all(self._links, len(self._servers), SLICE_NS, self.spin, 1):
            for s in self._servers:
                if self._links[s.index].pending and ((s.child and s.child.poll() is not None)
                                                     or time.monotonic() - s.rung_at > self.timeout):
                    raise ServerError(f"{self.name}: server {s.index} failed during a state command: {self._describe(s)}")
        what = "save" if cmd == CMD_SAVE else "load"
        for s in self._servers:
            status = int(s.block.h["status"])
            if status == UNSUPPORTED:
                raise NotImplementedError(f"{self.name}: server {s.index} does not offer the {what}-state command")
            if status != OK:
                raise ServerError(f"{self.name}: server {s.index} could not {what} its state: "
                                  f"{s.block.message() or 'no message'}")
        return paths

    def log(self):
        """Episode stats since the last call (the servers' log sums over all blocks, divided by
        the total n): {'perf': ..., 'n': episodes}, or {} if none finished."""
        self._live_check()
        names = self.spec["log_names"]
        total, self._log_carry = self._log_carry, np.zeros(len(names), np.float64)
        for s in self._servers:
            if s.block is not None and len(names):
                self._harvest_log(s.block, total)
        return self._averages(total)

    def log_counts(self):
        """Episodes finished by each server since its log was last read: float32 [processes]
        (a server is an "env" of this vecenv: num_envs = processes)."""
        names = self.spec["log_names"]
        if "n" not in names:
            return np.zeros(len(self._servers), np.float32)
        i = names.index("n")
        return np.array([s.block.log[i] if s.block is not None else 0 for s in self._servers], np.float32)

    def env_log(self, index):
        """Like log() for server `index` alone (reads and clears only its sums)."""
        if not 0 <= index < len(self._servers):
            raise IndexError(f"server index {index} out of range [0, {len(self._servers)})")
        total = np.zeros(len(self.spec["log_names"]), np.float64)
        if self._servers[index].block is not None:
            self._harvest_log(self._servers[index].block, total)
        return self._averages(total)

    def _averages(self, total):
        names = self.spec["log_names"]
        if "n" not in names:
            return {}
        n = total[names.index("n")]
        if n == 0:
            return {}
        out = {k: float(v / n) for k, v in zip(names, total) if k != "n"}
        out["n"] = float(n)
        return out

    def _harvest_log(self, block, into=None):
        """Moves a block's log sums into `into` (default: what the next log() adds in)."""
        into = self._log_carry if into is None else into
        log = np.nan_to_num(block.log.astype(np.float64))
        into += log
        block.log[:] = 0

    def epoch_metrics(self):
        return {**self.log(), "server_restarts": float(self.restarts)}

    def render(self, index=0):
        raise NotImplementedError(f"{self.name} runs in server processes, which show nothing here; render it "
                                  f"in-process (without isolate) or in the game itself")

    def server_pids(self):
        return [s.child.pid if s.child else None for s in self._servers]

    @property
    def restarts(self):
        """Servers restarted (or attached again) so far."""
        return self._sup.restarts

    @property
    def faults(self):
        """One line per fault, newest last."""
        return self._sup.faults

    def close(self):
        if self._closed:
            return
        self._closed = True
        asked = set()
        for s in self._servers:  # quit over the protocol: every live server, attached ones too
            live = s.child.running if s.child is not None else (
                s.block is not None and pid_alive(int(s.block.h["server_pid"])))
            if s.block is not None and live and hasattr(self, "_links"):
                try:
                    if not self._links[s.index].pending:
                        self._lib.puf_client_ring(self._links + s.index, CMD_QUIT, 0)
                        asked.add(s.index)
                except Exception:
                    pass
        if getattr(self, "_sup", None) is not None:
            self._sup.close(ask=lambda child: None)  # asked above: 2 s, then SIGKILL for what is left
        self._observations = self._rewards = None  # possibly views of the blocks
        for b in getattr(self, "_retired", []):
            b.close()
        quit_by = time.monotonic() + QUIT_S
        for s in self._servers:
            s.keep = None
            if s.block is not None:
                pid = int(s.block.h["server_pid"])
                s.block.close()
                s.block = None
                if self._attach:
                    # an attached server unlinks its own block as it quits; one that does not (an earlier
                    # protocol page's) leaves it for the trainer, once that server has exited
                    while s.index in asked and pid_alive(pid) and time.monotonic() < quit_by:
                        time.sleep(0.01)
                    if stale(s.name):
                        shm_unlink(s.name)
            if s.name and not self._attach:
                shm_unlink(s.name)

    def __repr__(self):
        return (f"ShmVecEnv({self.name!r}, num_agents={self.num_agents}, obs_size={self.obs_size}, "
                f"act_sizes={self.act_sizes}, processes={len(self._servers)})")

