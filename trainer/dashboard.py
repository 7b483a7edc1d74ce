"""Training dashboard: a rich live panel on a terminal (like PufferLib's), one line per epoch otherwise."""
from __future__ import annotations

import sys
import time

from . import metrics as names


def fmt_int(n: float) -> str:
    n = float(n)
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= div:
            return f"{n / div:.1f}{unit}"
    return f"{n:.0f}"


def fmt_time(s: float) -> str:
    """A duration as the dashboard, the run's last line and the sweep's table show it: 1h02m, 3m05s, 12s."""
    s = int(max(0, s))
    h, m, sec = s // 3600, (s % 3600) // 60, s % 60
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


class Dashboard:
    """update(metrics) once per epoch; metrics is the flat dict the trainer also logs as JSON."""

    # env metrics on the one-line form (the panel shows every env/* metric); start_perf is the
    # success rate from the real start only, where Go-Explore starts some episodes elsewhere
    ENV_LINE = ("perf", "start_perf", "score", "episode_length")
    ENV_COUNTS = ("env/archive_cells", "env/archive_goal_steps", "env/archive_dropped",
                  "env/server_restarts")  # shown as integers

    def __init__(self, env: str, adapter: str, run_id: str, total_steps: int, live: bool | None = None):
        self.env, self.adapter, self.run_id, self.total = env, adapter, run_id, total_steps
        self.live = sys.stdout.isatty() if live is None else live
        self._live = None
        if self.live:
            from rich.console import Console
            from rich.live import Live
            self.console = Console()
            self._live = Live(console=self.console, refresh_per_second=4, transient=False)
            self._live.start()

    def update(self, m: dict):
        if self._live is not None:
            self._live.update(self._render(m))
        else:
            print(self.line(m), flush=True)

    def line(self, m: dict) -> str:
        env = " ".join(f"{k} {m['env/' + k]:.3f}" for k in self.ENV_LINE if "env/" + k in m)
        if "env/archive_cells" in m:  # Go-Explore: the archive's size and how far its frontier got
            env += f" archive {m['env/archive_cells']:.0f} cells, progress {m['env/archive_progress']:.3f}"
        if m.get("env/server_restarts"):  # envs in server processes: restarts after crashes or hangs
            env += f" server restarts {m['env/server_restarts']:.0f}"
        return (f"epoch {m['epoch']}/{m['epochs']} steps {fmt_int(m['global_step'])}/{fmt_int(self.total)} "
                f"sps {fmt_int(m['sps'])} elapsed {fmt_time(m['elapsed'])} eta {fmt_time(m['eta'])} | "
                f"{env} | pg {m['policy_loss']:.4f} v {m['value_loss']:.4f} ent {m['entropy']:.3f} "
                f"kl {m['approx_kl']:.4f} clip {m['clipfrac']:.3f} lr {m['learning_rate']:.4g} | "
                f"env {m['time/env']:.0%} inf {m['time/inference']:.0%} learn {m['time/learn']:.0%}")

    def _render(self, m: dict):
        from rich.console import Group
        from rich.panel import Panel
        from rich.table import Table
        head = Table.grid(expand=True)
        for _ in range(6):
            head.add_column()
        head.add_row(f"[bold cyan]puffgpu[/] {self.env}", f"steps [bold]{fmt_int(m['global_step'])}[/]"
                     f"/{fmt_int(self.total)}", f"SPS [bold]{fmt_int(m['sps'])}[/]",
                     f"epoch {m['epoch']}/{m['epochs']}", f"elapsed {fmt_time(m['elapsed'])}",
                     f"ETA {fmt_time(m['eta'])}")

        def table(title, rows):
            t = Table(title=title, show_header=False, box=None, expand=True, title_justify="left")
            t.add_column(style="dim")
            t.add_column(justify="right")
            for k, v in rows:
                t.add_row(k, v)
            return t
        losses = table("Losses", [(k, f"{m[k]:.4f}") for k in names.LOSSES if k in m]
                       + [("learning_rate", f"{m['learning_rate']:.5f}")])
        envs = table("Env", [(k[len(names.ENV_PREFIX):], f"{v:.0f}" if k in self.ENV_COUNTS else f"{v:.4f}")
                             for k, v in m.items() if k.startswith(names.ENV_PREFIX)])
        times = table("Time", [(k, f"{m[names.TIME_PREFIX + k]:.0%}") for k in names.PHASES]
                      + [("epoch", f"{m['epoch_seconds']:.2f} s")])
        body = Table.grid(expand=True)
        body.add_column(ratio=1)
        body.add_column(ratio=1)
        body.add_column(ratio=1)
        body.add_row(losses, envs, times)
        return Panel(Group(head, body), title=f"{self.adapter} · run {self.run_id}", border_style="cyan")

    def message(self, text: str):
        if self._live is not None:
            self._live.console.print(text)
        else:
            print(text, flush=True)

    def close(self):
        if self._live is not None:
            self._live.stop()
            self._live = None


class Stopwatch:
    """Accumulates seconds per named phase."""

    def __init__(self):
        self.t = {}

    def add(self, name: str, start: float):
        self.t[name] = self.t.get(name, 0.0) + time.perf_counter() - start

    def reset(self):
        self.t = {}
