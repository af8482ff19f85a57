"""A Stack of Numbers stays a Stack (as in funsor): its parts remain the very Numbers they are,
so ``Stack("i", (x, y))(i=0) is x`` and a Slice of it is a Stack of its parts. Wherever it
meets arithmetic, a reduction over other names or an index that is not a Number, Variable or
Slice, it is evaluated to the Tensor of its parts first, so no number is ever left lazy.

Example:
    >>> s = fc.Stack("i", (fc.Number(1.0), fc.Number(2.0)))
    >>> type(s).__name__, s(i=1), s.reduce(ops.add, "i")
    ('Stack', Number(2.0, 'real'), Number(3.0, 'real'))
    >>> (s * 2).data
    array([2., 4.])
"""

from __future__ import annotations

import functools

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.atoms.tensor_idioms import Getitem
from funsor_core.ops import Op
from funsor_core.terms.base import Align, Binary, Number, Reduce, Subs, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.integrate import Integrate
from funsor_core.terms.reshaping import Cat, Independent, Lambda, Slice, Stack
from interpretations.exact import exact


def is_number_stack(x) -> bool:
    """Whether ``x`` is a Stack whose parts are all Numbers (kept as a Stack under exact)."""
    return type(x) is Stack and all(type(p) is Number for p in x.parts)


def _as_tensor(stack: Stack) -> Tensor:
    return Tensor(stack.data, {stack.name: stack.inputs[stack.name]}, stack.output.dtype)


def _evaluated(args: tuple):
    # The arguments with each Stack of Numbers (also inside tuples) evaluated to a Tensor, or
    # None when there is none.
    changed = False
    out = []
    for a in args:
        if is_number_stack(a):
            a, changed = _as_tensor(a), True
        elif type(a) is tuple and any(is_number_stack(b) for b in a):
            a, changed = tuple(_as_tensor(b) if is_number_stack(b) else b for b in a), True
        out.append(a)
    return tuple(out) if changed else None


@exact.register(Reduce, Op, Stack, frozenset)
def exact_reduce_stack(op, arg, reduced_vars):
    # Reducing any Stack over its own input folds its parts with op (sum_i part_i), then
    # reduces the other names: a Stack of Numbers gives a Number.
    if arg.name not in reduced_vars or op not in ops.ASSOCIATIVE_OPS:
        return None
    folded = functools.reduce(lambda a, b: Binary(op, a, b), arg.parts)
    rest = reduced_vars - {arg.name}
    return Reduce(op, folded, rest) if rest else folded


@exact.register(Cat, str, tuple, str)
def exact_cat_number_stacks(name, parts, part_name):
    # Concatenating Stacks of Numbers along their index is the Stack of all their parts.
    if not all(is_number_stack(p) and p.name == part_name for p in parts):
        return None
    return Stack(name, tuple(n for p in parts for n in p.parts))


@exact.register(Subs, Stack, tuple)
def exact_subs_number_stack(arg, subs):
    # A Number, Variable or Slice selects, renames or slices the parts (the lazy rule); any
    # other index (a Tensor, an expression) indexes the Tensor of the parts.
    if not is_number_stack(arg):
        return None
    value = dict(subs).get(arg.name)
    if value is None or type(value) in (Number, Variable, Slice):
        return None
    return Subs(_as_tensor(arg), subs)


def _evaluating_rule(cls):
    def rule(*args):
        new = _evaluated(args)
        return None if new is None else cls(*new)

    rule.__name__ = f"exact_{cls.__name__.lower()}_number_stack"
    return rule


for _cls in (Unary, Binary, Reduce, Contraction, Integrate, Align, Getitem, Independent, Cat,
             Lambda):
    exact.register(_cls, *(object,) * len(_cls.fields))(_evaluating_rule(_cls))
