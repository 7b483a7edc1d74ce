"""The C-header kind: a PufferLib 5.0-style env header stepped in-process through cffi.

    kind.py        its declaration (registered in envs/registry.py)
    env.py         VecEnv: the Python side of vecenv.c, GoExploreVecEnv for a header with goexplore.h
    goexplore.py   Go-Explore from Python: the archive's figures, its file, routes
    pufferenv.h    the env contract (PufferLib 5.0's), ini.h its Dict and ini reader
    vecenv.c       many copies of one header stepped on OpenMP threads (threadpool.h without OpenMP)
    raylib.h       the software raylib subset envs draw with
    goexplore.h    Go-Explore's archive in C, goexplore_vec.h its vecenv calls
    vecenv_driver.c  a plain C program around a header (sanitizer builds, demos)

`[env] isolate = 1` runs the same header in server processes over the shared-memory protocol
(envs/shm/).
"""
