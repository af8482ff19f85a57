"""Rules for ``Constant(const_inputs, arg)``: substitution (on ``lazy``, so every
interpretation propagates it), and elementwise ops, reductions and alignment (on ``exact``).

Example:
    >>> from funsor_core.terms.constant import Constant
    >>> c = Constant({"x": fc.Bint[3]}, fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]}))
    >>> d = c.exp()
    >>> type(d).__name__, d.const_inputs
    ('Constant', {'x': Bint[3]})
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.ops import BinaryOp, UnaryOp
from funsor_core.terms.base import Align, Binary, Funsor, Number, Reduce, Subs, Unary
from funsor_core.terms.constant import Constant
from interpretations.exact import exact
from interpretations.lazy import lazy

__all__ = []


def _constant(const_inputs: dict, arg: Funsor) -> Funsor:
    # A Constant along no inputs is its arg.
    return Constant(const_inputs, arg) if const_inputs else arg


# Substituting v for a constant input x: the value no longer varies with x, but it may now
# vary with v's inputs, which become constant inputs unless the term already has them.
# Substitutions for arg's inputs go into arg.
@lazy.register(Subs, Constant, tuple)
def lazy_subs_constant(arg, subs):
    const = arg.const_inputs
    arg_subs = tuple((k, v) for k, v in subs if k not in const)
    const_subs = dict((k, v) for k, v in subs if k in const)
    inner = arg.arg(**dict(arg_subs)) if arg_subs else arg.arg
    const_inputs: dict = {}
    for name, domain in const.items():
        value = const_subs.get(name)
        if value is None:
            const_inputs[name] = domain
            continue
        for k, d in value.inputs.items():
            if k not in inner.inputs and k not in const_inputs:
                const_inputs[k] = d
    for name in [k for k in const_inputs if k in inner.inputs]:
        del const_inputs[name]  # arg already varies with it after substitution
    return _constant(const_inputs, inner)


# op(Constant) = Constant(op(arg)): an elementwise op of a constant is constant.
@exact.register(Unary, UnaryOp, Constant)
def exact_unary_constant(op, arg):
    return Constant(arg.const_inputs, op(arg.arg))


# op(c1, c2): constant along the constant inputs of either that neither arg depends on.
@exact.register(Binary, BinaryOp, Constant, Constant)
def exact_binary_constant_constant(op, lhs, rhs):
    value = Binary(op, lhs.arg, rhs.arg)
    const = {k: d for k, d in {**lhs.const_inputs, **rhs.const_inputs}.items()
             if k not in value.inputs}
    return _constant(const, value)


@exact.register(Binary, BinaryOp, Constant, (Number, Tensor))
def exact_binary_constant_tensor(op, lhs, rhs):
    value = Binary(op, lhs.arg, rhs)
    return _constant({k: d for k, d in lhs.const_inputs.items() if k not in value.inputs},
                     value)


@exact.register(Binary, BinaryOp, (Number, Tensor), Constant)
def exact_binary_tensor_constant(op, lhs, rhs):
    value = Binary(op, lhs, rhs.arg)
    return _constant({k: d for k, d in rhs.const_inputs.items() if k not in value.inputs},
                     value)


# Reducing a constant over n values of a Bint input x:
#   sum_x c = n * c,  prod_x c = c ** n,  logsumexp_x c = c + log n,  max_x c = c (idempotent).
# Over a Real input the sum or product of a constant diverges, so only idempotent ops apply.
@exact.register(Reduce, (type(ops.add), type(ops.mul), type(ops.logaddexp)), Constant,
                frozenset)
def exact_reduce_constant(op, arg, reduced_vars):
    const = arg.const_inputs
    over_const = reduced_vars & const.keys()
    if any(const[k].dtype == "real" for k in over_const):
        return None
    result = arg.arg.reduce(op, reduced_vars - over_const)
    if over_const:
        n = math.prod(const[k].size for k in over_const)
        if op is ops.add:
            result = result * n
        elif op is ops.mul:
            result = result ** n
        else:
            result = result + math.log(n)
    return _constant({k: d for k, d in const.items() if k not in over_const}, result)


@exact.register(Reduce, (type(ops.max), type(ops.min), type(ops.and_), type(ops.or_)),
                Constant, frozenset)
def exact_reduce_idempotent_constant(op, arg, reduced_vars):
    const = arg.const_inputs
    over_const = reduced_vars & const.keys()
    result = arg.arg.reduce(op, reduced_vars - over_const)
    return _constant({k: d for k, d in const.items() if k not in over_const}, result)


# Align: the inputs of a Constant are its constant inputs, then arg's. An order that keeps
# every named constant input before every named input of arg (and names either all constant
# inputs or none of arg's) is a Constant with reordered constant inputs and an aligned arg.
@exact.register(Align, Constant, tuple)
def exact_align_constant(arg, names):
    const = arg.const_inputs
    named_const = [n for n in names if n in const]
    named_arg = [n for n in names if n not in const]
    if list(names) != named_const + named_arg:
        return None
    if named_arg and len(named_const) != len(const):
        return None
    ordered = {n: const[n] for n in named_const}
    ordered.update(const)
    return Constant(ordered, arg.arg.align(tuple(named_arg)))
