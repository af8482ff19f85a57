"""Lowering one binary contraction to one batched matmul (Darwiche 2020, section 4).

The names of the two operands and of the result split into four groups: ``C`` (in both and
kept), ``X`` (left and kept), ``Y`` (right and kept) and ``S`` (in both, summed). With each
group flattened into one axis, ``f(C, X, Y) = sum_S f1(C, X, S) f2(C, S, Y)`` is a batched
matrix product of a ``(C, X, S)`` and a ``(C, S, Y)`` array: one permute and one reshape per
operand, one matmul, one reshape of the result, and no intermediate larger than
``|C||X||Y|`` (or the operands). Names in one operand only that the result drops are summed
first. In log space (``logaddexp``, ``add``) each operand is shifted by its maximum over
``S`` before ``exp``, so the matmul runs in linear space without overflow:
``log(exp(a - ma) @ exp(b - mb)) + ma + mb``.

Example:
    >>> spec = pair_spec(("i", "s"), ("s", "j"), ("i", "j"), {"i": 2, "s": 3, "j": 4})
    >>> run_pair(spec, np.ones((2, 3)), np.ones((3, 4)), log=False).shape
    (2, 4)
"""

from __future__ import annotations

import math
from typing import NamedTuple

from funsor_core import ops

__all__ = ["PairSpec", "pair_spec", "run_pair", "reduce_spec", "run_reduce", "SEMIRINGS"]

# The semirings a binary contraction lowers to a matmul in: (sum_op, prod_op) -> log space?
SEMIRINGS = {(ops.add, ops.mul): False, (ops.logaddexp, ops.add): True}

# A finite floor for a shift: an operand that is -inf over all of S keeps -inf in the result.
_FLOOR = -1e30


class PairSpec(NamedTuple):
    """The array calls of one binary contraction, worked out once from the names: ``C`` the
    names both operands share and the result keeps, ``X`` and ``Y`` those kept from one
    operand only, ``S`` those shared and summed by the matmul.

    Example:
        >>> spec = pair_spec(("c", "x", "s"), ("s", "c"), ("c", "x"), {"c": 2, "x": 3, "s": 4})
        >>> spec.perm_b, spec.shape_a, spec.shape_b, spec.equation
        ((1, 0), (2, 3, 4), (2, 4, 1), 'abc,ca->ab')
    """

    a_sum: tuple  # axes of the left operand summed before the matmul
    b_sum: tuple
    perm_a: tuple | None  # to (C, X, S); None when already in order
    perm_b: tuple | None  # to (C, S, Y)
    shape_a: tuple  # (|C|, |X|, |S|)
    shape_b: tuple  # (|C|, |S|, |Y|)
    out_shape: tuple  # the sizes of C + X + Y, one per name
    out_names: tuple  # C + X + Y
    flops: int
    equation: str | None = None  # the same contraction as one einsum (None: over 52 names)


def _perm(names, target: tuple) -> tuple | None:
    if tuple(names) == target:
        return None
    return tuple([names.index(n) for n in target])


def pair_spec(a_names: tuple, b_names: tuple, out_names, sizes: dict) -> PairSpec:
    """Plan ``sum_{not out} a * b`` as one batched matmul; ``out_names`` must be a subset of
    the operands' names (the result comes in the order ``C + X + Y``).

    Example:
        >>> pair_spec(("c", "x", "s"), ("s", "c"), ("c", "x"), {"c": 2, "x": 3, "s": 4}).out_names
        ('c', 'x')
    """
    out, a_set, b_set = set(out_names), set(a_names), set(b_names)
    if not out <= a_set | b_set:
        raise ValueError(f"pair_spec: kept names {sorted(out - a_set - b_set)} are in "
                         f"neither operand {a_names} nor {b_names}")
    # One pass per operand sorts its names into C, X, S (left) or Y (right), or summed first.
    c, x, s, y, a_keep, a_sum, b_keep, b_sum = [], [], [], [], [], [], [], []
    for i, n in enumerate(a_names):
        if n in b_set:
            a_keep.append(n)
            (c if n in out else s).append(n)
        elif n in out:
            a_keep.append(n)
            x.append(n)
        else:
            a_sum.append(i)
    for i, n in enumerate(b_names):
        if n in a_set:
            b_keep.append(n)
        elif n in out:
            b_keep.append(n)
            y.append(n)
        else:
            b_sum.append(i)
    c, x, s, y = tuple(c), tuple(x), tuple(s), tuple(y)
    nc, nx, ns, ny = (math.prod([sizes[n] for n in g]) for g in (c, x, s, y))
    cxy = c + x + y
    return PairSpec(tuple(a_sum), tuple(b_sum), _perm(a_keep, c + x + s),
                    _perm(b_keep, c + s + y), (nc, nx, ns), (nc, ns, ny),
                    tuple([sizes[n] for n in cxy]), cxy, nc * nx * ns * ny,
                    _equation(a_names, b_names, cxy))


def _equation(a_names: tuple, b_names: tuple, out_names: tuple) -> str | None:
    letters = {n: None for n in a_names + b_names}
    if len(letters) > len(_LETTERS):
        return None
    letters = dict(zip(letters, _LETTERS))
    return (f"{''.join(map(letters.get, a_names))},{''.join(map(letters.get, b_names))}"
            f"->{''.join(map(letters.get, out_names))}")


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sum(x, axes, log: bool):
    if not axes:
        return x
    return ops.logsumexp(x, axes) if log else ops.sum(x, axes)


def _shift(x, axis):
    m = ops.amax(ops.detach(x), axis, keepdims=True)
    return ops.clamp(m, min=_FLOOR)


def _log(x):
    # log without a warning (or a nan derivative) where a sum is exactly 0: -inf there.
    alive = x > 0
    return ops.where(alive, ops.log(ops.where(alive, x, ops.full_like(x, 1.0))),
                     ops.full_like(x, -math.inf))


def run_pair(spec: PairSpec, a, b, log: bool):
    """Run one binary contraction planned by ``pair_spec`` on arrays (any backend).

    Example:
        >>> spec = pair_spec(("s",), ("s",), (), {"s": 3})
        >>> float(run_pair(spec, np.zeros(3), np.zeros(3), log=True))
        1.0986122886681098
    """
    if not log and spec.equation is not None and not ops.is_concrete(a):
        # Traced (under jax.jit): one einsum, whose dot the compiler lays out itself; the
        # explicit permutes below cost copies there (benchmarks/compiled.py, "under jax.jit").
        return ops.einsum(spec.equation, a, b)
    a = _sum(a, spec.a_sum, log)
    b = _sum(b, spec.b_sum, log)
    if spec.perm_a is not None:
        a = ops.permute(a, spec.perm_a)
    if spec.perm_b is not None:
        b = ops.permute(b, spec.perm_b)
    a = ops.reshape(a, spec.shape_a)
    b = ops.reshape(b, spec.shape_b)
    if log:
        ma, mb = _shift(a, -1), _shift(b, -2)
        out = _log(ops.matmul(ops.exp(a - ma), ops.exp(b - mb))) + ma + mb
    else:
        out = ops.matmul(a, b)
    return ops.reshape(out, spec.out_shape)


def reduce_spec(names: tuple, keep) -> tuple:
    """The axes of ``names`` not in ``keep``, and the names left (in their order).

    Example:
        >>> reduce_spec(("i", "j", "k"), {"j"})
        ((0, 2), ('j',))
    """
    keep = frozenset(keep)
    return (tuple(i for i, n in enumerate(names) if n not in keep),
            tuple(n for n in names if n in keep))


def run_reduce(axes: tuple, x, log: bool):
    """Sum (or log-sum-exp, ``log=True``) ``x`` over ``axes``.

    Example:
        >>> x = np.arange(6.0).reshape(2, 3)
        >>> run_reduce((0,), x, log=False), run_reduce((1,), np.zeros((2, 3)), log=True)
        (array([3., 5., 7.]), array([1.09861229, 1.09861229]))
    """
    return _sum(x, axes, log)
