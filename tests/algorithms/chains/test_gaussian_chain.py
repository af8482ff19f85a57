"""A 400-step scalar Kalman filter folded with Gaussians matches a hand-written filter.

x_{t+1} = a x_t + N(0, q), y_t = x_t + N(0, r), x_0 ~ N(0, p0). Each step adds the factor
over (x_t, x_{t+1}) and the observation of x_t to the running Gaussian, then marginalizes x_t;
the accumulated Tensor normalizers give the log likelihood of y_0..y_{T-1}.
"""

from __future__ import annotations

import math

import numpy as np

import funsor_core as fc
from funsor_core import ops

A, Q, R, P0 = 0.9, 0.5, 0.3, 1.0


def kalman_log_likelihood(ys):
    m, p, total = 0.0, P0, 0.0
    for y in ys:
        s = p + R
        total += -0.5 * (math.log(2 * math.pi * s) + (y - m) ** 2 / s)
        k = p / s
        m, p = m + k * (y - m), (1 - k) * p
        m, p = A * m, A * A * p + Q
    return total


def normal_logpdf_factor(name, mean, var):
    """log N(x; mean, var) as a normalized Gaussian + constant."""
    g = fc.Gaussian(mean=np.array([mean]), covariance=np.array([[var]]), inputs={name: fc.Real})
    return g - g.log_normalizer


def test_kalman_chain_400_steps():
    # One eager step at a time, as a user's filter loop runs (the 10^5-step chains through
    # MarkovProduct are in test_long_chains.py). The predicted variance contracts to its
    # steady state by a factor a^2 (1 - k)^2 = 0.08 a step, so it is there to float64 by
    # step 15: every later step repeats the same computation, and 400 steps (25 times that;
    # was 2,000 at 5x the time) carry the roundoff of a long steady-state loop. The
    # tolerance, 1e-8 relative, is 10^5 times the roundoff of 2,000 steps either way.
    rng = np.random.default_rng(0)
    steps = 400
    x, ys = rng.normal() * math.sqrt(P0), []
    for _ in range(steps):
        ys.append(x + rng.normal() * math.sqrt(R))
        x = A * x + rng.normal() * math.sqrt(Q)
    # transition log N(x1; a x0, q) as a rank-1 Gaussian over (x0, x1): (x1 - a x0) / sqrt(q).
    s = 1 / math.sqrt(Q)
    trans = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.array([[-A * s], [s]]),
                        inputs={"x0": fc.Real, "x1": fc.Real}) - 0.5 * math.log(2 * math.pi * Q)
    state = normal_logpdf_factor("x0", 0.0, P0)
    log_lik = 0.0
    for y in ys:
        obs = normal_logpdf_factor("x0", y, R)
        state = (state + obs + trans).reduce(ops.logaddexp, "x0")
        terms = state.terms
        log_lik += sum(float(t.data) for t in terms if isinstance(t, (fc.Tensor, fc.Number)))
        state = next(t for t in terms if isinstance(t, fc.Gaussian))(x1="x0")
    log_lik += float(state.log_normalizer.data)  # the last predicted state integrates to 1
    expected = kalman_log_likelihood(ys)
    assert math.isfinite(log_lik)
    assert abs(log_lik - expected) <= 1e-8 * abs(expected)
