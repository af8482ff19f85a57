"""Integrals a funsor user expects a number from (issue 13, item 11).

Weighted empirical distributions (a Delta plus a Tensor over its samples), quadratic
integrands against Gaussians, integrands with Bint inputs the measure lacks, a plate of
point masses (Independent), a Stack of Gaussians, and a Gaussian of a concatenation.
Oracles: sums over the samples with numpy, Gaussian moments in closed form, scipy
quadrature, scipy's multivariate normal; every backend, and jax.jit where a number results.
"""

import numpy as np
import pytest
from scipy import integrate as quad_integrate
from scipy.stats import multivariate_normal

import funsor_core as fc
from funsor_core import ops

LOG_2PI = np.log(2 * np.pi)


def to_backend(x, backend=None):
    backend = backend or fc.get_backend()
    if backend == "torch":
        import torch

        return torch.as_tensor(np.asarray(x, dtype=np.float64))
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(np.asarray(x, dtype=np.float64))
    return np.asarray(x, dtype=np.float64)


def value(f):
    assert isinstance(f, (fc.Tensor, fc.Number)), f"expected a number, got {type(f).__name__}"
    return np.asarray(ops.to_numpy(f.data), dtype=np.float64)


def jitted(fn, *args):
    """``fn(*args)`` under jax.jit (the funsors cross it as pytrees), with jax active."""
    import jax

    return jax.jit(fn)(*args)


@pytest.fixture(params=["numpy", "torch"])
def eager_backend(request):
    """numpy and torch, eagerly; jax is covered by the jax.jit version of the same test
    (eager jax compiles every op, which is slow and checks nothing more)."""
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def tensor(data, names, sizes):
    return fc.Tensor(to_backend(data), {n: fc.Bint[s] for n, s in zip(names, sizes)})


# ---------------------------------------------------------------------------------------------
# A weighted empirical distribution: what sampling returns.
def empirical(rng):
    p, t, tj = rng.normal(size=3), rng.normal(size=3), rng.normal(size=4)
    return p, t, tj


def empirical_cases(p, t, tj):
    x = fc.Variable("x", fc.Real)
    w = np.exp(t)
    return [  # (integrand, expected)
        (x, (w * p).sum()),
        (x * x, (w * p * p).sum()),
        (tensor(tj, "j", [4]) * x, (w[None] * p[None] * tj[:, None]).sum(1)),
        (3.0 * x + tensor(tj, "j", [4]), (w * (3 * p)).sum() + tj * w.sum()),
    ]


def test_weighted_empirical_distribution(eager_backend):
    p, t, tj = empirical(np.random.default_rng(0))
    measure = fc.Delta("x", tensor(p, "i", [3])) + tensor(t, "i", [3])
    for integrand, expected in empirical_cases(p, t, tj):
        result = fc.Integrate(measure, integrand, frozenset({"x", "i"}))
        np.testing.assert_allclose(value(result), expected, rtol=1e-12)


def test_weighted_empirical_distribution_under_jit():
    fc.set_backend("jax")
    try:
        p, t, tj = empirical(np.random.default_rng(1))
        measure = fc.Delta("x", tensor(p, "i", [3])) + tensor(t, "i", [3])
        for integrand, expected in empirical_cases(p, t, tj):
            result = jitted(lambda m, f: fc.Integrate(m, f, frozenset({"x", "i"})),
                            measure, integrand)
            np.testing.assert_allclose(value(result), expected, rtol=1e-12)
    finally:
        fc.set_backend("numpy")


def test_weighted_empirical_with_point_free_of_the_plate(backend):
    # The point does not depend on i but the weight does: sum_i e^{t_i} f(p).
    t = np.array([0.1, -0.4, 0.3])
    measure = fc.Delta("x", fc.Number(2.0)) + tensor(t, "i", [3])
    x = fc.Variable("x", fc.Real)
    np.testing.assert_allclose(value(fc.Integrate(measure, x * x, frozenset({"x", "i"}))),
                               4.0 * np.exp(t).sum(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Quadratic integrands against a Gaussian: E[f] = f(m) + 0.5 <H, Σ> times the mass.
def gaussian_2d(rng):
    mean = rng.normal(size=2)
    a = rng.normal(size=(2, 2))
    cov = a @ a.T + np.eye(2)
    return mean, cov


def quadratic_cases(mean, cov, m_mat, tj):
    x = fc.Variable("x", fc.Reals[2])
    mass = np.sqrt(np.linalg.det(2 * np.pi * cov))  # f(mean) = 0: the mass is Z
    second = cov + np.outer(mean, mean)  # E[x x']
    m_t = fc.Tensor(to_backend(m_mat))
    return [
        (x ** 2, mass * np.diag(second)),
        ((x * x).sum(), mass * np.trace(second)),
        (x @ m_t @ x, mass * np.sum(m_mat * second)),
        (x[0] * x[1] - 2.0 * x[1], mass * (second[0, 1] - 2 * mean[1])),
        (tensor(tj, "j", [3]) * (x ** 2).sum(), mass * np.trace(second) * tj),
    ]


def test_quadratic_integrands_against_gaussian(eager_backend):
    rng = np.random.default_rng(2)
    mean, cov = gaussian_2d(rng)
    m_mat, tj = rng.normal(size=(2, 2)), rng.normal(size=3)
    g = fc.Gaussian(mean=to_backend(mean), covariance=to_backend(cov),
                    inputs={"x": fc.Reals[2]})
    for integrand, expected in quadratic_cases(mean, cov, m_mat, tj):
        np.testing.assert_allclose(value(fc.Integrate(g, integrand, "x")), expected,
                                   rtol=1e-10, err_msg=str(integrand))


def test_quadratic_integrands_under_jit():
    fc.set_backend("jax")
    try:
        rng = np.random.default_rng(3)
        mean, cov = gaussian_2d(rng)
        m_mat, tj = rng.normal(size=(2, 2)), rng.normal(size=3)
        g = fc.Gaussian(mean=to_backend(mean), covariance=to_backend(cov),
                        inputs={"x": fc.Reals[2]})
        for integrand, expected in quadratic_cases(mean, cov, m_mat, tj):
            result = jitted(lambda g, f: fc.Integrate(g, f, "x"), g, integrand)
            np.testing.assert_allclose(value(result), expected, rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def test_x_squared_and_x_times_x_agree(backend):
    g = fc.Gaussian(mean=to_backend([0.5]), covariance=to_backend([[2.0]]),
                    inputs={"x": fc.Real})
    x = fc.Variable("x", fc.Real)
    expected = np.sqrt(2 * np.pi * 2.0) * (2.0 + 0.25)
    for f in (x ** 2, x * x, x ** 2 + 0.0 * x):
        np.testing.assert_allclose(value(fc.Integrate(g, f, "x")), expected, rtol=1e-12)


def test_partial_integral_of_a_quadratic_matches_quadrature(backend):
    # g over (x, y), integrate x only: a function of y; compare at a few y by quadrature.
    p = np.array([[2.0, 0.6], [0.6, 1.0]])
    info = np.array([0.3, -0.2])
    g = fc.Gaussian(info_vec=to_backend(info), precision=to_backend(p),
                    inputs={"x": fc.Real, "y": fc.Real})
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    const = -0.5 * info @ np.linalg.solve(p, info)  # Gaussian(info_vec=) has max 0 at mean
    for integrand, fn in ((x * x, lambda xv, yv: xv * xv), (x * y + x ** 2, lambda xv, yv:
                                                           xv * yv + xv * xv)):
        result = fc.Integrate(g, integrand, "x")
        for yv in (-0.7, 0.4):
            def density(xv, yv=yv, fn=fn):
                z = np.array([xv, yv])
                return np.exp(-0.5 * z @ p @ z + info @ z + const) * fn(xv, yv)

            expected = quad_integrate.quad(density, -np.inf, np.inf, epsabs=1e-12)[0]
            np.testing.assert_allclose(value(result(y=yv)), expected, rtol=1e-8)


def test_batched_measure_and_integrand_with_a_bint_input_the_measure_lacks(backend):
    rng = np.random.default_rng(4)
    means, variances = rng.normal(size=3), np.exp(rng.normal(size=3))
    t, tj = rng.normal(size=3), rng.normal(size=4)
    g = fc.Gaussian(mean=to_backend(means[:, None]), covariance=to_backend(variances[:, None,
                                                                                     None]),
                    inputs={"i": fc.Bint[3], "x": fc.Real})
    measure = g + tensor(t, "i", [3])
    x = fc.Variable("x", fc.Real)
    mass = np.exp(t) * np.sqrt(2 * np.pi * variances)
    second = variances + means ** 2
    result = fc.Integrate(measure, tensor(tj, "j", [4]) * x * x, frozenset({"x", "i"}))
    np.testing.assert_allclose(value(result.align(("j",))), tj * (mass * second).sum(),
                               rtol=1e-10)
    per_i = fc.Integrate(measure, tensor(tj, "j", [4]) * x * x, "x")
    np.testing.assert_allclose(value(per_i.align(("i", "j"))),
                               (mass * second)[:, None] * tj[None], rtol=1e-10)


def test_non_polynomial_integrand_stays_lazy():
    g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    x = fc.Variable("x", fc.Real)
    assert isinstance(fc.Integrate(g, x ** 3, "x"), fc.Integrate)  # degree 3: no rule yet
    assert isinstance(fc.Integrate(g, x.exp() * x, "x"), fc.Integrate)


# ---------------------------------------------------------------------------------------------
# A plate of point masses, a Stack of Gaussians, a Gaussian of a concatenation.
def test_independent_delta_reduces_to_its_mass(eager_backend):
    p = np.array([1.0, -2.0, 0.5])
    ld = np.array([0.1, 0.2, -0.4])
    d = fc.Delta("x_i", tensor(p, "i", [3]), tensor(ld, "i", [3]))
    ind = fc.Independent(d, "x", "i", "x_i")
    assert ind.inputs == {"x": fc.Reals[3]}
    np.testing.assert_allclose(value(ind.reduce(ops.logaddexp, "x")), ld.sum(), rtol=1e-12)
    np.testing.assert_allclose(value(ind(x=to_backend(p))), ld.sum(), rtol=1e-12)
    assert value(ind(x=to_backend(p + 1.0))) == -np.inf
    x = fc.Variable("x", fc.Reals[3])
    np.testing.assert_allclose(value(fc.Integrate(ind, (x * x).sum(), "x")),
                               np.exp(ld.sum()) * (p * p).sum(), rtol=1e-12)


def test_independent_delta_under_jit():
    fc.set_backend("jax")
    try:
        p, ld = np.array([1.0, -2.0]), np.array([0.1, 0.2])
        d = fc.Delta("x_i", tensor(p, "i", [2]), tensor(ld, "i", [2]))
        result = jitted(lambda d: fc.Independent(d, "x", "i", "x_i").reduce(
            ops.logaddexp, "x"), d)
        np.testing.assert_allclose(value(result), ld.sum(), rtol=1e-12)
    finally:
        fc.set_backend("numpy")


def stack_case():
    g1 = fc.Gaussian(mean=to_backend([0.5]), covariance=to_backend([[2.0]]),
                     inputs={"x": fc.Real})
    g2 = fc.Gaussian(mean=to_backend([-0.5, 1.0]), covariance=to_backend([[1.0, 0.2],
                                                                          [0.2, 3.0]]),
                     inputs={"x": fc.Real, "y": fc.Real})
    z1 = np.sqrt(2 * np.pi * 2.0)
    z2 = 2 * np.pi * np.sqrt(1.0 * 3.0 - 0.04)
    return g1, g2, z1, z2


def test_stack_of_gaussians_reduces_to_the_mixture_mass(eager_backend):
    g1, g2, z1, z2 = stack_case()
    s = fc.Stack("i", (g1, g1 * 4.0))
    expected = np.log(z1 + np.sqrt(2 * np.pi * 2.0 / 4.0))
    np.testing.assert_allclose(value(s.reduce(ops.logaddexp, frozenset({"i", "x"}))),
                               expected, rtol=1e-12)
    # Different real inputs: g1 has no information on y, so only the mass over x is finite.
    s2 = fc.Stack("i", (g1 + fc.Number(0.3), g2))
    over_x = s2.reduce(ops.logaddexp, "x")
    np.testing.assert_allclose(value(over_x(i=1, y=1.0)),
                               np.log(z2) + multivariate_normal(1.0, 3.0).logpdf(1.0),
                               rtol=1e-12)
    np.testing.assert_allclose(value(over_x(i=0, y=1.0)), np.log(z1) + 0.3, rtol=1e-12)
    both = fc.Stack("i", (g2 + fc.Number(0.3), g2)).reduce(ops.logaddexp,
                                                            frozenset({"i", "x", "y"}))
    np.testing.assert_allclose(value(both), np.log(z2 * np.exp(0.3) + z2), rtol=1e-12)


def test_logaddexp_of_gaussians_reduces_term_by_term(backend):
    g1, g2, z1, z2 = stack_case()
    result = ops.logaddexp(g1, g1 * 4.0).reduce(ops.logaddexp, "x")
    np.testing.assert_allclose(value(result), np.log(z1 + z1 / 2.0), rtol=1e-12)


def test_stack_of_gaussians_under_jit():
    fc.set_backend("jax")
    try:
        g1, _, z1, _ = stack_case()
        result = jitted(lambda g: fc.Stack("i", (g, g * 4.0)).reduce(
            ops.logaddexp, frozenset({"i", "x"})), g1)
        np.testing.assert_allclose(value(result), np.log(z1 + z1 / 2.0), rtol=1e-12)
    finally:
        fc.set_backend("numpy")


def cat_case(rng):
    mean = rng.normal(size=3)
    a = rng.normal(size=(3, 3))
    cov = a @ a.T + np.eye(3)
    return mean, cov


def test_gaussian_of_a_concatenation_integrates(eager_backend):
    mean, cov = cat_case(np.random.default_rng(5))
    g = fc.Gaussian(mean=to_backend(mean), covariance=to_backend(cov), inputs={"x": fc.Reals[3]})
    a, b = fc.Variable("a", fc.Reals[1]), fc.Variable("b", fc.Reals[2])
    marginal = g(x=ops.cat([a, b])).reduce(ops.logaddexp, "b")
    log_z = 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1]
    for av in (-0.3, 1.2):
        expected = log_z + multivariate_normal(mean[:1], cov[:1, :1]).logpdf([av])
        np.testing.assert_allclose(value(marginal(a=to_backend([av]))), expected, rtol=1e-10)
    total = g(x=ops.cat([a, b])).reduce(ops.logaddexp, frozenset("ab"))
    np.testing.assert_allclose(value(total), log_z, rtol=1e-12)


def test_gaussian_of_a_concatenation_under_jit():
    fc.set_backend("jax")
    try:
        mean, cov = cat_case(np.random.default_rng(6))
        g = fc.Gaussian(mean=to_backend(mean), covariance=to_backend(cov),
                        inputs={"x": fc.Reals[3]})
        a, b = fc.Variable("a", fc.Reals[1]), fc.Variable("b", fc.Reals[2])
        result = jitted(lambda g: g(x=ops.cat([a, b])).reduce(ops.logaddexp, frozenset("ab")),
                        g)
        np.testing.assert_allclose(value(result), 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1],
                                   rtol=1e-12)
    finally:
        fc.set_backend("numpy")


def test_tensor_measure_with_an_integrand_free_of_the_sum(backend):
    t = np.array([0.2, -0.1, 0.5])
    x = fc.Variable("x", fc.Real)
    result = fc.Integrate(tensor(t, "i", [3]), 2.0 * x, "i")
    np.testing.assert_allclose(value(result(x=1.5)), np.exp(t).sum() * 3.0, rtol=1e-12)


def test_tensor_measure_with_a_lazy_integrand_of_its_bint_names(backend):
    # E[a + b] under p(a, b) summed over b only, by enumeration of the table.
    p = np.random.default_rng(3).uniform(0.1, 1.0, size=(2, 3))
    a, b = fc.Variable("a", fc.Bint[2]), fc.Variable("b", fc.Bint[3])
    result = fc.Integrate(tensor(np.log(p), "ab", [2, 3]), a + b, "b")
    expected = [sum(p[i, j] * (i + j) for j in range(3)) for i in range(2)]
    np.testing.assert_allclose(value(result), expected, rtol=1e-12)
    assert result.inputs == {"a": fc.Bint[2]}
    alone = fc.Integrate(tensor(np.log(p[0]), "b", [3]), b, "b")
    np.testing.assert_allclose(value(alone), (p[0] * np.arange(3)).sum(), rtol=1e-12)
