"""Compressed cluster messages (Singh 2014, chapter 8.2): samples, merged k-best and FRAK.

A cluster message is a dense log table ``pi(y)`` over the cluster's variables (``|Y|^|C|``
values). Each projection keeps a set ``S`` of configurations and returns the dense log table
of the compressed message, the size of what it would store, and a state for the next call:

- ``samples`` (8.2.2): ``S`` = the distinct configurations among ``k`` draws from
  ``p = exp(pi) / Z``; a kept ``y`` is scored by its own value ``pi(y)`` (not by its count),
  the rest gets ``-inf``.
- ``merged`` (8.2.4): ``S`` = the ``k`` best configurations (ties: lowest flat index), and the
  mass of the rest, ``Z - sum_{y in S} exp pi(y)``, spread uniformly over the other
  ``N - k`` configurations, so ``logsumexp`` of the message is ``log Z`` exactly.
- ``frak`` (8.2.4, factorized relaxed adaptive k-best): ``S`` is a list carried across calls
  in ``state``; each call adds the current MAP configuration if absent (with ``k``: the
  current ``k`` best that are absent), then merges the rest as above. Once the MAP is in the
  list it stops growing (the EP fixed family of 8.3). Batched or traced (under ``jax.jit``)
  the lists are kept as a boolean mask of fixed shape, so FRAK runs under ``jit`` too.

``nbytes`` counts what a compressed message stores: one value of the table's itemsize per
kept configuration plus ``|C|`` indices of ``INDEX_BYTES`` each to name it, and for merged
messages one more value (the merged mass). The dense table's is ``N * itemsize``.

``table_errors`` gives Fig 8.3's four errors between two log tables over the same variables.

Example:
    >>> t = np.log(np.array([[0.5, 0.25], [0.125, 0.125]]))
    >>> p = project_merged(t, k=2)
    >>> np.exp(p.log_table).round(4).tolist(), p.nbytes
    ([[0.5, 0.25], [0.125, 0.125]], 40)
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.engine.backend import backend_of
from funsor_core.sampling.draw import backend_and_key

__all__ = ["Projection", "PROJECTIONS", "INDEX_BYTES", "project_samples", "project_merged",
           "project_frak", "table_errors", "top_mask", "KL_FLOOR"]

# A stored configuration names each of its |C| variables' values with an int32.
INDEX_BYTES = 4
# Fig 8.3's footnote 2: samples and k-best put zeros where KL is undefined; floor at 1e-10.
KL_FLOOR = 1e-10

_PAIRWISE_LIMIT = 4096  # a traced table up to this size is ranked pairwise: O(n^2) memory
_BAD_K = ("{name}: k is the number of configurations to keep, an int in [1, {n}] (the table "
          "has {n} configurations); got k={k!r}")


class Projection(NamedTuple):
    """A compressed message: ``log_table`` (dense, the input's shape, ``-inf`` where it puts
    no mass), ``nbytes`` (its compressed size) and ``state`` (for the next projection of the
    same message; FRAK's list, else None).

    Example:
        >>> Projection(np.zeros(2), 16, None).nbytes
        16
    """

    log_table: Any
    nbytes: int
    state: object


def _itemsize(x) -> int:
    return int(getattr(x.dtype, "itemsize", 8))


def _check_k(name: str, k, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise ValueError(_BAD_K.format(name=name, n=n, k=k))
    return int(k)


def _stored_bytes(log_table, count: int, merged: bool, batch_dims: int = 0) -> int:
    # One message's bytes (the table's axes after batch_dims name a configuration).
    per = _itemsize(log_table) + INDEX_BYTES * max(len(log_table.shape) - batch_dims, 1)
    return count * per + (_itemsize(log_table) if merged else 0)


def _top_indices(flat, k: int):
    """The flat indices of the ``k`` largest entries, largest first (ties and ``-inf``: the
    lowest index), by ``k`` argmaxes in the backend's scan (no sort op; runs under jit)."""
    taken0 = ops.new_zeros(flat, flat.shape) > 0

    def step(taken, _):
        key = ops.where(taken, -math.inf, flat)
        # When only -inf is left, argmax(key) may be a taken index: take the first untaken.
        first_free = ops.argmax(ops.astype(ops.invert(taken), "int"), 0)
        i = ops.where(ops.amax(key, 0) > -math.inf, ops.argmax(key, 0), first_free)
        return ops.scatter_set(taken, (i,), True), i

    _, idx = backend_of(flat).scan(step, taken0, ops.new_arange(flat, 0, k))
    return idx


def _mask(flat, idx):
    return ops.scatter_set(ops.new_zeros(flat, flat.shape), (idx,), 1.0) > 0


def top_mask(flat, keep: int):
    """A boolean mask of the ``keep`` largest entries along the last axis of ``flat``
    (``(..., n)``: leading axes index independent rows), ties (and ``-inf``) to the lowest
    index: a stable host sort when the values are concrete, a pairwise rank of a traced row
    up to 4,096 entries, ``keep`` argmaxes in a scan above (one row only).

    Example:
        >>> top_mask(np.array([0.0, 2.0, 2.0, 1.0]), 2).tolist()
        [False, True, True, False]
        >>> top_mask(np.array([[0.0, 1.0], [1.0, 0.0]]), 1).tolist()
        [[False, True], [True, False]]
    """
    n = int(flat.shape[-1])
    if ops.is_concrete(flat):
        values = np.asarray(ops.to_numpy(ops.detach(flat)))
        order = np.argsort(-values, axis=-1, kind="stable")
        mask = np.zeros(values.shape)
        np.put_along_axis(mask, order[..., :keep], 1.0, axis=-1)
        return ops.new_array(flat, mask) > 0.5
    if n > _PAIRWISE_LIMIT:
        if flat.ndim > 1:
            raise NotImplementedError(
                f"top_mask of a traced batch of rows of {n} > {_PAIRWISE_LIMIT} entries (a "
                "k-best, merged or FRAK message of a batched cluster BP under jax.jit): run it "
                "eagerly, or one model at a time")
        return _mask(flat, _top_indices(flat, keep))
    # rank_i = #{j: x_j > x_i} + #{j < i: x_j == x_i}; keep rank_i < keep.
    xi, xj = flat[..., :, None], flat[..., None, :]
    lower = ops.new_array(flat, np.tril(np.ones((n, n)), -1)) > 0.5  # [i, j]: j < i
    beats = ops.or_(xj > xi, ops.and_(xj == xi, lower))
    rank = ops.sum(ops.astype(beats, "real"), axis=-1)
    return rank < keep - 0.5


def _merged_table(flat, kept, count):
    """Kept entries as they are; the others share the rest's mass ``sum_{y not in S} e^pi``
    (that is ``Z - sum_S e^pi``, summed directly so it is exact) uniformly; along the last
    axis."""
    n = flat.shape[-1]
    if count >= n:
        return flat
    log_rest = ops.logsumexp(ops.where(kept, -math.inf, flat), axis=flat.ndim - 1,
                             keepdims=True)
    return ops.where(kept, flat, log_rest - math.log(n - count))


def _gumbel(u):
    # u in [0, 1) -> 1 - u in (0, 1], kept below 1 so that -log(-log v) stays finite.
    tiny = 2.0 ** -24 if _itemsize(u) <= 4 else 2.0 ** -53
    return -ops.log(-ops.log(ops.clamp(1.0 - u, max=1.0 - tiny)))


def _grid_shape(n: int) -> tuple:
    b = max(1, math.isqrt(n - 1) + 1)
    return -(-n // b), b


def _uniforms(flat, k: int, rng_key, state):
    """The uniforms of ``k`` draws from each row of ``flat`` (``(rows, n)``): ``(k, a + b)``
    from one key (shared by the rows), ``(rows, k, a + b)`` from a tuple of per-row int keys;
    reused from ``state`` when it holds the same keys' (a fixed key gives fixed numbers)."""
    rows, n = (int(d) for d in flat.shape)
    a, b = _grid_shape(n)
    if _keyed(rng_key) and isinstance(state, tuple) and len(state) == 2 and \
            state[0] == rng_key and tuple(state[1].shape[-2:]) == (k, a + b):
        return state[1]
    if isinstance(rng_key, tuple):
        if len(rng_key) != rows:
            raise ValueError(f"project_samples: one key per batch element: got {len(rng_key)} "
                             f"keys for {rows} elements")
        return ops.stack([_uniforms(flat[:1], k, key, None) for key in rng_key], 0)
    module, key = backend_and_key(flat, rng_key)
    return ops.new_array(flat, module.rand((k, a + b), key))


def _keyed(rng_key) -> bool:
    # An int or a tuple of ints: a fixed key, whose uniforms can be kept and reused.
    return isinstance(rng_key, (int, np.integer, tuple)) and not isinstance(rng_key, bool)


def _draw_rows(flat, k: int, u):
    """``k`` draws from ``softmax`` of each row of ``flat`` (``(rows, n)``) with uniforms
    ``u``: the flat index viewed as (row, column) of an ``a x b`` grid (``b ~ sqrt n``), the
    grid row from its marginal and the column given it, each by Gumbel-max; memory
    ``k (a + b)`` per row instead of ``k n``. Returns ``(rows, k)`` flat indices."""
    rows, n = (int(d) for d in flat.shape)
    a, b = _grid_shape(n)
    padded = ops.cat([flat, ops.new_full(flat, (rows, a * b - n), -math.inf)], 1) \
        if a * b > n else flat
    grid = ops.reshape(padded, (rows, a, b))
    g = _gumbel(u)  # (k, a + b), or (rows, k, a + b): per-row keys
    r = ops.argmax(ops.logsumexp(grid, 2)[:, None, :] + g[..., :a], 2)  # (rows, k)
    base = ops.new_arange(r, 0, rows)[:, None] * a
    picked = ops.reshape(grid, (rows * a, b))[r + base]  # (rows, k, b): each draw's grid row
    return r * b + ops.argmax(picked + g[..., a:], 2)


def _draw_flat(flat, k: int, rng_key):
    """``k`` draws (flat indices) from ``softmax(flat)``, one row of ``_draw_rows``."""
    row = ops.reshape(flat, (1, int(flat.shape[0])))
    return _draw_rows(row, k, _uniforms(row, k, rng_key, None))[0]


def project_samples(log_table, *, k: int, rng_key=None, state=None,
                    batch_dims: int = 0) -> Projection:
    """The configurations among ``k`` draws from the normalized table, each scored by its own
    value; ``-inf`` elsewhere (thesis 8.2.2).

    Args:
        log_table: a dense log table (numpy, torch or jax array), one axis per variable
            (after ``batch_dims`` leading axes that index independent messages).
        k: the number of draws (of each message).
        rng_key: an int seed (the same seed gives the same message), a backend key, or None
            (the backend's global random state). Batched: one key draws the same uniforms
            for every message (row ``i`` is then ``project_samples(log_table[i], k=k,
            rng_key=rng_key)``), a tuple of int keys, one per message in C order, draws
            each message's with its own.
        state: a previous call's ``state`` for the same message: its uniforms, reused when
            ``rng_key`` is the same (None draws them).

    Returns:
        A ``Projection``; ``nbytes`` counts the distinct kept configurations (under
        ``jax.jit``, where that count is traced, it counts the ``k`` draws: a bound);
        ``state`` holds the uniforms drawn with an int or tuple key.

    Example:
        >>> t = np.log(np.array([[0.7, 0.1], [0.1, 0.1]]))
        >>> p = project_samples(t, k=3, rng_key=0)
        >>> bool(np.all((p.log_table == t) | (p.log_table == -np.inf)))
        True
        >>> b = project_samples(np.stack([t, t.T]), k=3, rng_key=0, batch_dims=1)
        >>> bool(np.all(b.log_table[0] == p.log_table))
        True
    """
    shape = tuple(int(d) for d in log_table.shape)
    rows, n = math.prod(shape[:batch_dims]), math.prod(shape[batch_dims:])
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"project_samples: k is the number of draws, a positive int; got "
                         f"k={k!r}")
    flat = ops.reshape(log_table, (rows, n))
    u = _uniforms(flat, int(k), rng_key, state)
    idx = _draw_rows(flat, int(k), u)
    kept = ops.scatter_set(ops.new_zeros(flat, flat.shape) > 0,
                           (ops.new_arange(idx, 0, rows)[:, None], idx), True)
    table = ops.reshape(ops.where(kept, flat, -math.inf), shape)
    count = int(ops.sum(ops.astype(kept, "int"))) if ops.is_concrete(kept) else rows * k
    return Projection(table, _stored_bytes(log_table, count, False, batch_dims),
                      (rng_key, u) if _keyed(rng_key) else None)


def project_merged(log_table, *, k: int, rng_key=None, state=None,
                   batch_dims: int = 0) -> Projection:
    """The ``k`` best configurations kept, the rest's mass spread uniformly over the other
    ``N - k`` (thesis 8.2.4); ``logsumexp`` of the result is the table's.

    Args:
        log_table: a dense log table, one axis per variable (after ``batch_dims`` leading
            axes that index independent messages, each merged on its own).
        k: how many configurations to keep, ``1 <= k <= N``; ``k = N`` returns the table.
        rng_key, state: unused (None is returned).

    Example:
        >>> t = np.log(np.array([0.5, 0.3, 0.1, 0.1]))
        >>> np.exp(project_merged(t, k=1).log_table).round(4).tolist()
        [0.5, 0.1667, 0.1667, 0.1667]
    """
    shape = tuple(int(d) for d in log_table.shape)
    lead, rest = shape[:batch_dims], shape[batch_dims:]
    n = math.prod(rest)
    k = _check_k("project_merged", k, n)
    flat = ops.reshape(log_table, lead + (n,))
    table = _merged_table(flat, top_mask(flat, k), k)
    per = _stored_bytes(log_table, k, merged=True, batch_dims=batch_dims)
    return Projection(ops.reshape(table, shape), math.prod(lead) * per, None)


def project_frak(log_table, *, k: int | None = None, rng_key=None, state=None,
                 batch_dims: int = 0) -> Projection:
    """FRAK (thesis 8.2.4): the kept list is ``state`` (a tuple of flat indices, oldest first;
    None starts empty); this call adds the current MAP configuration if absent (with ``k``:
    each of the current ``k`` best that is absent, so at most ``k`` new ones), then merges
    the rest's mass as ``project_merged`` does. The list stops growing once it holds the
    current ``k`` best. The new list is the returned ``state``.

    With ``batch_dims`` leading axes of independent messages, or a traced table (under
    ``jax.jit``), the lists are kept as a mask of fixed shape: ``state`` is a pair
    ``(mask, bound)``, ``mask`` a boolean array ``(*B, N)`` (each message's kept set; rows
    keep different numbers of configurations, merged in one vectorized call) and ``bound``
    an int, the most configurations a row may hold. Traced, ``nbytes`` counts ``bound`` per
    message (the kept count is traced: a bound, as ``project_samples``' draws).

    Raises:
        ValueError: a bad ``k`` or ``state``.

    Example:
        >>> t = np.log(np.array([0.5, 0.3, 0.1, 0.1]))
        >>> p = project_frak(t)
        >>> p.state, project_frak(t, state=p.state).state
        ((0,), (0,))
        >>> mask, bound = project_frak(np.stack([t, t[::-1]]), batch_dims=1).state
        >>> np.asarray(mask).nonzero()[1].tolist(), bound
        ([0, 3], 1)
    """
    shape = tuple(int(d) for d in log_table.shape)
    masked = isinstance(state, tuple) and len(state) == 2 and \
        len(getattr(state[0], "shape", ())) > 0  # (mask, bound), not two numpy int indices
    if batch_dims or masked or not ops.is_concrete(log_table):
        return _frak_rows(log_table, k, state, shape[:batch_dims])
    n = math.prod(shape)
    k = 1 if k is None else _check_k("project_frak", k, n)
    flat = ops.reshape(log_table, (n,))
    kept = list(state or ())
    bad = [i for i in kept if not (isinstance(i, (int, np.integer)) and 0 <= i < n)]
    if bad:
        raise ValueError(f"project_frak: state is a tuple of flat indices in [0, {n}) of the "
                         f"table of shape {shape}; got {bad[:3]}")
    values = np.asarray(ops.to_numpy(ops.detach(flat)))
    best = np.argsort(-values, kind="stable")[:k]
    kept += [int(i) for i in best if int(i) not in kept]
    mask = _mask(flat, ops.new_array(flat, np.asarray(kept, dtype=np.int64)))
    table = ops.reshape(_merged_table(flat, mask, len(kept)), shape)
    return Projection(table, _stored_bytes(log_table, len(kept), merged=True), tuple(kept))


def _frak_mask(state, flat, lead: tuple):
    # The kept sets as a (rows, n) boolean array, and the bound on a row's count.
    rows, n = (int(d) for d in flat.shape)
    if state is None:
        return ops.new_zeros(flat, (rows, n)) > 0, 0
    mask, bound = state if isinstance(state, tuple) and len(state) == 2 else (None, None)
    if tuple(getattr(mask, "shape", ())) not in (lead + (n,), (rows, n)) or \
            not isinstance(bound, int):
        raise ValueError(f"project_frak: with batch_dims or under jax.jit, state is a pair "
                         f"(mask of shape {lead + (n,)}, int bound) from the previous call")
    if isinstance(mask, np.ndarray):
        mask = ops.new_array(flat, mask.astype(float)) > 0.5
    return ops.reshape(mask, (rows, n)), bound


def _frak_rows(log_table, k, state, lead: tuple) -> Projection:
    # FRAK on (rows, n): each row's kept set grows by its k best; one merge for all rows.
    shape = tuple(int(d) for d in log_table.shape)
    rows, n = math.prod(lead), math.prod(shape[len(lead):])
    k = 1 if k is None else _check_k("project_frak", k, n)
    flat = ops.reshape(log_table, (rows, n))
    old, bound = _frak_mask(state, flat, lead)
    # A traced single row of more than 4,096 entries ranks by argmaxes (top_mask's 1-d case).
    best = top_mask(flat[0], k)[None] if rows == 1 else top_mask(flat, k)
    mask = ops.or_(old, best)
    if ops.is_concrete(mask):
        counts = np.asarray(ops.to_numpy(ops.sum(ops.astype(mask, "int"), axis=1)))
        total, bound = int(counts.sum()), int(counts.max())
        spread = ops.new_array(flat, -np.log(np.maximum(n - counts, 1))[:, None])
    else:
        counts = ops.sum(ops.astype(mask, "real"), axis=1, keepdims=True)
        spread = -ops.log(ops.clamp(n - counts, min=1.0))
        bound = min(n, bound + k)
        total = rows * bound
    # Rows that keep everything take `flat` itself (the spread is unused there).
    rest = ops.logsumexp(ops.where(mask, -math.inf, flat), axis=1, keepdims=True)
    table = ops.where(mask, flat, rest + spread)
    nbytes = rows * _itemsize(log_table) + total * _stored_bytes(log_table, 1, False,
                                                                 len(lead))
    return Projection(ops.reshape(table, shape), nbytes, (ops.reshape(mask, lead + (n,)),
                                                          bound))


# The projections of this module by name (cluster BP's registry adds full, factorized, kbest).
PROJECTIONS = {"samples": project_samples, "merged": project_merged, "frak": project_frak}


def _probs(log_table) -> np.ndarray:
    x = np.asarray(ops.to_numpy(ops.detach(log_table)), dtype=np.float64).reshape(-1)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        raise ValueError("table_errors: a table with no mass (all -inf) is not a distribution")
    p = np.exp(x - finite.max())
    return p / p.sum()


def table_errors(log_p, log_q) -> dict:
    """Fig 8.3's errors of ``q`` against ``p`` (log tables over the same variables, any
    backend; both normalized here), on the host in float64: ``sym_kl`` = KL(p||q) + KL(q||p)
    with both floored at ``KL_FLOOR`` and renormalized (footnote 2), ``tv`` = 1/2 |p - q|_1,
    ``l2`` = |p - q|_2, ``hellinger`` = sqrt(1/2 sum (sqrt p - sqrt q)^2) (as
    ``reference.marginal_errors`` defines them per variable).

    Example:
        >>> e = table_errors(np.log([0.5, 0.5]), np.log([0.25, 0.75]))
        >>> round(e["tv"], 4), round(e["l2"], 4)
        (0.25, 0.3536)
    """
    if tuple(log_p.shape) != tuple(log_q.shape):
        raise ValueError(f"table_errors: the tables must be over the same variables, in the "
                         f"same order; got shapes {tuple(log_p.shape)} and "
                         f"{tuple(log_q.shape)}")
    p, q = _probs(log_p), _probs(log_q)
    fp, fq = np.maximum(p, KL_FLOOR), np.maximum(q, KL_FLOOR)
    fp, fq = fp / fp.sum(), fq / fq.sum()
    return {"sym_kl": float(np.sum((fp - fq) * (np.log(fp) - np.log(fq)))),
            "tv": 0.5 * float(np.abs(p - q).sum()),
            "l2": float(np.sqrt(((p - q) ** 2).sum())),
            "hellinger": float(np.sqrt(0.5 * ((np.sqrt(p) - np.sqrt(q)) ** 2).sum()))}
