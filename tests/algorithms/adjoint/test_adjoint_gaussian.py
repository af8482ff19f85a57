"""The adjoint through Gaussians: marginals of a linear-Gaussian chain against a hand-written
Rauch-Tung-Striebel smoother in numpy, its MAP and posterior samples, a plated Gaussian model
and a mixed discrete-Gaussian model against numpy algebra on the joint."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import argmax_approximate, forward_backward
from funsor_core.engine.interpreter import reflect
from funsor_core.sum_product import sum_product


def _np(x):
    return np.asarray(ops.to_numpy(x))


def _arr(x):
    return fc.numeric_array(np.asarray(x, dtype=float))


def chain(seed: int, T: int = 6, d: int = 2):
    """A linear-Gaussian state space model and observations, as numpy arrays."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) * 0.6
    Q = np.diag(rng.uniform(0.2, 0.6, size=d))
    H = rng.normal(size=(d, d))
    R = np.diag(rng.uniform(0.3, 0.8, size=d))
    m0, P0 = rng.normal(size=d), np.eye(d)
    ys = rng.normal(size=(T, d))
    return A, Q, H, R, m0, P0, ys


def chain_factors(A, Q, H, R, m0, P0, ys):
    """log p(x_0) + sum_t log p(x_t | x_{t-1}) + sum_t log p(y_t | x_t) as Gaussians."""
    d = len(m0)
    li = np.linalg.inv(np.linalg.cholesky(Q))
    # x_t - A x_{t-1} ~ N(0, Q): white_vec 0 and prec_sqrt [-A' L^-T ; L^-T] over (x_{t-1}, x_t).
    trans_sqrt = np.concatenate([-A.T @ li.T, li.T], 0)
    ri = np.linalg.inv(R)
    factors = [fc.Gaussian(mean=_arr(m0), covariance=_arr(P0), inputs={"x0": fc.Reals[d]})]
    obs = []
    for t, y in enumerate(ys):
        if t:
            factors.append(fc.Gaussian(white_vec=_arr(np.zeros(d)), prec_sqrt=_arr(trans_sqrt),
                                       inputs={f"x{t - 1}": fc.Reals[d], f"x{t}": fc.Reals[d]}))
        obs.append(fc.Gaussian(info_vec=_arr(H.T @ ri @ y), precision=_arr(H.T @ ri @ H),
                               inputs={f"x{t}": fc.Reals[d]}))
    return factors + obs, obs


def rts_smoother(A, Q, H, R, m0, P0, ys):
    """Kalman filter and Rauch-Tung-Striebel smoother, by hand."""
    T, d = ys.shape
    filt_m, filt_P, pred_m, pred_P = [], [], [], []
    m, P = m0, P0
    for t in range(T):
        if t:
            m, P = A @ m, A @ P @ A.T + Q
        pred_m.append(m)
        pred_P.append(P)
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        m, P = m + K @ (ys[t] - H @ m), (np.eye(d) - K @ H) @ P
        filt_m.append(m)
        filt_P.append(P)
    means, covs = filt_m[:], filt_P[:]
    for t in range(T - 2, -1, -1):
        G = filt_P[t] @ A.T @ np.linalg.inv(pred_P[t + 1])
        means[t] = filt_m[t] + G @ (means[t + 1] - pred_m[t + 1])
        covs[t] = filt_P[t] + G @ (covs[t + 1] - pred_P[t + 1]) @ G.T
    return np.array(means), np.array(covs)


def _gaussian_of(term):
    terms = term.terms if isinstance(term, fc.Contraction) else (term,)
    (g,) = [t for t in terms if isinstance(t, fc.Gaussian)]
    return g


def _log_z_expr(factors, T):
    names = frozenset(f"x{t}" for t in range(T))
    with reflect:
        return sum_product(ops.logaddexp, ops.add, factors, names)


@pytest.mark.parametrize("seed", [0, 1])
def test_gaussian_chain_marginals_are_the_rts_smoother(backend, seed):
    args = chain(seed)
    T = len(args[-1])
    factors, obs = chain_factors(*args)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, _log_z_expr(factors, T))
    means, covs = rts_smoother(*args)
    for t in range(T):
        marginal = adj[obs[t]] + obs[t]  # unnormalized: its Gaussian part is the posterior
        others = frozenset(marginal.inputs) - {f"x{t}"}
        if others:
            marginal = marginal.reduce(ops.logaddexp, others)
        g = _gaussian_of(marginal)
        assert np.allclose(_np(g.mean), means[t])
        assert np.allclose(_np(g.covariance), covs[t])
        # and it integrates to the evidence
        assert np.allclose(_np(marginal.reduce(ops.logaddexp).data), _np(log_z.data))


def test_gaussian_chain_map_is_the_smoothed_mean():
    args = chain(3)
    T = len(args[-1])
    factors, obs = chain_factors(*args)
    means, _ = rts_smoother(*args)
    with reflect:
        expr = sum_product(ops.max, ops.add, factors, frozenset(f"x{t}" for t in range(T)))
    with argmax_approximate:
        _, adj = forward_backward(ops.max, ops.add, expr)
    for t in range(T):
        point = fc.extract_samples(adj[obs[t]])[f"x{t}"]
        assert np.allclose(_np(point.data), means[t])


def test_gaussian_chain_posterior_samples_match_the_smoother():
    args = chain(4, T=4)
    T = len(args[-1])
    factors, obs = chain_factors(*args)
    means, covs = rts_smoother(*args)
    n = 20000
    from funsor_core.algorithms.adjoint import PosteriorSample
    with PosteriorSample(rng_key=0, particle=fc.Bint[n]) as sampler:
        _, adj = forward_backward(ops.logaddexp, ops.add, _log_z_expr(factors, T),
                                  batch_vars=sampler.sample_vars)
    draws = [_np(fc.extract_samples(adj[obs[t]])[f"x{t}"].align(("particle",)).data)
             for t in range(T)]
    for t in range(T):
        se = np.sqrt(np.diag(covs[t]) / n)
        assert (np.abs(draws[t].mean(0) - means[t]) < 5 * se).all()
        assert np.allclose(np.cov(draws[t].T), covs[t], atol=0.05)
    # Joint, not only marginal: the lag-one cross-covariance of the smoother.
    joint = np.cov(np.concatenate([draws[0], draws[1]], 1).T)
    A, Q, H, R, m0, P0, ys = args
    filt_P0 = np.linalg.inv(np.linalg.inv(P0) + H.T @ np.linalg.inv(R) @ H)
    G = filt_P0 @ A.T @ np.linalg.inv(A @ filt_P0 @ A.T + Q)
    assert np.allclose(joint[:2, 2:], G @ covs[1], atol=0.05)


def test_plated_gaussian_marginals_vs_the_flat_joint():
    # A global mean a, locals b_i ~ N(a, 1) in a plate of 3, observations of each b_i.
    rng = np.random.default_rng(5)
    n, obs = 3, rng.normal(size=3)
    prior = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"a": fc.Real})
    local = fc.Gaussian(white_vec=np.zeros((n, 1)),
                        prec_sqrt=np.tile(np.array([[-1.0], [1.0]]), (n, 1, 1)),
                        inputs={"i": fc.Bint[n], "a": fc.Real, "b": fc.Real})
    like = fc.Gaussian(mean=obs[:, None], covariance=np.tile(np.eye(1) * 0.5, (n, 1, 1)),
                       inputs={"i": fc.Bint[n], "b": fc.Real})
    with reflect:
        expr = sum_product(ops.logaddexp, ops.add, [prior, local, like], frozenset("abi"),
                           frozenset("i"))
    log_z, adj = forward_backward(ops.logaddexp, ops.add, expr)
    # The flat joint over (a, b_0, b_1, b_2): precision and information vector by hand.
    P = np.zeros((n + 1, n + 1))
    h = np.zeros(n + 1)
    P[0, 0] = 1.0
    for i in range(n):
        P[0, 0] += 1.0
        P[0, 1 + i] = P[1 + i, 0] = -1.0
        P[1 + i, 1 + i] = 1.0 + 2.0
        h[1 + i] = 2.0 * obs[i]
    cov = np.linalg.inv(P)
    mean = cov @ h
    marg_a = _gaussian_of(adj[prior] + prior)
    assert np.allclose(_np(marg_a.mean), mean[:1])
    assert np.allclose(_np(marg_a.covariance), cov[:1, :1])
    marg_b = adj[like] + like
    g = _gaussian_of(marg_b)
    assert np.allclose(_np(g.mean).reshape(-1), mean[1:])
    assert np.allclose(_np(g.covariance).reshape(-1), np.diag(cov)[1:])


def test_mixed_discrete_gaussian_marginals():
    # z ~ Cat(w); x | z ~ N(mu_z, s_z^2); an observation y = 0.7 of x with variance 0.2.
    w = np.array([0.3, 0.5, 0.2])
    mu, s2 = np.array([-1.0, 0.5, 2.0]), np.array([0.4, 1.0, 0.3])
    tz = fc.Tensor(np.log(w), {"z": fc.Bint[3]})
    gx = fc.Gaussian(mean=mu[:, None], covariance=s2[:, None, None],
                     inputs={"z": fc.Bint[3], "x": fc.Real})
    # gx is 0 at its mean: add the normal log normalizer, -0.5 log(2 pi s^2).
    gz = fc.Tensor(-0.5 * np.log(2 * np.pi * s2), {"z": fc.Bint[3]})
    obs = fc.Gaussian(mean=np.array([0.7]), covariance=np.array([[0.2]]), inputs={"x": fc.Real})
    with reflect:
        expr = sum_product(ops.logaddexp, ops.add, [tz, gz, gx, obs], frozenset("zx"))
    log_z, adj = forward_backward(ops.logaddexp, ops.add, expr)
    # By hand: p(z | y) ∝ w_z N(0.7; mu_z, s_z^2 + 0.2) (times a constant of obs).
    evid = w * np.exp(-0.5 * (0.7 - mu) ** 2 / (s2 + 0.2)) / np.sqrt(2 * np.pi * (s2 + 0.2))
    post_z = evid / evid.sum()
    actual = np.exp(_np((adj[tz] + tz - log_z).data))
    assert np.allclose(actual, post_z)
    # p(z, x | y) from the factor over (z, x): its mean of x is sum_z p(z|y) E[x | z, y]
    # (the marginal of x alone is a mixture of Gaussians, which stays lazy).
    cond_mean = (mu / s2 + 0.7 / 0.2) / (1 / s2 + 1 / 0.2)
    joint = adj[gx] + gx - log_z
    mean_x = fc.Integrate(joint, fc.Variable("x", fc.Real), frozenset({"x", "z"}))
    assert np.allclose(_np(mean_x.data), (post_z * cond_mean).sum())
    # and p(z | y) read off that same factor
    assert np.allclose(np.exp(_np(joint.reduce(ops.logaddexp, "x").data)), post_z)


def test_max_of_a_gaussian_over_some_inputs_vs_a_grid(backend):
    # max_x g(x, y) for a correlated Gaussian, against a dense grid search in numpy.
    mean, cov = np.array([1.0, 2.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    g = fc.Gaussian(mean=_arr(mean), covariance=_arr(cov), inputs={"x": fc.Real, "y": fc.Real})
    m = g.reduce(ops.max, "x")
    prec = np.linalg.inv(cov)
    xs = np.linspace(-10, 10, 20001)
    for y in [-1.0, 0.5, 3.0]:
        d = np.stack([xs - mean[0], np.full_like(xs, y - mean[1])], -1)
        grid = -0.5 * np.einsum("ni,ij,nj->n", d, prec, d)
        assert np.allclose(_np(m(y=y).data), grid.max(), atol=1e-6)
    assert np.allclose(_np(g.reduce(ops.max).data), 0.0)  # the mode's value
