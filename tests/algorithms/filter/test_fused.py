"""``windowed_filter``'s moment-matching steps run on arrays (``filtering_fused``).

Oracles: the same filter built term by term (the fused steps switched off), the numpy
generalized pseudo-Bayes filter and exact enumeration of the switch paths
(``test_moment_matching``), and finite differences for gradients.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.filter import windowed as filtering
from funsor_core.algorithms.filter.windowed import windowed_filter
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import (
    STEP,
    _array,
    _exact_enumeration,
    _kalman_update,
    _np,
    _numpy_gpb,
    _slds,
    _slds_factors,
)


class _Off:
    """Stands for ``FusedCollapses`` with every step built as a term."""

    exhausted = True

    def __init__(self, *args, **kwargs):
        pass

    def run(self, msg, t, size):
        return msg, t


@pytest.fixture
def counted(monkeypatch):
    """How many steps ran on arrays, per call of ``windowed_filter``."""
    runs = []
    real = filtering.FusedCollapses

    class Counted(real):
        def run(self, msg, t, size):
            msg2, t2 = super().run(msg, t, size)
            runs.append(t2 - t)
            return msg2, t2

    monkeypatch.setattr(filtering, "FusedCollapses", Counted)
    return runs


def _filter(init, trans, window, fused=True):
    saved = filtering.FusedCollapses
    if not fused:
        filtering.FusedCollapses = _Off
    try:
        with moment_matching:
            return windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, window)
    finally:
        filtering.FusedCollapses = saved


def _total(msg):
    return msg.reduce(ops.logaddexp).data


@pytest.mark.parametrize("window", [1, 2, 3])
@pytest.mark.parametrize("backend", ["numpy", "torch"])  # jax: under jax.jit below
def test_fused_steps_equal_the_term_fold_and_numpy_gpb(backend, window, counted):
    p = _slds(seed=5, T=9, K=3, d=2, obs_dim=1)
    fc.set_backend(backend)
    try:
        init, trans = _slds_factors(p, backend)
        fused = _filter(init, trans, window)
        terms = _filter(init, trans, window, fused=False)
    finally:
        fc.set_backend("numpy")
    assert sum(counted) >= 8 - window, "the steps were not fused"
    assert fused.inputs == terms.inputs
    for name in fused.inputs:  # the same message, not only the same total
        assert name in terms.inputs
    np.testing.assert_allclose(_np(_total(fused)), _np(_total(terms)), rtol=1e-12)
    np.testing.assert_allclose(_np(_total(fused)), _numpy_gpb(p, window), rtol=1e-9)
    g_f = [x for x in fused.terms if isinstance(x, fc.Gaussian)][0]
    g_t = [x for x in terms.terms if isinstance(x, fc.Gaussian)][0]
    order = tuple(g_t.inputs)
    np.testing.assert_allclose(_np(g_f.align(order).mean), _np(g_t.align(order).mean),
                               rtol=1e-9, atol=1e-12)


def test_fused_window_of_all_states_is_exact_enumeration(counted):
    p = _slds(seed=6, T=5, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    np.testing.assert_allclose(_total(_filter(init, trans, 5)), _exact_enumeration(p),
                               rtol=1e-9)


@pytest.mark.parametrize("window", [2])  # window 1: the lax.scan test below
def test_fused_under_jit_equals_eager(counted, window):
    import jax

    p = _slds(seed=7, T=5, K=2, d=2, obs_dim=2)  # T = 5 still collapses (GPB != exact)

    def run(y):
        init, trans = _slds_factors(dict(p, y=y), "jax")
        return _total(_filter(init, trans, window))

    fc.set_backend("jax")
    try:
        jitted = jax.jit(run)(_array("jax", p["y"]))
    finally:
        fc.set_backend("numpy")
    assert sum(counted) >= 4 - window
    np.testing.assert_allclose(float(jitted), _numpy_gpb(p, window), rtol=1e-10)


def test_fused_gradients_equal_the_term_fold():
    # d/d theta of the log likelihood, theta_j a log weight added to every switch into j
    # (the transition matrix scaled by exp(theta_j) in column j): torch autograd through the
    # fused steps, through the term fold, and central differences of the numpy GPB.
    import torch

    p = _slds(seed=8, T=7, K=2, d=2, obs_dim=1)
    fc.set_backend("torch")
    try:
        grads = []
        for fused in (True, False):
            theta = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
            init, trans = _slds_factors(p, "torch")
            trans = trans + fc.Tensor(theta, {"s_curr": fc.Bint[2]})
            (grad,) = torch.autograd.grad(_total(_filter(init, trans, 1, fused)), theta)
            grads.append(grad.numpy())
    finally:
        fc.set_backend("numpy")

    def gpb(theta):
        return _numpy_gpb(dict(p, trans=p["trans"] * np.exp(theta)[None, :]), 1)

    eps = 1e-6
    numeric = [(gpb(np.array([0.3, -0.2]) + eps * e) - gpb(np.array([0.3, -0.2]) - eps * e))
               / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads[0], numeric, rtol=1e-5)


def test_time_varying_dynamics_and_a_plate(counted):
    # The dynamics change with time and a plate b of two independent sequences rides along:
    # each sequence's total equals the numpy GPB of its own parameters.
    ps = [_slds(seed=10 + b, T=6, K=2, d=2, obs_dim=1) for b in range(2)]
    T, K, d = 6, 2, 2
    a = np.stack([[p["A"] * (1 + 0.05 * t) for t in range(1, T)] for p in ps])  # (b, t, K, d, d)
    ys = np.stack([p["y"] for p in ps])
    base = ps[0]
    for p in ps:
        p.update({k: base[k] for k in ("pi0", "trans", "Q", "C", "R", "m0", "P0")})
    ri = np.linalg.inv(np.linalg.cholesky(base["R"])).T
    qi = np.stack([np.linalg.inv(np.linalg.cholesky(q)).T for q in base["Q"]])
    dyn_s = np.concatenate([-np.swapaxes(a, -1, -2) @ qi, np.broadcast_to(qi, a.shape)], -2)
    dyn = fc.Gaussian(white_vec=np.zeros((2, T - 1, K, d)), prec_sqrt=dyn_s,
                      inputs={"b": fc.Bint[2], "time": fc.Bint[T - 1], "s_curr": fc.Bint[K],
                              "x_prev": fc.Reals[d], "x_curr": fc.Reals[d]})
    dyn = dyn + fc.Tensor(np.array([-0.5 * np.linalg.slogdet(2 * np.pi * q)[1]
                                    for q in base["Q"]]), {"s_curr": fc.Bint[K]})
    obs_c = -0.5 * np.linalg.slogdet(2 * np.pi * base["R"])[1]
    obs = fc.Gaussian(white_vec=ys[:, 1:] @ ri,
                      prec_sqrt=np.broadcast_to(base["C"].T @ ri, (2, T - 1, d, 1)),
                      inputs={"b": fc.Bint[2], "time": fc.Bint[T - 1], "x_curr": fc.Reals[d]})
    switch = fc.Tensor(np.log(base["trans"]), {"s_prev": fc.Bint[K], "s_curr": fc.Bint[K]})
    trans = switch + dyn + obs + obs_c
    pi = np.linalg.inv(np.linalg.cholesky(base["P0"])).T
    prior = fc.Gaussian(white_vec=base["m0"] @ pi, prec_sqrt=pi, inputs={"x_prev": fc.Reals[d]})
    prior = prior - 0.5 * np.linalg.slogdet(2 * np.pi * base["P0"])[1]
    obs0 = fc.Gaussian(white_vec=ys[:, 0] @ ri, prec_sqrt=np.broadcast_to(base["C"].T @ ri,
                                                                          (2, d, 1)),
                       inputs={"b": fc.Bint[2], "x_prev": fc.Reals[d]}) + obs_c
    init = fc.Tensor(np.log(base["pi0"]), {"s_prev": fc.Bint[K]}) + prior + obs0
    msg = _filter(init, trans, 1)
    assert sum(counted) >= 3
    total = msg.reduce(ops.logaddexp, frozenset(msg.inputs) - {"b"})
    for b, p in enumerate(ps):
        np.testing.assert_allclose(total.align(("b",)).data[b], _gpb_varying(p, a[b]),
                                   rtol=1e-9)
    terms = _filter(init, trans, 1, fused=False)
    np.testing.assert_allclose(
        total.align(("b",)).data,
        terms.reduce(ops.logaddexp, frozenset(terms.inputs) - {"b"}).align(("b",)).data,
        rtol=1e-12)


def _gpb_varying(p, a):
    """The numpy GPB filter (window 1) with dynamics a[t - 1] at step t."""
    K = len(p["pi0"])
    comps = []
    for s in range(K):
        m, P, ll = _kalman_update(p["m0"], p["P0"], p["y"][0], p["C"], p["R"])
        comps.append((np.log(p["pi0"][s]) + ll, m, P))
    for t in range(1, len(p["y"])):
        new = []
        for j in range(K):
            A, Q = a[t - 1, j], p["Q"][j]
            group = []
            for i, (lw, m, P) in enumerate(comps):
                m2, P2, ll = _kalman_update(A @ m, A @ P @ A.T + Q, p["y"][t], p["C"], p["R"])
                group.append((lw + np.log(p["trans"][i, j]) + ll, m2, P2))
            lws = np.array([g[0] for g in group])
            total = logsumexp(lws)
            w = np.exp(lws - total)
            mean = sum(wi * g[1] for wi, g in zip(w, group))
            cov = sum(wi * (g[2] + np.outer(g[1] - mean, g[1] - mean)) for wi, g in zip(w, group))
            new.append((total, mean, cov))
        comps = new
    return logsumexp([c[0] for c in comps])


def test_a_user_rule_on_moment_matching_is_not_stepped_over(counted,
                                                            scratch_moment_matching_rules):
    # A rule registered on moment_matching for the step's Contraction comes before the
    # built-in one: the filter must build every step as a term, so the rule fires each time.
    from funsor_core.engine.interpreter import Tuple
    from funsor_core.terms.contraction import Contraction

    p = _slds(seed=11, T=6, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    expected = _total(_filter(init, trans, 1))
    fired = []

    @moment_matching.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                              Tuple[fc.Gaussian, fc.Gaussian, fc.Tensor, fc.Tensor])
    def user_contraction_step(red_op, bin_op, reduced_vars, terms):
        fired.append(reduced_vars)
        return None

    counted.clear()
    actual = _total(_filter(init, trans, 1))
    assert len(fired) >= 4, "the user's rule was stepped over"
    assert sum(counted) == 0
    np.testing.assert_allclose(actual, expected, rtol=1e-12)


def test_a_singular_step_raises_naming_the_variable_when_fused(counted):
    # From step 3 on, the step factor of switch 1 (dynamics and observation) carries no
    # information at all, so the next step integrates an x_prev on which that component has
    # none: the fused steps raise the same error as the term fold, naming x_prev.
    p = _slds(seed=12, T=6, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    from funsor_core.atoms.gaussian.algebra import split_gaussian_sum

    gs, ds = split_gaussian_sum(trans)
    (dyn,) = gs
    ps = np.array(dyn.prec_sqrt, copy=True)
    where = {"time": slice(3, None), "s_curr": 1}
    ps[tuple(where[k] for k, d in dyn.inputs.items() if d.dtype != "real")] = 0.0
    bad = fc.Gaussian(white_vec=dyn.white_vec, prec_sqrt=ps, inputs=dyn.inputs)
    for d in ds:
        bad = bad + d
    messages = []
    for fused in (True, False):
        with pytest.raises(ValueError) as info:
            _filter(init, bad, 1, fused)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "x_prev" in messages[0], messages[0]


@pytest.fixture
def scans(monkeypatch):
    """The number of steps each compiled lax.scan of the fused steps ran."""
    from funsor_core.algorithms.filter import fused as filtering_fused

    ran = []
    real = filtering_fused.scan_steps

    def counted_scan(state, t, blocks, cycle):
        ran.append(blocks * len(cycle))
        return real(state, t, blocks, cycle)

    monkeypatch.setattr(filtering_fused, "scan_steps", counted_scan)
    return ran


@pytest.mark.parametrize("window, jit", [(1, False), (1, True)])
def test_jax_runs_repeating_steps_as_one_scan(scans, window, jit):
    # On jax the steps after the first period (2 steps for window 1) run as one compiled
    # lax.scan: eagerly and under jax.jit, the same total as the numpy GPB.
    import jax

    p = _slds(seed=13, T=12, K=2, d=2, obs_dim=1)

    def run(y):
        init, trans = _slds_factors(dict(p, y=y), "jax")
        msg = _filter(init, trans, window)
        return _total(msg)

    fc.set_backend("jax")
    try:
        value = (jax.jit(run) if jit else run)(_array("jax", p["y"]))
    finally:
        fc.set_backend("numpy")
    assert scans and sum(scans) >= 6, scans
    np.testing.assert_allclose(float(value), _numpy_gpb(p, window), rtol=1e-10)


def test_eager_jax_scan_of_a_singular_step_raises_as_numpy(scans):
    # The compiled loop cannot raise: its singular component gives an infinite constant, and
    # the steps are run again in Python, which raise the error naming the coordinates.
    from funsor_core.atoms.gaussian.algebra import split_gaussian_sum

    p = _slds(seed=14, T=12, K=2, d=2, obs_dim=1)
    errors = []
    for backend in ("numpy", "jax"):
        fc.set_backend(backend)
        try:
            init, trans = _slds_factors(p, backend)
            gs, ds = split_gaussian_sum(trans)
            (dyn,) = gs
            ps = np.array(dyn.prec_sqrt, copy=True)
            where = {"time": slice(7, None), "s_curr": 1}
            ps[tuple(where[k] for k, d in dyn.inputs.items() if d.dtype != "real")] = 0.0
            bad = fc.Gaussian(white_vec=dyn.white_vec, prec_sqrt=_array(backend, ps),
                              inputs=dyn.inputs)
            for d in ds:
                bad = bad + d
            with pytest.raises(ValueError) as info:
                _filter(init, bad, 1)
            errors.append(str(info.value))
        finally:
            fc.set_backend("numpy")
    assert scans, "the jax run did not try the compiled loop"
    assert errors[0] == errors[1]


def test_jax_gradients_under_jit_equal_finite_differences():
    # jax.grad through the fused steps (their lax.scan and the guarded normal equations) used
    # to fail with "No constant handler for type: DynamicJaxprTracer" (issue 27, item 16):
    # the guard's custom derivative closed over tracers. Oracle: central differences of the
    # numpy GPB filter in theta, log weights of the switches. Under jit only: eager jax.grad
    # runs the same guard (tests/backends' guarded test holds it under eager grad) op by op,
    # a compile each, which costs the suite seconds and proves nothing more.
    import jax
    import jax.numpy as jnp

    p = _slds(seed=8, T=3, K=2, d=1, obs_dim=1)

    def loglik(theta):
        init, trans = _slds_factors(p, "jax")
        trans = trans + fc.Tensor(theta, {"s_curr": fc.Bint[2]})
        return _total(_filter(init, trans, 1))

    theta0 = np.array([0.3, -0.2])
    fc.set_backend("jax")
    try:
        jitted = jax.jit(jax.grad(loglik))(jnp.asarray(theta0))
    finally:
        fc.set_backend("numpy")

    def gpb(theta):
        return _numpy_gpb(dict(p, trans=p["trans"] * np.exp(theta)[None, :]), 1)

    eps = 1e-6
    numeric = [(gpb(theta0 + eps * e) - gpb(theta0 - eps * e)) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(np.asarray(jitted), numeric, rtol=1e-6)
