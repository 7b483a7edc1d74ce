"""The game-server kind's declaration: an ini whose [env] names a server command or the blocks of
running servers; and running a C header in server processes (`[env] isolate = 1`)."""
from puffbase.ini import parse_value, read_ini

from ..kind import Kind
from .env import SHM_KEYS, ShmVecEnv
# an ini is a server env's when its [env] section has one of these
SERVER_MARKS = ("command", "attach")


def wants_isolation(config) -> bool:
    """Whether [env] isolate asks for server processes."""
    value = config.get("isolate", 0)
    return bool(parse_value(value) if isinstance(value, str) else value)


def isolated(source, total_agents, config, **options):
    """A C header's env in server processes (envs/shm/isolate_server.c around the header)."""
    return ShmVecEnv(source, total_agents, config, isolate=True, **options)


def claims(ini) -> bool:
    env = read_ini(ini).get("env", {})
    return any(k in env for k in SERVER_MARKS)


def make(source, total_agents, config, **options):
    return ShmVecEnv(source, total_agents, config, **options)


KIND = Kind(name="server", title="game server", suffix=".ini", noun="env ini", make=make, claims=claims,
            mark="command = ... (a server to start), attach = /name0,... (running servers)",
            defaults=SHM_KEYS)
