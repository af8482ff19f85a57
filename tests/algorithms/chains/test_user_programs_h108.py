"""Programs a new user writes from the README (h108) on chains: ``markov_marginals`` and
``markov_map`` of a Gaussian chain (``Normal(x_prev, ..) + Normal(x_curr, .., y)``) said only
"needs a chain of Tensors, got Contraction"; the error now names the real inputs and the
call that does it, and that advice gives the smoothed path. Oracle: a hand-written
Rauch-Tung-Striebel smoother (whose means are also the MAP path of a linear Gaussian chain)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from funsor_core.sum_product import MarkovProduct, markov_map, markov_marginals
from interpretations import lazy

T, Q, R, S0 = 8, 1.0, 0.5, 1.0


def _rts_means(y):
    m, p, ms, ps = 0.0, S0 ** 2, [], []
    for obs in y:
        p = p + Q ** 2
        gain = p / (p + R ** 2)
        m, p = m + gain * (obs - m), (1 - gain) * p
        ms.append(m)
        ps.append(p)
    sm = list(ms)
    for t in range(len(y) - 2, -1, -1):
        g = ps[t] / (ps[t] + Q ** 2)
        sm[t] = ms[t] + g * (sm[t + 1] - ms[t])
    return np.array(sm)


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_gaussian_chain_smoothing_error_gives_advice_that_works(sum_op):
    y = np.random.default_rng(0).normal(size=T).cumsum()
    xp, xc = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    yt = fc.Tensor(y, {"t": fc.Bint[T]})
    walk = Normal(xp, Q, xc) + Normal(xc, R, yt)
    with pytest.raises(TypeError, match="forward_backward"):
        if sum_op is ops.max:
            markov_map(walk, "t", {"x_prev": "x_curr"}, [Normal(0.0, S0, xp)])
        else:
            markov_marginals(sum_op, ops.add, walk, "t", {"x_prev": "x_curr"},
                             [Normal(0.0, S0, xp)])
    with lazy:
        step = Normal(xp, Q, xc) + Normal(xc, R, yt)
        chain = MarkovProduct(sum_op, ops.add, step, "t", {"x_prev": "x_curr"})
        expr = (Normal(0.0, S0, xp) + chain).reduce(sum_op, {"x_prev", "x_curr"})
    value, adjoints = fc.forward_backward(sum_op, ops.add, expr)
    marginal = adjoints[step] + fc.reinterpret(step) - value
    means = np.ravel(fc.moments(marginal).mean["x_curr"].data)
    np.testing.assert_allclose(means, _rts_means(y), atol=1e-8)


def test_gaussian_chain_under_argmax_approximate_names_what_works():
    # The README's "under argmax_approximate, point masses at the MAP" led here; the error
    # said the chain's own semiring, (max, add), was the one supported. It now says to drop
    # the approximation and read the max-marginals' means (checked above against RTS).
    from funsor_core.approximations import argmax_approximate

    y = np.random.default_rng(1).normal(size=T)
    xp, xc = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    with lazy:
        step = Normal(xp, Q, xc) + Normal(xc, R, fc.Tensor(y, {"t": fc.Bint[T]}))
        chain = MarkovProduct(ops.max, ops.add, step, "t", {"x_prev": "x_curr"})
        expr = (Normal(0.0, S0, xp) + chain).reduce(ops.max, {"x_prev", "x_curr"})
    with pytest.raises(NotImplementedError, match="max-marginals"), argmax_approximate:
        fc.forward_backward(ops.max, ops.add, expr)
