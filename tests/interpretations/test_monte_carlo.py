"""MonteCarlo: estimates within 3 standard errors of closed forms, unbiased gradients (DiCE)
to second order, ELBOs, the Elbo interpretation, and reproducible seeds.

Oracles: closed forms (``E[exp(a x)]`` of a Gaussian, ``sum_i exp(theta_i) f_i(theta)`` and
its derivatives written out by hand), numerical quadrature on a fine grid (non-conjugate
ELBOs), ``exact`` for the parts with a closed form. A statistic is compared with its expected
value using the standard error estimated from the same draws; seeds are fixed, so the tests
are deterministic.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.montecarlo import extract_samples
from interpretations import Elbo, MonteCarlo, exact, lazy, monte_carlo

N = 4000


def _array(backend, x):
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x, dtype=jnp.float64)
    x = np.asarray(x, dtype=np.float64)
    if backend == "torch":
        import torch

        return torch.tensor(x)
    return x


def _np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def _key(backend, seed):
    if backend == "jax":
        import jax

        return jax.random.PRNGKey(seed)
    return seed


def _run(backend, fn, *args):
    """``fn(key, *args)`` on the backend's arrays; under ``jax.jit`` on jax, key traced."""
    converted = [_array(backend, a) for a in args]
    if backend != "jax":
        return fn(_key(backend, 0), *converted)
    import jax

    return jax.jit(fn)(_key(backend, 0), *converted)


def _within_3_se(samples, expected):
    samples = np.asarray(samples)
    se = samples.std(0) / np.sqrt(len(samples))
    assert np.all(np.abs(samples.mean(0) - expected) <= 3 * se + 1e-12), (
        samples.mean(0), expected, se)


def _gaussian(backend, mean, var, name="x"):
    return fc.Gaussian(mean=_array(backend, [mean]), covariance=_array(backend, [[var]]),
                       inputs={name: fc.Real})


# ---------------------------------------------------------------------------------------------
# Real variables: reparameterized samples.
def test_gaussian_integral_of_a_known_value(backend):
    # ∫ exp(g(x)) e^{a x} dx = Z exp(a m + a^2 v / 2) for g of mean m, variance v, mass Z.
    m, v, a = 0.3, 0.8, 0.7

    def estimate(key, loc):
        g = fc.Gaussian(mean=loc, covariance=_array(backend, [[v]]), inputs={"x": fc.Real})
        with MonteCarlo(rng_key=key, particle=fc.Bint[N]):
            est = fc.Integrate(g, (a * fc.Variable("x", fc.Real)).exp(), "x")
        assert set(est.inputs) == {"particle"}
        return est.data

    draws = _np(_run(backend, estimate, [m]))
    log_z = 0.5 * np.log(2 * np.pi * v)
    _within_3_se(draws, np.exp(log_z + a * m + a * a * v / 2))


def test_batched_multivariate_integral():
    # E[sum(exp(x))] under N(m_b, diag v): sum_j exp(m_bj + v_j / 2), per batch entry b.
    m = np.array([[0.0, 0.5], [-1.0, 0.2], [0.4, 0.4]])
    v = np.array([0.5, 0.2])
    g = fc.Gaussian(mean=m, covariance=np.diag(v), inputs={"b": fc.Bint[3], "x": fc.Reals[2]})
    g = g - g.log_normalizer
    with MonteCarlo(rng_key=1, particle=fc.Bint[N]):
        est = fc.Integrate(g, fc.Variable("x", fc.Reals[2]).exp().sum(), "x")
    draws = est.align(("particle", "b")).data
    _within_3_se(draws, np.exp(m + v / 2).sum(1))


def test_reduction_with_a_factor_exact_cannot_integrate():
    # log ∫ exp(g(x) + sigmoid(x)) dx: x drawn from g; exp of the estimate is unbiased.
    g = _gaussian("numpy", 0.2, 1.5)
    x = fc.Variable("x", fc.Real)
    with MonteCarlo(rng_key=2, particle=fc.Bint[N]):
        est = (g + x.sigmoid()).reduce(ops.logaddexp, "x")
    grid = np.linspace(-15, 15, 60001)
    dens = np.exp(-(grid - 0.2) ** 2 / 3.0 + 1 / (1 + np.exp(-grid)))
    _within_3_se(np.exp(est.data), dens.sum() * (grid[1] - grid[0]))


def test_analytic_parts_stay_exact():
    # A marginal, a Gaussian expectation and a point mass have closed forms: no draws. The
    # integrals keep the particle input that was asked for (one value broadcast over it,
    # issue 27 item 12); the reductions have none, as in funsor.
    g = fc.Gaussian(mean=np.array([1.0, -1.0]), covariance=np.array([[2.0, 0.5], [0.5, 1.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    x = fc.Variable("x", fc.Real)
    d = fc.Delta("x", fc.Number(2.0))
    with MonteCarlo(rng_key=0, particle=fc.Bint[10]):
        marginal = g.reduce(ops.logaddexp, "y")
        moment = fc.Integrate(g, x * x, {"x", "y"})
        point = fc.Integrate(d, x * 3.0, "x")
        tensor_sum = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]}).reduce(ops.logaddexp, "i")
    for value in (marginal, tensor_sum):
        assert "particle" not in value.inputs
    for value in (moment, point):
        assert value.inputs == {"particle": fc.Bint[10]}
    assert np.all(point.data == 6.0)
    np.testing.assert_allclose(moment.data, np.broadcast_to(
        fc.Integrate(g, x * x, {"x", "y"}).data, (10,)))


def test_linear_parts_are_exact_and_the_rest_sampled():
    g = _gaussian("numpy", 0.5, 1.0)
    g = g - g.log_normalizer
    x = fc.Variable("x", fc.Real)
    with MonteCarlo(rng_key=3, particle=fc.Bint[N]):
        est = fc.Integrate(g, x * 2.0 + x.exp(), "x")
    _within_3_se(est.data, 1.0 + np.exp(0.5 + 0.5))
    # the exact part adds no variance: the spread is that of exp(x) alone
    with MonteCarlo(rng_key=3, particle=fc.Bint[N]):
        alone = fc.Integrate(g, x.exp(), "x")
    np.testing.assert_allclose(est.data.std(), alone.data.std(), rtol=1e-12)



@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_elbo_prior_and_entropy_terms_are_exact_through_differences(backend):
    # Integrate(q, p + lik - q): the Gaussian parts p and -q (a prior and the entropy) are
    # integrated in closed form even behind a subtraction, and only lik is sampled: the
    # estimate is exactly the closed form of E_q[p - q] plus the estimate of E_q[lik] alone
    # with the same seed, draw for draw.
    if backend == "torch":
        pytest.importorskip("torch")
    fc.set_backend(backend)
    try:
        a = lambda v: _array(backend, v)  # noqa: E731
        q = fc.Gaussian(mean=a([0.3, -0.2]), scale_tril=a([[0.8, 0.0], [0.3, 0.5]]),
                        inputs={"w": fc.Reals[2]})
        q = q - q.log_normalizer
        p = fc.Gaussian(mean=a([0.0, 0.0]), covariance=a(np.eye(2)), inputs={"w": fc.Reals[2]})
        p = p - p.log_normalizer
        w = fc.Variable("w", fc.Reals[2])
        lik = (w @ fc.Tensor(a([1.0, -2.0]))).sigmoid().log()
        with MonteCarlo(rng_key=7, particle=fc.Bint[50]):
            estimate = fc.Integrate(q, p + lik - q, "w")
        with MonteCarlo(rng_key=7, particle=fc.Bint[50]):
            sampled = fc.Integrate(q, lik, "w")
        closed = fc.Integrate(q, p - q, "w")  # exact
        np.testing.assert_allclose(_np(estimate.align(("particle",)).data),
                                   _np(sampled.align(("particle",)).data) + _np(closed.data),
                                   rtol=1e-12)
        # and the closed form is E_q[log N(w; 0, I)] + H(q), by hand
        cov = np.array([[0.64, 0.24], [0.24, 0.34]])
        by_hand = (-0.5 * (np.trace(cov) + 0.3 ** 2 + 0.2 ** 2) - np.log(2 * np.pi)
                   + (1 + np.log(2 * np.pi)) + 0.5 * np.log(np.linalg.det(cov)))
        np.testing.assert_allclose(_np(closed.data), by_hand, rtol=1e-12)
    finally:
        fc.set_backend("numpy")

# ---------------------------------------------------------------------------------------------
# Discrete variables: samples weighted by the normalizer and a DiCE factor.
THETA = np.array([0.1, -0.3, 0.5])
F = np.array([1.0, 2.0, 4.0])


def _exact_derivatives(theta):
    """F(theta) = sum_i e^{theta_i} f_i theta_i^2, its gradient and (diagonal) Hessian."""
    e = np.exp(theta)
    value = (e * F * theta ** 2).sum()
    grad = e * F * (theta ** 2 + 2 * theta)
    hess = e * F * (theta ** 2 + 4 * theta + 2)
    return value, grad, hess


def _discrete_estimate(theta, key, particles):
    logits = fc.Tensor(theta, {"i": fc.Bint[3]})
    integrand = fc.Tensor(_array(fc.get_backend(), F) * theta ** 2, {"i": fc.Bint[3]})
    with MonteCarlo(rng_key=key, particle=fc.Bint[particles]):
        est = fc.Integrate(logits, integrand, "i")
    assert set(est.inputs) == {"particle"}
    return est


def test_dice_gradients_torch():
    import torch

    fc.set_backend("torch")
    try:
        grads, hessians = [], []
        for seed in range(100):
            theta = torch.tensor(THETA, requires_grad=True)
            value = _discrete_estimate(theta, seed, 50).reduce(ops.mean, "particle").data
            (grad,) = torch.autograd.grad(value, theta, create_graph=True)
            hess = torch.stack([torch.autograd.grad(grad[k], theta, retain_graph=True)[0][k]
                                for k in range(3)])
            grads.append(grad.detach().numpy())
            hessians.append(hess.detach().numpy())
    finally:
        fc.set_backend("numpy")
    _, grad, hess = _exact_derivatives(THETA)
    _within_3_se(grads, grad)
    _within_3_se(hessians, hess)


def test_dice_gradients_jax_under_jit():
    import jax

    fc.set_backend("jax")
    try:
        def per_particle(theta, key):  # N / 4 particles: jacrev runs one pass per particle
            return _discrete_estimate(theta, key, N // 4).data

        def derivatives(theta, key):  # one gradient (n, 3) and Hessian (n, 3, 3) per particle
            def first(theta):
                jac = jax.jacrev(per_particle)(theta, key)
                return jac, (per_particle(theta, key), jac)

            hess, (values, jac) = jax.jacfwd(first, has_aux=True)(theta)
            return values, jac, hess

        theta = jax.numpy.array(THETA)
        values, jac, hess = jax.jit(derivatives)(theta, jax.random.PRNGKey(0))
    finally:
        fc.set_backend("numpy")
    value, grad, diag = _exact_derivatives(THETA)
    _within_3_se(np.asarray(values), value)
    _within_3_se(np.asarray(jac), grad)
    expected_hess = np.diag(diag)
    _within_3_se(np.asarray(hess).reshape(N // 4, 9), expected_hess.reshape(9))


def test_discrete_integral_estimate(backend):
    def estimate(key, theta):
        return _discrete_estimate(theta, key, N).data

    _within_3_se(_np(_run(backend, estimate, THETA)), _exact_derivatives(THETA)[0])


# ---------------------------------------------------------------------------------------------
# ELBOs.
def test_gaussian_elbo_is_exact_under_monte_carlo():
    p = fc.Gaussian(mean=np.array([0.5]), covariance=np.array([[2.0]]), inputs={"x": fc.Real})
    q = _gaussian("numpy", 0.1, 0.7)
    q = q - q.log_normalizer
    expected = fc.Integrate(q, p - q, "x")
    with MonteCarlo(rng_key=0, particle=fc.Bint[100]):
        actual = fc.Integrate(q, p - q, "x")
    assert isinstance(expected, fc.Tensor) and actual.inputs == {"particle": fc.Bint[100]}
    # closed form: E_q[log p] + H(q) with p unnormalized: -0.5 ((m - mp)^2 + v) / vp + H
    h = 0.5 * np.log(2 * np.pi * np.e * 0.7)
    np.testing.assert_allclose(actual.data, -0.5 * (0.4 ** 2 + 0.7) / 2.0 + h, rtol=1e-12)
    np.testing.assert_allclose(actual.data, expected.data, rtol=1e-12)
    mean = actual.reduce(ops.mean, "particle")  # funsor's idiom
    np.testing.assert_allclose(mean.data, expected.data, rtol=1e-12)



def _normal_elbo(loc, scale, loc_p, scale_p):
    """E_q[log p(x) - log q(x)] = -KL(q || p) for q = N(loc, scale^2), p = N(loc_p, scale_p^2)."""
    return -(np.log(scale_p / scale) + (scale ** 2 + (loc - loc_p) ** 2) / (2 * scale_p ** 2)
             - 0.5)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_funsor_elbo_idiom_keeps_the_particle_input(backend):
    # funsor's idiom (issue 28): with MonteCarlo(particle=Bint[1000]): Integrate(q, p - q, "x")
    # with a Normal guide and a Normal model, then the mean over particles. The integral has a
    # closed form, which every particle gets (jax: under jax.jit, parameters traced).
    from funsor_core.distribution import Normal

    def elbo(key, loc, scale):
        q = Normal(loc, scale, value="x")
        p = Normal(fc.Number(0.3), fc.Number(1.5), value="x")
        with MonteCarlo(rng_key=key, particle=fc.Bint[1000]):
            per_particle = fc.Integrate(q, p - q, frozenset({"x"}))
        assert per_particle.inputs == {"particle": fc.Bint[1000]}
        return per_particle.data, per_particle.reduce(ops.mean, "particle").data

    fc.set_backend(backend)
    try:
        per_particle, mean = _run(backend, elbo, 0.5, 0.7)
    finally:
        fc.set_backend("numpy")
    expected = _normal_elbo(0.5, 0.7, 0.3, 1.5)
    assert _np(per_particle).shape == (1000,)
    np.testing.assert_allclose(_np(per_particle), expected, rtol=1e-12)
    np.testing.assert_allclose(_np(mean), expected, rtol=1e-12)


def test_funsor_elbo_idiom_gradient_and_a_sampled_part_converge():
    # The gradient of the particle mean is that of -KL; with a term of no closed form added
    # (log sigmoid(x)), the sampled estimate's mean is within 3 standard errors of quadrature.
    import torch

    from funsor_core.distribution import Normal

    fc.set_backend("torch")
    try:
        loc = torch.tensor(0.5, requires_grad=True)
        scale = torch.tensor(0.7, requires_grad=True)
        q = Normal(loc, scale, value="x")
        p = Normal(torch.tensor(0.3), torch.tensor(1.5), value="x")
        x = fc.Variable("x", fc.Real)
        with MonteCarlo(rng_key=1, particle=fc.Bint[N]):
            closed = fc.Integrate(q, p - q, frozenset({"x"}))
            sampled = fc.Integrate(q, p - q + x.sigmoid().log(), frozenset({"x"}))
        grads = torch.autograd.grad(closed.reduce(ops.mean, "particle").data, (loc, scale))
    finally:
        fc.set_backend("numpy")
    # d(-KL)/dloc = -(loc - loc_p) / scale_p^2; d(-KL)/dscale = 1 / scale - scale / scale_p^2
    np.testing.assert_allclose([float(g) for g in grads],
                               [-(0.5 - 0.3) / 1.5 ** 2, 1 / 0.7 - 0.7 / 1.5 ** 2], rtol=1e-10)
    assert sampled.inputs == {"particle": fc.Bint[N]}
    grid = np.linspace(0.5 - 12 * 0.7, 0.5 + 12 * 0.7, 40001)
    density = np.exp(-0.5 * ((grid - 0.5) / 0.7) ** 2) / (np.sqrt(2 * np.pi) * 0.7)
    log_sigmoid = (density * -np.logaddexp(0, -grid)).sum() * (grid[1] - grid[0])
    _within_3_se(_np(sampled.data), _normal_elbo(0.5, 0.7, 0.3, 1.5) + log_sigmoid)

def _logistic_elbo_quadrature(m, s):
    """ELBO of p(x) = N(x; 0, 1) sigmoid(x)^2 (unnormalized) with q = N(m, s^2), by quadrature."""
    grid = np.linspace(m - 12 * s, m + 12 * s, 40001)
    q = np.exp(-0.5 * ((grid - m) / s) ** 2) / (np.sqrt(2 * np.pi) * s)
    log_p = -0.5 * grid ** 2 - 0.5 * np.log(2 * np.pi) - 2 * np.logaddexp(0, -grid)
    log_q = np.log(q)
    return (q * (log_p - log_q)).sum() * (grid[1] - grid[0])


def test_non_conjugate_elbo_and_its_gradient():
    import torch

    fc.set_backend("torch")
    try:
        m = torch.tensor([0.4], requires_grad=True)
        log_s = torch.tensor(-0.2, requires_grad=True)
        prior = fc.Gaussian(mean=torch.zeros(1), covariance=torch.eye(1), inputs={"x": fc.Real})
        prior = prior - prior.log_normalizer
        x = fc.Variable("x", fc.Real)
        model = prior + 2.0 * (x.sigmoid().log())
        q = fc.Gaussian(mean=m, covariance=(2 * log_s).exp().reshape(1, 1),
                        inputs={"x": fc.Real})
        q = q - q.log_normalizer
        with MonteCarlo(rng_key=0, particle=fc.Bint[N]):
            elbo = fc.Integrate(q, model - q, "x")
        grads = [torch.autograd.grad(elbo.data[k], (m, log_s), retain_graph=True)
                 for k in range(0, N, 8)]  # a subset of particles: per-particle gradients
    finally:
        fc.set_backend("numpy")
    m0, s0 = 0.4, float(np.exp(-0.2))
    _within_3_se(elbo.data.detach().numpy(), _logistic_elbo_quadrature(m0, s0))
    eps = 1e-5
    dm = (_logistic_elbo_quadrature(m0 + eps, s0) - _logistic_elbo_quadrature(m0 - eps, s0)) / (
        2 * eps)
    ds = (_logistic_elbo_quadrature(m0, s0 * np.exp(eps))
          - _logistic_elbo_quadrature(m0, s0 * np.exp(-eps))) / (2 * eps)
    _within_3_se(np.array([[float(a), float(b)] for a, b in grads]), np.array([dm, ds]))


def test_a_measure_that_cannot_be_normalized_raises_naming_the_variable():
    # Declined by the closed forms (sigmoid), drawn: the draw's normalizer finds the
    # missing direction, as the exact integral would.
    g = fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=np.ones((2, 2)), inputs={"x": fc.Reals[2]})
    x = fc.Variable("x", fc.Reals[2])
    with pytest.raises(ValueError, match=r"cannot marginalize x: .*rank 1 < 2"):
        with MonteCarlo(rng_key=0, particle=fc.Bint[3]):
            fc.Integrate(g, x.sigmoid().sum(), "x")


def test_elbo_interpretation():
    p = fc.Gaussian(mean=np.array([0.5]), covariance=np.array([[2.0]]), inputs={"x": fc.Real})
    q = _gaussian("numpy", 0.1, 0.7)
    q = q - q.log_normalizer
    expected = fc.Integrate(q, p - q, "x")
    with Elbo(q, {fc.Variable("x", fc.Real)}):
        actual = p.reduce(ops.logaddexp, "x")
    np.testing.assert_allclose(actual.data, expected.data, rtol=1e-12)
    assert actual.data <= p.reduce(ops.logaddexp, "x").data  # a lower bound
    with Elbo(q, {"x"}), pytest.raises(NotImplementedError, match="some but not all"):
        (p + _gaussian("numpy", 0.0, 1.0, "y")).reduce(ops.logaddexp, {"x", "y"})
    with MonteCarlo(rng_key=0, particle=fc.Bint[10]), Elbo(q, {"x"}):
        under_mc = p.reduce(ops.logaddexp, "x")
    np.testing.assert_allclose(under_mc.data, expected.data, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Seeds, sample inputs, composition.
def _draws(backend, key):
    g = fc.Gaussian(mean=_array(backend, [0.0]), covariance=_array(backend, [[1.0]]),
                    inputs={"x": fc.Real})
    t = fc.Tensor(_array(backend, [0.0, 1.0, 2.0]), {"i": fc.Bint[3]})
    with MonteCarlo(rng_key=key, particle=fc.Bint[50]):
        a = fc.Integrate(g, fc.Variable("x", fc.Real).sigmoid(), "x")
        b = fc.Integrate(t, fc.Tensor(_array(backend, [1.0, 5.0, 7.0]), {"i": fc.Bint[3]}), "i")
    return a.data, b.data


def test_same_seed_same_numbers(backend):
    fc.set_backend(backend)
    draws = _draws
    if backend == "jax":  # (eager jax compiles every op; the eager path is checked below)
        import jax

        draws = jax.jit(_draws, static_argnums=0)
    first = [_np(x) for x in draws(backend, _key(backend, 7))]
    second = [_np(x) for x in draws(backend, _key(backend, 7))]
    other = [_np(x) for x in draws(backend, _key(backend, 8))]
    for a, b, c in zip(first, second, other):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_same_jax_key_eager_and_under_jit():
    import jax

    fc.set_backend("jax")
    try:
        key = jax.random.PRNGKey(3)

        def draw(key):  # one reparameterized draw (eager jax compiles each op: keep it small)
            g = fc.Gaussian(mean=_array("jax", [0.0]), covariance=_array("jax", [[1.0]]),
                            inputs={"x": fc.Real})
            with MonteCarlo(rng_key=key, particle=fc.Bint[50]):
                return g.reduce(ops.sample, "x").data,

        eager = draw(key)
        jitted = jax.jit(draw)(key)
    finally:
        fc.set_backend("numpy")
    for a, b in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


def test_funsor_style_seed_arrays_work_on_every_backend(backend):
    fc.set_backend(backend)
    key = np.array([0, 0], dtype=np.uint32)  # funsor's tests pass this on every backend
    draws = _draws
    if backend == "jax":
        import jax

        draws = jax.jit(lambda: _draws("jax", key))  # the key is a constant of the trace
        a, b = [_np(x) for x in draws()], [_np(x) for x in draws()]
    else:
        a, b = [_np(x) for x in draws(backend, key)], [_np(x) for x in draws(backend, key)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_sample_inputs_must_be_bint():
    with pytest.raises(TypeError, match="particle.*Bint"):
        MonteCarlo(particle=fc.Real)
    assert monte_carlo.sample_inputs == {} and monte_carlo.rng_key is None


def test_sampling_reduction_and_extract_samples():
    t = fc.Tensor(np.log(np.array([0.2, 0.3, 0.5])), {"i": fc.Bint[3]})
    with MonteCarlo(rng_key=4, particle=fc.Bint[N]):
        est = t.reduce(ops.sample, "i")
    assert set(est.inputs) == {"particle"}
    np.testing.assert_allclose(est.data, 0.0, atol=1e-12)  # the total mass, every particle
    s = t.sample("i", {"particle": fc.Bint[N]}, rng_key=5)
    points = extract_samples(s)["i"].data
    freq = np.bincount(points, minlength=3) / N
    se = np.sqrt(np.array([0.2, 0.3, 0.5]) * np.array([0.8, 0.7, 0.5]) / N)
    assert np.all(np.abs(freq - [0.2, 0.3, 0.5]) <= 3 * se)
    with lazy:
        reduction = fc.Contraction(ops.logaddexp, ops.add, frozenset({"i"}), (t, s))
    with pytest.raises(ValueError, match="bound"):
        extract_samples(reduction)


def test_falls_back_to_the_entered_interpretation():
    g = _gaussian("numpy", 0.0, 1.0)
    x = fc.Variable("x", fc.Real)
    mc = MonteCarlo(rng_key=0, particle=fc.Bint[3])
    with lazy, mc:
        chain = mc.chain()
        recorded = fc.Integrate(g, x.sigmoid(), "x")
    with exact, mc:
        estimated = fc.Integrate(g, x.sigmoid(), "x")
    assert chain[:2] == ["monte_carlo", "lazy"]
    assert isinstance(recorded, fc.Integrate)
    assert isinstance(estimated, fc.Tensor) and set(estimated.inputs) == {"particle"}


def test_distribution_measure():
    # A Gamma measure has no exact rule against these integrands: its value is sampled
    # (funsor_core.distribution's sampler); E[x] = a / b, E[log x] = digamma(a) - log b.
    from scipy.special import digamma

    from funsor_core.distribution import Gamma

    measure = Gamma(3.0, 2.0, value="x")
    x = fc.Variable("x", fc.Real)
    with MonteCarlo(rng_key=6, particle=fc.Bint[N]):
        mean = fc.Integrate(measure, x, "x")
        log_mean = fc.Integrate(measure, x.log(), "x")
    _within_3_se(mean.data, 1.5)
    _within_3_se(log_mean.data, digamma(3.0) - np.log(2.0))
    # a Normal with constant parameters is a Gaussian: its second moment is exact
    from funsor_core.distribution import Normal

    with MonteCarlo(rng_key=6, particle=fc.Bint[N]):
        second = fc.Integrate(Normal(0.5, 2.0, value="x"), x ** 2, "x")
    np.testing.assert_allclose(second.data, 0.5 ** 2 + 4.0, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Samplers that MonteCarlo relies on: mixtures and transformed variables.
def test_sampling_a_mixture_draws_its_discrete_names_from_the_marginal():
    # p(i, x) = t(i) + g_i(x): i ~ softmax(t + log Z_i), then x | i from g_i.
    means = np.array([-2.0, 0.0, 3.0])
    g = fc.Gaussian(mean=means[:, None], covariance=np.array([0.5, 1.0, 2.0])[:, None, None],
                    inputs={"i": fc.Bint[3], "x": fc.Real})
    t = fc.Tensor(np.array([0.3, -0.2, 0.1]), {"i": fc.Bint[3]})
    s = (g + t).sample({"i", "x"}, {"particle": fc.Bint[N]}, rng_key=9)
    points = extract_samples(s)
    marginal = t.data + g.log_normalizer.data
    probs = np.exp(marginal - np.logaddexp.reduce(marginal))
    i = points["i"].align(("particle",)).data
    freq = np.bincount(i, minlength=3) / N
    assert np.all(np.abs(freq - probs) <= 3 * np.sqrt(probs * (1 - probs) / N))
    x = points["x"].align(("particle",)).data
    _within_3_se(x, probs @ means)  # E[x] = sum_i p_i mean_i
    # the weights make the total mass exact in every particle
    total = s.reduce(ops.logaddexp, {"i", "x"})
    np.testing.assert_allclose(total.data, np.logaddexp.reduce(marginal), rtol=1e-10)


def test_sampling_through_a_substituted_transform():
    # f(x) = g(log x) for a Gaussian g (mean m, variance v, mass Z): drawing x gives a Delta
    # at exp(y), y ~ g, whose log density is the log-Jacobian y. With u = log x,
    # ∫ exp(g(log x)) x dx = ∫ exp(g(u)) e^{2u} du = Z exp(2 m + 2 v).
    g = _gaussian("numpy", 0.2, 0.3, "y")
    f = g(y=fc.Variable("x", fc.Real).log())
    s = f.sample("x", {"particle": fc.Bint[N]}, rng_key=10)
    est = fc.Integrate(s, fc.Variable("x", fc.Real), "x")
    _within_3_se(est.data, np.exp(2 * 0.2 + 2 * 0.3 + g.log_normalizer.data))


def test_integrand_only_bint_names_are_summed():
    rng = np.random.default_rng(11)
    m = rng.normal(size=(2, 3))
    f = rng.normal(size=(3, 4))
    measure = fc.Tensor(m, {"i": fc.Bint[2], "j": fc.Bint[3]})
    integrand = fc.Tensor(f, {"j": fc.Bint[3], "k": fc.Bint[4]})
    actual = fc.Integrate(measure, integrand, {"i", "j", "k"})
    np.testing.assert_allclose(actual.data, np.einsum("ij,jk->", np.exp(m), f), rtol=1e-12)
    with pytest.raises(ValueError, match="real inputs of the integrand"):
        fc.Integrate(measure, fc.Variable("x", fc.Real), {"i", "x"})


def test_bad_seeds_raise_when_given_or_name_the_backends():
    import torch

    for bad, error, match in [(-1, ValueError, "non-negative int seed, got -1"),
                              (True, TypeError, "got bool"), (0.5, TypeError, "got float"),
                              ("0", TypeError, "got str")]:
        with pytest.raises(error, match=match):
            MonteCarlo(rng_key=bad)
    g = _gaussian("numpy", 0.0, 1.0)
    x = fc.Variable("x", fc.Real)
    with pytest.raises(TypeError, match="a torch Generator cannot seed draws from numpy arrays"):
        with MonteCarlo(rng_key=torch.Generator().manual_seed(0), particle=fc.Bint[5]):
            fc.Integrate(g, x.sigmoid(), "x")
    with pytest.raises(TypeError, match="a seed array must hold integers, got float64"):
        with MonteCarlo(rng_key=np.array([0.5]), particle=fc.Bint[5]):
            fc.Integrate(g, x.sigmoid(), "x")
    # A numpy integer is an int seed: the same draws as the int.
    draws = []
    for key in (np.int64(4), 4):
        with MonteCarlo(rng_key=key, particle=fc.Bint[5]):
            draws.append(_np(fc.Integrate(g, x.sigmoid(), "x").data))
    np.testing.assert_array_equal(*draws)


def test_elbo_guide_must_have_every_approximated_variable():
    q = _gaussian("numpy", 0.1, 0.7)
    with pytest.raises(ValueError, match=r"the guide has no input \['y'\], whose inputs are "
                                         r"\{'x': Real\}"):
        Elbo(q, {"x", "y"})
    with pytest.raises(TypeError, match="the guide must be a funsor"):
        Elbo(np.zeros(2), {"x"})


# ---------------------------------------------------------------------------------------------
# A closed form keeps the sample inputs asked for (issue 27, item 12): funsor's idiom
# ``Integrate(q, p - q, "z").reduce(ops.mean, "particle")`` works whatever MonteCarlo computed
# exactly. Oracle: the KL divergence of two normals, and closed-form moments.
def _neg_kl(mq, sq, mp, sp):
    # E_q[log p - log q] = -KL(q || p) for normalized q = N(mq, sq^2), p = N(mp, sp^2).
    return -(np.log(sp / sq) + (sq ** 2 + (mq - mp) ** 2) / (2 * sp ** 2) - 0.5)


def test_closed_form_elbo_keeps_the_particle_input(backend):
    from funsor_core.distribution import Normal

    def elbo(key, loc):
        q = Normal(loc[0], 0.8, value="z")
        p = Normal(0.0, 1.3, value="z")
        with MonteCarlo(rng_key=key, particle=fc.Bint[7]):
            est = fc.Integrate(q, p - q, "z")
        assert est.inputs == {"particle": fc.Bint[7]}
        return est.reduce(ops.mean, "particle").data, est.data

    mean, each = _run(backend, elbo, [0.3])
    np.testing.assert_allclose(_np(mean), _neg_kl(0.3, 0.8, 0.0, 1.3), rtol=1e-10)
    np.testing.assert_allclose(_np(each), np.full(7, _neg_kl(0.3, 0.8, 0.0, 1.3)), rtol=1e-10)


def test_every_closed_form_keeps_the_sample_inputs():
    # A Tensor result with its own batch input, a Gaussian + Tensor sum left after a partial
    # integral, point masses: each is broadcast over both sample inputs, with the exact value
    # at every particle.
    g = fc.Gaussian(mean=np.array([[1.0, -1.0], [0.5, 0.0]]),
                    covariance=np.array([[2.0, 0.5], [0.5, 1.0]]),
                    inputs={"b": fc.Bint[2], "x": fc.Real, "y": fc.Real})
    x = fc.Variable("x", fc.Real)
    cases = {
        "tensor": lambda: fc.Integrate(g, x * x, {"x", "y"}),
        "gaussian_plus_tensor": lambda: fc.Integrate(g, x * x, {"x"}),
        "delta": lambda: fc.Integrate(fc.Delta("x", fc.Number(2.0)), x * 3.0, "x"),
        "delta_with_batch": lambda: fc.Integrate(
            fc.Delta("x", fc.Tensor(np.array([1.0, 2.0]), {"b": fc.Bint[2]})), x * 3.0, "x"),
    }
    samples = {"particle": fc.Bint[3], "chain": fc.Bint[2]}
    for name, build in cases.items():
        exact_value = build()
        with MonteCarlo(rng_key=0, **samples):
            actual = build()
        assert actual.inputs == {**samples, **exact_value.inputs}, name
        # A Number becomes a Tensor over the sample inputs; anything else keeps its type.
        assert type(actual) is type(exact_value) or type(exact_value) is fc.Number, name
        point = {k: v for k, v in (("x", 0.3), ("y", -0.2)) if k in exact_value.inputs}
        expected = exact_value(**point) if point else exact_value
        for p in range(3):
            for c in range(2):
                at = actual(particle=p, chain=c, **point)
                if expected.inputs:
                    at = at.align(tuple(expected.inputs))
                np.testing.assert_allclose(np.asarray(at.data), np.asarray(expected.data),
                                           err_msg=name)


def test_a_gaussian_result_is_broadcast_over_the_sample_inputs():
    from interpretations.monte_carlo import _with_sample_inputs

    g = fc.Gaussian(mean=np.array([[1.0], [0.5]]), covariance=np.array([[2.0]]),
                    inputs={"b": fc.Bint[2], "x": fc.Real})
    actual = _with_sample_inputs(MonteCarlo(particle=fc.Bint[3]), g)
    assert type(actual) is fc.Gaussian
    assert actual.inputs == {"particle": fc.Bint[3], "b": fc.Bint[2], "x": fc.Real}
    for p in range(3):
        np.testing.assert_allclose(actual(particle=p, x=0.4).data, g(x=0.4).data)


def test_closed_form_under_monte_carlo_is_a_broadcast_not_a_copy():
    g = fc.Gaussian(mean=np.array([0.5]), covariance=np.array([[2.0]]), inputs={"x": fc.Real})
    x = fc.Variable("x", fc.Real)
    with MonteCarlo(rng_key=0, particle=fc.Bint[1000]):
        actual = fc.Integrate(g, x * x, "x")
    assert actual.data.shape == (1000,) and actual.data.strides == (0,)
