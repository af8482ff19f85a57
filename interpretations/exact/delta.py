"""Exact rules for the Delta atom: substitution, reduction, and adding a Delta to a factor."""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.delta import Delta
from funsor_core.ops import Op
from funsor_core.tensor import Tensor, align_tensors, backend_of
from funsor_core.terms import Binary, Funsor, Number, Reduce, Subs, Variable
from interpretations.exact import exact

AddOp = type(ops.add)


def _log_indicator(value, point, log_density):
    """``log_density`` where ``value == point`` (all output dims equal), ``-inf`` elsewhere."""
    if not all(isinstance(x, (Tensor, Number)) for x in (value, point, log_density)):
        return None
    if all(isinstance(x, Number) for x in (value, point, log_density)):
        return Number(log_density.data if value.data == point.data else -math.inf)
    inputs, (v, p, ld) = align_tensors(value, point, log_density)
    proto = backend_of(value, point, log_density)
    v, p = ops.new_array(proto, v), ops.new_array(proto, p)
    ld = ops.new_array(proto, ld)
    equal = v == p
    nd = len(point.shape)
    if nd:
        equal = ops.all(equal, axis=tuple(range(-nd, 0)))
    ld = ld + ops.new_zeros(proto, tuple(equal.shape))
    data = ops.where(equal, ld, ops.full_like(ld, -math.inf))
    shape = tuple(d.size for d in inputs.values())
    data = ops.expand(data, shape) if tuple(data.shape) != shape else data
    return Tensor.make(data, inputs, "real")


# Delta(x=p)(x=v) = log_density where v == p, else -inf; a Variable renames; substitution into
# the points' and log densities' inputs rebuilds the Delta.
@exact.register(Subs, Delta, tuple)
def exact_subs_delta(arg, subs):
    values = dict(subs)
    terms, logs = [], []
    for name, (point, log_density) in arg.terms:
        point = point(**values)
        log_density = log_density(**values)
        value = values.get(name)
        if value is None:
            terms.append((name, (point, log_density)))
        elif isinstance(value, Variable):
            terms.append((value.name, (point, log_density)))
        else:
            log_prob = _log_indicator(value, point, log_density)
            if log_prob is None:
                return None
            logs.append(log_prob)
    result = Delta(tuple(terms)) if terms else None
    for lp in logs:
        result = lp if result is None else result + lp
    return result


# Reduce(logaddexp, Delta, names) = the log densities of the reduced names; other names stay.
# Reducing batch inputs of the points is left to Contraction.
@exact.register(Reduce, Op, Delta, frozenset)
def exact_reduce_delta(op, arg, reduced_vars):
    if op is not ops.logaddexp or not reduced_vars <= arg.fresh:
        return None
    terms = tuple(t for t in arg.terms if t[0] not in reduced_vars)
    result = Delta(terms) if terms else None
    for name, (_, log_density) in arg.terms:
        if name in reduced_vars:
            result = log_density if result is None else result + log_density
    return result


# Delta + Delta with disjoint names is one Delta.
@exact.register(Binary, AddOp, Delta, Delta)
def exact_binary_add_delta_delta(op, lhs, rhs):
    if lhs.fresh & rhs.inputs.keys() or rhs.fresh & lhs.inputs.keys():
        return _substitute_delta(op, lhs, rhs, left=True) or _substitute_delta(op, rhs, lhs,
                                                                               left=False)
    return Delta(lhs.terms + rhs.terms)


# Delta(x=p) + f = Delta(x=p) + f(x=p): the point is substituted into the factor.
@exact.register(Binary, AddOp, Delta, Funsor)
def exact_binary_add_delta_funsor(op, lhs, rhs):
    return _substitute_delta(op, lhs, rhs, left=True)


@exact.register(Binary, AddOp, Funsor, Delta)
def exact_binary_add_funsor_delta(op, lhs, rhs):
    return _substitute_delta(op, rhs, lhs, left=False)


def _substitute_delta(op, delta, other, left):
    subs = {name: point for name, (point, _) in delta.terms if name in other.inputs}
    if not subs:
        return None
    other = other(**subs)
    return op(delta, other) if left else op(other, delta)
