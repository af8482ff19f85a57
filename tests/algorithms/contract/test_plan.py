"""Contraction plans and their array kernels: no limit on the number of variables, the scaled
log-space run against the exact one, gradients through it, and bounded intermediates.

Oracles: the forward algorithm written by hand in numpy, numpy's einsum, scipy's logsumexp,
finite differences.
"""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract import linear_space as scaled_module
from funsor_core.algorithms.contract.kernels import ascii_equation, linear_pair, pair
from funsor_core.algorithms.contract.linear_space import run_log_plan
from funsor_core.algorithms.contract.plan import contraction_cost, plan_contraction, plan_terms
from funsor_core.einsum import einsum
from funsor_core.sum_product import sum_product
from funsor_core.testing import make_chain_einsum, make_hmm_einsum

SEMIRING_ORACLES = {
    "log": (lambda a, m: logsumexp(a[:, :, None] + m[None], axis=1)),
    "numpy": (lambda a, m: np.einsum("bi,ij->bj", a, m)),
    "max": (lambda a, m: np.max(a[:, :, None] + m[None], axis=1)),
}


def forward(semiring, init, mats):
    # The chain by hand: alpha_{t+1}(j) = sum_i alpha_t(i) * M_t(i, j), batched over nothing.
    alpha = init[None]
    for m in mats:
        alpha = SEMIRING_ORACLES[semiring](alpha, m)
    if semiring == "log":
        return logsumexp(alpha)
    return alpha.sum() if semiring == "numpy" else alpha.max()


@pytest.mark.parametrize("steps", [60, 120])
@pytest.mark.parametrize("semiring", ["log", "numpy", "max"])
def test_chains_of_more_than_52_and_100_variables(steps, semiring, backend):
    # opt_einsum's symbols go past 'Z' into non-ASCII letters; each pairwise step is
    # re-lettered for the backend's einsum, so there is no limit on the number of variables.
    eq = make_chain_einsum(steps)
    rng = np.random.default_rng(steps)
    init = rng.uniform(0.5, 1.5, size=3)
    mats = [rng.uniform(0.2, 0.6, size=(3, 3)) for _ in range(steps)]
    arrays = [init] + mats
    expected = forward(semiring, init, mats)
    actual = einsum(eq, *[fc.to_data(fc.Tensor(a)) for a in arrays], backend=semiring)
    np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-9)


def test_hundred_variable_chain_under_jit():
    jax = pytest.importorskip("jax")
    eq = make_hmm_einsum(60)  # 121 factors over 61 variables
    rng = np.random.default_rng(0)
    shapes = [(2,) * len(term) for term in eq.split("->")[0].split(",")]
    arrays = [rng.normal(size=s) for s in shapes]
    expected = einsum(eq, *arrays, backend="log")
    fc.set_backend("jax")
    try:
        jitted = jax.jit(lambda *xs: einsum(eq, *xs, backend="log"))
        actual = jitted(*[jax.numpy.asarray(a) for a in arrays])
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-9)


def test_one_step_of_more_than_52_dims_uses_a_matrix_product(backend):
    # x has 30 dims and y 30, sharing one that is summed: the step names 59 dims, more than
    # any einsum can letter; the batched matmul needs no letters.
    rng = np.random.default_rng(1)
    lx = "".join(chr(0x100 + k) for k in range(30))
    ly = lx[-1] + "".join(chr(0x200 + k) for k in range(29))
    out = lx[:-1] + ly[1:]
    assert ascii_equation(lx + ly[1:], lx, ly, out) is None
    xs, ys = rng.normal(size=(2, 2, 2)), rng.normal(size=(2, 2, 2))
    x = xs.reshape((2, 2) + (1,) * 27 + (2,))  # dims 0, 1 and the shared last one
    y = ys.reshape((2,) + (1,) * 27 + (2, 2))  # the shared first dim and its last two
    got = linear_pair(fc.to_data(fc.Tensor(x)), lx, fc.to_data(fc.Tensor(y)), ly, out)
    expected = np.einsum("abs,scd->abcd", xs, ys)
    assert len(got.shape) == 58
    np.testing.assert_allclose(ops.to_numpy(got).reshape(expected.shape), expected,
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scaled_log_run_equals_the_exact_steps(dtype):
    rng = np.random.default_rng(2)
    names = [("a",), ("a", "b"), ("b", "c"), ("c", "d"), ("d",), ("b", "e")]
    sizes = {"a": 3, "b": 4, "c": 2, "d": 3, "e": 2}
    plan = plan_contraction(names, sizes, ("e",))
    arrays = [rng.normal(scale=3.0, size=tuple(sizes[n] for n in ns)).astype(dtype)
              for ns in names]
    arrays[1][0, 1] = -np.inf  # a true zero
    scaled = run_log_plan(plan, arrays)
    assert scaled is not None and scaled.dtype == np.dtype(dtype)
    # Oracle: brute force over every assignment.
    total = (arrays[0][:, None, None, None, None] + arrays[1][:, :, None, None, None]
             + arrays[2][None, :, :, None, None] + arrays[3][None, None, :, :, None]
             + arrays[4][None, None, None, :, None] + arrays[5][None, :, None, None, :])
    expected = logsumexp(total.astype(float), axis=(0, 1, 2, 3))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(scaled, expected, rtol=tol)


def test_scaled_log_run_declines_what_would_underflow():
    # Factors that peak at different places, 2000 nats apart: exp() of them loses the
    # answer in any float dtype; the run measures, refuses, and the exact kernels answer.
    plan = plan_contraction([("a",), ("a", "b"), ("b",)], {"a": 2, "b": 2}, ())
    x = np.array([0.0, -2000.0])
    m = np.array([[-2000.0, 0.0], [0.0, -2000.0]])
    y = np.array([-2000.0, 0.0])
    assert run_log_plan(plan, [x, m, y]) is None
    result = plan.run_arrays(ops.logaddexp, ops.add, [x, m, y])
    expected = logsumexp(x[:, None] + m + y[None])
    np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize("special", ["nan", "inf", "all_minus_inf"])
def test_scaled_log_run_leaves_nan_and_inf_to_the_exact_kernels(special):
    plan = plan_contraction([("a",), ("a", "b"), ("b",)], {"a": 2, "b": 2}, ())
    x, m, y = np.zeros(2), np.zeros((2, 2)), np.zeros(2)
    x[0] = {"nan": np.nan, "inf": np.inf, "all_minus_inf": -np.inf}[special]
    if special == "all_minus_inf":
        x[1] = -np.inf
    assert run_log_plan(plan, [x, m, y]) is None
    result = plan.run_arrays(ops.logaddexp, ops.add, [x, m, y])
    expected = logsumexp(x[:, None] + m + y[None]) if special != "nan" else np.nan
    np.testing.assert_equal(float(result), float(expected))


def test_log_einsum_gradient_matches_finite_differences():
    torch = pytest.importorskip("torch")
    eq = "a,ab,bc,c->"
    rng = np.random.default_rng(3)
    shapes = [(3,), (3, 4), (4, 2), (2,)]
    arrays = [rng.normal(size=s) for s in shapes]
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    einsum(eq, *xs, backend="log").backward()

    def value(k, delta):
        moved = [a.copy() for a in arrays]
        moved[k] = moved[k] + delta
        return float(einsum(eq, *moved, backend="log"))

    for k, a in enumerate(arrays):
        grad = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            d = np.zeros_like(a)
            d[idx] = 1e-6
            grad[idx] = (value(k, d) - value(k, -d)) / 2e-6
        np.testing.assert_allclose(xs[k].grad.numpy(), grad, rtol=1e-6, atol=1e-8)


def test_sum_product_of_a_long_chain_has_bounded_intermediates():
    # A chain of 20 factors over 8-state variables: no step holds more than a pairwise
    # product (8 x 8 x 8), where multiplying the chain out would hold 8**21 entries.
    n = 20
    names = [f"x{k}" for k in range(n + 1)]
    rng = np.random.default_rng(4)
    factors = [fc.Tensor(rng.normal(size=(8, 8)), {names[k]: fc.Bint[8],
                                                   names[k + 1]: fc.Bint[8]})
               for k in range(n)]
    plan = plan_terms(factors, frozenset(names))
    sizes = {v: 8 for v in names}
    assert contraction_cost(plan, sizes) <= n * 8 ** 3
    result = sum_product(ops.logaddexp, ops.add, factors, frozenset(names))
    alpha = np.zeros(8)
    for f in factors:
        alpha = logsumexp(alpha[:, None] + f.data, axis=0)
    np.testing.assert_allclose(result.data, logsumexp(alpha), rtol=1e-12)


def test_or_and_semiring_kernel_against_numpy(backend):
    rng = np.random.default_rng(5)
    x = rng.random((3, 4)) < 0.3
    y = rng.random((4, 2)) < 0.3
    got = pair(ops.or_, ops.and_, fc.to_data(fc.Tensor(x, dtype=2)), "ab",
               fc.to_data(fc.Tensor(y, dtype=2)), "bc", "ac")
    np.testing.assert_array_equal(ops.to_numpy(got), (x.astype(int) @ y.astype(int)) > 0)


def test_plan_costs_grow_with_the_pairwise_products_only():
    sizes = {"a": 2, "b": 3, "c": 4}
    plan = plan_contraction((("a", "b"), ("b", "c")), sizes, ("a",))
    assert contraction_cost(plan, sizes) == math.prod(sizes.values())


@pytest.mark.parametrize("dtype, steps", [("float32", 100), ("float64", 400)])
def test_scaled_log_run_rescales_long_chains(dtype, steps, monkeypatch):
    # The bounds of a long chain leave the dtype's range (float32: about 71 nats below the
    # maximum), so intermediates are rescaled and measured on the way; the result must equal
    # the forward algorithm in float64.
    rng = np.random.default_rng(6)
    init = rng.normal(scale=2.0, size=3)
    mats = [rng.normal(scale=2.0, size=(3, 3)) for _ in range(steps)]
    names = [("s0",)] + [(f"s{t}", f"s{t + 1}") for t in range(steps)]
    plan = plan_contraction(names, {f"s{t}": 3 for t in range(steps + 1)}, ())
    arrays = [a.astype(dtype) for a in [init] + mats]
    calls = []
    rescale = scaled_module._rescale
    monkeypatch.setattr(scaled_module, "_rescale", lambda x: calls.append(1) or rescale(x))
    result = run_log_plan(plan, arrays)
    assert result is not None and calls
    alpha = init
    for m in mats:
        alpha = logsumexp(alpha[:, None] + m, axis=0)
    tol = 1e-5 if dtype == "float32" else 1e-11
    np.testing.assert_allclose(float(result), logsumexp(alpha), rtol=tol)


def test_traced_log_run_chooses_by_cond_and_stays_exact():
    # Under jax.jit a plan with a matrix-matrix step chooses by lax.cond between linear space
    # (moderate ranges) and the exact steps (factors spanning 1e-300..1e300, whose shifted
    # products underflow to zero in linear space: only the exact branch gets them right).
    # One compiled function for both; brute force in float64.
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(7)
    D = 48  # a step of D**3 > kernels.BROADCAST_LIMIT: too large to broadcast exactly
    plan = plan_contraction((("a", "b"), ("b", "c"), ("c", "d")), dict.fromkeys("abcd", D),
                            ("a", "d"))

    def contract(*xs):
        return plan.run_arrays(ops.logaddexp, ops.add, list(xs))

    run = jax.jit(contract)
    for scale in (3.0, 690.0):
        xs = [rng.uniform(-scale, scale, size=(D, D)) for _ in range(3)]
        ab = logsumexp(xs[0][:, :, None] + xs[1][None], 1)
        expected = logsumexp(ab[:, :, None] + xs[2][None], 1)
        actual = np.asarray(run(*[jax.numpy.asarray(x) for x in xs]))
        np.testing.assert_allclose(actual, expected, rtol=1e-12)
    assert "cond" in str(jax.make_jaxpr(contract)(*[jax.numpy.asarray(x) for x in xs]))


def test_traced_log_run_skips_the_range_check_for_a_step_that_sums_nothing(monkeypatch):
    # NumPyro's enumerated site outside a plate with two factors of its own ("a" twice): the
    # plan's step a + a sums nothing (one broadcast add, no logsumexp), every summing step is
    # a small broadcast, so no traced range check and no cond: under eager jax.grad (values
    # known, each new shape compiled) and under jax.jit alike. Oracle: enumeration of all
    # (a, b, c) in numpy; the gradient of log Z by a factor is its marginal (numpy, too).
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    names = (("a",), ("a",), ("b", "a"), ("c", "a"), ("b",), ("c",))
    plan = plan_contraction(names, {"a": 2, "b": 3, "c": 2}, ())
    specs = plan._log_specs or plan._log_step_specs()
    assert any(s is None and j is not None for s, (_, j, _) in zip(specs, plan._letters[1]))
    assert not plan._has_large_log_step()
    rng = np.random.default_rng(3)
    xs = [rng.normal(size=tuple({"a": 2, "b": 3, "c": 2}[c] for c in n)) for n in names]
    joint = (xs[0][:, None, None] + xs[1][:, None, None] + xs[2].T[:, :, None]
             + xs[3].T[:, None, :] + xs[4][None, :, None] + xs[5][None, None, :])  # (a, b, c)
    probs = np.exp(joint - logsumexp(joint))
    marginals = [probs.sum((1, 2)), probs.sum((1, 2)), probs.sum(2).T, probs.sum(1).T,
                 probs.sum((0, 2)), probs.sum((0, 1))]
    traced = []
    monkeypatch.setattr("funsor_core.algorithms.contract.plan.run_log_plan_traced",
                        lambda *a: traced.append(1))

    def contract(*arrays):
        return plan.run_arrays(ops.logaddexp, ops.add, list(arrays))

    arrays = [jax.numpy.asarray(x) for x in xs]
    argnums = tuple(range(len(xs)))
    for fn in (jax.value_and_grad(contract, argnums), jax.jit(jax.value_and_grad(contract,
                                                                                argnums))):
        value, grads = fn(*arrays)
        np.testing.assert_allclose(float(value), logsumexp(joint), rtol=1e-12)
        for g, m in zip(grads, marginals):
            np.testing.assert_allclose(np.asarray(g), m, rtol=1e-10, atol=1e-14)
    assert not traced and "cond" not in str(jax.make_jaxpr(contract)(*arrays))

