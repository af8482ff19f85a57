"""Adversarial HMM numerics (h42): log factors of +-1e4, -inf observations and a state that
is never reachable, against a normalized numpy forward-backward and Viterbi."""
import numpy as np
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, markov_map, markov_marginals, markov_strategy
from interpretations import lazy

T, K = 60, 3
with np.errstate(divide="ignore"):
    INIT = np.log(np.array([0.5, 0.5, 0.0]))  # state 2 is never reachable
    TRANS = np.log(np.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.0], [0.3, 0.3, 0.4]]))
OBS = np.random.default_rng(1).standard_normal((T, K)) * 1e4
OBS[::7, 0] = -np.inf


def _forward_backward():
    # Every message is shifted to max 0, so no 1e6-sized logs are subtracted.
    alpha, beta, log_z = np.empty((T + 1, K)), np.zeros((T + 1, K)), 0.0
    alpha[0] = INIT
    for t in range(T):
        a = logsumexp(alpha[t][:, None] + TRANS, axis=0) + OBS[t]
        alpha[t + 1] = a - a.max()
        log_z += a.max()
    log_z += logsumexp(alpha[-1])
    for t in range(T - 1, -1, -1):
        b = logsumexp(TRANS + OBS[t][None] + beta[t + 1][None], axis=1)
        beta[t] = b - b.max()
    pairs = alpha[:-1, :, None] + TRANS[None] + OBS[:, None, :] + beta[1:, None, :]
    pairs -= logsumexp(pairs.reshape(T, -1), axis=1)[:, None, None]
    return log_z, np.exp(pairs)


def _viterbi():
    d, back = INIT.copy(), []
    for t in range(T):
        s = d[:, None] + TRANS
        back.append(s.argmax(0))
        d = s.max(0) + OBS[t]
    path = [int(d.argmax())]
    for t in range(T - 1, -1, -1):
        path.append(int(back[t][path[-1]]))
    return d.max(), path[::-1]


def test_hmm_extreme_log_factors_match_forward_backward():
    init = fc.Tensor(INIT, {"x_prev": fc.Bint[K]})
    trans = fc.Tensor(TRANS, {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]})
    obs = fc.Tensor(OBS, {"t": fc.Bint[T], "x_curr": fc.Bint[K]})
    log_z, pairs = _forward_backward()
    best, path = _viterbi()
    for strategy in ("sequential", "parallel"):
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"x_prev": "x_curr"})
        with markov_strategy(strategy):
            total = (init + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
            marg_total, marg = markov_marginals(ops.logaddexp, ops.add, trans + obs, "t",
                                                {"x_prev": "x_curr"}, [init])
            score, map_path = markov_map(trans + obs, "t", {"x_prev": "x_curr"}, [init])
        np.testing.assert_allclose(float(total.data), log_z, rtol=1e-12)
        np.testing.assert_allclose(float(marg_total.data), log_z, rtol=1e-12)
        got = np.asarray(marg.align(("t", "x_prev", "x_curr")).data)
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, pairs, atol=1e-9)
        assert (got[:, :, 2] == 0).all()  # the unreachable state has marginal 0, not NaN
        np.testing.assert_allclose(float(score.data), best, rtol=1e-12)
        assert np.asarray(map_path["x_prev"].data).ravel().tolist() == path
