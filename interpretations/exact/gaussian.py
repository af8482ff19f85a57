"""Exact rules for the Gaussian atom: construction, sums, reductions (marginalize, plates),
scaling, and substitution (conditioning, renaming, batch indexing, affine changes of
variables). The rules decide WHEN; the math is ``funsor_core.atoms.gaussian.algebra``.

A Gaussian plus a Tensor is kept as a sum (``Contraction(None, add, {}, (g, t))`` once
``normalize`` has seen it), as in funsor 0.4.8; reducing it is evaluated here.
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.gaussian import algebra as ga
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.mixture import (
    cat_gaussians,
    reduce_logaddexp_terms,
    stack_gaussians,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.interpreter import Tuple
from funsor_core.ops import BinaryOp, Op
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Align, Binary, Funsor, Number, Reduce, Subs, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.reshaping import Cat, Independent, Stack
from interpretations.exact import exact

__all__ = ["CHECK_RANK"]

CHECK_RANK = ga.CHECK_RANK  # kept here for callers that switch the rank check off
INDEPENDENT_UNROLL = 256  # the most plate members an Independent of a Gaussian is unrolled over


# A Gaussian of no real input is the Tensor of its constant; a wide one is compressed, the
# constant split off as a Tensor (the constructor returns g + t).
@exact.register(Gaussian, object, object, tuple)
def exact_gaussian(white_vec, prec_sqrt, inputs):
    return ga.gaussian_from_arrays(white_vec, prec_sqrt, inputs)


# g1 + g2 is one Gaussian over the union of their inputs (ranks concatenate).
@exact.register(Binary, BinaryOp, Gaussian, Gaussian)
def exact_binary_gaussian_gaussian(op, lhs, rhs):
    if op is not ops.add:
        return None
    check_backends("add", (lhs, rhs), ("the left Gaussian", "the right Gaussian"))
    return ga.add_gaussians([lhs, rhs])


# g - c = g + (-c); g / c = g * (1 / c), a scaling (see below). The same for sums g + t.
@exact.register(Binary, BinaryOp, (Gaussian, Contraction), (Tensor, Number))
def exact_binary_gaussian_tensor(op, lhs, rhs):
    if isinstance(lhs, Contraction) and not ga.is_gaussian_sum(lhs):
        return None
    if op is ops.sub:
        return lhs + (-rhs)
    if op is ops.truediv:
        return ga.scale_gaussian_sum(lhs, ops.truediv(1.0, rhs))
    return None


# Align(g, names) is the same Gaussian with its inputs reordered: batch dims permute and the
# rows of prec_sqrt (the coordinates) permute; the density is unchanged.
@exact.register(Align, Gaussian, tuple)
def exact_align_gaussian(arg, names):
    inputs = {n: arg.inputs[n] for n in names}
    inputs.update(arg.inputs)
    white_vec, prec_sqrt = align_gaussian(inputs, arg, expand=True)
    return Gaussian.make(white_vec, prec_sqrt, inputs)


# t - g = t + (-g), as funsor's normal form writes a difference: the negated Gaussian stays a
# lazy Unary (it is no Gaussian), and the sum is a Contraction of the terms.
@exact.register(Binary, BinaryOp, (Tensor, Number, Gaussian, Contraction), Gaussian)
def exact_binary_sub_any_gaussian(op, lhs, rhs):
    if op is not ops.sub or (isinstance(lhs, Contraction) and not ga.is_gaussian_sum(lhs)):
        return None
    return lhs + Unary(ops.neg, rhs)


# Reduce(logaddexp, g, reals) = marginal (a Gaussian plus its Tensor normalizer);
# Reduce(add, g, plates) = product over the plates; a mixture over Bint inputs stays lazy.
@exact.register(Reduce, Op, Gaussian, frozenset)
def exact_reduce_gaussian(op, arg, reduced_vars):
    return ga.reduce_gaussian_sum(op, [arg], [], reduced_vars)


# Contractions of Gaussians, Tensors and Numbers under add: add the Gaussians into one, then
# reduce as above.
@exact.register(Contraction, object, object, frozenset, Tuple[(Gaussian, Tensor, Number), ...])
def exact_contraction_gaussians(red_op, bin_op, reduced_vars, terms):
    return ga.contract_gaussians(red_op, bin_op, reduced_vars, terms)


# log ∫ (e^{g_1} + e^{g_2} + ...) = logaddexp_k log ∫ e^{g_k}: a reduction distributes over
# a log-sum of terms (what normalizing a reduction of a Stack of Gaussians gives).
@exact.register(Contraction, type(ops.logaddexp), type(ops.logaddexp), frozenset,
                Tuple[(Gaussian, Tensor, Number), ...])
def exact_contraction_logaddexp_gaussians(red_op, bin_op, reduced_vars, terms):
    if red_op is not ops.logaddexp or bin_op is not ops.logaddexp or not reduced_vars:
        return None
    if not any(isinstance(t, Gaussian) for t in terms):
        return None
    return reduce_logaddexp_terms(reduced_vars, terms)


# Stack(i, (g_0, g_1, ...)) is one Gaussian batched over i (parts may be Gaussian + Tensor).
@exact.register(Stack, str, Tuple[(Gaussian, Contraction), ...])
def exact_stack_gaussians(name, parts):
    return stack_gaussians(name, parts)


# Cat(i, (g_0, g_1, ...), j) is one Gaussian whose batch over i lays the parts' j end to end.
@exact.register(Cat, str, Tuple[(Gaussian, Contraction), ...], str)
def exact_cat_gaussians(name, parts, part_name):
    return cat_gaussians(name, parts, part_name)


# Gaussians among other terms (Deltas, lazy terms): add the Gaussians together first.
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_gaussians_others(red_op, bin_op, reduced_vars, terms):
    return ga.contract_gaussians(red_op, bin_op, reduced_vars, terms)


# c * g for a constant c >= 0 is a Gaussian; it distributes over a sum g + t. A negative
# (or, under jit, an unknown) sign stays lazy: no Gaussian is convex. Terms are sorted by
# class name, so the Gaussian (or the sum) comes first.
@exact.register(Contraction, type(None), type(ops.mul), frozenset,
                Tuple[(Gaussian, Contraction), (Tensor, Number)])
def exact_contraction_scale_gaussian(red_op, bin_op, reduced_vars, terms):
    base, scale = terms
    if not (isinstance(base, Gaussian) or ga.is_gaussian_sum(base)):
        return None
    return ga.scale_gaussian_sum(base, scale)


# Substitution: Bint values index the batch (as a Tensor would); real constants condition;
# Variables rename; affine functions of other real inputs change variables.
@exact.register(Subs, Gaussian, tuple)
def exact_subs_gaussian(arg, subs):
    if all(type(v) is Variable and v.output == arg.inputs[k] for k, v in subs):
        # A renaming (Bint and real names alike) only relabels the inputs: no array changes.
        renamed = ga.rename_gaussian(arg, {k: v.name for k, v in subs})
        if renamed is not None:
            return renamed
    bint = tuple((k, v) for k, v in subs if arg.inputs[k].dtype != "real")
    real = {k: v for k, v in subs if arg.inputs[k].dtype == "real"}
    if bint:
        arg = ga.subs_gaussian_batch(arg, bint)
        if arg is None or not real:
            return arg
    if all(isinstance(v, (Tensor, Number)) for v in real.values()):
        return ga.condition_gaussian(arg, real)
    if all(type(v) is Variable for v in real.values()):
        renamed = ga.rename_gaussian(arg, {k: v.name for k, v in real.items()})
        if renamed is not None:
            return renamed
    return ga.affine_subs_gaussian(arg, real)


# Independent(fn, x, i, x_i) of a Gaussian (plus Tensors) in x_i: sum_k fn(i=k, x_i=x[k]),
# each member an affine substitution, is one Gaussian in x (the members' ranks add up).
# Unrolled over the plate's members, so only for plates of at most INDEPENDENT_UNROLL.
@exact.register(Independent, (Gaussian, Contraction), Variable, str, str)
def exact_independent_gaussian(fn, reals, bint_var, diag_var):
    if not (isinstance(fn, Gaussian) or ga.is_gaussian_sum(fn)) or diag_var not in fn.inputs:
        return None
    size = fn.inputs[bint_var].size
    if fn.inputs[diag_var].dtype != "real" or size > INDEPENDENT_UNROLL:
        return None
    total = fn(**{bint_var: 0, diag_var: reals[0]})
    for k in range(1, size):
        total = total + fn(**{bint_var: k, diag_var: reals[k]})
    return total
