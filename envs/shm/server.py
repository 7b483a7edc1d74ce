"""Game servers written in Python, for the shared-memory protocol (docs/protocol.md).

    from envs.shm.server import Server
    srv = Server(args.shm, num_agents=64, obs_size=8, act_sizes=(3, 1), log_names=("perf", "score", "n"))
    def step(srv):                    # read srv.actions [N, K]; write srv.observations, rewards,
        ...                           # terminals, truncations (srv.log_episode({...}) at episode ends)
    def reset(srv, seed): ...
    srv.serve(step, reset)            # parked between commands; returns on quit or parent death

The arrays are numpy views of the shared block, so a step writes straight into what the trainer
reads. Waiting and replying go through puffer_server.h's C code (spin, then futex), so the memory
order is the C11 one whatever the CPU. Like a C server, a Python server exits (unlinking its
block's name) when its parent goes away or on SIGTERM/SIGHUP.

`python -m envs.shm.server --agents N --shm NAME` runs `Reacher`, a small example game.
"""
from __future__ import annotations

import argparse
import os
import signal

import numpy as np

from ..supervisor import die_with_parent
from .protocol import CMD_LOAD, CMD_QUIT, CMD_RESET, CMD_SAVE, CMD_STEP, FLAG_CLOSED, FLAG_READY, OK, UNSUPPORTED, \
    WORD_FLAGS, WORD_REQUEST_SEQ, Block, native, pid_alive, shm_unlink

SLICE_NS = 200_000_000  # between checks that the parent is alive


class Server:
    def __init__(self, name, num_agents, obs_size, act_sizes, obs_dtype=np.float32, masks=False, picture=None,
                 log_names=("n",), frameskip=1, ready=True):
        if "n" not in log_names:
            log_names = (*log_names, "n")
        self.block = b = Block.create(name, num_agents, obs_size, act_sizes, obs_dtype, masks, picture,
                                      log_names, frameskip)
        self.name = name
        self.num_agents = num_agents
        self.actions, self.observations, self.rewards = b.actions, b.observations, b.rewards
        self.terminals, self.truncations, self.masks, self.log = b.terminals, b.truncations, b.masks, b.log
        self.log_names = list(log_names)
        self._lib = native().lib
        self._ffi = native().ffi
        self._base = self._ffi.cast("unsigned char*", b.address)
        self._words = self._ffi.cast("uint32_t*", self._base)
        self._parent = os.getppid()
        self._seen = 0
        self.spin = self._lib.puf_default_spin()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        if die_with_parent(signal.SIGTERM) and os.getppid() != self._parent:  # it died before that
            self._on_signal(signal.SIGTERM, None)
        if ready:
            self.set_ready()

    def set_ready(self):
        """Marks the block ready: the trainer maps it from now on (Server(..., ready=False) leaves
        time to fill the first observations or more of the header first)."""
        self._lib.puf_py_store(self._words + WORD_FLAGS, FLAG_READY)

    def _on_signal(self, signum, frame):
        shm_unlink(self.name)
        os._exit(128 + signum)

    def wait(self):
        """Parks until the trainer rings; returns (command, argument). CMD_QUIT when the
        trainer is gone."""
        while not self._lib.puf_py_server_wait(self._base, self._seen, SLICE_NS, self.spin):
            if os.getppid() != self._parent:
                return CMD_QUIT, 0
            # an attached server's trainer is not its parent: when the pid it wrote is gone, forget it
            # and wait for the next trainer to map the block (as puffer_server.h does)
            trainer = int(self.block.h["trainer_pid"])
            if not pid_alive(trainer):
                self.block.h["trainer_pid"] = 0
        self._seen = int(self._lib.puf_py_load(self._words + WORD_REQUEST_SEQ))
        h = self.block.h
        return int(h["command"]), int(h["arg"])

    def reply(self, status=OK):
        self._lib.puf_py_server_reply(self._base, self._seen, status)

    def log_episode(self, values):
        """Adds one finished episode: {field: value} for the log fields (n counts itself)."""
        for i, name in enumerate(self.log_names):
            self.log[i] += 1.0 if name == "n" else float(values.get(name, 0.0))

    @property
    def path(self):
        """The file a save/load-state command names."""
        return bytes(self.block.h["path"]).split(b"\0", 1)[0].decode("utf-8")

    def serve(self, step, reset=None, save=None, load=None):
        """Answers commands until quit: step(self), reset(self, seed), save(self, path),
        load(self, path); a missing handler answers UNSUPPORTED."""
        handlers = {CMD_STEP: lambda a: step(self), CMD_RESET: (lambda a: reset(self, a)) if reset else None,
                    CMD_SAVE: (lambda a: save(self, self.path)) if save else None,
                    CMD_LOAD: (lambda a: load(self, self.path)) if load else None}
        try:
            while True:
                cmd, arg = self.wait()
                if cmd == CMD_QUIT:
                    break
                fn = handlers.get(cmd)
                if fn is None:
                    self.reply(UNSUPPORTED)
                    continue
                fn(arg)
                self.reply(OK)
        finally:
            self.close()

    def close(self):
        if self.block is None:
            return
        self._lib.puf_py_store(self._words + WORD_FLAGS, FLAG_READY | FLAG_CLOSED)
        shm_unlink(self.name)
        self._base = self._words = None
        self.actions = self.observations = self.rewards = self.terminals = self.truncations = None
        self.masks = self.log = None
        self.block.close()
        self.block = None


class Reacher:
    """The example game: steer a point toward a target in the unit square. Heads: a step in x
    and a step in y (3 each: −, 0, +). Observation: position, target, target − position (6 f32);
    reward: the distance gained, +1 on reaching the target (within 0.1), which ends the episode;
    after `max_steps` it is truncated."""

    OBS, ACTS = 6, (3, 3)

    def __init__(self, n, seed=0, max_steps=64):
        self.n, self.max_steps = n, max_steps
        self.rng = np.random.default_rng(seed)
        self.pos = np.zeros((n, 2), np.float32)
        self.goal = np.zeros((n, 2), np.float32)
        self.t = np.zeros(n, np.int32)
        self.ret = np.zeros(n, np.float32)

    def _new(self, idx):
        self.pos[idx] = self.rng.random((len(idx), 2))
        self.goal[idx] = self.rng.random((len(idx), 2))
        self.t[idx] = 0
        self.ret[idx] = 0

    def observe(self, srv):
        srv.observations[:, 0:2] = self.pos
        srv.observations[:, 2:4] = self.goal
        srv.observations[:, 4:6] = self.goal - self.pos

    def reset(self, srv, seed):
        self.rng = np.random.default_rng(seed)
        self._new(np.arange(self.n))
        srv.rewards[:] = srv.terminals[:] = srv.truncations[:] = 0
        self.observe(srv)

    def step(self, srv):
        a = np.nan_to_num(srv.actions).clip(0, 2).astype(np.int64)
        d0 = np.linalg.norm(self.goal - self.pos, axis=1)
        self.pos = (self.pos + (a - 1) * 0.05).clip(0, 1).astype(np.float32)
        d1 = np.linalg.norm(self.goal - self.pos, axis=1)
        reached = d1 < 0.1
        self.t += 1
        r = (d0 - d1) + reached.astype(np.float32)
        self.ret += r
        srv.rewards[:] = r
        srv.terminals[:] = reached
        srv.truncations[:] = ~reached & (self.t >= self.max_steps)
        done = np.flatnonzero(reached | (self.t >= self.max_steps))
        for i in done:
            srv.log_episode({"perf": float(reached[i]), "score": float(self.ret[i]), "episode_length": float(self.t[i])})
        if len(done):
            self._new(done)
        self.observe(srv)


def main(argv=None):
    p = argparse.ArgumentParser(description="the example Python game server (Reacher)")
    p.add_argument("--agents", type=int, required=True)
    p.add_argument("--shm", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=64)
    args = p.parse_args(argv)
    game = Reacher(args.agents, args.seed, args.max_steps)
    srv = Server(args.shm, args.agents, Reacher.OBS, Reacher.ACTS,
                 log_names=("perf", "score", "episode_length", "n"))
    srv.serve(game.step, game.reset)


if __name__ == "__main__":
    main()
