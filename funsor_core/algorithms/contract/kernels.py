"""Pairwise semiring contraction of arrays: the kernels a contraction plan executes.

Dims are named by one-character symbols (``opt_einsum.get_symbol``); a kernel re-letters its
own step with ``a-zA-Z`` for the backend's einsum. Everything uses ``funsor_core.ops`` only,
so it runs on numpy, torch and jax arrays (under ``jax.jit`` and torch autograd too):

* sum-product ``(add, mul)``: one ``ops.einsum`` per step;
* max-plus and min-plus: broadcast ``add``, then ``ops.amax`` / ``ops.amin`` (exact);
* log-space ``(logaddexp, add)``: ``log sum_s exp(x + y)``, computed so that it never
  underflows where the true value is finite. Shifting each operand by its own maximum and
  multiplying (``exp``, einsum, ``log``) is fast but loses the result when the operands peak at
  different ``s``: ``[0, -1000] . [-1000, 0]`` underflows to ``-inf`` (truth ``-999.31``). So a
  step whose broadcast is small (the usual case: vector-matrix steps of a filter) is computed
  exactly as a broadcast ``logsumexp``; a large one (a matrix-matrix product) first takes the
  fast route with a per-summed-index balancing shift, then checks every entry: a sum of
  shifted products below ``tiny / eps`` of its dtype may have lost digits, and such a step is
  recomputed exactly by broadcasting, in chunks of bounded memory. Under ``jax.jit`` the sums
  cannot be checked, so a large step is computed exactly there as well (XLA fuses the
  broadcast into the reduction).

Example:
    >>> x, y = np.array([0.0, -1000.0]), np.array([-1000.0, 0.0])
    >>> round(float(pair(ops.logaddexp, ops.add, x, "a", y, "a", "")), 4)
    -999.3069
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.engine.backend import backend_of

__all__ = ["SEMIRINGS", "pair", "reduce_dims", "log_sum", "align_dims", "ascii_equation",
           "linear_pair", "BROADCAST_LIMIT", "log_pair_spec", "log_pair_run"]

# The semirings with a kernel: (sum_op, prod_op). Each has its unit (``ops.UNITS``) and
# distributes (``ops.DISTRIBUTIVE_OPS``), so a contraction may follow any pairwise plan.
SEMIRINGS = frozenset([(ops.add, ops.mul), (ops.logaddexp, ops.add), (ops.max, ops.add),
                       (ops.min, ops.add), (ops.or_, ops.and_)])

# A log-space step whose broadcast has at most this many elements (or at most a few times the
# size of its operands and result) is computed exactly by broadcasting; a larger one first
# tries the shifted matrix product.
BROADCAST_LIMIT = 1 << 16
# Exact recomputation of a large step broadcasts at most this many elements at a time.
_CHUNK = 1 << 22

_ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def align_dims(x, letters: str, target: str):
    """``x`` (dims ``letters``) permuted to ``target`` order, with size-1 dims where absent.

    Example:
        >>> align_dims(np.zeros((2, 3)), "ab", "bca").shape
        (3, 1, 2)
    """
    order = [c for c in target if c in letters]
    if order != list(letters):
        x = ops.permute(x, tuple(letters.index(c) for c in order))
    if len(order) != len(target):
        sizes = dict(zip(order, x.shape))
        x = ops.reshape(x, tuple(sizes.get(c, 1) for c in target))
    return x


def _unit_like(x, out: str, sum_op, sizes: dict):
    # A sum over an empty range is the semiring's zero (0, -inf, -inf for max, +inf for min)
    # on every backend; backend max kernels raise on empty axes instead.
    unit = ops.UNITS[sum_op]
    return ops.new_full(x, tuple(sizes[c] for c in out),
                        unit if isinstance(unit, bool) else float(unit))


def _empty_sum(letters: str, out: str, sizes: dict) -> bool:
    return any(sizes[c] == 0 for c in letters if c not in out)


def reduce_dims(x, letters: str, out: str, sum_op):
    """Reduce ``x`` (dims ``letters``) by ``sum_op`` to the dims ``out``, in that order.

    Example:
        >>> reduce_dims(np.ones((2, 3)), "ab", "a", ops.add)
        array([3., 3.])
    """
    if letters == out:
        return x
    sizes = dict(zip(letters, x.shape))
    if sum_op is not ops.add and _empty_sum(letters, out, sizes):
        return _unit_like(x, out, sum_op, sizes)
    axes = tuple(i for i, c in enumerate(letters) if c not in out)
    if axes:
        x = log_sum(x, axes) if sum_op is ops.logaddexp else ops.REDUCE_OPS[sum_op](x, axis=axes)
        letters = "".join(c for c in letters if c in out)
    return align_dims(x, letters, out)


def log_sum(x, axis, shared: bool = False, primitives: bool = False):
    """``logsumexp`` over ``axis`` whose derivative is finite where a whole slice is
    ``-inf`` (a state no path reaches): the backends' kernels differentiate as
    ``exp(x - out)``, ``exp(-inf + inf)`` = NaN there, which turns even a zero cotangent
    into NaN rows of a gradient. ``shared``: ``x`` is an array no larger than what it was
    summed from, so a backend's ``logsumexp_shared`` (jax's: the derivative keeps the value's
    exps, one exp per entry instead of two) is cheaper than recomputing them; a broadcast much
    larger than its operands is better recomputed (fused) than stored. ``primitives``: ``x``
    is a small round of a chain's exact tree, outside any loop (a backend's
    ``logsumexp_primitives``: jax's differentiates it from its primitives under jit, where a
    custom jvp's nested programs cost more than the round). Without derivatives
    (numpy, torch without ``requires_grad``), or where the backend's kernel already
    differentiates to 0 there (jax's, by a custom jvp: ``LOGSUMEXP_GRAD_FINITE``), the
    kernel runs alone; eagerly
    with gradients (torch), it runs and only a result with a ``-inf`` is recomputed with
    those slices set to 0 (then put back to ``-inf``, by a constant).

    Example:
        >>> import torch
        >>> x = torch.tensor([[0.0, 0.0], [-np.inf, -np.inf]], requires_grad=True)
        >>> out = log_sum(x, -1)
        >>> torch.logsumexp(out, 0).backward()
        >>> x.grad.tolist()  # the unreachable row gets a zero gradient, not NaN
        [[0.5, 0.5], [0.0, 0.0]]
    """
    backend = backend_of(x)
    if backend.LOGSUMEXP_GRAD_FINITE or not backend.tracks_gradients(x):
        if shared and getattr(backend, "logsumexp_shared", None) is not None:
            return backend.logsumexp_shared(x, axis=axis)
        if primitives and getattr(backend, "logsumexp_primitives", None) is not None:
            return backend.logsumexp_primitives(x, axis=axis)
        return ops.logsumexp(x, axis=axis)
    out = ops.logsumexp(x, axis=axis, keepdims=True)
    dead = out == -math.inf
    if bool(ops.any(dead)):
        out = ops.where(dead, ops.full_like(out, -math.inf),
                        ops.logsumexp(ops.where(dead, ops.full_like(out, 0.0), x),
                                      axis=axis, keepdims=True))
    return ops.reshape(out, _reduced_shape(x.shape, axis))


def _reduced_shape(shape: tuple, axis) -> tuple:
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def ascii_equation(union: str, lx: str, ly: str, out: str) -> str | None:
    """``"lx,ly->out"`` re-lettered with ``a-zA-Z`` (numpy and torch accept no other letters),
    or None when the step has more than 52 distinct dims (``linear_pair`` then contracts it
    by a batched matrix product, which needs no letters).

    Plans name dims with ``opt_einsum.get_symbol``, which goes past ``Z`` into non-ASCII
    symbols after 52 names; one pairwise step names only its own dims, so a plan over any
    number of variables runs on every backend.

    Example:
        >>> ascii_equation("\\u0100b", "\\u0100b", "b", "\\u0100")
        'ab,b->a'
    """
    if len(union) > len(_ASCII):
        return None
    if all(c in _ASCII for c in union):
        return f"{lx},{ly}->{out}"
    table = str.maketrans(union, _ASCII[:len(union)])
    return f"{lx},{ly}->{out}".translate(table)


def pair(sum_op, prod_op, x, lx: str, y, ly: str, out: str, equation: str | None = None):
    """Contract two operands (dims ``lx``, ``ly``) to the dims ``out`` in a semiring.

    Every letter of ``out`` is in ``lx`` or ``ly``; the letters of both that are not in
    ``out`` are summed by ``sum_op`` after combining by ``prod_op``. ``equation`` is the
    step's ASCII einsum equation when the caller has it already (``ascii_equation``).

    Example:
        >>> pair(ops.add, ops.mul, np.ones((2, 3)), "ab", np.ones(3), "b", "a")
        array([3., 3.])
    """
    union = lx + "".join(c for c in ly if c not in lx)
    if sum_op is ops.add:
        return linear_pair(x, lx, y, ly, out, union, equation)
    sizes = {**dict(zip(lx, x.shape)), **dict(zip(ly, y.shape))}
    if _empty_sum(union, out, sizes):
        return _unit_like(x, out, sum_op, sizes)
    if sum_op is ops.logaddexp:
        return _log_pair(x, lx, y, ly, out, union, sizes)
    # max-plus, min-plus, or-and: broadcast, combine, reduce.
    z = prod_op(align_dims(x, lx, union), align_dims(y, ly, union))
    return reduce_dims(z, union, out, sum_op)


def linear_pair(x, lx, y, ly, out, union=None, equation=None):
    """``sum_s x * y`` over the letters in ``lx`` or ``ly`` but not in ``out``: one einsum,
    or, past 52 distinct dims in the step, a batched matrix product.

    Example:
        >>> linear_pair(np.ones((2, 3)), "ab", np.ones((3, 4)), "bc", "ca").shape
        (4, 2)
    """
    if equation is None:
        if union is None:
            union = lx + "".join(c for c in ly if c not in lx)
        equation = ascii_equation(union, lx, ly, out)
        if equation is None:
            return _matmul_pair(x, lx, y, ly, out)
    return ops.einsum(equation, x, y)


def _matmul_pair(x, lx, y, ly, out):
    # Dims of one operand only and not kept are summed first; then x is viewed as
    # (batch, left, summed) and y as (batch, summed, right), multiplied, and the result's
    # dims (batch, left, right) put in the order of ``out``.
    own_x = "".join(c for c in lx if c not in ly and c not in out)
    if own_x:
        x = reduce_dims(x, lx, "".join(c for c in lx if c not in own_x), ops.add)
        lx = "".join(c for c in lx if c not in own_x)
    own_y = "".join(c for c in ly if c not in lx and c not in out)
    if own_y:
        y = reduce_dims(y, ly, "".join(c for c in ly if c not in own_y), ops.add)
        ly = "".join(c for c in ly if c not in own_y)
    sizes = {**dict(zip(lx, x.shape)), **dict(zip(ly, y.shape))}
    batch = "".join(c for c in lx if c in ly and c in out)
    summed = "".join(c for c in lx if c in ly and c not in out)
    left = "".join(c for c in lx if c not in ly)
    right = "".join(c for c in ly if c not in lx)
    size = lambda letters: math.prod(sizes[c] for c in letters)  # noqa: E731
    x = ops.reshape(align_dims(x, lx, batch + left + summed),
                    (size(batch), size(left), size(summed)))
    y = ops.reshape(align_dims(y, ly, batch + summed + right),
                    (size(batch), size(summed), size(right)))
    z = ops.reshape(ops.matmul(x, y), tuple(sizes[c] for c in batch + left + right))
    return align_dims(z, batch + left + right, out)


def _log_pair(x, lx, y, ly, out, union, sizes):
    summed = "".join(c for c in union if c not in out)
    if not summed:
        return align_dims(x, lx, out) + align_dims(y, ly, out)
    size = math.prod(sizes.values())
    small = size <= max(BROADCAST_LIMIT, 4 * (math.prod(x.shape) + math.prod(y.shape)
                                              + math.prod(sizes[c] for c in out)))
    if small:
        return _log_pair_exact(x, lx, y, ly, out, union)
    if not (ops.is_concrete(x) and ops.is_concrete(y)):
        return _log_pair_chunked(x, lx, y, ly, out, union, sizes)
    result, ok = _log_pair_shifted(x, lx, y, ly, out, union, summed)
    if ok:
        return result
    return _log_pair_chunked(x, lx, y, ly, out, union, sizes)


def log_pair_spec(lx: str, ly: str, out: str, sizes: dict) -> tuple | None:
    """The structure of a log-space step that ``pair`` computes exactly by broadcasting (it
    sums something, sums over no empty dim, and its broadcast is small), worked out once so
    that a cached plan runs it with ``log_pair_run``; None for any other step.

    Example:
        >>> spec = log_pair_spec("a", "ab", "b", {"a": 2, "b": 3})
        >>> log_pair_run(spec, np.zeros(2), np.zeros((2, 3))).round(4)
        array([0.6931, 0.6931, 0.6931])
    """
    union = lx + "".join(c for c in ly if c not in lx)
    if all(c in out for c in union) or any(sizes.get(c, 0) <= 0 for c in union):
        return None
    size = math.prod(sizes[c] for c in union)
    limit = 4 * (math.prod(sizes[c] for c in lx) + math.prod(sizes[c] for c in ly)
                 + math.prod(sizes[c] for c in out))
    if size > max(BROADCAST_LIMIT, limit):
        return None
    if all(c in union for c in out):
        union = _broadcast_order(lx, ly, out, union, sizes)
    kept = "".join(c for c in union if c in out)
    axes = tuple(i for i, c in enumerate(union) if c not in out)
    final = tuple(kept.index(c) for c in out)
    # (log_sum's ``shared``: a broadcast no larger than twice its larger operand)
    shared = size <= 2 * max(math.prod(sizes[c] for c in lx), math.prod(sizes[c] for c in ly))
    return (_index_spec(lx, union), _index_spec(ly, union), axes,
            None if final == tuple(range(len(out))) else final, shared)


def _broadcast_order(lx: str, ly: str, out: str, union: str, sizes: dict) -> str:
    # The broadcast in the output's order with the summed dims last: the sum runs over
    # contiguous trailing axes and no transpose follows it (XLA would copy one). Unless that
    # order permutes an operand larger than the output: a permuted operand is a copy as large
    # as itself (and its cotangent another, back), a permuted result only the output's; then
    # the broadcast takes the larger operand's order, the other's dims after.
    ordered = out + "".join(c for c in union if c not in out)
    big = max((lx, ly), key=lambda s: math.prod(sizes[c] for c in s))
    if ("".join(c for c in ordered if c in big) == big
            or math.prod(sizes[c] for c in big) <= math.prod(sizes[c] for c in out)):
        return ordered
    return big + "".join(c for c in union if c not in big)


def _index_spec(letters: str, union: str) -> tuple:
    # (permutation or None, index inserting size-1 dims or None): align_dims as data.
    order = [c for c in union if c in letters]
    perm = tuple(letters.index(c) for c in order)
    index = tuple(slice(None) if c in letters else None for c in union)
    return (None if perm == tuple(range(len(letters))) else perm,
            None if len(order) == len(union) else index)


def log_pair_run(spec: tuple, x, y):
    """The step of ``log_pair_spec``: ``_log_pair_exact`` with its letters worked out.

    Example:
        ``log sum_b exp(x[a, b] + y[b, c])``:

        >>> rng = np.random.default_rng(0)
        >>> x, y = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
        >>> z = log_pair_run(log_pair_spec("ab", "bc", "ac", {"a": 2, "b": 3, "c": 4}), x, y)
        >>> np.allclose(z, np.log(np.exp(x) @ np.exp(y)))
        True
    """
    (px, ix), (py, iy), axes, final, shared = spec
    if px is not None:
        x = ops.permute(x, px)
    if ix is not None:
        x = x[ix]
    if py is not None:
        y = ops.permute(y, py)
    if iy is not None:
        y = y[iy]
    z = log_sum(x + y, axes, shared)
    return z if final is None else ops.permute(z, final)


def _log_pair_exact(x, lx, y, ly, out, union):
    z = align_dims(x, lx, union) + align_dims(y, ly, union)
    return reduce_dims(z, union, out, ops.logaddexp)


def _log_pair_chunked(x, lx, y, ly, out, union, sizes):
    # The exact broadcast, one slab of the largest output dim at a time, so that memory stays
    # bounded by _CHUNK elements per slab (one slab when the whole broadcast fits).
    size = math.prod(sizes.values())
    if size <= _CHUNK or not out:
        return _log_pair_exact(x, lx, y, ly, out, union)
    c = max(out, key=lambda d: sizes[d])
    step = max(1, _CHUNK * sizes[c] // size)
    parts = []
    for start in range(0, sizes[c], step):
        sl = slice(start, min(start + step, sizes[c]))
        xs = ops.getitem(x, tuple(sl if d == c else slice(None) for d in lx)) if c in lx else x
        ys = ops.getitem(y, tuple(sl if d == c else slice(None) for d in ly)) if c in ly else y
        parts.append(_log_pair_exact(xs, lx, ys, ly, out, union))
    return ops.cat(parts, axis=out.index(c))


def _finite_max(x, axes: tuple):
    m = ops.amax(x, axis=axes, keepdims=True)
    return ops.where(ops.isfinite(m), m, ops.full_like(m, 0.0))


def _log_pair_shifted(x, lx, y, ly, out, union, summed):
    # log sum_s exp(x + y) with x + y = (x - u_s - mx) + (y + u_s - my) + mx + my: u_s balances
    # the two operands at each summed index s they share (half the difference of their maxima
    # over their other dims), then each is shifted by its maximum over its summed dims,
    # exponentiated, and the two multiplied by one einsum. Returns (result, whether every
    # entry kept its digits: a sum of shifted products below tiny / eps may have lost some).
    shared = "".join(c for c in lx if c in summed and c in ly)
    if shared:
        gap = reduce_dims(x, lx, shared, ops.max) - reduce_dims(y, ly, shared, ops.max)
        u = ops.where(ops.isfinite(gap), gap * 0.5, ops.full_like(gap, 0.0))
        x = x - align_dims(u, shared, lx)
        y = y + align_dims(u, shared, ly)
    xa = tuple(i for i, c in enumerate(lx) if c in summed)
    ya = tuple(i for i, c in enumerate(ly) if c in summed)
    mx = _finite_max(x, xa) if xa else None
    my = _finite_max(y, ya) if ya else None
    ex = ops.exp(x - mx) if mx is not None else ops.exp(x)
    ey = ops.exp(y - my) if my is not None else ops.exp(y)
    s = linear_pair(ex, lx, ey, ly, out, union)
    host = ops.to_numpy(s)
    info = np.finfo(host.dtype)
    # NaN counts as low (recompute, and stay NaN): a NaN minimum fails the comparison too.
    if not host.size or not host.min() >= info.tiny / info.eps:
        low = ~(host >= info.tiny / info.eps)
        # An exact zero is a true -inf where no finite pair x + y reaches the entry.
        zero = host == 0
        if (low & ~zero).any() or (zero & _any_finite_pair(x, lx, y, ly, out)).any():
            return None, False
        result = _safe_log(s)
    else:
        result = ops.log(s)  # every entry is at least tiny / eps: no zero to guard
    if mx is not None:  # the maxima without their size-1 summed dims (a view)
        result = result + align_dims(_squeeze(mx, xa), _keep(lx, xa), out)
    if my is not None:
        result = result + align_dims(_squeeze(my, ya), _keep(ly, ya), out)
    return result, True


def _squeeze(m, axes: tuple):
    return ops.reshape(m, tuple(n for i, n in enumerate(m.shape) if i not in axes))


def _any_finite_pair(x, lx, y, ly, out):
    # Entries of the result that some finite x + y contributes to.
    fx = ops.to_numpy(ops.isfinite(x)).astype(float)
    fy = ops.to_numpy(ops.isfinite(y)).astype(float)
    return ops.to_numpy(linear_pair(fx, lx, fy, ly, out)) > 0


def _safe_log(s):
    # log(0) = -inf without the backend's divide-by-zero warning. Test ``== 0``, not ``> 0``:
    # a NaN is neither, and must stay NaN (log(nan) = nan), never turn into -inf.
    zero = s == 0
    return ops.where(zero, ops.full_like(s, -float("inf")),
                     ops.log(ops.where(zero, ops.full_like(s, 1.0), s)))


def _keep(letters: str, axes: tuple) -> str:
    return "".join(c for i, c in enumerate(letters) if i not in axes)
