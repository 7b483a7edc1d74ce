"""DDNet bots: what the ddnet env (envs/vec/ddnetvec.py) is made of.

    mapfile.py        DDNet/Teeworlds map files: the physics layers as arrays, a distance-to-finish field
    ddnet_client.h    the bots' network client (DDNet's 0.6 protocol, snapshots, rcon), one thread for all
    net.py            that client as a cffi module, and the protocol constants it takes from outside
    server.py         DDNet-Server processes on loopback, started, supervised and cleaned up
"""
