"""A new user's tries of compiled elimination (h103):

- ``fc.functional(table, "x")``, ``fc.plan([array, ...], ...)`` and ``plan([arrays])`` with a
  raw array where a Tensor belongs failed with "'numpy.ndarray' object has no attribute
  'inputs'" (or 'output'); each is a ``TypeError`` naming the call and the fix now;
- ``program(thetaa=...)`` (a misspelt parameter) said only that ``theta`` is needed; it names
  the unknown one too;
- ``fc.compile`` of an HMM written as users write it, ``MarkovProduct(..., P + obs, ...)``,
  said "cannot compile the term Binary(...)" with no word of Markov products; it names the
  Markov product and what compiles (one parameter over (time, prev, curr)), and that form
  compiles to the forward algorithm's number.

Oracles: ``np.einsum`` of the same tables (the right calls still give its numbers), and the
forward algorithm in numpy for the HMM.
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


def test_a_markov_product_of_a_sum_names_what_compiles():
    K, T = 3, 5
    rng = np.random.default_rng(1)
    log_trans, log_obs = np.log(rng.dirichlet(np.ones(K), size=K)), rng.normal(size=(T, K))
    time = fc.Variable("t", fc.Bint[T])
    trans = fc.Variable("P", fc.Reals[K, K])["x", "y"]
    obs = fc.Tensor(log_obs, {"t": fc.Bint[T], "y": fc.Bint[K]})
    with lazy:
        expr = fc.MarkovProduct(ops.logaddexp, ops.add, trans + obs, time, {"x": "y"}).reduce(
            ops.logaddexp, frozenset({"x", "y"}))
    with pytest.raises(NotImplementedError, match=r"cannot compile MarkovProduct.* one "
                                                  r"parameter indexed by exactly \(time, prev"):
        fc.compile(expr)
    steps = fc.Variable("W", fc.Reals[T, K, K])["t", "x", "y"]
    with lazy:
        expr = fc.MarkovProduct(ops.logaddexp, ops.add, steps, time, {"x": "y"}).reduce(
            ops.logaddexp, frozenset({"x", "y"}))
    alpha = np.logaddexp.reduce(log_trans + log_obs[0][None], axis=0)
    for t in range(1, T):
        alpha = np.logaddexp.reduce(alpha[:, None] + log_trans + log_obs[t][None], axis=0)
    value = fc.compile(expr)(W=log_trans[None] + log_obs[:, None, :])
    assert float(value) == pytest.approx(np.logaddexp.reduce(alpha), abs=1e-10)
