"""Plans as data (``funsor_core.algorithms.eliminate.schedule``) and the one fast-path guard
(``funsor_core.engine.fast_path``): a schedule is a pure function of structure, its execution
agrees with numpy by hand, and the guard declines wherever building the terms does more."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.eliminate.schedule import (
    Schedule,
    plan_elimination,
    run_schedule,
    structure_of,
)
from funsor_core.engine.fast_path import builds_as_is, fast_path, register_array_program
from funsor_core.terms.base import Reduce
from funsor_core.testing import assert_close
from interpretations import exact, lazy


def _plated_factors(seed: int = 0):
    rng = np.random.default_rng(seed)
    z = fc.Tensor(rng.normal(size=3), {"z": fc.Bint[3]})
    zx = fc.Tensor(rng.normal(size=(2, 3, 4)), {"i": fc.Bint[2], "z": fc.Bint[3],
                                                 "x": fc.Bint[4]})
    x = fc.Tensor(rng.normal(size=(2, 5, 4)), {"i": fc.Bint[2], "j": fc.Bint[5],
                                                "x": fc.Bint[4]})
    return [z, zx, x]


def _by_hand(z, zx, x):
    a = x.sum(1)  # product over j in log space
    return logsumexp(logsumexp(zx + a[:, None, :], axis=-1).sum(0) + z)


def test_plan_is_a_pure_function_of_structure():
    args = (ops.logaddexp, ops.add)
    first = plan_elimination(*args, structure_of(*args, _plated_factors(0)),
                             frozenset("zxij"), frozenset("ij"))
    second = plan_elimination(*args, structure_of(*args, _plated_factors(1)),
                              frozenset("zxij"), frozenset("ij"))
    assert isinstance(first, Schedule) and first is second  # cached by structure
    kinds = [s.kind for s in first.steps]
    assert kinds.count("reduce") >= 2 and kinds[-1] == "contract"
    assert first.program is not None


def test_run_schedule_agrees_with_numpy_on_arrays_and_terms():
    factors = _plated_factors(2)
    args = (ops.logaddexp, ops.add)
    schedule = plan_elimination(*args, structure_of(*args, factors), frozenset("zxij"),
                                frozenset("ij"))
    expected = _by_hand(*(f.data for f in factors))
    [on_arrays] = run_schedule(schedule, factors)  # exact: the array program runs
    with lazy:
        [term] = run_schedule(schedule, factors)  # lazy: the terms are built
    assert not isinstance(term, fc.Tensor)
    assert_close(on_arrays.data, expected)
    assert_close(exact(fc.reinterpret)(term).data, expected)


def test_schedule_of_non_tensors_or_a_minor_is_none():
    g = fc.Variable("v", fc.Real)
    assert structure_of(ops.add, ops.mul, [g]) is None
    # x in plate i and y in plate j meet in a factor in both: no fixed list of steps.
    xy = fc.Tensor(np.ones((2, 2, 3, 3)), {"i": fc.Bint[2], "j": fc.Bint[2],
                                           "x": fc.Bint[3], "y": fc.Bint[3]})
    x = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "x": fc.Bint[3]})
    y = fc.Tensor(np.ones((2, 3)), {"j": fc.Bint[2], "y": fc.Bint[3]})
    structure = structure_of(ops.add, ops.mul, [xy, x, y])
    assert plan_elimination(ops.add, ops.mul, structure, frozenset("ijxy"),
                            frozenset("ij")) is None


def test_guard_declines_under_lazy_and_for_unregistered_kinds():
    key = (Reduce, type(ops.add), fc.Tensor, frozenset)
    assert fast_path(key, "reduce", exact) is not None
    assert fast_path(key, "reduce", lazy) is None
    assert fast_path(key, "no such kind", exact) is None
    assert builds_as_is((fc.Tensor, np.ndarray, tuple, str), exact)


def test_registered_program_of_a_user_rule_is_what_the_guard_returns(scratch_exact_rules):
    @exact.register(Reduce, type(ops.add), fc.Tensor, frozenset)
    def user_reduce_add_tensor(op, arg, reduced_vars):
        return None

    key = (Reduce, type(ops.add), fc.Tensor, frozenset)
    assert fast_path(key, "reduce", exact) is None  # the user's rule comes first
    register_array_program(user_reduce_add_tensor, "reduce", np.sum)
    assert fast_path(key, "reduce", exact) is np.sum
