"""DDNet bots: every agent is a client of an unmodified DDNet-Server (envs/ddnet/).

K servers (envs/ddnet/server.py) on loopback ports, B bot clients each (envs/ddnet/ddnet_client.h, one
network thread for all of them), exposed as one vecenv of K·B agents, one agent per env. In lockstep
(the default) the trainer drives each server's clock (envs/ddnet/lockstep.c): a step sends each bot's
input, lets every server run exactly `ticks_per_decision` ticks with those inputs applied from the
first, and waits until it has and its snapshots are decoded; between steps the game stands still,
and it runs as fast as the CPUs allow. With `lockstep = 0` the servers tick at 50 Hz whatever the
trainer does: a step sends the inputs at once, then waits for the snapshot `ticks_per_decision`
ticks after the previous decision's, so a decision that comes late is applied late;
env/missed_ticks is the share of decisions sent after the next one was due (0 in lockstep).

Observation (float32, OBS_STATE + planes × window): the bot's own state (below), the four nearest
other tees, then a window of the map's tiles centered on the bot, one plane per tile kind and one
of the distance to the finish relative to the bot's tile. Actions, hybrid: move (left, none,
right), jump, hook, fire (discrete) and the aim angle in radians (continuous); each is the client's
input until the next decision. Reward: tiles of progress toward the finish along the map's
distance field × tile_reward, minus freeze_penalty per frozen decision, plus finish_bonus at the
finish, minus death_penalty on a death (with reward_new_tiles = 1 only tiles beyond the episode's
best pay, and none is charged). An episode ends at the finish, a death, after
stuck_seconds frozen, or after episode_seconds (a truncation); the bot is then reset with the
server's own console command (kill_pl over rcon). With `curriculum` > 0 that share of episodes
starts at a place bots reached before (envs/ddnet/curriculum.py), the bot put there with the
server's test command move_raw, and lasts at most curriculum_seconds (0: episode_seconds);
`start_perf` is the progress of the episodes that began at the spawn only, `real_starts` their
share.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..interface import EnvBase, check_counts, merge_config
from .curriculum import Curriculum
from .lockstep import grant_time
from .server import DEFAULT_MAPS, DEFAULT_SERVER, DDNetServerError, ServerPool

# the bot's own state, in this order, at the start of each observation row
STATE = ("alive", "progress", "vx", "vy", "tile_dx", "tile_dy", "hook_flying", "hook_grabbed", "hook_dx", "hook_dy",
         "jumped", "air_jumps_used", "frozen", "freeze_left", "time_left", "direction")
OTHERS = 4
OTHER = ("present", "dx", "dy", "vx", "vy")
OBS_STATE = len(STATE) + OTHERS * len(OTHER)
PLANES = ("solid", "nohook", "freeze", "unfreeze", "death", "finish", "distance")
ACT_SIZES = (3, 2, 2, 2, 1)  # move, jump, hook, fire, aim
LOG_KEYS = ("perf", "progress", "tiles", "finished", "died", "stuck", "frozen_share", "episode_seconds", "score")

TICK_HZ = 50
TILE = 32            # world units per tile
VEL = 256 * 10.0     # velocities in the snapshot are ×256 units a tick; 10 units a tick is a run
HOOK_FLYING, HOOK_GRABBED = 4, 5
DISTANCE_SCALE = 8.0  # tiles: the distance plane is (d(tile) − d(bot)) / this, clipped to [−1, 1]
JOIN_TIMEOUT_S = 30.0  # a server none of whose bots is in the game this long is restarted
CLIENT_TIMEOUT_S = 10  # ddnet_client.h starts a connection over after this long without a packet
RESPAWN_RETRY_TICKS = 160  # DDNet respawns up to 3 s after a death; a kill lost on the way is sent again after this
RESPAWN_HOLD_TICKS = 3 * TICK_HZ + 5  # DDNet respawns no sooner than 3 s after the join or the previous death
PHYS_SIZE = 28        # a tee's size (world units): it stands on ground below its feet at y + 14 (+5)
PLACE_SPACING = 4.0   # tiles of progress between the places an episode records for the curriculum
PLACES_MAX = 1024     # places one episode records at most
# the env's [env] keys and their defaults
DDNET_DEFAULTS = {
    "ddnet_map": "Tutorial", "ddnet_server": DEFAULT_SERVER,
    # server commands run at start (tunes: bots pass through and cannot hook each other)
    "ddnet_settings": "tune player_collision 0; tune player_hooking 0",
    "servers": 0, "bots_per_server": 32, "ticks_per_decision": 5, "episode_seconds": 40.0, "stuck_seconds": 3.0,
    "window_width": 15, "window_height": 11, "tile_reward": 0.1, "freeze_penalty": 0.01, "finish_bonus": 10.0,
    "death_penalty": 1.0, "timeout": 5.0, "lockstep": 1, "curriculum": 0.0, "curriculum_seconds": 0.0,
    "reward_new_tiles": 0}


class DDNetEnv(EnvBase):
    threads_kind = "network"
    num_buffers = 1

    def __init__(self, source, total_agents, config=None, num_threads=None, seed=0, check_actions=True,
                 num_buffers=1):
        from . import mapfile, net  # on first use: `python -m envs.ddnet.mapfile` runs that module as a script
        check_counts(total_agents, seed)
        if num_buffers != 1:
            raise ValueError(f"{source.name}: num_buffers = {num_buffers}: a DDNet env steps all its bots together "
                             f"(use num_buffers = 1)")
        self.name = source.name
        self.config = merge_config(source.env_config(), config, source.name, source.ini)
        c = self.config
        self.check_actions = check_actions
        self.num_agents = self.num_envs = int(total_agents)
        per = int(c["bots_per_server"])
        servers = int(c["servers"]) or -(-self.num_agents // per)
        if per < 1 or servers * per < self.num_agents or per > 64:
            raise ValueError(f"{source.name}: {self.num_agents} agents do not fit {servers} servers × {per} bots "
                             f"(bots_per_server 1..64; servers 0 = as many as needed)")
        self.k = int(c["ticks_per_decision"])
        if self.k < 1:
            raise ValueError(f"[env] ticks_per_decision must be >= 1, got {self.k}")
        self.map_path = self._map_path(str(c["ddnet_map"]), source)
        self.map = mapfile.load_map(self.map_path)
        self.dist = mapfile.distance_field(self.map)
        spawns = mapfile.spawn_points(self.map)
        finite = [self.dist[y, x] for x, y in spawns if np.isfinite(self.dist[y, x])]
        if not finite:
            raise ValueError(f"{self.map_path}: no spawn point reaches a finish tile: not a race map the bots can learn")
        self.spawn_distance = float(min(finite))
        self._planes, self._pad = self._make_planes()
        self.win_w, self.win_h = int(c["window_width"]), int(c["window_height"])
        if self.win_w % 2 == 0 or self.win_h % 2 == 0 or self.win_w < 1 or self.win_h < 1:
            raise ValueError(f"[env] window_width and window_height must be odd (centered on the bot), got "
                             f"{self.win_w}×{self.win_h}")
        self.obs_size = OBS_STATE + len(PLANES) * self.win_w * self.win_h
        self.obs_dtype = np.dtype(np.float32)
        self.act_sizes = ACT_SIZES
        self.picture = None
        self.buffers = [(0, self.num_agents, 0, self.num_agents)]
        n = self.num_agents
        self._observations = np.zeros((n, self.obs_size), np.float32)
        self._actions = np.zeros((n, len(ACT_SIZES)), np.float32)
        self._rewards = np.zeros(n, np.float32)
        self._terminals = np.zeros(n, np.float32)
        self._truncations = np.zeros(n, np.float32)
        self._action_mask = np.ones((n, sum(ACT_SIZES)), np.uint8)
        self._setup_actions()
        self.server_of = (np.arange(n) // per).astype(np.int32)
        self._closed = True
        self.pool = None
        self._client = None
        if not 0 < float(c["timeout"]) < CLIENT_TIMEOUT_S:
            raise ValueError(f"[env] timeout = {c['timeout']}: must be in (0, {CLIENT_TIMEOUT_S}) seconds (the client "
                             f"starts a connection over after {CLIENT_TIMEOUT_S} s of silence)")
        self.lockstep = bool(int(c["lockstep"]))
        self.curriculum = Curriculum(float(c["curriculum"]), np.random.default_rng(seed))
        # episode time limits in ticks: from the spawn, and from a curriculum start (0: the same)
        self.spawn_ticks = int(float(c["episode_seconds"]) * TICK_HZ)
        self.placed_ticks = int(float(c["curriculum_seconds"]) * TICK_HZ) or self.spawn_ticks
        if self.spawn_ticks < 1 or self.placed_ticks < 1:
            raise ValueError(f"[env] episode_seconds = {c['episode_seconds']} and curriculum_seconds = "
                             f"{c['curriculum_seconds']} must be > 0 (curriculum_seconds 0: episode_seconds)")
        self.pool = ServerPool(servers, self.map_path, clients=per, server=str(c["ddnet_server"]),
                               settings=str(c["ddnet_settings"]), name=self.name, lockstep=self.lockstep)
        self._closed = False
        mod = net.native()
        self._ffi, self._lib = mod.ffi, mod.lib
        self._freq = net.huffman_frequencies()
        self._uuid = np.array(net.item_uuid_ints("character@netobj.ddnet.tw"), np.int32)
        ports = np.array(self.pool.ports, np.int32)
        ffi = self._ffi
        self._client = self._lib.ddc_create(
            n, ffi.cast("int *", ffi.from_buffer(self.server_of)), ffi.cast("int *", ffi.from_buffer(ports)),
            ffi.cast("unsigned *", ffi.from_buffer(self._freq)), ffi.cast("int32_t *", ffi.from_buffer(self._uuid)),
            net.message_uuid("clientver@ddnet.tw"), b"bot", self.pool.password.encode())
        if self._client == ffi.NULL or self._lib.ddc_num_bots(self._client) != n:
            self.close()
            raise DDNetServerError(f"{self.name}: could not open {n} UDP sockets on 127.0.0.1")
        self._F = net.F
        self._input = np.frombuffer(ffi.buffer(self._lib.ddc_input(self._client), 4 * n * net.INPUT_SIZE),
                                    np.int32).reshape(n, net.INPUT_SIZE)
        self._state = np.zeros((n, net.NFIELDS), np.int32)
        self._state_ptr = ffi.cast("int32_t *", ffi.from_buffer(self._state))
        self._want = np.full(n, -1, np.int32)
        self._want_ptr = ffi.cast("int32_t *", ffi.from_buffer(self._want))
        self.granted = np.zeros(servers, np.int64)     # lockstep: ticks each server may run since it started
        self.grants = np.zeros(servers, np.int64)      # ... and the grants that gave them
        self._done = np.zeros(servers, np.int32)
        self._done_ptr = ffi.cast("int32_t *", ffi.from_buffer(self._done))
        self._hung = set()                             # servers that did not run their grant within `timeout`
        for s in range(servers):
            self._attach(s)
        self._reset_bookkeeping()
        self._in_game_at = [time.monotonic()] * servers  # when each server last had a bot in the game
        self.decisions = self.missed = 0
        self.curriculum_starts = self.placement_misses = 0

    @staticmethod
    def _map_path(name, source):
        p = Path(name).expanduser()
        for candidate in (p, source.path.parent / p, DEFAULT_MAPS / p, DEFAULT_MAPS / f"{name}.map"):
            if candidate.suffix == ".map" and candidate.is_file():
                return candidate.resolve()
        raise FileNotFoundError(f"[env] ddnet_map = {name!r}: no such map (a path to a .map file, or a name in "
                                f"{DEFAULT_MAPS}: sudo apt-get install ddnet-data)")

    def _make_planes(self):
        from .mapfile import TILE_NOHOOK, TILE_SOLID
        m = self.map
        g = m.game
        planes = np.stack([g == TILE_SOLID, g == TILE_NOHOOK, m.freeze, m.unfreeze, m.death,
                           m.finish]).astype(np.float32)
        pad = max(int(self.config["window_width"]), int(self.config["window_height"])) // 2 + 1
        out = np.zeros((len(PLANES), m.height + 2 * pad, m.width + 2 * pad), np.float32)
        out[:-1, pad:-pad, pad:-pad] = planes
        out[0, :pad, :] = out[0, -pad:, :] = out[0, :, :pad] = out[0, :, -pad:] = 1  # outside: solid
        dist = np.full((m.height + 2 * pad, m.width + 2 * pad), np.inf, np.float32)
        dist[pad:-pad, pad:-pad] = self.dist
        self._dist_padded = dist
        return out, pad

    def _reset_bookkeeping(self):
        n = self.num_agents
        self.active = np.zeros(n, bool)
        self.kill_tick = np.full(n, -1, np.int64)      # waiting for a respawn after this tick
        self.kill_sent_tick = np.full(n, -1, np.int64)
        self.last_tick = np.full(n, -1, np.int64)      # tick of the snapshot of the previous decision
        self.start_tick = np.zeros(n, np.int64)
        self.prev_d = np.zeros(n, np.float64)
        self.best_d = np.zeros(n, np.float64)
        self.frozen_since = np.full(n, -1, np.int64)
        self.map_gen = np.zeros(n, np.int64)          # the client's map count when the episode began
        self.frozen_decisions = np.zeros(n, np.int64)
        self.episode_decisions = np.zeros(n, np.int64)
        self.deaths_seen = np.zeros(n, np.int64)       # the client's count of kill messages naming the bot, at the last look
        self.placing = [None] * n                      # a curriculum start on its way: (x, y) the bot was moved to
        self.from_start = np.ones(n, bool)             # the episode began at the spawn
        self.limit = np.full(n, self.spawn_ticks, np.int64)  # the episode's time limit (ticks)
        self.places = [[] for _ in range(n)]           # (progress, x, y) the bot stood on in this episode
        self.log_sums = np.zeros((n, len(LOG_KEYS)), np.float64)
        self.log_n = np.zeros(n, np.int64)
        self.start_sums = np.zeros(n, np.float64)      # progress of the episodes that began at the spawn
        self.start_n = np.zeros(n, np.int64)
        self._prev_xy = None  # positions at the previous decision (the finish check follows the path between)

    # ---- the env interface ----

    @property
    def truncations(self):
        return self._truncations

    @property
    def num_threads(self):
        return 1

    def reset(self, seed=None):
        """Waits until every bot is in the game, then resets each (kill_pl) so that all start fresh.
        In lockstep the servers run meanwhile (the bots' inputs neutral), and 3 s more of game time:
        DDNet respawns a player no sooner than 3 s after it joined, and after that wait each kill
        respawns its bot 2 ticks later, so every run's first episodes begin alike."""
        self._live_check()
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        self.active[:] = False
        while True:
            self._copy_state()
            ready = self._state[:, self._F["phase"]] == 5
            if ready.all():
                break
            self._supervise()
            if time.monotonic() > deadline:
                raise DDNetServerError(f"{self.name}: {int((~ready).sum())} of {self.num_agents} bots did not join their "
                                       f"server within {JOIN_TIMEOUT_S:g} s")
            if self.lockstep:
                self._idle_step()
            else:
                time.sleep(0.05)
        if self.lockstep:
            for _ in range(-(-RESPAWN_HOLD_TICKS // self.k)):
                self._idle_step()
            self._copy_state()
        self.deaths_seen[:] = self._state[:, self._F["deaths"]]
        for i in range(self.num_agents):
            self._end(i)
        self._terminals[:] = 0
        self._truncations[:] = 0
        self._rewards[:] = 0
        self._observe()
        return self._observations

    def step(self, actions=None):
        self.step_buffer(0, actions)

    def step_buffer(self, b, actions=None, threads=None):
        self._live_check()
        self._take_actions(actions)
        self._write_inputs()
        self._copy_state()
        tick = self._state[:, self._F["tick"]].astype(np.int64)
        playing = self.last_tick >= 0
        # late: the server already reached the tick the next decision was due at when this one was sent
        self.missed += int((playing & (tick >= self.last_tick + self.k)).sum())
        self.decisions += int(playing.sum())
        self._lib.ddc_send_inputs(self._client, 0, self.num_agents)
        if self.lockstep:
            self._advance()
        else:
            in_game = self._state[:, self._F["phase"]] == 5
            # a bot that heard nothing for a second is not waited for (its server may be hanging)
            self._want[:] = np.where(in_game & playing & (self._recv_age_ms() < 1000), self.last_tick + self.k, -1)
            if (self._want >= 0).any():
                self._lib.ddc_wait_tick(self._client, 0, self.num_agents, self._want_ptr,
                                        int(1000 * self.k / TICK_HZ) + 500)
            else:  # no bot in the game (joining, or its server restarting): keep to the game's pace anyway
                time.sleep(self.k / TICK_HZ)
        self._copy_state()
        self._rewards[:] = 0
        self._terminals[:] = 0
        self._truncations[:] = 0
        if self._supervise():
            self._copy_state()  # the restarted servers' bots now read as reconnecting
        self._update()
        self._observe()

    def _live_check(self):
        if self._closed:
            raise RuntimeError(f"{self.name} env is closed")

    def _copy_state(self):
        self._lib.ddc_copy_state(self._client, self._state_ptr)

    def _write_inputs(self):
        """The actions as the bots' inputs; a bot between episodes holds still (no move, jump, hook
        or fire), so what it does before its first decision does not depend on the policy."""
        a = self._actions
        inp = self._input
        playing = self.active.astype(np.int32)
        inp[:, 0] = (a[:, 0].astype(np.int32) - 1) * playing
        aim = a[:, 4].astype(np.float64)
        inp[:, 1] = np.rint(np.cos(aim) * 256).astype(np.int32)
        inp[:, 2] = np.rint(np.sin(aim) * 256).astype(np.int32)
        inp[:, 3] = a[:, 1].astype(np.int32) * playing
        inp[:, 4] = a[:, 3].astype(np.int32) * playing  # fire: held 0/1 (the client counts presses)
        inp[:, 5] = a[:, 2].astype(np.int32) * playing  # hook
        inp[:, 6] = 1                                   # PlayerFlags: playing

    # ---- lockstep ----

    def _attach(self, s):
        """Server s's lockstep channel to the client (again after a restart: its counts start over)."""
        if not self.lockstep:
            return
        ch = self.pool.channels[s]
        self._lib.ddc_lockstep_attach(self._client, s, self._ffi.from_buffer(ch.block), ch.wake_fd, ch.done_fd)
        self.granted[s] = self.grants[s] = 0

    def _advance(self):
        """Lets every server run the next ticks_per_decision ticks (with the inputs just sent applied
        from the first) and waits until each has and its snapshots are decoded. A server that has not
        after `timeout` seconds is hung (restarted by _supervise); one that exited is not waited for."""
        for s in range(len(self.granted)):
            self.granted[s] += self.k
            self.grants[s] += 1
            self._lib.ddc_lockstep_grant(self._client, s, grant_time(int(self.granted[s]), int(self.grants[s])))
        deadline = time.monotonic() + float(self.config["timeout"])
        while self._lib.ddc_lockstep_wait(self._client, 100, self._done_ptr):
            waiting = set(np.flatnonzero(self._done == 0).tolist())
            exited = waiting & set(self.pool.exited())
            if exited or time.monotonic() > deadline:
                self._hung |= waiting - exited
                return

    def _idle_step(self):
        """A step of the game with every bot holding still (joining, waiting out a respawn)."""
        self._write_inputs()
        self._lib.ddc_send_inputs(self._client, 0, self.num_agents)
        self._advance()
        self._copy_state()
        if self._supervise():
            self._copy_state()

    # ---- episodes ----

    def _distance_at(self, x, y):
        """Tiles to the finish from world position (x, y) [arrays]; inf where unknown."""
        tx = np.clip(np.floor_divide(x, TILE) + self._pad, 0, self._dist_padded.shape[1] - 1)
        ty = np.clip(np.floor_divide(y, TILE) + self._pad, 0, self._dist_padded.shape[0] - 1)
        return self._dist_padded[ty, tx].astype(np.float64)

    def _on_finish(self, x0, y0, x1, y1):
        """Whether the segment from (x0, y0) to (x1, y1) touches a finish tile (8 samples)."""
        hit = np.zeros(len(x0), bool)
        fin = self._planes[PLANES.index("finish")]
        for t in np.linspace(0.0, 1.0, 9):
            x = (x0 + (x1 - x0) * t) // TILE + self._pad
            y = (y0 + (y1 - y0) * t) // TILE + self._pad
            hit |= fin[np.clip(y, 0, fin.shape[0] - 1).astype(np.int64), np.clip(x, 0, fin.shape[1] - 1).astype(np.int64)] > 0
        return hit

    def _end(self, i, kill=True):
        """Episode over for bot i; reset it with the server's console (kill_pl) unless it died."""
        self.active[i] = False
        self.placing[i] = None
        tick = int(self._state[i, self._F["tick"]])
        self.kill_tick[i] = tick
        self.deaths_seen[i] = self._state[i, self._F["deaths"]]
        if kill and self._state[i, self._F["cid"]] >= 0:
            cid = int(self._state[i, self._F["cid"]])
            self._lib.ddc_rcon(self._client, i, f"kill_pl {cid}".encode())
            self.kill_sent_tick[i] = tick

    def _log_episode(self, i, finished, died, stuck):
        c = self.config
        steps = max(1, self.episode_decisions[i])
        progress = float(np.clip(1.0 - self.best_d[i] / self.spawn_distance, 0.0, 1.0)) if finished == 0 else 1.0
        tiles = self.spawn_distance - self.best_d[i] if not finished else self.spawn_distance
        seconds = steps * self.k / TICK_HZ
        row = dict(perf=progress, progress=progress, tiles=tiles, finished=finished, died=died, stuck=stuck,
                   frozen_share=self.frozen_decisions[i] / steps, episode_seconds=seconds,
                   score=tiles * float(c["tile_reward"]))
        self.log_sums[i] += [row[k] for k in LOG_KEYS]
        self.log_n[i] += 1
        if self.from_start[i]:
            self.start_sums[i] += progress
            self.start_n[i] += 1
        self.curriculum.record(bool(self.from_start[i]), progress, self.places[i])
        self.places[i] = []

    def _grounded(self, x, y):
        """Whether a tee at world (x, y) stands on solid ground (DDNet's IsGrounded: a solid tile
        below either side of its feet)."""
        from .mapfile import TILE_NOHOOK, TILE_SOLID
        g = self.map.game
        below = np.clip((y + PHYS_SIZE // 2 + 5) // TILE, 0, g.shape[0] - 1)
        out = np.zeros(len(x), bool)
        for side in (-PHYS_SIZE // 2, PHYS_SIZE // 2):
            t = g[below, np.clip((x + side) // TILE, 0, g.shape[1] - 1)]
            out |= (t == TILE_SOLID) | (t == TILE_NOHOOK)
        return out

    def _begin(self, i, tick, d, maps, deaths, from_start):
        self.active[i] = True
        self.map_gen[i] = maps
        self.start_tick[i] = tick
        self.prev_d[i] = self.best_d[i] = d
        self.frozen_since[i] = -1
        self.frozen_decisions[i] = self.episode_decisions[i] = 0
        self.deaths_seen[i] = deaths
        self.from_start[i] = from_start
        self.limit[i] = self.spawn_ticks if from_start else self.placed_ticks
        self.places[i] = []

    def _place(self, i, x, y):
        """A curriculum start for bot i, just respawned at (x, y): moved (move_raw, relative, in world
        units; exact in lockstep, where no tick passes before the server runs it) to a place reached
        before. False when the curriculum says the spawn, or the command could not be sent."""
        target = self.curriculum.sample()
        if target is None:
            return False
        tx, ty, _ = target
        if self._lib.ddc_rcon(self._client, i, f"move_raw {tx - int(x)} {ty - int(y)}".encode()) != 0:
            return False
        self.placing[i] = (tx, ty)
        self.curriculum_starts += 1
        return True

    def _update(self):
        F, st, c = self._F, self._state, self.config
        tick = st[:, F["tick"]].astype(np.int64)
        x, y = st[:, F["x"]].astype(np.int64), st[:, F["y"]].astype(np.int64)
        has = st[:, F["has_char"]] > 0
        absent = st[:, F["absent_tick"]].astype(np.int64)
        deaths = st[:, F["deaths"]].astype(np.int64)
        in_game = st[:, F["phase"]] == 5
        maps = st[:, F["map_changes"]].astype(np.int64)
        frozen = (st[:, F["ddnet"]] > 0) & (st[:, F["freeze_end"]] != 0)
        d = self._distance_at(x, y)
        stuck_ticks = int(float(c["stuck_seconds"]) * TICK_HZ)
        tile_reward, new_tiles = float(c["tile_reward"]), bool(int(c["reward_new_tiles"]))
        px, py = (self._prev_xy[:, 0], self._prev_xy[:, 1]) if self._prev_xy is not None else (x, y)
        on_finish = self._on_finish(px, py, x, y)
        record = self.curriculum.share > 0
        if record:  # places for curriculum starts: alive, unfrozen, on the ground
            standing = has & ~frozen & self._grounded(x, y) & np.isfinite(d)
            spacing = PLACE_SPACING / self.spawn_distance
        for i in range(self.num_agents):
            if not in_game[i] or (self.active[i] and maps[i] != self.map_gen[i]):
                # reconnecting (the server closed the connection, or went away), or the server sent
                # the map again (change_map, reload: its ticks started over): the episode is cut short
                if self.active[i]:
                    self._terminals[i] = self._truncations[i] = 1
                    self._log_episode(i, 0, 0, 0)
                    self.active[i] = False
                self.placing[i] = None
                self.kill_tick[i] = self.kill_sent_tick[i] = -1
                self.deaths_seen[i] = deaths[i]
                self.last_tick[i] = -1 if not in_game[i] else tick[i]
                continue
            if not self.active[i]:
                # waiting for the (re)spawn that follows a reset or a death: a snapshot without the
                # character since, or a kill message since (in lockstep the respawn may come before
                # the next snapshot)
                respawned = has[i] and tick[i] > self.kill_tick[i] and np.isfinite(d[i]) and (
                    absent[i] >= self.kill_tick[i] or deaths[i] > self.deaths_seen[i])
                if self.placing[i] is not None:  # moved to its curriculum start at the last decision
                    if has[i] and deaths[i] == self.deaths_seen[i] and np.isfinite(d[i]):
                        tx, ty = self.placing[i]
                        self.placing[i] = None
                        if max(abs(x[i] - tx), abs(y[i] - ty)) > 4 * TILE:
                            self.placement_misses += 1
                        self._begin(i, tick[i], d[i], maps[i], deaths[i], from_start=False)
                    else:  # it died on the way: a fresh respawn
                        self.placing[i] = None
                        self.kill_tick[i], self.deaths_seen[i] = tick[i], deaths[i]
                elif respawned:
                    self.deaths_seen[i] = deaths[i]
                    if not (record and self._place(i, x[i], y[i])):
                        self._begin(i, tick[i], d[i], maps[i], deaths[i], from_start=True)
                elif self.kill_sent_tick[i] >= 0 and tick[i] - self.kill_sent_tick[i] > RESPAWN_RETRY_TICKS:
                    self._end(i)  # the kill got lost (a reconnect): again
                self.last_tick[i] = tick[i]
                continue
            self.episode_decisions[i] += 1
            if absent[i] > self.last_tick[i] or not has[i] or deaths[i] > self.deaths_seen[i]:
                # the character died since the last decision (and may be back already)
                self._rewards[i] = -float(c["death_penalty"])
                self._terminals[i] = 1
                self._log_episode(i, 0, 1, 0)
                self._end(i, kill=False)
                self.kill_tick[i] = absent[i]  # the server respawns it by itself
                self.kill_sent_tick[i] = -1
                self.last_tick[i] = tick[i]
                continue
            di = d[i] if np.isfinite(d[i]) else self.prev_d[i]
            # reward_new_tiles: only tiles beyond the episode's best pay (a jump that falls back costs
            # nothing, so rising toward a ledge pays even before the bot can stay up there)
            r = (max(self.best_d[i] - di, 0.0) if new_tiles else self.prev_d[i] - di) * tile_reward
            self.prev_d[i] = di
            self.best_d[i] = min(self.best_d[i], di)
            if record and standing[i] and len(self.places[i]) < PLACES_MAX:
                progress = 1.0 - di / self.spawn_distance
                if not self.places[i] or progress >= self.places[i][-1][0] + spacing:
                    self.places[i].append((progress, int(x[i]), int(y[i])))
            if frozen[i]:
                r -= float(c["freeze_penalty"])
                self.frozen_decisions[i] += 1
                if self.frozen_since[i] < 0:
                    self.frozen_since[i] = tick[i]
            else:
                self.frozen_since[i] = -1
            finished = bool(on_finish[i])
            stuck = frozen[i] and tick[i] - self.frozen_since[i] >= stuck_ticks
            timeout = tick[i] - self.start_tick[i] >= self.limit[i]
            if finished:
                r += float(c["finish_bonus"])
            self._rewards[i] = r
            if finished or stuck or timeout:
                self._terminals[i] = 1
                self._truncations[i] = float(timeout and not finished and not stuck)
                self._log_episode(i, int(finished), 0, int(stuck))
                self._end(i)
            self.last_tick[i] = tick[i]
        self._prev_xy = np.stack([x, y], axis=1)

    # ---- observations ----

    def _observe(self):
        F, st = self._F, self._state
        o = self._observations
        o[:] = 0
        act = self.active
        if not act.any():
            return
        x, y = st[:, F["x"]].astype(np.int64), st[:, F["y"]].astype(np.int64)
        d = self._distance_at(x, y)
        d = np.where(np.isfinite(d), d, self.prev_d)
        tick = st[:, F["tick"]].astype(np.int64)
        hook = st[:, F["hook_state"]]
        jumped = st[:, F["jumped"]]
        frozen = (st[:, F["ddnet"]] > 0) & (st[:, F["freeze_end"]] != 0)
        freeze_end = st[:, F["freeze_end"]].astype(np.int64)
        freeze_left = np.where(freeze_end > 0, np.clip((freeze_end - tick) / (3 * TICK_HZ), 0, 1),
                               np.where(freeze_end < 0, 1.0, 0.0))
        state = np.stack([
            np.ones(len(x)), np.clip(1 - d / self.spawn_distance, -1, 1),
            st[:, F["vx"]] / VEL, st[:, F["vy"]] / VEL,
            (x % TILE) / TILE - 0.5, (y % TILE) / TILE - 0.5,
            hook == HOOK_FLYING, hook == HOOK_GRABBED,
            np.where(hook > 0, (st[:, F["hook_x"]] - x) / (10 * TILE), 0),
            np.where(hook > 0, (st[:, F["hook_y"]] - y) / (10 * TILE), 0),
            jumped & 1, (jumped >> 1) & 1, frozen, freeze_left,
            np.clip(1 - (tick - self.start_tick) / self.limit, 0, 1), st[:, F["direction"]],
        ], axis=1)
        o[:, :len(STATE)] = state
        base = len(STATE)
        n_others = st[:, F["num_others"]]
        for k in range(OTHERS):
            ox, oy = st[:, F[f"other{k}_x"]], st[:, F[f"other{k}_y"]]
            present = n_others > k
            o[:, base + 5 * k:base + 5 * k + 5] = np.where(present[:, None], np.stack([
                np.ones(len(x)), (ox - x) / (10 * TILE), (oy - y) / (10 * TILE),
                st[:, F[f"other{k}_vx"]] / VEL, st[:, F[f"other{k}_vy"]] / VEL], axis=1), 0)
        # the tile window, centered on the bot's tile
        ty = y // TILE + self._pad
        tx = x // TILE + self._pad
        hh, hw = self.win_h // 2, self.win_w // 2
        rows = np.clip(ty[:, None] + np.arange(-hh, hh + 1)[None, :], 0, self._planes.shape[1] - 1)
        cols = np.clip(tx[:, None] + np.arange(-hw, hw + 1)[None, :], 0, self._planes.shape[2] - 1)
        win = self._planes[:-1][:, rows[:, :, None], cols[:, None, :]]           # [P-1, N, h, w]
        dwin = self._dist_padded[rows[:, :, None], cols[:, None, :]]              # [N, h, w]
        rel = np.where(np.isfinite(dwin), np.clip((dwin - d[:, None, None]) / DISTANCE_SCALE, -1, 1), 1.0)
        planes = np.concatenate([win, rel[None].astype(np.float32)], axis=0).transpose(1, 0, 2, 3)
        o[:, OBS_STATE:] = planes.reshape(len(x), -1)
        o[~act] = 0

    # ---- servers ----

    def _recv_age_ms(self):
        now_ms = int(time.monotonic() * 1000) & 0x7fffffff
        return (now_ms - self._state[:, self._F["recv_time_ms"]].astype(np.int64)) % (1 << 31)

    def _supervise(self):
        """Restarts a server that exited, hung or let none of its bots in; its bots reconnect and
        their episodes end as truncated. Whether any was restarted. Hung: in lockstep, it did not
        run its ticks within `timeout` seconds; in real time, it sent none of its bots anything for
        that long (in lockstep a server is silent whenever the trainer does not step)."""
        age = self._recv_age_ms()
        phase = self._state[:, self._F["phase"]]
        connected = phase >= 1
        dead = set(self.pool.exited())
        timeout_ms = 1000 * float(self.config["timeout"])
        now = time.monotonic()
        restarted = False
        for s in range(len(self.pool.servers)):
            mine = self.server_of == s
            if (phase[mine] == 5).any():
                self._in_game_at[s] = now
            if self.lockstep:
                silent = s in self._hung
            else:
                silent = connected[mine].any() and (age[mine][connected[mine]] > timeout_ms).all()
            # none of its bots got into the game for long (a server that binds but never answers)
            absent = now - self._in_game_at[s] > JOIN_TIMEOUT_S
            if s not in dead and not silent and not absent:
                continue
            why = ("exited" if s in dead else
                   f"did not run its {self.k} ticks within {self.config['timeout']:g} s" if silent and self.lockstep else
                   f"sent nothing for {self.config['timeout']:g} s" if silent else
                   f"let none of its bots into the game for {JOIN_TIMEOUT_S:g} s")
            self.pool.restart(s, why, f"its {int(mine.sum())} bots' episodes end as truncated")
            self._attach(s)
            self._in_game_at[s] = time.monotonic()
            restarted = True
            for i in np.flatnonzero(mine):
                if self.active[i]:
                    self._terminals[i] = self._truncations[i] = 1
                    self._log_episode(i, 0, 0, 0)
                self.active[i] = False
                self.placing[i] = None
                self.kill_tick[i] = -1
                self.kill_sent_tick[i] = -1
                self.last_tick[i] = -1
                self._lib.ddc_reconnect(self._client, int(i))
        self._hung = set()
        return restarted

    # ---- logs ----

    def _averages(self, sums, n, start_sum, start_n):
        if n == 0:
            return {}
        out = {k: float(v / n) for k, v in zip(LOG_KEYS, sums)}
        if self.curriculum.share > 0:  # the spawn's episodes alone: no head start in these
            if start_n:
                out["start_perf"] = float(start_sum / start_n)
            out["real_starts"] = float(start_n / n)
        out["n"] = float(n)
        return out

    def log(self):
        out = self._averages(self.log_sums.sum(axis=0), int(self.log_n.sum()), self.start_sums.sum(),
                             int(self.start_n.sum()))
        self.log_sums[:] = 0
        self.log_n[:] = 0
        self.start_sums[:] = 0
        self.start_n[:] = 0
        return out

    def log_counts(self):
        return self.log_n.astype(np.float32)

    def env_log(self, index):
        out = self._averages(self.log_sums[index].copy(), int(self.log_n[index]), self.start_sums[index],
                             int(self.start_n[index]))
        self.log_sums[index] = 0
        self.log_n[index] = 0
        self.start_sums[index] = 0
        self.start_n[index] = 0
        return out

    def epoch_metrics(self):
        out = self.log()
        out["missed_ticks"] = self.missed / max(1, self.decisions)
        out["server_restarts"] = float(self.pool.restarts if self.pool else 0)
        if self._client is not None:
            stats = np.zeros(3, np.int64)
            self._lib.ddc_decode_stats(self._client, self._ffi.cast("int64_t *", self._ffi.from_buffer(stats)))
            out["snapshot_decode_us"] = stats[0] / 1000.0
            out["snapshot_decode_max_us"] = stats[1] / 1000.0
        out["snapshot_errors"] = float(self._state[:, self._F["snap_errors"]].sum())
        if self.lockstep and self.pool is not None and self._client is not None:
            # waits that went on without datagrams a server counted as sent, so far
            out["lost_snapshots"] = float(self._lib.ddc_lockstep_lost(self._client))
        if self.curriculum.share > 0:
            out["frontier"] = self.curriculum.frontier
            out["curriculum_starts"] = float(self.curriculum_starts)
            out["placement_misses"] = float(self.placement_misses)
        self.missed = self.decisions = 0
        self.curriculum_starts = self.placement_misses = 0
        return out

    def render(self, index=0):
        """The tile window around bot `index` as an RGB picture (8 pixels a tile), the bot in the middle."""
        colors = np.array([[90, 90, 110], [40, 40, 50], [150, 200, 255], [255, 220, 120], [220, 40, 40],
                           [60, 200, 90]], np.uint8)
        o = self._observations[index, OBS_STATE:].reshape(len(PLANES), self.win_h, self.win_w)
        img = np.full((self.win_h, self.win_w, 3), 230, np.uint8)
        for p in range(len(PLANES) - 1):
            img[o[p] > 0] = colors[p]
        img[self.win_h // 2, self.win_w // 2] = (255, 128, 0) if o[:, self.win_h // 2, self.win_w // 2].any() or \
            self._observations[index, 0] else (200, 200, 200)
        return np.repeat(np.repeat(img, 8, axis=0), 8, axis=1)

    def console(self, server, line):
        """One line to server `server`'s remote console, over its first in-game bot's connection;
        False when none of its bots is in the game."""
        for i in np.flatnonzero(self.server_of == server):
            if self._lib.ddc_rcon(self._client, int(i), line.encode()) == 0:
                return True
        return False

    def server_home(self, server):
        """Server `server`'s storage folder (its demos/, its rank database), removed by close()."""
        return self.pool.servers[server].home / "data" / "ddnet"

    def server_pids(self):
        return self.pool.pids() if self.pool else []

    @property
    def faults(self):
        """One line per server fault (a restart), newest last."""
        return self.pool.sup.faults if self.pool else []

    def close(self):
        if getattr(self, "_closed", True) and getattr(self, "pool", None) is None:
            return
        self._closed = True
        if getattr(self, "_client", None) is not None:
            self._lib.ddc_destroy(self._client)
            self._client = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def __repr__(self):
        return (f"DDNetEnv({self.name!r}, num_agents={self.num_agents}, map={self.map.name}, "
                f"servers={len(self.pool.servers) if self.pool else 0}, ticks_per_decision={self.k})")
