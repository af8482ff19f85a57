"""Bitwise ops of a Real Tensor of bool or int data keep the integers (as funsor's do), so
they chain: ``(x & y) & y`` was a TypeError after the first ``&`` gave float data."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from tests.backend_values import as_backend_array

X = np.array([[True, False, True], [False, True, True]])
Y = np.array([True, False, True])
IJ, J = {"i": Bint[2], "j": Bint[3]}, {"j": Bint[3]}


@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_bool_masks_chain_through_bitwise_ops(name):
    pytest.importorskip(name)
    fc.set_backend(name)
    try:
        x = fc.Tensor(as_backend_array(X, name), IJ)
        y = fc.Tensor(as_backend_array(Y, name), J)
        for got, want in [(ops.and_(ops.and_(x, y), y), X & Y & Y),
                          ((x | y) ^ y, (X | Y) ^ Y), (~(x & y), ~(X & Y))]:
            assert got.output == fc.Real
            np.testing.assert_array_equal(np.asarray(got.data), want)
        # arithmetic of the same data is still real numbers
        np.testing.assert_array_equal(np.asarray((x + y).data), X.astype(float) + Y)
    finally:
        fc.set_backend("numpy")


def test_int_data_bitwise_ops_stay_integers():
    a = np.array([5, 3, 12], np.int16)
    t = fc.Tensor(a, J)
    np.testing.assert_array_equal((t & fc.Tensor(np.array([4, 1, 8], np.int16), J)).data,
                                  a & np.array([4, 1, 8], np.int16))
    assert np.asarray((t & t).data).dtype.kind == "i"
