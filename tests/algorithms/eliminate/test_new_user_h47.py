"""A new user's tries of a lazy plated ``sum_product`` (h47): factors of two backends that
meet in no single Contraction built without error, and the error naming both backends came
only at ``apply_optimizer``. The factors' backends are checked at the call."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import partial_sum_product, sum_product
from interpretations import lazy


@pytest.mark.parametrize("fn", [sum_product, partial_sum_product])
def test_lazy_plated_factors_of_two_backends_raise_at_the_call(fn):
    torch = pytest.importorskip("torch")
    f = fc.Tensor(np.ones((3, 2)), {"i": fc.Bint[3], "x": fc.Bint[2]})
    g = fc.Tensor(torch.ones(2, dtype=torch.float64), {"y": fc.Bint[2]})
    with lazy, pytest.raises(TypeError, match=r"factor 0 \(inputs \['i', 'x'\]\) holds numpy "
                                              r"arrays and factor 1 \(inputs \['y'\]\) holds "
                                              r"torch arrays"):
        fn(ops.logaddexp, ops.add, [f, g], frozenset({"i", "x", "y"}), frozenset({"i"}))


def test_one_backend_with_a_python_number_still_evaluates():
    # The check looks at arrays only: a Number factor combines with any backend.
    f = fc.Tensor(np.log(np.arange(1.0, 7.0).reshape(3, 2)), {"i": fc.Bint[3], "x": fc.Bint[2]})
    r = sum_product(ops.logaddexp, ops.add, [f, fc.Number(0.5)], frozenset({"i", "x"}),
                    frozenset({"i"}))
    expected = np.log(np.arange(1.0, 7.0).reshape(3, 2).sum(1)).sum() + 0.5
    np.testing.assert_allclose(r.data, expected, rtol=1e-12)
