"""The one supervisor of env processes: the game servers and isolated headers of envs/shm/ and the
DDNet servers of envs/ddnet/ start, are watched, restart and stop through it.

    sup = Supervisor("arena", "server", ServerError)          # a folder of its own for their logs
    c = sup.add(0, command=lambda c: [...], cwd=folder)       # how child 0 is started (again)
    sup.start(c)                                              # its own session: Ctrl-C reaches the trainer only
    sup.wait_ready(c, ready, timeout, "created its block")    # an exit or a timeout: an error quoting its output
    sup.describe(c)         # "server 0 (pid 12, block /puf1-0-0-0): exit status 4; its output ends: ..."
    sup.restart(c, "did not answer within 5 s", ready, "its 64 agents' episodes end as truncated")
    sup.close()             # ask each to quit, 2 s, then SIGKILL; the folder goes too

What it does for every child:
- it starts it in its own session, its output in a log file of its own (one per start);
- with die_with_trainer, it makes the child die with the trainer, even a SIGKILLed one (Linux:
  PR_SET_PDEATHSIG before exec). A shared-memory server watches its parent itself, as the protocol
  asks of any server (puffer_server.h in C, die_with_parent here for envs/shm/server.py);
- it quotes the tail of the child's output in every message about it;
- it restarts it with a limit: three failed starts in a row are an error;
- it closes: the owner calls close(); at interpreter exit, and on a SIGTERM the program does not
  handle itself, every supervisor still open closes its owner (or itself).
Every failure is the owner's error class, an EnvError: the trainer keeps the last epoch and says
why without a traceback.
"""
from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Callable

from .errors import EnvError

TAIL_BYTES = 2000  # of a child's output quoted in a message about it
TAIL_LINES = 15
RESTARTS_IN_A_ROW = 3  # failed starts of one child in a row before the run stops
CLOSE_GRACE_S = 2.0  # what a child is given to quit before it is killed
PR_SET_PDEATHSIG = 1


def log_tail(path, nbytes: int = TAIL_BYTES) -> str:
    """The last `nbytes` of the file at `path` as text ("" when there is no path or it cannot be read):
    what a child printed before it failed, quoted in the error that reports the failure."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - nbytes))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def exit_text(code) -> str:
    """A process's end in words: its exit status, the signal that killed it, or that it still runs."""
    if code is None:
        return "still running (no answer)"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def _lookup_prctl():
    """prctl, looked up once in the parent (a forked child only calls it: no loading after fork)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _lookup_prctl()


def die_with_parent(signum=signal.SIGKILL) -> bool:
    """Makes the calling process receive `signum` when its parent dies (Linux: PR_SET_PDEATHSIG);
    False where the OS has no such call (a server then polls getppid()). Safe between fork and exec."""
    if _prctl is None:
        return False
    _prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
    return True


def _kill_child():  # preexec_fn of a child that must die with the trainer
    die_with_parent(signal.SIGKILL)


class Child:
    """One supervised process: `command(child)` gives its argv at every start (a new block name,
    say); `detail` names it further in messages ("block /puf1-0-0-0", "port 8303"); `pass_fds`: file
    descriptors it inherits (a DDNet server's lockstep channel). `gen` counts its starts from 0; an
    owner may keep its own attributes on it."""

    def __init__(self, index: int, command: Callable, cwd=None, env=None, log_dir=None, detail: str = "",
                 pass_fds=()):
        self.index, self.command, self.cwd, self.env, self.log_dir = index, command, cwd, env, log_dir
        self.pass_fds = tuple(pass_fds)
        self.detail = detail
        self.gen = 0
        self.proc = None
        self.argv = None
        self.log_path = None

    @property
    def pid(self):
        return self.proc.pid if self.proc is not None else None

    def poll(self):
        """Its exit code, or None while it runs (or before it was started)."""
        return self.proc.poll() if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


_open: "weakref.WeakSet[Supervisor]" = weakref.WeakSet()


def _close_all():
    for sup in list(_open):
        sup.shutdown()


def _on_sigterm(signum, frame):
    """SIGTERM with no handler of the program's own: close every supervisor's owner, then die of
    the signal as before."""
    _close_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_hooks():
    if getattr(_install_hooks, "done", False):
        return
    _install_hooks.done = True
    atexit.register(_close_all)
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)


class Supervisor:
    """The processes of one env (see the module docstring). `name` is the env's, `what` how
    messages name a child ("server": "server 2 (pid ..., <detail>)"), `error` the EnvError class
    raised; `owner_close`: what closing at exit or on SIGTERM calls (the env's close, which ends
    its children through close() here); `die_with_trainer`: PR_SET_PDEATHSIG for every child.

    restarts and faults (one line per fault, newest last) count every restart; an owner that
    restarts something else (an attached server) may add to them."""

    def __init__(self, name: str, what: str = "server", error: type = EnvError, owner_close: Callable | None = None,
                 die_with_trainer: bool = False, prefix: str = "puffgpu-servers-"):
        self.name, self.what, self.error = name, what, error
        self.die_with_trainer = die_with_trainer
        self.children: list[Child] = []
        self.restarts = 0
        self.faults: list[str] = []
        self.folder = Path(tempfile.mkdtemp(prefix=prefix))
        self._owner_close = weakref.WeakMethod(owner_close) if owner_close is not None else None
        self._closed = False
        _open.add(self)
        _install_hooks()

    def add(self, index: int, command: Callable, cwd=None, env=None, log_dir=None, detail: str = "",
            pass_fds=()) -> Child:
        child = Child(index, command, cwd, env, log_dir, detail, pass_fds)
        self.children.append(child)
        return child

    def label(self, child: Child) -> str:
        """'server 2 (pid 123, block /x)': how messages name the child."""
        parts = ([f"pid {child.pid}"] if child.pid is not None else []) + ([child.detail] if child.detail else [])
        return f"{self.what} {child.index}" + (f" ({', '.join(parts)})" if parts else "")

    def describe(self, child: Child) -> str:
        """The child, how it ended and the tail of its output."""
        tail = log_tail(child.log_path)
        return (f"{self.label(child)}: {exit_text(child.poll())}"
                + ("; its output ends:\n    " + "\n    ".join(tail.splitlines()[-TAIL_LINES:]) if tail else "; no output"))

    def start(self, child: Child):
        """Starts the child (its command for this start, its own log file and session)."""
        argv = child.command(child)
        child.argv = argv
        log_dir = Path(child.log_dir) if child.log_dir is not None else self.folder
        log_dir.mkdir(parents=True, exist_ok=True)
        child.log_path = log_dir / f"{self.what.split()[-1]}{child.index}.{child.gen}.log"
        with open(child.log_path, "wb") as out:
            try:
                child.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=child.cwd, env=child.env,
                    pass_fds=child.pass_fds, start_new_session=True,  # Ctrl-C reaches the trainer only; it stops its children itself
                    preexec_fn=_kill_child if self.die_with_trainer and _prctl is not None else None)
            except OSError as e:
                raise self.error(f"{self.name}: cannot start {self.what} {child.index}: {shlex.join(argv)}: {e}") from None

    def wait_ready(self, child: Child, ready: Callable, timeout: float, waiting_for, poll: float = 0.002):
        """Waits until ready() returns something true (and returns it); an exit before that, or
        `timeout` seconds, is an error quoting the child's output. waiting_for: what readiness is,
        as a past participle ("opened port 8303"), or a function giving that text at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if child.poll() is not None:
                raise self.error(f"{self.name}: {self.describe(child)}\n  (it exited before it had "
                                 f"{waiting_for() if callable(waiting_for) else waiting_for}; command: "
                                 f"{shlex.join(child.argv)})")
            value = ready()
            if value:
                return value
            if time.monotonic() > deadline:
                what = waiting_for() if callable(waiting_for) else waiting_for
                raise self.error(f"{self.name}: {self.label(child)} is running but has not {what} after "
                                 f"{timeout:g} s; {self.describe(child)}")
            time.sleep(poll)

    def stop(self, child: Child) -> bool:
        """Kills the child's process group if it still runs, and reaps it; whether it was running."""
        if child.proc is None:
            return False
        alive = child.proc.poll() is None
        if alive:
            try:
                os.killpg(child.proc.pid, signal.SIGKILL)
            except OSError:
                child.proc.kill()
        child.proc.wait()
        return alive

    def restart(self, child: Child, why: str, ready: Callable, consequence: str = ""):
        """A failed child: reported (a warning with its output, one line in faults), killed if it
        still runs, started again and waited for with ready(child), which raises this supervisor's
        error when the new one is not fit. Three failed starts in a row are an error. Returns what
        ready returned."""
        for attempt in range(RESTARTS_IN_A_ROW + 1):
            killed = self.stop(child)
            line = f"{self.name}: {why}: {self.describe(child)}"
            if killed:
                line = line.replace("killed by SIGKILL", "killed (SIGKILL) by the trainer", 1)
            self.faults.append(line)
            print(f"warning: {line}\n  restarting it" + (f"; {consequence}" if consequence else ""),
                  file=sys.stderr, flush=True)
            if attempt == RESTARTS_IN_A_ROW:
                raise self.error(f"{self.name}: {self.what} {child.index} failed {RESTARTS_IN_A_ROW + 1} times in a "
                                 f"row; giving up. Last: {line}")
            self.restarts += 1
            child.gen += 1
            try:
                self.start(child)
                return ready(child)
            except self.error as e:
                why = f"failed to restart ({str(e).splitlines()[0]})"

    def pids(self) -> list:
        return [c.pid for c in self.children]

    def close(self, ask: Callable | None = None, grace: float = CLOSE_GRACE_S):
        """Asks every running child to quit (ask(child); default SIGTERM), waits up to `grace`
        seconds for all, kills what is left and removes the supervisor's folder."""
        if self._closed:
            return
        self._closed = True
        _open.discard(self)
        for c in self.children:
            if c.running:
                try:
                    (ask or (lambda c: c.proc.terminate()))(c)
                except Exception:
                    pass
        deadline = time.monotonic() + grace
        for c in self.children:
            if c.running:
                try:
                    c.proc.wait(max(0.01, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            self.stop(c)
        shutil.rmtree(self.folder, ignore_errors=True)

    def shutdown(self):
        """At exit or on SIGTERM: the owner's close (which closes this), else close()."""
        owner_close = self._owner_close() if self._owner_close is not None else None
        try:
            (owner_close or self.close)()
        except Exception:
            pass
        self.close()
