"""Contraction: the normal form built by ``normalize`` and its exact evaluation."""

import itertools

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.terms.contraction import Contraction
from interpretations import normalize

SIZES = {"i": 2, "j": 3, "k": 4}


def _tensor(names, seed):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=tuple(SIZES[n] for n in names))
    return fc.Tensor(fc.to_data(fc.Tensor(data)), {n: fc.Bint[SIZES[n]] for n in names}), data


def test_normalize_flattens_and_orders_terms():
    x, y, z = (fc.Variable(n, fc.Real) for n in "xyz")
    with normalize:
        a = (x + y) + z
        b = z + (y + x)
    assert type(a) is Contraction and a is b
    assert a.red_op is None and a.bin_op is ops.add and len(a.terms) == 3
    assert [t.name for t in a.terms] == ["x", "y", "z"]


def test_normalize_merges_reductions():
    f = fc.Variable("i", fc.Bint[2]) * fc.Variable("x", fc.Real)
    with normalize:
        r = f.reduce(ops.add, "i").reduce(ops.add, "x")
    assert type(r) is Contraction
    assert r.red_op is ops.add and r.bin_op is ops.mul and r.reduced_vars == {"i", "x"}


def test_normalize_unit_law():
    x = fc.Variable("x", fc.Real)
    with normalize:
        assert (x * 1.0) is x


@pytest.mark.parametrize("red_op, bin_op", [(ops.add, ops.mul), (ops.logaddexp, ops.add),
                                            (ops.max, ops.add), (ops.min, ops.add)])
def test_exact_contraction_vs_numpy(red_op, bin_op, backend):
    f, fd = _tensor("ij", 0)
    g, gd = _tensor("jk", 1)
    h, hd = _tensor("k", 2)
    result = Contraction(red_op, bin_op, frozenset("jk"), (f, g, h))
    assert isinstance(result, fc.Tensor) and list(result.inputs) == ["i"]
    if bin_op is ops.mul:
        expected = opt_einsum.contract("ij,jk,k->i", fd, gd, hd)
    else:
        joint = fd[:, :, None] + gd[None] + hd[None, None]
        if red_op is ops.logaddexp:
            expected = np.log(np.exp(joint).sum((1, 2)))
        elif red_op is ops.max:
            expected = joint.max((1, 2))
        else:
            expected = joint.min((1, 2))
    assert np.allclose(ops.to_numpy(result.data), expected)


@pytest.mark.parametrize("order", list(itertools.permutations("ijk")))
def test_reduce_joint_in_every_order(order):
    f, fd = _tensor("ij", 3)
    g, gd = _tensor("jk", 4)
    x = fc.Variable("x", fc.Real)  # keeps the joint lazy, so the reductions form Contractions
    joint = f + g + x
    result = joint
    for name in order:
        result = result.reduce(ops.logaddexp, name)
    value = result(x=0.5)
    expected = np.log(np.exp(fd[:, :, None] + gd[None]).sum()) + 0.5
    assert np.allclose(ops.to_numpy(value.data), expected)


def test_contraction_with_lazy_term_reduces_tensor_part():
    f, fd = _tensor("ij", 5)
    x = fc.Variable("x", fc.Real)
    r = (f + x).reduce(ops.logaddexp, "j")
    assert type(r) is Contraction and "j" not in r.inputs
    tensors = [t for t in r.terms if isinstance(t, fc.Tensor)]
    assert len(tensors) == 1 and "j" not in tensors[0].inputs
    expected = np.log(np.exp(fd).sum(1)) + 2.0
    assert np.allclose(r(x=2.0).data, expected)


def test_contraction_substitution_avoids_capture():
    # r(y) = sum_i i * y. Substituting y := i + 0.5, with a *free* i, must rename the bound
    # i first: the result is sum_k k * (i + 0.5) = i + 0.5, a function of the free i (a
    # capture would give the constant sum_i i * (i + 0.5) = 1.5).
    i = fc.Variable("i", fc.Bint[2])
    y = fc.Variable("y", fc.Real)
    with normalize:
        r = (i * y).reduce(ops.add, "i")
        s = r(y=fc.Variable("i", fc.Bint[2]) + 0.5)
    assert set(s.inputs) == {"i"}
    for value in range(2):
        expected = sum(k * (value + 0.5) for k in range(2))  # brute force over the bound k
        assert float(fc.reinterpret(s)(i=value).data) == pytest.approx(expected)


def test_contraction_errors_name_the_problem():
    with pytest.raises(ValueError, match="red_op=None cannot reduce"):
        Contraction(None, ops.add, frozenset("i"), (fc.Variable("i", fc.Bint[2]),))
    with pytest.raises(ValueError, match="needs a bin_op"):
        Contraction(ops.add, None, frozenset(), (fc.Number(1.0), fc.Number(2.0)))
