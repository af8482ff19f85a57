"""Results that name domains return from a jitted function as they are: ``fc.moments(g)``
(whose ``.reals`` maps names to domains) raised jax's "not a valid JAX type"; the numbers
against the closed form of the Gaussian's mean and covariance."""

import numpy as np
import pytest

import funsor_core as fc

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_moments_return_from_jit():
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    try:
        fc.set_backend("jax")

        def read(mean):
            g = fc.Gaussian(mean=mean, covariance=jnp.asarray(cov, "float32"),
                            inputs={"z": fc.Reals[2]})
            return fc.moments(g)

        m = jax.jit(read)(jnp.array([1.0, -2.0]))
        assert m.reals == {"z": fc.Reals[2]}
        np.testing.assert_allclose(np.asarray(m.mean["z"].data), [1.0, -2.0], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(m.covariance.data), cov, rtol=1e-5)
        t = fc.Tensor(jnp.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
        assert jax.jit(lambda t: t.inputs)(t) == {"i": fc.Bint[2], "j": fc.Bint[3]}
        assert jax.tree_util.tree_leaves({"i": fc.Bint[2]}) == []
    finally:
        fc.set_backend("numpy")
