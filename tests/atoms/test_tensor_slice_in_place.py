"""Substituting forward Slices over an input's own name (the parallel scan's halves) slices
the data in place; against numpy's basic slicing, on numpy and torch, and a Slice that
renames its input still takes advanced indexing with the same numbers."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms.reshaping import Slice


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_subs_slice_in_place(backend_name):
    pytest.importorskip(backend_name)
    fc.set_backend(backend_name)
    try:
        data = np.arange(2 * 5 * 3, dtype=np.float64).reshape(2, 5, 3)
        t = fc.Tensor(fc.numeric_array(data),
                      {"i": fc.Bint[2], "j": fc.Bint[5], "k": fc.Bint[3]})
        odd = t(j=Slice("j", 1, 5, 2, 5))
        head = t(j=Slice("j", 0, 4, 1, 5), k=Slice("k", 0, 3, 2, 3))
        renamed = t(j=Slice("m", 1, 5, 2, 5))
    finally:
        fc.set_backend("numpy")
    assert odd.inputs == {"i": fc.Bint[2], "j": fc.Bint[2], "k": fc.Bint[3]}
    np.testing.assert_array_equal(np.asarray(odd.data), data[:, 1::2])
    np.testing.assert_array_equal(np.asarray(head.data), data[:, :4, ::2])
    np.testing.assert_array_equal(np.asarray(renamed.align(("i", "m", "k")).data),
                                  data[:, 1::2])
