"""k-best and MAP scores keep a float64 model's digits on every backend (h114).

The scores are summed on the host in float64 and handed back as Python floats; on torch
``ops.new_array`` made them in torch's default dtype (float32) before casting to the
factors' float64, so ``infer_discrete(query="kbest")`` lost digits past the 8th (an error of
~1e-8 on scores of order 1). Oracle: the k best joint assignments by enumeration in numpy
float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from tests.backend_values import as_backend_array as _arr


def _brute_scores(prior, lik, k):
    n, _, kx = lik.shape
    scores = [prior[z] + sum(lik[i, z, xs[i]] for i in range(n))
              for z in range(prior.shape[0]) for xs in itertools.product(range(kx), repeat=n)]
    return np.sort(scores)[::-1][:k]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("plate_size", [1, 2])
def test_kbest_scores_float64_exact(backend, plate_size):
    pytest.importorskip(backend)
    rng = np.random.default_rng(plate_size)
    prior, lik = rng.normal(size=2), rng.normal(size=(plate_size, 2, 3))
    fc.set_backend(backend)
    try:
        factors = [fc.Tensor(_arr(prior, backend), {"z": fc.Bint[2]}),
                   fc.Tensor(_arr(lik, backend),
                             {"n": fc.Bint[plate_size], "z": fc.Bint[2], "x": fc.Bint[3]})]
        scores, _ = fc.infer_discrete(factors, plates={"n"}, query="kbest", k=3)
    finally:
        fc.set_backend("numpy")
    got = np.asarray(ops.to_numpy(scores.data))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, _brute_scores(prior, lik, 3), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("values", [[0.1], [1.0 / 3.0, -2.0 / 7.0]])
def test_torch_new_array_python_floats_in_float64(values):
    torch = pytest.importorskip("torch")
    out = ops.new_array(torch.zeros(1, dtype=torch.float64), values)
    assert out.dtype == torch.float64
    assert out.tolist() == values  # each Python float exactly, no round trip through float32
