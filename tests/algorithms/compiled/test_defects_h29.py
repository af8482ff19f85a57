"""compile_funsor's programs check each value against its input's domain (#28/#29, h29).

``x * x + 1`` for ``x: Reals[2]`` called with a 3-vector returned 3 values. Oracle: the same
expression in numpy.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.compiler import compile_funsor


def test_a_value_of_the_wrong_shape_raises_naming_the_input():
    x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Real)
    program = compile_funsor(x * x + y)
    v = np.array([1.0, -2.0])
    np.testing.assert_allclose(program(x=v, y=0.5), v * v + 0.5)
    batch = np.arange(6.0).reshape(3, 2)  # leading dims are a batch
    np.testing.assert_allclose(program(x=batch, y=np.ones((3, 1))), batch * batch + 1.0)
    for bad in (np.ones(3), np.ones((2, 3)), 1.0):
        with pytest.raises(ValueError, match=r"input 'x' is Reals\[2\]: its value must end "
                                             r"in shape \(2,\)"):
            program(x=bad, y=0.5)
