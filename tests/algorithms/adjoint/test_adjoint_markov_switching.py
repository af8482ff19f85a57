"""The adjoint through a switching ``MarkovProduct`` (an SLDS: a discrete switch pair and a
Gaussian state pair in one step), run on the tape as its T steps in order: the pair marginals
(mixtures, evaluated at points) against a hand-written Kalman filter and Rauch-Tung-Striebel
smoother in numpy run on every switch path, weighted by each path's evidence; on every
backend and under ``jax.jit``; and under ``moment_matching``. (Split from
``test_adjoint_markov.py``, which is near the house's file-length limit.)"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import forward_backward
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy, moment_matching
from tests.interpretations.test_moment_matching import STEP, _kalman_update, _slds, _slds_factors


def _np(x):
    return np.asarray(ops.to_numpy(x))


def _smoothed_path(p, path):
    """Kalman filter and RTS smoother along one switch path: (log evidence with the path's
    prior, smoothed means, covariances, and cross-covariances Cov(x_t, x_{t+1}))."""
    T = len(p["y"])
    ms, Ps, preds = [], [], []
    total = np.log(p["pi0"][path[0]])
    m, P = p["m0"], p["P0"]
    for t, s in enumerate(path):
        if t:
            total += np.log(p["trans"][path[t - 1], s])
            m, P = p["A"][s] @ m, p["A"][s] @ P @ p["A"][s].T + p["Q"][s]
            preds.append(P)
        m, P, ll = _kalman_update(m, P, p["y"][t], p["C"], p["R"])
        total += ll
        ms.append(m)
        Ps.append(P)
    means, covs, cross = [ms[-1]], [Ps[-1]], []
    for t in range(T - 2, -1, -1):
        J = Ps[t] @ p["A"][path[t + 1]].T @ np.linalg.inv(preds[t])
        cross.insert(0, J @ covs[0])
        means.insert(0, ms[t] + J @ (means[0] - p["A"][path[t + 1]] @ ms[t]))
        covs.insert(0, Ps[t] + J @ (covs[0] - preds[t]) @ J.T)
    return total, means, covs, cross


def _pair_density(p, v1, v2):
    """log p(x_t = v1, x_{t+1} = v2, s_t, s_{t+1} | y) over (t, s_t, s_{t+1}), by enumeration
    of the switch paths."""
    T, K = len(p["y"]), len(p["pi0"])
    runs = [(path, _smoothed_path(p, path)) for path in itertools.product(range(K), repeat=T)]
    log_z = logsumexp([r[1][0] for r in runs])
    out = np.full((T - 1, K, K), -np.inf)
    v = np.concatenate([v1, v2])
    for path, (total, means, covs, cross) in runs:
        for t in range(T - 1):
            cov = np.block([[covs[t], cross[t]], [cross[t].T, covs[t + 1]]])
            mean = np.concatenate([means[t], means[t + 1]])
            lp = total - log_z + multivariate_normal(mean, cov).logpdf(v)
            out[t, path[t], path[t + 1]] = np.logaddexp(out[t, path[t], path[t + 1]], lp)
    return log_z, out


def _root(init, trans):
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, trans, "time", STEP)
        return (init + mp).reduce(ops.logaddexp, frozenset(mp.inputs) | frozenset(init.inputs))


def _pair_at(p, backend, v1, v2):
    init, trans = _slds_factors(p, backend)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, _root(init, trans))
    at = {"x_prev": fc.numeric_array(v1), "x_curr": fc.numeric_array(v2)}
    pair = fc.reinterpret((adj[trans] + trans - log_z)(**at))
    return log_z.data, pair.align(("time", "s_prev", "s_curr")).data


V1, V2 = np.array([0.3, -0.2]), np.array([0.1, 0.4])


# jax runs under jit (below): eager jax compiles each Gaussian op per shape (~9 s here), and
# the house plan has jax tests jit what they can.
@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_switching_markov_product_marginals_by_enumeration(backend_name):
    # Was: NotImplementedError from the adjoint (a chain with a discrete and a real pair).
    pytest.importorskip(backend_name)
    fc.set_backend(backend_name)
    try:
        p = _slds(seed=0, T=4, K=2, d=2, obs_dim=1)
        log_z, pair = _pair_at(p, backend_name, V1, V2)
    finally:
        fc.set_backend("numpy")
    expected_z, expected = _pair_density(p, V1, V2)
    assert np.allclose(_np(log_z), expected_z)
    assert np.allclose(_np(pair), expected)


def test_switching_markov_product_marginals_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        p = _slds(seed=1, T=3, K=2, d=1, obs_dim=1)
        v1, v2 = np.array([0.5]), np.array([-0.3])
        fn = jax.jit(lambda y: _pair_at(dict(p, y=y), "jax", v1, v2))
        log_z, pair = fn(jax.numpy.asarray(p["y"]))
        expected_z, expected = _pair_density(p, v1, v2)
        assert np.allclose(_np(log_z), expected_z) and np.allclose(_np(pair), expected)
    finally:
        fc.set_backend("numpy")


def test_switching_markov_product_under_moment_matching():
    # The forward steps collapse each mixture by matching moments; a backward message (a
    # likelihood, no density) cannot be collapsed: with one step nothing is collapsed and the
    # marginals are exact; with more, the adjoint raises naming the chain (was: a
    # NotImplementedError for every switching chain, naming no reason).
    p = _slds(seed=2, T=2, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with moment_matching:
        log_z, adj = forward_backward(ops.logaddexp, ops.add, _root(init, trans))
        pair = (adj[trans] + trans - log_z)(x_prev=V1, x_curr=V2)
    expected_z, expected = _pair_density(p, V1, V2)
    assert np.allclose(log_z.data, expected_z)
    assert np.allclose(pair.align(("time", "s_prev", "s_curr")).data, expected)
    init, trans = _slds_factors(_slds(seed=2, T=4, K=2, d=2, obs_dim=1), "numpy")
    with moment_matching, pytest.raises(NotImplementedError, match="switching MarkovProduct"):
        forward_backward(ops.logaddexp, ops.add, _root(init, trans))


def test_switching_markov_product_points_raise():
    # No MAP path for a chain with real states and switches: an error, not a silent adjoint
    # (the root's argmax of the switch mixture raises first, naming the mixture).
    from funsor_core.algorithms.adjoint import argmax_approximate
    p = _slds(seed=3, T=3, K=2, d=1, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with lazy:
        mp = MarkovProduct(ops.max, ops.add, trans, "time", STEP)
        root = (init + mp).reduce(ops.max, frozenset(mp.inputs) | frozenset(init.inputs))
    with argmax_approximate, pytest.raises(NotImplementedError):
        forward_backward(ops.max, ops.add, root)
