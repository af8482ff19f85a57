"""Exact rules for Contraction: semiring einsums of Tensors, Deltas substituted into the other
terms, and partial evaluation of the Tensor part of a mixed Contraction. The algebra they
call is ``funsor_core.algorithms.contract.dense``.

Rules match on the terms' types (``Tuple[...]`` patterns); the Gaussian rules for
Contractions live with the other Gaussian rules. The op positions stay ``object`` and rules
test the ops inside: a pattern specific in an op and general in the terms would be
incomparable with the dense rule, which must be tried first.
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.contract.dense import (
    contract_deltas,
    contract_dense,
    contract_partial,
    contract_planned,
    split_sum_reduction,
)
from funsor_core.algorithms.contract.replay import contract_planned_arrays
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.algebra import gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.fast_path import array_program
from funsor_core.engine.interpreter import Tuple
from funsor_core.terms.base import Funsor, Number, Subs
from funsor_core.terms.contraction import Contraction
from interpretations.exact import exact

DENSE = (Tensor, Number)
AddOp = type(ops.add)


# Contraction of Tensors and Numbers = one semiring einsum (or a fold and a reduction). A
# recorded plated elimination may make its kernel call directly (algorithms.contract.replay).
@exact.register(Contraction, object, object, frozenset, Tuple[DENSE, ...])
@array_program("contraction", contract_planned_arrays)
def exact_contraction_tensors(red_op, bin_op, reduced_vars, terms):
    return contract_dense(red_op, bin_op, reduced_vars, terms)


# Three or more Gaussians, Tensors and Numbers in (logaddexp, add): contract pairwise along a
# plan when that is estimated cheaper than adding them into one joint factor (registered
# before the Gaussian rules of the same pattern, so it is tried first).
@exact.register(Contraction, object, object, frozenset, Tuple[(Gaussian, Tensor, Number), ...])
def exact_contraction_planned(red_op, bin_op, reduced_vars, terms):
    return contract_planned(red_op, bin_op, reduced_vars, terms)


# A sum with Deltas: substitute their points into the other terms, merge Deltas on distinct
# names, and reduce a Delta's own names under logaddexp (integrating a point mass).
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_deltas(red_op, bin_op, reduced_vars, terms):
    if bin_op not in (ops.add, None) or not any(isinstance(t, Delta) for t in terms):
        return None
    return contract_deltas(red_op, reduced_vars, terms)


# sum_V (a + b + ...) = sum_V a + sum_V b + ... (a sum reduced by a sum splits over its terms);
# a dense term lacking some v in V is counted |v| times. Terms that are not dense must have
# every v in V (a point mass repeated over a plate is not a point mass scaled).
@exact.register(Contraction, AddOp, AddOp, frozenset, Tuple[Funsor, ...])
def exact_contraction_sum_of_sums(red_op, bin_op, reduced_vars, terms):
    return split_sum_reduction(reduced_vars, terms)


# A reduction of a product that does not distribute (sum of a scaled density): combine the
# terms first, then reduce the result. Declines when the product stays as it is.
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_product_first(red_op, bin_op, reduced_vars, terms):
    if (red_op is None or bin_op is None or len(terms) < 2 or red_op is bin_op
            or ((red_op, bin_op) in ops.DISTRIBUTIVE_OPS
                and (red_op, bin_op) not in ops.NONNEGATIVE_DISTRIBUTIVE_OPS)):
        return None
    product = Contraction(None, bin_op, frozenset(), terms)
    if isinstance(product, Contraction) and len(product.terms) == len(terms) and all(
            a is b for a, b in zip(product.terms, terms)):
        return None
    return product.reduce(red_op, reduced_vars)


# Mixed terms: contract the Tensor part alone over the variables only Tensors use (by
# distributivity of red_op over bin_op), or fold the Tensors together.
@exact.register(Contraction, object, object, frozenset, tuple)
def exact_contraction_partial(red_op, bin_op, reduced_vars, terms):
    return contract_partial(red_op, bin_op, reduced_vars, terms)


# Substituting into a Contraction that reduces nothing substitutes into each term (there is
# no binder to rename), and the results combine by bin_op again.
@exact.register(Subs, Contraction, tuple)
def exact_subs_contraction(arg, subs):
    if arg.reduced_vars or arg.bin_op is None or not all(type(t)._atom for t in arg.terms):
        return None
    parts = []
    for term in arg.terms:
        own = tuple(pair for pair in subs if pair[0] in term.inputs)
        parts.append(Subs(term, own) if own else term)
    if (arg.bin_op is ops.add and any(type(t) is Gaussian for t in parts)
            and all(isinstance(t, (Gaussian, Tensor, Number)) for t in parts)):
        return gaussian_sum(*parts)  # the sum's normal form at once (a renamed message)
    result = parts[0]
    for term in parts[1:]:
        result = arg.bin_op(result, term)
    return result
