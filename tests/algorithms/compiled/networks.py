"""Random Bayesian networks with functional CPTs, the rectangle model of Darwiche (2020,
section 5.1), and brute-force enumeration: the oracles of the compiled-elimination tests."""

import numpy as np

import funsor_core as fc
from funsor_core.algorithms.compiled import Functional
from funsor_core.algorithms.compiled.models import (  # noqa: F401  (re-exported)
    random_network,
    rectangle_structure,
)


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


def random_network_arrays(rng, n, frac, max_parents=3, evidence=0.4):
    """``random_network``'s distribution as plain data, for the bulk exactness check:
    ``(scopes, functional outs, numpy arrays, cards)``, no terms built."""
    cards = rng.integers(2, 4, size=n)
    scopes, outs, arrays = [], [], []
    for i in range(n):
        k = int(rng.integers(0, min(i, max_parents) + 1))
        parents = [int(p) for p in rng.choice(i, size=k, replace=False)] if k else []
        shape = [int(cards[p]) for p in parents] + [int(cards[i])]
        if parents and rng.random() < frac:
            table = np.zeros(shape)
            g = rng.integers(0, cards[i], size=shape[:-1])
            np.put_along_axis(table, g[..., None], 1.0, axis=-1)
            outs.append(f"v{i}")
        else:
            table = rng.random(shape)
            table /= table.sum(-1, keepdims=True)
            outs.append(None)
        scopes.append(tuple(f"v{p}" for p in parents) + (f"v{i}",))
        arrays.append(table)
        if rng.random() < evidence:
            scopes.append((f"v{i}",))
            outs.append(None)
            arrays.append(rng.random(int(cards[i])))
    return scopes, outs, arrays, {f"v{i}": int(c) for i, c in enumerate(cards)}


def brute_force_einsum(scopes, arrays, cards, keep=()):
    """The joint summed to ``keep`` by one ``np.einsum`` without a path: numpy's single loop
    over every joint assignment, i.e. enumeration."""
    letters = {n: chr(ord("a") + i) for i, n in enumerate(cards)}
    lhs = ",".join("".join(map(letters.get, s)) for s in scopes)
    return np.einsum(lhs + "->" + "".join(map(letters.get, keep)), *arrays, optimize=False)
