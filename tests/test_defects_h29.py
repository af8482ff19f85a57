"""The suite's randomness does not depend on test order (#28/#29, h29, item 8).

``fc.testing``'s ``random_*`` draw from numpy's global generator; conftest seeds it (and
torch's) from the test's id before every test, so a test sees the same data alone, in its
file, or after any other selection. Oracle: a generator seeded by hand from the same id.
"""

import zlib

import numpy as np
import pytest

from funsor_core.domains import Bint
from funsor_core.testing import random_tensor


@pytest.mark.parametrize("draws_after", [1000, 7])
def test_global_draws_are_seeded_by_the_test_id(request, draws_after):
    # The second case runs after the first has consumed 1,000 draws: it starts afresh.
    seed = zlib.crc32(request.node.nodeid.encode())
    t = random_tensor({"i": Bint[3]})
    np.testing.assert_array_equal(t.data, np.random.RandomState(seed).standard_normal(3))
    np.random.standard_normal(draws_after)
