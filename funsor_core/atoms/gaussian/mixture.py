"""Gaussians indexed by a new Bint input, and reductions of a log-sum of Gaussian terms.

``stack_gaussians`` evaluates ``Stack(i, (g_0, g_1, ...))`` of Gaussians (or Gaussian plus
Tensor sums) to one Gaussian batched over ``i``, so that reducing it over its real inputs and
``i`` is the exact mixture integral. ``reduce_logaddexp_terms`` evaluates
``Contraction(logaddexp, logaddexp, V, terms)`` (what normalizing a reduction of such a Stack
gives): ``log ∫ (e^{g_1} + e^{g_2}) = logaddexp(log ∫ e^{g_1}, log ∫ e^{g_2})``.

Example:
    >>> g1 = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> g2 = fc.Gaussian(mean=np.ones(1), covariance=4 * np.eye(1), inputs={"x": fc.Real})
    >>> s = stack_gaussians("i", (g1, g2))
    >>> s.inputs
    {'i': Bint[2], 'x': Real}
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import dense_sum, gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import (
    Gaussian,
    align_gaussian,
    gaussian_batch_inputs,
    merge_gaussian_inputs,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.reshaping import Stack

__all__ = ["reduce_logaddexp_terms", "stack_gaussians"]


def stack_gaussians(name: str, parts) -> Funsor | None:
    """``Stack(name, parts)`` for parts that are each one Gaussian (plus Tensors or Numbers):
    one Gaussian over ``name`` and the union of the parts' inputs (a part lacking a real input
    has no information on it: zero rows), plus the Stack of the dense parts. Ranks differ by
    zero columns, which add nothing. None for any other part.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> stack_gaussians("i", (g, g * 4.0)).precision[:, 0, 0]
        array([1., 4.])
    """
    gaussians, denses = [], []
    for part in parts:
        if not isinstance(part, Funsor):
            return None
        try:
            more_g, more_d = split_gaussian_sum(part)
        except AssertionError:  # a term that is neither a Gaussian nor a Tensor
            return None
        if len(more_g) != 1:
            return None
        gaussians.append(more_g[0])
        denses.append(dense_sum(more_d))
    inputs = merge_gaussian_inputs(*gaussians)
    batch = gaussian_batch_inputs(inputs)
    rank = max(g.rank for g in gaussians)
    whites, roots = [], []
    for g in gaussians:
        white_vec, prec_sqrt = align_gaussian(inputs, g, expand=True)
        if g.rank < rank:  # zero columns: -0.5 * ||x @ 0 - 0||^2 = 0
            pad = tuple(white_vec.shape[:-1]) + (rank - g.rank,)
            white_vec = ops.cat([white_vec, ops.new_zeros(white_vec, pad)], -1)
            prec_sqrt = ops.cat([prec_sqrt, ops.new_zeros(prec_sqrt, tuple(
                prec_sqrt.shape[:-1]) + (rank - g.rank,))], -1)
        whites.append(white_vec)
        roots.append(prec_sqrt)
    new_inputs = {name: Bint[len(parts)], **batch,
                  **{k: d for k, d in inputs.items() if d.dtype == "real"}}
    stacked = Gaussian(ops.stack(whites, 0), ops.stack(roots, 0), tuple(new_inputs.items()))
    if all(d is None for d in denses):
        return stacked
    proto = whites[0]  # Numbers become arrays, so that the Stack is a Tensor
    dense = Stack(name, tuple(
        Tensor.make(ops.new_full(proto, (), 0.0 if d is None else float(d.data)), {})
        if d is None or isinstance(d, Number) else d for d in denses))
    return gaussian_sum(stacked, dense) if isinstance(dense, Tensor) else None


def reduce_logaddexp_terms(reduced_vars: frozenset, terms) -> Funsor | None:
    """``Contraction(logaddexp, logaddexp, reduced_vars, terms)``: the terms are added in
    probability space, so the reduction distributes over them. A term lacking a Bint input of
    size ``n`` counts ``n`` times (``+ log n``); a term lacking a real one would integrate a
    constant over the real line (infinite, or the rule of the atom decides): None.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> r = reduce_logaddexp_terms(frozenset("x"), (g, g))  # log(2 sqrt(2 pi))
        >>> bool(np.isclose(r.data, np.log(2 * np.sqrt(2 * np.pi))))
        True
    """
    domains: dict = {}
    for t in terms:
        domains.update((k, d) for k, d in t.inputs.items() if k in reduced_vars)
    parts = []
    for t in terms:
        own = reduced_vars & t.inputs.keys()
        missing = reduced_vars - own
        if any(domains[v].dtype == "real" for v in missing):
            return None
        part = t.reduce(ops.logaddexp, own) if own else t
        count = math.prod(domains[v].size for v in missing)
        parts.append(part + math.log(count) if count != 1 else part)
    result = parts[0]
    for part in parts[1:]:
        result = ops.logaddexp(result, part)
    return result
