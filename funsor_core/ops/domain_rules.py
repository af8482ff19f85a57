"""Output domains of the ops: one small rule per op (or op family), found by one dict lookup.

A rule ``rule(op, params, domains) -> Domain`` is registered with ``@domain_rule(*targets)``
on ops (each op is the only instance of its own class, so a rule on an op is a rule on its
class) or on op families (``UnaryOp``, ``BinaryOp``, ``ReductionOp``). An op's rule is the one
registered on the first class of its MRO that has one, resolved once per class and cached;
``infer_domain`` caches its answers by (op, argument domains).

Example:
    >>> from funsor_core.domains import Real, Reals
    >>> infer_domain(ops.sum.bind(axis=0), Reals[2, 3]), infer_domain(ops.lt, Real, Real)
    (Reals[3], Bint[2])
    >>> find_domain_rule(ops.matmul).__name__
    'domain_matmul'
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from funsor_core.domains import Domain, broadcast_shape, register_find_domain
from funsor_core.engine.cache import FastCache
from funsor_core.ops import builtin as ops
from funsor_core.ops.op import BinaryOp, Op, ReductionOp, UnaryOp, expand_shape

__all__ = ["infer_domain", "infer_domain_by_divisor", "domain_rule", "find_domain_rule",
           "DOMAIN_RULES"]

DomainRule = Callable[[Op, dict, tuple], Domain]

# Op class -> the rule registered on it (an op's own class, or a family class).
DOMAIN_RULES: dict[type, DomainRule] = {}
# Op class -> the rule of the first class of its MRO that has one (None: no rule): the MRO
# is walked once per class.
_RESOLVED_CACHE = FastCache("ops.domain_rule", 1024)
_RESOLVED = _RESOLVED_CACHE.data


def domain_rule(*targets: Op | type) -> Callable[[DomainRule], DomainRule]:
    """Register a domain rule for ops (instances) or op families (classes).

    Example:
        >>> from funsor_core.domains import Reals
        >>> halve = ops.make_op("doc_halve_shape", ops.UnaryOp)
        >>> @domain_rule(halve)
        ... def domain_doc_halve_shape(op, params, domains):
        ...     return Reals[domains[0].shape[0] // 2]
        >>> infer_domain(halve, Reals[4])
        Reals[2]
    """
    def register(rule: DomainRule) -> DomainRule:
        for target in targets:
            DOMAIN_RULES[target if isinstance(target, type) else type(target)] = rule
        # A new rule may shadow what an op class resolved to, and the domains it gave.
        _RESOLVED_CACHE.clear()
        _DOMAIN_CACHE.clear()
        return rule

    return register


def find_domain_rule(op: Op) -> DomainRule | None:
    """The domain rule of ``op``'s base op (None when none is registered).

    Example:
        >>> find_domain_rule(ops.add)(ops.add, {}, (fc.Reals[2], fc.Real))  # broadcast shapes
        Reals[2]
    """
    cls = type(op.base)
    rule = _RESOLVED.get(cls, _MISSING)
    if rule is _MISSING:
        rule = next((DOMAIN_RULES[c] for c in cls.__mro__ if c in DOMAIN_RULES), None)
        _RESOLVED_CACHE.put(cls, rule)
    return rule


_MISSING = object()


def infer_domain(op: Op, *domains: Domain) -> Domain:
    """The output domain of ``op`` applied to arguments of these domains.

    Raises ValueError with the op and the domains when the shapes do not fit.

    Example:
        >>> from funsor_core.domains import Reals, Real
        >>> infer_domain(ops.matmul, Reals[2, 3], Reals[3])
        Reals[2]
    """
    key = (op, domains)
    result = _DOMAINS.get(key)
    if result is None:
        base = op.base
        rule = find_domain_rule(base)
        if rule is None:
            raise ValueError(f"ops.{op.name} cannot combine outputs {domains}: no domain rule "
                             f"for ops.{base.name}")
        try:
            result = rule(base, dict(op.params), domains)
        except ValueError as e:
            raise ValueError(f"ops.{op.name} cannot combine outputs {domains}: {e}") from None
        _DOMAIN_CACHE.put(key, result)
    return result


register_find_domain(infer_domain)

# (op, argument domains) -> output domain. Bounded: bound ops with fresh parameters
# (``getitem`` at index k) and fresh Reals shapes make fresh keys.
_DOMAIN_CACHE = FastCache("ops.infer_domain", 4096)
_DOMAINS = _DOMAIN_CACHE.data  # read directly on the hot path


def infer_domain_by_divisor(op: Op, lhs: Domain, rhs: Domain, divisor) -> Domain:
    """``infer_domain`` when the right argument is the known integer ``divisor``: integer
    ``x // d`` and ``x % d`` then have exact bounds, so funsor's idiom of flattening and
    unflattening indices (``ij // Number(n, n + 1)``, ``ij % Number(n, n + 1)``) keeps each
    part in the domain of the index it replaces.

    Example:
        >>> from funsor_core.domains import Bint
        >>> infer_domain_by_divisor(ops.floordiv, Bint[12], Bint[5], 4)
        Bint[3]
        >>> infer_domain_by_divisor(ops.mod, Bint[12], Bint[5], 4)
        Bint[4]
    """
    out = infer_domain(op, lhs, rhs)
    base = op.base
    if (base is ops.floordiv or base is ops.mod) and isinstance(out.dtype, int) and divisor >= 1:
        a = lhs.dtype
        dtype = (a - 1) // divisor + 1 if base is ops.floordiv else min(a, divisor)
        return Domain(dtype, out.shape)
    return out


def _norm_axes(axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(a + ndim if a < 0 else a for a in axis)
    for a in axes:
        if not 0 <= a < ndim:
            raise ValueError(f"axis {a} out of range for {ndim} dims")
    return axes


# -- reductions: the kept dims; the dtype by op -----------------------------------------------
def _reduced_shape(params: dict, d: Domain) -> tuple[tuple, tuple]:
    axes = _norm_axes(params.get("axis"), len(d.shape))
    if params.get("keepdims", False):
        return axes, tuple(1 if i in axes else s for i, s in enumerate(d.shape))
    return axes, tuple(s for i, s in enumerate(d.shape) if i not in axes)


@domain_rule(ReductionOp)
def domain_reduction(op, params, domains):
    # A sum or product of n values of Bint[k] is below n (k - 1) + 1 or (k - 1)^n + 1, as
    # a Reduce over inputs (terms/inputs.py reduce_domain); a logsumexp of integers is real.
    (d,) = domains
    axes, shape = _reduced_shape(params, d)
    k = d.dtype
    if k == "real" or op.base not in _WIDENING:
        return Domain(k, shape)
    if op.base is ops.logsumexp:
        return Domain("real", shape)
    n = math.prod(d.shape[a] for a in axes)
    if n <= 1:
        return Domain(k, shape)
    return Domain(n * (k - 1) + 1 if op.base is ops.sum else (k - 1) ** n + 1, shape)


_WIDENING = frozenset([ops.sum, ops.prod, ops.logsumexp])


@domain_rule(ops.argmax, ops.argmin)
def domain_argmax(op, params, domains):
    (d,) = domains
    axes, shape = _reduced_shape(params, d)
    if len(axes) != 1:
        raise ValueError("argmax/ops.argmin need one axis")
    return Domain(d.shape[axes[0]], shape)


@domain_rule(ops.all, ops.any)
def domain_all(op, params, domains):
    (d,) = domains
    return Domain(2, _reduced_shape(params, d)[1])


@domain_rule(ops.mean, ops.std, ops.var)
def domain_mean(op, params, domains):
    (d,) = domains
    return Domain("real", _reduced_shape(params, d)[1])


# -- binary ops: broadcast shapes; integers keep an exact bound where one exists -------------
@domain_rule(BinaryOp)
def domain_binary(op, params, domains):
    a, b = domains
    shape = broadcast_shape(a.shape, b.shape)
    if a.dtype != "real" and b.dtype != "real":
        return Domain(_int_binary_dtype(op, a.dtype, b.dtype), shape)
    return Domain("real", shape)


@domain_rule(*ops.COMPARISON_OPS)
def domain_comparison(op, params, domains):
    a, b = domains
    return Domain(2, broadcast_shape(a.shape, b.shape))


def _int_binary_dtype(op: Op, a: int, b: int):
    # Integer arithmetic keeps an exact bound where one exists, else the result is real.
    if op is ops.add:
        return a + b - 1
    if op is ops.mul:
        return (a - 1) * (b - 1) + 1
    if op in (ops.max, ops.min, ops.and_):
        return max(a, b)
    if op in (ops.or_, ops.xor):
        # Bitwise or/ops.xor of values below n can set every bit below n's top bit: 1 | 2 = 3 is
        # not in Bint[3]; the bound is the next power of two (Bint[2] stays Bint[2]).
        return 1 << (max(a, b) - 1).bit_length()
    if op in (ops.floordiv, ops.rshift):
        return a  # x // y and x >> y never exceed x (numpy's x // 0 is 0)
    if op is ops.mod:
        # x % y <= min(x, y - 1) for y >= 1, and numpy's x % 0 is 0.
        return max(min(a, b - 1), 1)
    if op is ops.lshift:
        return ((a - 1) << max(b - 1, 0)) + 1 if a else a
    if op is ops.sub and a == b:
        # As funsor: Bint[n] - Bint[n] stays Bint[n] (the idiom ``Number(n - 1, n) - i``
        # reverses an index); a difference below 0 is out of range, and Number rejects it.
        return a
    return "real"


@domain_rule(ops.matmul)
def domain_matmul(op, params, domains):
    a, b = domains
    if len(a.shape) < 1 or len(b.shape) < 1:
        raise ValueError("matmul needs outputs of at least one dim")
    if a.shape[-1] != b.shape[-2 if len(b.shape) > 1 else -1]:
        raise ValueError(f"inner dims differ: {a.shape} @ {b.shape}")
    if len(b.shape) == 1:
        return Domain("real", a.shape[:-1])
    if len(a.shape) == 1:
        return Domain("real", b.shape[:-2] + b.shape[-1:])
    batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
    return Domain("real", batch + (a.shape[-2], b.shape[-1]))


@domain_rule(ops.triangular_solve, ops.cholesky_solve)
def domain_triangular_solve(op, params, domains):
    x, y = domains
    return Domain("real", broadcast_shape(x.shape[:-2], y.shape[:-2]) + x.shape[-2:])


# -- unary ops: elementwise keeps the domain; real-valued ones make integers real -------------
@domain_rule(UnaryOp)
def domain_unary(op, params, domains):
    (d,) = domains
    return d


@domain_rule(ops.neg, ops.exp, ops.log, ops.log1p, ops.expm1, ops.sqrt, ops.sigmoid, ops.tanh,
             ops.atanh, ops.reciprocal, ops.lgamma, ops.digamma, ops.i0e, ops.cos, ops.acos)
def domain_real_valued_unary(op, params, domains):
    (d,) = domains
    return Domain("real", d.shape) if d.dtype != "real" else d


@domain_rule(ops.isfinite)
def domain_isfinite(op, params, domains):
    return Domain(2, domains[0].shape)


@domain_rule(ops.astype)
def domain_astype(op, params, domains):
    dtype = params["dtype"]
    real = dtype in ("real", "float") or (dtype not in ("int", "bool") and _names_float(dtype))
    return Domain("real" if real else domains[0].dtype, domains[0].shape)


def _names_float(dtype) -> bool:
    # "float32", np.float64, torch.float16: a float dtype of any backend, by its name
    name = dtype if isinstance(dtype, str) else str(getattr(dtype, "name", dtype))
    return name.rsplit(".", 1)[-1].startswith(("float", "bfloat", "half", "double"))


@domain_rule(ops.full_like)
def domain_full_like(op, params, domains):
    (d,) = domains
    value = params.get("fill_value")
    if d.dtype != "real" and not (isinstance(value, (int, np.integer)) and 0 <= value < d.dtype):
        raise ValueError(f"cannot fill a Bint[{d.dtype}] output with {value!r}")
    return d


# -- unary ops on matrices and shapes ---------------------------------------------------------
@domain_rule(ops.det, ops.logdet)
def domain_det(op, params, domains):
    (d,) = domains
    return Domain("real", d.shape[:-2])


@domain_rule(ops.transpose)
def domain_transpose(op, params, domains):
    (d,) = domains
    shape = list(d.shape)
    i, j = _norm_axes((params.get("dim0", -2), params.get("dim1", -1)), len(shape))
    shape[i], shape[j] = shape[j], shape[i]
    return Domain(d.dtype, tuple(shape))


@domain_rule(ops.diagonal)
def domain_diagonal(op, params, domains):
    # numpy's: both dims removed, the ops.diagonal (of the shorter length) appended.
    (d,) = domains
    i, j = _norm_axes((params.get("dim1", -2), params.get("dim2", -1)), len(d.shape))
    if i == j:
        raise ValueError(f"diagonal needs two different dims, got {i} twice")
    rest = tuple(s for k, s in enumerate(d.shape) if k not in (i, j))
    return Domain(d.dtype, rest + (min(d.shape[i], d.shape[j]),))


@domain_rule(ops.diag_embed)
def domain_diag_embed(op, params, domains):
    (d,) = domains
    return Domain(d.dtype, d.shape + d.shape[-1:])


@domain_rule(ops.flip)
def domain_flip(op, params, domains):
    (d,) = domains
    _norm_axes(params.get("axis"), len(d.shape))  # checks the range
    return d


@domain_rule(ops.triangular_inv)
def domain_triangular_inv(op, params, domains):
    (d,) = domains
    if len(d.shape) < 2 or d.shape[-1] != d.shape[-2]:
        raise ValueError(f"triangular_inv needs square matrices, got shape {d.shape}")
    return Domain("real", d.shape)


@domain_rule(ops.permute)
def domain_permute(op, params, domains):
    (d,) = domains
    axes = _norm_axes(params["axes"], len(d.shape))
    if sorted(axes) != list(range(len(d.shape))):
        raise ValueError(f"axes {tuple(params['axes'])} are not a permutation of the "
                         f"{len(d.shape)} dims of shape {d.shape}")
    return Domain(d.dtype, tuple(d.shape[a] for a in axes))


@domain_rule(ops.expand)
def domain_expand(op, params, domains):
    (d,) = domains
    shape = expand_shape(d.shape, params["shape"])
    if broadcast_shape(d.shape, shape) != shape:
        raise ValueError(f"cannot ops.expand shape {d.shape} to {shape}")
    return Domain(d.dtype, shape)


@domain_rule(ops.reshape)
def domain_reshape(op, params, domains):
    (d,) = domains
    shape = tuple(params["shape"])
    if math.prod(shape) != d.num_elements:
        raise ValueError(f"cannot ops.reshape {d} to shape {shape}")
    return Domain(d.dtype, shape)
