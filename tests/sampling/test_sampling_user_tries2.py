"""sample_inputs that are not Bint[n]: an error naming the input (was the domain's own error)."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, Real, Reals


@pytest.mark.parametrize("domain", [Real, Reals[2]])
def test_real_sample_input_is_named(domain):
    t = fc.Tensor(np.log(np.array([0.2, 0.3, 0.5])), {"i": Bint[3]})
    with pytest.raises(ValueError, match=r"sample_inputs 's': Real.* is not a Bint\[n\]"):
        t.sample(frozenset({"i"}), {"s": domain})
    drawn = t.sample(frozenset({"i"}), {"s": Bint[4]}, rng_key=0)
    assert dict(drawn.inputs) == {"i": Bint[3], "s": Bint[4]}  # a Bint draw index still works
