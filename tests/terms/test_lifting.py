"""funsor_core.terms.lifting: ``@symbolic`` builds the term its body describes.

Oracle: the same formula computed by hand in numpy at the substituted values.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc


def test_symbolic_from_hints_is_the_body_as_a_term():
    @fc.symbolic
    def categorical(probs: fc.Reals[4], value: fc.Bint[4]):
        return probs[value].log()

    assert tuple(categorical.inputs) == ("probs", "value")
    assert categorical.output == fc.Real
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    actual = categorical(probs=fc.Tensor(probs), value=2)
    np.testing.assert_allclose(actual.data, np.log(probs[2]), rtol=1e-15)


def test_symbolic_with_positional_domains_and_a_return_hint():
    @fc.symbolic(fc.Real, fc.Real)
    def scaled(y, x):
        return x * 2.0 + y

    # Parameter order, not the body's order of appearance.
    assert tuple(scaled.inputs) == ("y", "x")
    np.testing.assert_allclose(scaled(y=1.0, x=3.0).data, 7.0)

    @fc.symbolic
    def constant(x: fc.Real) -> fc.Real:
        return 1.5

    assert isinstance(constant, fc.Number) and constant.data == 1.5


def test_symbolic_errors_name_the_problem():
    with pytest.raises(TypeError, match=r"lacks hints for \['y'\]"):
        @fc.symbolic
        def f(x: fc.Real, y):
            return x

    with pytest.raises(TypeError, match="1 domain.*2 parameter"):
        @fc.symbolic(fc.Real)
        def g(x, y):
            return x

    with pytest.raises(TypeError, match="must be domains"):
        fc.symbolic(3, fc.Real)
