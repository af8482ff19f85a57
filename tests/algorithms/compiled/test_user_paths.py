"""A new user's tries of compiled elimination (h68): a Bayesian network with a deterministic
CPT (``A = B or E``, declared functional), compiled once and queried with every hard and a
soft evidence; a parameter passed as a Python list failed in a kernel ("ops.reshape has no
kernel for arguments of type list") and now names the parameter; ``fc.plan(factors,
{Variable("u", Bint[3])})`` said "cannot eliminate [Variable('u', Bint[3])]: no factor has
them as inputs" where ``u`` was one: Variables are their names, as in ``.reduce``. Oracle:
numpy einsum of the joint table."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from interpretations import lazy


def _network():
    b = fc.Tensor(np.array([0.99, 0.01]), {"B": fc.Bint[2]})
    e = fc.Tensor(np.array([0.98, 0.02]), {"E": fc.Bint[2]})
    table = np.zeros((2, 2, 2))
    for x in range(2):
        for y in range(2):
            table[x, y, x | y] = 1.0
    a = fc.Tensor(table, {"B": fc.Bint[2], "E": fc.Bint[2], "A": fc.Bint[2]})
    j = fc.Tensor(np.array([[0.95, 0.05], [0.1, 0.9]]), {"A": fc.Bint[2], "J": fc.Bint[2]})
    m = fc.Tensor(np.array([[0.99, 0.01], [0.3, 0.7]]), {"A": fc.Bint[2], "M": fc.Bint[2]})
    joint = np.einsum("b,e,bea,aj,am->beajm", b.data, e.data, table, j.data, m.data)
    return [b, e, a, j, m], joint


def test_one_program_answers_every_evidence_and_names_a_list_parameter():
    factors, joint = _network()
    ev_j = fc.Variable("ev_j", fc.Reals[2])["J"]
    ev_m = fc.Variable("ev_m", fc.Reals[2])["M"]
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, factors + [ev_j, ev_m],
                              frozenset({"E", "A", "J", "M"}))
    program = fc.compile(expr, functional={"A": factors[2]})
    assert program.output == ("B",)
    for j in range(2):
        for m in range(2):  # p(B, J = j, M = m)
            np.testing.assert_allclose(program(ev_j=np.eye(2)[j], ev_m=np.eye(2)[m]),
                                       joint[..., j, m].sum((1, 2)), rtol=1e-12)
    soft = np.array([0.2, 0.8])  # likelihood evidence on J, none on M
    np.testing.assert_allclose(program(ev_j=soft, ev_m=np.ones(2)),
                               np.einsum("beajm,j->b", joint, soft), rtol=1e-12)
    assert program.runs == 5
    with pytest.raises(TypeError, match=r"parameter 'ev_j' is a list; .* np.asarray\(ev_j\)"):
        program(ev_j=[0.0, 1.0], ev_m=np.ones(2))
    with pytest.raises(ValueError, match=r"parameter 'ev_m' is Reals\[2\], shape \(2,\); got an "
                                          r"array of shape \(3,\)"):
        program(ev_j=np.ones(2), ev_m=np.ones(3))


def test_plan_eliminates_variables_as_reduce_does():
    factors, joint = _network()
    declared = [fc.functional(f, "A") if "A" in f.inputs and len(f.inputs) == 3 else f
                for f in factors]
    by_name = fc.plan(declared, frozenset({"B", "E", "A", "M"}))
    by_variable = fc.plan(declared, {fc.Variable(n, fc.Bint[2]) for n in "BEAM"})
    assert by_variable is by_name  # the same structure, the same cached plan
    np.testing.assert_allclose(by_variable(factors).data, joint.sum((0, 1, 2, 4)), rtol=1e-12)
    one = fc.plan(factors[:1], fc.Variable("B", fc.Bint[2]))
    np.testing.assert_allclose(one(factors[:1]).data, 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match=r"cannot eliminate Variable\('B', Bint\[3\]\): the "
                                         r"factors' input 'B' is Bint\[2\]"):
        fc.plan(factors, {fc.Variable("B", fc.Bint[3])})
