"""The Gaussian atom and its exact rules against closed forms in numpy/scipy (float64).

Oracles: dense precision/covariance algebra with numpy inverses and Schur complements,
scipy.stats.multivariate_normal, brute-force evaluation at points, finite differences.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import assert_close, random_gaussian, random_tensor

LOG_2PI = np.log(2 * np.pi)


def to_np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def spd(rng, dim, batch=()):
    a = rng.normal(size=batch + (dim, dim))
    return a @ np.swapaxes(a, -1, -2) + dim * np.eye(dim)


def _arr(x):
    from funsor_core.engine.backend import backend_module

    return backend_module().asarray(np.asarray(x), "real")


def dense_eval(g, point):
    """f(x) from info_vec/precision: -0.5 x'Px + i'x - 0.5 ||w||^2 (no batch)."""
    p, i, w = to_np(g.precision), to_np(g.info_vec), to_np(g.white_vec)
    return -0.5 * point @ p @ point + i @ point - 0.5 * w @ w


# ---------------------------------------------------------------------------------------------
# Construction.
def test_constructors_agree(backend):
    rng = np.random.default_rng(0)
    m, c = rng.normal(size=3), spd(rng, 3)
    p = np.linalg.inv(c)
    inputs = {"x": fc.Reals[3]}
    g1 = fc.Gaussian(mean=_arr(m), covariance=_arr(c), inputs=inputs)
    g2 = fc.Gaussian(mean=_arr(m), precision=_arr(p), inputs=inputs)
    g3 = fc.Gaussian(mean=_arr(m), scale_tril=_arr(np.linalg.cholesky(c)), inputs=inputs)
    g4 = fc.Gaussian(info_vec=_arr(p @ m), precision=_arr(p), inputs=inputs)
    for g in (g1, g2, g3, g4):
        assert isinstance(g, fc.Gaussian)
        np.testing.assert_allclose(to_np(g.precision), p, rtol=1e-9)
        np.testing.assert_allclose(to_np(g.info_vec), p @ m, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(to_np(g.mean), m, rtol=1e-9)
        np.testing.assert_allclose(to_np(g.covariance), c, rtol=1e-9)
    assert_close(g1, g4, atol=1e-9)


def test_log_normalizer_matches_scipy():
    rng = np.random.default_rng(1)
    m, c = rng.normal(size=(2, 3)), spd(rng, 3, (2,))
    g = fc.Gaussian(mean=m, covariance=c, inputs={"i": fc.Bint[2], "x": fc.Reals[3]})
    # f(mean) = 0, so log Z = -log N(mean; mean, c).
    expected = [-scipy.stats.multivariate_normal(m[k], c[k]).logpdf(m[k]) for k in range(2)]
    np.testing.assert_allclose(g.log_normalizer.data, expected, rtol=1e-10)
    # and f - log Z is the normalized log density at any point.
    x = rng.normal(size=3)
    value = g(x=x) - g.log_normalizer
    np.testing.assert_allclose(
        value.data, [scipy.stats.multivariate_normal(m[k], c[k]).logpdf(x) for k in range(2)])


@pytest.mark.parametrize("scale", ["covariance", "scale_tril"])
def test_log_normalizer_from_the_triangular_factor_of_the_construction(backend, scale):
    # Built from a covariance or a scale_tril, prec_sqrt is triangular and is its own factor
    # (no QR); the oracle is numpy's slogdet of the covariance.
    rng = np.random.default_rng(3)
    c = spd(rng, 4, (2,))
    given = c if scale == "covariance" else np.linalg.cholesky(c)
    g = fc.Gaussian(**{"mean": _arr(rng.normal(size=(2, 4))), scale: _arr(given)},
                    inputs={"i": fc.Bint[2], "x": fc.Reals[4]})
    assert g._triangular == "upper"
    expected = 0.5 * np.linalg.slogdet(2 * np.pi * c)[1]
    np.testing.assert_allclose(to_np(g.log_normalizer.data), expected, rtol=1e-12)
    if backend == "jax":  # a pytree map may make prec_sqrt dense: the flag does not follow
        import jax

        h = jax.tree_util.tree_map(lambda x: x + 1.0, g)
        assert getattr(h, "_triangular", None) is None
        from funsor_core.atoms.gaussian import sqrt_info as gm

        np.testing.assert_allclose(to_np(h.log_normalizer.data),
                                   to_np(gm.log_normalizer(h.white_vec, h.prec_sqrt)))


def test_multiple_real_inputs_flatten_in_order():
    rng = np.random.default_rng(2)
    inputs = {"a": fc.Real, "b": fc.Reals[2, 2], "c": fc.Reals[2]}
    m, c = rng.normal(size=7), spd(rng, 7)
    g = fc.Gaussian(mean=m, covariance=c, inputs=inputs)
    x = rng.normal(size=7)
    actual = g(a=x[0], b=x[1:5].reshape(2, 2), c=x[5:])
    expected = scipy.stats.multivariate_normal(m, c).logpdf(x) + g.log_normalizer.data
    np.testing.assert_allclose(actual.data, expected)


@pytest.mark.parametrize("kwargs, match", [
    (dict(white_vec=np.zeros(2), prec_sqrt=np.eye(3, 2)), "dim = 2.*'x'"),
    (dict(white_vec=np.zeros(3), prec_sqrt=np.eye(2)), "white_vec of shape"),
    (dict(white_vec=np.zeros((3, 2)), prec_sqrt=np.eye(2)), "Bint inputs"),
    (dict(mean=np.zeros(2)), "precision"),
    # a matmul error before: the shapes are named now
    (dict(mean=np.zeros(2), covariance=np.eye(3)),
     r"mean= of shape \(2,\) \(dim 2\) needs covariance= of shape \(\.\.\., 2, 2\), got \(3, 3\)"),
    (dict(mean=np.float64(0.0), precision=np.eye(2)), r"mean= must end in the dim .* shape \(\)"),
])
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fc.Gaussian(inputs={"x": fc.Reals[2]}, **kwargs)


def test_wide_gaussian_is_compressed():
    rng = np.random.default_rng(3)
    w, s = rng.normal(size=7), rng.normal(size=(2, 7))
    result = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={"x": fc.Reals[2]})
    assert isinstance(result, fc.Contraction)  # Gaussian + Tensor shift
    gs = [t for t in result.terms if isinstance(t, fc.Gaussian)]
    assert gs[0].rank == 2
    x = rng.normal(size=2)
    np.testing.assert_allclose(result(x=x).data, -0.5 * np.sum((x @ s - w) ** 2))


# ---------------------------------------------------------------------------------------------
# Sums.
def test_add_gaussians_aligns_by_name(backend):
    g1 = random_gaussian({"i": fc.Bint[2], "x": fc.Real, "y": fc.Reals[2]})
    g2 = random_gaussian({"y": fc.Reals[2], "j": fc.Bint[3], "z": fc.Real})
    s = g1 + g2
    assert isinstance(s, fc.Gaussian)
    assert set(s.inputs) == {"i", "j", "x", "y", "z"}
    rng = np.random.default_rng(4)
    pt = {"x": _arr(rng.normal()), "y": _arr(rng.normal(size=2)), "z": _arr(rng.normal())}
    for i, j in itertools.product(range(2), range(3)):
        lhs = s(i=i, j=j, **pt)
        rhs = g1(i=i, x=pt["x"], y=pt["y"]) + g2(j=j, y=pt["y"], z=pt["z"])
        assert_close(lhs, rhs, atol=1e-9)


def test_product_of_gaussians_natural_parameters():
    rng = np.random.default_rng(5)
    m1, c1, m2, c2 = rng.normal(size=2), spd(rng, 2), rng.normal(size=2), spd(rng, 2)
    inputs = {"x": fc.Reals[2]}
    g = fc.Gaussian(mean=m1, covariance=c1, inputs=inputs) + fc.Gaussian(
        mean=m2, covariance=c2, inputs=inputs)
    p1, p2 = np.linalg.inv(c1), np.linalg.inv(c2)
    np.testing.assert_allclose(g.precision, p1 + p2)
    np.testing.assert_allclose(g.info_vec, p1 @ m1 + p2 @ m2)
    np.testing.assert_allclose(g.mean, np.linalg.solve(p1 + p2, p1 @ m1 + p2 @ m2))


def test_gaussian_plus_tensor_is_a_lazy_sum():
    g = random_gaussian({"x": fc.Real})
    t = random_tensor({"i": fc.Bint[2]})
    s = g + t
    assert isinstance(s, fc.Contraction)
    assert_close(s(x=0.5), g(x=0.5) + t)


# ---------------------------------------------------------------------------------------------
# Reductions.
def test_marginal_is_sub_block(backend):
    rng = np.random.default_rng(6)
    m, c = rng.normal(size=3), spd(rng, 3)
    g = fc.Gaussian(mean=_arr(m), covariance=_arr(c), inputs={"x": fc.Real, "y": fc.Reals[2]})
    marg = g.reduce(ops.logaddexp, "x")
    gs = [t for t in marg.terms if isinstance(t, fc.Gaussian)]
    ts = [t for t in marg.terms if isinstance(t, fc.Tensor)]
    np.testing.assert_allclose(to_np(gs[0].mean), m[1:], rtol=1e-9)
    np.testing.assert_allclose(to_np(gs[0].covariance), c[1:, 1:], rtol=1e-9)
    # normalizers compose: log Z(x, y) = log Z_x|y + log Z(y).
    total = to_np(ts[0].data) + to_np(gs[0].log_normalizer.data)
    np.testing.assert_allclose(total, to_np(g.log_normalizer.data), rtol=1e-10)
    full = g.reduce(ops.logaddexp)
    assert isinstance(full, fc.Tensor)
    np.testing.assert_allclose(to_np(full.data), 0.5 * np.log(np.linalg.det(2 * np.pi * c)))


def test_reduce_in_every_order():
    g = random_gaussian({"i": fc.Bint[2], "x": fc.Real, "y": fc.Reals[2], "z": fc.Real})
    t = random_tensor({"i": fc.Bint[2]})
    joint = g + t
    names = ["i", "x", "y", "z"]
    expected = joint.reduce(ops.logaddexp, frozenset(names))
    assert isinstance(expected, fc.Tensor)
    for order in itertools.permutations(names):
        result = joint
        for name in order:
            result = result.reduce(ops.logaddexp, name)
        assert_close(result, expected, atol=1e-9)
    # a mixture over i alone stays lazy
    assert not isinstance(g.reduce(ops.logaddexp, "i"), (fc.Tensor, fc.Gaussian))


def test_plate_reduction():
    g = random_gaussian({"i": fc.Bint[3], "j": fc.Bint[2], "x": fc.Reals[2]})
    p = g.reduce(ops.add, "i")
    x = np.array([0.3, -0.7])
    expected = g(x=x).reduce(ops.add, "i")
    assert_close(p(x=x) if isinstance(p, fc.Gaussian) else p(x=x), expected, atol=1e-9)


def test_too_little_information_raises():
    g = fc.Gaussian(white_vec=np.array([1.0]), prec_sqrt=np.array([[1.0], [0.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match="cannot marginalize y"):
        g.reduce(ops.logaddexp, "y")
    assert isinstance(g.reduce(ops.logaddexp, "x"), (fc.Tensor, fc.Contraction))


def test_too_little_information_names_the_batch_index():
    s = np.tile(np.eye(2), (3, 1, 1))
    s[1, 1, 1] = 0.0  # y has no information in batch entry 1 only
    g = fc.Gaussian(white_vec=np.zeros((3, 2)), prec_sqrt=s,
                    inputs={"i": fc.Bint[3], "x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match=r"cannot marginalize x, y.*batch index \(1,\).*: y"):
        g.reduce(ops.logaddexp, frozenset({"x", "y"}))
    with pytest.raises(ValueError, match=r"cannot marginalize y.* rank 0 < 1"):
        g.reduce(ops.logaddexp, "y")


# ---------------------------------------------------------------------------------------------
# Scaling by a nonnegative constant: c * g is a Gaussian, checked pointwise.
@pytest.mark.parametrize("make_scale", [
    lambda: fc.Number(2.5),
    lambda: fc.Number(0.0),
    lambda: fc.Tensor(_arr([0.5, 1.0, 3.0]), {"i": fc.Bint[3]}),
    lambda: fc.Tensor(_arr([[0.5, 2.0]] * 3), {"i": fc.Bint[3], "k": fc.Bint[2]}),
])
def test_scale_gaussian(backend, make_scale):
    g = random_gaussian({"i": fc.Bint[3], "x": fc.Reals[2]})
    t = random_tensor({"i": fc.Bint[3]})
    c = make_scale()
    x = _arr(np.array([0.4, -1.3]))
    for base in (g, g + t):
        for scaled in (base * c, c * base):
            if not base.inputs.keys() >= c.inputs.keys() or isinstance(base, fc.Gaussian):
                pass
            expected = base(x=x) * c
            assert_close(scaled(x=x), expected, atol=1e-10)
        if isinstance(base, fc.Gaussian):
            assert isinstance(base * c, fc.Gaussian)
    assert isinstance(g / fc.Number(4.0), fc.Gaussian)
    assert_close((g / fc.Number(4.0))(x=x), g(x=x) / 4.0, atol=1e-10)


def test_gaussian_sum_minus_and_over_constants():
    g = random_gaussian({"i": fc.Bint[3], "x": fc.Real})
    t = random_tensor({"i": fc.Bint[3]})
    c = random_tensor({"j": fc.Bint[2]})
    for result, expected in (((g + t) - c, lambda x: g(x=x) + t - c),
                             ((g + t) / 2.0, lambda x: (g(x=x) + t) / 2.0)):
        assert not isinstance(result, fc.Binary)  # evaluated into the sum normal form
        assert_close(result(x=0.3), expected(0.3), atol=1e-10)
    q = (g + t) - (g + t).reduce(ops.logaddexp, "x")  # normalized: integrates to 1
    assert_close(fc.Integrate(q, fc.Number(1.0), "x"), fc.Tensor(np.ones(3), {"i": fc.Bint[3]}),
                 atol=1e-10)


def test_negative_scale_stays_lazy():
    g = random_gaussian({"x": fc.Real})
    assert not isinstance(g * -1.0, fc.Gaussian)
    assert not isinstance(g * fc.Tensor(np.array([1.0, -1.0]), {"i": fc.Bint[2]}), fc.Gaussian)
    assert_close((g * -1.0)(x=0.5), -g(x=0.5), atol=1e-12)  # still means -g


# ---------------------------------------------------------------------------------------------
# Substitution.
def test_condition_is_schur_complement(backend):
    rng = np.random.default_rng(7)
    m, c = rng.normal(size=3), spd(rng, 3)
    g = fc.Gaussian(mean=_arr(m), covariance=_arr(c), inputs={"x": fc.Reals[2], "y": fc.Real})
    v = 0.8
    cond = g(y=v)
    assert isinstance(cond, fc.Gaussian)
    c_aa, c_ab, c_bb = c[:2, :2], c[:2, 2:], c[2:, 2:]
    np.testing.assert_allclose(to_np(cond.mean), m[:2] + (c_ab @ np.linalg.solve(c_bb, [v - m[2]])),
                               rtol=1e-9)
    np.testing.assert_allclose(to_np(cond.covariance), c_aa - c_ab @ np.linalg.solve(c_bb, c_ab.T),
                               rtol=1e-9)


def test_substitute_batched_constant():
    g = random_gaussian({"x": fc.Real, "y": fc.Real})
    v = random_tensor({"k": fc.Bint[4]})
    cond = g(x=v)
    assert set(cond.inputs) == {"k", "y"}
    for k in range(4):
        assert_close(cond(k=k, y=0.3), g(x=float(v.data[k]), y=0.3), atol=1e-9)


def test_substitute_bint_indexes_batch(backend):
    g = random_gaussian({"i": fc.Bint[3], "x": fc.Reals[2]})
    idx = fc.Tensor(fc.testing.randint(0, 3, (2,)), {"k": fc.Bint[2]}, 3)
    h = g(i=idx)
    assert set(h.inputs) == {"k", "x"}
    for k in range(2):
        i = int(to_np(idx.data)[k])
        assert_close(h(k=k), g(i=i), atol=1e-9)
    assert set(g(i="j").inputs) == {"j", "x"}


def test_rename_real_variable():
    g = random_gaussian({"x": fc.Real, "y": fc.Real})
    h = g(x="z")
    assert set(h.inputs) == {"z", "y"}
    assert_close(h(z=0.1, y=0.2), g(x=0.1, y=0.2))


def test_affine_substitution_equals_explicit():
    rng = np.random.default_rng(8)
    g = random_gaussian({"i": fc.Bint[2], "x": fc.Reals[2], "u": fc.Real})
    a, b = rng.normal(size=(3, 2)), rng.normal(size=2)
    y = fc.Variable("y", fc.Reals[3])
    h = g(x=y @ fc.Tensor(a) + b)
    assert isinstance(h, fc.Gaussian)
    assert set(h.inputs) == {"i", "u", "y"}
    yv, uv = rng.normal(size=3), 0.4
    assert_close(h(y=yv, u=uv), g(x=yv @ a + b, u=uv), atol=1e-9)
    # explicit: precision of the new coordinates is J' P J with J = d(x, u)/d(y, u).
    jac = np.zeros((4, 3))
    jac[:3, :2], jac[3, 2] = a, 1.0  # rows (y, u), columns (x, u)
    p = to_np(g.precision)
    np.testing.assert_allclose(to_np(h.precision), _reorder(jac @ p @ jac.T, h),
                               rtol=1e-9, atol=1e-12)


def _reorder(mat, h):
    # jac rows are (y, u); h's coordinates are in its own input order.
    order = {"y": [0, 1, 2], "u": [3]}
    idx = sum((order[k] for k, d in h.inputs.items() if d.dtype == "real"), [])
    return mat[..., idx, :][..., :, idx]


def test_diagonal_substitution_and_nonlinear_stays_lazy():
    g = random_gaussian({"x": fc.Real, "y": fc.Real})
    y = fc.Variable("y", fc.Real)
    h = g(x=2.0 * y + 1.0)
    assert set(h.inputs) == {"y"}  # rank 3 > 2 * dim 1: compressed into Gaussian + Tensor
    assert any(isinstance(t, fc.Gaussian) for t in h.terms)
    assert_close(h(y=0.3), g(x=1.6, y=0.3), atol=1e-9)
    lazy = g(x=y.exp())
    assert not isinstance(lazy, fc.Gaussian)
    assert_close(lazy(y=0.3), g(x=float(np.exp(0.3)), y=0.3), atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Integrate.
def test_integrate_moments_and_kl():
    rng = np.random.default_rng(9)
    m, c = rng.normal(size=2), spd(rng, 2)
    x = fc.Variable("x", fc.Reals[2])
    g = fc.Gaussian(mean=m, covariance=c, inputs={"x": fc.Reals[2]})
    q = g - g.log_normalizer  # normalized
    assert_close(fc.Integrate(q, x, "x"), fc.Tensor(m), atol=1e-9)
    second = fc.Integrate(q, x[0] * x[1], "x")
    np.testing.assert_allclose(second.data, c[0, 1] + m[0] * m[1])
    np.testing.assert_allclose(fc.Integrate(q, x[1] * x[1], "x").data, c[1, 1] + m[1] ** 2)
    np.testing.assert_allclose(fc.Integrate(g, fc.Number(1.0), "x").data,
                               np.exp(g.log_normalizer.data))
    m2, c2 = rng.normal(size=2), spd(rng, 2)
    p = fc.Gaussian(mean=m2, covariance=c2, inputs={"x": fc.Reals[2]})
    p = p - p.log_normalizer
    kl = fc.Integrate(q, q - p, "x")
    c2i = np.linalg.inv(c2)
    expected = 0.5 * (np.trace(c2i @ c) + (m2 - m) @ c2i @ (m2 - m) - 2
                      + np.log(np.linalg.det(c2) / np.linalg.det(c)))
    np.testing.assert_allclose(kl.data, expected, rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# Sampling.
def test_sample_moments():
    rng = np.random.default_rng(10)
    m, c = rng.normal(size=2), spd(rng, 2)
    g = fc.Gaussian(mean=m, covariance=c, inputs={"x": fc.Reals[2]})
    n = 100_000
    s = g.sample("x", {"n": fc.Bint[n]}, rng_key=0)
    deltas = [t for t in s.terms if isinstance(t, fc.Delta)]
    points = deltas[0].terms[0][1][0].data
    assert points.shape == (n, 2)
    se = np.sqrt(np.diag(c) / n)
    assert np.all(np.abs(points.mean(0) - m) < 3 * se)
    emp = np.cov(points.T)
    se_cov = np.sqrt((c ** 2 + np.outer(np.diag(c), np.diag(c))) / n)
    assert np.all(np.abs(emp - c) < 3 * se_cov)


def test_partial_sample_keeps_conditional():
    g = random_gaussian({"x": fc.Real, "y": fc.Real})
    s = g.sample("x", {"n": fc.Bint[5]}, rng_key=1)
    assert set(s.inputs) == {"n", "x", "y"}  # the Delta keeps x as an input
    # integrating y out of each sample gives back log Z.
    total = s.reduce(ops.logaddexp, frozenset({"x", "y"}))
    np.testing.assert_allclose(total.data, np.full(5, g.log_normalizer.data), rtol=1e-9)


def test_sample_uses_the_backend_generator(backend):
    g = random_gaussian({"i": fc.Bint[2], "x": fc.Reals[2]})
    if backend == "jax":
        import jax

        keys = jax.random.PRNGKey(3), jax.random.PRNGKey(3), jax.random.PRNGKey(4)
    else:
        keys = 3, 3, 4

    def points(key):
        s = g.sample("x", {"n": fc.Bint[4]}, rng_key=key)
        delta = next(t for t in s.terms if isinstance(t, fc.Delta))
        data = delta.terms[0][1][0].data
        assert type(data) is type(g.white_vec)  # noqa: E721 (drawn on g's backend)
        return to_np(data)

    a, b, c = (points(k) for k in keys)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_sample_under_jax_jit_takes_a_key():
    import jax

    fc.set_backend("jax")
    try:
        g = random_gaussian({"x": fc.Reals[2]})
        fn = jax.jit(lambda g, key: g.sample("x", {"n": fc.Bint[3]}, rng_key=key))
        s1, s2 = fn(g, jax.random.PRNGKey(0)), fn(g, jax.random.PRNGKey(1))
        lz = to_np(g.log_normalizer.data)
        for s in (s1, s2):  # each sample's weight is log Z
            assert_close(s.reduce(ops.logaddexp, "x"), fc.Tensor(np.full(3, lz), {"n": fc.Bint[3]}),
                         atol=1e-9)
        d1, d2 = (next(t for t in s.terms if isinstance(t, fc.Delta)) for s in (s1, s2))
        assert not np.allclose(to_np(d1.terms[0][1][0].data), to_np(d2.terms[0][1][0].data))
    finally:
        fc.set_backend("numpy")


def test_sample_rejects_a_key_of_another_backend():
    import jax

    g = random_gaussian({"x": fc.Real})
    with pytest.raises(TypeError, match="holds numpy arrays"):
        g.sample("x", rng_key=jax.random.PRNGKey(0))


# ---------------------------------------------------------------------------------------------
# Gradients.
def test_gradients_torch():
    import torch

    fc.set_backend("torch")
    try:
        rng = np.random.default_rng(11)
        m0, c = torch.tensor(rng.normal(size=2)), torch.tensor(spd(rng, 2))
        obs = torch.tensor(rng.normal(size=2))

        def fn(m):
            prior = fc.Gaussian(mean=m, covariance=c, inputs={"x": fc.Reals[2]})
            lik = fc.Gaussian(mean=obs, covariance=torch.eye(2), inputs={"x": fc.Reals[2]})
            return (prior + lik).reduce(ops.logaddexp, "x").data

        assert torch.autograd.gradcheck(fn, (m0.clone().requires_grad_(),))
    finally:
        fc.set_backend("numpy")


def test_gradients_jax():
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    try:
        rng = np.random.default_rng(12)
        c = jnp.asarray(spd(rng, 2))
        obs = jnp.asarray(rng.normal(size=2))

        def fn(m):
            prior = fc.Gaussian(mean=m, covariance=c, inputs={"x": fc.Reals[2]})
            lik = fc.Gaussian(mean=obs, covariance=jnp.eye(2), inputs={"x": fc.Reals[2]})
            return (prior + lik).reduce(ops.logaddexp, "x").data

        m0 = jnp.asarray(rng.normal(size=2))
        grad = np.asarray(jax.jit(jax.grad(fn))(m0))  # compiled: one program, not one per op
        eps = 1e-6
        fd = [(float(fn(m0.at[k].add(eps))) - float(fn(m0.at[k].add(-eps)))) / (2 * eps)
              for k in range(2)]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    finally:
        fc.set_backend("numpy")


# g(x=value) of an unbatched Gaussian at a batch of points (a guide at its particles): the
# quadratic form by hand, -0.5 (x - m)' P (x - m), for vector, scalar and matrix inputs.
@pytest.mark.parametrize("shape", [(3,), (), (2, 2)])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_unbatched_gaussian_at_tensor_points(shape, backend):
    from funsor_core.atoms.gaussian.atom import evaluate_unbatched
    from funsor_core.engine.backend import backend_module

    rng = np.random.default_rng(0)
    dim = int(np.prod(shape))
    a = rng.normal(size=(dim, dim))
    cov, mean = a @ a.T + dim * np.eye(dim), rng.normal(size=dim)
    xs = rng.normal(size=(5, 2) + shape)
    to = lambda x: backend_module(backend).asarray(x, "real")  # noqa: E731
    domain = fc.Reals[shape] if shape else fc.Real
    g = fc.Gaussian(mean=to(mean), covariance=to(cov), inputs={"x": domain})
    value = fc.Tensor(to(xs), {"p": fc.Bint[5], "q": fc.Bint[2]})
    diff = xs.reshape(5, 2, dim) - mean
    expected = -0.5 * np.einsum("pqi,ij,pqj->pq", diff, np.linalg.inv(cov), diff)
    actual = g(x=value)
    assert isinstance(actual, fc.Tensor) and list(actual.inputs) == ["p", "q"]
    assert_close(ops.to_numpy(actual.data), expected)
    assert_close(ops.to_numpy(evaluate_unbatched(g, {"x": value}).data), expected)


def test_unbatched_evaluation_declines_other_cases():
    from funsor_core.atoms.gaussian.atom import evaluate_unbatched

    two = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2),
                      inputs={"x": fc.Real, "y": fc.Real})
    batched = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
                          inputs={"i": fc.Bint[2], "x": fc.Real})
    point = fc.Tensor(np.ones(3), {"n": fc.Bint[3]})
    assert evaluate_unbatched(two, {"x": point}) is None
    assert evaluate_unbatched(batched, {"x": point}) is None
    one = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    assert evaluate_unbatched(one, {"x": fc.Number(1.0)}) is None  # the general path's
