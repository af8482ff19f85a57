"""A new user's tries of ``windowed_filter(..., lengths=)`` on a switching LDS (h23): a
window over the whole chain equals enumeration of the switch paths with the closed-form
Gaussian evidence of each (scipy); ragged GPB2 equals the filter of each sequence alone;
a window of 2 with lengths raises before filtering (it failed mid-filter, in select())."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal

A = np.array([0.9, -0.5])
LOG_SWITCH = np.log([[0.8, 0.2], [0.3, 0.7]])
Y = np.array([[0.3, -1.0], [1.1, 0.4], [-0.2, 0.9]])
STEP = {"s_prev": "s_curr", "x_prev": "x_curr"}


def _model(y):
    xp, xc = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    inputs = {"t": fc.Bint[y.shape[0]], **({"b": fc.Bint[y.shape[1]]} if y.ndim == 2 else {})}
    a = fc.Tensor(A, {"s_curr": fc.Bint[2]})
    trans = (fc.Tensor(LOG_SWITCH, {"s_prev": fc.Bint[2], "s_curr": fc.Bint[2]})
             + Normal(a * xp, 1.0, xc) + Normal(xc, 0.5, fc.Tensor(y, inputs)))
    init = fc.Tensor(np.log([0.5, 0.5]), {"s_prev": fc.Bint[2]}) + Normal(0.0, 1.0, xp)
    return trans, init


def _enumerated(y):
    # x_0 ~ N(0, 1), x_t = A[s_t] x_{t-1} + N(0, 1), y_t ~ N(x_t, 0.5^2): y is Gaussian
    # given the switch path, with covariance F F^T + 0.25 I (F: x from the unit noises).
    n, terms = len(y), []
    for path in itertools.product(range(2), repeat=n + 1):
        f = np.zeros((n + 1, n + 1))
        f[0, 0] = 1.0
        for t in range(1, n + 1):
            f[t] = A[path[t]] * f[t - 1]
            f[t, t] = 1.0
        cov = (f @ f.T)[1:, 1:] + 0.25 * np.eye(n)
        log_switch = sum(LOG_SWITCH[path[t], path[t + 1]] for t in range(n))
        terms.append(np.log(0.5) + log_switch + multivariate_normal(np.zeros(n), cov).logpdf(y))
    return logsumexp(terms)


def _total(f, keep=()):
    return f.reduce(ops.logaddexp, frozenset(k for k in f.inputs if k not in keep))


def test_ragged_switching_filter_matches_each_sequence_and_enumeration():
    lengths = np.array([3, 1])
    trans, init = _model(Y)
    ragged = fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init,
                                lengths=fc.Tensor(lengths, {"b": fc.Bint[2]}))
    alone = []
    for b, n in enumerate(lengths):
        tb, ib = _model(Y[:n, b])
        alone.append(float(_total(fc.windowed_filter(ops.logaddexp, ops.add, tb, "t", STEP,
                                                     ib)).data))
        exact = fc.windowed_filter(ops.logaddexp, ops.add, tb, "t", STEP, ib, window=int(n))
        assert abs(float(_total(exact).data) - _enumerated(Y[:n, b])) < 1e-10
    np.testing.assert_allclose(_total(ragged, ("b",)).data, alone, atol=1e-12)
    with pytest.raises(NotImplementedError, match="lengths= with window=2 on a switching"):
        fc.windowed_filter(ops.logaddexp, ops.add, trans, "t", STEP, init, window=2,
                           lengths=fc.Tensor(lengths, {"b": fc.Bint[2]}))
