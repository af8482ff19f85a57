"""Evidence lower bounds where the guide gives a state probability 0: 0 log 0 = 0, so the
bound is the sum over the guide's support only (a numpy oracle by hand), finite, with finite
gradients; on numpy, torch, jax and under jax.jit; through ``elbo``, the ``Elbo``
interpretation, a lazy model, a batched guide, a guide over several names, and a guide that
is a mixture of Gaussians (Tensor + Gaussian) against Gaussian KL divergences in closed form.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.variational.elbo import elbo
from funsor_core.distribution import Normal
from funsor_core.domains import Bint, Real
from interpretations import lazy
from interpretations.elbo import Elbo

jax.config.update("jax_enable_x64", True)
Z = {"z": Bint[3]}
Q = np.array([0.4, 0.0, 0.6])
P = np.array([0.3, 0.2, 0.5])


def _log(x):
    with np.errstate(divide="ignore"):
        return np.log(x)


def _oracle(q, p):
    """sum_z q (log p - log q) over q > 0, and its gradients in log q and log p."""
    on = q > 0
    value = np.sum(q[on] * (np.log(p[on]) - np.log(q[on])))
    safe_p, safe_q = np.where(on, p, 1.0), np.where(on, q, 1.0)
    d_log_q = np.where(on, q * (np.log(safe_p) - np.log(safe_q) - 1.0), 0.0)
    return value, d_log_q, q


def _array(backend, x):
    if backend == "torch":
        return torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return jnp.asarray(x) if backend in ("jax", "jit") else np.asarray(x)


def _bound(log_p, log_q):
    return elbo(fc.Tensor(log_p, Z), fc.Tensor(log_q, Z), "z").data


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
def test_guide_with_a_zero_probability_state(backend):
    expected, d_log_q, d_log_p = _oracle(Q, P)
    log_p, log_q = _array(backend, _log(P)), _array(backend, _log(Q))
    if backend == "numpy":
        assert float(_bound(log_p, log_q)) == pytest.approx(expected, rel=1e-12)
        return
    if backend == "torch":
        value = _bound(log_p, log_q)
        value.backward()
        value = value.detach()
        grads = (log_q.grad.numpy(), log_p.grad.numpy())
    else:
        fn = jax.value_and_grad(lambda a, b: _bound(b, a), argnums=(0, 1))
        value, grads = (jax.jit(fn) if backend == "jit" else fn)(log_q, log_p)
    assert float(value) == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(np.asarray(grads[0]), d_log_q, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.asarray(grads[1]), d_log_p, rtol=1e-12, atol=1e-15)


def test_zero_in_both_the_model_and_the_guide_and_a_zero_only_in_the_model():
    both = np.array([0.5, 0.0, 0.5])
    with np.errstate(invalid="ignore"):  # -inf - -inf in the integrand p - q, where q = 0
        actual = _bound(_log(both), _log(Q))
    assert float(actual) == pytest.approx(_oracle(Q, both)[0], rel=1e-12)
    # The guide puts mass where the model has none: the bound is -inf (not NaN).
    assert float(_bound(_log(np.array([0.0, 0.5, 0.5])), _log(Q))) == -np.inf


def test_elbo_interpretation_lazy_model_and_batched_guide():
    expected = _oracle(Q, P)[0]
    log_q = fc.Tensor(_log(Q), Z)
    with Elbo(log_q, {"z"}):
        assert float(fc.Tensor(_log(P), Z).reduce(ops.logaddexp, "z").data) == pytest.approx(
            expected, rel=1e-12)
    with lazy:
        lazy_bound = elbo(fc.Tensor(_log(P), Z) + fc.Number(0.0), log_q, "z")
    assert float(fc.reinterpret(lazy_bound).data) == pytest.approx(expected, rel=1e-12)
    other = np.array([0.0, 0.3, 0.7])
    batched = fc.Tensor(_log(np.stack([Q, other])), {"b": Bint[2], **Z})
    actual = elbo(fc.Tensor(_log(P), Z), batched, "z").data
    np.testing.assert_allclose(actual, [expected, _oracle(other, P)[0]], rtol=1e-12)


def test_guide_over_two_names_with_zeros():
    qy = np.array([1.0, 0.0])
    log_p = _log(np.full((2, 3), 1 / 6))
    joint_q = qy[:, None] * Q[None]  # q(y, z) = q(y) q(z)
    guide = fc.Tensor(_log(qy), {"y": Bint[2]}) + fc.Tensor(_log(Q), Z)
    model = fc.Tensor(log_p, {"y": Bint[2], **Z})
    expected = _oracle(joint_q.ravel(), np.full(6, 1 / 6))[0]
    assert float(elbo(model, guide, frozenset({"y", "z"})).data) == pytest.approx(
        expected, rel=1e-12)
    with Elbo(guide, {"y", "z"}):
        actual = model.reduce(ops.logaddexp, frozenset({"y", "z"}))
    assert float(actual.data) == pytest.approx(expected, rel=1e-12)


def _gaussian_kl(m1, s1, m2, s2):
    return np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5


@pytest.mark.parametrize("backend", ["numpy", "torch", "jit"])  # eager jax grad: 17 s
def test_mixture_guide_with_a_zero_weight_component(backend):
    # q(z, x) = q(z) N(x; m_z, 1), p(z, x) = p(z) N(x; m_z / 2, 2): the bound is
    # sum_{q(z) > 0} q(z) [log p(z) - log q(z) - KL(N(m_z, 1) || N(m_z / 2, 2))].
    loc = np.array([0.0, 1.0, 2.0])
    on = Q > 0
    expected = np.sum(Q[on] * (np.log(P[on]) - np.log(Q[on])
                               - _gaussian_kl(loc[on], 1.0, loc[on] / 2, 2.0)))
    # d/dm of KL(N(m, 1) || N(m / 2, 2)) = (m - m / 2) (1 - 1 / 2) / 2 ** 2 = m / 16: the
    # zero-weight component gets 0, not NaN.
    d_loc = -Q * loc / 16
    x = fc.Variable("x", Real)

    def bound(log_q, log_p, m):
        q = fc.Tensor(log_q, Z) + Normal(fc.Tensor(m, Z), 1.0, value=x)
        p = fc.Tensor(log_p, Z) + Normal(fc.Tensor(m * 0.5, Z), 2.0, value=x)
        return elbo(p, q, frozenset({"z", "x"})).data

    args = [_array(backend, a) for a in (_log(Q), _log(P), loc)]
    fc.set_backend("jax" if backend == "jit" else backend)
    try:
        if backend == "numpy":
            value, grad = bound(*args), d_loc
        elif backend == "torch":
            value = bound(*args)
            value.backward()
            value = value.detach()
            grad = args[2].grad.numpy()
        else:
            fn = jax.value_and_grad(bound, argnums=2)
            value, grad = (jax.jit(fn) if backend == "jit" else fn)(*args)
    finally:
        fc.set_backend("numpy")
    assert float(value) == pytest.approx(expected, rel=1e-10)
    np.testing.assert_allclose(np.asarray(grad), d_loc, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_monte_carlo_bound_never_draws_a_zero_probability_state(backend):
    # Each particle's estimate is log p(z) - log q(z) at a z drawn from q: only the states
    # with q(z) > 0 (exact values, no statistics), so every particle is finite.
    from interpretations.monte_carlo import MonteCarlo

    with MonteCarlo(particle=Bint[200], rng_key=0):
        bound = elbo(fc.Tensor(_array(backend, _log(P)), Z),
                     fc.Tensor(_array(backend, _log(Q)), Z), "z")
    values = np.asarray(bound.data.detach() if backend == "torch" else bound.data)
    assert set(bound.inputs) == {"particle"}
    on = Q > 0
    np.testing.assert_allclose(np.unique(np.round(values, 10)),
                               np.sort(np.round(np.log(P[on] / Q[on]), 10)))
