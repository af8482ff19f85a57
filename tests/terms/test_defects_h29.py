"""Contraction's small-structure cache takes names only (#28/#29, h29).

A Variable held in ``reduced_vars`` would be hashed into the cache key and compared with
``==`` (which builds a term) on a collision. Oracle: ``opt_einsum.contract``.
"""

import numpy as np
import opt_einsum

import funsor_core as fc
from funsor_core import ops
from funsor_core.terms import contraction


class Recorder(dict):
    """The cache's dict, recording every key looked up."""

    looked_up: list

    def get(self, key, default=None):
        self.looked_up.append(key)
        return super().get(key, default)


def test_variables_in_reduced_vars_bypass_the_small_cache_and_stay_right(monkeypatch):
    recorder = Recorder(contraction._SMALL.data)
    recorder.looked_up = []
    monkeypatch.setattr(contraction._SMALL, "data", recorder)
    rng = np.random.default_rng(29)
    f = fc.Tensor(rng.random((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    g = fc.Tensor(rng.random((3, 4)), {"j": fc.Bint[3], "k": fc.Bint[4]})
    expected = opt_einsum.contract("ij,jk->ik", f.data, g.data)
    for reduced in (frozenset({fc.Variable("j", fc.Bint[3])}), frozenset({"j"})):
        for _ in range(2):  # the second call would hit the cache
            out = fc.Contraction(ops.add, ops.mul, reduced, (f, g))
            np.testing.assert_allclose(out.align(("i", "k")).data, expected)
    keys = recorder.looked_up + list(recorder)
    assert keys and all(type(n) is str for key in keys for n in key[2])
