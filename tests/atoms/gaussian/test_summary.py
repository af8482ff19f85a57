"""``fc.moments``: the mass, mean and covariance of a Gaussian (and of a mixture) by input
name, against dense algebra in numpy (the inverse of the precision, the mean solving
``P mu = i``), on every backend and under ``jax.jit``.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def _random_density(rng, batch: int, dim: int):
    # info_vec and a well-conditioned SPD precision per batch entry.
    a = rng.normal(size=(batch, dim, dim))
    prec = a @ np.swapaxes(a, -1, -2) + dim * np.eye(dim)
    return rng.normal(size=(batch, dim)), prec


def _dense(info, prec, logw=None, f0=0.0):
    # Masses, means and covariances in dense numpy: cov = P^-1, mu = P^-1 i, and for
    # f(x) = f(0) + i'x - x'Px/2, log ∫ exp f = f(0) + i'mu/2 + (d log 2π - log|P|)/2, plus
    # the log weights.
    cov = np.linalg.inv(prec)
    mu = np.einsum("bij,bj->bi", cov, info)
    dim = info.shape[-1]
    log_z = (f0 + 0.5 * np.einsum("bi,bi->b", info, mu) + 0.5 * dim * np.log(2 * np.pi)
             - 0.5 * np.linalg.slogdet(prec)[1])
    return (log_z if logw is None else log_z + logw), mu, cov


def _at_zero(backend, g):
    # f(0), read by evaluating the density (not through its moments).
    dim = g.inputs["y"].shape[0]
    zero = _as(backend, np.zeros(dim))
    return _data(backend, g(x=0.0, y=zero).align(("k",)).data)


def _data(backend, x):
    return ops.to_numpy(x) if backend != "numpy" else np.asarray(x)


def _as(backend, x):
    if backend == "torch":
        import torch
        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return x


def _gaussian(backend, info, prec, batch="k"):
    return fc.Gaussian(info_vec=_as(backend, info), precision=_as(backend, prec),
                       inputs={batch: fc.Bint[info.shape[0]], "x": fc.Real,
                               "y": fc.Reals[info.shape[1] - 1]})


def test_moments_batched_against_dense_inverse(backend):
    rng = np.random.default_rng(0)
    info, prec = _random_density(rng, 4, 3)
    g = _gaussian(backend, info, prec)
    m = fc.moments(g)
    log_z, mu, cov = _dense(info, prec, f0=_at_zero(backend, g))
    assert m.mean["x"].inputs == {"k": fc.Bint[4]} and m.mean["x"].output == fc.Real
    assert m.mean["y"].output == fc.Reals[2]
    assert m.covariance.output == fc.Reals[3, 3] and list(m.reals) == ["x", "y"]
    np.testing.assert_allclose(_data(backend, m.mean["x"].data), mu[:, 0], rtol=1e-9)
    np.testing.assert_allclose(_data(backend, m.mean["y"].data), mu[:, 1:], rtol=1e-9)
    np.testing.assert_allclose(_data(backend, m.covariance.data), cov, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_data(backend, m.block("x", "y").data), cov[:, 0, 1:],
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_data(backend, m.log_mass.data), log_z, rtol=1e-9)


def test_moments_mixture_against_dense(backend):
    rng = np.random.default_rng(1)
    info, prec = _random_density(rng, 4, 3)  # the batched test's shapes: jax compiles shared
    logw = rng.normal(size=4)
    g = _gaussian(backend, info, prec)
    w = fc.Tensor(_as(backend, logw), {"k": fc.Bint[4]})
    m = fc.moments(g + w, mixture="k")
    log_z, mu, cov = _dense(info, prec, logw, _at_zero(backend, g))
    p = np.exp(log_z - np.logaddexp.reduce(log_z))
    mean = p @ mu
    d = mu - mean
    expected = np.einsum("k,kij->ij", p, cov + d[:, :, None] * d[:, None, :])
    assert m.mean["x"].inputs == {} and m.log_mass.inputs == {}
    np.testing.assert_allclose(_data(backend, m.mean["y"].data), mean[1:], rtol=1e-9)
    np.testing.assert_allclose(_data(backend, m.covariance.data), expected, rtol=1e-9)
    np.testing.assert_allclose(float(_data(backend, m.log_mass.data)),
                               np.logaddexp.reduce(log_z), rtol=1e-9)


def test_moments_mixture_keeps_other_batch_inputs():
    # Weights over (b, k), Gaussian over k only: mixing k leaves a batch over b.
    rng = np.random.default_rng(2)
    info, prec = _random_density(rng, 3, 2)
    logw = rng.normal(size=(2, 3))
    g = _gaussian("numpy", info, prec)
    m = fc.moments(g + fc.Tensor(logw, {"b": fc.Bint[2], "k": fc.Bint[3]}), mixture={"k"})
    assert m.covariance.inputs == {"b": fc.Bint[2]}
    for b in range(2):
        log_z, mu, _ = _dense(info, prec, logw[b], _at_zero("numpy", g))
        p = np.exp(log_z - np.logaddexp.reduce(log_z))
        np.testing.assert_allclose(m.mean["x"].data[b], p @ mu[:, 0], rtol=1e-9)


def test_moments_under_jit():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(3)
    info, prec = _random_density(rng, 2, 3)
    logw = rng.normal(size=2)
    fc.set_backend("jax")
    try:
        @jax.jit
        def f(info, prec, logw):
            g = fc.Gaussian(info_vec=info, precision=prec,
                            inputs={"k": fc.Bint[2], "x": fc.Real, "y": fc.Reals[2]})
            m = fc.moments(g + fc.Tensor(logw, {"k": fc.Bint[2]}), mixture="k")
            f0 = g(x=0.0, y=jax.numpy.zeros(2)).align(("k",)).data
            return m.mean["y"].data, m.covariance.data, m.log_mass.data, f0

        mean, cov, log_mass, f0 = f(info, prec, logw)
    finally:
        fc.set_backend("numpy")
    log_z, mu, c = _dense(info, prec, logw, np.asarray(f0))
    p = np.exp(log_z - np.logaddexp.reduce(log_z))
    d = mu - p @ mu
    np.testing.assert_allclose(np.asarray(mean), (p @ mu)[1:], rtol=1e-8)
    np.testing.assert_allclose(np.asarray(cov),
                               np.einsum("k,kij->ij", p, c + d[:, :, None] * d[:, None, :]),
                               rtol=1e-8)
    np.testing.assert_allclose(float(log_mass), np.logaddexp.reduce(log_z), rtol=1e-8)


def test_moments_degenerate_precision_names_the_variables():
    # Two columns, but precision [[1, 1], [1, 1]] is singular: no information on x - y.
    g = fc.Gaussian(white_vec=np.zeros(2), prec_sqrt=np.array([[1.0, 0.0], [1.0, 0.0]]),
                    inputs={"x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match=r"moments: the precision over \['x', 'y'\] is "
                                         r"singular.*x, y"):
        fc.moments(g)
    low = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.array([[1.0], [0.0]]),
                      inputs={"x": fc.Real, "y": fc.Real})
    with pytest.raises(ValueError, match=r"rank 1 < dim 2.*\['x', 'y'\]"):
        fc.moments(low)


def test_moments_bad_input_errors():
    g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
                    inputs={"k": fc.Bint[2], "x": fc.Real})
    with pytest.raises(ValueError, match=r"mixture names \['j'\].*\['k'\]"):
        fc.moments(g, mixture="j")
    with pytest.raises(TypeError, match="moments needs a Gaussian"):
        fc.moments(fc.Tensor(np.zeros(2), {"k": fc.Bint[2]}))
    with pytest.raises(ValueError, match=r"'z' is not a real input"):
        fc.moments(g).block("z")
