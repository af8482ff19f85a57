"""The algebra of Contractions that the exact rules call: dense semiring contraction of
Tensors and Numbers, Deltas substituted into the other terms of a sum, partial evaluation of
the dense part of a mixed Contraction, and splitting a sum reduced by a sum.

Each function takes the fields of a ``Contraction`` and returns the rewritten funsor, or
``None`` when it changes nothing (so that a rule built on it declines).

Example:
    >>> a = fc.Tensor(np.ones((2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    >>> contract_dense(ops.add, ops.mul, frozenset({"j"}), (a, a)).data
    array([3., 3.])
"""

from __future__ import annotations

import math
from operator import attrgetter

from funsor_core import ops
from funsor_core.algorithms.contract.einsum import SEMIRINGS, contract_tensors
from funsor_core.algorithms.contract.plan import plan_terms, step_costs
from funsor_core.analysis.sign import distributes
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.contraction import Contraction

__all__ = ["is_dense", "fold", "contract_dense", "contract_deltas", "merge_deltas",
           "contract_partial", "split_sum_reduction", "contract_planned"]


def is_dense(t) -> bool:
    """Whether ``t`` is a Tensor or a Number.

    Example:
        >>> is_dense(fc.Number(1.0)), is_dense(fc.Variable("x", fc.Real))
        (True, False)
    """
    return isinstance(t, (Tensor, Number))


def fold(bin_op, terms):
    """``terms[0] . terms[1] . ...`` for the binary op ``.``, left to right.

    Example:
        >>> fold(ops.add, [fc.Number(1.0), fc.Number(2.0)]).data
        3.0
    """
    result = terms[0]
    for t in terms[1:]:
        result = bin_op(result, t)
    return result


def contract_dense(red_op, bin_op, reduced_vars, terms) -> Funsor:
    """Contract Tensors and Numbers: one planned semiring einsum where a kernel exists;
    otherwise, for three or more Tensors in a distributive semiring, pairwise Contractions
    along a plan (never the product of all of them at once); else a fold by ``bin_op`` and a
    reduction by ``red_op``.

    Example:
        >>> a = fc.Tensor(np.zeros(3), {"j": fc.Bint[3]})
        >>> round(contract_dense(ops.logaddexp, ops.add, frozenset({"j"}), (a,)).item(), 6)
        1.098612
    """
    if set(map(type, terms)) == {Tensor}:  # (C-level: 2,000 Tensors of a tree)
        tensors, numbers = list(terms), []
    else:
        tensors = [t for t in terms if isinstance(t, Tensor)]
        numbers = [t for t in terms if not isinstance(t, Tensor)]
    if tensors and numbers:
        tensors[0] = fold(bin_op, [tensors[0]] + numbers)
        numbers = []
    if not tensors:
        return fold(bin_op, numbers)
    if red_op is not None and reduced_vars and len(tensors) > 1:
        if (red_op, bin_op) in SEMIRINGS and all(
                not out.shape and out.dtype == _KERNEL_DTYPE.get(red_op, "real")
                for out in set(map(_OUTPUT, tensors))):
            return contract_tensors(red_op, bin_op, reduced_vars, tensors)
        if len(tensors) > 2 and distributes(red_op, bin_op, tensors):
            plan = plan_terms(tensors, reduced_vars)
            return plan.run_terms(red_op, bin_op, reduced_vars, tensors)
    if len(tensors) > 2:
        # Smallest operands first (stable): the broadcast to the largest shape happens once,
        # at the end, and a sum of per-step factors with a transition factor rounds as
        # funsor's does (NumPyro's scan against its unrolled model: (s1 + s2) + trans).
        tensors = sorted(tensors, key=lambda t: math.prod(t.data.shape))
    result = fold(bin_op, tensors)
    if red_op is not None and reduced_vars:
        result = result.reduce(red_op, reduced_vars)
    return result


_OUTPUT = attrgetter("output")

# The dtype of the Tensors each kernel semiring takes: the logical one takes Bint[2] values.
_KERNEL_DTYPE = {ops.or_: 2}


def contract_deltas(red_op, reduced_vars, terms) -> Funsor | None:
    """A sum with Deltas: substitute their points into the other terms, merge Deltas on
    distinct names, add Deltas sharing a name, and under ``logaddexp`` or ``max`` reduce a
    Delta's own names (integrating or maximizing a point mass keeps its log density).

    Example:
        >>> d = fc.Delta("x", fc.Number(2.0))
        >>> f = fc.Variable("x", fc.Real) * 3.0
        >>> contract_deltas(None, frozenset(), (d, f)).terms[1].data
        6.0
    """
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
        merged = merge_deltas(deltas)
        if merged is not None:
            deltas, changed = [merged], True
    # A point mass's own names reduce to its log density under logaddexp (its integral) and
    # under max (its largest value): the same number.
    if not changed and red_op in (ops.logaddexp, ops.max):
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


def merge_deltas(deltas) -> Delta | None:
    """One Delta for Deltas on distinct names whose points do not depend on each other.

    Example:
        >>> d = merge_deltas([fc.Delta("x", fc.Number(1.0)), fc.Delta("y", fc.Number(2.0))])
        >>> sorted(d.fresh)
        ['x', 'y']
    """
    names: set = set()
    inputs: set = set()
    for d in deltas:
        names |= d.fresh
        for _, (p, ld) in d.terms:
            inputs |= p.inputs.keys() | ld.inputs.keys()
    if names & inputs or sum(len(d.fresh) for d in deltas) != len(names):
        return None
    return Delta(tuple(t for d in deltas for t in d.terms))


def contract_partial(red_op, bin_op, reduced_vars, terms) -> Funsor | None:
    """Contract the dense terms of a mixed Contraction alone: over the names only they use
    (when ``red_op`` distributes over ``bin_op``), or fold them into one.

    Example:
        >>> a = fc.Tensor(np.ones(3), {"j": fc.Bint[3]})
        >>> x = fc.Variable("x", fc.Real)
        >>> r = contract_partial(ops.add, ops.mul, frozenset({"j"}), (x, a))
        >>> [t.data for t in r.terms if isinstance(t, fc.Tensor)]
        [array(3.)]
    """
    dense = [t for t in terms if is_dense(t)]
    if len(dense) == len(terms) or not dense:
        return None
    others = [t for t in terms if not is_dense(t)]
    used_elsewhere = set().union(*(t.inputs for t in others))
    local = frozenset(v for v in reduced_vars if v not in used_elsewhere)
    # The other terms are pulled out of the reduction over ``local``: (max, mul) needs them
    # nonnegative.
    distributive = red_op is not None and distributes(red_op, bin_op, others)
    if local and distributive:
        part = contract_dense(red_op, bin_op, local, dense)
        return Contraction(red_op, bin_op, reduced_vars - local, tuple(others) + (part,))
    if len(dense) > 1 and (not reduced_vars or distributive):
        part = contract_dense(None, bin_op, frozenset(), dense)
        return Contraction(red_op, bin_op, reduced_vars, tuple(others) + (part,))
    return None


def split_sum_reduction(reduced_vars: frozenset, terms: tuple) -> Funsor | None:
    """``sum_V (a + b + ...) = sum_V a + sum_V b + ...`` over Bint names ``V``: a sum reduced by
    a sum splits over its terms; a dense term lacking some ``v`` in ``V`` is counted ``|v|``
    times. None when a term that is not dense lacks a name of ``V`` (a point mass repeated
    over a plate is not a scaled point mass), a name is real, or all terms are dense.

    Example:
        >>> a = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
        >>> d = fc.Delta("x", fc.Tensor(np.array([0.0, 0.0]), {"i": fc.Bint[2]}))
        >>> split_sum_reduction(frozenset({"i"}), (d, a)).inputs
        {'x': Real}
    """
    if all(is_dense(t) for t in terms) or len(terms) < 2:
        return None
    domains: dict = {}
    for t in terms:
        domains.update(t.inputs)
    if any(domains[v].dtype == "real" for v in reduced_vars):
        return None
    parts = []
    for t in terms:
        missing = reduced_vars - t.inputs.keys()
        if missing and not is_dense(t):
            return None
        part = t.reduce(ops.add, reduced_vars & t.inputs.keys())
        count = 1
        for v in missing:
            count *= domains[v].size
        parts.append(part * float(count) if count != 1 else part)
    return fold(ops.add, parts)


def contract_planned(red_op, bin_op, reduced_vars, terms) -> Funsor | None:
    """A sum-product of three or more Gaussians, Tensors and Numbers along a pairwise plan,
    when the plan is estimated cheaper than one joint factor (``plan.step_costs``); else None.

    Only ``(logaddexp, add)``: integrating a real variable and summing a Bint one both
    distribute over adding log densities. A Bint variable of a Gaussian is reduced last (a
    mixture of Gaussians is no Gaussian; once the plan has integrated the Gaussian's reals it
    is a Tensor), so it stays a batch input of every step until then.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> terms = (g, t, t(i="j"), t(i="k"))
        >>> contract_planned(ops.logaddexp, ops.add, frozenset("xijk"), terms)  # small: None
    """
    if (red_op is not ops.logaddexp or bin_op is not ops.add or len(terms) < 3
            or not reduced_vars):
        return None
    mixture: set = set()
    for t in terms:
        if isinstance(t, Gaussian):
            mixture.update(n for n, d in t.inputs.items() if d.dtype != "real")
    mixture = frozenset(mixture) & reduced_vars
    planned_vars = reduced_vars - mixture
    if not planned_vars:
        return None
    plan = plan_terms(terms, planned_vars)
    joint, planned = step_costs(terms, plan)
    if planned >= joint:
        return None
    result = plan.run_terms(red_op, bin_op, planned_vars, terms)
    return result.reduce(red_op, mixture) if mixture else result
