"""Floats substituted into a ``Bint`` input (h53). Eagerly a non-whole float raises; under
``jax.jit`` it cannot, and truncating a traced 1.5 to 1 gave a plausible wrong number. A
non-whole traced value now becomes an out-of-range index, so the gather gives NaN; whole
floats (Pyro and NumPyro enumerate Bernoulli sites as 0.0/1.0) still select their state.
Oracle: numpy indexing."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError
from funsor_core.testing import assert_close

DATA = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_eager_non_whole_float_raises_naming_the_domain():
    t = fc.Tensor(DATA, {"i": fc.Bint[2], "j": fc.Bint[3]})
    with pytest.raises(DomainError, match=r"into an input of domain Bint\[2\]: cannot convert "
                                          r"floats to Bint\[2\]"):
        t(i=np.array(0.5))
    assert_close(t(i=np.array(1.0)).data, DATA[1])


def test_traced_floats_select_whole_states_and_give_nan_otherwise():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    t = fc.Tensor(jnp.array(DATA), {"i": fc.Bint[2], "j": fc.Bint[3]})

    @jax.jit
    def row(x):
        return t(i=x).data

    assert_close(np.asarray(row(jnp.array(1.0))), DATA[1])
    assert_close(np.asarray(row(jnp.array(0.0))), DATA[0])
    assert np.isnan(np.asarray(row(jnp.array(0.5)))).all()  # was DATA[0], truncated

    @jax.jit
    def entries(x):  # a vector of floats over a batch name
        return t(j=fc.to_funsor(x, fc.Bint[3], {-1: "k"})).align(("i", "k")).data

    out = np.asarray(entries(jnp.array([2.0, 1.5, 0.0])))
    assert_close(out[:, [0, 2]], DATA[:, [2, 0]])
    assert np.isnan(out[:, 1]).all()
