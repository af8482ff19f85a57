"""Exact rules for the Delta atom: substitution, reduction, and adding a Delta to a factor."""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.affine import extract_affine
from funsor_core.delta import Delta, invert_affine
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
# the points' and log densities' inputs rebuilds the Delta. An affine value x = y @ A + b of one
# new real y changes variables: dirac(y @ A + b - p) = dirac(y - (p - b) @ A^-1) / |det A|.
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
        elif isinstance(value, (Tensor, Number)):
            log_prob = _log_indicator(value, point, log_density)
            if log_prob is None:
                return None
            logs.append(log_prob)
        else:
            avoid = set(arg.inputs).union(*(v.inputs for k, v in subs if k != name))
            term = _affine_term(point, log_density, value, avoid)
            if term is None:
                return None
            terms.append(term)
    result = Delta(tuple(terms)) if terms else None
    for lp in logs:
        result = lp if result is None else result + lp
    return result


def _affine_term(point, log_density, value, avoid):
    """``(y, (point', log_density'))`` for ``x = value = y @ A + b``, or ``None`` to decline:
    ``value`` not affine in exactly one real ``y`` of ``x``'s domain, ``y`` used elsewhere
    (``avoid``), ``A`` singular, or ``point`` lazy."""
    found = extract_affine(value)
    if found is None or len(found[1]) != 1:
        return None
    const, coeffs = found
    ((y, coeff),) = coeffs.items()
    if y in avoid or value.inputs[y] is not point.output:
        return None
    solved = invert_affine(point, const, coeff)
    if solved is None:
        return None
    new_point, log_abs_det = solved
    return y, (new_point, log_density - log_abs_det)


# Reduce(logaddexp, Delta, names) = the log densities of the reduced names; other names stay.
# The points' Bint batch inputs stay too (a zero over them: the mass is 1 for every batch
# value), as in funsor. Reducing batch inputs of the points is left to Contraction.
@exact.register(Reduce, Op, Delta, frozenset)
def exact_reduce_delta(op, arg, reduced_vars):
    if op is not ops.logaddexp or not reduced_vars <= arg.fresh:
        return None
    terms = tuple(t for t in arg.terms if t[0] not in reduced_vars)
    result = Delta(terms) if terms else None
    for name, (_, log_density) in arg.terms:
        if name in reduced_vars:
            result = log_density if result is None else result + log_density
    batch = {k: d for k, d in arg.inputs.items() if d.dtype != "real"
             and k not in reduced_vars and k not in result.inputs}
    if batch:
        proto = backend_of(*(point for _, (point, _) in arg.terms))
        zeros = ops.new_zeros(proto, tuple(d.size for d in batch.values()))
        result = result + Tensor.make(zeros, batch)
    return result


# Reduce(add, Delta, plates) over Bint inputs of the points and log densities (never the
# Delta's names): sum_i [ld_i + log 1(x == p_i)] = sum_i ld_i + log 1(all p_i == p_0)
# + log 1(x == p_0). A plate absent from a log density sums that many identical copies.
@exact.register(Reduce, AddOp, Delta, frozenset)
def exact_reduce_add_delta(op, arg, reduced_vars):
    if reduced_vars & arg.fresh or any(arg.inputs[v].dtype == "real" for v in reduced_vars):
        return None
    terms = []
    for name, (point, log_density) in arg.terms:
        log_density = _plate_sum(log_density, reduced_vars, arg.inputs)
        plates = reduced_vars & point.inputs.keys()
        if plates:
            first = point(**{v: 0 for v in plates})
            all_equal = _log_indicator(point, first, Number(0.0))
            if all_equal is None:
                return None
            point, log_density = first, log_density + all_equal.reduce(ops.add, plates)
        terms.append((name, (point, log_density)))
    return Delta(tuple(terms))


def _plate_sum(log_density, plates, inputs):
    """``sum`` of ``log_density`` over ``plates``; a plate it lacks multiplies by its size."""
    own = plates & log_density.inputs.keys()
    result = log_density.reduce(ops.add, own) if own else log_density
    copies = math.prod(inputs[v].size for v in plates - own)
    return result * float(copies) if copies != 1 else result


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
