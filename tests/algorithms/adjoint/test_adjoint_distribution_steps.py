"""The adjoint of a chain's step written lazily with distributions (``MultivariateNormal``):
the tape records the Gaussian algebra that the distributions evaluate to, and the terms as
written must still find their adjoints (they were a silent ``Number(-inf)``). Checked against
a hand-written Rauch-Tung-Striebel smoother in numpy, on numpy and torch."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import forward_backward
from funsor_core.distribution.continuous import MultivariateNormal
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy
from tests.algorithms.adjoint.test_adjoint_gaussian import chain, rts_smoother
from tests.algorithms.adjoint.test_adjoint_markov import _check_smoothed, _gaussian_of, _np

XP, XC = fc.Variable("x_prev", fc.Reals[2]), fc.Variable("x_curr", fc.Reals[2])


def _model(seed, T=4):
    """x_0 ~ N(m0, P0), x_{t+1} ~ N(A x_t, Q), y_t ~ N(H x_{t+1}, R), as lazy distributions."""
    A, Q, H, R, m0, P0, ys = chain(seed, T, 2)
    t = fc.numeric_array  # a backend array of a numpy one
    a, h = fc.Tensor(t(A.copy())), fc.Tensor(t(H.copy()))
    y = fc.Tensor(t(ys.copy()), {"t": fc.Bint[T]})
    chol = {k: fc.Tensor(t(np.linalg.cholesky(v))) for k, v in {"Q": Q, "R": R, "P0": P0}.items()}
    with lazy:
        trans = MultivariateNormal(a @ XP, scale_tril=chol["Q"], value=XC)
        obs = MultivariateNormal(h @ XC, scale_tril=chol["R"], value=y)
        step = trans + obs
        init = MultivariateNormal(fc.Tensor(t(m0.copy())), scale_tril=chol["P0"], value=XP)
        chain_term = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"})
        root = (init + chain_term).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    # x_1 is the first state observed: its prior is the prediction from x_0.
    means, covs = rts_smoother(A, Q, H, R, A @ m0, A @ P0 @ A.T + Q, ys)
    return (init, trans, obs, step, chain_term, root), means, covs


@pytest.mark.parametrize("backend", ["numpy", "torch"], indirect=True)
def test_lazy_distribution_step_adjoint_is_the_smoothed_pair(backend):
    (init, trans, obs, step, _, root), means, covs = _model(0)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    for term in (step, trans, obs, init):
        assert term in adj, term
    # The step times its adjoint is the pair marginal p(x_t, x_{t+1} | y); the observation
    # factor's, the smoothed marginal of x_{t+1}.
    pair = adj[step] + fc.reinterpret(step) - log_z
    _check_smoothed(pair, means, covs)
    g = _gaussian_of(adj[obs] + fc.reinterpret(obs) - log_z)
    assert np.allclose(_np(g.mean), means) and np.allclose(_np(g.covariance), covs)
    # The transition factor has no input t (one factor at every step): its adjoint sums the
    # pair marginals over t, here at a few points (numpy's logsumexp over t).
    rng = np.random.default_rng(0)
    for _ in range(3):
        point = {k: fc.Tensor(fc.numeric_array(rng.normal(size=2))) for k in ("x_prev", "x_curr")}
        got = (adj[trans] + fc.reinterpret(trans) - log_z)(**point)
        pairs = _np(pair(**point).data)
        assert np.allclose(_np(got.data), np.logaddexp.reduce(pairs))


def test_lazy_distribution_step_equals_the_eager_step():
    # The same model with the step evaluated before the chain is built: the same adjoint.
    (init, _, _, step, _, root), _, _ = _model(1, T=3)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    eager = fc.reinterpret(step)
    with lazy:
        eager_root = (init + MarkovProduct(ops.logaddexp, ops.add, eager, "t",
                                           {"x_prev": "x_curr"})
                      ).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    eager_log_z, eager_adj = forward_backward(ops.logaddexp, ops.add, eager_root)
    assert np.allclose(_np(log_z.data), _np(eager_log_z.data))
    lazy_pair = _gaussian_of(adj[step] + eager - log_z)
    eager_pair = _gaussian_of(eager_adj[eager] + eager - log_z)
    assert np.allclose(_np(lazy_pair.mean), _np(eager_pair.mean))
    assert np.allclose(_np(lazy_pair.covariance), _np(eager_pair.covariance))
