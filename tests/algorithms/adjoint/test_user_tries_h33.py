"""A new user's tries of ``forward_backward`` (h33): an expression built eagerly (the
``with lazy:`` forgotten) reaches the tape already evaluated, and every factor's adjoint
was the unit, ``-inf``: the marginal ``adj[f] + f - value`` came out ``-inf`` everywhere,
silently. Reading it now raises, saying to build the expression lazily; the lazy one gives
the brute-force marginals."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import NotOnTapeError
from interpretations import lazy


def _factors():
    rng = np.random.default_rng(5)
    a = np.log(rng.dirichlet(np.ones(3)))
    ab = np.log(rng.dirichlet(np.ones(2), 3))
    return a, ab, fc.Tensor(a, {"a": fc.Bint[3]}), fc.Tensor(ab, {"a": fc.Bint[3], "b": fc.Bint[2]})


def test_adjoint_of_a_factor_of_an_evaluated_expression_raises():
    a, ab, fa, fab = _factors()
    joint = np.exp(a[:, None] + ab)
    eager = (fa + fab).reduce(ops.logaddexp, {"a", "b"})
    value, adj = fc.forward_backward(ops.logaddexp, ops.add, eager)
    np.testing.assert_allclose(value.data, np.log(joint.sum()))  # the value is still right
    with pytest.raises(NotOnTapeError, match=r"already evaluated \(Tensor\).*`with lazy:`"):
        adj[fab]
    with pytest.raises(KeyError):  # a KeyError, as for any dict
        adj[fa]
    assert float(adj[eager].data) == 0.0  # the root's own adjoint: the unit of the product
    with lazy:
        expr = (fa + fab).reduce(ops.logaddexp, {"a", "b"})
    value, adj = fc.forward_backward(ops.logaddexp, ops.add, expr)
    marginal = fc.reinterpret(adj[fab] + fab - value).align(("a", "b"))
    np.testing.assert_allclose(np.exp(marginal.data), joint / joint.sum())
    # a term that is not in a lazy expression still gets the unit, as in funsor
    other = fc.Tensor(np.zeros(4), {"c": fc.Bint[4]})
    assert float(adj[other].data) == -np.inf


def test_adjoint_of_a_variable_expression_is_zero_elsewhere():
    # d x / d y = 0 and d x / d x = 1: a Variable given as the whole expression is no evaluated
    # expression that lost its factors, so the other adjoints keep the sum's unit (funsor's).
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    adj = fc.adjoint(ops.add, ops.mul, x)
    assert float(adj[x].data) == 1.0
    assert float(adj[y].data) == 0.0
    with lazy:
        f = x * y
    adj = fc.adjoint(ops.add, ops.mul, f)
    for xv, yv in [(0.3, 1.5), (-1.3, 0.2)]:
        np.testing.assert_allclose(float(adj[x](x=xv, y=yv).data), yv)  # d(xy)/dx = y
        np.testing.assert_allclose(float(adj[y](x=xv, y=yv).data), xv)
