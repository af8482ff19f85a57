"""A careless new user's ``sum_product`` calls (h107): factors given as a generator failed with
"object of type 'generator' has no len()" (funsor 0.4.8 reads a generator twice and sums an
empty graph); a dict of factors was read as its keys ("factor 0 is a str"). Oracles: the
errors' text, and numpy brute force over every assignment for the iterables that work."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import partial_sum_product, sum_product


def _factors():
    rng = np.random.RandomState(0)
    a = fc.Tensor(rng.randn(2, 3), {"a": fc.Bint[2], "b": fc.Bint[3]})
    b = fc.Tensor(rng.randn(3, 4), {"b": fc.Bint[3], "c": fc.Bint[4]})
    return a, b


@pytest.mark.parametrize("make", [lambda fs: (f for f in fs), lambda fs: iter(fs),
                                  lambda fs: dict(enumerate(fs)).values()])
def test_any_iterable_of_factors_matches_brute_force(make):
    a, b = _factors()
    expected = np.logaddexp.reduce((a.data[:, :, None] + b.data[None]).ravel())
    out = sum_product(ops.logaddexp, ops.add, make((a, b)), frozenset("abc"))
    np.testing.assert_allclose(float(out.data), expected, rtol=1e-12)
    parts = partial_sum_product(ops.logaddexp, ops.add, make((a, b)), frozenset("a"))
    assert sorted(tuple(f.inputs) for f in parts) == [("b",), ("b", "c")]


@pytest.mark.parametrize("factors, text", [({"f": 1}, r"got dict; for a dict of factors pass "
                                                       r"list\(factors.values\(\)\)"),
                                           ("ab", "got str"), (3, "got int")])
def test_factors_that_are_no_collection_of_funsors(factors, text):
    with pytest.raises(TypeError, match=rf"sum_product: factors must be a list of funsors, {text}"):
        sum_product(ops.logaddexp, ops.add, factors, frozenset("a"))
