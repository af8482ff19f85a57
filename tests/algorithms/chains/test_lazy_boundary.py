"""markov_marginals and markov_map of a chain whose step and boundary factor were built lazily
(under ``lazy``): the answers of the evaluated factors, against enumeration of every path in
numpy. (A lazy numpy boundary factor met the chain converted to torch for its derivative and
was refused as a mix of torch and numpy arrays.)"""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals
from interpretations import lazy

T, K = 4, 3


def _chain(backend):
    rng = np.random.default_rng(1)
    steps, init = rng.normal(size=(T, K, K)), rng.normal(size=K)
    fc.set_backend(backend)
    proto = fc.get_default_prototype()
    with lazy:
        step = fc.Tensor(ops.new_array(proto, steps),
                         {"t": fc.Bint[T], "x_prev": fc.Bint[K], "x_curr": fc.Bint[K]}) + 0.0
        first = fc.Tensor(ops.new_array(proto, init), {"x_prev": fc.Bint[K]}) * 1.0
    return step, first, steps, init


def _paths(steps, init):
    for path in itertools.product(range(K), repeat=T + 1):
        yield path, init[path[0]] + sum(steps[t, path[t], path[t + 1]] for t in range(T))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_lazy_step_and_boundary_against_enumeration(backend):
    pytest.importorskip(backend)
    try:
        step, first, steps, init = _chain(backend)
        assert not isinstance(first, fc.Tensor)
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t",
                                        {"x_prev": "x_curr"}, [first])
        best, path = markov_map(step, "t", {"x_prev": "x_curr"}, [first])
        scores = dict(_paths(steps, init))
        log_z = np.logaddexp.reduce(list(scores.values()))
        expected = np.zeros((T, K, K))
        for p, s in scores.items():
            for t in range(T):
                expected[t, p[t], p[t + 1]] += np.exp(s - log_z)
        np.testing.assert_allclose(float(total.data), log_z, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(pairs.align(("t", "x_prev", "x_curr")).data),
                                   expected, atol=1e-6)
        top = max(scores, key=scores.get)
        np.testing.assert_allclose(float(best.data), scores[top], rtol=1e-6)
        assert tuple(np.asarray(path["x_prev"].data).tolist()) == top  # the whole path
    finally:
        fc.set_backend("numpy")
