"""The DDNet kind: bots as network clients of unmodified DDNet-Server processes.

    kind.py           its declaration (an ini naming ddnet_map; registered in envs/registry.py)
    env.py            DDNetEnv: observations, actions, rewards and episodes of the bots; its [env] keys
    server.py         DDNet-Server processes on loopback, on the env supervisor (envs/supervisor.py)
    lockstep.c        the library the servers are started with (LD_PRELOAD): a clock the trainer advances
    lockstep.h        the block it shares with the trainer; lockstep.py: the trainer's end of it
    curriculum.py     curriculum starts: episodes begin at places bots reached before
    ddnet_client.h    the bots' network client (DDNet's 0.6 protocol, snapshots, rcon), one thread for all
    net.py            that client as a cffi module, and the protocol constants it takes from outside
    mapfile.py        DDNet/Teeworlds map files: the physics layers as arrays, a distance-to-finish field
"""
