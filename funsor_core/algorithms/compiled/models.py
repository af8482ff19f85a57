"""Model generators of the compiled-elimination experiments (Darwiche 2020): random Bayesian
networks with a fraction of functional CPTs, and the rectangle model's structure. Shared by
the tests, the benchmark and the example."""

from __future__ import annotations

import numpy as np

from funsor_core.algorithms.compiled.functional import functional
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint


def random_network(rng: np.random.Generator, n: int, frac: float, max_parents: int = 3,
                   evidence: float = 0.4, shuffle: bool = True):
    """``(factors, cards)``: ``n`` nodes of 2 or 3 values, each with up to ``max_parents``
    earlier parents; a non-root node is functional with probability ``frac``; soft evidence
    on a node with probability ``evidence``; the factors shuffled if ``shuffle``.

    Example:
        >>> factors, cards = random_network(np.random.default_rng(0), 4, 1.0, evidence=0.0)
        >>> len(factors), sorted(cards)
        (4, ['v0', 'v1', 'v2', 'v3'])
    """
    cards = {f"v{i}": int(rng.integers(2, 4)) for i in range(n)}
    names = list(cards)
    factors = []
    for i, x in enumerate(names):
        k = int(rng.integers(0, min(i, max_parents) + 1))
        parents = [str(p) for p in rng.choice(names[:i], size=k, replace=False)] if k else []
        shape = [cards[p] for p in parents] + [cards[x]]
        inputs = {p: Bint[cards[p]] for p in parents}
        inputs[x] = Bint[cards[x]]
        if parents and rng.random() < frac:
            table = np.zeros(shape)
            g = rng.integers(0, cards[x], size=shape[:-1])
            np.put_along_axis(table, g[..., None], 1.0, axis=-1)
            factors.append(functional(Tensor(table, inputs), x))
        else:
            table = rng.random(shape)
            factors.append(Tensor(table / table.sum(-1, keepdims=True), inputs))
        if evidence and rng.random() < evidence:
            factors.append(Tensor(rng.random(cards[x]), {x: Bint[cards[x]]}))
    if shuffle:
        factors = [factors[k] for k in rng.permutation(len(factors))]
    return factors, cards


def rectangle_structure(n: int):
    """The rectangle model (Darwiche 2020, section 5.1) of an ``n x n`` image as structure:
    ``(scopes, functional outs, sizes)``. ``row, col, height, width`` have n values, ``label``
    (tall or wide) is binary; ``r_i`` (row i is on) is a function of ``row, height``, ``c_j``
    of ``col, width``, and pixel ``p_i_j`` depends on ``r_i, c_j``.

    Example:
        >>> scopes, outs, sizes = rectangle_structure(8)
        >>> len(scopes), sum(o is not None for o in outs)
        (85, 16)
    """
    sizes = {"label": 2, "row": n, "col": n, "height": n, "width": n}
    scopes = [("label",), ("row",), ("col",), ("label", "row", "height"),
              ("label", "col", "width")]
    outs = [None] * 5
    for i in range(n):
        sizes[f"r{i}"] = sizes[f"c{i}"] = 2
        scopes += [("row", "height", f"r{i}"), ("col", "width", f"c{i}")]
        outs += [f"r{i}", f"c{i}"]
    for i in range(n):
        for j in range(n):
            sizes[f"p{i}_{j}"] = 2
            scopes.append((f"r{i}", f"c{j}", f"p{i}_{j}"))
            outs.append(None)
    return scopes, outs, sizes
