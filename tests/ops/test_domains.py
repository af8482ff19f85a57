"""Domains are interned (shape, dtype) pairs."""

import gc
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from funsor_core.domains import Array, Bint, Domain, Real, Reals

# The checkout holding this test, whatever the working directory.
ROOT = Path(__file__).resolve().parents[2]


def test_interned_and_repr():
    assert Bint[3] is Bint[3] is Domain(3, ())
    assert Reals[()] is Real and Reals[2, 3] is Reals[(2, 3)]
    assert Array[2, (3,)] is Domain(2, (3,))
    assert [repr(d) for d in (Real, Reals[2, 3], Bint[4], Array[2, (3,)])] == [
        "Real", "Reals[2, 3]", "Bint[4]", "Array[2, (3,)]"]
    assert pickle.loads(pickle.dumps(Reals[2])) is Reals[2]


def test_properties():
    assert Bint[5].size == 5 and Reals[2, 3].num_elements == 6 and Real.is_real
    with pytest.raises(ValueError, match="has no finite size"):
        _ = Real.size


def test_bad_domains():
    with pytest.raises(TypeError, match="needs an integer n"):
        Bint[2.5]
    with pytest.raises(ValueError, match="must be non-negative, got -1"):
        Reals[-1]
    with pytest.raises(AttributeError, match="immutable"):
        Real.shape = (2,)


@pytest.mark.parametrize("make, error, match", [
    (lambda: Array[True, ()], TypeError, "the bool True"),
    (lambda: Bint[True], TypeError, "needs an integer n"),
    (lambda: Reals[True], TypeError, "the bool True"),
    (lambda: Reals[2.0], TypeError, "must be an integer, got 2.0 of type float"),
    (lambda: Array[3.0, ()], TypeError, "must be an integer, got 3.0"),
    (lambda: Array["foo", ()], ValueError, "'real' or an integer bound"),
    (lambda: Bint[-2], ValueError, "must be non-negative, got -2"),
    (lambda: Reals[2, -3], ValueError, "must be non-negative, got -3"),
    (lambda: Reals["a"], TypeError, "got 'a' of type str"),
    (lambda: Domain("real", 3), TypeError, "a tuple of sizes"),
    (lambda: Array[2], TypeError, "needs two arguments"),
])
def test_bad_domains_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bool_does_not_poison_the_cache():
    # Regression: Array[True, ()] was looked up before validation (True == 1, same hash), so
    # in a fresh process it made Bint[1] print and behave as Bint[True] from then on.
    code = ("from funsor_core.domains import Array, Bint\n"
            "try:\n    Array[True, ()]\nexcept TypeError:\n    pass\n"
            "d = Bint[1]\nprint(repr(d), type(d.dtype).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.split() == ["Bint[1]", "int"]
    assert type(Bint[1].dtype) is int


def test_numpy_integers_are_normalized():
    assert Bint[np.int64(3)] is Bint[3] and type(Bint[np.int64(3)].dtype) is int
    assert Reals[np.int32(2), 3] is Reals[2, 3]
    assert Array[2, [3]] is Array[2, (3,)]


def test_cache_is_bounded_but_canonical():
    # Many distinct domains nobody holds are collected; a domain someone holds stays the
    # canonical object, however many others were made in between.
    held = Reals[7, 11, 13]
    before = len(Domain._CACHE)
    for n in range(3 * Domain._RECENT_SIZE):
        Reals[1000 + n, 2]
    gc.collect()
    assert len(Domain._CACHE) <= before + Domain._RECENT_SIZE
    assert len(Domain._RECENT) <= Domain._RECENT_SIZE
    assert Reals[7, 11, 13] is held and Domain("real", (7, 11, 13)) is held
    assert pickle.loads(pickle.dumps(held)) is held
