"""A new user's tries of ``partitioned_mcmc`` (h23), one device: a ``Bint[0]`` variable
(no assignment: enumeration's sum is empty) and zero partitions raise naming them; the
marginals of an ordinary run still match enumeration."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.sharding import partitioned_mcmc


def test_partitioned_mcmc_refuses_empty_domains_and_zero_partitions():
    table = np.log(np.array([[1.0, 3.0], [2.0, 2.0]]))
    f = fc.Tensor(table, {"a": fc.Bint[2], "b": fc.Bint[2]})
    s = partitioned_mcmc([f], 400, num_chains=16, rng_key=0)
    p_b = np.exp(table).sum(0) / np.exp(table).sum()
    np.testing.assert_allclose(np.exp(s.marginals()["b"].data), p_b, atol=0.05)
    with pytest.raises(ValueError, match="num_partitions must be an int >= 1, got 0"):
        partitioned_mcmc([f], 5, rng_key=0, num_partitions=0)
    empty = fc.Tensor(np.zeros((0, 2)), {"a": fc.Bint[0], "b": fc.Bint[2]})
    assert np.exp(np.zeros((0, 2))).sum() == 0
    with pytest.raises(ValueError, match=r"\['a'\] are Bint\[0\]"):
        partitioned_mcmc([empty], 5, rng_key=0)
