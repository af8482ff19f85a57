"""moment_matching: collapsed mixtures against numpy moments, and switching linear dynamical
systems filtered with a window of exact switch states.

Oracles: the mixture's normalizer, mean and covariance computed in numpy from each
component's precision and information vector (``np.linalg.inv``); ``exact`` for a mixture of
one component; a numpy Kalman filter run on every one of the ``K^T`` switch paths (exact
enumeration); a numpy generalized pseudo-Bayes filter written from the textbook recursion
(per tuple of the last ``L`` switch states: predict, update, collapse the oldest).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from funsor_core.atoms.gaussian.algebra import split_gaussian_sum
from interpretations import exact, moment_matching


def _array(backend, x):
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x, dtype=jnp.float64)  # also a tracer, under jax.jit
    x = np.asarray(x, dtype=np.float64)
    if backend == "torch":
        import torch

        return torch.tensor(x)
    return x


def _run(backend, fn, *args):
    """``fn(*args)`` with numpy array arguments converted to the backend's; under
    ``jax.jit`` on jax (eager jax compiles every op: slow)."""
    if backend != "jax":
        return fn(*(_array(backend, a) for a in args))
    import jax

    return jax.jit(fn)(*(_array(backend, a) for a in args))


def _np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def _random_gaussian(rng, backend, batch: dict, dim: int, rank: int | None = None):
    rank = dim + 1 if rank is None else rank
    shape = tuple(d.size for d in batch.values())
    white_vec = rng.normal(size=shape + (rank,))
    prec_sqrt = rng.normal(size=shape + (dim, rank))
    inputs = {**batch, "x": fc.Reals[dim]}
    return fc.Gaussian(white_vec=_array(backend, white_vec), prec_sqrt=_array(backend, prec_sqrt),
                       inputs=inputs), white_vec, prec_sqrt


def _numpy_moments(white_vec, prec_sqrt, logits):
    """Mass, mean and covariance of the mixture over the last batch axis, by hand."""
    precision = prec_sqrt @ np.swapaxes(prec_sqrt, -1, -2)
    info = (prec_sqrt @ white_vec[..., None])[..., 0]
    cov = np.linalg.inv(precision)
    mean = (cov @ info[..., None])[..., 0]
    dim = precision.shape[-1]
    # log ∫ exp(-0.5 x'Px + i'x - 0.5 w'w) dx = 0.5 (i'P^{-1}i - w'w + d log 2π - log|P|)
    log_z = 0.5 * ((info * mean).sum(-1) - (white_vec ** 2).sum(-1) + dim * np.log(2 * np.pi)
                   - np.linalg.slogdet(precision)[1])
    log_mass = logits + log_z
    total = logsumexp(log_mass, -1)
    p = np.exp(log_mass - total[..., None])
    mix_mean = (p[..., None] * mean).sum(-2)
    diff = mean - mix_mean[..., None, :]
    mix_cov = (p[..., None, None] * (cov + diff[..., :, None] * diff[..., None, :])).sum(-3)
    return total, mix_mean, mix_cov


def _gaussian_moments(result, arrays=False):
    """``(log mass, mean, covariance)`` of a collapsed ``Gaussian + Tensor`` (numpy arrays,
    or the backend's with ``arrays``)."""
    (g,), dense = split_gaussian_sum(result)
    mass = g.log_normalizer
    for t in dense:
        mass = mass + t
    out = (mass.data, g.mean, g.covariance)
    return out if arrays else tuple(_np(x) for x in out)


@pytest.mark.parametrize("batch_size", [None, 3])
def test_collapse_matches_numpy_moments(backend, batch_size):
    rng = np.random.default_rng(0)
    batch = {"b": fc.Bint[batch_size]} if batch_size else {}
    inputs = {**batch, "i": fc.Bint[4]}
    _, w, s = _random_gaussian(rng, "numpy", inputs, 2)
    logits = rng.normal(size=tuple(d.size for d in inputs.values()))

    def collapse(w, s, logits):
        g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={**inputs, "x": fc.Reals[2]})
        with moment_matching:
            result = (fc.Tensor(logits, inputs) + g).reduce(ops.logaddexp, "i")
        assert set(result.inputs) == set(batch) | {"x"}
        return _gaussian_moments(result, arrays=True)

    mass, mean, cov = (_np(x) for x in _run(backend, collapse, w, s, logits))
    expected = _numpy_moments(w, s, logits)
    for actual, want in zip((mass, mean, cov), expected):
        np.testing.assert_allclose(actual, want, rtol=1e-8, atol=1e-8)


def test_one_component_equals_exact(backend):
    rng = np.random.default_rng(1)
    inputs = {"i": fc.Bint[1], "b": fc.Bint[2]}
    _, w, s = _random_gaussian(rng, "numpy", inputs, 3)
    logits = rng.normal(size=(1, 2))

    def both(w, s, logits):
        g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={**inputs, "x": fc.Reals[3]})
        t = fc.Tensor(logits, inputs)
        with moment_matching:
            actual = (g + t).reduce(ops.logaddexp, "i")
        expected = (g + t)(i=0)
        return _gaussian_moments(actual, True), _gaussian_moments(expected, True)

    actual, expected = _run(backend, both, w, s, logits)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(_np(a), _np(e), rtol=1e-8, atol=1e-10)


def test_reals_and_names_of_the_tensor_alone_are_summed_exactly():
    # logaddexp over {i (the Gaussian's), y (real), k (only the Tensor's)}: y is integrated
    # and k summed exactly, then the mixture over i is collapsed.
    rng = np.random.default_rng(2)
    w = rng.normal(size=(3, 4))
    s = rng.normal(size=(3, 3, 4))
    g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={"i": fc.Bint[3], "x": fc.Reals[2],
                                                      "y": fc.Real})
    logits = rng.normal(size=(3, 5))
    t = fc.Tensor(logits, {"i": fc.Bint[3], "k": fc.Bint[5]})
    with moment_matching:
        result = (g + t).reduce(ops.logaddexp, {"i", "y", "k"})
    assert set(result.inputs) == {"x"}
    # the marginal of x per component, by hand: precision P_xx - P_xy P_yy^-1 P_yx
    precision = s @ np.swapaxes(s, -1, -2)
    info = (s @ w[..., None])[..., 0]
    p_xx, p_xy, p_yy = precision[:, :2, :2], precision[:, :2, 2:], precision[:, 2:, 2:]
    marg_prec = p_xx - p_xy @ np.linalg.inv(p_yy) @ np.swapaxes(p_xy, -1, -2)
    marg_info = info[:, :2] - (p_xy @ np.linalg.inv(p_yy) @ info[:, 2:, None])[..., 0]
    cov = np.linalg.inv(precision)
    mean = (cov @ info[..., None])[..., 0]
    log_z = 0.5 * ((info * mean).sum(-1) - (w ** 2).sum(-1) + 3 * np.log(2 * np.pi)
                   - np.linalg.slogdet(precision)[1])
    marg_cov = np.linalg.inv(marg_prec)
    assert np.allclose((marg_cov @ marg_info[..., None])[..., 0], mean[:, :2])
    log_mass = logsumexp(logits, -1) + log_z
    p = np.exp(log_mass - logsumexp(log_mass))
    mix_mean = p @ mean[:, :2]
    diff = mean[:, :2] - mix_mean
    mix_cov = (p[:, None, None] * (marg_cov + diff[:, :, None] * diff[:, None, :])).sum(0)
    mass, mean_a, cov_a = _gaussian_moments(result)
    np.testing.assert_allclose(mass, logsumexp(log_mass), rtol=1e-10)
    np.testing.assert_allclose(mean_a, mix_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(cov_a, mix_cov, rtol=1e-8, atol=1e-10)


def test_gaussians_in_other_layouts_collapse_as_their_joint(backend):
    # Two Gaussians whose Bint inputs come in different orders and whose real inputs land on
    # non-contiguous rows of the joint (g1 over z and x, g2 over y), weights from two Tensors
    # (one with a name only it has, summed exactly) and a Number: the collapse aligns each
    # straight into one layout. Oracle: numpy moments of the joint over (x, y, z).
    rng = np.random.default_rng(7)
    w1, s1 = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 3, 4))  # (b, i), z[2] + x
    w2, s2 = rng.normal(size=(3, 2, 2)), rng.normal(size=(3, 2, 1, 2))  # (i, b), y
    l1, l2 = rng.normal(size=(3,)), rng.normal(size=(4, 3, 2))  # (i,), (k, i, b)

    def collapse(w1, s1, w2, s2, l1, l2):
        g1 = fc.Gaussian(white_vec=w1, prec_sqrt=s1, inputs={
            "b": fc.Bint[2], "i": fc.Bint[3], "z": fc.Reals[2], "x": fc.Real})
        g2 = fc.Gaussian(white_vec=w2, prec_sqrt=s2, inputs={
            "i": fc.Bint[3], "b": fc.Bint[2], "y": fc.Real})
        t1 = fc.Tensor(l1, {"i": fc.Bint[3]})
        t2 = fc.Tensor(l2, {"k": fc.Bint[4], "i": fc.Bint[3], "b": fc.Bint[2]})
        with moment_matching:
            result = fc.Contraction(ops.logaddexp, ops.add, frozenset({"i", "k"}),
                                    (g1, t1, g2, t2, fc.Number(0.5)))
        assert set(result.inputs) == {"b", "x", "y", "z"}
        mass, mean, cov = _gaussian_moments(result, arrays=True)
        start, at = {}, 0  # the result's coordinates, put in the order x, y, z[0], z[1]
        for k, d in result.inputs.items():
            if d.dtype == "real":
                start[k], at = at, at + d.num_elements
        perm = [start["x"], start["y"], start["z"], start["z"] + 1]
        return mass, mean[..., perm], cov[..., perm, :][..., perm]

    mass, mean, cov = (_np(x) for x in _run(backend, collapse, w1, s1, w2, s2, l1, l2))
    # the joint per (b, i) over (x, y, z[0], z[1]): g1's rows are z then x, g2's is y
    s1b = np.swapaxes(s1, 0, 1)  # (i, b, ...)
    zeros = np.zeros((3, 2, 1, 4))
    top = np.concatenate([s1b[:, :, 2:], zeros, s1b[:, :, :2]], -2)  # x, y, z rows
    bottom = np.concatenate([np.zeros((3, 2, 1, 2)), s2, np.zeros((3, 2, 2, 2))], -2)
    s = np.swapaxes(np.concatenate([top, bottom], -1), 0, 1)  # (b, i, 4, 6)
    w = np.concatenate([w1, np.swapaxes(w2, 0, 1)], -1)  # (b, i, 6)
    logits = l1 + logsumexp(l2, 0).T + 0.5  # (b, i)
    expected = _numpy_moments(w, s, logits)
    for actual, want in zip((mass, mean, cov), expected):
        np.testing.assert_allclose(actual, want, rtol=1e-8, atol=1e-10)


def test_components_of_no_weight():
    # Batch entry 1 has every weight -inf: its mass is -inf and its Gaussian stays finite;
    # entry 0 has one component of weight zero, which must not matter.
    rng = np.random.default_rng(3)
    g, w, s = _random_gaussian(rng, "numpy", {"b": fc.Bint[2], "i": fc.Bint[3]}, 2)
    logits = rng.normal(size=(2, 3))
    logits[0, 1] = -np.inf
    logits[1, :] = -np.inf
    t = fc.Tensor(logits, {"b": fc.Bint[2], "i": fc.Bint[3]})
    with moment_matching:
        result = (g + t).reduce(ops.logaddexp, "i")
    mass, mean, cov = _gaussian_moments(result)
    assert mass[1] == -np.inf and np.isfinite(mean).all() and np.isfinite(cov).all()
    keep = [0, 2]
    expected = _numpy_moments(w[0, keep], s[0, keep], logits[0, keep])
    np.testing.assert_allclose(mass[0], expected[0], rtol=1e-10)
    np.testing.assert_allclose(mean[0], expected[1], rtol=1e-8)
    np.testing.assert_allclose(cov[0], expected[2], rtol=1e-8)


def test_total_mass_is_kept():
    # Summing everything else out of the collapsed Gaussian gives the mixture's total.
    rng = np.random.default_rng(4)
    g, _, _ = _random_gaussian(rng, "numpy", {"i": fc.Bint[3], "j": fc.Bint[2]}, 2)
    t = fc.Tensor(rng.normal(size=(3, 2)), {"i": fc.Bint[3], "j": fc.Bint[2]})
    with moment_matching:
        collapsed = (g + t).reduce(ops.logaddexp, {"i", "j"})
    total = collapsed.reduce(ops.logaddexp, "x")
    expected = (g + t).reduce(ops.logaddexp, {"x", "i", "j"})  # exact: reals first
    np.testing.assert_allclose(total.data, expected.data, rtol=1e-10)


def test_a_flat_component_stays_lazy():
    # rank < dim: the components have no moments; nothing is assumed, the term stays lazy.
    rng = np.random.default_rng(5)
    g, _, _ = _random_gaussian(rng, "numpy", {"i": fc.Bint[2]}, 3, rank=2)
    with moment_matching:
        result = g.reduce(ops.logaddexp, "i")
    assert isinstance(result, fc.Contraction) and result.reduced_vars == frozenset({"i"})


def test_a_singular_component_raises_naming_the_variable():
    s = np.zeros((2, 2, 2))
    s[:, 0, 0] = 1.0
    s[:, 1, 1] = [1.0, 0.0]  # component 1 knows nothing about x[1]
    g = fc.Gaussian(white_vec=np.zeros((2, 2)), prec_sqrt=s,
                    inputs={"i": fc.Bint[2], "x": fc.Reals[2]})
    with moment_matching, pytest.raises(ValueError, match=r"x\[1\]"):
        g.reduce(ops.logaddexp, "i")


def test_other_terms_fall_through_to_exact():
    x = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
    with moment_matching:
        actual = x.reduce(ops.logaddexp, "j")
    assert moment_matching.chain()[:2] == ["moment_matching", "exact"]
    np.testing.assert_allclose(actual.data, logsumexp(np.arange(6.0).reshape(2, 3), 1))


def test_under_jit_equals_eager():
    import jax

    rng = np.random.default_rng(6)
    w = rng.normal(size=(2, 3, 3))
    s = rng.normal(size=(2, 3, 2, 3))
    logits = rng.normal(size=(2, 3))

    def collapse(w, s, logits):
        inputs = {"b": fc.Bint[2], "i": fc.Bint[3], "x": fc.Reals[2]}
        g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs)
        t = fc.Tensor(logits, {"b": fc.Bint[2], "i": fc.Bint[3]})
        with moment_matching:
            (gg,), (tt,) = split_gaussian_sum((g + t).reduce(ops.logaddexp, "i"))
        return gg.white_vec, gg.prec_sqrt, tt.data

    fc.set_backend("jax")
    try:
        args = [jax.numpy.array(a) for a in (w, s, logits)]
        eager = collapse(*args)
        jitted = jax.jit(collapse)(*args)
    finally:
        fc.set_backend("numpy")
    for a, b in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)
    numpy_result = collapse(w, s, logits)
    for a, b in zip(numpy_result, jitted):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-8, atol=1e-10)


def test_gradients_match_finite_differences():
    import torch

    rng = np.random.default_rng(7)
    w = torch.tensor(rng.normal(size=(3, 3)), requires_grad=True)
    s = torch.tensor(rng.normal(size=(3, 2, 3)), requires_grad=True)
    logits = torch.tensor(rng.normal(size=3), requires_grad=True)
    probe = torch.tensor(rng.normal(size=2))

    def value(w, s, logits):
        g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={"i": fc.Bint[3], "x": fc.Reals[2]})
        with moment_matching:
            (gg,), (tt,) = split_gaussian_sum((g + fc.Tensor(logits, {"i": fc.Bint[3]}))
                                              .reduce(ops.logaddexp, "i"))
        return tt.data + (gg.mean * probe).sum() + gg.covariance.sum()

    assert torch.autograd.gradcheck(value, (w, s, logits), eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Switching linear dynamical systems.
def _slds(seed, T, K, d, obs_dim):
    """Parameters and synthetic observations of an SLDS with T states (T - 1 transitions)."""
    rng = np.random.default_rng(seed)
    params = {
        "pi0": rng.dirichlet(np.ones(K)),
        "trans": rng.dirichlet(np.ones(K) * 2, size=K),
        "A": np.stack([np.linalg.qr(rng.normal(size=(d, d)))[0] * (0.6 + 0.3 * k)
                       for k in range(K)]),
        "Q": np.stack([np.eye(d) * (0.1 + 0.5 * k) for k in range(K)]),
        "C": rng.normal(size=(obs_dim, d)),
        "R": np.eye(obs_dim) * 0.3,
        "m0": np.zeros(d),
        "P0": np.eye(d),
    }
    s = rng.choice(K, p=params["pi0"])
    x = rng.multivariate_normal(params["m0"], params["P0"])
    ys = []
    for t in range(T):
        if t:
            s = rng.choice(K, p=params["trans"][s])
            x = params["A"][s] @ x + rng.multivariate_normal(np.zeros(d), params["Q"][s])
        ys.append(params["C"] @ x + rng.multivariate_normal(np.zeros(obs_dim), params["R"]))
    params["y"] = np.array(ys)
    return params


def _kalman_update(m, P, y, C, R):
    S = C @ P @ C.T + R
    K_gain = P @ C.T @ np.linalg.inv(S)
    resid = y - C @ m
    loglik = -0.5 * (resid @ np.linalg.solve(S, resid) + np.linalg.slogdet(2 * np.pi * S)[1])
    return m + K_gain @ resid, P - K_gain @ C @ P, loglik


def _exact_enumeration(p):
    """log p(y) by a Kalman filter per switch path (K^T paths)."""
    T, K = len(p["y"]), len(p["pi0"])
    totals = []
    for path in itertools.product(range(K), repeat=T):
        m, P, total = p["m0"], p["P0"], np.log(p["pi0"][path[0]])
        for t, s in enumerate(path):
            if t:
                total += np.log(p["trans"][path[t - 1], s])
                m, P = p["A"][s] @ m, p["A"][s] @ P @ p["A"][s].T + p["Q"][s]
            m, P, ll = _kalman_update(m, P, p["y"][t], p["C"], p["R"])
            total += ll
        totals.append(total)
    return logsumexp(totals)


def _numpy_gpb(p, window):
    """Generalized pseudo-Bayes filter keeping the last ``window`` switch states: log p(y)."""
    T, K = len(p["y"]), len(p["pi0"])
    comps = {}
    for s in range(K):
        m, P, ll = _kalman_update(p["m0"], p["P0"], p["y"][0], p["C"], p["R"])
        comps[(s,)] = (np.log(p["pi0"][s]) + ll, m, P)
    for t in range(1, T):
        new = {}
        for key, (lw, m, P) in comps.items():
            for s in range(K):
                A, Q = p["A"][s], p["Q"][s]
                m2, P2, ll = _kalman_update(A @ m, A @ P @ A.T + Q, p["y"][t], p["C"], p["R"])
                new[key + (s,)] = (lw + np.log(p["trans"][key[-1], s]) + ll, m2, P2)
        comps = {}
        for key in {k[-window:] for k in new}:  # collapse over the state leaving the window
            group = [v for k, v in new.items() if k[-window:] == key]
            lws = np.array([v[0] for v in group])
            total = logsumexp(lws)
            w = np.exp(lws - total)
            mean = sum(wi * v[1] for wi, v in zip(w, group))
            cov = sum(wi * (v[2] + np.outer(v[1] - mean, v[1] - mean)) for wi, v in zip(w, group))
            comps[key] = (total, mean, cov)
    return logsumexp([v[0] for v in comps.values()])


def _slds_factors(p, backend):
    """init(s, x) and trans(time, s, s', x, x') of the SLDS, observations included."""
    T, K = len(p["y"]), len(p["pi0"])
    d, o = p["C"].shape[1], p["C"].shape[0]
    a = lambda x: _array(backend, x)  # noqa: E731
    # y - C x over x: prec_sqrt C' R^{-T/2}, white_vec y' R^{-T/2}
    ri = np.linalg.inv(np.linalg.cholesky(p["R"])).T
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * p["R"])[1]

    def obs(times, name):
        shape = (len(times), d, o)
        return fc.Gaussian(white_vec=a(p["y"])[np.asarray(times)] @ a(ri),
                           prec_sqrt=a(np.broadcast_to(p["C"].T @ ri, shape)),
                           inputs={"time": fc.Bint[len(times)], name: fc.Reals[d]}) + obs_c

    # x' - A x over (x, x'): prec_sqrt [[-A'], [I]] Q^{-T/2}
    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in p["Q"]])
    dyn_s = np.concatenate([-np.swapaxes(p["A"], -1, -2) @ qi, qi], -2)
    dyn_c = np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1] for q in p["Q"]])
    dyn = fc.Gaussian(white_vec=a(np.zeros((K, d))), prec_sqrt=a(dyn_s),
                      inputs={"s_curr": fc.Bint[K], "x_prev": fc.Reals[d],
                              "x_curr": fc.Reals[d]}) + fc.Tensor(a(dyn_c), {"s_curr": fc.Bint[K]})
    switch = fc.Tensor(a(np.log(p["trans"])), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    trans = switch + dyn + obs(np.arange(1, T), "x_curr")
    pi = np.linalg.inv(np.linalg.cholesky(p["P0"])).T
    prior = fc.Gaussian(white_vec=a(p["m0"] @ pi), prec_sqrt=a(pi), inputs={"x_prev": fc.Reals[d]})
    prior = prior - 0.5 * np.linalg.slogdet(2 * np.pi * p["P0"])[1]
    init = fc.Tensor(a(np.log(p["pi0"])), {"s_prev": fc.Bint[K]}) + prior + obs([0], "x_prev")
    return init(time=0), trans


STEP = {"s_prev": "s_curr", "x_prev": "x_curr"}


def _log_likelihood(p, backend, window):
    init, trans = _slds_factors(p, backend)
    with moment_matching:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, window)
        return msg.reduce(ops.logaddexp)


def test_slds_window_of_all_states_is_exact_enumeration(backend):
    p = _slds(seed=0, T=5, K=2, d=2, obs_dim=1)
    actual = _run(backend, lambda y: _log_likelihood(dict(p, y=y), backend, 5).data, p["y"])
    np.testing.assert_allclose(_np(actual), _exact_enumeration(p), rtol=1e-9)


@pytest.mark.parametrize("window", [1, 2, 3])
def test_slds_window_matches_numpy_gpb(window):
    p = _slds(seed=1, T=7, K=3, d=2, obs_dim=2)
    actual = _log_likelihood(p, "numpy", window)
    np.testing.assert_allclose(actual.data, _numpy_gpb(p, window), rtol=1e-9)


def test_slds_under_exact_collapses_as_moment_matching():
    # The window is windowed_filter's promise: under exact too, a switch state leaving it is
    # collapsed by matching moments (issue 27, item 13; the mixture used to stay lazy and its
    # components multiplied with every step).
    p = _slds(seed=2, T=3, K=2, d=1, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with exact:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1)
    assert isinstance(msg, fc.Contraction) and all(
        isinstance(x, (fc.Gaussian, fc.Tensor)) for x in msg.terms)
    np.testing.assert_allclose(msg.reduce(ops.logaddexp).data, _numpy_gpb(p, 1), rtol=1e-9)


def test_slds_under_jit_equals_eager():
    # The filter traced once under jax.jit (observations traced) against the eager numpy run.
    p = _slds(seed=3, T=6, K=2, d=2, obs_dim=1)
    jitted = _run("jax", lambda y: _log_likelihood(dict(p, y=y), "jax", 2).data, p["y"])
    eager = _log_likelihood(p, "numpy", 2).data
    np.testing.assert_allclose(float(jitted), eager, rtol=1e-10)
    np.testing.assert_allclose(eager, _numpy_gpb(p, 2), rtol=1e-9)


def test_windowed_filter_of_tensors_is_the_forward_algorithm():
    # A discrete chain: every window gives the exact total (the window only changes the cost).
    rng = np.random.default_rng(8)
    logits = rng.normal(size=(5, 3, 3))
    trans = fc.Tensor(logits, {"time": fc.Bint[5], "a": fc.Bint[3], "b": fc.Bint[3]})
    init = fc.Tensor(rng.normal(size=3), {"a": fc.Bint[3]})
    expected = logsumexp([init.data[p[0]] + sum(logits[t, p[t], p[t + 1]] for t in range(5))
                          for p in itertools.product(range(3), repeat=6)])
    for window in (1, 2, 4, 7):
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", {"a": "b"}, init, window)
        assert set(msg.inputs) == {"b"}
        np.testing.assert_allclose(msg.reduce(ops.logaddexp).data, expected, rtol=1e-12)


def test_windowed_filter_errors():
    trans = fc.Tensor(np.zeros((2, 2, 2)), {"t": fc.Bint[2], "a": fc.Bint[2], "b": fc.Bint[2]})
    init = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
    with pytest.raises(ValueError, match="window must be an int >= 1"):
        windowed_filter(ops.logaddexp, ops.add, trans, "t", {"a": "b"}, init, 0)
    with pytest.raises(ValueError, match=r"\['c'\] are not inputs"):
        windowed_filter(ops.logaddexp, ops.add, trans, "t", {"a": "c"}, init, 1)
    with pytest.raises(ValueError, match="init is a factor"):
        windowed_filter(ops.logaddexp, ops.add, trans, "t", {"a": "b"}, init(a="b"), 1)


def test_sequential_sum_product_collapses_inside_the_scan():
    # The parallel scan's pairwise contractions sum a Bint state out of Gaussians: under
    # moment_matching each becomes one Gaussian per remaining assignment. With one switch
    # value the result equals exact's.
    from funsor_core.sum_product import sequential_sum_product
    from funsor_core.testing import random_gaussian

    trans = random_gaussian({"time": fc.Bint[5], "s_prev": fc.Bint[1], "s_curr": fc.Bint[1],
                             "x_prev": fc.Real, "x_curr": fc.Real})
    with moment_matching:
        actual = sequential_sum_product(ops.logaddexp, ops.add, trans, "time", STEP)
    actual = actual(s_prev=0, s_curr=0)
    expected = sequential_sum_product(ops.logaddexp, ops.add, trans(s_prev=0, s_curr=0),
                                      "time", {"x_prev": "x_curr"})
    for a, e in zip(_gaussian_moments(actual), _gaussian_moments(expected)):
        np.testing.assert_allclose(a, e, rtol=1e-8, atol=1e-10)
    trans2 = random_gaussian({"time": fc.Bint[4], "s_prev": fc.Bint[2], "s_curr": fc.Bint[2],
                              "x_prev": fc.Real, "x_curr": fc.Real})
    with moment_matching:
        result = sequential_sum_product(ops.logaddexp, ops.add, trans2, "time", STEP)
    (g,), dense = split_gaussian_sum(result)
    assert set(result.inputs) == {"s_prev", "s_curr", "x_prev", "x_curr"}
    assert np.isfinite(g.precision).all() and np.isfinite(dense[0].data).all()


def test_windowed_filter_reports_each_step():
    # each_step(t, message) gets the filtering message of step t: the same as filtering
    # the chain cut after step t.
    rng = np.random.default_rng(9)
    trans = fc.Tensor(rng.normal(size=(4, 2, 2)), {"time": fc.Bint[4], "a": fc.Bint[2],
                                                   "b": fc.Bint[2]})
    init = fc.Tensor(rng.normal(size=2), {"a": fc.Bint[2]})
    seen = []
    windowed_filter(ops.logaddexp, ops.add, trans, "time", {"a": "b"}, init, 2,
                    each_step=lambda t, msg: seen.append((t, msg)))
    assert [t for t, _ in seen] == [0, 1, 2, 3]
    for t, msg in seen:
        cut = fc.Tensor(trans.data[: t + 1], {"time": fc.Bint[t + 1], "a": fc.Bint[2],
                                              "b": fc.Bint[2]})
        expected = windowed_filter(ops.logaddexp, ops.add, cut, "time", {"a": "b"}, init, 2)
        np.testing.assert_allclose(msg.align(("b",)).data, expected.align(("b",)).data)


def _slds_from_distributions(p, A, y, convert):
    """The scalar SLDS of ``p`` (d = obs_dim = 1) written with Categorical and Normal, the
    dynamics' loc affine in x_prev: init(s_prev, x_prev) and trans(time, s, s', x, x')."""
    from funsor_core.distribution import Categorical, Normal

    K = len(p["pi0"])
    s_prev, s_curr = fc.Variable("s_prev", fc.Bint[K]), fc.Variable("s_curr", fc.Bint[K])
    x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    r = convert(np.sqrt(p["R"][0, 0]))
    switch = Categorical(probs=fc.Tensor(convert(p["trans"]), {"s_prev": fc.Bint[K]}),
                         value=s_curr)
    a = fc.Tensor(A, {"s_curr": fc.Bint[K]})
    q = fc.Tensor(convert(np.sqrt(p["Q"][:, 0, 0])), {"s_curr": fc.Bint[K]})
    c = fc.Tensor(convert(p["C"][0, 0]))
    ys = fc.Tensor(y[1:, 0], {"time": fc.Bint[len(p["y"]) - 1]})
    trans = switch + Normal(a * x_prev, q, value=x_curr) + Normal(c * x_curr, r, value=ys)
    init = (Categorical(probs=convert(p["pi0"]), value=s_prev)
            + Normal(convert(p["m0"][0]), convert(np.sqrt(p["P0"][0, 0])), value=x_prev)
            + Normal(c * x_prev, r, value=y[0, 0]))
    return init, trans


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_slds_from_distributions_float32_and_gradients_match_numpy_gpb(backend):
    # Categorical switches and Normals with affine locs, in float32: moment matching (under
    # jax.jit on jax) gives the numpy GPB log likelihood, and the gradient in the dynamics
    # coefficients (torch autograd, jax.grad) matches central differences of the GPB.
    p = _slds(seed=4, T=6, K=2, d=1, obs_dim=1)
    window = 2

    def gpb(A):
        return _numpy_gpb(dict(p, A=A.reshape(-1, 1, 1)), window)

    eps = 1e-6
    grad = [(gpb(p["A"].ravel() + eps * e) - gpb(p["A"].ravel() - eps * e)) / (2 * eps)
            for e in np.eye(2)]
    fc.set_backend(backend)
    try:
        if backend == "torch":
            import torch

            convert = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float32)  # noqa: E731
        elif backend == "jax":
            import jax.numpy as jnp

            convert = lambda x: jnp.asarray(x, dtype=jnp.float32)  # noqa: E731
        else:
            convert = lambda x: np.asarray(x, dtype=np.float32)  # noqa: E731

        def log_likelihood(A, y):
            init, trans = _slds_from_distributions(p, A, y, convert)
            with moment_matching:
                msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, window)
                return msg.reduce(ops.logaddexp).data

        A, y = convert(p["A"].ravel()), convert(p["y"])
        if backend == "jax":
            import jax

            value, actual = jax.jit(jax.value_and_grad(log_likelihood))(A, y)
        elif backend == "torch":
            A.requires_grad_()
            value = log_likelihood(A, y)
            (actual,) = torch.autograd.grad(value, A)
        else:
            value, actual = log_likelihood(A, y), None
    finally:
        fc.set_backend("numpy")
    assert str(_np(value).dtype) == "float32"
    np.testing.assert_allclose(_np(value), gpb(p["A"].ravel()), rtol=1e-4)
    if actual is not None:
        np.testing.assert_allclose(_np(actual), grad, rtol=1e-3, atol=1e-4)
