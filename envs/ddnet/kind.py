"""The DDNet kind's declaration: an ini whose [env] names a DDNet map (ddnet_map)."""
from puffbase.ini import read_ini

from ..kind import Kind, wants_isolation
from .env import DDNET_DEFAULTS, DDNetEnv

MARK = "ddnet_map"


def claims(ini) -> bool:
    return MARK in read_ini(ini).get("env", {})


def make(source, total_agents, config, num_threads=None, **options):
    """Bots on DDNet-Server processes; the shared-memory layer's keys are taken out, but `timeout`,
    which the DDNet env reads too (see its ini). One network thread serves every bot: num_threads
    does not apply."""
    if wants_isolation(config):
        raise ValueError(f"{source.path}: [env] isolate is for C env headers; a DDNet env's bots play on "
                         f"DDNet server processes already")
    for k in ("isolate", "processes", "reattach"):
        config.pop(k, None)
    return DDNetEnv(source, total_agents, config, **options)


KIND = Kind(name="ddnet", title="DDNet bots", suffix=".ini", noun="env ini", make=make, claims=claims,
            mark=f"{MARK} = ... (bots on DDNet servers)", defaults=DDNET_DEFAULTS,
            evaluation={"curriculum": 0.0})  # evaluated from the map's spawn, never from a head start
