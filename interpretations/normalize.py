"""``normalize``: rewrite sums and products toward the sum-product normal form.

Associative binary ops become ``Contraction(None, op, {}, terms)`` (nested ones flattened),
reductions become ``Contraction(red_op, ...)``, merging with the Contraction they reduce.
``exact`` falls back to these rules, so a term no exact rule evaluates is kept in normal form.

Example:
    >>> from interpretations import normalize
    >>> normalize.name
    'normalize'
    >>> x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    >>> with normalize:
    ...     z = (x * y).reduce(ops.add, "x")
    >>> type(z).__name__, z.red_op, z.bin_op, sorted(z.reduced_vars)
    ('Contraction', ops.add, ops.mul, ['x'])
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.analysis.sign import distributes
from funsor_core.engine.interpreter import Interpretation
from funsor_core.ops import BinaryOp, Op
from funsor_core.terms.base import Binary, Funsor, Number, Reduce
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import alpha_rename, bound_name
from interpretations.lazy import lazy

__all__ = ["normalize", "NORMALIZE"]

normalize = Interpretation("normalize", base=lazy, doc=__doc__)
NORMALIZE = normalize


def _flat_terms(op, x) -> tuple:
    if isinstance(x, Contraction) and x.red_op is None and x.bin_op is op:
        return x.terms
    return (x,)


# a . b = Contraction(None, ., {}, (a, b)) for an associative op, flattening nested products.
@normalize.register(Binary, BinaryOp, Funsor, Funsor)
def normalize_binary_funsor_funsor(op, lhs, rhs):
    if op not in ops.ASSOCIATIVE_OPS or op.params:
        return None
    return Contraction(None, op, frozenset(), _flat_terms(op, lhs) + _flat_terms(op, rhs))


# Reduce(r, Contraction(None or r, ., V, ts), W) = Contraction(r, ., V | W, ts);
# any other reduction is a Contraction of one term.
@normalize.register(Reduce, Op, Funsor, frozenset)
def normalize_reduce_funsor(op, arg, reduced_vars):
    if not reduced_vars:
        return arg
    if isinstance(arg, Contraction) and (arg.red_op is None or arg.red_op is op):
        return Contraction(op, arg.bin_op, arg.reduced_vars | reduced_vars, arg.terms)
    return Contraction(op, None, reduced_vars, (arg,))


# Unit laws: a Contraction of one term reducing nothing is that term; a reduction over no
# variables is none; units of bin_op drop out; nested products of the same op flatten.
@normalize.register(Contraction, object, object, frozenset, tuple)
def normalize_contraction(red_op, bin_op, reduced_vars, terms):
    if red_op is not None and not reduced_vars:
        return Contraction(None, bin_op, reduced_vars, terms)
    if red_op is None and len(terms) == 1:
        return terms[0]
    if bin_op is None:
        inner = terms[0]
        # A reduction of a Contraction that reduces nothing, or reduces with the same op,
        # is one Contraction: its bound names are not free outside, so the sets are disjoint.
        if isinstance(inner, Contraction) and inner.red_op in (None, red_op):
            return Contraction(red_op, inner.bin_op, reduced_vars | inner.reduced_vars,
                               inner.terms)
        return None
    if len(terms) > 8 and not any(k is Number or issubclass(k, Contraction)
                                  for k in set(map(type, terms))):
        return None  # nothing nested to pull out or flatten, no unit (one C-level pass)
    if red_op is not None and (red_op, bin_op) in ops.DISTRIBUTIVE_OPS:
        pulled = _pull_out_reduction(red_op, bin_op, reduced_vars, terms)
        if pulled is not None:
            return pulled
    # Flatten into one list (a tuple grown by += would copy it per term: quadratic), and
    # return early when nothing is nested and no unit drops out, the common case of a sum
    # built one term at a time: no new tuple, no re-sort, no output re-inference.
    unit = ops.UNITS.get(bin_op)
    if not any((isinstance(t, Contraction) and t.red_op is None and t.bin_op is bin_op)
               or (type(t) is Number and t.data == unit) for t in terms):
        return None
    flat: list = []
    for t in terms:
        flat.extend(_flat_terms(bin_op, t))
    kept = tuple(t for t in flat if not (type(t) is Number and t.data == unit))
    if not kept or (len(kept) != len(flat)
                    and _output(bin_op, kept) is not _output(bin_op, flat)):
        kept = tuple(flat)
    if len(kept) != len(terms) or any(a is not b for a, b in zip(kept, terms)):
        if len(kept) == 1 and red_op is not None:
            return Contraction(red_op, None, reduced_vars, kept)
        return Contraction(red_op, bin_op, reduced_vars, kept)
    return None


def _pull_out_reduction(red_op, bin_op, reduced_vars, terms):
    # sum_V (a * sum_W c) = sum_{V, W} (a * c) when * distributes over sum: a term that is
    # itself a reduction with red_op joins the outer one. Its bound names are renamed first
    # where they clash with names of the other terms (a free 'i' next to a summed 'i').
    for k, t in enumerate(terms):
        if not (isinstance(t, Contraction) and t.red_op is red_op
                and t.bin_op in (None, bin_op)):
            continue
        others = terms[:k] + terms[k + 1:]
        if not distributes(red_op, bin_op, others):  # (max, mul) over a factor < 0 or unknown
            continue
        avoid = set(reduced_vars).union(*(o.inputs for o in others))
        clash = t.reduced_vars & avoid
        if clash:
            t = alpha_rename(t, {n: bound_name(n) for n in sorted(clash)})
            if not isinstance(t, Contraction):
                return None
        return Contraction(red_op, bin_op, reduced_vars | t.reduced_vars, others + t.terms)
    return None


def _output(bin_op, terms):
    out = terms[0].output
    for t in terms[1:]:
        out = ops.infer_domain(bin_op, out, t.output)
    return out
