"""A careless new user's chain calls (h107): ``sequential_sum_product(..., step=["x", "y"])``
failed in dict() ("element #0 has length 1"); ``markov_marginals`` under ``jax.jit`` with a
traced length beyond the chain (7 steps of a 4-step chain) returned a finite wrong total (its
pairs were NaN) at XLA's default optimization level. Oracles: the errors' text, and numpy
brute force over the paths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_marginals, sequential_sum_product

T, K = 3, 2


def _trans(rng):
    return fc.Tensor(rng.randn(T, K, K), {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})


@pytest.mark.parametrize("step", [["x", "y"], ["xy"], "xy", {"x": fc.Variable("y", fc.Bint[K])},
                                  [("x",)], 5])
def test_step_that_is_no_mapping_of_names_raises(step):
    trans = _trans(np.random.RandomState(0))
    with pytest.raises(TypeError, match=r"step must map prev names to curr names, e\.g\. "
                                        r"step=\{'x_prev': 'x_curr'\}; got "):
        sequential_sum_product(ops.logaddexp, ops.add, trans, fc.Variable("t", fc.Bint[T]), step)


@pytest.mark.parametrize("step", [{"x": "y"}, [("x", "y")], (("x", "y"),)])
def test_step_as_dict_or_pairs_matches_brute_force(step):
    rng = np.random.RandomState(1)
    trans = _trans(rng)
    out = sequential_sum_product(ops.logaddexp, ops.add, trans, fc.Variable("t", fc.Bint[T]),
                                 step).align(("x", "y"))
    d = trans.data
    expected = np.full((K, K), -np.inf)
    for path in itertools.product(range(K), repeat=T + 1):
        w = sum(d[t, path[t], path[t + 1]] for t in range(T))
        expected[path[0], path[-1]] = np.logaddexp(expected[path[0], path[-1]], w)
    np.testing.assert_allclose(out.data, expected, rtol=1e-10)


def test_traced_length_beyond_the_chain_gives_nan_total_not_a_number():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.RandomState(2)
    steps = rng.randn(4, 3, K, K).astype(np.float32)
    fc.set_backend("jax")
    try:
        trans = fc.Tensor(jnp.asarray(steps), {"t": fc.Bint[4], "b": fc.Bint[3], "x": fc.Bint[K],
                                               "y": fc.Bint[K]})

        def total(lengths):
            out, _ = markov_marginals(ops.logaddexp, ops.add, trans, "t", {"x": "y"},
                                      lengths=fc.Tensor(lengths, {"b": fc.Bint[3]}, 8))
            return out.data

        lengths = jnp.array([1, 7, 3])
        # At XLA's default optimization level (the suite compiles at 0, see conftest.py) the
        # kernel's rescaling turned the NaN steps of entry 1 into a finite total.
        compiled = jax.jit(total).lower(lengths).compile(
            compiler_options={"xla_backend_optimization_level": 3})
        got = np.asarray(compiled(lengths))
    finally:
        fc.set_backend("numpy")
    assert np.isnan(got[1])
    for b, n in ((0, 1), (2, 3)):  # the valid entries: every path of n steps, brute force
        paths = itertools.product(range(K), repeat=n + 1)
        expected = logsumexp([sum(steps[t, b, p[t], p[t + 1]] for t in range(n)) for p in paths])
        np.testing.assert_allclose(got[b], expected, rtol=1e-5)
