"""The game-server kind's declaration: an ini whose [env] names a server command or the blocks of
running servers; and running an isolatable kind's env (a C header) in server processes
(`[env] isolate = 1`)."""
from puffbase.ini import read_ini

from ..kind import SHM_KEYS, Kind
from .env import ShmVecEnv

# an ini is a server env's when its [env] section has one of these
SERVER_MARKS = ("command", "attach")


def isolated(source, total_agents, config, **options):
    """An isolatable kind's env in server processes (envs/shm/isolate_server.c around its header)."""
    return ShmVecEnv(source, total_agents, config, isolate=True, **options)


def claims(ini) -> bool:
    env = read_ini(ini).get("env", {})
    return any(k in env for k in SERVER_MARKS)


def make(source, total_agents, config, **options):
    return ShmVecEnv(source, total_agents, config, **options)


KIND = Kind(name="server", title="game server", suffix=".ini", noun="env ini", make=make, claims=claims,
            mark="command = ... (a server to start), attach = /name0,... (running servers)",
            defaults=SHM_KEYS)
