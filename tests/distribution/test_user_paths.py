"""A switching funsor user's programs (h67): a Categorical whose ``probs`` a jitted function
closes over. Such an array is concrete, but every op on it inside the trace is staged, so
the "all probabilities positive" shortcut of the log table answered with a tracer and
``bool`` of it raised ``TracerBoolConversionError`` (eager was right). Now the shortcut is
read on a numpy copy; every form must give numpy's normalized log probabilities."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Categorical

P = np.array([0.2, 0.3, 0.5])
LOG_P = np.log(P / P.sum())


@pytest.fixture(autouse=True)
def _jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def test_categorical_closed_over_probs_jit_traced_value():
    probs = fc.Tensor(jnp.asarray(P))
    fn = jax.jit(lambda v: Categorical(probs=probs, value=fc.Tensor(v, dtype=3)).data)
    np.testing.assert_allclose(float(fn(jnp.array(2))), LOG_P[2], rtol=1e-6)


def test_categorical_closed_over_probs_jit_table_and_substitution():
    probs = fc.Tensor(jnp.asarray(P))
    table = jax.jit(lambda: Categorical(probs=probs).data)()
    np.testing.assert_allclose(np.asarray(table), LOG_P, rtol=1e-6)
    subs = jax.jit(lambda v: Categorical(probs=probs)(value=fc.Tensor(v, dtype=3)).data)
    np.testing.assert_allclose(float(subs(jnp.array(1))), LOG_P[1], rtol=1e-6)


def test_max_of_closed_over_nonnegative_tensor_times_variable_under_jit():
    # max distributes over mul only for factors known nonnegative; the test reads the
    # closed-over array on the host. Right for negative x too: max_j x t_j, by numpy.
    t = np.array([0.5, 2.0, 1.0])
    tt = fc.Tensor(jnp.asarray(t), {"j": fc.Bint[3]})
    fn = jax.jit(lambda x: (fc.Variable("x", fc.Real) * tt).reduce(ops.max, "j")(x=x).data)
    for x in (-1.5, 2.0):
        np.testing.assert_allclose(float(fn(x)), np.max(x * t), rtol=1e-6)


def test_known_true_reads_a_closed_over_array_on_the_host():
    a = jnp.array([1.0, -2.0])
    seen = []

    def fn(b):  # recorded while tracing: a closed-over array is read, a traced one is not
        seen.append((ops.known_true(a, lambda x: ops.amin(x) > -3),
                     ops.known_true(a, lambda x: ops.amin(x) > 0),
                     ops.known_true(b, lambda x: ops.amin(x) > -3)))
        return b

    jax.jit(fn)(a)
    assert seen == [(bool(np.min(a) > -3), bool(np.min(a) > 0), False)]
