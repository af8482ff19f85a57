"""funsor 0.4.8 idioms that a switching user writes (helper h37, issue #28): each was run on
funsor-core beside funsor 0.4.8, and each difference found is pinned here.

Oracles: numpy brute force (``np.einsum`` over the arrays); the errors name the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from interpretations import lazy


def _factors(seed=0):
    rng = np.random.RandomState(seed)
    a, b = rng.rand(2, 3), rng.rand(3, 4)
    f = fc.Tensor(a, {"i": Bint[2], "j": Bint[3]})
    g = fc.Tensor(b, {"j": Bint[3], "k": Bint[4]})
    return a, b, f, g


def test_contraction_takes_unpacked_terms():
    # funsor 0.4.8 builds Contraction(red_op, bin_op, reduced_vars, *terms) (its own rules
    # call it so); it was a TypeError about _prepare's arity here.
    a, b, f, g = _factors()
    j = fc.Variable("j", Bint[3])
    expected = np.einsum("ij,jk->ik", a, b)
    eager = fc.Contraction(ops.add, ops.mul, frozenset({j}), f, g)
    np.testing.assert_allclose(eager.align(("i", "k")).data, expected, rtol=1e-12)
    with lazy:
        term = fc.Contraction(ops.add, ops.mul, frozenset({j}), f, g)
    assert isinstance(term, fc.Contraction) and len(term.terms) == 2
    np.testing.assert_allclose(fc.reinterpret(term).align(("i", "k")).data, expected,
                               rtol=1e-12)
    three = fc.Contraction(ops.add, ops.mul, frozenset({"j", "k"}), f, g, fc.Tensor(
        np.arange(4.0), {"k": Bint[4]}))
    np.testing.assert_allclose(three.data, np.einsum("ij,jk,k->i", a, b, np.arange(4.0)),
                               rtol=1e-12)


def test_markov_product_step_names_must_be_a_mapping():
    # A set of names (not pairs) failed inside dict() with "dictionary update sequence
    # element #0 has length 6"; now the message names step_names and shows its form.
    trans = fc.Tensor(np.zeros((3, 2, 2)), {"time": Bint[3], "a": Bint[2], "b": Bint[2]})
    with pytest.raises(ValueError, match="step_names must map step names to free names"):
        fc.MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"a": "b"},
                         frozenset({"a", "b"}))
    # the mapping form still renames the free step inputs
    renamed = fc.MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"a": "b"},
                               {"a": "a0", "b": "b0"})
    assert set(renamed.inputs) == {"a0", "b0"}
    # log(sum exp 0) over 2^(T-1) paths between fixed ends: (T - 1) log 2 with T = 3
    np.testing.assert_allclose(renamed.align(("a0", "b0")).data, np.full((2, 2), 2 * np.log(2)),
                               rtol=1e-12)


# --- families funsor 0.4.8 serves from pyro/numpyro that were missing (AttributeError) ---
scipy_stats = pytest.importorskip("scipy.stats")

# (family, parameters in funsor's order, value, scipy's frozen distribution)
_FAMILIES = [
    ("HalfNormal", (2.0,), 1.3, lambda: scipy_stats.halfnorm(0, 2.0)),
    ("HalfCauchy", (2.0,), 1.3, lambda: scipy_stats.halfcauchy(0, 2.0)),
    ("Cauchy", (0.5, 2.0), 1.3, lambda: scipy_stats.cauchy(0.5, 2.0)),
    ("Gumbel", (0.5, 2.0), 1.3, lambda: scipy_stats.gumbel_r(0.5, 2.0)),
    ("Logistic", (0.5, 2.0), 1.3, lambda: scipy_stats.logistic(0.5, 2.0)),
    ("Chi2", (3.0,), 1.3, lambda: scipy_stats.chi2(3.0)),
    ("FisherSnedecor", (3.0, 9.0), 1.3, lambda: scipy_stats.f(3.0, 9.0)),
    ("Pareto", (1.0, 3.0), 1.3, lambda: scipy_stats.pareto(3.0, scale=1.0)),
    ("Weibull", (2.0, 1.5), 1.3, lambda: scipy_stats.weibull_min(1.5, scale=2.0)),
    ("Geometric", (0.25,), 2.0, lambda: scipy_stats.geom(0.25, loc=-1)),
    ("NegativeBinomial", (3.0, 0.4), 2.0, lambda: scipy_stats.nbinom(3.0, 0.6)),
]


def _scipy_log_density(frozen, value):
    return frozen.logpmf(value) if hasattr(frozen, "logpmf") else frozen.logpdf(value)


@pytest.mark.parametrize("name,args,value,oracle", _FAMILIES, ids=[f[0] for f in _FAMILIES])
def test_more_families_log_density_and_mean(name, args, value, oracle):
    family = getattr(fc.distribution, name)
    frozen = oracle()
    values = np.array([value, 0.5 * value, -1.0])  # the last is outside every support here
    got = family(*args, value=fc.Tensor(values, {"n": Bint[3]})).align(("n",)).data
    np.testing.assert_allclose(got, _scipy_log_density(frozen, values), rtol=1e-10)
    # draws: the sample mean within 6 standard errors of scipy's mean (Cauchy's has none)
    if np.isfinite(frozen.mean()):
        draws = family(*args, value="v").sample(frozenset({"v"}), {"p": Bint[4000]},
                                                 rng_key=1)
        mean = fc.Integrate(draws, fc.Variable("v", fc.Real), frozenset({"v"}))
        mean = mean.reduce(ops.add, "p").data / 4000.0
        assert abs(mean - frozen.mean()) < 6 * frozen.std() / np.sqrt(4000)
        if "moments" not in vars(family):
            return
        got_mean, got_var = family.moments(*map(np.asarray, args))
        np.testing.assert_allclose([got_mean, got_var], [frozen.mean(), frozen.var()],
                                   rtol=1e-10)


def test_more_families_convert_from_torch():
    torch = pytest.importorskip("torch")
    v = torch.tensor(3.0, dtype=torch.float64)
    loc = torch.tensor([0.5, 1.5], dtype=torch.float64)
    for d in [torch.distributions.HalfNormal(loc), torch.distributions.Cauchy(loc, 2.0),
              torch.distributions.Gumbel(loc, 2.0), torch.distributions.Chi2(loc),
              torch.distributions.Pareto(loc, 2.0), torch.distributions.Weibull(loc, 2.0),
              torch.distributions.HalfCauchy(loc),
              torch.distributions.Geometric(logits=loc),
              torch.distributions.NegativeBinomial(3.0, logits=loc),
              torch.distributions.FisherSnedecor(loc, 5.0)]:
        f = fc.to_funsor(d, fc.Real, {-1: "i"})
        assert type(f).__name__ == type(d).__name__
        torch.testing.assert_close(f(value=v).align(("i",)).data, d.log_prob(v))


def test_one_hot_categorical():
    torch = pytest.importorskip("torch")
    probs = np.array([[0.2, 0.3, 0.5], [0.1, 0.0, 0.9]])
    onehots = np.eye(3)
    d = fc.distribution.OneHotCategorical(fc.Tensor(probs, {"i": Bint[2]}),
                                          value=fc.Tensor(onehots, {"k": Bint[3]}))
    with np.errstate(divide="ignore"):
        expected = np.log(probs)  # brute force: the one-hot picks log p_k (-inf for 0)
    np.testing.assert_allclose(d.align(("i", "k")).data, expected, rtol=1e-12)
    bad = fc.distribution.OneHotCategorical(probs[0], value=np.array([0.5, 0.5, 0.0]))
    assert bad.data == -np.inf
    draws = fc.distribution.OneHotCategorical(probs[0], value="v").sample(
        frozenset({"v"}), {"p": Bint[4000]}, rng_key=2)
    mean = fc.Integrate(draws, fc.Variable("v", fc.Reals[3]), frozenset({"v"}))
    mean = mean.reduce(ops.add, "p").data / 4000.0
    assert np.all(np.abs(mean - probs[0]) < 6 * np.sqrt(probs[0] * (1 - probs[0]) / 4000))
    raw = torch.distributions.OneHotCategorical(torch.tensor(probs))
    f = fc.to_funsor(raw, fc.Real, {-1: "i"})
    assert f.inputs["value"] == fc.Reals[3]
    value = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(f(value=value).align(("i",)).data, raw.log_prob(value))


# --- funsor.testing's plumbing, which test files written for funsor import ---
def test_funsor_testing_plumbing():
    from funsor_core import testing

    items = "abcd"
    # brute force over bitmasks, in size order as funsor yields them
    masks = sorted(range(16), key=lambda m: (bin(m).count("1"), [i for i in range(4)
                                                                  if m >> i & 1]))
    expected = [tuple(c for i, c in enumerate(items) if m >> i & 1) for m in masks]
    assert list(testing.iter_subsets(items)) == expected
    assert list(testing.iter_subsets(items, min_size=3)) == [s for s in expected if len(s) >= 3]
    assert list(testing.iter_subsets(items, max_size=1)) == [s for s in expected if len(s) <= 1]
    f = testing.random_tensor({"i": Bint[2], "j": Bint[3]})
    testing.assert_equiv(f.align(("j", "i")), f)
    with pytest.raises(AssertionError):
        testing.assert_equiv(f + 1.0, f)
    assert testing.id_from_inputs({"i": Bint[2], "x": fc.Reals[2, 3]}) == "i,x23"
    assert testing.empty(2, 3).shape == (2, 3)
    assert testing.desugar_getitem[1:2, None] == (slice(1, 2), None)
    assert "Expected:\n2\nActual:\n1" == repr(testing.ActualExpected(1, 2))
    param = testing.xfail_param(3, reason="r")
    assert param.values == (3,) and param.marks[0].name == "xfail"
    mark = testing.requires_backend("numpy")
    assert mark.name == "skipif" and mark.args == (fc.get_backend() != "numpy",)
    assert testing.excludes_backend("numpy").args == (fc.get_backend() == "numpy",)
    with pytest.raises(pytest.xfail.Exception):
        with testing.xfail_if_not_implemented():
            raise NotImplementedError("x")
    with pytest.raises(NotImplementedError):  # not the match: re-raised
        with testing.xfail_if_not_implemented(match="other"):
            raise NotImplementedError("x")
    with pytest.raises(pytest.xfail.Exception):
        with testing.xfail_if_not_found():
            raise AttributeError("x")


def test_interpretation_context_of_older_funsor_code():
    # `with funsor.interpreter.interpretation(lazy):` (funsor before 0.4, still accepted by
    # 0.4.8 with a DeprecationWarning) was an AttributeError.
    from funsor_core.interpreter import interpretation

    a, b, f, g = _factors(1)
    with pytest.warns(DeprecationWarning, match="with x"):
        with interpretation(lazy):
            term = (f * g).reduce(ops.add, "j")
    assert not isinstance(term, fc.Tensor)
    np.testing.assert_allclose(fc.reinterpret(term).align(("i", "k")).data,
                               np.einsum("ij,jk->ik", a, b), rtol=1e-12)
