"""to_data of a family with a probability-vector parameter given unnormalized weights: the
backend's object holds the normalized probabilities the funsor means (numpyro validates a
simplex and refused funsor's test_categorical_event_dim_conversion weights).

Oracle: log(w / sum(w)) by numpy at the drawn values.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.distribution import Categorical
from interpretations import lazy


@pytest.mark.parametrize("backend_name", ["torch", "jax"])
def test_to_data_categorical_unnormalized_probs(backend_name):
    if backend_name == "jax":
        pytest.importorskip("numpyro")
        import jax.numpy as array_module

        asarray = array_module.asarray
    else:
        import torch

        asarray = torch.tensor
    w = np.array([[1.0, 3.0, 4.0], [2.0, 2.0, 4.0]])
    fc.set_backend(backend_name)
    try:
        with lazy:
            d = Categorical(probs=fc.Tensor(asarray(w), {"i": fc.Bint[2]}))
        obj = fc.to_data(d, {"i": -1})
        actual = fc.ops.to_numpy(obj.log_prob(asarray(np.array([0, 2]))))
    finally:
        fc.set_backend("numpy")
    expected = np.log(w[[0, 1], [0, 2]] / w.sum(-1))
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


def test_dist_class_is_the_active_backends_library():
    # funsor's test_*_enumerate_support build d.dist_class(logits=jax array) on jax
    pytest.importorskip("numpyro")
    import jax.numpy as jnp
    from scipy.special import log_softmax

    from funsor_core.distribution import CategoricalLogits

    logits = np.array([0.3, -1.0, 2.0])
    fc.set_backend("jax")
    try:
        with lazy:
            d = CategoricalLogits(fc.Tensor(jnp.asarray(logits)))
        raw = d.dist_class(logits=jnp.asarray(logits))
        actual = fc.ops.to_numpy(raw.log_prob(jnp.arange(3)))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(actual, log_softmax(logits), rtol=1e-6)
