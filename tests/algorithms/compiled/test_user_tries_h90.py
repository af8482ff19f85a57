"""A new user's tries of compiled elimination (h90), on a network with two deterministic
CPTs, ``b = f(a)`` and ``d = h(b, c)``:

- log tables declared ``functional(..., log=True)`` and passed to ``plan(...)(factors)``
  raised "entry -inf is neither 0.0 nor 1.0": a plan runs in linear space unless called with
  ``(ops.logaddexp, ops.add)``, which no docstring said; ``fc.plan``'s and ``Plan.__call__``'s
  docstrings say it now, and the error names the call;
- ``fc.compile`` of a max-product said "cannot compile a (ops.max, None) elimination ...
  Markov products are not compiled yet (issue 30)"; it names the reduction and what to do.

Oracle: enumeration of every assignment of (a, c) with b and d computed by f and h (numpy).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled.functional import FunctionalError
from interpretations import lazy

RNG = np.random.default_rng(90)
PA, PC, PE = RNG.dirichlet(np.ones(3)), RNG.dirichlet(np.ones(2), 2), RNG.dirichlet(np.ones(2), 3)
F_OF_A = np.array([0, 1, 1])
H_OF_BC = np.array([[0, 1], [2, 0]])
DOMAINS = [{"a": fc.Bint[3]}, {"a": fc.Bint[3], "b": fc.Bint[2]},
           {"b": fc.Bint[2], "c": fc.Bint[2]}, {"b": fc.Bint[2], "c": fc.Bint[2], "d": fc.Bint[3]},
           {"d": fc.Bint[3], "e": fc.Bint[2]}]
TABLES = [PA, np.eye(2)[F_OF_A], PC, np.eye(3)[H_OF_BC], PE]


def _brute_force():
    """p(d, e) by enumerating a and c."""
    out = np.zeros((3, 2))
    for a, c in itertools.product(range(3), range(2)):
        b = F_OF_A[a]
        out[H_OF_BC[b, c]] += PA[a] * PC[b, c] * PE[H_OF_BC[b, c]]
    return out


def _factors(log: bool):
    with np.errstate(divide="ignore"):
        return [fc.Tensor(np.log(t) if log else t, d) for t, d in zip(TABLES, DOMAINS)]


@pytest.mark.parametrize("log", [False, True])
def test_deterministic_cpts_by_plan_and_compile_match_enumeration(log):
    fs = _factors(log)
    semiring = (ops.logaddexp, ops.add) if log else (ops.add, ops.mul)
    declared = [fs[0], fc.functional(fs[1], "b", log=log), fs[2],
                fc.functional(fs[3], "d", log=log), fs[4]]
    plan = fc.plan(declared, frozenset("abcd"))
    p_e = plan(fs, *semiring).data
    np.testing.assert_allclose(np.exp(p_e) if log else p_e, _brute_force().sum(0), rtol=1e-12)
    evidence = fc.Variable("ev", fc.Reals[3])["d"]  # observe d by an indicator
    with lazy:
        expr = fs[0]
        for f in fs[1:] + [evidence]:
            expr = ops.add(expr, f) if log else ops.mul(expr, f)
        expr = expr.reduce(semiring[0], frozenset("abcde"))
    program = fc.compile(expr, functional={"b": fs[1], "d": fs[3]})
    for d in range(3):
        with np.errstate(divide="ignore"):
            ev = np.log(np.eye(3)[d]) if log else np.eye(3)[d]
        got = program(ev=ev)
        np.testing.assert_allclose(np.exp(got) if log else got, _brute_force()[d].sum(),
                                   rtol=1e-12)


def test_log_tables_in_a_linear_plan_call_name_the_log_call():
    fs = _factors(log=True)
    plan = fc.plan([fs[0], fc.functional(fs[1], "b", log=True)] + fs[2:], frozenset("abcd"))
    with pytest.raises(FunctionalError, match=r"ran in linear space, \(add, mul\); log space, "
                                              r"\(logaddexp, add\) is plan\(factors, "
                                              r"ops.logaddexp, ops.add\)"):
        plan(fs)


def test_compiling_a_max_product_names_the_reduction_and_what_to_do():
    fs = _factors(log=False)
    with lazy:
        expr = (fs[0] * fs[1] * fs[2]).reduce(ops.max, frozenset("abc"))
    with pytest.raises(NotImplementedError, match="cannot compile a reduction by ops.max") as e:
        fc.compile(expr, functional={"b": fs[1]})
    assert "issue 30" not in str(e.value)
    best = max(PA[a] * PC[F_OF_A[a], c] for a in range(3) for c in range(2))
    assert abs(float(fc.reinterpret(expr).data) - best) < 1e-12  # the suggested evaluation
