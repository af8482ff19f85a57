"""Host data into jax without compiling (``backends/jax_host.py``)."""

import logging

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
jax_host = pytest.importorskip("backends.jax_host")


def test_from_host_and_constants_compile_nothing():
    names = []
    handler = logging.Handler()
    handler.emit = lambda r: names.append(r.getMessage()) if r.getMessage().startswith(
        "Compiling ") else None
    logging.getLogger("jax").addHandler(handler)
    try:
        with jax.log_compiles(True):
            x = jax_host.from_host(np.arange(7.0).reshape(7, 1))  # a shape no test uses
            z = jax_host.small_constant(x, (7, 3), 0.5)
    finally:
        logging.getLogger("jax").removeHandler(handler)
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
