"""A Categorical (or CategoricalLogits) of a Tensor at a free Bint value is its whole log
table over that value (Pyro's enumerated sites), built without a gather of each value or a
support mask: checked against numpy brute force per assignment (zero and -inf entries,
float32), torch's gradient against its closed form, and the traced path under ``jax.jit``
(an invalid probability gives NaN there, never a number)."""

import jax
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core.domains import Bint
from tests.distribution.distribution_cases import log_normalized_brute as _brute

jax.config.update("jax_enable_x64", True)
K = 4


def _probs(dtype=np.float64):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(K), size=(3, 2)).astype(dtype)
    probs[0, 1, 2] = 0.0  # an impossible value: -inf, with a zero (not NaN) gradient
    probs[2, 0] *= 3.0  # an unnormalized row: normalized as torch's Categorical does
    return probs


def _table(probs, name="v"):
    p = fc.Tensor(probs, {"a": Bint[3], "b": Bint[2]})
    return D.Categorical(p, value=fc.Variable(name, Bint[K]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_categorical_table_matches_brute_force(backend, dtype):
    probs = _probs(dtype)
    wrap = torch.tensor if backend == "torch" else np.asarray
    t = _table(wrap(probs))
    assert isinstance(t, fc.Tensor) and dict(t.inputs) == {"a": Bint[3], "b": Bint[2],
                                                           "v": Bint[K]}
    data = np.asarray(t.data)
    assert data.dtype == dtype
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(data, _brute(probs.astype(np.float64)), rtol=rtol)


def test_categorical_table_agrees_with_each_value():
    # The table at v = k is the density at the value k (the gather's path), for every k.
    probs = _probs()
    t = _table(probs)
    for k in range(K):
        at_k = D.Categorical(fc.Tensor(probs, {"a": Bint[3], "b": Bint[2]}), value=k)
        np.testing.assert_array_equal(t(v=k).align(("a", "b")).data, at_k.data)


def test_categorical_logits_table_matches_brute_force():
    with np.errstate(divide="ignore"):
        logits = np.log(_probs()) + 2.0  # unnormalized; -inf where the probability is 0
    p = fc.Tensor(logits, {"a": Bint[3], "b": Bint[2]})
    t = D.CategoricalLogits(p, value=fc.Variable("v", Bint[K]))
    np.testing.assert_allclose(t.data, _brute(_probs()), rtol=1e-12)


def test_categorical_table_gradient():
    # d/dp_k sum_k w_k (log p_k - log sum p) = w_k / p_k [p_k > 0] - sum_j w_j / sum p.
    probs = _probs()
    w = np.random.default_rng(1).normal(size=probs.shape)
    p = torch.tensor(probs, requires_grad=True)
    t = _table(p)
    (t.data * torch.tensor(w)).sum().backward()
    pos = probs > 0
    expected = (np.where(pos, w / np.where(pos, probs, 1.0), 0.0)
                - w.sum(-1, keepdims=True) / probs.sum(-1, keepdims=True))
    np.testing.assert_allclose(p.grad.numpy(), expected, rtol=1e-10)


def test_categorical_table_under_jit_nan_for_invalid():
    probs = _probs()
    bad = probs.copy()
    bad[1, 1, 0] = -0.5  # negative: eagerly an error, traced a NaN row

    fc.set_backend("jax")
    try:
        f = jax.jit(lambda x: _table(x).data)
        good_out, bad_out = f(jax.numpy.asarray(probs)), f(jax.numpy.asarray(bad))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(good_out), _brute(probs), rtol=1e-12)
    assert np.isnan(np.asarray(bad_out)[1, 1]).all()
    np.testing.assert_allclose(np.asarray(bad_out)[0], _brute(probs)[0], rtol=1e-12)
    with pytest.raises(ValueError, match="probs"):
        _table(bad)


def test_categorical_table_of_a_value_the_probs_depend_on():
    # probs with the value among its inputs: no table (the rule declines); each value
    # substituted gives the diagonal entry.
    probs = _probs()
    rows = probs[:, 0, :3]  # row j: the probabilities when v = j
    s = D.Categorical(fc.Tensor(rows, {"v": Bint[3]}), value=fc.Variable("v", Bint[3]))
    for j in range(3):
        np.testing.assert_allclose(s(v=j).data, _brute(rows)[j, j], rtol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_value_named_like_an_input_of_the_parameter_is_the_diagonal(backend):
    # Categorical(p over v, value=v) is log p[v, v] / sum_k p[v, k] for each v (funsor's
    # answer); it stayed a lazy term. Oracle: numpy loops.
    probs = np.random.default_rng(3).dirichlet(np.ones(K), size=K) * 2.0
    expect = np.array([np.log(probs[v, v] / probs[v].sum()) for v in range(K)])
    data = torch.tensor(probs) if backend == "torch" else probs
    v = fc.Variable("v", Bint[K])
    got = D.Categorical(fc.Tensor(data, {"v": Bint[K]}), value=v)
    assert isinstance(got, fc.Tensor) and dict(got.inputs) == {"v": Bint[K]}
    np.testing.assert_allclose(np.asarray(got.data), expect, rtol=1e-12)
    logits = fc.Tensor(np.log(probs) + 1.5, {"v": Bint[K]})
    np.testing.assert_allclose(D.CategoricalLogits(logits, value=v).data, expect, rtol=1e-12)
