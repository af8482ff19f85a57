"""The array math of belief propagation on a ``FactorGraph``: pure functions of message arrays.

Messages are log arrays ``(E, D, *B)`` indexed by edge (factor ``a``, variable ``i``):
``f2v[e]`` is the message ``a -> i``. In a semiring with reduction ``R`` (``logsumexp`` for
sum-product, ``amax`` for max-product, ``T * logsumexp(x / T)`` at temperature ``T``):

    bsum_i       = sum_{a ∋ i} f2v[a -> i]                          (one gather + sum)
    v2f[i -> a]  = bsum_i - f2v[a -> i]                             (one gather)
    f2v'[a -> i] = R_{x_a \\ x_i} (log psi_a(x_a) + sum_{j ∈ a, j != i} v2f[j -> a](x_j))

each normalized so that ``R_x m(x) = 0``. The Bethe log partition function in message form,

    log Z = sum_a R_{x_a}(log psi_a + sum_{i ∈ a} v2f[i -> a]) + sum_i (1 - d_i) R_{x_i} bsum_i,

is invariant to rescaling the messages, equals the Bethe free energy at a fixed point, and is
the exact ``log Z`` (``log max`` for max-product) on a tree. Its messages are detached, so its
gradient with respect to ``log psi_a`` is the factor belief ``b_a`` exactly, which at a fixed
point is also the derivative of the converged Bethe ``log Z`` (stationarity).
"""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.loopy.graph import NEG, FactorGraph

__all__ = ["check_damping", "roundoff_tol", "Semiring", "variable_sums", "var_to_factor",
           "factor_to_var", "bethe_log_z", "factor_log_beliefs", "normalize"]


def check_damping(damping) -> None:
    """Raise unless ``damping`` is a number in ``[0, 1)`` (a string or None names itself
    instead of failing in the comparison).

    Example:
        >>> check_damping(1.0)
        Traceback (most recent call last):
        ...
        ValueError: damping must be in [0, 1) (a number), got 1.0
    """
    try:
        ok = bool(0.0 <= damping < 1.0)  # NaN fails too
    except TypeError:
        ok = False
    if not ok:
        raise ValueError(f"damping must be in [0, 1) (a number), got {damping!r}")


# Units of eps that a message's change may keep from roundoff alone (measured: 1-2 ulps).
_ROUNDOFF_ULPS = 16
_LOW_EPS = {2: 2.0 ** -10, 4: 2.0 ** -23}  # float16, float32 (float64 needs no floor)


def roundoff_tol(tables, log_size: float, tol: float) -> float:
    """``tol`` raised to the roundoff floor of low-precision concrete log ``tables``.

    A normalized log message differs between two of its entries by at most the spread of
    its factor's finite log entries, so its entries lie within ``spread + log_size`` of 0
    (``log_size``: the log of the most entries a message has), and recomputing it changes
    it by a few ulps of that even at a fixed point. In float32 that is above the default
    ``1e-8``: BP would never report convergence and would run all ``max_iters``. The floor
    is ``16 eps (1 + spread + log_size)``; float64 and traced tables (under ``jax.jit``, a
    fixed-length scan anyway) keep ``tol``.

    Example:
        >>> table = np.array([[0.0, -2.0], [-1.0, NEG]], np.float32)
        >>> roundoff_tol([table], 0.0, 1e-8) / 2.0 ** -23  # 16 ulps of 1 + spread 2
        48.0
        >>> roundoff_tol([table.astype(np.float64)], 0.0, 1e-8)
        1e-08
    """
    eps = _LOW_EPS.get(getattr(getattr(tables[0], "dtype", None), "itemsize", 8)) \
        if tables else None
    if eps is None or not all(ops.is_concrete(t) for t in tables):
        return tol
    spread = 0.0
    for table in tables:
        host = np.asarray(ops.to_numpy(ops.detach(table)), np.float64)
        live = host[host > NEG / 2]  # padding and log 0 sit at NEG or -inf
        if live.size:
            spread = max(spread, float(live.max() - live.min()))
    return max(tol, float(_ROUNDOFF_ULPS * eps * (1.0 + spread + float(log_size))))


class Semiring:
    """The reduction of a message semiring: ``sum_op`` (``ops.logaddexp`` or ``ops.max``)
    at ``temperature`` (``0`` is max-product; ``1`` sum-product).

    Example:
        >>> Semiring(ops.max).reduce(np.array([[0.0, 2.0]]), (1,))
        array([2.])
    """

    def __init__(self, sum_op=ops.logaddexp, temperature: float = 1.0) -> None:
        if sum_op is ops.max:
            temperature = 0.0
        elif sum_op is not ops.logaddexp:
            raise ValueError(f"loopy BP runs in the (logaddexp, add) or (max, add) semiring, got "
                             f"sum_op={sum_op!r}; pass ops.logaddexp or ops.max")
        if not temperature >= 0:  # NaN too
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.temperature = float(temperature)

    @property
    def is_max(self) -> bool:
        return self.temperature == 0.0

    def reduce(self, x, axes: tuple, keepdims: bool = False):
        if axes and all(x.shape[a] <= _UNROLL for a in axes):
            return self._unrolled(x, axes, keepdims)
        if self.is_max:
            return ops.amax(x, axis=axes, keepdims=keepdims)
        t = self.temperature
        if t == 1.0:
            return ops.logsumexp(x, axis=axes, keepdims=keepdims)
        return ops.logsumexp(x / t, axis=axes, keepdims=keepdims) * t


    def _unrolled(self, x, axes: tuple, keepdims: bool):
        # Reductions over tiny static axes (binary variables) as elementwise ops on slices:
        # XLA:CPU runs a reduce over a size-2 minor axis as a scalar loop, 2-3x slower.
        for a in sorted(axes, reverse=True):
            parts = [x[(slice(None),) * a + (k,)] for k in range(x.shape[a])]
            acc = parts[0]
            for part in parts[1:]:
                acc = self._combine(acc, part)
            x = acc[(slice(None),) * a + (None,)] if keepdims else acc
        return x

    def _combine(self, a, b):
        if self.is_max:
            return ops.max(a, b)
        t = self.temperature
        return ops.logaddexp(a, b) if t == 1.0 else ops.logaddexp(a / t, b / t) * t


_UNROLL = 2  # reduce axes of at most this size by elementwise ops


def normalize(semiring: Semiring, m):
    """``m - R_x m`` over the state axis 1.

    Example:
        >>> np.exp(normalize(Semiring(), np.log(np.array([[1.0, 3.0]]))))
        array([[0.25, 0.75]])
    """
    return m - semiring.reduce(m, (1,), keepdims=True)


def _with_zero_slot(m):
    # A slot of zeros at index E: padded edge lists gather it and add nothing.
    return ops.cat([m, ops.new_zeros(m, (1,) + tuple(m.shape[1:]))], 0)


def variable_sums(graph: FactorGraph, f2v, var_edges):
    """``bsum`` ``(V, D, *B)``: each variable's incoming messages, summed.

    Example:
        Two factors on ``a`` (two edges into it), each sending ``log [1, 3]``:

        >>> u = fc.Tensor(np.log(np.array([1.0, 3.0])), {"a": fc.Bint[2]})
        >>> g = FactorGraph.build([u, u])
        >>> f2v = np.log(np.array([[1.0, 3.0], [1.0, 3.0]]))
        >>> np.exp(variable_sums(g, f2v, g.var_edges))
        array([[1., 9.]])
    """
    if graph.uniform_degree:  # no padded edge lists: skip the copy that appends the zeros
        return ops.sum(f2v[var_edges], axis=1)
    return ops.sum(_with_zero_slot(f2v)[var_edges], axis=1)


def var_to_factor(semiring: Semiring, bsum, f2v, edge_var):
    """``v2f`` ``(E, D, *B)``: ``bsum_i - f2v[a -> i]``. Not normalized: it is a sum of
    normalized messages, so bounded, and ``f2v'`` is normalized after the reduction.

    Example:
        Two factors on ``a``: each hears what the other sent.

        >>> u = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> g = FactorGraph.build([u, u])
        >>> f2v = np.log(np.array([[1.0, 3.0], [2.0, 1.0]]))
        >>> bsum = variable_sums(g, f2v, g.var_edges)
        >>> np.exp(var_to_factor(Semiring(), bsum, f2v, g.edge_var))
        array([[2., 1.],
               [1., 3.]])
    """
    return bsum[edge_var] - f2v


def _expand(m, pos: int, k: int, nb: int):
    # (F, D, *B) -> (F, 1, .., D at 1 + pos, .., 1, *B)
    index = ((slice(None),) + tuple(slice(None) if p == pos else None for p in range(k))
             + (slice(None),) * nb)
    return m[index]


def _incoming(group, v2f):
    # The group's v2f messages by position: k arrays (F_k, D, *B).
    k = group.arity
    block = v2f[group.edge_start: group.edge_start + group.num_edges]
    block = ops.reshape(block, (len(group.factor_ids), k) + tuple(block.shape[1:]))
    return [block[:, p] for p in range(k)]


def factor_to_var(semiring: Semiring, graph: FactorGraph, v2f):
    """``f2v'`` ``(E, D, *B)``: every factor's messages to its variables, group by group.

    Example:
        With no incoming evidence, a pairwise factor sends each variable its row or column
        sums, normalized:

        >>> psi = np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(psi), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> f2v = factor_to_var(Semiring(), g, np.zeros((2, 2)))
        >>> np.allclose(np.exp(f2v), [psi.sum(1) / 7, psi.sum(0) / 7])
        True
    """
    nb = len(graph.bshape)
    out = []
    for group in graph.groups:
        k = group.arity
        if k == 0:
            continue
        incoming = _incoming(group, v2f)
        per_pos = []
        for j in range(k):
            t = group.table
            for p in range(k):
                if p != j:
                    t = t + _expand(incoming[p], p, k, nb)
            axes = tuple(1 + p for p in range(k) if p != j)
            per_pos.append(semiring.reduce(t, axes) if axes else t)
        msgs = ops.stack(per_pos, 1)  # (F_k, k, D, *B)
        out.append(ops.reshape(msgs, (group.num_edges,) + tuple(msgs.shape[2:])))
    f2v = out[0] if len(out) == 1 else ops.cat(out, 0)
    return normalize(semiring, f2v)


def factor_log_beliefs(semiring: Semiring, graph: FactorGraph, group, v2f, normalized=True):
    """The group's unnormalized (or normalized) log factor beliefs ``(F_k, D, .., D, *B)``:
    ``log psi_a + sum_i v2f[i -> a]``.

    Example:
        With no incoming evidence, a factor's belief is its own table, normalized:

        >>> psi = np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(psi), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> b = factor_log_beliefs(Semiring(), g, g.groups[0], np.zeros((2, 2)))
        >>> np.allclose(np.exp(b[0]), psi / psi.sum())
        True
    """
    k, nb = group.arity, len(graph.bshape)
    t = group.table
    if k:
        for p, m in enumerate(_incoming(group, v2f)):
            t = t + _expand(m, p, k, nb)
    if not normalized or not k:
        return t
    axes = tuple(range(1, 1 + k))
    return t - semiring.reduce(t, axes, keepdims=True)


def bethe_log_z(semiring: Semiring, graph: FactorGraph, f2v):
    """The Bethe ``log Z`` ``(*B)`` in message form (see the module docstring).

    Example:
        On a tree, after enough sweeps, the exact ``log Z``:

        >>> pu, pp = np.array([1.0, 3.0]), np.array([[1.0, 2.0], [3.0, 1.0]])
        >>> g = FactorGraph.build([fc.Tensor(np.log(pu), {"a": fc.Bint[2]}),
        ...                        fc.Tensor(np.log(pp), {"a": fc.Bint[2], "b": fc.Bint[2]})])
        >>> s, f2v = Semiring(), np.zeros((g.num_edges, g.D))
        >>> for _ in range(3):
        ...     v2f = var_to_factor(s, variable_sums(g, f2v, g.var_edges), f2v, g.edge_var)
        ...     f2v = factor_to_var(s, g, v2f)
        >>> np.allclose(bethe_log_z(s, g, f2v), np.log((pu[:, None] * pp).sum()))
        True
    """
    f2v = ops.detach(f2v)
    bsum = variable_sums(graph, f2v, graph.var_edges)
    v2f = bsum[graph.edge_var] - f2v  # unnormalized: log Z_ai = log Z_i needs it
    total = 0.0
    for group in graph.groups:
        t = factor_log_beliefs(semiring, graph, group, v2f, normalized=False)
        axes = tuple(range(1, 1 + group.arity))
        log_za = semiring.reduce(t, axes) if axes else t
        total = total + ops.sum(log_za, axis=0)
    log_zi = semiring.reduce(bsum, (1,))  # (V, *B)
    weights = ops.new_array(bsum, [1.0 - d for d in graph.degree.tolist()])  # bsum's dtype
    weights = ops.reshape(weights, (len(graph.names),) + (1,) * len(graph.bshape))
    return total + ops.sum(log_zi * weights, axis=0)


def neg_floor(x):
    """``x`` with ``-inf`` (and anything below) raised to ``NEG``."""
    return ops.clamp(x, min=NEG)
