"""A new user's tries of ``to_funsor`` and substitution: values with no funsor form."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.interop.data import ConversionError


@pytest.fixture(autouse=True)
def _numpy_backend():
    # Numbers become arrays of the active backend; a test before may leave another active.
    old = fc.get_backend()
    fc.set_backend("numpy")
    yield
    fc.set_backend(old)


@pytest.mark.parametrize("value", [None, slice(0, 2), object()])
def test_a_value_with_no_funsor_form_raises_naming_the_input(value):
    # These became a 0-d object array before (a Tensor that failed later, far away).
    f = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    with pytest.raises(ConversionError, match=r"substituting j=.* into an input of domain "
                                              r"Bint\[3\]: cannot convert a "):
        f(j=value)
    with pytest.raises(ValueError, match="cannot convert"):  # funsor 0.4.8's error class
        fc.to_funsor(value)


def test_the_slice_error_names_the_slice_term_that_does_it():
    f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "j": fc.Bint[3]})
    with pytest.raises(TypeError, match=r"fc\.Slice\("):
        f(j=slice(0, 2))
    window = f(j=fc.Slice("j2", 0, 2, 1, 3))  # what the message suggests, against numpy
    expected = np.arange(6.0).reshape(2, 3)[:, :2]
    np.testing.assert_array_equal(window.align(("i", "j2")).data, expected)
