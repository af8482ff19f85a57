"""Pólya urn arithmetic of Bayesian allocation models (Cemgil et al., sections 3-4).

Integrating a Dirichlet ``D(alpha)`` out of a multinomial leaves a Pólya urn: the counts ``S``
of a family have probability ``B(alpha + S) / B(alpha)`` per parent configuration, where
``log B(v) = sum_i lgamma(v_i) - lgamma(sum_i v_i)``. Integrating the Gamma ``GA(a, b)``
intensity out of the Poisson total leaves a negative binomial on ``S_+``. These are the pure
functions on host (numpy, float64) arrays that the model (``model.py``), the exact enumerator
and the variational bound (``vb.py``) share.

Example:
    >>> round(float(log_total_count(4, 1.0, 1.0)), 5)  # NB(4; a=1, p=1/2) = 2**-5
    -3.46574
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from funsor_core import ops

__all__ = ["compositions", "lgamma_shifted", "log_dirichlet_multinomial", "log_total_count",
           "num_completions"]


def lgamma(x) -> np.ndarray:
    """``log Gamma(x)`` of a host array (the numpy backend's kernel, no scipy)."""
    return ops.lgamma(np.asarray(x, dtype=np.float64))


def lgamma_shifted(shift: float, counts) -> np.ndarray:
    """``log Gamma(shift + counts)``; integer counts (allocation tensors) read a table of
    ``math.lgamma`` over ``0..max``, ten times faster than the elementwise kernel.

    Example:
        >>> lgamma_shifted(1.0, np.array([0, 3])).tolist()  # log 0!, log 3!
        [0.0, 1.791759469228055]
    """
    counts = np.asarray(counts)
    if counts.dtype.kind in "iu" and counts.size:
        table = np.array([math.lgamma(shift + n) for n in range(int(counts.max()) + 1)])
        return table[counts]
    return lgamma(shift + counts.astype(np.float64))


def log_total_count(total, a: float, b: float):
    """``log Pr(S_+ = total)`` for ``S_+ ~ Poisson(lambda)``, ``lambda ~ Gamma(a, b)`` (rate b):
    ``Gamma(a + T) / (Gamma(a) T!) * b^a / (b + 1)^(a + T)``.

    Example:
        >>> round(float(np.exp(log_total_count(0, 2.0, 1.0))), 4)  # (b / (b + 1))^a
        0.25
    """
    total = np.asarray(total)
    return (lgamma_shifted(a, total) - math.lgamma(a) - lgamma_shifted(1.0, total)
            + a * math.log(b) - (a + total) * math.log(b + 1.0))


def log_dirichlet_multinomial(counts, alpha: float, axis: int = 0, batch_ndim: int = 0):
    """``sum over parent configurations of log B(alpha + S) / B(alpha)`` for the family counts
    ``counts`` whose child axis is ``axis`` (after ``batch_ndim`` batch axes) and whose
    every cell has the prior pseudo-count ``alpha`` (BDeu and flat priors are constant per
    family). The child's cardinality times ``alpha`` is the parent cell's pseudo-count.

    Example:
        >>> # one draw from a 2-colour urn with alpha = 1 each: probability 1/2
        >>> round(float(np.exp(log_dirichlet_multinomial(np.array([1.0, 0.0]), 1.0))), 6)
        0.5
    """
    counts = np.asarray(counts)
    child = batch_ndim + axis
    size = counts.shape[child]
    cells = tuple(range(batch_ndim, counts.ndim))
    parent_counts = counts.sum(child)
    parent_axes = tuple(range(batch_ndim, parent_counts.ndim))
    out = (lgamma_shifted(alpha, counts) - math.lgamma(alpha)).sum(cells)
    out = out - (lgamma_shifted(size * alpha, parent_counts)
                 - math.lgamma(size * alpha)).sum(parent_axes)
    return out


def compositions(total: int, parts: int) -> np.ndarray:
    """Every way to write ``total`` as an ordered sum of ``parts`` nonnegative integers, as the
    rows of an int array (``C(total + parts - 1, parts - 1)`` rows), by stars and bars.

    Example:
        >>> compositions(2, 2).tolist()
        [[0, 2], [1, 1], [2, 0]]
    """
    if parts == 1:
        return np.array([[total]], dtype=np.int64)
    rows = []
    for first in range(total + 1):
        rest = compositions(total - first, parts - 1)
        rows.append(np.concatenate([np.full((len(rest), 1), first), rest], axis=1))
    return np.concatenate(rows, axis=0)


def num_completions(counts: Sequence[int], parts: int) -> int:
    """How many allocation tensors have the visible counts ``counts`` when each visible cell
    splits over ``parts`` hidden cells: the product of ``C(x + parts - 1, parts - 1)``.

    Example:
        >>> num_completions([2, 1], 3)
        18
    """
    return math.prod(math.comb(int(x) + parts - 1, parts - 1) for x in counts)
