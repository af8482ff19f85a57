"""Array einsum in a semiring, in the protocol of opt_einsum's backends.

``opt_einsum.contract(eq, *arrays, backend="funsor_core.einsum.numpy_log")`` imports the
named module and calls its ``einsum(eq, *operands)``, ``tensordot(x, y, axes)`` and
``transpose(x, axes)`` on the pairwise steps of its own plan. The modules
``funsor_core.einsum.numpy_log`` (logsumexp, for funsor's ``funsor.einsum.numpy_log``) and
``funsor_core.einsum.numpy_map`` (max-plus) are faces of the functions here, which work on
numpy, torch and jax arrays alike (they use ``funsor_core.ops``). Each einsum is one planned
semiring contraction (``einsum.contract_arrays``): the log-space kernels never underflow.

Example:
    >>> x, y = np.log(np.arange(1.0, 7.0).reshape(2, 3)), np.zeros(3)
    >>> np.allclose(np.exp(log_tensordot(x, y, axes=1)), np.exp(x).sum(1))
    True
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.contract.einsum import contract_arrays

__all__ = ["semiring_einsum", "semiring_tensordot", "log_einsum", "log_tensordot",
           "map_einsum", "map_tensordot", "transpose"]

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def semiring_einsum(sum_op, prod_op, equation: str, *operands):
    """``einsum(equation, *operands)`` of arrays in the semiring ``(sum_op, prod_op)``; the
    equation names its output after ``->``.

    Example:
        >>> semiring_einsum(ops.max, ops.add, "ab,b->a", np.eye(2), np.array([0.0, 5.0]))
        array([5., 6.])
    """
    lhs, arrow, output = equation.replace(" ", "").partition("->")
    if not arrow:
        raise ValueError(f"semiring einsum {equation!r} needs an explicit output ('->')")
    return contract_arrays(sum_op, prod_op, lhs.split(","), output, list(operands))


def semiring_tensordot(sum_op, prod_op, x, y, axes=2):
    """``tensordot(x, y, axes)`` in the semiring: ``axes`` is a count (the last ``axes`` dims
    of ``x`` against the first of ``y``) or a pair of dim lists; the result has the other
    dims of ``x``, then those of ``y``.

    Example:
        >>> semiring_tensordot(ops.add, ops.mul, np.ones((2, 3)), np.ones((3, 4)), 1).shape
        (2, 4)
    """
    nx, ny = len(x.shape), len(y.shape)
    if isinstance(axes, int):
        axes = (tuple(range(nx - axes, nx)), tuple(range(axes)))
    ax, ay = ((a,) if isinstance(a, int) else tuple(a) for a in axes)
    if len(ax) != len(ay):
        raise ValueError(f"tensordot axes {axes!r}: the two lists differ in length")
    ax = tuple(a % nx for a in ax)
    ay = tuple(a % ny for a in ay)
    if nx + ny - len(ax) > len(_LETTERS):
        raise ValueError(f"tensordot of {nx} and {ny} dims needs more than "
                         f"{len(_LETTERS)} letters")
    letters = iter(_LETTERS)
    lx = [next(letters) for _ in range(nx)]
    ly = [None] * ny
    for a, b in zip(ax, ay):
        ly[b] = lx[a]
    ly = [c if c is not None else next(letters) for c in ly]
    out = [c for k, c in enumerate(lx) if k not in ax] + [c for k, c in enumerate(ly)
                                                          if k not in ay]
    return contract_arrays(sum_op, prod_op, ["".join(lx), "".join(ly)], "".join(out), [x, y])


def transpose(x, axes=None):
    """``x`` with its dims permuted (reversed when ``axes`` is None), as numpy's transpose.

    Example:
        >>> transpose(np.zeros((2, 3))).shape
        (3, 2)
    """
    if axes is None:
        axes = tuple(reversed(range(len(x.shape))))
    return ops.permute(x, tuple(axes))


def log_einsum(equation: str, *operands):
    """Einsum in the log semiring ``(logaddexp, add)``.

    Example:
        >>> float(log_einsum("a,a->", np.zeros(2), np.zeros(2)))
        0.6931471805599453
    """
    return semiring_einsum(ops.logaddexp, ops.add, equation, *operands)


def log_tensordot(x, y, axes=2):
    """Tensordot in the log semiring ``(logaddexp, add)``.

    Example:
        >>> float(log_tensordot(np.zeros(2), np.zeros(2), axes=1))
        0.6931471805599453
    """
    return semiring_tensordot(ops.logaddexp, ops.add, x, y, axes)


def map_einsum(equation: str, *operands):
    """Einsum in the max-plus semiring ``(max, add)``.

    Example:
        >>> float(map_einsum("a,a->", np.array([0.0, 1.0]), np.array([2.0, 0.0])))
        2.0
    """
    return semiring_einsum(ops.max, ops.add, equation, *operands)


def map_tensordot(x, y, axes=2):
    """Tensordot in the max-plus semiring ``(max, add)``.

    Example:
        >>> float(map_tensordot(np.array([0.0, 1.0]), np.array([2.0, 0.0]), axes=1))
        2.0
    """
    return semiring_tensordot(ops.max, ops.add, x, y, axes)
