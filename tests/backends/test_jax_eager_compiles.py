"""Eager jax (also under an eager ``jax.grad``) compiles a program once per shape, never once
per call: a ``backend.cond`` whose predicate has a value runs the taken branch in Python, as
jax itself does under ``disable_jit``. Oracles: numpy brute force of the same contraction and
its derivative (``tests/algorithms`` check the same plans under ``jax.jit``)."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import numpy as np
import pytest
from scipy.special import logsumexp

from funsor_core import ops
from funsor_core.algorithms.contract.plan import plan_contraction

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_backend = pytest.importorskip("backends.jax")


@contextmanager
def compiles():
    names: list = []
    handler = logging.Handler()
    handler.emit = lambda r: names.append(r.getMessage()) if r.getMessage().startswith(
        "Compiling ") else None
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.log_compiles(True):
            yield names
    finally:
        logging.getLogger("jax").removeHandler(handler)


# A log-space plan with a step that sums nothing (an outer sum, kept whole): under jax.grad
# it picks linear space or the exact steps by a check on the values (backend.cond).
PLAN = plan_contraction((("a",), ("b",), ("c",)), {"a": 2, "b": 3, "c": 4}, ("a", "b", "c"))


def _loss(w, *xs):
    return (w * PLAN.run_arrays(ops.logaddexp, ops.add, list(xs))).sum()


def test_eager_grad_of_a_checked_plan_compiles_nothing_the_second_time():
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=n).astype(np.float32) for n in (2, 3, 4)]
    w = rng.normal(size=(2, 3, 4)).astype(np.float32)
    args = [jnp.asarray(w)] + [jnp.asarray(x) for x in xs]
    grad = jax.value_and_grad(_loss, argnums=(1, 2, 3))
    grad(*args)
    with compiles() as names:
        value, (da, db, dc) = grad(*args)
    assert names == []
    # numpy oracle: out[a, b, c] = x0[a] + x1[b] + x2[c]; d loss / d x0[a] = sum_bc w[a, b, c].
    out = xs[0][:, None, None] + xs[1][None, :, None] + xs[2][None, None, :]
    np.testing.assert_allclose(float(value), (w * out).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(da), w.sum((1, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(db), w.sum((0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(dc), w.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_cond_branches_in_python_on_a_known_value_and_traces_otherwise():
    def f(x):  # x**2 summed where the sum is positive, else -x summed
        return jax_backend.cond(x.sum() > 0, lambda v: (v * v).sum(), lambda v: -v.sum(), x)

    x = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    oracle = [((r * r).sum(), 2 * r) if r.sum() > 0 else (-r.sum(), -np.ones_like(r))
              for r in x]
    for row, (value, grad) in zip(x, oracle):
        f_row = jax.value_and_grad(f)
        f_row(jnp.asarray(row))
        with compiles() as names:
            v, g = f_row(jnp.asarray(row))
        assert names == []
        np.testing.assert_allclose(float(v), value, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(g), grad, rtol=1e-6)
    # A batched predicate (vmap) has no value: lax.cond, which runs as a select.
    batched = jax.vmap(f)(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(batched), [v for v, _ in oracle], rtol=1e-6)


def test_eager_logsumexp_compiles_one_program_per_shape():
    # Op by op, jax.nn.logsumexp compiled 13 programs for a new shape (33 with its gradient).
    import scipy.special

    x = np.random.default_rng(1).normal(size=(3, 7)).astype(np.float32)
    x[1] = -np.inf  # an all -inf slice: value -inf, derivative 0
    xj = jnp.asarray(x)
    with compiles() as names:
        value = ops.logsumexp(xj, axis=1)
    assert len(names) == 1
    with compiles() as names:
        grad = jax.grad(lambda v: (ops.logsumexp(v, axis=1).clip(-1e30) * 2.0).sum())(xj)
    assert sum("_lse_" in n for n in names) == 1  # the value and softmax weights, jitted whole
    with np.errstate(divide="ignore", invalid="ignore"):
        oracle = scipy.special.logsumexp(x.astype(np.float64), axis=1)
        weights = np.nan_to_num(np.exp(x - oracle[:, None]), nan=0.0)
    np.testing.assert_allclose(np.asarray(value), oracle, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad), 2.0 * weights, rtol=1e-5, atol=1e-7)


def test_linear_space_chain_one_step_longer_compiles_nothing_new():
    # The linear-space run re-letters each step's einsum canonically and pads its same-shape
    # stacks to a power of two, so a chain of 7 variables after one of 6 reuses every
    # compiled op (NumPyro's unrolled markov loop at a new length). Oracle: the forward
    # algorithm in numpy.
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(6)
    for length in (6, 7):
        names = [f"x{t}" for t in range(length)]
        operands = [(n,) for n in names] + list(zip(names, names[1:]))
        xs = [rng.normal(size=(2,) * len(o)) for o in operands]
        alpha = xs[0]
        for unary, pair in zip(xs[1:length], xs[length:]):
            alpha = logsumexp(alpha[:, None] + pair, axis=0) + unary
        plan = plan_contraction(operands, dict.fromkeys(names, 2), ())
        with compiles() as names_compiled:
            value = plan.run_arrays(ops.logaddexp, ops.add, [jnp.asarray(x) for x in xs])
        np.testing.assert_allclose(float(value), logsumexp(alpha), rtol=1e-12)
    assert names_compiled == []


def _log_chain_oracle(mats):
    # The log-space product of the step matrices, and the derivative of its logsumexp (all
    # endpoints summed) by the forward-backward algorithm: the pair marginals of each step.
    alphas, alpha = [], np.zeros(mats.shape[1])
    for m in mats:
        alphas.append(alpha)
        alpha = logsumexp(alpha[:, None] + m, axis=0)
    betas, beta = [], np.zeros(mats.shape[1])
    for m in mats[::-1]:
        betas.append(beta)
        beta = logsumexp(m + beta[None, :], axis=1)
    total = mats[0]
    for m in mats[1:]:
        total = logsumexp(total[:, :, None] + m[None, :, :], axis=1)
    log_z = logsumexp(total)
    with np.errstate(invalid="ignore"):
        grad = np.exp(np.array(alphas)[:, :, None] + mats + np.array(betas[::-1])[:, None, :]
                      - log_z)
    return total, np.nan_to_num(grad, nan=0.0)


def test_parallel_chain_of_a_new_length_reuses_its_compiled_tree():
    # Eager jax pads a tree chain's time axis to a power of two (chains.discrete_padding):
    # NumPyro's scan HMM (sequential_sum_product) at T = 6 and 7 after T = 5 runs T = 5's
    # program; a new length compiles only the padding's concatenation. Oracle: the log-space
    # matrix product and the forward-backward pair marginals in numpy.
    from funsor_core.algorithms.chains.discrete import chain_product

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(7)

    def product(x):
        return chain_product(ops.logaddexp, ops.add, (x,), "parallel")

    for length in (5, 6, 7):
        mats = rng.normal(size=(length, 3, 3))
        if length == 7:
            mats[2, 0] = mats[4, :, 1] = -np.inf  # true zeros: the exact tree's branch
        total, grad = _log_chain_oracle(mats)
        x = jnp.asarray(mats)
        with compiles() as names:
            value = product(x)
        np.testing.assert_allclose(np.asarray(value), total, rtol=1e-12)
        if length > 5:
            assert not any("_run" in n for n in names) and len(names) <= 1, names
        if length == 7:  # the derivative: the exact tree's, padded steps passed over too
            d = jax.grad(lambda x: ops.logsumexp(product(x).reshape(-1), 0))(x)
            np.testing.assert_allclose(np.asarray(d), grad, rtol=1e-10, atol=1e-12)


def test_padded_chain_with_a_factor_shared_by_all_steps():
    # A step m + o(t), m without time: padded to a power of two on eager jax, the padded
    # steps must not count m (it was added once per padded step: 8.05 for 2.29). Oracle: the
    # numpy log-space product of the materialized steps, and its forward-backward gradient.
    from funsor_core.algorithms.chains.discrete import chain_product

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(3)
    for states, length in ((1, 18), (3, 11)):
        m, o = rng.normal(size=(1, states, states)), rng.normal(size=(length, 1, states))
        total, grad = _log_chain_oracle(m + o)

        shared_o = jnp.asarray(o)

        def product(m, o=shared_o):
            return chain_product(ops.logaddexp, ops.add, (m, o), "parallel")

        value = product(jnp.asarray(m))
        np.testing.assert_allclose(np.asarray(value), total, rtol=1e-12)
        d = jax.grad(lambda m: ops.logsumexp(product(m).reshape(-1), 0))(jnp.asarray(m))
        np.testing.assert_allclose(np.asarray(d)[0], grad.sum(0), rtol=1e-10, atol=1e-12)


def _masked_forward(sum_np, left, m, o, keep):
    # The forward messages in numpy: alpha <- sum_i alpha[i] * M_t[i, j] where step t of
    # entry b counts, else alpha kept (a ragged batch: each entry its own shorter chain).
    alpha = left
    for t in range(o.shape[0]):
        new = sum_np(alpha[:, :, None] + m + o[t], axis=1)
        alpha = np.where(keep[t][:, None], new, alpha)
    return alpha


@pytest.mark.parametrize("semiring, strategy, ragged", [
    ("logaddexp", "sequential", True), ("max", "parallel", False)])
def test_masked_or_bounded_chain_of_a_new_length_reuses_its_program(semiring, strategy,
                                                                    ragged):
    # Eager jax pads the other chains (a boundary, a ragged mask, max-plus) to a power of two
    # as masked chains (discrete_padding.masked_padding): T = 6 and 7 after T = 5 run T = 5's
    # program, a new T compiles only the padding. Oracles: the numpy forward algorithm with
    # each entry's own length, and central differences of it in float64.
    from funsor_core.algorithms.chains.discrete import chain_product

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(11)
    sum_op, sum_np = {"logaddexp": (ops.logaddexp, logsumexp), "max": (ops.max, np.max)}[semiring]
    m, left = rng.normal(size=(1, 3, 3)), rng.normal(size=(2, 3))
    for length in (5, 6, 7):
        o = rng.normal(size=(length, 2, 1, 3))
        keep = np.arange(length)[:, None] < np.array([length, 3 if ragged else length])
        mask, oj = jnp.asarray(keep) if ragged else None, jnp.asarray(o)

        def product(o, mask=mask):
            return chain_product(sum_op, ops.add, (jnp.asarray(m), o), strategy,
                                 jnp.asarray(left), mask=mask)

        with compiles() as names:
            value = product(oj)
        np.testing.assert_allclose(np.asarray(value), _masked_forward(sum_np, left, m, o, keep),
                                   rtol=1e-12)
        if length > 5:
            assert not any("_run" in n for n in names) and len(names) <= 1, names
    d = jax.grad(lambda o: ops.logsumexp(product(o).reshape(-1), 0))(oj)
    np.testing.assert_allclose(np.asarray(d), _fd_total(sum_np, left, m, o, keep), atol=1e-7)


def _fd_total(sum_np, left, m, o, keep, eps=1e-6):
    def total(o):
        return logsumexp(_masked_forward(sum_np, left, m, o, keep))

    grad = np.zeros_like(o)
    for i in np.ndindex(o.shape):
        d = np.zeros_like(o)
        d[i] = eps
        grad[i] = (total(o + d) - total(o - d)) / (2 * eps)
    return grad
