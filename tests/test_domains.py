"""Domains are interned (shape, dtype) pairs."""

import pickle

import pytest

from funsor_core.domains import Array, Bint, Domain, Real, Reals


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
    with pytest.raises(ValueError, match="non-negative ints"):
        Reals[-1]
    with pytest.raises(AttributeError, match="immutable"):
        Real.shape = (2,)
