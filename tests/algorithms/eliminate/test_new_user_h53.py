"""``sum_product(..., eliminate="ix")`` (h53) took "ix" as one name that no factor has and
silently eliminated nothing. funsor 0.4.8 refuses every str there (it asserts a frozenset), so
a str is now one name only when a factor has it, and otherwise a TypeError names the fix.
Oracle: numpy sums."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import partial_sum_product, sum_product

F = np.arange(1.0, 7.0).reshape(2, 3)


@pytest.mark.parametrize("fn", [sum_product, partial_sum_product])
def test_a_str_of_several_names_raises_naming_the_set_to_pass(fn):
    f = fc.Tensor(F, {"i": fc.Bint[2], "x": fc.Bint[3]})
    with pytest.raises(TypeError, match=r"eliminate='ix' is a str, but no factor has an input "
                                        r"'ix': eliminate takes a set of names, e\.g\. "
                                        r"eliminate=frozenset\(\{'i', 'x'\}\)"):
        fn(ops.add, ops.mul, [f], eliminate="ix")
    with pytest.raises(TypeError, match=r"plates='ix' is a str.*inputs are \['i', 'x'\]"):
        fn(ops.add, ops.mul, [f], frozenset("ix"), plates="ix")


def test_a_str_that_is_a_name_is_that_name():
    f = fc.Tensor(F, {"i": fc.Bint[2], "x": fc.Bint[3]})
    got = sum_product(ops.add, ops.mul, [f], eliminate="x")
    assert got.inputs == {"i": fc.Bint[2]}
    np.testing.assert_allclose(got.data, F.sum(1))
    got = sum_product(ops.add, ops.mul, [f], eliminate=frozenset("ix"), plates="i")
    np.testing.assert_allclose(got.data, F.sum(1).prod())
