"""Muon's two-pass norms (muon.wgsl) at first-pass chunk edges against float64 numpy: the global
gradient norm (and its clip) and the per-matrix Frobenius norms; bit-identical run to run."""
import numpy as np
import pytest

from golden.check import assert_close
from trainer.kernels.muon import CHUNK as MUON_CHUNK

WG = MUON_CHUNK // 16


def _norms(gpu, grads: np.ndarray, mats: list[tuple[int, int]]):
    n = grads.size
    g = gpu.array(grads, "grads")
    table = gpu.array(np.array([(o, s, 1, s) for o, s in mats], np.uint32), "mats")
    g_chunks = -(-n // MUON_CHUNK)
    m_chunks = -(-max(s for _, s in mats) // MUON_CHUNK)
    parts = gpu.buffer(4 * max(g_chunks, len(mats) * m_chunks), "partials")
    scalars, norms = gpu.buffer(16, "scalars"), gpu.buffer(4 * len(mats), "norms")
    prm = dict(n=n, count=len(mats), max_grad_norm=1.5, mu=0.95)
    plan = gpu.plan("norms")
    plan.add(gpu.kernel("muon.wgsl", "grad_norm_partial", WG_REDUCE=WG), g_chunks, dict(prm, chunks=g_chunks),
             grads=g.range(), partials=parts.range())
    plan.add(gpu.kernel("muon.wgsl", "grad_norm", WG_REDUCE=WG), 1, dict(prm, chunks=g_chunks),
             partials=parts.range(), scalars=scalars.range())
    plan.add(gpu.kernel("muon.wgsl", "matrix_norms_partial", WG_REDUCE=WG), (m_chunks, len(mats)),
             dict(prm, chunks=m_chunks), mats=table.range(), update=g.range(), partials=parts.range())
    plan.add(gpu.kernel("muon.wgsl", "matrix_norms", WG_REDUCE=WG), len(mats), dict(prm, chunks=m_chunks),
             partials=parts.range(), norms=norms.range())
    gpu.run(plan)
    return gpu.read(scalars), gpu.read(norms)


@pytest.mark.parametrize("n", [1, MUON_CHUNK - 1, MUON_CHUNK, MUON_CHUNK + 1, 3 * MUON_CHUNK + 5, 256 * MUON_CHUNK + 7])
def test_two_pass_norms_at_chunk_edges(gpu, n):
    rng = np.random.default_rng(n)
    grads = rng.standard_normal(n).astype(np.float32)
    cut = n // 3
    mats = [(0, max(1, cut)), (cut, n - cut)] if n > 2 else [(0, n)]
    sc, norms = _norms(gpu, grads, mats)
    g64 = grads.astype(np.float64)
    want = np.sqrt((g64 ** 2).sum())
    assert_close(f"grad_norm n={n}", sc[1:2], [want], "muon")
    assert_close(f"grad_norm clip n={n}", sc[0:1], [min(1.5 / (want + 1e-6), 1.0)], "muon")
    for i, (o, s) in enumerate(mats):
        assert_close(f"matrix_norms n={n} matrix {i} [{o}, {o + s})", norms[i:i + 1],
                     [np.sqrt((g64[o:o + s] ** 2).sum())], "muon")
    again = _norms(gpu, grads, mats)
    assert np.array_equal(sc, again[0]) and np.array_equal(norms, again[1])
