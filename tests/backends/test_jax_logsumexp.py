"""jax's logsumexp kernel gives the reduced shape directly (no kept axis squeezed after):
values against scipy in float32 under jax.jit, -inf slices included, and its derivative
(softmax, 0 on all -inf slices) against numpy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special

from funsor_core import ops

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("jax.extend.core")


def _inputs(dtype):
    x = np.random.default_rng(3).normal(size=(3, 4, 2)).astype(dtype)
    x[0, 1] = -np.inf  # one -inf row inside a slice that has finite entries
    x[:, 2] = -np.inf  # a slice of all -inf: log 0 = -inf, derivative 0
    return x


def _softmax(x, axis):  # numpy oracle of d logsumexp: exp(x - lse), 0 on all -inf slices
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.exp(x - scipy.special.logsumexp(x, axis=axis, keepdims=True))
    return np.nan_to_num(w, nan=0.0)


def test_jax_logsumexp_reduced_shape_values_and_derivative_under_jit():
    # float32 under one jax.jit (float64 eager: test_backends.py's test_logsumexp_oracle).
    x = _inputs("float32")
    cases = [((0, 2), False), ((0, -1), True), (None, False)]

    @jax.jit
    def run(v):
        outs = [ops.logsumexp(v, axis=a, keepdims=k) for a, k in cases]
        return outs, jax.grad(lambda v: ops.logsumexp(v, axis=(0, 2)).clip(-1e30).sum())(v)

    outs, grad = run(jnp.asarray(x))
    for out, (axis, keepdims) in zip(outs, cases):
        with np.errstate(divide="ignore"):
            oracle = scipy.special.logsumexp(x.astype(np.float64), axis=axis,
                                             keepdims=keepdims)
        assert out.shape == oracle.shape and out.dtype == np.float32
        np.testing.assert_allclose(np.asarray(out), oracle, rtol=1e-6)
    assert np.isfinite(np.asarray(grad)).all()
    np.testing.assert_allclose(np.asarray(grad), _softmax(x.astype(np.float64), (0, 2)),
                               rtol=1e-6, atol=1e-7)


def _exps(jaxpr) -> list:  # the shapes of every exp, sub-jaxprs (pjit, custom_jvp) included
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "exp":
            found.append(tuple(eqn.outvars[0].aval.shape))
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            found += _exps(sub)
    return found


@pytest.mark.parametrize("form", ["primitives", "primitives large", "default", "shared"])
def test_jax_logsumexp_value_and_grad_exps(form, monkeypatch):
    # logsumexp_shared: the value and its softmax weights share exp(x - max) (a second
    # exp(x - value) doubled the cost of a plated contraction's gradient); so does
    # logsumexp_primitives of a small input under a trace, differentiated from its
    # primitives; logsumexp (and logsumexp_primitives past PRIMITIVE_DERIVATIVE_UP_TO
    # entries) keeps an exp of its own for the weights, which XLA fuses where x is a large
    # broadcast. Values: scipy; weights: numpy's softmax, 0 on the all -inf slice.
    from backends import jax_logsumexp

    if form == "primitives large":
        monkeypatch.setattr(jax_logsumexp, "PRIMITIVE_DERIVATIVE_UP_TO", 0)
    x = _inputs("float32")
    lse_fn = {"shared": jax_logsumexp.logsumexp_shared, "default": ops.logsumexp}.get(
        form, jax_logsumexp.logsumexp_primitives)
    f = jax.value_and_grad(lambda v: lse_fn(v, axis=1).clip(-1e30).sum())
    exps = 1 if form in ("shared", "primitives") else 2
    assert _exps(jax.make_jaxpr(f)(jnp.asarray(x)).jaxpr) == [x.shape] * exps
    value, grad = jax.jit(f)(jnp.asarray(x))
    with np.errstate(divide="ignore"):
        lse = scipy.special.logsumexp(x.astype(np.float64), axis=1)
    np.testing.assert_allclose(float(value), lse.clip(-1e30).sum(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad), _softmax(x.astype(np.float64), 1),
                               rtol=1e-6, atol=1e-7)


def test_second_derivative_finite_on_an_all_minus_inf_slice():
    # the weights' shift was where(out == -inf, 0, out): a zero cotangent into out's own
    # derivative (exp(-inf + inf) = NaN) made the Hessian NaN on the dead row; oracle: the
    # softmax Hessian diag(p) - p p' on live rows, 0 on the dead one
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from backends.jax_logsumexp import logsumexp

    x = np.array([[0.5, -1.0, -np.inf], [-np.inf, -np.inf, -np.inf]], np.float32)
    v = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], np.float32)

    def total(y):
        return jnp.sum(logsumexp(y, axis=1))

    # reverse over reverse (a loss on a gradient, as on markov_marginals' pairs)
    hv = jax.grad(lambda y: jnp.sum(jax.grad(total)(y) * jnp.asarray(v)))(jnp.asarray(x))
    p = np.exp(x[0] - np.logaddexp.reduce(x[0]))
    expected = np.stack([(np.diag(p) - np.outer(p, p)) @ v[0], np.zeros(3)])
    np.testing.assert_allclose(np.asarray(hv), expected, atol=1e-6)
