"""Log densities of the distribution families against independent oracles: scipy.stats on
numpy, torch.distributions on torch, jax.scipy.stats on jax (under ``jax.jit``), batched
over named inputs, in float32 and float64; gradients against finite differences; invalid
parameters; construction and laziness.
"""

from __future__ import annotations

import contextlib
import math

import jax
import jax.numpy as jnp
import jax.scipy.stats as jstats
import numpy as np
import pytest
import scipy.stats as st
import torch
import torch.distributions as tdist

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.distribution.constraints import POSITIVE
from funsor_core.domains import Bint, Real, Reals
from interpretations import lazy
from tests.distribution.distribution_cases import CASES, NI, NJ

jax.config.update("jax_enable_x64", True)
IDS = [c.name for c in CASES]
TOL = {"float64": dict(rtol=1e-6, atol=1e-7), "float32": dict(rtol=1e-4, atol=1e-4)}


def _arrays(case, seed=0):
    rng = np.random.default_rng(seed)
    params = case.params(rng)
    return params, case.value(rng, params)


def _value_dtype(case):
    return "int" if case.family in (D.Categorical, D.CategoricalLogits) else "real"


def _to(backend, x, dtype):
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.floating):
        x = x.astype(dtype)
    if backend == "torch":
        return torch.as_tensor(x)
    if backend == "jax":
        return jnp.asarray(x)
    return x


def _density(case, params, value):
    """The family's log density over (i, j), from arrays of any backend."""
    args = [fc.Tensor(p, {"i": Bint[NI]}) for p in params.values()]
    dtype = list(params.values())[0].shape[-1] if _value_dtype(case) == "int" else "real"
    v = fc.Tensor(value, {"j": Bint[NJ]}, dtype)
    result = case.family(*args, value=v)
    assert isinstance(result, fc.Tensor), type(result)
    return result.align(("i", "j")).data


def _broadcast(params, value, case):
    p = {k: np.asarray(a)[:, None] for k, a in params.items()}
    return p, np.asarray(value)[None]


# -- numpy: scipy.stats ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_density_numpy_scipy(case, dtype):
    params, value = _arrays(case)
    actual = _density(case, {k: _to("numpy", a, dtype) for k, a in params.items()},
                      _to("numpy", value, dtype))
    assert actual.dtype == np.dtype(dtype)
    p, v = _broadcast(params, value, case)
    expected = case.scipy(**p, value=v)
    np.testing.assert_allclose(actual, expected, **TOL[dtype])


# -- torch: torch.distributions --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", [c for c in CASES if c.torch], ids=[c.name for c in CASES
                                                                      if c.torch])
def test_log_density_torch(case, dtype):
    params, value = _arrays(case)
    tparams = {k: _to("torch", a, dtype) for k, a in params.items()}
    actual = _density(case, tparams, _to("torch", value, dtype))
    assert actual.dtype == getattr(torch, dtype)
    events = [case.event.get(k, 0) for k in params]
    raw = {k: a.reshape((NI, 1) + tuple(a.shape[1:])) for k, a in tparams.items()}
    value_t = _to("torch", value, dtype)
    expected = case.torch(tdist, **raw).log_prob(value_t.reshape((1,) + tuple(value_t.shape)))
    assert events is not None
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), **TOL[dtype])


# -- jax: jax.scipy.stats, under jit ----------------------------------------------------------
_HOST_ORACLES = (D.Dirichlet, D.Multinomial)

@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_density_jax_jit(case, dtype):
    params, value = _arrays(case)
    names = list(params)

    @jax.jit
    def density(*arrays):
        return _density(case, dict(zip(names, arrays[:-1])), arrays[-1])

    args = [_to("jax", params[k], dtype) for k in names] + [_to("jax", value, dtype)]
    actual = density(*args)
    assert actual.dtype == jnp.dtype(dtype)
    p, v = _broadcast(params, value, case)
    if case.jax is not None and case.family not in _HOST_ORACLES:
        oracle = jax.jit(lambda *xs: case.jax(jstats, **dict(zip(names, xs[:-1])), value=xs[-1]))
        expected = oracle(*[jnp.asarray(p[k]) for k in names], jnp.asarray(v))
    elif case.jax is not None:  # the oracle loops over entries on the host
        expected = case.jax(jstats, **p, value=v)
    else:  # no jax.scipy.stats counterpart: scipy on the same float64 arrays
        expected = case.scipy(**p, value=v)
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), **TOL[dtype])


# -- gradients against finite differences ---------------------------------------------------
def _directions(case, params, rng):
    out = {}
    for k, x in params.items():
        if k == "total_count":
            continue
        make = case.tangent.get(k)
        out[k] = make(rng, x) if make else rng.standard_normal(x.shape)
    return out


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_finite_differences(case, backend):
    params, value = _arrays(case)
    directions = _directions(case, params, np.random.default_rng(1))
    names = list(params)

    def total(**arrays):
        full = {k: arrays.get(k, _to(backend, params[k], "float64")) for k in names}
        return ops.sum(_density(case, full, _to(backend, value, "float64")))

    def numeric(eps):  # the same function on float64 numpy arrays, moved along directions
        def at(t):
            moved = {k: params[k] + t * directions.get(k, 0.0) for k in names}
            return float(np.sum(_density(case, moved, value)))
        return (at(eps) - at(-eps)) / (2 * eps)

    if backend == "torch":
        leaves = {k: torch.tensor(params[k], requires_grad=True) for k in directions}
        total(**leaves).backward()
        grads = {k: leaves[k].grad.numpy() for k in directions}
    else:
        keys = list(directions)
        grad = jax.jit(jax.grad(lambda *xs: total(**dict(zip(keys, xs))),
                                argnums=tuple(range(len(keys)))))
        values = grad(*[jnp.asarray(params[k]) for k in keys])
        grads = {k: np.asarray(g) for k, g in zip(keys, values)}
    analytic = sum(float(np.sum(grads[k] * directions[k])) for k in directions)
    assert analytic == pytest.approx(numeric(1e-6), rel=1e-5, abs=1e-6)


# -- batch output dims, union of inputs ---------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_batch_output_dims_sum_independent_densities(backend):
    rng = np.random.default_rng(0)
    loc = rng.standard_normal((2, 3))  # input i, output Reals[3]
    scale = rng.uniform(0.5, 2.0, 4)  # input k
    value = rng.standard_normal((5, 3))  # input j
    d = D.Normal(fc.Tensor(_to(backend, loc, "float64"), {"i": Bint[2]}),
                 fc.Tensor(_to(backend, scale, "float64"), {"k": Bint[4]}),
                 fc.Tensor(_to(backend, value, "float64"), {"j": Bint[5]}))
    assert d.inputs == {"i": Bint[2], "k": Bint[4], "j": Bint[5]}
    expected = st.norm(loc[:, None, None], scale[None, :, None, None]).logpdf(
        value[None, None]).sum(-1)
    actual = np.asarray(ops.to_numpy(d.align(("i", "k", "j")).data))
    np.testing.assert_allclose(actual, expected, rtol=1e-10)
    with lazy:
        lazy_d = D.Normal(fc.Tensor(loc, {"i": Bint[2]}), 1.0)
    assert lazy_d.inputs["value"] is Reals[3] and lazy_d.batch_output_shape == (3,)


def test_mvn_batch_output_dims():
    rng = np.random.default_rng(0)
    loc = rng.standard_normal((2, 3))
    tril = np.tril(rng.standard_normal((3, 3)), -1) + 2 * np.eye(3)
    x = rng.standard_normal((2, 3))
    actual = D.MultivariateNormal(loc, tril, value=x).item()
    expected = sum(st.multivariate_normal(loc[b], tril @ tril.T).logpdf(x[b]) for b in range(2))
    assert actual == pytest.approx(expected, rel=1e-10)


def test_outside_support_is_minus_inf_with_finite_gradients():
    # d/da log Gamma(x; a, 1) = log x - digamma(a) inside the support, 0 outside (the density
    # is -inf there whatever a is): no NaN leaks from the value outside the support.
    conc = torch.tensor(2.0, requires_grad=True)
    value = fc.Tensor(torch.tensor([-1.0, 0.5]), {"j": Bint[2]})
    data = D.Gamma(conc, 1.0, value=value).data
    assert data[0].item() == -math.inf
    data.sum().backward()
    expected = math.log(0.5) - torch.special.digamma(torch.tensor(2.0)).item()
    assert conc.grad.item() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("family, args, value", [
    (D.Poisson, (2.0,), 1.5), (D.Binomial, (3.0, 0.5), 4.0), (D.Beta, (2.0, 2.0), 1.5),
    (D.BernoulliProbs, (0.5,), 0.5), (D.Uniform, (0.0, 1.0), 2.0), (D.Exponential, (1.0,), -1.0),
    (D.Dirichlet, (np.ones(3),), np.array([0.5, 0.6, 0.1])),
    (D.Multinomial, (3.0, np.ones(2) / 2), np.array([1.0, 1.0])),
])
def test_outside_support_matches_scipy_minus_inf(family, args, value):
    assert family(*args, value=value).item() == -math.inf


# Every discrete family at non-integer, negative, too large and infinite values: -inf, as
# scipy.stats gives (an infinite count has probability 0; scipy says NaN there), on every
# backend and under jax.jit, where the support check is a ``where`` on traced values.
def _scipy_or_minus_inf(logpmf, values):
    finite = np.all(np.isfinite(values), axis=-1) if values.ndim > 1 else np.isfinite(values)
    with np.errstate(invalid="ignore"):
        out = logpmf(np.where(finite[..., None] if values.ndim > 1 else finite, values, 0.0))
    return np.where(finite, out, -np.inf)


def _count_vectors_ok(x, n):
    return np.all((x >= 0) & (x == np.floor(x)), -1) & (x.sum(-1) == n)


def _dirichlet_multinomial_oracle(a, n, x):
    ok = _count_vectors_ok(x, n)
    safe = np.where(ok[:, None], x, np.full_like(x, n / x.shape[-1]))
    return np.where(ok, [st.dirichlet_multinomial(a, n).logpmf(v) if k else 0.0
                         for v, k in zip(np.round(safe), ok)], -np.inf)


_SCALAR_VALUES = np.array([1.5, -1.0, -0.5, 4.0, 2.0, 1e20, np.inf, 0.0])
_VECTOR_VALUES = np.array([[1.5, 1.5], [-1.0, 4.0], [1.0, 1.0], [np.inf, 1.0], [1.0, 2.0],
                           [3.0, 0.0]])
DISCRETE_SUPPORT = [
    (D.BernoulliProbs, (0.3,), _SCALAR_VALUES, lambda v: st.bernoulli(0.3).logpmf(v)),
    (D.BernoulliLogits, (0.3,), _SCALAR_VALUES,
     lambda v: st.bernoulli(1 / (1 + np.exp(-0.3))).logpmf(v)),
    (D.Binomial, (3.0, 0.4), _SCALAR_VALUES, lambda v: st.binom(3, 0.4).logpmf(v)),
    (D.Poisson, (2.0,), _SCALAR_VALUES, lambda v: st.poisson(2.0).logpmf(v)),
    (D.BetaBinomial, (1.0, 2.0, 3.0), _SCALAR_VALUES, lambda v: st.betabinom(3, 1, 2).logpmf(v)),
    (D.GammaPoisson, (1.5, 2.0), _SCALAR_VALUES, lambda v: st.nbinom(1.5, 2 / 3).logpmf(v)),
    (D.Multinomial, (3.0, np.array([0.25, 0.75])), _VECTOR_VALUES,
     lambda v: np.where(_count_vectors_ok(v, 3), st.multinomial(3, [0.25, 0.75]).logpmf(
         np.where(_count_vectors_ok(v, 3)[:, None], v, [[1.0, 2.0]])), -np.inf)),
    (D.DirichletMultinomial, (np.array([1.0, 2.0]), 3.0), _VECTOR_VALUES,
     lambda v: _dirichlet_multinomial_oracle(np.array([1.0, 2.0]), 3, v)),
]


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
@pytest.mark.parametrize("family, params, values, logpmf", DISCRETE_SUPPORT,
                         ids=[c[0].__name__ for c in DISCRETE_SUPPORT])
def test_discrete_values_outside_support_are_minus_inf(family, params, values, logpmf,
                                                       backend):
    def density(*arrays):
        value = fc.Tensor(arrays[-1], {"j": Bint[len(values)]})
        return family(*[fc.Tensor(a) for a in arrays[:-1]], value=value).data

    args = [_to("jax" if backend == "jit" else backend, np.asarray(a, float), "float64")
            for a in (*params, values)]
    actual = np.asarray((jax.jit(density) if backend == "jit" else density)(*args))
    expected = _scipy_or_minus_inf(logpmf, values)
    np.testing.assert_array_equal(np.isneginf(actual), np.isneginf(expected))
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
@pytest.mark.parametrize("family", [D.Categorical, D.CategoricalLogits])
def test_categorical_value_outside_support_is_minus_inf(family, backend):
    # A non-integer number (1.7 was truncated to 1) or an index out of range has probability 0
    # in scipy's categorical (rv_discrete); a traced integer index is checked by a `where`.
    probs = np.array([0.2, 0.5, 0.3])
    oracle = st.rv_discrete(values=(range(3), probs)).logpmf
    param = probs if family is D.Categorical else np.log(probs) + 1.0
    b = "jax" if backend == "jit" else backend
    for v in (0.5, 1.7, -0.3, 2.5, float("inf"), np.float64(0.5), fc.Number(1.5), 2.0, 1):
        expected = oracle(float(v.data if isinstance(v, fc.Number) else v))
        assert family(_to(b, param, "float64"), value=v).item() == pytest.approx(expected)
    indices = np.array([-1, 0, 1, 2, 3])

    def density(p, index):
        return family(fc.Tensor(p), value=fc.Tensor(index, {"j": Bint[5]}, 3)).data

    f = jax.jit(density) if backend == "jit" else density
    actual = np.asarray(f(_to(b, param, "float64"), _to(b, indices, "float64")))
    np.testing.assert_allclose(actual, oracle(indices), rtol=1e-12)
    real = np.array([0.5, 1.0, 2.0, 0.0, 1.5])  # a real array is no Bint[3] value: an error
    with pytest.raises(ValueError, match=f"{family.__name__}: value must have domain Bint"):
        (jax.jit if backend == "jit" else (lambda g: g))(
            lambda p, x: family(fc.Tensor(p), value=fc.Tensor(x, {"j": Bint[5]})).data)(
            _to(b, param, "float64"), _to(b, real, "float64"))


# -- invalid parameters -----------------------------------------------------------------------
INVALID = [
    (lambda: D.Normal(0.0, -1.0), "Normal: parameter 'scale' must be positive"),
    (lambda: D.Normal(0.0, fc.Tensor(np.array([1.0, 0.0]), {"i": Bint[2]})),
     r"Normal: parameter 'scale' must be positive, but it is 0\. at i=1"),
    (lambda: D.Categorical(np.array([0.0, 0.0])), "Categorical: parameter 'probs' must be a "
     "vector of nonnegative finite weights with a positive sum"),
    (lambda: D.Categorical(np.array([1.5, -0.5])), "nonnegative finite weights"),
    (lambda: D.Multinomial(2.0, np.array([np.inf, 1.0])), "Multinomial: parameter 'probs'"),
    (lambda: D.BernoulliProbs(1.5), "BernoulliProbs: parameter 'probs' must be in \\[0, 1\\]"),
    (lambda: D.Dirichlet(np.array([1.0, -1.0])), "Dirichlet: parameter 'concentration'"),
    (lambda: D.MultivariateNormal(np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]])),
     "MultivariateNormal: parameter 'scale_tril' must be a lower triangular"),
    (lambda: D.Binomial(2.5, 0.5), "Binomial: parameter 'total_count' must be a nonnegative "
     "integer"),
    (lambda: D.Uniform(1.0, 0.0), "Uniform: parameter 'high' must be greater than low"),
    (lambda: D.MultivariateNormal(np.zeros(3), np.eye(4)),
     r"MultivariateNormal: scale_tril must be Reals\[3, 3\]"),
    (lambda: D.Categorical(np.ones(3) / 3, value=fc.Variable("v", Bint[4])),
     r"Categorical: value must have domain Bint\[3\]"),
    (lambda: D.Normal(np.zeros(3), 1.0, value=fc.Variable("v", Real)),
     r"Normal: value must have domain Reals\[3\]"),
    (lambda: D.Normal(np.zeros(3), np.ones(2)), "do not broadcast"),
]


@pytest.mark.parametrize("make, match", INVALID)
def test_invalid_parameters_raise_naming_family_and_parameter(make, match):
    with pytest.raises(ValueError, match=match):
        make()
    with pytest.raises(ValueError, match=match), lazy:  # at the point of the mistake
        make()


@pytest.mark.parametrize("family, params, value", [
    (D.Normal, dict(loc=0.0, scale=-1.0), 0.5),
    (D.Gamma, dict(concentration=-1.0, rate=1.0), 0.5),
    (D.Categorical, dict(probs=np.array([0.5, -0.6])), 1),
    (D.Dirichlet, dict(concentration=np.array([1.0, -1.0])), np.array([0.5, 0.5])),
    (D.MultivariateNormal, dict(loc=np.zeros(2), scale_tril=np.array([[1.0, 1.0], [0.0, 1.0]])),
     np.zeros(2)),
    (D.Uniform, dict(low=1.0, high=0.0), 0.5),
])
def test_invalid_parameters_under_jit_give_nan(family, params, value):
    names = list(params)

    dtype = 2 if family is D.Categorical else "real"

    @jax.jit
    def density(*arrays):
        params = [fc.Tensor(a) for a in arrays[:-1]]
        return family(*params, value=fc.Tensor(arrays[-1], (), dtype)).data

    args = [jnp.asarray(np.asarray(params[k], dtype=float)) for k in names]
    args.append(jnp.asarray(value))
    assert math.isnan(float(density(*args)))


def test_invalid_parameters_under_jit_give_nan_in_gaussian_form():
    x = fc.Variable("x", Real)

    @jax.jit
    def at(scale, point):
        return D.Normal(x, fc.Tensor(scale), value=0.5)(x=fc.Tensor(point)).data

    assert math.isnan(float(at(jnp.asarray(-1.0), jnp.asarray(0.0))))
    assert float(at(jnp.asarray(2.0), jnp.asarray(0.0))) == pytest.approx(
        st.norm(0, 2).logpdf(0.5))


# -- construction ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "torch", "jit"])
def test_unnormalized_probs_are_normalized_as_torch_does(backend):
    # torch.distributions (and pyro, numpyro) read probs=w as w / sum(w): the oracles are that
    # ratio's log (torch clamps a zero probability to its eps; log 0 is -inf) and torch's
    # Multinomial on counts that avoid the zero weight.
    w = np.array([[1.0, 3.0, 0.0], [2.0, 2.0, 4.0]])
    counts = np.array([1.0, 2.0, 0.0])
    with np.errstate(divide="ignore"):
        expected_cat = np.log(w / w.sum(-1, keepdims=True))
    expected_mult = tdist.Multinomial(3, probs=torch.tensor(w)).log_prob(
        torch.tensor(counts)).numpy()

    def densities(w, values, counts):
        t = fc.Tensor(w, {"i": Bint[2]})
        cat = D.Categorical(t, value=fc.Tensor(values, {"k": Bint[3]}, 3))
        mult = D.Multinomial(3.0, t, value=fc.Tensor(counts))
        return cat.align(("i", "k")).data, mult.data

    args = (w, np.arange(3), counts)
    if backend == "jit":
        cat, mult = jax.jit(densities)(*map(jnp.asarray, args))
    else:
        cat, mult = densities(*(_to(backend, a, None) for a in args))
    assert np.allclose(np.asarray(cat), expected_cat, atol=1e-12)
    assert np.allclose(np.asarray(mult), expected_mult, atol=1e-12)


def test_positional_keyword_and_default_value():
    loc, scale = fc.Variable("loc", Real), fc.Variable("scale", Real)
    assert D.Normal(loc, scale) is D.Normal(loc, scale, "value") is D.Normal(
        loc=loc, scale=scale, value=fc.Variable("value", Real))
    assert D.StudentT(3.0, value=0.5).item() == pytest.approx(st.t(3).logpdf(0.5))
    p = fc.Variable("p", Reals[3])
    assert D.Categorical(p).inputs == {"p": Reals[3], "value": Bint[3]}
    with pytest.raises(TypeError, match="unexpected argument 'scal'"):
        D.Normal(0.0, scal=1.0)
    with pytest.raises(TypeError, match="needs its parameter 'scale'"):
        D.Normal(0.0)
    with pytest.raises(TypeError, match="both positionally and by name"):
        D.Normal(0.0, 1.0, scale=1.0)
    with pytest.raises(TypeError, match="Distribution is the base"):
        D.Distribution(0.0)


def test_bernoulli_dispatches_on_probs_or_logits():
    assert isinstance(D.Bernoulli(probs=fc.Variable("p", Real)), D.BernoulliProbs)
    assert isinstance(D.Bernoulli(logits=fc.Variable("p", Real)), D.BernoulliLogits)
    with pytest.raises(ValueError, match="exactly one"):
        D.Bernoulli()


def test_lazy_arguments_stay_lazy_and_substitution_evaluates():
    rate = fc.Variable("rate", Real)
    d = D.Gamma(2.0, rate, value=1.5)
    assert isinstance(d, D.Gamma) and d.inputs == {"rate": Real}
    t = fc.Tensor(np.array([1.0, 2.0]), {"i": Bint[2]})
    out = d(rate=t)
    assert isinstance(out, fc.Tensor)
    np.testing.assert_allclose(out.data, st.gamma(2.0, scale=1 / np.array([1.0, 2.0])).logpdf(1.5))
    with lazy:
        e = D.Poisson(t, value=2.0)
    assert isinstance(e, D.Poisson)
    np.testing.assert_allclose(fc.reinterpret(e).data, st.poisson([1.0, 2.0]).logpmf(2.0))


def test_reduce_value_of_normalized_distribution_is_zero():
    probs = fc.Tensor(np.array([[0.2, 0.8], [0.5, 0.5]]), {"i": Bint[2]})
    with lazy:
        d = D.Categorical(probs)
    r = fc.reinterpret(d.reduce(ops.logaddexp, "value"))
    assert r.item() == 0.0
    # a reduction over the parameters' batch input too: log of its size
    assert fc.reinterpret(d.reduce(ops.logaddexp, {"value", "i"})).item() == pytest.approx(
        math.log(2))
    g = D.Gamma(fc.Variable("a", Real), 1.0)
    assert g.reduce(ops.logaddexp, "value").item() == 0.0


def test_mean_variance_enumerate():
    d = D.Binomial(fc.Tensor(np.array([4.0, 10.0]), {"i": Bint[2]}), 0.25)
    np.testing.assert_allclose(d.mean().data, [1.0, 2.5])
    np.testing.assert_allclose(d.variance().data, st.binom([4, 10], 0.25).var())
    a = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(D.Dirichlet(a).variance().data, st.dirichlet(a).var())
    with lazy:
        c = D.Categorical(fc.Tensor(np.full((2, 3), 1 / 3), {"i": Bint[2]}))
    support = c.enumerate_support(expand=True)
    assert support.inputs == {"value": Bint[3], "i": Bint[2]} and support.output == Bint[3]
    total = fc.reinterpret(c(value=c.enumerate_support()).reduce(ops.logaddexp, "value"))
    np.testing.assert_allclose(total.data, [0.0, 0.0], atol=1e-12)


# -- Delta ------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_delta_density_and_atom_forms(backend):
    rng = np.random.default_rng(0)
    point = rng.standard_normal((3, 2))  # input i, output Reals[2]
    log_density = rng.standard_normal(3)
    i = {"i": Bint[3]}
    v = fc.Tensor(_to(backend, point, "float64"), i)
    ld = fc.Tensor(_to(backend, log_density, "float64"), i)
    values = np.stack([point[0], point[1] + 1.0])  # input j: equal to v at (0, 0) only
    d = D.Delta(v, ld, fc.Tensor(_to(backend, values, "float64"), {"j": Bint[2]}))
    expected = np.where(np.all(point[:, None] == values[None], -1), log_density[:, None],
                        -np.inf)
    np.testing.assert_array_equal(np.asarray(ops.to_numpy(d.align(("i", "j")).data)),
                                  expected)
    atom = D.Delta(v, ld)  # a Variable value: the point mass at v
    assert isinstance(atom, fc.Delta) and atom.inputs == {"value": Reals[2], "i": Bint[3]}
    moved = D.Delta(fc.Variable("w", Reals[2]), 0.0, fc.Tensor(_to(backend, values[0],
                                                                   "float64")))
    assert isinstance(moved, fc.Delta) and moved.inputs == {"w": Reals[2]}
    both = D.Delta(fc.Variable("w", Reals[2]), 0.0)
    assert isinstance(both, D.Delta)  # two Variables: nothing to evaluate


# -- a new family is a short declaration -------------------------------------------------------
class Rayleigh(D.Distribution):
    """Rayleigh(scale): a user's family, declared here: the rules and methods come with it."""

    params = {"scale": D.Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 1.0

    @staticmethod
    def log_prob(value, scale):
        return ops.log(value) - 2.0 * ops.log(scale) - value * value / (2.0 * scale * scale)

    @staticmethod
    def in_support(value, scale):
        return value >= 0

    @staticmethod
    def draw(rng, shape, scale):
        return scale * ops.sqrt(-2.0 * ops.log(rng.uniform(shape)))

    @staticmethod
    def moments(scale):
        return scale * math.sqrt(math.pi / 2), (2 - math.pi / 2) * scale * scale


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_declared_family_gets_rules_and_methods(backend):
    scale = np.array([0.5, 2.0])
    value = np.array([0.3, 1.0, -1.0])
    d = Rayleigh(fc.Tensor(_to(backend, scale, "float64"), {"i": Bint[2]}),
                 fc.Tensor(_to(backend, value, "float64"), {"j": Bint[3]}))
    assert isinstance(d, fc.Tensor)  # the exact rule was registered for it
    expected = st.rayleigh(scale=scale[:, None]).logpdf(value[None])
    np.testing.assert_allclose(np.asarray(ops.to_numpy(d.align(("i", "j")).data)), expected)
    with pytest.raises(ValueError, match="Rayleigh: parameter 'scale' must be positive"):
        Rayleigh(-1.0)
    with lazy:
        r = Rayleigh(fc.Tensor(_to(backend, scale, "float64"), {"i": Bint[2]}))
    (_, (point, _)), = r.sample("value", {"n": Bint[4000]}, rng_key=0).terms
    x = np.asarray(ops.to_numpy(ops.detach(point.align(("n", "i")).data)))
    mean, var = st.rayleigh(scale=scale).stats("mv")
    assert np.all(np.abs(x.mean(0) - mean) <= 3 * np.sqrt(var / 4000))
    np.testing.assert_allclose(r.mean().data if backend == "numpy" else r.mean().data.numpy(),
                               mean)


def test_arguments_of_two_backends_raise_naming_the_parameters():
    # A torch loc with a numpy value (built directly, or by a conjugate rule from a prior on
    # the active backend and numpy observations) raises naming the family and parameters,
    # under lazy too, instead of a kernel's error about mixing arrays.
    loc = fc.Tensor(torch.zeros(2), {"i": Bint[2]})
    value = fc.Tensor(np.array([0.5, 1.0]), {"i": Bint[2]})
    for interp in (contextlib.nullcontext(), lazy):
        with interp:
            with pytest.raises(TypeError, match="cannot build Normal: 'loc' holds torch arrays "
                                                "and 'value' holds numpy arrays"):
                D.Normal(loc, 1.0, value=value)
    fc.set_backend("torch")
    try:
        p = fc.Variable("p", Real)
        prior = D.Beta(1.0, 1.0, value=p)
        clicks = fc.Tensor(np.array([1.0, 0.0, 1.0]), {"n": Bint[3]})
        with pytest.raises(TypeError, match="cannot build BetaBinomial: 'concentration1' holds "
                                            "torch arrays and '.*' holds numpy arrays"):
            prior + D.Bernoulli(probs=p, value=clicks).reduce(ops.add, "n")
    finally:
        fc.set_backend("numpy")
