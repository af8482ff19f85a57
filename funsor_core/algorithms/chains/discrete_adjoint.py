"""The adjoint of a discrete chain's log-space product, on arrays: the reverse mode of the
log-depth tree.

A chain of log step matrices ``m_0 .. m_{T-1}`` has the log-space product
``Z(x_0, x_T) = log sum_path exp(sum_t m_t(x_t, x_{t+1}))``. Given the log adjoint ``G`` of
that product (a function of its end states), the adjoint of step ``t`` is

    ``msg_t(a, b) = log sum_{x_0, x_T} exp(G(x_0, x_T)) L_t(x_0, a) R_t(b, x_T)``

with ``L_t`` the product of the steps before ``t`` and ``R_t`` of those after it (in linear
space). So ``msg_t + m_t`` is the unnormalized log pair marginal of step ``t``. The tree
computes it as autograd of a matrix-product tree would: the forward rounds multiply pairs
``C = A B``, and the backward rounds send ``C``'s adjoint down as ``G_A = G_C B^T`` and
``G_B = A^T G_C``: ``3 (T - 1)`` matrix products, ``2 log2 T`` rounds of batched calls.

``chain_messages`` runs it in linear space (each matrix a scaled array, ``exp`` once per
step and ``log`` once per message) and checks every product against ``tiny / eps``, as
``discrete_tree.scaled_log_tree`` does; a product that may have lost digits (a true zero, a
NaN, an infinity), or traced values (nothing can be read under ``jax.jit``), take the exact
log-space tree instead (broadcast ``logsumexp`` products).

Example:
    >>> mats = np.log(np.full((3, 2, 2), 0.5))
    >>> msg = chain_messages(mats, np.zeros((2, 2)))
    >>> np.exp(msg[0]).tolist()  # the rows of the stochastic m_1 m_2 sum to 1
    [[1.0, 1.0], [1.0, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_tree import semiring_mm
from funsor_core.algorithms.contract.linear_space import log_limits
from funsor_core.engine.backend import backend_of

__all__ = ["chain_messages", "chain_vector_messages"]


def chain_messages(mats, root):
    """The log adjoint of every step of a log-space chain product (see the module docstring).

    Args:
        mats: ``(T, *batch, K, K)`` log step matrices.
        root: ``(*batch, K, K)`` the log adjoint of the product, over ``(x_0, x_T)``.

    Returns:
        ``(T, *batch, K, K)``: ``msg_t(a, b)``, the log adjoint of step ``t`` at ``(a, b)``.

    Example:
        >>> mats = np.log(np.array([[[1.0, 2.0], [3.0, 4.0]]] * 2))
        >>> np.exp(chain_messages(mats, np.zeros((2, 2))))[1].round(6).tolist()  # 1^T m_0
        [[4.0, 4.0], [6.0, 6.0]]
    """
    if mats.shape[0] == 1:
        return root[None]  # one step: its adjoint is the product's
    if ops.is_concrete(mats) and ops.is_concrete(root):
        if isinstance(mats, np.ndarray):  # NaN and infinities are found by the check
            with np.errstate(all="ignore"):
                out = _scaled_messages(mats, root)
        else:
            out = _scaled_messages(mats, root)
        if out is not None:
            return out
    return _log_messages(mats, root)


def chain_vector_messages(mats, left, right):
    """``chain_messages`` of a root that is a sum ``left(x_0) + right(x_T)`` (a chain whose
    adjoint lacks its first or its last states): the messages are sums of a forward and a
    backward vector, sent down the tree as vectors.

    Args:
        mats: ``(T, *batch, K, K)`` log step matrices.
        left, right: ``(*batch, K)`` log vectors over the first and the last states.

    Example:
        >>> mats = np.log(np.array([[[1.0, 2.0], [3.0, 4.0]]] * 2))
        >>> np.exp(chain_vector_messages(mats, np.zeros(2), np.zeros(2)))[1].tolist()
        [[4.0, 4.0], [6.0, 6.0]]
    """
    if mats.shape[0] > 1 and ops.is_concrete(mats) and ops.is_concrete(left) and (
            ops.is_concrete(right)):
        if isinstance(mats, np.ndarray):
            with np.errstate(all="ignore"):
                out = _scaled_vector_messages(mats, left, right)
        else:
            out = _scaled_vector_messages(mats, left, right)
        if out is not None:
            return out
    return chain_messages(mats, left[..., :, None] + right[..., None, :])


def _pairs(x, n: int):
    # The left and right operands of one round: (0, 1), (2, 3), ...; an odd last one waits.
    return x[0:n - 1:2], x[1:n:2]


def _interleave(a, b, rest):
    # a[0], b[0], a[1], b[1], ... then rest: the messages of a round's operands, in order.
    both = ops.reshape(ops.stack([a, b], 1), (2 * a.shape[0],) + tuple(a.shape[1:]))
    return both if rest.shape[0] == 0 else ops.cat([both, rest], 0)


def _scaled_levels(mats) -> list | None:
    # The operands of each forward round, each matrix p * exp(c), p of maximum 1 and c
    # (.., 1, 1) its log scale; None where a product falls below the floor.
    xp = backend_of(mats).LOOP_FNS
    floor = math.exp(log_limits(mats.dtype)[0])  # tiny / eps
    c = xp.max2(mats)
    p = xp.exp(mats - c)
    levels = []
    while p.shape[0] > 1:
        levels.append((p, c))
        n = p.shape[0]
        (a, b), (ca, cb) = _pairs(p, n), _pairs(c, n)
        q = xp.matmul(a, b)
        if not xp.smallest(q) >= floor:
            return None
        s = xp.max2(q)
        p, c = q / s, (ca + cb) + xp.log(s)
        if n % 2:
            p, c = xp.cat([p, levels[-1][0][n - 1:]]), xp.cat([c, levels[-1][1][n - 1:]])
    return levels


def _scaled_messages(mats, root):
    # The general root: 2 (T - 1) matrix products back down the levels. None where a
    # product falls below the floor (see the module docstring).
    xp = backend_of(mats).LOOP_FNS
    floor = math.exp(log_limits(mats.dtype)[0])
    levels = _scaled_levels(mats)
    if levels is None:
        return None
    gc = xp.max2(root)
    g, gc = xp.exp(root - gc)[None], gc[None]
    for p, c in reversed(levels):
        n = p.shape[0]
        half = n // 2
        (a, b), (ca, cb) = _pairs(p, n), _pairs(c, n)
        gq, gcq = g[:half], gc[:half]
        ga = xp.matmul(gq, ops.transpose(b, -2, -1))  # G_A = G_C B^T
        gb = xp.matmul(ops.transpose(a, -2, -1), gq)  # G_B = A^T G_C
        if not (xp.smallest(ga) >= floor and xp.smallest(gb) >= floor):
            return None
        sa, sb = xp.max2(ga), xp.max2(gb)
        g = _interleave(ga / sa, gb / sb, g[half:])
        gc = _interleave((gcq + cb) + xp.log(sa), (gcq + ca) + xp.log(sb), gc[half:])
    return xp.log(g) + gc


def _scaled_vector_messages(mats, left, right):
    # A root left(x_0) + right(x_T): msg_t(a, b) = alpha_t(a) + beta_t(b), the forward
    # message into step t and the backward one out of it, sent down the levels as vectors
    # (a node's left child gets its alpha, the right child alpha times the left product;
    # mirrored for beta): K^2 per node instead of the general root's 2 K^3.
    xp = backend_of(mats).LOOP_FNS
    floor = math.exp(log_limits(mats.dtype)[0])
    levels = _scaled_levels(mats)
    if levels is None:
        return None
    ua, va = xp.max2(left[..., None, :]), xp.max2(right[..., :, None])
    u, v = xp.exp(left[..., None, :] - ua)[None], xp.exp(right[..., :, None] - va)[None]
    ua, va = ua[None], va[None]
    for p, c in reversed(levels):
        n = p.shape[0]
        half = n // 2
        (a, b), (ca, cb) = _pairs(p, n), _pairs(c, n)
        ub = xp.matmul(u[:half], a)  # (.., 1, K): into the right child
        vb = xp.matmul(b, v[:half])  # (.., K, 1): out of the left child
        if not (xp.smallest(ub) >= floor and xp.smallest(vb) >= floor):
            return None
        su, sv = xp.max2(ub), xp.max2(vb)
        u, ua = (_interleave(u[:half], ub / su, u[half:]),
                 _interleave(ua[:half], (ua[:half] + ca) + xp.log(su), ua[half:]))
        v, va = (_interleave(vb / sv, v[:half], v[half:]),
                 _interleave((va[:half] + cb) + xp.log(sv), va[:half], va[half:]))
    alpha = ops.transpose(xp.log(u) + ua, -2, -1)  # (T, .., K, 1)
    beta = ops.transpose(xp.log(v) + va, -2, -1)  # (T, .., 1, K)
    return alpha + beta


def _log_messages(mats, root):
    # The same rounds in log space, each product a broadcast logsumexp: exact for any entries
    # (-inf included), K^3 exps per product, and nothing read on the host.
    def mm(x, y):
        return semiring_mm(ops.logaddexp, ops.add, x, y)

    levels, p = [], mats
    while p.shape[0] > 1:
        levels.append(p)
        n = p.shape[0]
        a, b = _pairs(p, n)
        q = mm(a, b)
        p = ops.cat([q, p[n - 1:]], 0) if n % 2 else q
    g = root[None]
    for p in reversed(levels):
        n = p.shape[0]
        half = n // 2
        a, b = _pairs(p, n)
        gq = g[:half]
        g = _interleave(mm(gq, ops.transpose(b, -2, -1)), mm(ops.transpose(a, -2, -1), gq),
                        g[half:])
    return g
