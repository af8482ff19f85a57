"""Known signs of terms, for the laws that hold only over nonnegative factors.

``max`` and ``min`` distribute over ``mul`` only for nonnegative factors:
``max_j (a * t_j) = a * max_j t_j`` when ``a >= 0``, but ``= a * min_j t_j`` when ``a < 0``.
Rules that pull a factor out of such a reduction (or push the reduction into a factor) ask
``distributes`` first. The sign is decided structurally (``exp(...)``, ``abs(...)``, a Bint
value, sums and products of nonnegative terms) or, for a concrete array, by reading it; a
traced array (under ``jax.jit``) has no known sign, so the rule declines instead of assuming.

Example:
    >>> x = fc.Variable("x", fc.Real)
    >>> is_nonnegative(x), is_nonnegative(x.exp() * 2.0)
    (False, True)
    >>> distributes(ops.max, ops.mul, [x]), distributes(ops.max, ops.add, [x])
    (False, True)
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Align, Binary, Number, Reduce, Subs, Unary, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["is_nonnegative", "distributes", "check_distributes"]

# Unary ops whose values are >= 0 (or nan) whatever their argument.
_NONNEGATIVE_UNARY = frozenset(["exp", "abs", "sigmoid", "sqrt", "isfinite"])
# Unary ops that keep a nonnegative argument nonnegative (structural ops, reductions of the
# output by sum, prod, max, min, reciprocal, ...).
_KEEPS_SIGN = frozenset(["getitem", "reshape", "transpose", "permute", "expand", "flip",
                         "diagonal", "sum", "prod", "amax", "amin", "mean", "reciprocal",
                         "log1p", "expm1", "tanh", "atanh", "triu", "tril"])
# Associative ops that keep nonnegative arguments nonnegative.
_KEEPS_SIGN_BINARY = frozenset([ops.add, ops.mul, ops.max, ops.min, ops.truediv])
_MAX_DEPTH = 32  # deeper terms answer "unknown": a missed law is slow, never wrong


def is_nonnegative(term, _depth: int = 0) -> bool:
    """Whether every value of ``term`` is known to be ``>= 0`` (False means "not known").

    Example:
        >>> is_nonnegative(fc.Tensor(np.array([0.0, 2.0]))), is_nonnegative(fc.Number(-1.0))
        (True, False)
    """
    if _depth > _MAX_DEPTH:
        return False
    if term.dtype != "real":
        return True  # a Bint value is one of 0 .. n-1
    cls = type(term)
    if cls is Number:
        return term.data >= 0
    if cls is Tensor:
        data = term.data
        return ops.known_true(data, lambda a: ops.all(ops.ge(a, 0)))
    if cls is Variable:
        return False
    depth = _depth + 1
    if cls is Unary:
        name = term.op.name
        if name in _NONNEGATIVE_UNARY:
            return True
        if name == "clamp":  # clamp(x, min, max) is >= min, and >= 0 for x >= 0 if max is
            low, high = term.op.kwargs.get("min"), term.op.kwargs.get("max")
            return (low is not None and low >= 0) or (
                (high is None or high >= 0) and is_nonnegative(term.arg, depth))
        return name in _KEEPS_SIGN and is_nonnegative(term.arg, depth)
    if cls is Binary:
        op = term.op.base
        if op is ops.max:  # max(a, b) >= a
            return is_nonnegative(term.lhs, depth) or is_nonnegative(term.rhs, depth)
        if op is ops.pow:  # a ** b >= 0 for a >= 0
            return is_nonnegative(term.lhs, depth)
        return (op in _KEEPS_SIGN_BINARY and is_nonnegative(term.lhs, depth)
                and is_nonnegative(term.rhs, depth))
    if cls is Contraction:
        return (term.red_op in (None, ops.add, ops.mul, ops.max, ops.min)
                and term.bin_op in (None, ops.add, ops.mul, ops.max, ops.min)
                and all(is_nonnegative(t, depth) for t in term.terms))
    if cls is Reduce:
        return term.op in (ops.add, ops.mul, ops.max, ops.min) and is_nonnegative(term.arg,
                                                                                depth)
    if cls is Subs or cls is Align:  # substituted values come from the same range
        return is_nonnegative(term.arg, depth)
    return False


def distributes(red_op, bin_op, factors) -> bool:
    """Whether ``red_op`` distributes over ``bin_op`` with ``factors`` pulled out of the
    reduction: ``(red_op, bin_op)`` is in ``ops.DISTRIBUTIVE_OPS``, and for the pairs of
    ``ops.NONNEGATIVE_DISTRIBUTIVE_OPS`` (``(max, mul)``, ``(min, mul)``) every factor is known
    to be nonnegative.

    Example:
        >>> t = fc.Tensor(np.array([-1.0, 2.0]), {"i": fc.Bint[2]})
        >>> distributes(ops.max, ops.mul, [t]), distributes(ops.max, ops.mul, [t.exp()])
        (False, True)
    """
    pair = (red_op, bin_op)
    if pair not in ops.DISTRIBUTIVE_OPS:
        return False
    if pair in ops.NONNEGATIVE_DISTRIBUTIVE_OPS:
        return all(is_nonnegative(f) for f in factors)
    return True


_SIGN_UNKNOWN = (
    "{what} with (ops.{sum_op}, ops.{prod_op}) needs nonnegative factors: max_j (a * t_j) is "
    "a * max_j t_j only for a >= 0, and the elimination order relies on it. A factor here "
    "may be negative (or its sign is unknown, e.g. a traced array under jax.jit). Work in log "
    "space instead, (ops.{sum_op}, ops.add) on logarithms, or make the factors' sign "
    "structural (e.g. exp(...); under jax.jit an evaluated t.exp() is a Tensor of traced "
    "data, whose sign is unknown: build it lazily, `with lazy: f = t.exp()`)."
)


def check_distributes(sum_op, prod_op, factors, what: str) -> None:
    """Raise ValueError unless ``sum_op`` distributes over ``prod_op`` for ``factors``, where
    the pair is a semiring only over nonnegative values (``(max, mul)``, ``(min, mul)``):
    for an algorithm (a scan, plated elimination) that has no exact alternative.

    Example:
        >>> t = fc.Tensor(np.array([-1.0, 2.0]), {"i": fc.Bint[2]})
        >>> check_distributes(ops.max, ops.mul, [t.exp()], "a scan")  # fine: no error
        >>> check_distributes(ops.max, ops.mul, [t], "a scan")
        Traceback (most recent call last):
        ...
        ValueError: a scan with (ops.max, ops.mul) needs nonnegative factors: ...
    """
    if (sum_op, prod_op) in ops.NONNEGATIVE_DISTRIBUTIVE_OPS and not distributes(
            sum_op, prod_op, factors):
        raise ValueError(_SIGN_UNKNOWN.format(what=what, sum_op=sum_op.name,
                                              prod_op=prod_op.name))
