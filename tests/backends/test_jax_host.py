"""Host data into jax without compiling (``backends/jax_host.py``)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax_host = pytest.importorskip("backends.jax_host")
from tests.backends.test_jax_eager_compiles import compiles  # noqa: E402


def test_from_host_and_constants_compile_nothing():
    with compiles() as names:
        x = jax_host.from_host(np.arange(7.0).reshape(7, 1))  # a shape no test uses
        z = jax_host.small_constant(x, (7, 3), 0.5)
    assert names == []
    np.testing.assert_array_equal(np.asarray(x)[:, 0], np.arange(7.0))
    np.testing.assert_array_equal(np.asarray(z), np.full((7, 3), 0.5))
    assert z.dtype == x.dtype


def test_small_constant_after_donation():
    z = jax_host.small_constant(jnp.ones(1), (5,), 0)
    assert jax_host.small_constant(jnp.ones(1), (5,), 0) is z  # shared while alive
    jax.jit(lambda a: a + 1, donate_argnums=0)(z)  # a user's jit may delete its buffer
    fresh = jax_host.small_constant(jnp.ones(1), (5,), 0)
    np.testing.assert_array_equal(np.asarray(fresh), np.zeros(5))
