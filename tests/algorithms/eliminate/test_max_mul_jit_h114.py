"""Plated (max, mul) elimination under ``jax.jit`` (h114).

Plated elimination in (max, mul) needs factors known to be nonnegative. Eagerly, ``t.exp()``
is a Tensor whose data are read; under ``jax.jit`` its data are traced, the sign is unknown,
and ``sum_product`` refuses. The error now names the remedy that works under ``jax.jit`` (a
lazily built ``exp``, whose sign is structural), and that remedy gives the brute-force
max-product value for plates of one and two members. Oracle: enumeration in numpy float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import sum_product
from interpretations import lazy


def _brute(log_pz, log_px):
    # max over z, x_1..x_N of exp(pz[z] + sum_n px[n, z, x_n]), the plate a product.
    n, _, k = log_px.shape
    return max(np.exp(log_pz[z] + sum(log_px[i, z, xs[i]] for i in range(n)))
               for z in range(log_pz.shape[0]) for xs in itertools.product(range(k), repeat=n))


def _model(pz, px, lazy_exp: bool):
    n = px.shape[0]
    fz = fc.Tensor(pz, {"z": fc.Bint[2]})
    fx = fc.Tensor(px, {"n": fc.Bint[n], "z": fc.Bint[2], "x": fc.Bint[3]})
    if lazy_exp:
        with lazy:
            fz, fx = fz.exp(), fx.exp()
    else:
        fz, fx = fz.exp(), fx.exp()
    return sum_product(ops.max, ops.mul, [fz, fx], {"z", "x", "n"}, {"n"}).data


@pytest.mark.parametrize("plate_size", [1, 2])
def test_max_mul_plates_under_jit_lazy_exp(plate_size):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(plate_size)
    pz, px = rng.normal(size=2), rng.normal(size=(plate_size, 2, 3))
    px[0, 0, 0] = -np.inf  # a true zero
    fc.set_backend("jax")
    try:
        args = (jnp.asarray(pz), jnp.asarray(px))
        got = jax.jit(lambda a, b: _model(a, b, lazy_exp=True))(*args)
        eager = _model(*args, lazy_exp=False)  # concrete data: its sign is read
        with pytest.raises(ValueError, match="with lazy: f = t.exp()"):
            jax.jit(lambda a, b: _model(a, b, lazy_exp=False))(*args)
    finally:
        fc.set_backend("numpy")
    want = _brute(pz, px)
    np.testing.assert_allclose(float(got), want, rtol=1e-6)
    np.testing.assert_allclose(float(eager), want, rtol=1e-6)
