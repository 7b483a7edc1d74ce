"""Run by tests/test_mpi.py under `mpiexec -n 3`: World.average equals the rank-order sum divided by K,
bit for bit, on every rank, for sizes that do not split evenly over the ranks (1, 2, 3, 7) and the
default policy's gradient (250,368 floats); shapes are kept."""
import numpy as np
from trainer.distributed import connect
w = connect()
rng = np.random.default_rng(w.rank)
for n in (1, 2, 3, 7, 250368):
    a = rng.standard_normal(n).astype(np.float32)
    got = w.average(a)
    allv = w.gather(a)
    want = allv[0].copy()
    for x in allv[1:]: want += x
    want /= np.float32(w.size)
    assert got.tobytes() == want.tobytes(), n
    w.check_identical("avg", got)
m = rng.standard_normal((3, 9)).astype(np.float32)
assert w.average(m).shape == (3, 9)
print("ok", w.rank)
