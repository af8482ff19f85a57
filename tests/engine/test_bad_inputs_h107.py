"""A careless new user's interpretation calls (h107): ``with lazy():`` failed with
"__call__() missing 1 required positional argument: 'fn'", and ``lazy(array)`` (meant as
"evaluate lazily") returned a wrapper that failed only when called. Oracle: the errors' text;
the decorator form still works."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from interpretations import exact, lazy


@pytest.mark.parametrize("interp", [lazy, exact])
def test_calling_an_interpretation_without_a_function_names_the_forms(interp):
    with pytest.raises(TypeError, match=rf"{interp.name} is a context manager or decorator: "
                                        rf"`with {interp.name}:` .*got NoneType"):
        with interp():
            pass
    with pytest.raises(TypeError, match=r"got ndarray"):
        interp(np.zeros(2))


def test_the_decorator_form_still_works():
    @lazy
    def build(x):
        return x.exp()

    t = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    out = build(t)
    assert not isinstance(out, fc.Tensor)  # recorded, not evaluated
    np.testing.assert_allclose(fc.reinterpret(out).data, np.exp([0.0, 1.0]))
