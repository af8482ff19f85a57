"""funsor's Kalman idiom, ``sequential_sum_product`` of Gaussian steps then a reduction (the
array kernel's log-depth tree; the parallel scan over terms, whose halves are strided slices
where they evaluate, for chains the kernel does not take): its log
normalizer and the filtered mean and covariance of the last state against a numpy Kalman
filter in covariance form (Joseph update) written here, on every backend and under
``jax.jit``, with a well-conditioned and a nearly noiseless observation model."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains import term_scans
from funsor_core.sum_product import sequential_sum_product

DIM, OBS = 2, 1


def _model(obs_sd, T):
    # (F, Q, H, R, m0, P0, ys) and the idiom's square-root information arrays: trans rows
    # [x_prev, x_curr], obs rows [x_curr], the prior over the first x_prev.
    rng = np.random.default_rng(7)
    f = np.array([[0.9, 0.2], [-0.1, 0.8]])
    q, r, p0 = np.diag([0.3, 0.2]), np.eye(OBS) * obs_sd ** 2, np.eye(DIM) * 2.25
    h, m0, ys = rng.normal(size=(OBS, DIM)), rng.normal(size=DIM), rng.normal(size=(T, OBS))
    lq, lr, lp = (np.linalg.inv(np.linalg.cholesky(c)).T for c in (q, r, p0))  # C^-1 = l l'
    trans_sqrt = np.broadcast_to(np.concatenate([-(f.T @ lq), lq], 0), (T, 2 * DIM, DIM))
    obs_sqrt = np.broadcast_to((h.T @ lr)[None], (T, DIM, OBS))
    arrays = (np.zeros((T, DIM)), np.ascontiguousarray(trans_sqrt), ys @ lr,
              np.ascontiguousarray(obs_sqrt), m0 @ lp, lp)
    return (f, q, h, r, m0, p0, ys), arrays


def _kalman(f, q, h, r, m0, p0, ys):
    T = len(ys)
    # The filter's log likelihood, plus the normalizers the idiom's factors leave out
    # (exp(-|l'(x - mu)|^2 / 2) = N(x; mu, C) |2 pi C|^(1/2)); the last filtered moments.
    def half_logdet(c):
        return 0.5 * np.linalg.slogdet(2 * np.pi * c)[1]

    m, p = m0, p0
    total = half_logdet(p0) + T * (half_logdet(q) + half_logdet(r))
    for y in ys:
        m, p = f @ m, f @ p @ f.T + q
        s = h @ p @ h.T + r
        e = y - h @ m
        total += -0.5 * e @ np.linalg.solve(s, e) - half_logdet(s)
        k = np.linalg.solve(s, h @ p).T
        a = np.eye(DIM) - k @ h
        m, p = m + k @ e, a @ p @ a.T + k @ r @ k.T
    return total, m, p


def _idiom(tw, ts, ow, os_, pw, ps):
    T = tw.shape[0]
    # benchmarks/idioms.py's Kalman idiom; returns (log Z, the last state's filtered Gaussian).
    time = fc.Variable("time", fc.Bint[T])
    trans = fc.Gaussian(white_vec=tw, prec_sqrt=ts, inputs={
        "time": fc.Bint[T], "x_prev": fc.Reals[DIM], "x_curr": fc.Reals[DIM]})
    obs = fc.Gaussian(white_vec=ow, prec_sqrt=os_,
                      inputs={"time": fc.Bint[T], "x_curr": fc.Reals[DIM]})
    prior = fc.Gaussian(white_vec=pw, prec_sqrt=ps, inputs={"x_prev": fc.Reals[DIM]})
    joint = prior + sequential_sum_product(ops.logaddexp, ops.add, trans + obs, time,
                                           {"x_prev": "x_curr"})
    filtered = joint.reduce(ops.logaddexp, "x_prev")
    gaussian = next(t for t in filtered.terms if isinstance(t, fc.Gaussian))
    const = sum(t.data for t in filtered.terms if not isinstance(t, fc.Gaussian))
    log_z = filtered.reduce(ops.logaddexp).data
    return log_z, gaussian.mean, gaussian.covariance, const


def _check(out, expected):
    log_z, mean, cov, _ = (np.asarray(x) for x in out)
    np.testing.assert_allclose(log_z, expected[0], rtol=1e-10)
    np.testing.assert_allclose(mean, expected[1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(cov, expected[2], rtol=1e-10, atol=1e-15)


# T = 5: rounds of 5 (odd: the head slice and a tail), 4, 2 steps. Eager jax is left to the
# jit test (its first eager call compiles kernels: a second, not a check more).
@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
@pytest.mark.parametrize("obs_sd", [0.7, 1e-5])
def test_kalman_idiom_against_a_kalman_filter(backend_name, obs_sd):
    pytest.importorskip(backend_name)
    fc.set_backend(backend_name)
    model, arrays = _model(obs_sd, 5)
    try:
        _check(_idiom(*(fc.numeric_array(a) for a in arrays)), _kalman(*model))
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("route", ["kernel", "terms"])
def test_kalman_idiom_under_jit_slices_its_halves(monkeypatch, route):
    # One compile each, of 2 steps (one round of halves; the odd-round head is checked
    # eagerly): the near-noiseless model under jax.jit. A chain of Gaussians goes to the
    # array kernel (no rounds of terms); the rounds of terms, which other chains still take,
    # slice their halves (Slices, no index gathers).
    jax = pytest.importorskip("jax")
    taken = []
    holds = term_scans._holds_slice
    monkeypatch.setattr(term_scans, "_holds_slice", lambda t: taken.append(holds(t)) or taken[-1])
    if route == "terms":
        monkeypatch.setattr(term_scans, "_real_gaussian_chain", lambda *args: False)
    fc.set_backend("jax")
    try:
        model, arrays = _model(1e-5, 2)
        # A fresh function: jax caches a trace by the function, and each route must trace.
        out = jax.jit(lambda *a: _idiom(*a))(*(fc.numeric_array(a) for a in arrays))
    finally:
        fc.set_backend("numpy")
    _check(out, _kalman(*model))
    if route == "kernel":
        assert not taken  # no rounds of terms
    else:
        assert taken and not any(taken)  # every round sliced (no index gather)
