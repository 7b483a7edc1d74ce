"""Game servers and isolated headers: envs in other processes over the shared-memory protocol
(docs/protocol.md).

    kind.py             the game-server kind's declaration (an ini naming a command or blocks to attach),
                        and the [env] keys of the shared-memory layer; `isolate = 1` of a C header
    env.py              ShmVecEnv: the servers presented as one vecenv (lockstep, faults, restarts)
    protocol.py         the block: header layout, mapping, checks; the C client through cffi
    puffer_server.h     the protocol in C: a server's half and the trainer's client half
    server.py           servers written in Python (and Reacher, the example game)
    isolate_server.c    the generic server around any env header (`isolate = 1`)
    bench_server.c      a server that does nothing but answer, for protocol benchmarks
"""
