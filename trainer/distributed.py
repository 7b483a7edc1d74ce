"""Data-parallel training over MPI: K processes train one policy.

`mpiexec -n K python -m trainer.run ...` (or Slurm's `srun`) starts K ranks. Rank r opens its own
adapter, owns total_agents / K agents (its own envs, seeds and sampler) and collects its own rollout.
A minibatch is minibatch_size / K elements on each rank (the same row blocks of its own agents); its
gradient is computed on every rank, then averaged across ranks (`World.average`) before the clip and
Muon run on every rank. The average sums every element in rank order (an all-to-all of slices, a
sum per slice, an all-gather), so every rank applies the same bits and the weights stay bit-identical (checked
at every checkpoint, `World.check_identical`). The losses are means over each rank's share, so their
average is the mean over the whole minibatch, as one process holding every agent computes it (up to
the float rounding of the different summation order).

Without a launcher (no PMI_SIZE, OMPI_COMM_WORLD_SIZE, PMIX_SIZE or SLURM_STEP_NUM_TASKS > 1 in the
environment) `connect()` returns a one-process World and MPI is never imported: such a run is
exactly the one-process trainer.
"""
from __future__ import annotations

import hashlib
import os
import socket
import sys
import time

import numpy as np

# (world size, rank, local rank) as each launcher exports them: MPICH/Hydra (and Intel MPI), Open
# MPI, PMIx launchers, Slurm's srun
LAUNCHERS = (("PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"),
             ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
             ("PMIX_SIZE", "PMIX_RANK", "PMIX_LOCAL_RANK"),
             ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID"))

INSTALL_HINT = ('this process was started by an MPI launcher ({var}={size}), but mpi4py is not installed: '
                'pip install -e ".[mpi]" (mpi4py and MPICH from PyPI; a system MPI also works)')


class DistributedError(RuntimeError):
    pass


def launched_size() -> int:
    """The world size a launcher announced in the environment; 1 without one."""
    for size_var, _, _ in LAUNCHERS:
        value = os.environ.get(size_var, "").strip()
        if value.isdigit() and int(value) > 1:
            return int(value)
    return 1


def launch_rank() -> int:
    """This process's rank as the launcher announced it (0 without one)."""
    for size_var, rank_var, _ in LAUNCHERS:
        if os.environ.get(size_var) and os.environ.get(rank_var, "").strip().isdigit():
            return int(os.environ[rank_var])
    return 0


class World:
    """One process: rank 0 of 1. Every reduction is the identity."""

    rank, size, local_rank = 0, 1, 0

    def __init__(self):
        self.reduce_seconds = 0.0  # time spent in average() (the all-reduce), reset by the caller

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def average(self, a: np.ndarray) -> np.ndarray:
        return a

    def gather(self, obj) -> list:
        return [obj]

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def barrier(self):
        pass

    def broadcast(self, a: np.ndarray) -> np.ndarray:
        return a

    def share(self, obj):
        """Rank 0's `obj` on every rank."""
        return obj

    def check_identical(self, what: str, a: np.ndarray):
        pass

    def abort(self, code: int = 1):
        raise SystemExit(code)

    def describe(self) -> str:
        return "1 process"


class MpiWorld(World):
    """K ranks of MPI.COMM_WORLD."""

    def __init__(self):
        super().__init__()
        try:
            from mpi4py import MPI
        except ImportError:
            var = next(s for s, _, _ in LAUNCHERS if os.environ.get(s, "").strip().isdigit()
                       and int(os.environ[s]) > 1)
            raise DistributedError(INSTALL_HINT.format(var=var, size=os.environ[var])) from None
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        # the local rank from the ranks that share this machine's memory (any launcher, any MPI)
        self.local_rank = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank).Get_rank()
        self.hosts = self.comm.allgather((socket.gethostname(), os.getpid()))
        self._scratch = {}  # average()'s send, receive and result buffers, per slice length

    def average(self, a: np.ndarray) -> np.ndarray:
        """The mean over ranks of `a` (float32), the same bits on every rank. MPI's own Allreduce may
        sum in an order that differs between ranks, so: the array is cut into K slices; rank r
        receives slice r of every rank (all-to-all) and sums them in rank order 0, 1, …, K−1, then
        divides by K; the summed slices are all-gathered. Every element is summed once, in rank
        order, by one rank, and each rank sends and receives about 2·(K−1)/K of the array (a ring
        all-reduce's traffic)."""
        s = time.perf_counter()
        a = np.ascontiguousarray(a, np.float32)
        K, n = self.size, a.size
        chunk = -(-n // K)
        if chunk not in self._scratch:  # the gradient's and the logged stats' (each update alternates)
            self._scratch[chunk] = tuple(np.zeros((K, chunk), np.float32) for _ in range(3))
        send, recv, out = self._scratch[chunk]
        send.reshape(-1)[:n] = a.reshape(-1)
        self.comm.Alltoall(send, recv)  # recv[q] = rank q's slice `rank`
        part = recv[0].copy()
        for q in range(1, K):
            part += recv[q]
        part /= np.float32(K)
        self.comm.Allgather(part, out)
        self.reduce_seconds += time.perf_counter() - s
        return out.reshape(-1)[:n].reshape(a.shape).copy()

    def gather(self, obj) -> list:
        return self.comm.allgather(obj)

    def any(self, flag: bool) -> bool:
        return bool(self.comm.allreduce(int(bool(flag)), op=self.MPI.MAX))

    def barrier(self):
        self.comm.Barrier()

    def broadcast(self, a: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(a)
        self.comm.Bcast(a, root=0)
        return a

    def share(self, obj):
        return self.comm.bcast(obj, root=0)

    def check_identical(self, what: str, a: np.ndarray):
        """Raise DistributedError naming the ranks whose `a` differs from rank 0's."""
        digest = hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=16).hexdigest()
        digests = self.comm.allgather(digest)
        bad = [r for r, d in enumerate(digests) if d != digests[0]]
        if bad:
            raise DistributedError(
                f"{what} differ across ranks: rank{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))} "
                f"hold{'' if len(bad) > 1 else 's'} other bits than rank 0 (checksums {digests}). Every rank must "
                f"compute the same update: run all ranks on the same kind of adapter (the same GPU model and "
                f"driver), or pin the same kernel variants with --kernels")

    def abort(self, code: int = 1):
        sys.stdout.flush()
        sys.stderr.flush()
        self.comm.Abort(code)

    def describe(self) -> str:
        ranks = ", ".join(f"{r}: pid {pid} on {host}" for r, (host, pid) in enumerate(self.hosts))
        return f"{self.size} ranks ({ranks})"


class RootChoices:
    """The kernel chooser of a data-parallel rank: every rank runs the variants rank 0's tuner chose
    (timed there or read from its cache), since two ranks that time the candidates may pick different
    ones, and different variants round differently. Every rank builds the same plans in the same
    order, so each choice is one broadcast."""

    def __init__(self, tuner, world: World):
        self.tuner, self.world = tuner, world

    def choose(self, family, shape, bench):
        choice = self.tuner.choose(family, shape, bench) if self.world.is_root else None
        return family.parse(self.world.share(None if choice is None else str(choice)))

    def summary(self) -> str:
        return self.tuner.summary()


def connect() -> World:
    """The World of this process: MPI's when a launcher started several ranks, else one process."""
    return MpiWorld() if launched_size() > 1 else World()


def split_config(cfg: dict, size: int) -> dict:
    """The per-rank share of `cfg` ([vec] total_agents and [train] minibatch_size divided by `size`);
    a config that does not split evenly is refused with the values that would."""
    if size == 1:
        return cfg
    v, t = cfg["vec"], cfg["train"]
    agents, mb, T = v["total_agents"], t["minibatch_size"], t["horizon"]
    errors = []
    if agents % size:
        fit = [n for n in (agents - agents % size, agents - agents % size + size) if n > 0]
        errors.append(f"vec.total_agents ({agents}) must split evenly over {size} ranks: "
                      f"try {' or '.join(map(str, fit))}")
    if mb % (size * T):
        step = size * T
        fit = [n for n in (mb - mb % step, mb - mb % step + step) if n > 0]
        errors.append(f"train.minibatch_size ({mb}) must split over {size} ranks into whole horizons "
                      f"({size} × train.horizon {T} = {step}): try {' or '.join(map(str, fit))}")
    if errors:
        raise DistributedError("this config cannot be split over the ranks:\n  " + "\n  ".join(errors))
    local = {k: dict(s) for k, s in cfg.items()}
    local["vec"]["total_agents"] = agents // size
    local["train"]["minibatch_size"] = mb // size
    return local
