"""infer_discrete's MAP and samples of a model of mass zero under jax.jit (#28/#29, h29).

Eagerly such a model raises ZeroMassError; under jax.jit nothing can be raised, so the values
must be -1, which no Bint holds. Oracle: enumeration of every joint assignment in numpy.
"""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.adjoint.discrete import ZeroMassError


def model(a, b):
    return [fc.Tensor(a, {"x": fc.Bint[3]}), fc.Tensor(b, {"x": fc.Bint[3], "y": fc.Bint[2]})]


def brute_map(a, b):
    scores = {(x, y): a[x] + b[x, y] for x, y in itertools.product(range(3), range(2))}
    return max(scores, key=scores.get)


def test_zero_mass_model_gives_minus_one_under_jit_and_raises_eagerly():
    jax = pytest.importorskip("jax")
    a, b = np.log(np.array([0.2, 0.5, 0.3])), np.log(np.array([[0.9, 0.1], [0.3, 0.7],
                                                                 [0.5, 0.5]]))
    dead = np.full(3, -np.inf)

    def run(a, b):
        best = fc.infer_discrete(model(a, b), query="map")
        draws = fc.infer_discrete(model(a, b), query="sample", num_samples=2,
                                  rng_key=jax.random.PRNGKey(0))
        return best["x"].data, best["y"].data, draws["x"].data, draws["y"].data

    fn = jax.jit(run)
    x, y, sx, sy = (np.asarray(v) for v in fn(a, b))
    assert (int(x), int(y)) == brute_map(a, b)
    assert ((sx >= 0) & (sx < 3)).all() and ((sy >= 0) & (sy < 2)).all()
    for values in fn(dead, b):
        assert (np.asarray(values) == -1).all()
    with pytest.raises(ZeroMassError, match="mass zero"):
        fc.infer_discrete(model(dead, b), query="map")
