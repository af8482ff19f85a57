"""Exact rules for Contraction: semiring einsums of Tensors, Deltas substituted into the other
terms, and partial evaluation of the Tensor part of a mixed Contraction.

Rules match on the terms' types (``Tuple[...]`` patterns); the Gaussian rules for
Contractions live with the other Gaussian rules. The op positions stay ``object`` and rules
test the ops inside: a pattern specific in an op and general in the terms would be
incomparable with the dense rule, which must be tried first.
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.contraction import Contraction
from funsor_core.delta import Delta
from funsor_core.einsum import SEMIRINGS, contract_tensors
from funsor_core.interpreter import Tuple
from funsor_core.tensor import Tensor
from funsor_core.terms import Funsor, Number, Subs
from interpretations.exact import exact

DENSE = (Tensor, Number)
AddOp = type(ops.add)


def _is_dense(t) -> bool:
    return isinstance(t, (Tensor, Number))


def _fold(bin_op, terms):
    result = terms[0]
    for t in terms[1:]:
        result = bin_op(result, t)
    return result


def _contract_dense(red_op, bin_op, reduced_vars, terms):
    """Contract Tensors and Numbers: one planned semiring einsum where a kernel exists."""
    tensors = [t for t in terms if isinstance(t, Tensor)]
    numbers = [t for t in terms if not isinstance(t, Tensor)]
    if tensors and numbers:
        tensors[0] = _fold(bin_op, [tensors[0]] + numbers)
        numbers = []
    if not tensors:
        return _fold(bin_op, numbers)
    if (red_op is not None and reduced_vars and len(tensors) > 1
            and (red_op, bin_op) in SEMIRINGS
            and all(t.dtype == "real" and not t.shape for t in tensors)):
        return contract_tensors(red_op, bin_op, reduced_vars, tensors)
    result = _fold(bin_op, tensors)
    if red_op is not None and reduced_vars:
        result = result.reduce(red_op, reduced_vars)
    return result


# Contraction of Tensors and Numbers = one semiring einsum (or a fold and a reduction).
@exact.register(Contraction, object, object, frozenset, Tuple[DENSE, ...])
def exact_contraction_tensors(red_op, bin_op, reduced_vars, terms):
    return _contract_dense(red_op, bin_op, reduced_vars, terms)


# A sum with Deltas: substitute their points into the other terms, merge Deltas on distinct
# names, and reduce a Delta's own names under logaddexp (integrating a point mass).
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_deltas(red_op, bin_op, reduced_vars, terms):
    if bin_op not in (ops.add, None) or not any(isinstance(t, Delta) for t in terms):
        return None
    return _contract_deltas(red_op, reduced_vars, terms)


# sum_V (a + b + ...) = sum_V a + sum_V b + ... (a sum reduced by a sum splits over its terms);
# a dense term lacking some v in V is counted |v| times. Terms that are not dense must have
# every v in V (a point mass repeated over a plate is not a point mass scaled).
@exact.register(Contraction, AddOp, AddOp, frozenset, Tuple[Funsor, ...])
def exact_contraction_sum_of_sums(red_op, bin_op, reduced_vars, terms):
    if all(_is_dense(t) for t in terms) or len(terms) < 2:
        return None
    domains = {}
    for t in terms:
        domains.update(t.inputs)
    if any(domains[v].dtype == "real" for v in reduced_vars):
        return None
    parts = []
    for t in terms:
        missing = reduced_vars - t.inputs.keys()
        if missing and not _is_dense(t):
            return None
        part = t.reduce(ops.add, reduced_vars & t.inputs.keys())
        count = 1
        for v in missing:
            count *= domains[v].size
        parts.append(part * float(count) if count != 1 else part)
    return _fold(ops.add, parts)


# A reduction of a product that does not distribute (sum of a scaled density): combine the
# terms first, then reduce the result. Declines when the product stays as it is.
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_product_first(red_op, bin_op, reduced_vars, terms):
    if (red_op is None or bin_op is None or len(terms) < 2
            or (red_op, bin_op) in ops.DISTRIBUTIVE_OPS or red_op is bin_op):
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
    return _contract_partial(red_op, bin_op, reduced_vars, terms)


def _contract_deltas(red_op, reduced_vars, terms):
    deltas = [t for t in terms if isinstance(t, Delta)]
    others = [t for t in terms if not isinstance(t, Delta)]
    if sum(len(d.fresh) for d in deltas) != len(frozenset().union(*(d.fresh for d in deltas))):
        # Two Deltas on one name: dirac(x - p) dirac(x - q) = dirac(x - p) 1(p == q). Adding
        # them substitutes p into the second (its log indicator), before any reduction of x.
        combined = deltas[0]
        for d in deltas[1:]:
            combined = combined + d
        return Contraction(red_op if reduced_vars else None, ops.add, reduced_vars,
                           (combined,) + tuple(others))
    points = {name: point for d in deltas for name, (point, _) in d.terms}
    changed = False
    new_others = []
    for t in others:
        subs = {k: v for k, v in points.items() if k in t.inputs}
        new = t(**subs) if subs else t
        changed |= new is not t
        new_others.append(new)
    if len(deltas) > 1:
        merged = _merge_deltas(deltas)
        if merged is not None:
            deltas, changed = [merged], True
    if not changed and red_op is ops.logaddexp:
        for i, d in enumerate(deltas):
            names = reduced_vars & d.fresh
            if names:
                deltas[i] = d.reduce(ops.logaddexp, names)
                reduced_vars = reduced_vars - names
                changed = True
    if not changed:
        return None
    return Contraction(red_op if reduced_vars else None, ops.add, reduced_vars,
                       tuple(deltas) + tuple(new_others))


def _merge_deltas(deltas):
    names: set = set()
    inputs: set = set()
    for d in deltas:
        names |= d.fresh
        for _, (p, ld) in d.terms:
            inputs |= p.inputs.keys() | ld.inputs.keys()
    if names & inputs or sum(len(d.fresh) for d in deltas) != len(names):
        return None
    return Delta(tuple(t for d in deltas for t in d.terms))


def _contract_partial(red_op, bin_op, reduced_vars, terms):
    dense = [t for t in terms if _is_dense(t)]
    if len(dense) == len(terms) or not dense:
        return None
    others = [t for t in terms if not _is_dense(t)]
    used_elsewhere = set().union(*(t.inputs for t in others))
    local = frozenset(v for v in reduced_vars if v not in used_elsewhere)
    distributive = red_op is not None and (red_op, bin_op) in ops.DISTRIBUTIVE_OPS
    if local and distributive:
        part = _contract_dense(red_op, bin_op, local, dense)
        return Contraction(red_op, bin_op, reduced_vars - local, tuple(others) + (part,))
    if len(dense) > 1 and (not reduced_vars or distributive):
        part = _contract_dense(None, bin_op, frozenset(), dense)
        return Contraction(red_op, bin_op, reduced_vars, tuple(others) + (part,))
    return None


# Substituting into a Contraction that reduces nothing substitutes into each term (there is
# no binder to rename), and the results combine by bin_op again.
@exact.register(Subs, Contraction, tuple)
def exact_subs_contraction(arg, subs):
    if arg.reduced_vars or arg.bin_op is None or not all(type(t)._atom for t in arg.terms):
        return None
    result = None
    for term in arg.terms:
        own = tuple(pair for pair in subs if pair[0] in term.inputs)
        term = Subs(term, own) if own else term
        result = term if result is None else arg.bin_op(result, term)
    return result
