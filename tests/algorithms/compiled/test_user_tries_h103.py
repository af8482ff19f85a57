"""A new user's tries of compiled elimination (h103):

- ``fc.functional(table, "x")``, ``fc.plan([array, ...], ...)`` and ``plan([arrays])`` with a
  raw array where a Tensor belongs failed with "'numpy.ndarray' object has no attribute
  'inputs'" (or 'output'); each is a ``TypeError`` naming the call and the fix now;
- ``program(thetaa=...)`` (a misspelt parameter) said only that ``theta`` is needed; it names
  the unknown one too.

Oracle: ``np.einsum`` of the same tables (the right calls still give its numbers).
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations import lazy

PU = np.array([0.2, 0.5, 0.3])
G = np.eye(2)[[0, 1, 1]]  # x = g(u)
PY = np.array([[0.1, 0.9, 0.4, 0.6], [0.7, 0.3, 0.2, 0.8]])


def _factors():
    return (fc.Tensor(PU, {"u": fc.Bint[3]}), fc.Tensor(G, {"u": fc.Bint[3], "x": fc.Bint[2]}),
            fc.Tensor(PY, {"x": fc.Bint[2], "y": fc.Bint[4]}))


def test_raw_arrays_are_refused_by_name():
    u, g, y = _factors()
    with pytest.raises(TypeError, match=r"functional\(term, out='x'\) takes a funsor.*ndarray"):
        fc.functional(G, "x")
    with pytest.raises(TypeError, match=r"plan\(\): factor 0 must be a Tensor .* ndarray"):
        fc.plan([PU, fc.functional(g, "x"), y], frozenset({"u", "x"}))
    p = fc.plan([u, fc.functional(g, "x"), y], frozenset({"u", "x"}))
    with pytest.raises(TypeError, match=r"this plan runs on factors .* position 1\), got ndarray"):
        p([u, G, y])
    expected = np.einsum("u,ux,xy->y", PU, G, PY)
    assert np.allclose(p([u, g, y]).data, expected, atol=1e-12)


def test_a_misspelt_parameter_is_named():
    u, g, y = _factors()
    theta = fc.Variable("theta", fc.Reals[4])["y"]
    with lazy:
        expr = (u * g * y * theta).reduce(ops.add, {"u", "x", "y"})
    program = fc.compile(expr, functional={"x": g})
    with pytest.raises(ValueError,
                       match=r"needs the parameters \['theta'\]; unknown: \['thetaa'\]"):
        program(thetaa=np.ones(4))
    w = np.array([1.0, 2.0, 3.0, 4.0])
    assert float(program(theta=w)) == pytest.approx(np.einsum("u,ux,xy,y->", PU, G, PY, w))
