"""A new user's tries of Cat (round 2): parts of different outputs, no parts."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms.inputs import DomainError


def test_cat_parts_of_different_outputs_raise_naming_both():
    # funsor 0.4.8 asserts one output; a real part and a Bint[5] part were silently real
    real = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    index = fc.Tensor(np.zeros((2, 3), dtype=np.int64), {"i": fc.Bint[2], "j": fc.Bint[3]}, 5)
    with pytest.raises(DomainError, match=r"part 0 is Real, part 1 is Bint\[5\]"):
        fc.Cat("j", (real, index))
    with pytest.raises(ValueError, match="at least one part"):
        fc.Cat("j", ())
    both = fc.Cat("j", (index, index))
    assert both.output is fc.Bint[5]
    assert np.array_equal(both.align(("j", "i")).data, np.zeros((6, 2), dtype=np.int64))
