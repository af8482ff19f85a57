"""Synthetic loopy models from the seed papers, shared by the examples and the benchmarks.

``thesis_grid`` is Singh (2014) 7.2.7.1's testbed for anytime BP (Figs 7.7-7.9): an ``n x n``
grid of variables with ``L`` states, unary ``psi_i(v) = gamma(v)`` and pairwise
``psi_ij(v_i, v_j) = gamma(v_i + v_j L)`` log factors (``i`` left of or above ``j``), with

    gamma(k) = k log(1 - p) + log p + eps(k),   p ~ U(0, 1) per factor,   eps ~ N(0, 0.1):

a geometric distribution over the factor's (flattened) table with noise. The text writes
``N(0, 0.1)`` without saying whether 0.1 is the variance or the standard deviation; we take
the standard deviation (``noise_sd``, numpy's ``normal(0, 0.1)``: the smaller noise, so the
geometric shape the text designs for dominates); ``noise_sd=0.1 ** 0.5`` is the variance
reading. On these grids the two readings give the same picture: the pairwise slope ``L log(1 -
p)`` on ``v_j`` pins almost every variable at state 0 unless ``p < ~1/L`` (benchmarks/README.md,
"Figs 7.7-7.9 against the thesis's baselines"). ``p`` is drawn from ``[p_min, 1 - p_min]`` so
that ``log p`` and ``log(1 - p)`` stay finite.

Example:
    >>> factors, (unary, right, down) = thesis_grid(np.random.default_rng(0), n=2, L=3)
    >>> len(factors), unary.shape, right.shape, down.shape
    (8, (2, 2, 3), (2, 1, 3, 3), (1, 2, 3, 3))
"""

from __future__ import annotations

import numpy as np

from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint

__all__ = ["thesis_grid", "grid_name"]


def grid_name(i: int, j: int) -> str:
    """The name of the grid variable in row ``i``, column ``j``.

    Example:
        >>> grid_name(2, 3)
        'x2_3'
    """
    return f"x{i}_{j}"


def thesis_grid(rng, n: int, L: int, *, noise_sd: float = 0.1, p_min: float = 1e-3,
                p_max: float | None = None):
    """Singh (2014) 7.2.7.1's grid (see the module docstring): ``(factors, (unary, right,
    down))``, the factors as log Tensors (unaries, then right and down pairs, row by row)
    and their tables ``unary (n, n, L)``, ``right (n, n-1, L, L)`` (``right[i, j]`` over
    ``(x_{i,j}, x_{i,j+1})``) and ``down (n-1, n, L, L)`` (over ``(x_{i,j}, x_{i+1,j})``).
    ``p ~ U(p_min, p_max)`` (default ``p_max = 1 - p_min``, the text's ``U(0, 1)``); a small
    ``p_max`` (``~ 1 / L``) flattens the factors (not the thesis's text: a variant in which
    most of each domain carries mass).

    ``rng``: a numpy ``Generator`` or an int seed.

    Example:
        >>> from funsor_core.loopy import loopy_bp, thesis_grid
        >>> factors, _ = thesis_grid(np.random.default_rng(0), n=2, L=4)
        >>> dict(factors[4].inputs)
        {'x0_0': Bint[4], 'x0_1': Bint[4]}
        >>> loopy_bp(factors, schedule="residual").beliefs["x1_1"].inputs
        {'x1_1': Bint[4]}
    """
    rng = np.random.default_rng(rng)  # a Generator is returned as it is
    v = np.arange(L)
    p_max = 1.0 - p_min if p_max is None else p_max
    if not (isinstance(n, (int, np.integer)) and isinstance(L, (int, np.integer))
            and n >= 1 and L >= 1 and 0.0 < p_min <= p_max < 1.0):
        raise ValueError(f"thesis_grid needs ints n >= 1 and L >= 1 and 0 < p_min <= p_max "
                         f"< 1 (log p and log(1 - p) finite); got n={n!r}, L={L!r}, "
                         f"p_min={p_min!r}, p_max={p_max!r}")
    pair = v[:, None] + v[None, :] * L  # gamma's argument v_i + v_j L, (v_i, v_j)

    def gamma(k, count):
        # One p per factor, one noise draw per table entry.
        p = rng.uniform(p_min, p_max, size=count + (1,) * k.ndim)
        return k * np.log1p(-p) + np.log(p) + rng.normal(0.0, noise_sd, size=count + k.shape)

    unary, right, down = gamma(v, (n, n)), gamma(pair, (n, n - 1)), gamma(pair, (n - 1, n))
    dom = Bint[L]
    x = grid_name
    factors = [Tensor(unary[i, j], {x(i, j): dom}) for i in range(n) for j in range(n)]
    factors += [Tensor(right[i, j], {x(i, j): dom, x(i, j + 1): dom})
                for i in range(n) for j in range(n - 1)]
    factors += [Tensor(down[i, j], {x(i, j): dom, x(i + 1, j): dom})
                for i in range(n - 1) for j in range(n)]
    return factors, (unary, right, down)
