"""A new user's tries of plated ``sum_product`` (h40): a plate that is ``Bint[2]`` in one
factor and ``Bint[3]`` in another went unnoticed (each factor is product-reduced over it on
its own) and gave a number; ``infer_discrete`` gave marginals, or failed in a reshape for
``map``. Oracle: brute force over the plate and the variable."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import sum_product
from funsor_core.terms.inputs import DomainError

RNG = np.random.default_rng(0)
F1, F2 = RNG.normal(size=(2, 3)), RNG.normal(size=2)


def test_plate_domains_must_agree():
    f1 = fc.Tensor(F1, {"n": fc.Bint[2], "x": fc.Bint[3]})
    ok = fc.Tensor(F2, {"n": fc.Bint[2]})
    got = sum_product(ops.logaddexp, ops.add, [f1, ok], frozenset({"n", "x"}), frozenset({"n"}))
    np.testing.assert_allclose(got.data, (np.logaddexp.reduce(F1, 1) + F2).sum())
    bad = fc.Tensor(np.zeros(3), {"n": fc.Bint[3]})
    for fn in (lambda: sum_product(ops.logaddexp, ops.add, [f1, bad], frozenset({"n", "x"}),
                                   frozenset({"n"})),
               lambda: fc.infer_discrete([f1, bad], plates={"n"}, query="map")):
        with pytest.raises(DomainError, match=r"'n' is Bint\[2\] in factor 0 but Bint\[3\] in "
                                              r"factor 1"):
            fn()
