"""A new user's tries of compiled elimination (h40): a noisy table passed to a plan in a slot
declared functional gave a wrong number (the jointree's replications assume a 0/1 table); a
misspelt name in ``eliminate`` was kept silently; a declared functional term that is not a
factor was ignored; a funsor passed as a program parameter failed deep inside. Oracle:
``np.einsum`` over the same tables."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled.functional import FunctionalError
from interpretations import lazy

RNG = np.random.default_rng(0)
U, G = RNG.random(4), np.eye(3)[[0, 1, 2, 1]]
A, B, C = RNG.random((3, 3)), RNG.random((3, 3)), RNG.random((3, 3, 3))


def _factors(g=G):
    return [fc.Tensor(U, {"u": fc.Bint[4]}), fc.Tensor(g, {"u": fc.Bint[4], "x": fc.Bint[3]}),
            fc.Tensor(A, {"x": fc.Bint[3], "a": fc.Bint[3]}),
            fc.Tensor(B, {"x": fc.Bint[3], "b": fc.Bint[3]}),
            fc.Tensor(C, {"a": fc.Bint[3], "b": fc.Bint[3], "c": fc.Bint[3]})]


def test_plan_checks_a_declared_slot_and_matches_einsum():
    fs = _factors()
    plan = fc.plan([fs[0], fc.functional(fs[1], "x")] + fs[2:], frozenset("uxab"),
                   method="jointree")
    np.testing.assert_allclose(plan(fs).data, np.einsum("u,ux,xa,xb,abc->c", U, G, A, B, C))
    noisy = _factors(RNG.random((4, 3)))
    with pytest.raises(FunctionalError, match=r"out='x'.*at \{'u': 0\}"):
        plan(noisy)  # gave a number 1.75x the true one
    log_plan = fc.plan([fs[0], fc.functional(fs[1], "x")] + fs[2:], frozenset("uxab"))
    with np.errstate(divide="ignore"):
        logs = [fc.Tensor(np.log(f.data), f.inputs) for f in fs]
    np.testing.assert_allclose(log_plan(logs, ops.logaddexp, ops.add).data,
                               np.log(np.einsum("u,ux,xa,xb,abc->c", U, G, A, B, C)))


def test_plan_eliminate_names_are_checked_and_a_bare_name_is_one_name():
    f = fc.Tensor(RNG.random((2, 3)), {"ab": fc.Bint[2], "a": fc.Bint[3]})
    with pytest.raises(ValueError, match=r"cannot eliminate \['b'\].*'ab': Bint\[2\]"):
        fc.plan([f], frozenset({"a", "b"}))
    with pytest.raises(ValueError, match=r"memory_budget=-5: give a positive number of bytes"):
        fc.plan([f], frozenset({"a"}), memory_budget=-5)  # was "over the budget of -5.0 B"
    out = fc.plan(f, "ab")(f)  # a bare factor, a bare name (was a substring test: kept 'a'?)
    assert dict(out.inputs) == {"a": fc.Bint[3]}
    np.testing.assert_allclose(out.data, f.data.sum(0))


def test_compile_refuses_a_declared_term_that_is_not_a_factor_and_funsor_parameters():
    u, g = fc.Tensor(U, {"u": fc.Bint[4]}), fc.Tensor(G, {"u": fc.Bint[4], "x": fc.Bint[3]})
    theta = fc.Variable("theta", fc.Reals[3])["x"]
    with lazy:
        expr = (u * g * theta).reduce(ops.add, {"u", "x"})
    other = fc.Tensor(np.eye(3)[[1, 0, 2, 2]], {"u": fc.Bint[4], "x": fc.Bint[3]})
    with pytest.raises(ValueError, match=r"declared to give \['x'\] are not factors"):
        fc.compile(expr, functional={"x": other})
    program = fc.compile(expr, functional={"x": g})
    th = RNG.random(3)
    np.testing.assert_allclose(program(theta=th), np.einsum("u,ux,x->", U, G, th))
    with pytest.raises(TypeError, match=r"parameter 'theta' is a funsor.*theta=t.data"):
        program(theta=fc.Tensor(th))
