"""Normal and MultivariateNormal with affine arguments become Gaussian funsors: their
densities at random points equal scipy's, and a model written with Normal distributions
reduces to the marginal likelihood of a hand-written Kalman filter."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import scipy.stats as st

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.domains import Bint, Real, Reals

jax.config.update("jax_enable_x64", True)


def _to(backend, x):
    import jax.numpy as jnp
    import torch

    x = np.asarray(x, dtype=np.float64)
    return {"numpy": lambda a: a, "torch": torch.as_tensor, "jax": jnp.asarray}[backend](x)


def _np(x):
    return np.asarray(ops.to_numpy(x))


def _is_gaussian_form(f) -> bool:
    terms = f.terms if isinstance(f, fc.Contraction) else (f,)
    return any(isinstance(t, Gaussian) for t in terms) and all(
        isinstance(t, (Gaussian, fc.Tensor, fc.Number)) for t in terms)


def _run(backend, fn, *arrays):
    """``fn`` of the arrays on ``backend`` (under ``jax.jit`` on jax), as numpy."""
    args = [_to(backend, a) for a in arrays]
    return _np((jax.jit(fn) if backend == "jax" else fn)(*args))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_normal_affine_density_at_random_points(backend):
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal(3)
    scale = rng.uniform(0.5, 2.0, 3)
    xs, ys = rng.standard_normal(4), rng.standard_normal(4)
    i, n = {"i": Bint[3]}, {"n": Bint[4]}
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)

    def density(a, b, c, scale, xs, ys):
        loc = fc.Tensor(a, i) * x + fc.Tensor(b, i)
        g = D.Normal(loc, fc.Tensor(scale, i), 2.0 * y - fc.Tensor(c, i))
        assert _is_gaussian_form(g) and set(g.inputs) == {"i", "x", "y"}
        return g(x=fc.Tensor(xs, n), y=fc.Tensor(ys, n)).align(("i", "n")).data

    actual = _run(backend, density, a, b, c, scale, xs, ys)
    expected = st.norm(a[:, None] * xs + b[:, None], scale[:, None]).logpdf(2 * ys - c[:, None])
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


# Variables and constants as loc and value (Normal(x_prev, sd, x_curr), Normal(x, sd, y_obs)):
# built directly as a Gaussian, with the constants' batch inputs after the scale's.
VARIABLE_FORMS = ["var-var", "var-const", "const-var", "vector var-var", "vector const-var"]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("form", VARIABLE_FORMS)
def test_normal_of_variables_and_constants_at_random_points(backend, form):
    rng = np.random.default_rng(len(form))
    dim = 3 if form.startswith("vector") else 1
    shape = (dim,) if dim > 1 else ()
    scale = rng.uniform(0.5, 2.0, (2,) + shape)
    const = rng.standard_normal((4,) + shape)
    xs, ys = rng.standard_normal((5,) + shape), rng.standard_normal((5,) + shape)
    i, t, n = {"i": Bint[2]}, {"t": Bint[4]}, {"n": Bint[5]}
    dom = Reals[dim] if dim > 1 else Real
    x, y = fc.Variable("x", dom), fc.Variable("y", dom)

    def density(scale, const, xs, ys):
        c = fc.Tensor(const, t, "real")
        loc, value = {"var-var": (x, y), "var-const": (x, c), "const-var": (c, y),
                      "vector var-var": (x, y), "vector const-var": (c, y)}[form]
        g = D.Normal(loc, fc.Tensor(scale, i, "real"), value)
        assert _is_gaussian_form(g), g
        subs = {k: fc.Tensor(v, n, "real") for k, v in (("x", xs), ("y", ys)) if k in g.inputs}
        out = g(**subs)
        names = tuple(k for k in ("i", "t", "n") if k in out.inputs)
        return out.align(names).data

    actual = _run(backend, density, scale, const, xs, ys)
    sc = scale[:, None, None]  # dims (i, t, n) + event; coordinates are independent
    loc = {"var-var": xs[None, None], "var-const": xs[None, None],
           "const-var": const[None, :, None], "vector var-var": xs[None, None],
           "vector const-var": const[None, :, None]}[form]
    value = {"var-const": const[None, :, None]}.get(form, ys[None, None])
    expected = st.norm(loc, sc).logpdf(value)
    if dim > 1:
        expected = expected.sum(-1)
    if form in ("var-var", "vector var-var"):
        expected = expected[:, 0]  # no t input
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


# funsor's affine forms: each equals Normal(x, scale, y) as a function of x and y.
AFFINE_FORMS = [
    lambda x, y, s: D.Normal(x + 2, s, y + 2),
    lambda x, y, s: D.Normal(y, s, x),
    lambda x, y, s: D.Normal(x - y, s, 0.0),
    lambda x, y, s: D.Normal(0.0, s, y - x),
    lambda x, y, s: D.Normal(0.0, 1.0, (x - y) / s) - ops.log(s),
    lambda x, y, s: D.Normal(2 * y, 2 * s, 2 * x) + math.log(2.0),
]


@pytest.mark.parametrize("form", range(len(AFFINE_FORMS)))
def test_normal_affine_forms(form):
    s = fc.Tensor(np.array(0.3))
    x, y = fc.Variable("x", Real), fc.Variable("y", Real)
    f = AFFINE_FORMS[form](x, y, s)
    assert _is_gaussian_form(f) and set(f.inputs) == {"x", "y"}
    rng = np.random.default_rng(form)
    xs, ys = rng.standard_normal(5), rng.standard_normal(5)
    n = {"n": Bint[5]}
    actual = f(x=fc.Tensor(xs, n), y=fc.Tensor(ys, n)).data
    np.testing.assert_allclose(actual, st.norm(xs, 0.3).logpdf(ys), rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_mvn_affine_density_at_random_points(backend):
    rng = np.random.default_rng(1)
    m = rng.standard_normal((3, 2))  # loc = m @ x + b
    b = rng.standard_normal(3)
    tril = np.tril(rng.standard_normal((2, 3, 3)), -1) + np.eye(3) * rng.uniform(0.5, 2, (2, 3, 1))
    x, y = fc.Variable("x", Reals[2]), fc.Variable("y", Reals[3])
    xs, ys = rng.standard_normal(2), rng.standard_normal(3)

    def density(m, b, tril, xs, ys):
        loc = fc.Tensor(m) @ x + fc.Tensor(b)
        g = D.MultivariateNormal(loc, fc.Tensor(tril, {"i": Bint[2]}), y)
        assert _is_gaussian_form(g) and set(g.inputs) == {"i", "x", "y"}
        return g(x=fc.Tensor(xs), y=fc.Tensor(ys)).data

    actual = _run(backend, density, m, b, tril, xs, ys)
    expected = [st.multivariate_normal(m @ xs + b, t @ t.T).logpdf(ys) for t in tril]
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


def test_mvn_batch_output_dims_is_block_diagonal():
    rng = np.random.default_rng(2)
    tril = np.tril(rng.standard_normal((2, 2)), -1) + np.diag([1.0, 2.0])
    loc = rng.standard_normal((3, 2))
    g = D.MultivariateNormal(loc, tril, value="z")  # three independent 2-d normals
    assert _is_gaussian_form(g) and g.inputs == {"z": Reals[3, 2]}
    z = rng.standard_normal((3, 2))
    expected = sum(st.multivariate_normal(loc[k], tril @ tril.T).logpdf(z[k]) for k in range(3))
    assert g(z=z).item() == pytest.approx(expected, rel=1e-10)
    assert g.reduce(ops.logaddexp, "z").item() == pytest.approx(0.0, abs=1e-10)


def test_normal_with_batch_output_dims_and_scalar_scale():
    loc = fc.Variable("x", Reals[3])
    g = D.Normal(loc, 2.0, value=np.array([0.5, -1.0, 2.0]))
    assert _is_gaussian_form(g)
    xs = np.array([0.0, 1.0, -1.0])
    expected = st.norm(xs, 2.0).logpdf([0.5, -1.0, 2.0]).sum()
    assert g(x=xs).item() == pytest.approx(expected, rel=1e-12)



@pytest.mark.parametrize("loc_kind", ["number", "tensor", "batched", "event"])
def test_normal_of_a_variable_with_constant_loc(loc_kind):
    # Normal(loc, scale, value="x") with a constant loc (funsor's guide idiom) is built as a
    # Gaussian over x at once; its density equals scipy's for every batch entry.
    rng = np.random.default_rng(5)
    scale_data = rng.uniform(0.5, 2.0, size=3)
    scale = fc.Tensor(scale_data, {"b": Bint[3]})
    event = (2,) if loc_kind == "event" else ()
    loc_data = {"number": np.full(3, 0.7), "tensor": np.full(3, -0.4),
                "batched": rng.normal(size=3), "event": rng.normal(size=(3, 2))}[loc_kind]
    loc = {"number": fc.Number(0.7), "tensor": fc.Tensor(np.array(-0.4)),
           "batched": fc.Tensor(loc_data, {"b": Bint[3]}),
           "event": fc.Tensor(loc_data, {"b": Bint[3]}, "real")}[loc_kind]
    f = D.Normal(loc, scale, value=fc.Variable("x", Reals[event]))
    assert _is_gaussian_form(f)
    point = rng.normal(size=event)
    for b in range(3):
        expected = st.norm(loc_data[b], scale_data[b]).logpdf(point).sum()
        np.testing.assert_allclose(_np(f(b=b, x=point).data), expected, rtol=1e-12)

def test_lazy_scale_or_nonaffine_loc_stays_a_distribution():
    x = fc.Variable("x", Real)
    assert isinstance(D.Normal(x.exp(), 1.0, 0.5), D.Normal)
    assert isinstance(D.Normal(x, fc.Variable("s", Real), 0.5), D.Normal)


# -- a Kalman model written with distributions ----------------------------------------------
def _kalman_scalar(ys, s0, a, q, h, r):
    m, p, ll = 0.0, s0 ** 2, 0.0
    for t, y in enumerate(ys):
        if t:
            m, p = a * m, a * a * p + q * q
        s = h * h * p + r * r
        ll += st.norm(h * m, math.sqrt(s)).logpdf(y)
        k = p * h / s
        m, p = m + k * (y - h * m), (1 - k * h) * p
    return ll


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_kalman_model_of_normals_matches_hand_written_filter(backend):
    rng = np.random.default_rng(3)
    steps, s0, a, q, h, r = 6, 1.5, 0.9, 0.5, 1.2, 0.7
    ys = rng.standard_normal(steps)
    xs = [fc.Variable(f"x{t}", Real) for t in range(steps)]

    def marginal(zero, s0, a, q, h, r, ys):
        p = fc.Tensor
        model = D.Normal(p(zero), p(s0), xs[0])
        for t in range(steps):
            if t:
                model = model + D.Normal(p(a) * xs[t - 1], p(q), xs[t])
            model = model + D.Normal(p(h) * xs[t], p(r), p(ys[t]))
        result = model.reduce(ops.logaddexp, frozenset(v.name for v in xs))
        assert isinstance(result, fc.Tensor)
        return result.data

    actual = _run(backend, marginal, 0.0, s0, a, q, h, r, ys)
    assert float(actual) == pytest.approx(_kalman_scalar(ys, s0, a, q, h, r), rel=1e-10)


def _kalman_vector(ys, f, lq, h, lr, m0, l0):
    m, p, ll = m0, l0 @ l0.T, 0.0
    q, r = lq @ lq.T, lr @ lr.T
    for t, y in enumerate(ys):
        if t:
            m, p = f @ m, f @ p @ f.T + q
        s = h @ p @ h.T + r
        ll += st.multivariate_normal(h @ m, s).logpdf(y)
        k = p @ h.T @ np.linalg.inv(s)
        m, p = m + k @ (y - h @ m), (np.eye(len(m)) - k @ h) @ p
    return ll


def test_kalman_model_of_mvns_matches_hand_written_filter():
    rng = np.random.default_rng(4)
    steps = 5
    f = 0.5 * rng.standard_normal((2, 2)) + 0.5 * np.eye(2)
    h = rng.standard_normal((3, 2))
    lq = np.tril(0.3 * rng.standard_normal((2, 2)), -1) + 0.6 * np.eye(2)
    lr = np.tril(0.3 * rng.standard_normal((3, 3)), -1) + 0.8 * np.eye(3)
    m0, l0 = rng.standard_normal(2), np.eye(2)
    ys = rng.standard_normal((steps, 3))
    xs = [fc.Variable(f"x{t}", Reals[2]) for t in range(steps)]
    model = D.MultivariateNormal(m0, l0, xs[0])
    for t in range(steps):
        if t:
            model = model + D.MultivariateNormal(fc.Tensor(f) @ xs[t - 1], lq, xs[t])
        model = model + D.MultivariateNormal(fc.Tensor(h) @ xs[t], lr, ys[t])
    marginal = model.reduce(ops.logaddexp, frozenset(v.name for v in xs)).item()
    assert marginal == pytest.approx(_kalman_vector(ys, f, lq, h, lr, m0, l0), rel=1e-10)


def test_conversion_under_jit_matches_eager():
    import jax.numpy as jnp

    x = fc.Variable("x", Real)

    def marginal(scale, y):
        model = D.Normal(0.0, 1.0, x) + D.Normal(x, fc.Tensor(scale), fc.Tensor(y))
        return model.reduce(ops.logaddexp, "x").data

    fc.set_backend("jax")  # numbers become jax arrays, as the other parameters are
    try:
        eager = marginal(jnp.asarray(0.5), jnp.asarray(0.3))
        jitted = jax.jit(marginal)(jnp.asarray(0.5), jnp.asarray(0.3))
    finally:
        fc.set_backend("numpy")
    expected = st.norm(0.0, math.sqrt(1.25)).logpdf(0.3)
    assert float(eager) == pytest.approx(expected, rel=1e-10)
    assert float(jitted) == pytest.approx(expected, rel=1e-10)


# Mixed float32 / float64 (issue #27 item 18): a Normal of Python numbers (the backend's
# default float) against a Normal of arrays of the other precision, in every Gaussian
# reduction, against the closed forms: E_p[log q], E_q[log p] and log ∫ p q.
def _mixed_closed_forms(m, s):
    from funsor_core.integrate import Integrate

    c = -0.5 * math.log(2 * math.pi)
    return [
        (lambda p, q, x: Integrate(p, q, x), c - 0.5 * (s * s + m * m)),
        (lambda p, q, x: Integrate(q, p, x), c - math.log(s) - (1 + m * m) / (2 * s * s)),
        (lambda p, q, x: (p + q).reduce(ops.logaddexp, x),
         st.norm(0.0, math.sqrt(1 + s * s)).logpdf(m)),
    ]


@pytest.mark.parametrize("array_dtype, default_dtype", [
    ("float64", "float32"),  # the program: torch's own default is float32
    ("float32", "float64"),
])
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_python_floats_beside_other_precision_in_gaussian_integrate(backend, array_dtype,
                                                                     default_dtype):
    import torch

    m, s = 0.4, 0.7
    x = fc.Variable("x", Real)
    saved = torch.get_default_dtype()
    fc.set_backend(backend)
    torch.set_default_dtype(getattr(torch, default_dtype))
    try:
        arrays = [_to(backend, np.array(v, dtype=array_dtype)) for v in (m, s)]
        arrays = [a.to(getattr(torch, array_dtype)) if backend == "torch"
                  else a.astype(array_dtype) for a in arrays]
        forms = _mixed_closed_forms(m, s)

        def values(loc, scale):
            p, q = D.Normal(loc, scale, value=x), D.Normal(0.0, 1.0, value=x)
            return [reduce(p, q, "x").data for reduce, _ in forms]

        actual = (jax.jit(values) if backend == "jax" else values)(*arrays)
        for value, (_, expected) in zip(actual, forms):
            assert float(_np(value)) == pytest.approx(expected, rel=1e-5)
    finally:
        torch.set_default_dtype(saved)
        fc.set_backend("numpy")
