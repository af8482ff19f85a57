"""What a Number holds (h54): one Python number. A str or None used to build a Number whose
data was that object, and an array of several values or a traced one failed inside
``.item()``; each raises a TypeError naming what to use instead. Oracle: the Python values."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc


@pytest.mark.parametrize("data, match", [
    ("a", r"Number holds a number \(int, float or bool\), got 'a'; .* a name a Variable"),
    (None, r"got None"),
    ([1.0], r"got \[1.0\]; an array is a Tensor"),
    (np.zeros(2), r"Number holds one number, got an array of shape \(2,\)"),
])
def test_a_number_is_one_number(data, match):
    with pytest.raises(TypeError, match=match):
        fc.Number(data)


def test_one_element_arrays_are_their_number(backend):
    x = fc.Tensor(np.array([2.5])).data  # a one-element array of the active backend
    n = fc.Number(x)
    assert n.data == 2.5 and isinstance(n.data, float)
    assert fc.Number(np.array(2), 3).data == 2


def test_a_traced_value_is_a_tensor_not_a_number():
    import jax
    import jax.numpy as jnp

    with pytest.raises(TypeError, match="a traced array is a Tensor"):
        jax.jit(lambda x: fc.Number(x).data)(jnp.array(1.0))
