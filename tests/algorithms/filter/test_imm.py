"""``windowed_filter(..., method="imm")`` (``filter.imm``) beside the default GPB2.

Oracles, hand-written here in numpy, one Kalman update per component and mode:
``_numpy_imm`` mixes the previous modes' posteriors for each next mode, then predicts and
updates (Blom and Bar-Shalom's IMM); ``_numpy_gpb2`` predicts and updates every (previous,
next) pair and then collapses over the previous mode. They differ, and each filter must
match its own.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter.windowed import windowed_filter
from interpretations import exact, lazy, moment_matching
from tests.backend_values import as_backend_array, to_numpy
from tests.interpretations.test_moment_matching import STEP, _slds, _slds_factors


def _update(m, P, y, C, R):
    """Kalman update of N(m, P) by y = C x + N(0, R): posterior mean, covariance, log p(y)."""
    S = C @ P @ C.T + R
    gain = np.linalg.solve(S, C @ P).T
    r = y - C @ m
    ll = -0.5 * (r @ np.linalg.solve(S, r) + np.linalg.slogdet(2 * np.pi * S)[1])
    return m + gain @ r, P - gain @ C @ P, ll


def _moments(lw, ms, Ps):
    """The log mass, mean and covariance of the mixture sum_i e^{lw_i} N(ms_i, Ps_i)."""
    total = logsumexp(lw)
    w = np.exp(lw - total)
    m = np.einsum("i,ia->a", w, ms)
    d = ms - m
    return total, m, np.einsum("i,iab->ab", w, Ps + d[:, :, None] * d[:, None, :])


def _first(p):
    K = len(p["pi0"])
    m, P, ll = _update(p["m0"], p["P0"], p["y"][0], p["C"], p["R"])
    return np.log(p["pi0"]) + ll, np.stack([m] * K), np.stack([P] * K)


def _numpy_imm(p):
    """log p(y) by the IMM filter: mix (per next mode j, weights w_i p(j | i)), predict,
    update."""
    K = len(p["pi0"])
    lw, ms, Ps = _first(p)
    for y in p["y"][1:]:
        new = []
        for j in range(K):
            c, m, P = _moments(lw + np.log(p["trans"][:, j]), ms, Ps)
            A, Q = p["A"][j], p["Q"][j]
            m, P, ll = _update(A @ m, A @ P @ A.T + Q, y, p["C"], p["R"])
            new.append((c + ll, m, P))
        lw, ms, Ps = (np.array([n[k] for n in new]) for k in range(3))
    return logsumexp(lw)


def _numpy_gpb2(p):
    """log p(y) by the GPB2 filter: predict and update each (i, j), then collapse over i."""
    K = len(p["pi0"])
    lw, ms, Ps = _first(p)
    for y in p["y"][1:]:
        new = []
        for j in range(K):
            A, Q = p["A"][j], p["Q"][j]
            pairs = [_update(A @ ms[i], A @ Ps[i] @ A.T + Q, y, p["C"], p["R"]) for i in range(K)]
            lws = lw + np.log(p["trans"][:, j]) + np.array([q[2] for q in pairs])
            new.append(_moments(lws, np.stack([q[0] for q in pairs]),
                                np.stack([q[1] for q in pairs])))
        lw, ms, Ps = (np.array([n[k] for n in new]) for k in range(3))
    return logsumexp(lw)


def _total(p, method, interpretation=moment_matching):
    init, trans = _slds_factors(p, fc.get_backend())
    with interpretation:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1,
                              method=method)
        return msg.reduce(ops.logaddexp).data


def test_imm_and_gpb2_differ_and_each_matches_its_oracle():
    p = _slds(seed=21, T=12, K=3, d=2, obs_dim=1)
    imm, gpb2 = _numpy_imm(p), _numpy_gpb2(p)
    assert abs(imm - gpb2) > 1e-6  # the two filters are different approximations
    np.testing.assert_allclose(_total(p, "imm"), imm, rtol=1e-9)
    np.testing.assert_allclose(_total(p, "gpb2"), gpb2, rtol=1e-9)
    # The default is GPB2, its numbers unchanged.
    init, trans = _slds_factors(p, "numpy")
    with moment_matching:
        default = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1)
    np.testing.assert_allclose(default.reduce(ops.logaddexp).data, gpb2, rtol=1e-9)


def test_imm_under_exact_collapses_as_moment_matching():
    p = _slds(seed=22, T=6, K=2, d=2, obs_dim=2)
    np.testing.assert_allclose(_total(p, "imm", exact), _numpy_imm(p), rtol=1e-9)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax.jit"])
def test_every_backend_and_jit(backend):
    # Eager jax compiles op by op (seconds) and proves nothing jit does not: numpy, torch,
    # and jax under jax.jit with the observations traced.
    p = _slds(seed=23, T=4, K=2, d=1, obs_dim=1)
    name = backend.split(".")[0]
    fc.set_backend(name)
    try:
        y = as_backend_array(p["y"], name)

        def both(y):
            return _total(dict(p, y=y), "imm"), _total(dict(p, y=y), "gpb2")

        if backend == "jax.jit":
            import jax

            both = jax.jit(both)
        imm, gpb2 = both(y)
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(to_numpy(imm), _numpy_imm(p), rtol=1e-9)
    np.testing.assert_allclose(to_numpy(gpb2), _numpy_gpb2(p), rtol=1e-9)



def test_lazy_records_and_moment_matching_evaluates():
    p = _slds(seed=27, T=5, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with lazy:
        msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1,
                              method="imm")
    assert not isinstance(msg, (fc.Tensor, fc.Gaussian))
    with moment_matching:
        total = fc.reinterpret(msg).reduce(ops.logaddexp)
    np.testing.assert_allclose(total.data, _numpy_imm(p), rtol=1e-9)

def test_each_step_sees_the_filtered_message():
    p = _slds(seed=24, T=4, K=2, d=1, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    totals = []
    with moment_matching:
        windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1, method="imm",
                        each_step=lambda t, m: totals.append(m.reduce(ops.logaddexp).data))
    assert len(totals) == 3
    for t, total in enumerate(totals):  # the evidence of the first t + 2 observations
        np.testing.assert_allclose(total, _numpy_imm(dict(p, y=p["y"][:t + 2])), rtol=1e-9)


@pytest.mark.parametrize("steps", [1, 4, 5])
def test_a_tensor_chain_is_the_forward_algorithm(steps):
    # Odd and even numbers of steps: the message alternates names inside, ends on the curr one.
    rng = np.random.default_rng(25)
    logits = rng.normal(size=(steps, 3, 3))
    trans = fc.Tensor(logits, {"time": fc.Bint[steps], "a": fc.Bint[3], "b": fc.Bint[3]})
    init = fc.Tensor(rng.normal(size=3), {"a": fc.Bint[3]})
    alpha = init.data
    for t in range(steps):
        alpha = logsumexp(alpha[:, None] + logits[t], axis=0)
    msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", {"a": "b"}, init, 1,
                          method="imm")
    assert msg.inputs == {"b": fc.Bint[3]}
    np.testing.assert_allclose(msg.align(("b",)).data, alpha, rtol=1e-12)


def test_bad_arguments_name_the_problem():
    p = _slds(seed=26, T=3, K=2, d=1, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    args = (ops.logaddexp, ops.add, trans, "time", STEP, init)
    with pytest.raises(ValueError, match="method must be 'gpb2' or 'imm'"):
        windowed_filter(*args, 1, method="IMM")
    with pytest.raises(ValueError, match="needs window=1"):
        windowed_filter(*args, 2, method="imm")
    # A real factor over the previous switch state cannot be mixed before predicting.
    coupled = trans + fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
                                  inputs={"s_prev": fc.Bint[2], "x_prev": fc.Reals[1]})
    with pytest.raises(ValueError, match=r"previous\s+switch state\(s\) \['s_prev'\]"):
        windowed_filter(ops.logaddexp, ops.add, coupled, "time", STEP, init, 1, method="imm")
