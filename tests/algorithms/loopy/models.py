"""Small discrete models and their brute-force answers (numpy, by enumeration)."""

from __future__ import annotations

import numpy as np

import funsor_core as fc


def tree_model(rng, integer=False):
    """A tree factor graph over a..e with domains 2, 3, 4, 2, 3: unary, pairwise and one
    ternary factor; ``integer`` log tables (ties)."""
    sizes = {"a": 2, "b": 3, "c": 4, "d": 2, "e": 3}
    scopes = [("a",), ("a", "b"), ("b", "c"), ("c",), ("b", "d", "e"), ("e",)]
    return _model(rng, sizes, scopes, integer)


def grid_model(rng, n=3, coupling=0.5, domain=2):
    """An ``n x n`` grid with unary and pairwise factors (loopy)."""
    sizes = {f"x{i}{j}": domain for i in range(n) for j in range(n)}
    scopes = [(f"x{i}{j}",) for i in range(n) for j in range(n)]
    scopes += [(f"x{i}{j}", f"x{i}{j + 1}") for i in range(n) for j in range(n - 1)]
    scopes += [(f"x{i}{j}", f"x{i + 1}{j}") for i in range(n - 1) for j in range(n)]
    return _model(rng, sizes, scopes, False, scale=coupling)


def _model(rng, sizes, scopes, integer, scale=1.0):
    factors, tables = [], []
    for scope in scopes:
        shape = tuple(sizes[v] for v in scope)
        t = rng.integers(0, 3, size=shape).astype(float) if integer else rng.normal(
            size=shape) * scale
        tables.append((scope, t))
        factors.append(fc.Tensor(t, {v: fc.Bint[sizes[v]] for v in scope}))
    return factors, tables, sizes


def joint(tables, sizes) -> np.ndarray:
    """The joint log table over ``sizes``' variables, in their order, by broadcasting."""
    names = list(sizes)
    out = np.zeros([sizes[v] for v in names])
    for scope, t in tables:
        order = sorted(range(len(scope)), key=lambda p: names.index(scope[p]))
        t = np.transpose(t, order)
        shape = [sizes[v] if v in scope else 1 for v in names]
        out = out + t.reshape(shape)
    return out


def reduce(x, axes, temperature):
    if temperature == 0:
        return np.max(x, axis=axes)
    m = np.max(x / temperature, axis=axes, keepdims=True)
    s = np.log(np.sum(np.exp(x / temperature - m), axis=axes, keepdims=True)) + m
    return temperature * np.squeeze(s, axis=axes)


def brute_force(tables, sizes, temperature=1.0):
    """``(log_z, {name: normalized log marginal})`` by enumeration."""
    j = joint(tables, sizes)
    names = list(sizes)
    all_axes = tuple(range(len(names)))
    log_z = reduce(j, all_axes, temperature)
    marg = {}
    for i, v in enumerate(names):
        m = reduce(j, tuple(a for a in all_axes if a != i), temperature)
        marg[v] = m - reduce(m, (0,), temperature)
    return log_z, marg
