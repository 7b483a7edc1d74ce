"""The Python runtime of envs: the registry (which env a name or path is), the env interface and
its backends (C headers through cffi, JavaScript games, envs in other processes), Go-Explore."""
