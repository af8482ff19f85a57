"""funsor_core.op_factory.make_op: an op from an annotated function.

Oracle: numpy's matmul on the same arrays, batch by batch.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.domains import Array, Dependent
from funsor_core.op_factory import make_op
from funsor_core.terms.product import Product, Tuple


def test_make_op_builds_terms_and_computes_on_arrays_and_tensors():
    # Made inside the test: an op made at import would register its domain rule before
    # tests/ops/test_domain_rules.py reads the library's own rules.
    @make_op
    def _matmul(x: Array, y: Array) -> Dependent[lambda x, y: fc.Reals[x.shape[0], y.shape[1]]]:
        return x @ y

    x, y = fc.Variable("x", fc.Reals[2, 3]), fc.Variable("y", fc.Reals[3, 4])
    term = _matmul(x, y)
    assert isinstance(term, fc.Binary) and term.output == fc.Reals[2, 4]
    rng = np.random.default_rng(0)
    xd, yd = rng.normal(size=(5, 2, 3)), rng.normal(size=(5, 3, 4))
    np.testing.assert_allclose(_matmul(xd, yd), np.matmul(xd, yd))
    batch = {"a": fc.Bint[5]}
    actual = _matmul(fc.Tensor(xd, batch), fc.Tensor(yd, batch))
    assert isinstance(actual, fc.Tensor) and actual.output == fc.Reals[2, 4]
    np.testing.assert_allclose(actual.data, np.stack([a @ b for a, b in zip(xd, yd)]))
    np.testing.assert_allclose(term(x=xd[0], y=yd[0]).data, xd[0] @ yd[0])


def test_make_op_checks_annotated_domains_and_refuses_what_is_not_built():
    @make_op
    def square(x: fc.Reals[2]) -> fc.Reals[2]:
        return x * x

    with pytest.raises(TypeError, match="argument 'x' is Reals\\[3\\].*says Reals\\[2\\]"):
        square(fc.Variable("v", fc.Reals[3]))
    with pytest.raises(NotImplementedError, match="3 arguments"):
        make_op(lambda a, b, c: a)
    with pytest.raises(TypeError, match="return annotation"):
        make_op(lambda a: a)


def test_make_op_with_a_product_output_gives_tuples():
    # Oracle: the same numpy slicing done by hand, batch by batch.
    @make_op
    def _split(x: fc.Reals[2, 3]) -> Product[fc.Reals[3], fc.Reals[3]]:
        return x[..., 0, :] * 2.0, x[..., 1, :] - 1.0

    term = _split(fc.Variable("x", fc.Reals[2, 3]))
    assert isinstance(term, fc.Unary) and term.output == Product[fc.Reals[3], fc.Reals[3]]
    xd = np.random.default_rng(1).normal(size=(4, 2, 3))
    lo, hi = _split(xd)
    np.testing.assert_allclose(lo, xd[:, 0] * 2.0)
    result = _split(fc.Tensor(xd, {"a": fc.Bint[4]}))
    assert isinstance(result, Tuple) and len(result) == 2
    for part, expected in zip(result, (xd[:, 0] * 2.0, xd[:, 1] - 1.0)):
        assert isinstance(part, fc.Tensor) and part.inputs == {"a": fc.Bint[4]}
        np.testing.assert_allclose(part.data, expected)
    np.testing.assert_allclose(term(x=xd[0])[1].data, xd[0, 1] - 1.0)  # lazy, then evaluated

    @make_op
    def _bad(x: fc.Reals[2]) -> Product[fc.Real, fc.Real]:
        return x[..., 0]

    with pytest.raises(TypeError, match="must return a tuple of 2 arrays"):
        _bad(fc.Tensor(np.zeros(2)))
