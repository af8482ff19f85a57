"""to_funsor of numpyro's distribution objects (jax): families by their classes (numpyro's
``BernoulliProbs``, ``BinomialProbs``, ... named by parameter), size-1 batch dims and host
parameters as numpyro keeps them, ``to_event``, masks; under ``jax.jit`` too. The oracle is
the object's own ``log_prob``. numpyro's ``collapse`` handler converts its sites this way."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.domains import Real

jax = pytest.importorskip("jax")
jnp = jax.numpy
nd = pytest.importorskip("numpyro.distributions")

CASES = [
    lambda: nd.Beta(0.5, 1.5),
    lambda: nd.Binomial(10, jnp.array([0.2, 0.7])),
    lambda: nd.Bernoulli(jnp.array([0.3, 0.6])),
    lambda: nd.Bernoulli(logits=jnp.array([0.3, -1.0])),
    lambda: nd.Categorical(jnp.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])),
    lambda: nd.Categorical(logits=jnp.array([0.2, -0.3, 0.5])),
    lambda: nd.Gamma(2.0, jnp.array([3.0, 0.5])),
    lambda: nd.Normal(jnp.zeros(3), 2.0),
    lambda: nd.Poisson(jnp.array([1.5, 2.0])),
    lambda: nd.Normal(jnp.arange(6.0).reshape(2, 3), 1.0).to_event(1),
    lambda: nd.Dirichlet(jnp.array([[1.0, 2.0, 0.5], [0.3, 0.3, 4.0]])),
    lambda: nd.MultivariateNormal(jnp.zeros((2, 2)), jnp.array([[2.0, 0.3], [0.3, 1.0]])),
    lambda: nd.Normal(jnp.zeros(2), 1.0).mask(jnp.array([True, False])),
    lambda: nd.RelaxedBernoulliLogits(0.7, jnp.array([0.3, -1.0])),
    lambda: nd.LowRankMultivariateNormal(jnp.zeros((2, 3)), jnp.array([[1.0], [0.5], [-1.0]]),
                                         jnp.array([1.0, 0.5, 2.0])),
]


def _check(d, key):
    v = d.sample(key)
    dims = {-1: "i"} if d.batch_shape else {}
    f = fc.to_funsor(d, Real, dims)
    got = f(value=fc.to_funsor(v, f.inputs["value"], dims))
    want = d.log_prob(v)
    assert got.inputs == ({"i": fc.Bint[want.shape[0]]} if want.shape else {})
    return got.data, want


@pytest.mark.parametrize("backend", ["jax"], indirect=True)
def test_numpyro_distributions_log_prob_under_jit(backend):
    # One program for every case: eager jax would compile each op of each case apart.
    pairs = jax.jit(lambda key: [_check(make(), k) for make, k in
                                 zip(CASES, jax.random.split(key, len(CASES)))])
    for case, (got, want) in enumerate(pairs(jax.random.PRNGKey(0))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6,
                                   err_msg=f"case {case}")


@pytest.mark.parametrize("backend", ["jax"], indirect=True)
@pytest.mark.parametrize("case", [1, 12])  # collapse converts eagerly: host and mask paths
def test_numpyro_distribution_log_prob_eagerly(backend, case):
    got, want = _check(CASES[case](), jax.random.PRNGKey(case))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_numpyro_unknown_class_is_named():
    with pytest.raises(NotImplementedError, match="Kumaraswamy"):
        fc.to_funsor(nd.Kumaraswamy(1.0, 2.0), Real)
