"""A new user's tries of ``gibbs`` and ``mh`` (h23): a model with a ``Bint[0]`` variable has no
assignment (``loopy_bp`` says log Z = -inf, as enumeration does); samplers raise instead of
returning values outside the domain."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import gibbs, loopy_bp, mh


def test_empty_domain_has_no_samples():
    f = fc.Tensor(np.zeros((0, 2)), {"a": fc.Bint[0], "b": fc.Bint[2]})
    assert np.exp(np.zeros((0, 2))).sum() == 0 == np.exp(float(loopy_bp([f]).log_z.data))
    for sampler in (gibbs, mh):
        with pytest.raises(ValueError, match=r"\['a'\] are Bint\[0\]"):
            sampler([f], 10, rng_key=0)
