"""funsor_core.sampling.draw: sample frequencies and moments against the exact distribution.

Oracles: numpy softmax / logsumexp of the same log weights (Tensor), the Gaussian's own mean
and covariance as given to the constructor (Gaussian). A sample statistic must lie within 3
standard errors of the exact value, the standard error computed from the sample count.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.delta import Delta
from funsor_core.sampling.draw import sample
from funsor_core.tensor import Tensor

N = 20000


def _array(backend, x):
    x = np.asarray(x, dtype=np.float64)
    if backend == "torch":
        import torch

        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.array(x)
    return x


def _key(backend, seed):
    """Each backend's own kind of key (an int seed works everywhere too)."""
    if backend == "torch":
        import torch

        return torch.Generator().manual_seed(seed)
    if backend == "jax":
        import jax

        return jax.random.PRNGKey(seed)
    return np.random.default_rng(seed)


def _parts(s):
    """``(Delta, log weight Tensor)`` of a sample ``Delta + Tensor``."""
    terms = s.terms if not isinstance(s, Delta) else (s,)
    (delta,) = [t for t in terms if isinstance(t, Delta)]
    weights = [t for t in terms if isinstance(t, Tensor)]
    return delta, (weights[0] if weights else None)


def _points(delta, order):
    """Each sampled name's point, as numpy aligned to ``order`` (names of its inputs)."""
    return {name: ops.to_numpy(point.align(tuple(order)).data)
            for name, (point, _) in delta.terms}


def _assert_frequencies(counts, probs, n):
    se = np.sqrt(probs * (1 - probs) / n)
    assert np.all(np.abs(counts / n - probs) <= 3 * se + 1e-12), (counts / n, probs)


# ---------------------------------------------------------------------------------------------
# Tensor: categorical samples of a joint over Bint inputs, batched over the rest.
def test_tensor_joint_frequencies(backend):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 2))  # k (batch), i, j (sampled jointly)
    t = fc.Tensor(_array(backend, logits), {"k": fc.Bint[2], "i": fc.Bint[3], "j": fc.Bint[2]})
    s = t.sample({"i", "j"}, {"n": fc.Bint[N]}, rng_key=_key(backend, 1))
    delta, log_weight = _parts(s)
    assert set(s.inputs) == {"i", "j", "k", "n"}
    pts = _points(delta, ("n", "k"))
    probs = np.exp(logits - logsumexp(logits, axis=(1, 2), keepdims=True))
    for k in range(2):
        counts = np.zeros((3, 2))
        np.add.at(counts, (pts["i"][:, k], pts["j"][:, k]), 1)
        _assert_frequencies(counts, probs[k], N)
    # The weight is the mass over the sampled names: an unbiased estimate of the integral.
    expected = logsumexp(logits, axis=(1, 2))
    got = ops.to_numpy(log_weight.align(tuple(k for k in ("n", "k") if k in log_weight.inputs))
                       .data)
    np.testing.assert_allclose(np.broadcast_to(got, (N, 2) if got.ndim == 2 else (2,)),
                               np.broadcast_to(expected, (N, 2) if got.ndim == 2 else (2,)),
                               rtol=1e-12)


def test_tensor_partial_sampling_keeps_other_inputs_as_batch():
    logits = np.log(np.array([[0.1, 0.9], [0.7, 0.3]]))  # i (batch), j (sampled)
    t = fc.Tensor(logits, {"i": fc.Bint[2], "j": fc.Bint[2]})
    delta, log_weight = _parts(t.sample("j", {"n": fc.Bint[N]}, rng_key=3))
    pts = _points(delta, ("n", "i"))["j"]
    for i in range(2):
        counts = np.bincount(pts[:, i], minlength=2).astype(float)
        _assert_frequencies(counts, np.exp(logits[i]), N)
    np.testing.assert_allclose(log_weight.align(("i",)).data, logsumexp(logits, axis=1),
                               atol=1e-12)


def test_tensor_estimate_of_an_integral_is_unbiased():
    # Integrate(sample, f) averaged over draws estimates Integrate(t, f) = sum_i exp(t_i) f_i.
    rng = np.random.default_rng(4)
    logits, f = rng.normal(size=4), rng.normal(size=4)
    t = fc.Tensor(logits, {"i": fc.Bint[4]})
    s = t.sample("i", {"n": fc.Bint[N]}, rng_key=5)
    estimate = fc.Integrate(s, fc.Tensor(f, {"i": fc.Bint[4]}), frozenset({"i"}))
    draws = ops.to_numpy(estimate.align(("n",)).data)
    exact = np.sum(np.exp(logits) * f)
    assert abs(draws.mean() - exact) <= 3 * draws.std() / np.sqrt(N)


def test_tensor_sample_gradients_are_unbiased_on_torch():
    # d/dlogit_k of sum_i exp(logit_i) f_i is exp(logit_k) f_k; the DiCE weight makes the
    # Monte Carlo estimate's gradient an unbiased estimate of it: per draw, Z f(x) 1[x = k].
    import torch

    rng = np.random.default_rng(9)
    logits_np, f = rng.normal(size=3), rng.normal(size=3)
    logits = torch.tensor(logits_np, requires_grad=True)
    t = fc.Tensor(logits, {"i": fc.Bint[3]})
    s = t.sample("i", {"n": fc.Bint[N]}, rng_key=10)
    estimate = fc.Integrate(s, fc.Tensor(torch.tensor(f), {"i": fc.Bint[3]}), frozenset({"i"}))
    draws = estimate.align(("n",)).data
    draws.mean().backward()
    x = ops.to_numpy(_points(_parts(s)[0], ("n",))["i"])
    per_draw = np.exp(logsumexp(logits_np)) * f[x][:, None] * (x[:, None] == np.arange(3))
    se = per_draw.std(0) / np.sqrt(N)
    assert np.all(np.abs(logits.grad.numpy() - np.exp(logits_np) * f) <= 3 * se)
    np.testing.assert_allclose(draws.detach().numpy(), np.exp(logsumexp(logits_np)) * f[x])


@pytest.mark.parametrize("backend", ["numpy", "torch"])  # jax keys are reproducible by design
def test_tensor_seeds_are_reproducible(backend):
    t = fc.Tensor(_array(backend, np.zeros(5)), {"i": fc.Bint[5]})
    a = _points(_parts(t.sample("i", {"n": fc.Bint[50]}, rng_key=7))[0], ("n",))["i"]
    b = _points(_parts(t.sample("i", {"n": fc.Bint[50]}, rng_key=7))[0], ("n",))["i"]
    c = _points(_parts(t.sample("i", {"n": fc.Bint[50]}, rng_key=8))[0], ("n",))["i"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_tensor_sample_under_jax_jit_with_a_traced_key():
    import jax

    fc.set_backend("jax")
    try:
        logits = np.log(np.array([0.2, 0.5, 0.3]))
        t = fc.Tensor(_array("jax", logits), {"i": fc.Bint[3]})

        @jax.jit
        def draw(t, key):
            delta, _ = _parts(t.sample("i", {"n": fc.Bint[N]}, rng_key=key))
            return delta.terms[0][1][0].data

        pts = ops.to_numpy(draw(t, jax.random.PRNGKey(11)))
        _assert_frequencies(np.bincount(pts, minlength=3).astype(float), np.exp(logits), N)
    finally:
        fc.set_backend("numpy")


def test_unknown_names_return_the_term_and_other_terms_raise():
    t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    assert t.sample("z") is t
    x = fc.Variable("x", fc.Real)
    with pytest.raises(NotImplementedError, match="cannot sample"):
        sample(x.exp(), "x")


def test_rng_key_of_another_backend_is_rejected():
    t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    import torch

    with pytest.raises(TypeError, match="rng_key"):
        t.sample("i", rng_key=torch.Generator())


def test_jax_raw_key_as_host_array():
    # funsor's jax idiom: a raw key as a numpy array of two uint32s (funsor's test_recipes and
    # test_memoize pass these). It is the jax key of those values: the same draws, and samples
    # of the right law (mean within 3 standard errors of the Gaussian's).
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    try:
        g = fc.Gaussian(mean=jnp.array([1.0, -2.0]), covariance=jnp.eye(2),
                        inputs={"x": fc.Reals[2]})
        host = np.array([0, 7], dtype=np.uint32)
        a = _points(_parts(g.sample("x", {"n": fc.Bint[N]}, rng_key=host))[0], ("n",))["x"]
        b = _points(_parts(g.sample("x", {"n": fc.Bint[N]}, rng_key=jnp.asarray(host)))[0],
                    ("n",))["x"]
        c = _points(_parts(g.sample("x", {"n": fc.Bint[N]}, rng_key=jax.random.PRNGKey(8)))[0],
                    ("n",))["x"]
    finally:
        fc.set_backend("numpy")
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.all(np.abs(a.mean(0) - np.array([1.0, -2.0])) <= 3 / np.sqrt(N))
    t = fc.Tensor(jnp.zeros(2), {"i": fc.Bint[2]})
    with pytest.raises(TypeError, match="rng_key"):  # other host arrays are no jax key
        t.sample("i", rng_key=np.array([0, 7], dtype=np.int64))


# ---------------------------------------------------------------------------------------------
# Gaussian: reparameterized samples with the given mean and covariance.
def test_gaussian_mean_and_covariance(backend):
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    g = fc.Gaussian(mean=_array(backend, mean), covariance=_array(backend, cov),
                    inputs={"x": fc.Reals[2]})
    s = g.sample("x", {"n": fc.Bint[N]}, rng_key=_key(backend, 2))
    delta, log_weight = _parts(s)
    x = _points(delta, ("n",))["x"]
    assert x.shape == (N, 2)
    se_mean = np.sqrt(np.diag(cov) / N)
    assert np.all(np.abs(x.mean(0) - mean) <= 3 * se_mean)
    # Var of a sample covariance entry of a Gaussian: (C_aa C_bb + C_ab^2) / N.
    se_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / N)
    assert np.all(np.abs(np.cov(x.T, bias=True) - cov) <= 3 * se_cov)
    # All real inputs sampled: the weight is the log normalizer log sqrt(det(2 pi C)).
    expected = 0.5 * np.log(np.linalg.det(2 * np.pi * cov))
    np.testing.assert_allclose(ops.to_numpy(log_weight.data), expected, rtol=1e-10)


def test_gaussian_batched_means():
    means = np.array([[0.0], [5.0]])
    g = fc.Gaussian(mean=means, covariance=np.full((2, 1, 1), 0.25),
                    inputs={"i": fc.Bint[2], "x": fc.Real})
    delta, _ = _parts(g.sample("x", {"n": fc.Bint[N]}, rng_key=6))
    x = _points(delta, ("n", "i"))["x"]
    assert np.all(np.abs(x.mean(0) - means[:, 0]) <= 3 * np.sqrt(0.25 / N))


def test_gaussian_sample_under_jax_jit_with_a_traced_key():
    import jax

    fc.set_backend("jax")
    try:
        g = fc.Gaussian(mean=_array("jax", [3.0]), covariance=_array("jax", [[4.0]]),
                        inputs={"x": fc.Real})

        @jax.jit
        def draw(g, key):
            delta, _ = _parts(g.sample("x", {"n": fc.Bint[N]}, rng_key=key))
            return delta.terms[0][1][0].data

        x = ops.to_numpy(draw(g, jax.random.PRNGKey(0)))
        assert abs(x.mean() - 3.0) <= 3 * np.sqrt(4.0 / N)
        assert abs(x.var() - 4.0) <= 3 * np.sqrt(2 * 16.0 / N)
    finally:
        fc.set_backend("numpy")


def test_gaussian_without_information_on_a_direction_raises_naming_it():
    # x[0] + x[1] is all the density knows: it cannot be normalized, nor sampled.
    g = fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=np.ones((2, 2)), inputs={"x": fc.Reals[2]})
    with pytest.raises(ValueError, match=r"cannot marginalize x: .*rank 1 < 2"):
        g.sample("x", {"n": fc.Bint[3]}, rng_key=0)


@pytest.mark.parametrize("backend", ["numpy", "torch"], indirect=True)
def test_sampling_a_partial_sample_draws_the_rest_from_the_conditional(backend):
    # Draw x first (y kept), then sample that sample over {x, y}: the x points stay and y is
    # drawn given them, so the pairs have the joint's mean and covariance (the constructor's)
    # and one weight (log Z) for all.
    mean = np.array([1.0, -2.0])
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    g = fc.Gaussian(mean=_array(backend, mean), covariance=_array(backend, cov),
                    inputs={"x": fc.Real, "y": fc.Real})
    first = g.sample("x", {"n": fc.Bint[N]}, rng_key=3)
    s = first.sample({"x", "y"}, {"n": fc.Bint[N]}, rng_key=4)
    deltas = [t for t in s.terms if isinstance(t, Delta)]
    points = {k: ops.to_numpy(p.align(("n",)).data)
              for d in deltas for k, (p, _) in d.terms}
    xy = np.stack([points["x"], points["y"]], -1)
    assert xy.shape == (N, 2)
    assert np.all(np.abs(xy.mean(0) - mean) <= 3 * np.sqrt(np.diag(cov) / N))
    se_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / N)
    assert np.all(np.abs(np.cov(xy.T, bias=True) - cov) <= 3 * se_cov)
    log_weight = s.reduce(ops.logaddexp, {"x", "y"})
    expected = 0.5 * np.log(np.linalg.det(2 * np.pi * cov))
    np.testing.assert_allclose(ops.to_numpy(log_weight.data), expected, rtol=1e-8)


def test_independent_samples_each_row_and_stacks_them():
    # Independent over a plate i of N(mean_i, var_i) in z_i: sampling z draws every row, so
    # z[i] has mean_i and var_i, and the weight is sum_i log sqrt(2 pi var_i) (by hand).
    means, variances = np.array([1.0, -3.0]), np.array([0.5, 2.0])
    g = fc.Gaussian(mean=means[:, None], covariance=variances[:, None, None],
                    inputs={"i": fc.Bint[2], "z_i": fc.Real})
    s = fc.Independent(g, "z", "i", "z_i").sample("z", {"n": fc.Bint[N]}, rng_key=5)
    delta, log_weight = _parts(s)
    z = _points(delta, ("n",))["z"]
    assert z.shape == (N, 2)
    assert np.all(np.abs(z.mean(0) - means) <= 3 * np.sqrt(variances / N))
    assert np.all(np.abs(z.var(0) - variances) <= 3 * np.sqrt(2 * variances ** 2 / N))
    expected = np.sum(0.5 * np.log(2 * np.pi * variances))
    np.testing.assert_allclose(ops.to_numpy(log_weight.data), expected, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Delta: already a sample.
def test_delta_sample_returns_the_delta():
    d = fc.Delta("x", fc.Tensor(np.array([0.5, 1.5]), {"i": fc.Bint[2]}), 0.25)
    assert d.sample("x", {"n": fc.Bint[3]}, rng_key=0) is d
    assert sample(d, {"x"}) is d


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_sampling_a_lazy_term_samples_what_it_evaluates_to(backend):
    # Oracle: the same draw from the evaluated Tensor with the same seed.
    from interpretations import reflect

    fc.set_backend(backend)
    try:
        from funsor_core.testing import random_tensor

        x = random_tensor({"i": fc.Bint[3], "j": fc.Bint[2]})
        with reflect:
            z = x(i=1)
        assert type(z).__name__ == "Subs"
        got = z.sample(frozenset({"j"}), {"n": fc.Bint[4]}, rng_key=7)
        want = x(i=1).sample(frozenset({"j"}), {"n": fc.Bint[4]}, rng_key=7)
        assert fc.quote(got) == fc.quote(want)  # same points and weights, to the digit
    finally:
        fc.set_backend("numpy")


def test_numpy_sampling_takes_a_jax_style_key_array_as_a_seed():
    from funsor_core.testing import random_tensor

    t = random_tensor({"i": fc.Bint[5]})
    key = np.array([0, 1], dtype=np.uint32)
    a = t.sample(frozenset({"i"}), {"n": fc.Bint[6]}, rng_key=key)
    b = t.sample(frozenset({"i"}), {"n": fc.Bint[6]}, rng_key=np.random.default_rng(key))
    assert fc.quote(a) == fc.quote(b)  # the same draws as the Generator that key seeds


# -- samplers by registration -----------------------------------------------------------------
class _Coin(fc.Funsor):
    """A toy atom over one Bint[2] input ``c``: a fair coin (its sampler is registered)."""

    fields = ("name",)
    _atom = True

    def _setup(self):
        self.inputs = {self.name: fc.Bint[2]}
        self.output = fc.Real


class _LoadedCoin(_Coin):
    pass


def test_registered_sampler_is_found_along_the_mro():
    from funsor_core.sampling.draw import SAMPLERS, find_sampler, register_sampler

    assert find_sampler(_Coin) is None
    with pytest.raises(NotImplementedError, match="cannot sample"):
        sample(_Coin("c"), "c", rng_key=0)

    @register_sampler(_Coin)
    def sample_coin(term, names, sample_inputs, rng_key=None):
        return Delta(term.name, fc.Number(1, 2))

    try:
        for coin in (_Coin("c"), _LoadedCoin("c")):  # the subclass inherits the sampler
            s = sample(coin, "c", rng_key=0)
            assert isinstance(s, Delta) and s.inputs == {"c": fc.Bint[2]}
            assert sample(coin, "other", rng_key=0) is coin  # no sampled name: as it is
    finally:
        del SAMPLERS[_Coin]
        from funsor_core.sampling.draw import _SAMPLER_CACHE

        _SAMPLER_CACHE.clear()


def test_each_atom_has_its_sampler():
    from funsor_core.atoms.gaussian.atom import Gaussian
    from funsor_core.distribution.array_math import sample_distribution
    from funsor_core.distribution.base import Distribution
    from funsor_core.sampling.draw import find_sampler, sample_tensor
    from funsor_core.terms.contraction import Contraction

    assert find_sampler(Tensor) is sample_tensor
    assert find_sampler(Distribution) is sample_distribution
    names = {c: find_sampler(c).__name__ for c in (Delta, Gaussian, Contraction, fc.Subs)}
    assert names == {Delta: "sample_delta", Gaussian: "sample_gaussian_term",
                     Contraction: "sample_gaussian_sum", fc.Subs: "sample_subs"}
