"""Array helpers that funsor 0.4.8's tests import from ``funsor.gaussian`` by name.

``_compress_rank``, ``_inverse_cholesky``, ``_split_real_inputs``, ``_norm2``, ``_vm`` and
``_mv`` are private in funsor, but its test suite reaches for them, so the face
``funsor_core.gaussian`` re-exports them under the same names. They are thin wrappers of our
own square-root algebra (``atoms.gaussian.linalg``, ``atoms.gaussian.arrays``) and use
``funsor_core.ops`` only, so they run on every backend, batched on the left, and under
``jax.jit``.

Example:
    >>> w, s, shift = _compress_rank(np.array([1.0, 3.0]), np.array([[1.0, 1.0]]))
    >>> s, w, float(shift)  # -0.5((x-1)^2 + (x-3)^2) == -0.5 (sqrt2 x - 2 sqrt2)^2 - 1
    (array([[1.41421356]]), array([2.82842712]), -1.0)
"""

from __future__ import annotations

from typing import Any

from funsor_core import ops
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm

__all__ = ["_compress_rank", "_inverse_cholesky", "_mv", "_norm2", "_split_real_inputs", "_vm"]

Array = Any  # an array of any registered backend

COMPRESS_METHODS = ("qr", "cholesky")


def _norm2(vec: Array) -> Array:
    """The squared Euclidean norm over the last dim, batched on the left.

    Example:
        >>> _norm2(np.array([[3.0, 4.0], [1.0, 0.0]]))
        array([25.,  1.])
    """
    return la.sumsq(vec)


def _vm(vec: Array, mat: Array) -> Array:
    """The batched vector-matrix product ``vec @ mat`` (batch + (n,), batch + (n, m)).

    Example:
        >>> _vm(np.array([1.0, 2.0]), np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]))
        array([1., 2., 3.])
    """
    return la.vm(vec, mat)


def _mv(mat: Array, vec: Array) -> Array:
    """The batched matrix-vector product ``mat @ vec`` (batch + (n, m), batch + (m,)).

    Example:
        >>> _mv(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 1.0]))
        array([3., 7.])
    """
    return la.mv(mat, vec)


def _inverse_cholesky(precision: Array) -> Array:
    """The lower Cholesky factor ``L`` of ``precision^{-1}`` (``L @ L.T == precision^{-1}``);
    see ``linalg.inverse_cholesky``.

    Example:
        >>> p = np.array([[2.0, 1.0], [1.0, 2.0]])
        >>> l = _inverse_cholesky(p)
        >>> np.allclose(l @ l.T, np.linalg.inv(p)), float(l[0, 1])
        (True, 0.0)
    """
    return la.inverse_cholesky(precision)


def _compress_rank(white_vec: Array, prec_sqrt: Array, method: str | bool = "qr"):
    """Bring a square-root factor of rank >= dim down to rank dim, splitting off a constant.

    Returns ``(white_vec, prec_sqrt, shift)`` with the same precision ``prec_sqrt @
    prec_sqrt.T`` and ``-0.5 ||x @ S - w||^2 == -0.5 ||x @ S' - w'||^2 + shift`` for every
    ``x``; ``shift`` has the batch shape.

    Args:
        white_vec: batch + (rank,).
        prec_sqrt: batch + (dim, rank), with rank >= dim for a square result (a factor of rank
            <= dim comes back unchanged with ``shift = 0``).
        method: ``"qr"`` (default) rotates ``[S' | w]`` by QR: any ``S`` works, also a
            singular or zero one. ``"cholesky"`` factors the precision ``S S' = L L'`` and
            solves ``L w' = S w``: cheaper, but the precision must be positive definite.
            ``True``/``False`` (funsor's ``assume_full_rank``) mean ``"cholesky"``/``"qr"``.

    Example:
        >>> s = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
        >>> w = np.array([1.0, 2.0, 3.0])
        >>> w2, s2, shift = _compress_rank(w, s, "cholesky")
        >>> x = np.array([0.3, -0.7])
        >>> bool(np.isclose(-0.5 * _norm2(x @ s - w), -0.5 * _norm2(x @ s2 - w2) + shift))
        True
    """
    if isinstance(method, bool):
        method = "cholesky" if method else "qr"
    if method not in COMPRESS_METHODS:
        raise ValueError(f"_compress_rank method must be one of {COMPRESS_METHODS}, got "
                         f"{method!r}")
    dim, rank = prec_sqrt.shape[-2:]
    if method == "qr" or rank < dim:
        # QR of [S' | w] with an extra unit row (linalg.triangularize): a rank-
        # deficient S gives zero rows of R, never a failed factorization.
        return gm.compress(white_vec, prec_sqrt)
    _, (white_vec, prec_sqrt) = la.broadcast((white_vec, 1), (prec_sqrt, 2))
    # -0.5||xS - w||^2 = -0.5 x'SS'x + x'Sw - 0.5||w||^2. With S S' = L L' and L w' = S w,
    # the first two terms are those of -0.5||xL - w'||^2, whose constant is -0.5||w'||^2;
    # the difference of the constants is the shift.
    info_vec = la.mv(prec_sqrt, white_vec)
    new_prec_sqrt = ops.cholesky(ops.matmul(prec_sqrt, la.mT(prec_sqrt)))
    new_white_vec = ops.getitem(
        ops.triangular_solve(ops.getitem(info_vec, (Ellipsis, None)), new_prec_sqrt),
        (Ellipsis, 0))
    shift = ops.mul(0.5, ops.sub(la.sumsq(new_white_vec), la.sumsq(white_vec)))
    return new_white_vec, new_prec_sqrt, shift


def _split_real_inputs(inputs: dict, lhs_keys, prototype: Array):
    """Indices ``(lhs, rhs)`` into a Gaussian's flat real coordinates: ``lhs`` those of the
    real inputs named in ``lhs_keys``, ``rhs`` those of the other real inputs.

    Each is a slice when its coordinates are one contiguous run and the two runs do not
    interleave, else an integer index array of ``prototype``'s backend, so
    ``prec_sqrt[..., lhs, :]`` selects the rows either way.

    Example:
        >>> inputs = {"i": fc.Bint[2], "a": fc.Real, "b": fc.Reals[2], "c": fc.Real}
        >>> _split_real_inputs(inputs, "a", np.zeros(()))
        (slice(0, 1, None), slice(1, 4, None))
        >>> _split_real_inputs(inputs, "ac", np.zeros(()))
        (array([0, 3]), array([1, 2]))
    """
    lhs, rhs, start = [], [], 0
    for name, domain in inputs.items():
        if domain.dtype == "real":
            stop = start + domain.num_elements
            (lhs if name in lhs_keys else rhs).extend(range(start, stop))
            start = stop
    if not lhs or not rhs:
        real = {k: str(d) for k, d in inputs.items() if d.dtype == "real"}
        raise ValueError(f"cannot split the real inputs {real} by {lhs_keys!r}: both sides "
                         "must hold at least one real input")
    if lhs == list(range(lhs[0], lhs[-1] + 1)) and rhs == list(range(rhs[0], rhs[-1] + 1)):
        return slice(lhs[0], lhs[-1] + 1), slice(rhs[0], rhs[-1] + 1)  # cheap views
    return ops.new_array(prototype, lhs), ops.new_array(prototype, rhs)
