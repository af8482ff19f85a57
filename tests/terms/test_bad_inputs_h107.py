"""A careless new user's output indexing (h107): ``t[0]`` on a funsor of output ``Real``
(meaning its first input entry) said only numpy's "too many indices for array: array is
0-dimensional". Oracles: the error's text, and numpy indexing for the indices that work."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc


def test_indexing_a_scalar_output_says_indexing_acts_on_the_output(backend):
    t = fc.Tensor([0.5, 1.5], {"i": fc.Bint[2]})
    with pytest.raises(IndexError, match=r"cannot index a funsor's output of shape \(\) by \(0,\)"
                                         r": too many indices.*substitute an input instead"):
        t[0]


def test_output_index_out_of_bounds_names_the_output_shape(backend):
    x = np.arange(6.0).reshape(2, 3)
    t = fc.Tensor(x.tolist(), {"i": fc.Bint[2]})
    with pytest.raises(IndexError, match=r"output of shape \(3,\) by \(5,\): index 5 is out of "
                                         "bounds"):
        t[5]
    np.testing.assert_array_equal(np.asarray(t[-1].data), x[:, -1])
    np.testing.assert_array_equal(np.asarray(t[1:].data), x[:, 1:])
