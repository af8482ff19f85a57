"""A careless new user's sampling calls (h107): ``t.sample(..., rng_key="abc")`` said "no
backend for arrays of type str", ``rng_key=1.5`` took a float as a numpy key, ``rng_key=-1``
numpy's "expected non-negative integer". Oracles: the errors' text, and numpy's own Generator
for the seeds that keep working (the same seed, the same draws)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc


@pytest.mark.parametrize("key, error, text", [
    ("abc", TypeError, r"got str 'abc'"), (1.5, TypeError, r"got float 1\.5"),
    ([0, 1], TypeError, r"got list"), (-1, ValueError, r"non-negative int seed, got -1")])
def test_bad_rng_key_names_rng_key(backend, key, error, text):
    t = fc.Tensor(np.zeros(3) if backend == "numpy" else [0.0, 0.0, 0.0], {"i": fc.Bint[3]})
    with pytest.raises(error, match=rf"rng_key must be .*{text}"):
        t.sample(frozenset({"i"}), {"n": fc.Bint[4]}, rng_key=key)


def test_int_seeds_and_generators_still_sample_reproducibly():
    t = fc.Tensor(np.log([0.2, 0.3, 0.5]), {"i": fc.Bint[3]})

    def draws(key):
        s = t.sample(frozenset({"i"}), {"n": fc.Bint[64]}, rng_key=key)
        delta = next(x for x in s.terms if isinstance(x, fc.Delta))
        return np.asarray(delta.terms[0][1][0].data)

    a, b = draws(3), draws(np.int64(3))
    np.testing.assert_array_equal(a, b)
    assert set(a.tolist()) <= {0, 1, 2}
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    np.testing.assert_array_equal(draws(g1), draws(g2))
