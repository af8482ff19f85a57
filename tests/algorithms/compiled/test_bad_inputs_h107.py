"""A careless new user's compiled-elimination calls (h107): ``fc.compile(array)`` and
``fc.cost(array)`` failed with "'numpy.ndarray' object has no attribute 'inputs'";
``memory_budget="1GB"`` said "invalid literal for int() with base 10". Oracles: the errors'
text, and the plans that keep working."""

from __future__ import annotations

import math

import numpy as np
import pytest

import funsor_core as fc


@pytest.mark.parametrize("call", [fc.compile, fc.cost])
def test_compile_and_cost_of_an_array_name_the_call(call):
    with pytest.raises(TypeError, match=rf"{call.__name__}\(\) takes a lazy funsor expression "
                                        r".*got ndarray"):
        call(np.ones(2))


@pytest.mark.parametrize("budget, error, text", [
    ("1GB", TypeError, r"got str"), (None, TypeError, r"got NoneType"),
    (-5, ValueError, r"1 GiB$"), (math.nan, ValueError, r"1 GiB$")])
def test_memory_budget_that_is_no_positive_number(budget, error, text):
    t = fc.Tensor(np.ones((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    pattern = rf"memory_budget.{{1,8}}{budget!r}.*give a positive number of bytes.*{text}"
    with pytest.raises(error, match=pattern):
        with fc.memory_budget(budget):
            pass
    if budget is not None:  # None is the default: the machine's memory
        with pytest.raises(error, match=text):
            fc.plan([t], frozenset("a"), memory_budget=budget)


@pytest.mark.parametrize("budget", [2 ** 30, 1e9, math.inf])
def test_memory_budget_numbers_still_plan(budget):
    x = np.random.RandomState(1).rand(2, 3)
    t = fc.Tensor(x, {"a": fc.Bint[2], "b": fc.Bint[3]})
    with fc.memory_budget(budget):
        p = fc.plan([t], frozenset("a"), memory_budget=budget)
    assert p.stats()["peak_bytes"] > 0
