"""The derivative of funsor's ``sequential_sum_product`` (logaddexp, add) under ``jax.jit``:
from K = 9 states on taken through the linear-space tree that computes the value (K^2 per
step, where the exact tree's derivative materializes K^3 weights), with the exact tree where
the check fails; below, the exact tree's derivative.

Oracles: brute-force enumeration of every path in numpy float64 (K = 3), and a float64
forward-backward pass in numpy with scipy's logsumexp (K = 10): log Z, and its derivative,
the pairwise marginals; under ``jax.vmap`` a batch mixing well-scaled chains with chains
that fail the check (true zeros, a range past the float exponent) must give each member's
own derivative, finite, with no NaN leaking from the discarded branch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from funsor_core.sum_product import sequential_sum_product

jax = pytest.importorskip("jax")
jnp = jax.numpy

T = 4


def _forward_backward(mats: np.ndarray) -> tuple[float, np.ndarray]:
    from scipy.special import logsumexp

    steps, k = mats.shape[0], mats.shape[-1]
    alpha, beta = [np.zeros(k)], [np.zeros(k)]
    for t in range(steps):
        alpha.append(logsumexp(alpha[-1][:, None] + mats[t], axis=0))
        beta.insert(0, logsumexp(mats[steps - 1 - t] + beta[0][None, :], axis=1))
    log_z = float(logsumexp(alpha[-1]))
    grad = np.exp(np.stack([alpha[t][:, None] + mats[t] + beta[t + 1][None, :]
                            for t in range(steps)]) - log_z)
    return log_z, grad


def _brute(mats: np.ndarray) -> tuple[float, np.ndarray]:
    if mats.shape[-1] > 3:
        return _forward_backward(mats)
    K = mats.shape[-1]
    # log Z over all K^(T+1) paths and d log Z / d mats (the pairwise marginals).
    logs, grads = [], []
    for path in itertools.product(range(K), repeat=T + 1):
        w = sum(mats[t, path[t], path[t + 1]] for t in range(T))
        logs.append(w)
        g = np.zeros_like(mats)
        for t in range(T):
            g[t, path[t], path[t + 1]] = 1.0
        grads.append(g)
    logs = np.array(logs)
    top = logs[np.isfinite(logs)].max()
    p = np.exp(logs - top)
    z = p.sum()
    return float(np.log(z) + top), np.tensordot(p / z, np.array(grads), 1)


def _log_z(m):
    K = m.shape[-1]
    t = fc.Tensor(m, {"time": Bint[T], "prev": Bint[K], "curr": Bint[K]})
    out = sequential_sum_product(ops.logaddexp, ops.add, t, "time", {"prev": "curr"})
    return out.reduce(ops.logaddexp).data


def _cases(dtype, K: int) -> list[np.ndarray]:
    rng = np.random.default_rng(K)
    plain = rng.normal(size=(T, K, K))
    zeros = plain.copy()
    zeros[1, 0, :] = -np.inf  # a state with no way on: a true zero
    zeros[2, :, 1] = -np.inf
    wide = plain.copy()
    big = 60.0 if dtype == np.float32 else 600.0  # past the exponent once combined
    wide[0] *= big
    wide[3] *= big
    return [m.astype(dtype) for m in (plain, zeros, wide)]


@pytest.mark.parametrize("K", [3, 10])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jit_grad_equals_enumeration_and_vmap_keeps_members_apart(dtype, K):
    fc.set_backend("jax")
    try:
        cases = _cases(dtype, K)
        grad = jax.jit(jax.value_and_grad(_log_z))
        rtol = 1e-9 if dtype == np.float64 else 2e-4
        for m in cases:
            value, g = grad(jnp.asarray(m))
            want_value, want_g = _brute(m.astype(np.float64))
            np.testing.assert_allclose(float(value), want_value, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(np.asarray(g), want_g, rtol=rtol, atol=10 * rtol)
        values, grads = jax.jit(jax.vmap(jax.value_and_grad(_log_z)))(jnp.asarray(np.stack(cases)))
        assert np.isfinite(np.asarray(grads)).all()
        for m, v, g in zip(cases, np.asarray(values), np.asarray(grads)):
            want_value, want_g = _brute(m.astype(np.float64))
            np.testing.assert_allclose(v, want_value, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(g, want_g, rtol=rtol, atol=10 * rtol)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("stepped", [False, True])
def test_jit_grad_long_float32_chain_through_the_exact_fallback(stepped, monkeypatch):
    # A left-to-right chain (true zeros below the diagonal: the linear-space check fails, the
    # step-by-step exact branch answers) of 300 float32 steps whose entries reach -40 per
    # step (the log of the product passes -10^4): value and derivative (the pairwise
    # marginals) as a float64 forward-backward pass; forward mode (jvp) as reverse mode.
    # ``stepped``: the exact branch's rounds pair by pair (a scan), as for large chains.
    from funsor_core.algorithms.chains import discrete_tree

    monkeypatch.setattr(discrete_tree, "STEPPED_FROM", 0 if stepped else 1 << 40)
    fc.set_backend("jax")
    try:
        steps, K = (301 if stepped else 300), 10  # new shapes: jitted kernels are cached
        rng = np.random.default_rng(7)
        m = rng.normal(size=(steps, K, K)) * 10 - 30
        m[:, np.tril_indices(K, -1)[0], np.tril_indices(K, -1)[1]] = -np.inf
        m = m.astype(np.float32)

        def log_z(x):
            t = fc.Tensor(x, {"time": Bint[steps], "prev": Bint[K], "curr": Bint[K]})
            out = sequential_sum_product(ops.logaddexp, ops.add, t, "time", {"prev": "curr"})
            return out.reduce(ops.logaddexp).data

        assert _has_scan(jax.make_jaxpr(jax.grad(log_z))(jnp.asarray(m)).jaxpr) == stepped
        value, g = jax.jit(jax.value_and_grad(log_z))(jnp.asarray(m))
        want_value, want_g = _forward_backward(m.astype(np.float64))
        np.testing.assert_allclose(float(value), want_value, rtol=1e-5)
        # The product's log entries reach -9e3, whose float32 ulp (1e-3) the marginals'
        # exp(entry - log Z) inherit: atol 1e-3 (found 1.4e-4 to 2.2e-4).
        np.testing.assert_allclose(np.asarray(g), want_g, atol=1e-3)
        direction = rng.normal(size=m.shape).astype(np.float32)
        _, tangent = jax.jit(lambda x, d: jax.jvp(log_z, (x,), (d,)))(jnp.asarray(m),
                                                                     jnp.asarray(direction))
        np.testing.assert_allclose(float(tangent), float((want_g * direction).sum()), rtol=1e-3)
    finally:
        fc.set_backend("numpy")


def _has_scan(jaxpr) -> bool:
    from jax.extend import core

    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            return True
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, core.ClosedJaxpr) and _has_scan(sub.jaxpr):
                    return True
                if isinstance(sub, core.Jaxpr) and _has_scan(sub):
                    return True
    return False
