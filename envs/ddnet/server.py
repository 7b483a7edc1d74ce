"""Unmodified DDNet-Server processes on loopback, on the env supervisor (envs/supervisor.py): one that
exits or stops answering is killed and started again on the same port.

    pool = ServerPool(2, "/usr/share/games/ddnet/data/maps/Tutorial.map", clients=32)   # two servers, 32 slots each
    pool.ports                                     # their UDP game ports (127.0.0.1)
    pool.password                                  # their remote console's (rcon) password
    pool.exited()                                  # indexes of servers whose process ended
    pool.restart(0, "why", "what it means")        # reported, killed, started again on the same port
    pool.close()                                   # every process gone, every port free

    ServerPool(..., lockstep=True)                 # each server runs the ticks the trainer grants (lockstep.c)
    pool.channels[0]                               # its lockstep channel (lockstep.py), the same across restarts

Each server runs in its own temporary home (HOME, XDG_DATA_HOME), so its rank database and logs go
there and are removed with it, and binds 127.0.0.1 only (bindaddr, sv_ipv4only). Its external
console (econ) is not used: DDNet binds it on every interface whatever ec_bindaddr says; the env
sends console commands over a bot's own connection (rcon) instead. Servers die with the trainer,
even a SIGKILLed one (the supervisor's die_with_trainer). The test commands are on (sv_test_cmds 1):
the env places bots with move_raw for its curriculum starts.

In lockstep each server is started with the project's lockstep library preloaded (LD_PRELOAD,
built and cached like the env modules) and inherits its channel's memfd and eventfds; the channel
is cleared before every start, so a restarted server's clock and counts begin at 0 again.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
from pathlib import Path

from ..errors import EnvError
from ..supervisor import Supervisor
from .lockstep import LockstepChannel, supported

DEFAULT_SERVER = "/usr/games/DDNet-Server"
DEFAULT_MAPS = Path("/usr/share/games/ddnet/data/maps")
INSTALL_HINT = ("install DDNet's server: sudo apt-get install ddnet-server (Debian 12+/Ubuntu 22.04+), or give "
                "[env] ddnet_server = /path/to/DDNet-Server")
START_TIMEOUT = 15.0


class DDNetServerError(EnvError):
    """A server could not be found, started, reached or restarted."""


def free_port(kind=socket.SOCK_DGRAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bound_udp_ports() -> set:
    """Local ports of the UDP sockets bound on 127.0.0.1 (Linux: /proc/net/udp)."""
    ports = set()
    with open("/proc/net/udp", encoding="ascii") as f:
        next(f)
        for line in f:
            addr, port = line.split()[1].split(":")
            if addr == "0100007F":
                ports.add(int(port, 16))
    return ports


def find_server(path: str) -> str:
    exe = shutil.which(path) or (path if os.access(path, os.X_OK) else None)
    if exe is None:
        raise DDNetServerError(f"DDNet-Server not found at {path!r}: {INSTALL_HINT}")
    return exe


class ServerPool:
    """`count` DDNet servers of one map, `clients` slots each; `name` (the env's) for messages."""

    def __init__(self, count: int, map_path, clients: int, server: str = DEFAULT_SERVER,
                 settings: str = "", timeout: float = START_TIMEOUT, name: str = "ddnet", lockstep: bool = False):
        self.exe = find_server(server)
        if lockstep and (why := supported()):
            raise DDNetServerError(f"{name}: {why}; set [env] lockstep = 0 (the servers keep their own clock)")
        self.map_path = Path(map_path)
        self.map_name = self.map_path.stem
        self.clients = clients
        self.settings = settings
        self.timeout = timeout
        self.password = secrets.token_hex(8)
        self.sup = Supervisor(name, "DDNet server", DDNetServerError, owner_close=self.close, die_with_trainer=True,
                              prefix="puffgpu-ddnet-")
        self._tmp = self.sup.folder
        self.servers = []
        self.channels = []
        try:
            library = _lockstep_library() if lockstep else None
            for i in range(count):
                home = self.sup.folder / f"server{i}"
                port = free_port()
                env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
                fds = ()
                if lockstep:
                    ch = LockstepChannel()
                    self.channels.append(ch)
                    env.update(ch.environment(port, library))
                    fds = ch.pass_fds
                s = self.sup.add(i, self._command, cwd=home, env=env, log_dir=home, pass_fds=fds)
                s.port, s.home = port, home
                s.detail = f"{self.map_name}, port {s.port}" + (", lockstep" if lockstep else "")
                self.servers.append(s)
        except BaseException:
            self.close()
            raise
        try:
            for s in self.servers:
                self.sup.start(s)
            for s in self.servers:
                self._wait_ready(s)
        except BaseException:
            self.close()
            raise

    @property
    def ports(self) -> list:
        return [s.port for s in self.servers]

    @property
    def restarts(self) -> int:
        return self.sup.restarts

    def _config(self, s) -> str:
        # everything on loopback; slots for every bot from one address; no connection-rate limit
        return "; ".join([
            f"sv_map {self.map_name}", f"sv_port {s.port}", "bindaddr 127.0.0.1", "sv_ipv4only 1", "sv_register 0",
            f"sv_max_clients {self.clients}", f"sv_max_clients_per_ip {self.clients}", "sv_connlimit 0",
            "sv_high_bandwidth 1",  # a snapshot every tick (not every second one): any ticks_per_decision is exact
            f"sv_rcon_password {self.password}", "sv_test_cmds 1",
            *(c.strip() for c in self.settings.split(";") if c.strip())])

    def _command(self, s) -> list:
        # the map goes into the server's own storage (its user folder comes first in DDNet's search
        # path), so any .map file loads under its name
        maps = s.home / "data" / "ddnet" / "maps"
        maps.mkdir(parents=True, exist_ok=True)
        if self.channels:
            self.channels[s.index].reset()  # the new process's clock and counts start at 0
        if not (maps / self.map_path.name).exists():
            (maps / self.map_path.name).symlink_to(self.map_path.resolve())
        return [self.exe, self._config(s)]

    def _wait_ready(self, s):
        """Until the server's process has bound its port (read from /proc/net/udp: binding the port
        here to probe it could take it from the server)."""
        self.sup.wait_ready(s, lambda: s.port in bound_udp_ports(), self.timeout, f"opened port {s.port}", poll=0.05)

    def exited(self) -> list:
        """Indexes of servers whose process has ended."""
        return [s.index for s in self.servers if s.poll() is not None]

    def restart(self, index: int, why: str, consequence: str = ""):
        """Server `index` failed (`why`): reported, killed if it still runs and started again on the
        same port (three failed starts in a row: DDNetServerError)."""
        self.sup.restart(self.servers[index], why, self._wait_ready, consequence)

    def pids(self) -> list:
        return self.sup.pids()

    def close(self):
        self.sup.close()  # SIGTERM (DDNet-Server shuts down cleanly), 2 s, then SIGKILL; the homes go too
        for ch in self.channels:
            ch.close()
        self.channels = []


def _lockstep_library():
    """lockstep.c built into the cache (once per change), the library each server is started with."""
    from ..build import build_shared_library
    return build_shared_library(Path(__file__).resolve().parent / "lockstep.c", "ddnet_lockstep", libs=["dl"])
