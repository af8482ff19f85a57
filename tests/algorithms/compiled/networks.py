"""Random Bayesian networks with functional CPTs, the rectangle model of Darwiche (2020,
section 5.1), and brute-force enumeration: the oracles of the compiled-elimination tests."""

import numpy as np

import funsor_core as fc
from funsor_core.algorithms.compiled import Functional


def random_network(rng, n, frac, max_parents=3, evidence=0.4):
    """``n`` nodes of 2 or 3 values; a non-root node is functional with probability
    ``frac``; soft evidence on a node with probability ``evidence``; factors shuffled."""
    cards = {f"v{i}": int(rng.integers(2, 4)) for i in range(n)}
    names = list(cards)
    factors = []
    for i, x in enumerate(names):
        k = int(rng.integers(0, min(i, max_parents) + 1))
        parents = [str(p) for p in rng.choice(names[:i], size=k, replace=False)] if k else []
        shape = [cards[p] for p in parents] + [cards[x]]
        inputs = {p: fc.Bint[cards[p]] for p in parents}
        inputs[x] = fc.Bint[cards[x]]
        if parents and rng.random() < frac:
            table = np.zeros(shape)
            g = rng.integers(0, cards[x], size=shape[:-1])
            np.put_along_axis(table, g[..., None], 1.0, axis=-1)
            factors.append(fc.functional(fc.Tensor(table, inputs), x))
        else:
            table = rng.random(shape)
            factors.append(fc.Tensor(table / table.sum(-1, keepdims=True), inputs))
        if rng.random() < evidence:
            factors.append(fc.Tensor(rng.random(cards[x]), {x: fc.Bint[cards[x]]}))
    return [factors[k] for k in rng.permutation(len(factors))], cards


def term(f):
    return f.term if isinstance(f, Functional) else f


def to_log(factors):
    """The same factors in log space (functional ones declared in log space)."""
    out = []
    with np.errstate(divide="ignore"):
        for f in factors:
            t = term(f)
            logt = fc.Tensor(np.log(t.data), t.inputs)
            out.append(fc.functional(logt, f.out, log=True) if isinstance(f, Functional)
                       else logt)
    return out


def brute_force(factors, cards, keep=()):
    """Multiply every factor broadcast to all names, then sum all but ``keep`` (in order)."""
    names = list(cards)
    idx = {n: i for i, n in enumerate(names)}
    joint = np.ones([cards[n] for n in names])
    for f in factors:
        t = term(f)
        fn = list(t.inputs)
        data = np.transpose(t.data, np.argsort([idx[n] for n in fn]))
        shape = [cards[n] if n in fn else 1 for n in names]
        joint = joint * data.reshape(shape)
    axes = tuple(i for i, n in enumerate(names) if n not in keep)
    out = joint.sum(axes)
    kept = [n for n in names if n in keep]
    return np.transpose(out, [kept.index(n) for n in keep])


def rectangle_structure(n):
    """The rectangle model's factors as structure: (scopes, functional outs, sizes).

    ``row, col, height, width`` have n values, ``label`` (tall or wide) is binary; ``r_i``
    (row i is on) is a function of ``row, height``, ``c_j`` of ``col, width``, and pixel
    ``p_i_j`` depends on ``r_i, c_j``."""
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
