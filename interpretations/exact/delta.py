"""Exact rules for the Delta atom: substitution, reduction, and adding a Delta to a factor.

The math (log indicators, changes of variables, plate sums) is in ``funsor_core.atoms.delta``.
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.delta import (
    Delta,
    independent_delta,
    reduce_delta,
    reduce_delta_plates,
    subs_delta,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module
from funsor_core.engine.interpreter import Tuple
from funsor_core.ops import Op
from funsor_core.terms.base import Binary, Funsor, Reduce, Subs, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.reshaping import Cat, Independent, Stack
from interpretations.exact import exact
from interpretations.exact.number_stack import is_number_stack

AddOp = type(ops.add)


# Delta(x=p)(x=v) = log_density where v == p, else -inf; a Variable renames; substitution into
# the points' and log densities' inputs rebuilds the Delta. An affine value x = y @ A + b of one
# new real y changes variables: dirac(y @ A + b - p) = dirac(y - (p - b) @ A^-1) / |det A|.
@exact.register(Subs, Delta, tuple)
def exact_subs_delta(arg, subs):
    return subs_delta(arg, subs)


# Reduce(logaddexp, Delta, names) = the log densities of the reduced names; other names stay.
# Reduce(add, Delta, plates) over Bint inputs of the points and log densities (never the
# Delta's names): sum_i [ld_i + log 1(x == p_i)] = sum_i ld_i + log 1(all p_i == p_0)
# + log 1(x == p_0). A one-term Contraction (normal form of a Reduce) is the same reduction.
@exact.register(Reduce, Op, Delta, frozenset)
def exact_reduce_delta(op, arg, reduced_vars):
    return _reduce(op, arg, reduced_vars)


@exact.register(Contraction, Op, type(None), frozenset, Tuple[Delta])
def exact_contraction_reduce_delta(red_op, bin_op, reduced_vars, terms):
    return _reduce(red_op, terms[0], reduced_vars)


def _reduce(op, delta, reduced_vars):
    if op is ops.logaddexp and reduced_vars <= delta.fresh:
        return reduce_delta(delta, reduced_vars)
    if op is ops.add and not reduced_vars & delta.fresh and all(
            delta.inputs[v].dtype != "real" for v in reduced_vars):
        return reduce_delta_plates(delta, reduced_vars)
    return None


# Independent(Delta(x_i, p_i, ld_i), x, i, x_i) = Delta(x, stack_i p_i, sum_i ld_i): the
# product over a plate of point masses is the point mass at the stacked points.
@exact.register(Independent, Delta, Variable, str, str)
def exact_independent_delta(fn, reals, bint_var, diag_var):
    return independent_delta(fn, reals.name, bint_var, diag_var)


# Delta + Delta with disjoint names is one Delta.
@exact.register(Binary, AddOp, Delta, Delta)
def exact_binary_add_delta_delta(op, lhs, rhs):
    if lhs.fresh & rhs.inputs.keys():
        return _substitute_delta(op, lhs, rhs, left=True)
    if rhs.fresh & lhs.inputs.keys():
        return _substitute_delta(op, rhs, lhs, left=False)
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


# Stack(i, (Delta(x=p_0, l_0), Delta(x=p_1, l_1), ...)) = Delta(x=Stack(i, p), Stack(i, l)):
# the k-th part is the point mass at p_k; the same for Cat along a Bint input. Parts must
# name the same variables in the same order.
@exact.register(Stack, str, Tuple[Delta, ...])
def exact_stack_deltas(name, parts):
    names = _shared_names(parts)
    if names is None:
        return None
    return Delta(tuple((n, (_stack(name, tuple(_point(p, n) for p in parts)),
                            _stack(name, tuple(_log_density(p, n) for p in parts))))
                       for n in names))


def _stack(name, terms):
    # A Stack of Numbers stays a Stack (see number_stack.py); a Delta's field wants a Tensor.
    stacked = Stack(name, terms)
    if not is_number_stack(stacked):
        return stacked
    return Tensor(stacked.data, {name: stacked.inputs[name]}, stacked.output.dtype)


@exact.register(Cat, str, Tuple[Delta, ...], str)
def exact_cat_deltas(name, parts, part_name):
    names = _shared_names(parts)
    if names is None:
        return None
    sizes = [p.inputs[part_name].size for p in parts]

    def cat(field, n):
        return Cat(name, tuple(_over(field(p, n), part_name, size)
                               for p, size in zip(parts, sizes)), part_name)

    return Delta(tuple((n, (cat(_point, n), cat(_log_density, n))) for n in names))


def _shared_names(parts):
    names = tuple(n for n, _ in parts[0].terms)
    return names if all(tuple(n for n, _ in p.terms) == names for p in parts) else None


def _point(delta, name):
    return dict(delta.terms)[name][0]


def _log_density(delta, name):
    return dict(delta.terms)[name][1]


def _over(term, part_name, size):
    # term broadcast over part_name (a Cat part must have it): term + 0 over Bint[size].
    if part_name in term.inputs:
        return term
    zeros = Tensor(backend_module().asarray([0.0] * size, "real"), {part_name: Bint[size]})
    return term + zeros
