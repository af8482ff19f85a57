"""funsor_core.syntax.rewrite_ops: operators rewritten into calls of the named functions.

Oracle: the same function written by hand with the calls, evaluated in several semirings
(it must compute the same numbers and compile to the same bytecode).
"""

from __future__ import annotations

import operator

import pytest

from funsor_core import ops
from funsor_core.syntax import rewrite_ops


def test_rewritten_rule_is_the_hand_written_one():
    @rewrite_ops({"+": "sum_op", "*": "prod_op", "-": "sub_op"}, {"-": "neg_op"},
                 {1.0: "one"})
    def rule(sum_op, prod_op, sub_op, neg_op, one, x, y):
        """doc"""
        return -x * (y + 1.0) - x + 1  # the int 1 is no float constant: kept

    def by_hand(sum_op, prod_op, sub_op, neg_op, one, x, y):
        """doc"""
        return sum_op(sub_op(prod_op(neg_op(x), sum_op(y, one)), x), 1)

    assert rule.__code__.co_code == by_hand.__code__.co_code
    assert (rule.__name__, rule.__doc__, rule.__module__) == ("rule", "doc", __name__)
    for args in [(operator.add, operator.mul, operator.sub, operator.neg, 1.0),
                 (max, operator.add, operator.sub, operator.neg, 0.0),
                 (ops.logaddexp, ops.add, ops.sub, ops.neg, 0.0)]:
        assert rule(*args, 1.5, -2.0) == by_hand(*args, 1.5, -2.0)


def test_outer_decorators_apply_once_and_bad_symbols_raise():
    seen = []

    def register(fn):
        seen.append(fn.__name__)
        return fn

    @register
    @rewrite_ops({"+": "sum_op"})
    def f(sum_op, x):
        return x + x

    assert seen == ["f"] and f(operator.mul, 3) == 9
    with pytest.raises(ValueError, match="'<>' is not a Python operator"):
        rewrite_ops({"<>": "ne"})
