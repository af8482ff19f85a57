"""Ties in the max-plus paths outside chains: MAP (``infer_discrete(query="map")``), the k
best assignments, and ``forward_backward`` under ``ops.max`` through plates (Viterbi of a
plated HMM). Integer scores make ties common; the oracle is brute-force enumeration of every
assignment of the unrolled model in numpy: a returned assignment must score the optimum (not
merely match one argmax), and the k best must be distinct and score what they report."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import DiscreteModel, argmax_approximate
from interpretations import lazy
from tests.algorithms.adjoint.test_adjoint_discrete import (
    _index,
    brute_force,
    random_graph,
    used_plates,
)


def _np(x):
    return np.asarray(ops.to_numpy(x.data if isinstance(x, fc.Funsor) else x))


def tied_graph(seed: int):
    """A random plated graph (``random_graph``) whose log factors are integers in {-2, -1, 0}:
    most models have several optimal and several k-th best assignments."""
    tables, plate_size, size, ordinal = random_graph(seed)
    rng = np.random.default_rng(1000 + seed)
    tables = [(p, s, rng.integers(-2, 1, size=t.shape).astype(float)) for p, s, t in tables]
    return tables, plate_size, size, ordinal


def factors_of(tables, plate_size, size, wrap=fc.numeric_array):
    return [fc.Tensor(wrap(t), {**{p: fc.Bint[plate_size[p]] for p in fp},
                                **{v: fc.Bint[size[v]] for v in scope}})
            for fp, scope, t in tables]


def score_of(assignment: dict, copies, ordinal, joint, rank=()):
    """The brute-force joint score of a returned assignment (values per variable copy)."""
    index = tuple(int(_np(assignment[v])[rank + _index((v, w), ordinal)]) for v, w in copies)
    return joint[index], index


# numpy sweeps twelve tied graphs, torch four; jax four under jax.jit below (eager jax
# dispatches op by op, seconds per graph).
CASES = [("numpy", s) for s in range(12)] + [("torch", s) for s in range(4)]


@pytest.mark.parametrize("backend_name, seed", CASES)
def test_map_and_kbest_with_ties_score_the_optimum(backend_name, seed):
    pytest.importorskip(backend_name)
    fc.set_backend(backend_name)
    try:
        tables, plate_size, size, ordinal = tied_graph(seed)
        copies, joint = brute_force(tables, plate_size, size, ordinal)
        model = DiscreteModel(factors_of(tables, plate_size, size), used_plates(tables))
        best, _ = score_of(model.map(), copies, ordinal, joint)
        assert best == joint.max()
        assert _np(model.map_score()) == joint.max()

        k = 6
        scores, top = model.kbest(k)
        expected = np.sort(joint.reshape(-1))[::-1][:k]
        assert _np(scores).tolist() == expected.tolist()
        seen = set()
        for r in range(len(expected)):
            value, index = score_of(top, copies, ordinal, joint, (r,))
            assert value == expected[r], (r, index)
            seen.add(index)
        assert len(seen) == len(expected)  # k distinct assignments
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("seed", range(4))
def test_map_with_ties_under_jax_jit(seed):
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        tables, plate_size, size, ordinal = tied_graph(seed)
        copies, joint = brute_force(tables, plate_size, size, ordinal)

        @jax.jit
        def map_of(arrays):
            fs = factors_of([(p, s, a) for (p, s, _), a in zip(tables, arrays)],
                            plate_size, size, wrap=lambda a: a)
            model = DiscreteModel(fs, used_plates(tables))
            return {k: v.data for k, v in model.map().items()}, model.map_score().data

        points, score = map_of([jax.numpy.asarray(t) for _, _, t in tables])
        best = {k: fc.Tensor(v, {}) for k, v in points.items()}
        assert score_of(best, copies, ordinal, joint)[0] == joint.max() == score
    finally:
        fc.set_backend("numpy")


def plated_hmm(seed: int, N: int = 2, T: int = 3, K: int = 2, M: int = 2):
    """N sequences (plate ``n``) of a K-state chain of length T, unrolled into variables
    ``x0 .. x{T-1}`` inside the plate, whose transitions depend on a global mode ``m``
    (M values): integer scores, so Viterbi paths tie."""
    rng = np.random.default_rng(seed)
    ints = lambda *shape: rng.integers(-2, 1, size=shape).astype(float)  # noqa: E731
    mode, init, trans, obs = ints(M), ints(N, K), ints(M, K, K), ints(N, T, K)
    return mode, init, trans, obs


def _hmm_factors(mode, init, trans, obs):
    M, (N, T, K) = len(mode), obs.shape
    n, m = {"n": fc.Bint[N]}, {"m": fc.Bint[M]}
    x = [{f"x{t}": fc.Bint[K]} for t in range(T)]
    factors = [fc.Tensor(fc.numeric_array(mode), m),
               fc.Tensor(fc.numeric_array(init), {**n, **x[0]})]
    for t in range(T):
        factors.append(fc.Tensor(fc.numeric_array(obs[:, t]), {**n, **x[t]}))
        if t:
            # The transition is shared by the sequences, but lives in the plate (as in
            # Pyro): without n, x{t} would be one global variable.
            shared = np.broadcast_to(trans[:, None], (M, N, K, K)).copy()
            factors.append(fc.Tensor(fc.numeric_array(shared), {**m, **n, **x[t - 1], **x[t]}))
    return factors


def _hmm_brute_force(mode, init, trans, obs):
    # Every (m, path of sequence 0, ..., path of sequence N-1): the joint score table.
    M, (N, T, K) = len(mode), obs.shape
    paths = list(itertools.product(range(K), repeat=T))
    joint = {}
    for m in range(M):
        for choice in itertools.product(paths, repeat=N):
            s = mode[m]
            for i, path in enumerate(choice):
                s += init[i, path[0]] + sum(obs[i, t, path[t]] for t in range(T))
                s += sum(trans[m, path[t - 1], path[t]] for t in range(1, T))
            joint[(m, choice)] = s
    return joint


@pytest.mark.parametrize("backend_name, seed", [("numpy", s) for s in range(6)]
                         + [("torch", s) for s in range(3)])
def test_viterbi_through_plates_with_ties_by_forward_backward(backend_name, seed):
    # forward_backward(max, add) of the plated elimination under argmax_approximate: the
    # points it places score the brute-force optimum (jax: the MAP test under jax.jit).
    pytest.importorskip(backend_name)
    fc.set_backend(backend_name)
    try:
        _viterbi_through_plates(seed)
    finally:
        fc.set_backend("numpy")


def _viterbi_through_plates(seed):
    mode, init, trans, obs = plated_hmm(seed)
    factors = _hmm_factors(mode, init, trans, obs)
    T = obs.shape[1]
    names = frozenset({"m", "n"} | {f"x{t}" for t in range(T)})
    with lazy:
        root = fc.sum_product(ops.max, ops.add, factors, names, frozenset({"n"}))
    with argmax_approximate:
        value, adj = fc.forward_backward(ops.max, ops.add, root)
    points = {}
    for f in factors:
        points.update(fc.extract_samples(adj[f]))
    joint = _hmm_brute_force(mode, init, trans, obs)
    m = int(_np(points["m"]))
    paths = tuple(tuple(int(_np(points[f"x{t}"])[i]) for t in range(T))
                  for i in range(obs.shape[0]))
    assert joint[(m, paths)] == max(joint.values()) == _np(value)


@pytest.mark.parametrize("seed", range(3))
def test_plated_hmm_kbest_with_ties(seed):
    mode, init, trans, obs = plated_hmm(seed)
    T = obs.shape[1]
    scores, top = DiscreteModel(_hmm_factors(mode, init, trans, obs), {"n"}).kbest(5)
    joint = _hmm_brute_force(mode, init, trans, obs)
    expected = sorted(joint.values(), reverse=True)[:5]
    assert _np(scores).tolist() == expected
    found = set()
    for r in range(5):
        key = (int(_np(top["m"])[r]), tuple(tuple(int(_np(top[f"x{t}"])[r, i])
                                                  for t in range(T))
                                            for i in range(obs.shape[0])))
        assert joint[key] == expected[r]
        found.add(key)
    assert len(found) == 5
