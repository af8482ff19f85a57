"""Integer Tensor data must fit the output Bint: checked on concrete arrays when the Tensor is
built (numpy, torch, eager jax), never read or clamped under ``jax.jit``. Oracle: the range
``0 .. n-1`` by hand, and numpy indexing."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError
from tests.backend_values import as_backend_array, to_numpy

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("data, bound", [([0, 7], 3), ([0, 7], 2), ([-1, 1], 2), (5, 5), (-1, 4)])
def test_out_of_range_data_raises_naming_the_bound(backend, data, bound):
    values = np.array(data)
    inputs = {"i": fc.Bint[2]} if values.ndim else {}
    with pytest.raises(DomainError, match=rf"does not fit its output Bint\[{bound}\] .* range "
                                          rf"from {values.min()} to {values.max()}"):
        fc.Tensor(as_backend_array(values), inputs, bound)
    with pytest.raises(DomainError, match=rf"output Bint\[{bound}\]"):  # a domain as the dtype
        fc.Tensor(as_backend_array(values), inputs, fc.Bint[bound])


def test_in_range_data_is_kept(backend):
    values = np.array([[0, 2], [1, 0]])
    t = fc.Tensor(as_backend_array(values), {"i": fc.Bint[2]}, 3)
    assert t.output.dtype == 3 and t.output.shape == (2,)
    np.testing.assert_array_equal(to_numpy(t.data), values)
    empty = fc.Tensor(as_backend_array(np.zeros((0,), dtype=int)), {"i": fc.Bint[0]}, 3)
    assert to_numpy(empty.data).shape == (0,)


def test_traced_data_is_neither_checked_nor_clamped():
    fc.set_backend("jax")
    try:
        out = jax.jit(lambda x: fc.Tensor(x, {"i": fc.Bint[2]}, 3).data)(np.array([0, 7]))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_array_equal(np.asarray(out), [0, 7])  # the values as given, not clamped
