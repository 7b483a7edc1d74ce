"""Unmodified DDNet-Server processes on loopback, supervised: one that exits or stops answering is
killed and started again on the same port.

    pool = ServerPool(2, "/usr/share/games/ddnet/data/maps/Tutorial.map", clients=32)   # two servers, 32 slots each
    pool.ports                                     # their UDP game ports (127.0.0.1)
    pool.password                                  # their remote console's (rcon) password
    pool.exited()                                  # indexes of servers whose process ended
    pool.restart(0, "why")                         # kill -9 and start again, same port
    pool.close()                                   # every process gone, every port free

Each server runs in its own temporary home (HOME, XDG_DATA_HOME), so its rank database and logs go
there and are removed with it, and binds 127.0.0.1 only (bindaddr, sv_ipv4only). Its external
console (econ) is not used: DDNet binds it on every interface whatever ec_bindaddr says; the env
sends console commands over a bot's own connection (rcon) instead.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from puffbase.logs import log_tail

DEFAULT_SERVER = "/usr/games/DDNet-Server"
DEFAULT_MAPS = Path("/usr/share/games/ddnet/data/maps")
INSTALL_HINT = ("install DDNet's server: sudo apt-get install ddnet-server (Debian 12+/Ubuntu 22.04+), or give "
                "[env] server = /path/to/DDNet-Server")
START_TIMEOUT = 15.0


class DDNetServerError(RuntimeError):
    """A server could not be found, started or reached."""


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


def _pdeathsig():
    """prctl(PR_SET_PDEATHSIG, SIGKILL) for the child before exec: it dies with the trainer, even when
    the trainer is SIGKILLed (Linux). Looked up here, in the parent: the forked child only calls it."""
    import ctypes
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)


_die_with_parent = _pdeathsig()


def find_server(path: str) -> str:
    exe = shutil.which(path) or (path if os.access(path, os.X_OK) else None)
    if exe is None:
        raise DDNetServerError(f"DDNet-Server not found at {path!r}: {INSTALL_HINT}")
    return exe


class Server:
    def __init__(self, index: int):
        self.index = index
        self.port = free_port()
        self.proc = None
        self.home = None
        self.gen = 0


class ServerPool:
    def __init__(self, count: int, map_path, clients: int, server: str = DEFAULT_SERVER,
                 settings: str = "", timeout: float = START_TIMEOUT):
        self.exe = find_server(server)
        self.map_path = Path(map_path)
        self.map_name = self.map_path.stem
        self.clients = clients
        self.settings = settings
        self.timeout = timeout
        self.password = secrets.token_hex(8)
        self.restarts = 0
        self.servers = [Server(i) for i in range(count)]
        self._tmp = tempfile.mkdtemp(prefix="puffgpu-ddnet-")
        try:
            for s in self.servers:
                self._spawn(s)
            for s in self.servers:
                self._attach(s)
        except BaseException:
            self.close()
            raise

    @property
    def ports(self) -> list:
        return [s.port for s in self.servers]

    def _config(self, s: Server) -> str:
        # everything on loopback; slots for every bot from one address; no connection-rate limit
        return "; ".join([
            f"sv_map {self.map_name}", f"sv_port {s.port}", "bindaddr 127.0.0.1", "sv_ipv4only 1", "sv_register 0",
            f"sv_max_clients {self.clients}", f"sv_max_clients_per_ip {self.clients}", "sv_connlimit 0",
            "sv_high_bandwidth 1",  # a snapshot every tick (not every second one): any ticks_per_decision is exact
            f"sv_rcon_password {self.password}",
            *(c.strip() for c in self.settings.split(";") if c.strip())])

    def _spawn(self, s: Server):
        s.gen += 1
        s.home = Path(self._tmp) / f"server{s.index}"
        # the map goes into the server's own storage (its user folder comes first in DDNet's search
        # path), so any .map file loads under its name
        maps = s.home / "data" / "ddnet" / "maps"
        maps.mkdir(parents=True, exist_ok=True)
        if not (maps / self.map_path.name).exists():
            (maps / self.map_path.name).symlink_to(self.map_path.resolve())
        env = {**os.environ, "HOME": str(s.home), "XDG_DATA_HOME": str(s.home / "data")}
        s.log_path = s.home / f"server.{s.gen}.log"
        with open(s.log_path, "wb") as out:
            try:
                s.proc = subprocess.Popen([self.exe, self._config(s)], stdin=subprocess.DEVNULL, stdout=out,
                                          stderr=subprocess.STDOUT, cwd=s.home, env=env, start_new_session=True,
                                          preexec_fn=_die_with_parent)
            except OSError as e:
                raise DDNetServerError(f"cannot start {self.exe}: {e}; {INSTALL_HINT}") from None

    def _attach(self, s: Server):
        """Waits until the server's process has bound its port (read from /proc/net/udp: binding the
        port here to probe it could take it from the server)."""
        deadline = time.monotonic() + self.timeout
        while True:
            code = s.proc.poll()
            if code is not None:
                raise DDNetServerError(f"DDNet server {s.index} ({self.map_name}, port {s.port}) exited with code "
                                       f"{code} while starting; its output ends:\n{log_tail(s.log_path)}")
            if s.port in bound_udp_ports():
                return
            if time.monotonic() > deadline:
                raise DDNetServerError(f"DDNet server {s.index} ({self.map_name}) did not open port {s.port} within "
                                       f"{self.timeout:g} s; its output ends:\n{log_tail(s.log_path)}")
            time.sleep(0.05)

    def exited(self) -> list:
        """Indexes of servers whose process has ended."""
        return [s.index for s in self.servers if s.proc is not None and s.proc.poll() is not None]

    def restart(self, index: int, tries: int = 3):
        """Kills server `index` (if it still runs) and starts it again on the same port (a few tries:
        a loaded machine may be slow to start one); DDNetServerError when none succeeds."""
        s = self.servers[index]
        self.restarts += 1
        for attempt in range(tries):
            self._stop(s)
            self._spawn(s)
            try:
                self._attach(s)
                return
            except DDNetServerError:
                if attempt == tries - 1:
                    raise

    def _stop(self, s: Server):
        if s.proc is not None and s.proc.poll() is None:
            try:
                os.killpg(s.proc.pid, signal.SIGKILL)
            except OSError:
                s.proc.kill()
        if s.proc is not None:
            s.proc.wait()

    def pids(self) -> list:
        return [s.proc.pid if s.proc is not None else None for s in self.servers]

    def close(self):
        for s in self.servers:
            if s.proc is not None and s.proc.poll() is None:
                s.proc.terminate()  # DDNet-Server shuts down cleanly on SIGTERM
        deadline = time.monotonic() + 2.0
        for s in self.servers:
            if s.proc is not None and s.proc.poll() is None:
                try:
                    s.proc.wait(max(0.01, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            self._stop(s)
        shutil.rmtree(self._tmp, ignore_errors=True)
