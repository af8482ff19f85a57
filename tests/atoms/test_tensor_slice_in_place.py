"""Substituting forward Slices (the parallel scan's halves, funsor's ``t(i=Slice("u", ...))``)
slices the data in place, under the input's own name or a new one, beside Numbers and
renames; against numpy's basic slicing on numpy, torch and jax."""

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


@pytest.mark.parametrize("backend_name", ["numpy", "torch", "jax"])
def test_subs_renaming_slice_is_a_view(backend_name):
    # Random forward Slices under new names, with Numbers and Variables beside them: the
    # numbers of numpy's basic slicing, and on numpy a view of the data (no gather).
    pytest.importorskip(backend_name)
    rng = np.random.default_rng(0)
    data = rng.normal(size=(4, 6, 3))
    fc.set_backend(backend_name)
    try:
        t = fc.Tensor(fc.numeric_array(data), {"i": fc.Bint[4], "j": fc.Bint[6], "k": fc.Bint[3]})
        for _ in range(8):
            start, step = int(rng.integers(0, 6)), int(rng.integers(1, 4))
            n = int(rng.integers(1, (5 - start) // step + 2))
            i = int(rng.integers(0, 4))
            got = t(j=Slice("u", start, start + step * (n - 1) + 1, step, 6), i=i,
                    k=fc.Variable("m", fc.Bint[3]))
            assert dict(got.inputs) == {"u": fc.Bint[n], "m": fc.Bint[3]}
            expected = data[i, start:start + step * (n - 1) + 1:step]
            np.testing.assert_array_equal(np.asarray(got.data), expected)
            if backend_name == "numpy":
                assert np.shares_memory(got.data, t.data)
    finally:
        fc.set_backend("numpy")
