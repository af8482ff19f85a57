"""Enumeration bugs that users reported against funsor and Pyro, as models checked against
enumeration of every joint assignment of the ground (unrolled) model.

- pyro #1460: marginals wrong when a global and local enumerated variables couple across
  plates (and across nested plates);
- pyro #3102: ``compute_marginals`` / ``infer_discrete`` with a plate of size 1;
- pyro #2678: marginals of variables without enumerated ancestors (alone, or local to a plate
  with no global parent).

Each model is answered three ways: ``infer_discrete`` (marginals, MAP, log Z), and funsor's
``compute_marginals`` idiom: ``sum_product`` recorded on an ``AdjointTape``, each factor's
joint marginal ``exp(adjoint[f] + f - log Z)``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import AdjointTape
from funsor_core.algorithms.adjoint import infer_discrete

# A model: {name: size} of variables and plates, and factors as (names, seed); a variable's
# plates are those of every factor it appears in.
MODELS = {
    # pyro #1460: global z couples with local x_i in plate i.
    "global_local": ({"z": 2, "x": 3, "i": 3}, {"i"},
                     [(("z",), 0), (("z", "x", "i"), 1), (("x", "i"), 2)]),
    # pyro #1460, nested: global g, a_i in plate i, b_ij in plates i, j coupled to a_i and g.
    "nested": ({"g": 2, "a": 2, "b": 2, "i": 2, "j": 2}, {"i", "j"},
               [(("g",), 3), (("g", "a", "i"), 4), (("a", "b", "i", "j"), 5),
                (("g", "b", "i", "j"), 6)]),
    # pyro #3102: plates of size 1.
    "batch_one": ({"z": 3, "x": 2, "y": 2, "i": 1, "j": 1}, {"i", "j"},
                  [(("z",), 7), (("z", "x", "i"), 8), (("x", "y", "i", "j"), 9)]),
    # pyro #2678: no enumerated ancestors: u alone, v local to plate i with no global, and
    # w local to i coupled only to v.
    "no_ancestors": ({"u": 3, "v": 2, "w": 3, "i": 2}, {"i"},
                     [(("u",), 10), (("v", "i"), 11), (("v", "w", "i"), 12)]),
}


def tables(model):
    sizes, plates, factors = model
    return [(names, np.random.default_rng(seed).normal(size=[sizes[n] for n in names]))
            for names, seed in factors]


def variable_plates(model):
    sizes, plates, factors = model
    names = {n for f, _ in factors for n in f if n not in plates}
    return {v: sorted(frozenset.intersection(*(frozenset(f) & plates for f, _ in factors
                                               if v in f))) for v in names}


def brute_force(model):
    """The ground variables ``(name, plate index)`` and the log joint over all of them."""
    sizes, plates, _ = model
    vplates = variable_plates(model)
    ground = [(v, idx) for v in sorted(vplates)
              for idx in itertools.product(*(range(sizes[p]) for p in vplates[v]))]
    joint = np.zeros([sizes[v] for v, _ in ground])
    for values in itertools.product(*(range(sizes[v]) for v, _ in ground)):
        value = dict(zip(ground, values))
        total = 0.0
        for names, table in tables(model):
            fplates = [n for n in names if n in plates]
            for where in itertools.product(*(range(sizes[p]) for p in fplates)):
                at = dict(zip(fplates, where))
                total += table[tuple(at[n] if n in plates else
                                     value[(n, tuple(at[p] for p in vplates[n]))]
                                     for n in names)]
        joint[values] = total
    return ground, joint


def marginal(ground, joint, keep):
    """The normalized marginal of the ground variables ``keep``, axes in that order."""
    axes = [ground.index(g) for g in keep]
    rest = tuple(a for a in range(joint.ndim) if a not in axes)
    log_m = np.logaddexp.reduce(joint, axis=rest) if rest else joint
    order = np.argsort(np.argsort(axes))  # reduced array keeps the ground order
    log_m = np.transpose(log_m, order)
    return np.exp(log_m - np.logaddexp.reduce(joint.reshape(-1)))


def funsor_factors(model):
    sizes = model[0]
    return [fc.Tensor(fc.to_data(fc.Tensor(t)), {n: fc.Bint[sizes[n]] for n in names})
            for names, t in tables(model)]


def _np(x):
    return np.asarray(ops.to_numpy(x.data if isinstance(x, fc.Funsor) else x))


@pytest.mark.parametrize("name", list(MODELS))
def test_infer_discrete_marginals_map_and_log_z(name, backend):
    model = MODELS[name]
    sizes, plates, _ = model
    ground, joint = brute_force(model)
    vplates = variable_plates(model)
    factors = funsor_factors(model)
    log_z = infer_discrete(factors, plates, query="log_partition")
    assert np.allclose(_np(log_z), np.logaddexp.reduce(joint.reshape(-1)))
    marginals = infer_discrete(factors, plates, query="marginals")
    best = infer_discrete(factors, plates, query="map")
    argmax = np.unravel_index(np.argmax(joint), joint.shape)
    for k, (v, idx) in enumerate(ground):
        p = marginals[v].align(tuple(vplates[v]) + (v,))
        assert p.inputs == {**{q: fc.Bint[sizes[q]] for q in vplates[v]}, v: fc.Bint[sizes[v]]}
        assert np.allclose(_np(p)[idx], marginal(ground, joint, [(v, idx)]))
        assert _np(best[v].align(tuple(vplates[v])))[idx] == argmax[k]


@pytest.mark.parametrize("name", list(MODELS))
def test_adjoint_factor_marginals(name, backend):
    # funsor's compute_marginals: each factor's adjoint gives the joint marginal of its
    # variables at each index of its plates.
    model = MODELS[name]
    sizes, plates, _ = model
    ground, joint = brute_force(model)
    vplates = variable_plates(model)
    factors = funsor_factors(model)
    eliminate = frozenset(n for f in factors for n in f.inputs)
    with AdjointTape() as tape:
        log_z = fc.sum_product(ops.logaddexp, ops.add, factors, eliminate, frozenset(plates))
    adjoints = tape.adjoint(ops.logaddexp, ops.add, log_z)
    for (names, _), f in zip(tables(model), factors):
        fplates = [n for n in names if n in plates]
        fvars = [n for n in names if n not in plates]
        p = _np((adjoints[f] + f - log_z).exp().align(tuple(names)))
        for where in itertools.product(*(range(sizes[q]) for q in fplates)):
            at = dict(zip(fplates, where))
            keep = [(v, tuple(at[q] for q in vplates[v])) for v in fvars]
            index = tuple(at[n] if n in plates else slice(None) for n in names)
            assert np.allclose(p[index], marginal(ground, joint, keep)), (names, at)


def test_global_local_marginals_under_jax_jit():
    # pyro #1460's model traced once: the answers equal enumeration.
    jax = pytest.importorskip("jax")
    model = MODELS["global_local"]
    ground, joint = brute_force(model)
    sizes, plates, _ = model
    fc.set_backend("jax")
    try:
        arrays = [jax.numpy.asarray(t) for _, t in tables(model)]

        @jax.jit
        def queries(arrays):
            factors = [fc.Tensor(a, {n: fc.Bint[sizes[n]] for n in names})
                       for (names, _), a in zip(tables(model), arrays)]
            m = infer_discrete(factors, plates, query="marginals")
            return m["z"].data, m["x"].align(("i", "x")).data

        z, x = queries(arrays)
    finally:
        fc.set_backend("numpy")
    assert np.allclose(np.asarray(z), marginal(ground, joint, [("z", ())]))
    for i in range(sizes["i"]):
        assert np.allclose(np.asarray(x)[i], marginal(ground, joint, [("x", (i,))]))
