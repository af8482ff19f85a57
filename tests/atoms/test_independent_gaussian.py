"""``Independent`` over a plate of a Gaussian in the plate's coordinate (h67): funsor 0.4.8
and we (before) left it lazy, so ``.reduce(ops.logaddexp, "x")`` of a product of Normals was
"still lazy" where a number was demanded. ``exact`` now unrolls it into one Gaussian in the
stacked coordinate ``x`` (sum over the members k of ``fn(i=k, x_i=x[k])``); oracles: scipy's
log densities, block-diagonal moments by hand, and the same value substituted eagerly."""

from __future__ import annotations

import numpy as np
import scipy.stats as st

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import MultivariateNormal, Normal

RNG = np.random.default_rng(0)
LOC = RNG.standard_normal((3, 2))
DIAG = np.array([0.5, 1.0, 1.5])[:, None, None] * np.eye(2)
TRIL = np.tril(0.3 * RNG.standard_normal((3, 2, 2)), -1) + DIAG


def _mvn_plate():
    loc = fc.Tensor(LOC, {"i": fc.Bint[3]})
    tril = fc.Tensor(TRIL, {"i": fc.Bint[3]})
    return fc.Independent(MultivariateNormal(loc, tril, fc.Variable("x_i", fc.Reals[2])),
                          "x", "i", "x_i")


def test_independent_mvn_is_a_gaussian_with_scipys_density_and_unit_mass():
    g = _mvn_plate()
    assert g.inputs == {"x": fc.Reals[3, 2]} and not isinstance(g, fc.Independent)
    v = RNG.standard_normal((3, 2))
    want = sum(st.multivariate_normal(LOC[k], TRIL[k] @ TRIL[k].T).logpdf(v[k]) for k in range(3))
    np.testing.assert_allclose(float(g(x=v).data), want, rtol=1e-10)
    np.testing.assert_allclose(float(g.reduce(ops.logaddexp, "x").data), 0.0, atol=1e-10)


def test_independent_mvn_moments_are_block_diagonal():
    m = fc.moments(_mvn_plate())
    np.testing.assert_allclose(m.mean["x"].data, LOC, rtol=1e-10)
    cov = np.zeros((6, 6))
    for k in range(3):
        cov[2 * k:2 * k + 2, 2 * k:2 * k + 2] = TRIL[k] @ TRIL[k].T
    np.testing.assert_allclose(m.covariance.data, cov, atol=1e-10)


def test_independent_with_a_shared_real_and_a_batch_input():
    # x_i ~ N(y + loc[b, i], s[i]): y is shared by the members, b a batch input kept.
    loc, s = RNG.standard_normal((2, 3)), np.array([0.5, 1.0, 2.0])
    fn = Normal(fc.Variable("y", fc.Real) + fc.Tensor(loc, {"b": fc.Bint[2], "i": fc.Bint[3]}),
                fc.Tensor(s, {"i": fc.Bint[3]}), fc.Variable("x_i", fc.Real))
    g = fc.Independent(fn, "x", "i", "x_i")
    assert dict(g.inputs) == {"b": fc.Bint[2], "y": fc.Real, "x": fc.Reals[3]}
    v, u = RNG.standard_normal(3), 0.7
    got = g(x=v, y=u).align(("b",)).data
    want = st.norm(u + loc, s).logpdf(v).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_independent_gaussian_on_torch():
    # The rule is structural (the same substitutions on any backend); torch here, since an
    # eager jax Gaussian compiles per shape (seconds) and proves nothing more.
    import torch

    fc.set_backend("torch")
    try:
        loc = fc.Tensor(torch.tensor(LOC[:, 0]), {"i": fc.Bint[3]})
        g = fc.Independent(Normal(loc, 1.0, fc.Variable("x_i", fc.Real)), "x", "i", "x_i")
        v = np.array([0.1, 0.2, 0.3])
        got = float(g(x=torch.tensor(v)).data)
        np.testing.assert_allclose(got, st.norm(LOC[:, 0], 1.0).logpdf(v).sum(), rtol=1e-10)
    finally:
        fc.set_backend("numpy")
