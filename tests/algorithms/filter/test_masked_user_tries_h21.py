"""``windowed_filter(..., lengths=)`` with lengths outside ``0..T``: concrete ones raise, traced
ones (under ``jax.jit``) make their batch entry NaN, as ``markov_product(lengths=)`` does,
instead of being clamped. Oracle: the filter of each valid sequence alone on its steps."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from tests.algorithms.filter.test_masked import B, T, _kalman, _kalman_arrays
from tests.backend_values import as_backend_array

jax = pytest.importorskip("jax")
BAD = np.array([1, T + 2, 2, -1])  # entries 1 and 3 are outside 0..T


def _ragged(w, s, iw, i_s, lengths):
    trans, init = _kalman(w, s, iw, i_s)
    msg = windowed_filter(ops.logaddexp, ops.add, trans, "t", {"u": "v"}, init,
                          lengths=fc.Tensor(lengths, {"b": fc.Bint[B]}))  # real: any number
    m = fc.moments(msg)
    return ops.cat([m.log_mass.align(("b",)).data[:, None], m.mean["v"].align(("b",)).data], -1)


def _one(arrays, b, n):
    w, s, iw, i_s = arrays
    trans, init = _kalman(w[:n], s[:n], iw, i_s)
    m = fc.moments(windowed_filter(ops.logaddexp, ops.add, trans(b=b), "t", {"u": "v"}, init))
    return np.concatenate([[m.log_mass.data], m.mean["v"].data])


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_concrete_lengths_out_of_range_raise(backend):
    fc.set_backend(backend)
    try:
        arrays = [as_backend_array(a) for a in _kalman_arrays(2)]
        with pytest.raises(ValueError, match=r"windowed_filter: lengths must be integers in "
                                             r"0\.\.5 .*got \[ ?7 -1\]"):
            _ragged(*arrays, as_backend_array(BAD))
    finally:
        fc.set_backend("numpy")


def test_traced_lengths_out_of_range_give_nan_not_a_clamped_filter():
    arrays = _kalman_arrays(2)
    fc.set_backend("jax")
    try:
        actual = np.asarray(jax.jit(_ragged)(*arrays, BAD))
    finally:
        fc.set_backend("numpy")
    assert np.isnan(actual[[1, 3]]).all()
    for b in (0, 2):
        np.testing.assert_allclose(actual[b], _one(arrays, b, BAD[b]), rtol=1e-8)
