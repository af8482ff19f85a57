"""``memoize``: each distinct term is built once per cache; results match plain evaluation."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from funsor_core.testing import assert_close, random_tensor
from interpretations import Memoize, exact, lazy, memoize


def _lazy_chain():
    a = random_tensor({"i": Bint[2], "j": Bint[3]})
    b = random_tensor({"j": Bint[3]})
    with lazy:
        shared = (a * b).reduce(ops.add, "j")
        expr = shared + shared.exp()
    return a, b, shared, expr


def test_memoize_shares_results_and_agrees_with_numpy():
    a, b, shared, expr = _lazy_chain()
    with memoize() as cache:
        first = fc.reinterpret(expr)
        again = fc.reinterpret(expr)
        part = fc.reinterpret(shared)
    assert first is again
    s = (a.data * b.data[None, :]).sum(1)  # numpy oracle
    assert_close(part.data, s)
    assert_close(first.data, s + np.exp(s))
    assert isinstance(cache, dict) and len(cache) > 0
    assert fc.reinterpret(expr) is not first  # outside memoize: computed anew


def test_memoize_reuses_a_given_cache():
    _, _, _, expr = _lazy_chain()
    cache = {}
    with memoize(cache) as same:
        first = fc.reinterpret(expr)
    assert same is cache
    with memoize(cache):
        second = fc.reinterpret(expr)
    assert first is second


def test_memoize_calls_each_rule_once():
    calls = []
    x = random_tensor({"i": Bint[2]})
    with lazy:
        expr = x.exp() + x.exp()
    with memoize():
        original = exact.interpret

        def counting(cls, args):
            calls.append(cls)
            return original(cls, args)

        exact.interpret = counting  # the base memoize falls back to, by instance
        try:
            fc.reinterpret(expr)
            fc.reinterpret(expr)
        finally:
            del exact.interpret
    assert calls.count(fc.Unary) == 1  # x.exp() is built once though used four times


def test_memoize_falls_back_to_the_entered_interpretation():
    x = random_tensor({"i": Bint[2]})
    with lazy, memoize():
        y = x + 1
    assert isinstance(y, fc.Binary)
    assert Memoize().chain()[0] == "memoize"


def test_memoize_rejects_a_non_dict_cache():
    with pytest.raises(TypeError, match="dict"):
        Memoize(cache=[])
