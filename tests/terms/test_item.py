"""``f.item()`` reads the one value of a funsor as ``float(f)`` does, and a funsor of several
values gets the error naming its inputs and the fix (numpy's "can only convert an array of
size 1" before). Oracle: the Python values of the arrays."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import randn


def test_item_of_one_value(backend):
    data = randn(1)
    f = fc.Tensor(data)
    assert f.item() == float(f) == float(np.asarray(data)[0])
    assert fc.Number(2, 3).item() == 2


def test_item_of_several_values_names_them():
    f = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    with pytest.raises(TypeError, match=r"\.item\(\) needs a funsor of one value.*'i': Bint\[2\]"
                                        r".*reduce or substitute"):
        f.item()
    # numpy's own .item() of several values raises ValueError: code catching it still works
    with pytest.raises(ValueError, match=r"\.item\(\) needs a funsor of one value"):
        f.item()
    assert f.reduce(ops.add).item() == 0.0
