"""``sequential`` (exact under its own name) and ``eager_or_die`` (exact, or an error)."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from funsor_core.testing import assert_close, random_tensor
from interpretations import eager_or_die, sequential


def test_sequential_evaluates_like_exact():
    a = random_tensor({"i": Bint[2], "j": Bint[3]})
    with sequential:
        result = a.reduce(ops.logaddexp, "j")
    assert_close(result.data, np.log(np.exp(a.data).sum(1)))
    assert sequential.chain()[:2] == ["sequential", "exact"]


def _x():
    return fc.Variable("x", Real)


@pytest.mark.parametrize("make, expected", [
    (lambda: fc.Number(1.0) + fc.Number(2.0), 3.0),
    (lambda: fc.Number(1.0).log(), 0.0),
    (lambda: fc.Stack("t", (fc.Number(1.0), fc.Number(2.0))).reduce(ops.add, "t"), 3.0),
    (lambda: _x()(x=2.0) * 2, 4.0),  # substitution first, then a number
])
def test_eager_or_die_evaluates(make, expected):
    with eager_or_die:
        assert float(make().data) == expected


@pytest.mark.parametrize("make, kind", [
    (lambda: _x().log(), "Unary"),
    (lambda: fc.Number(1.0) / _x(), "Binary"),
    (lambda: _x() ** fc.Number(2.0), "Binary"),
    # a Stack reduced over its index folds its parts, and the fold is what stays lazy
    (lambda: fc.Stack("t", (fc.Number(1.0), _x())).reduce(ops.logaddexp, "t"), "Binary"),
])
def test_eager_or_die_raises_on_lazy_terms(make, kind):
    with eager_or_die:
        with pytest.raises(NotImplementedError, match=f"no rule evaluates {kind}"):
            make()


def test_eager_or_die_builds_free_variables():
    with eager_or_die:
        assert _x() is fc.Variable("x", Real)
    assert eager_or_die.chain() == ["eager_or_die", "exact", "lazy", "die", "reflect"]
