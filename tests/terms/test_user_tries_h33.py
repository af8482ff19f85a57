"""A new user's tries of the core terms (h33): a Domain given as a Tensor's dtype must fit
the data, a mean over an empty Bint raises naming it, and the error for ``.data`` of a
recorded (lazy) term says how to evaluate it instead of blaming a missing rule."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.terms.inputs import DomainError
from interpretations import lazy


def test_a_domain_as_dtype_must_match_the_data_shape():
    data = np.arange(6.0).reshape(2, 3)
    # the full output, right: the same Tensor as dtype="real"; numpy indexing is the oracle
    t = fc.Tensor(data, {"i": fc.Bint[2]}, fc.Reals[3])
    assert t.output == fc.Reals[3] and t.dtype == "real"
    np.testing.assert_array_equal(t(i=1).data, data[1])
    assert fc.Tensor(np.array([2, 0]), {"i": fc.Bint[2]}, fc.Bint[3]).output == fc.Bint[3]
    # wrong: was silently accepted with the data's shape (Reals[2]) as the output
    with pytest.raises(DomainError, match=r"shape \(2,\) cannot have output Reals\[3\]"):
        fc.Tensor(np.ones(2), {}, fc.Reals[3])
    with pytest.raises(DomainError, match=r"after its 1 batch dims .* \(3,\), the output's "
                                          r"is \(\)"):
        fc.Tensor(data, {"i": fc.Bint[2]}, fc.Real)  # a known signature: the fast path
    with pytest.raises(DomainError, match=r"cannot have output Real"):
        fc.Tensor(data, {"i2": fc.Bint[2]}, fc.Real)  # a new signature: the full check


def test_mean_over_an_empty_domain_raises_and_other_reductions_are_their_units():
    empty = fc.Tensor(np.zeros(0), {"i": fc.Bint[0]})
    for op in (ops.mean, ops.var, ops.std):
        with pytest.raises(ValueError, match=r"over \['i'\]: Bint\[0\] has no values"):
            empty.reduce(op, "i")
    # the semiring reductions of nothing: numpy's reductions of an empty array
    x = np.zeros(0)
    assert float(empty.reduce(ops.add, "i").data) == x.sum()
    assert float(empty.reduce(ops.mul, "i").data) == x.prod()
    assert float(empty.reduce(ops.logaddexp, "i").data) == np.logaddexp.reduce(x)
    # a mean over a non-empty Bint next to an empty one still needs values of both
    f = fc.Tensor(np.zeros((3, 0)), {"j": fc.Bint[3], "i": fc.Bint[0]})
    np.testing.assert_array_equal(f.reduce(ops.mean, "j").data, np.zeros((3, 0)).mean(0))
    with pytest.raises(ValueError, match=r"over \['i'\]"):
        f.reduce(ops.mean, {"i", "j"})


def test_data_of_a_recorded_term_says_to_reinterpret():
    a = np.random.default_rng(0).standard_normal((2, 3))
    x = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]})
    y = fc.Tensor(a[0], {"j": fc.Bint[3]})
    with lazy:
        s = x + y
    with pytest.raises(NotImplementedError, match=r"recorded \(built under `with lazy:`.*"
                                                  r"fc.reinterpret\(term\)"):
        _ = s.data
    np.testing.assert_allclose(fc.reinterpret(s).data, a + a[0])  # the advice works
    # a term with no rule keeps the old explanation
    with pytest.raises(NotImplementedError, match=r"No rule of the active interpretations"):
        _ = ops.sigmoid(fc.Variable("v", fc.Real)).data
