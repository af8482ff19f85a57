"""MAP and k best of concrete Tensor factors replayed from the planned schedule (h115).

``infer_discrete``'s ``map`` and ``kbest`` on concrete arrays run the max-product schedule on
the arrays (``adjoint/scheduled.py``) instead of recording a tape. Oracle: enumeration of
every joint assignment of the unrolled model (one copy of a variable per index of its
plates), in numpy float64; and the tape's k-best (``kbest_from_tape``) on the same factors.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import AdjointTape, kbest_from_tape
from funsor_core.algorithms.eliminate.plated import sum_product

SIZES = {"a": 2, "b": 3, "c": 2, "d": 2, "i": 2, "j": 2}
PLATES = frozenset("ij")
# a, b global; c local to plate i, d local to plate j; observations in i x j
SPECS = [("a",), ("a", "b"), ("i", "b", "c"), ("c", "i", "j"), ("a", "j", "d"), ("d", "j")]


def _model(seed, ties=False):
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=tuple(SIZES[n] for n in names)) for names in SPECS]
    if ties:  # few distinct values: many equal scores
        arrays = [np.round(x) for x in arrays]
    return arrays


def _enumerate(arrays):
    # every joint assignment of the unrolled copies: (score, {name: values over its plates})
    var_plates = {v: tuple(sorted(PLATES.intersection(*[set(s) for s in SPECS if v in s])))
                  for s in SPECS for v in s if v not in PLATES}
    copies = [(v, idx) for v, ps in sorted(var_plates.items())
              for idx in itertools.product(*(range(SIZES[p]) for p in ps))]
    out = []
    for values in itertools.product(*(range(SIZES[v]) for v, _ in copies)):
        at = dict(zip(copies, values))
        total = 0.0
        for names, x in zip(SPECS, arrays):
            ps = [n for n in names if n in PLATES]
            for pidx in itertools.product(*(range(SIZES[p]) for p in ps)):
                plate_at = dict(zip(ps, pidx))
                key = tuple(plate_at[n] if n in PLATES else
                            at[(n, tuple(plate_at[p] for p in var_plates[n]))] for n in names)
                total += x[key]
        out.append((total, at))
    return out, var_plates


def _factors(arrays):
    return [fc.Tensor(fc.numeric_array(x), {n: fc.Bint[SIZES[n]] for n in names})
            for names, x in zip(SPECS, arrays)]


def _score_of(arrays, answer, rank=None):
    # the total score of an answered assignment (values with plate inputs), recomputed
    total = 0.0
    for names, x in zip(SPECS, arrays):
        ps = [n for n in names if n in PLATES]
        for pidx in itertools.product(*(range(SIZES[p]) for p in ps)):
            plate_at = dict(zip(ps, pidx))
            key = []
            for n in names:
                if n in PLATES:
                    key.append(plate_at[n])
                    continue
                t = answer[n]
                data = ops.to_numpy(t.data)
                if rank is not None:
                    data = data[rank]
                sub = tuple(plate_at[p] for p in t.inputs if p in PLATES)
                key.append(int(data[sub]))
            total += x[tuple(key)]
    return total


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("seed,ties", [(0, False), (1, False), (2, True)])
def test_map_and_kbest_by_enumeration(backend, seed, ties):
    pytest.importorskip(backend)
    arrays = _model(seed, ties)
    brute, _ = _enumerate(arrays)
    best = np.sort([s for s, _ in brute])[::-1]
    fc.set_backend(backend)
    try:
        fs = _factors(arrays)
        found = fc.infer_discrete(fs, PLATES, query="map")
        assert np.isclose(_score_of(arrays, found), best[0])
        for k in (1, 4, 7):
            scores, top = fc.infer_discrete(fs, PLATES, query="kbest", k=k)
            scores = ops.to_numpy(scores.data)
            np.testing.assert_allclose(scores, best[:k], rtol=1e-12)
            for r in range(k):  # each assignment has the score reported for it
                assert np.isclose(_score_of(arrays, top, r), scores[r])
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("k", [1, 3])
def test_same_as_the_tape(k):
    # The tape's k-best on the recorded max-product terms: the same scores and assignments.
    fs = _factors(_model(3))
    with AdjointTape() as tape:
        root = sum_product(ops.max, ops.add, fs, frozenset(SIZES), PLATES)
    want, _ = kbest_from_tape(tape, root, k)
    scores, top = fc.infer_discrete(fs, PLATES, query="kbest", k=k)
    np.testing.assert_allclose(scores.data, want, rtol=1e-12)
    for r in range(k):
        assert np.isclose(_score_of(_model(3), top, r), want[r])


def _brute_marginals(arrays):
    brute, var_plates = _enumerate(arrays)
    scores = np.array([s for s, _ in brute])
    log_z = np.logaddexp.reduce(scores)
    w = np.exp(scores - log_z)
    marg = {v: np.zeros(tuple(SIZES[p] for p in ps) + (SIZES[v],))
            for v, ps in var_plates.items()}
    for wi, (_, at) in zip(w, brute):
        for (v, idx), x in at.items():
            marg[v][idx + (x,)] += wi
    entropy = -float(np.sum(np.where(w > 0, w * np.log(np.where(w > 0, w, 1.0)), 0.0)))
    return marg, entropy, var_plates


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("seed,zeros,dtype", [(0, False, "float64"), (1, True, "float64"),
                                              (2, True, "float32")])
def test_marginals_and_entropy_by_enumeration(backend, seed, zeros, dtype):
    # zeros: -inf log factors (impossible values), also whole plate slices of an observation
    pytest.importorskip(backend)
    arrays = _model(seed)
    if zeros:
        arrays[3][1, 0, :] = -np.inf  # c = 1 is impossible in slice i = 0
        arrays[1][0, 2] = -np.inf
    marg, entropy, var_plates = _brute_marginals(arrays)
    fc.set_backend(backend)
    try:
        fs = [fc.Tensor(fc.numeric_array(x.astype(dtype)), t.inputs)
              for x, t in zip(arrays, _factors(arrays))]
        got = fc.infer_discrete(fs, PLATES, query="marginals")
        tol = 1e-5 if dtype == "float32" else 1e-10
        for v, want in marg.items():
            assert tuple(got[v].inputs) == var_plates[v] + (v,)
            assert str(got[v].data.dtype).endswith(dtype)
            np.testing.assert_allclose(ops.to_numpy(got[v].data), want, atol=tol)
        h = fc.infer_discrete(fs, PLATES, query="entropy")
        assert np.isclose(float(ops.to_numpy(h.data)), entropy, rtol=tol)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_samples_follow_the_joint_posterior(backend):
    # The frequencies of whole joint assignments (every plate copy) against their posterior
    # probabilities by enumeration: 96 assignments, 20,000 draws (a cell's sd <= 0.0035).
    pytest.importorskip(backend)
    arrays = _model(4)
    arrays[3][1, 0, :] = -np.inf
    brute, _ = _enumerate(arrays)
    scores = np.array([s for s, _ in brute])
    want = np.exp(scores - np.logaddexp.reduce(scores))
    index = {tuple(sorted(at.items())): k for k, (_, at) in enumerate(brute)}
    fc.set_backend(backend)
    try:
        n = 20000
        draws = fc.infer_discrete(_factors(arrays), PLATES, query="sample", num_samples=n,
                                  rng_key=5, sample_name="s")
        data = {v: ops.to_numpy(t.data) for v, t in draws.items()}
        assert all(tuple(t.inputs)[0] == "s" for t in draws.values())
        counts = np.zeros(len(brute))
        for r in range(n):
            at = {}
            for v, t in draws.items():
                for idx in itertools.product(*(range(SIZES[p]) for p in tuple(t.inputs)[1:])):
                    at[(v, idx)] = int(data[v][(r,) + idx])
            counts[index[tuple(sorted(at.items()))]] += 1
        np.testing.assert_allclose(counts / n, want, atol=0.02)
        again = fc.infer_discrete(_factors(arrays), PLATES, query="sample", num_samples=n,
                                  rng_key=5, sample_name="s")
        assert all(np.array_equal(ops.to_numpy(again[v].data), data[v]) for v in data)
    finally:
        fc.set_backend("numpy")


def test_a_factor_given_twice_and_a_constant():
    # The same Tensor twice counts twice (the joint is 2 f + g + c); a factor with no inputs
    # only shifts log Z. Oracle: the 3 x 2 joint table, normalized in numpy.
    rng = np.random.default_rng(6)
    f = fc.Tensor(rng.normal(size=3), {"x": fc.Bint[3]})
    g = fc.Tensor(rng.normal(size=(3, 2)), {"x": fc.Bint[3], "y": fc.Bint[2]})
    c = fc.Tensor(np.array(0.7))
    joint = 2 * f.data[:, None] + g.data + 0.7
    p = np.exp(joint - np.logaddexp.reduce(joint.ravel()))
    got = fc.infer_discrete([f, f, g, c], query="marginals")
    np.testing.assert_allclose(got["x"].data, p.sum(1), atol=1e-12)
    np.testing.assert_allclose(got["y"].data, p.sum(0), atol=1e-12)
    h = fc.infer_discrete([f, f, g, c], query="entropy")
    assert np.isclose(float(h.data), -(p * np.log(p)).sum(), atol=1e-12)
    best = fc.infer_discrete([f, f, g, c], query="map")
    assert (int(best["x"].data), int(best["y"].data)) == np.unravel_index(joint.argmax(), (3, 2))


@pytest.mark.parametrize("path", ["torch_grad", "jax_jit"])
def test_a_factor_given_twice_on_the_tape(path):
    # The tape path (autograd-carrying torch factors; jax under jit) with the same Tensor
    # twice: the joint is 2 f + g. Oracle: the normalized 3 x 2 joint table in numpy.
    rng = np.random.default_rng(7)
    fv, gv = rng.normal(size=3), rng.normal(size=(3, 2))
    joint = 2 * fv[:, None] + gv
    p = np.exp(joint - np.logaddexp.reduce(joint.ravel()))
    if path == "torch_grad":
        torch = pytest.importorskip("torch")
        fc.set_backend("torch")
        f = fc.Tensor(torch.tensor(fv, requires_grad=True), {"x": fc.Bint[3]})
        g = fc.Tensor(torch.tensor(gv), {"x": fc.Bint[3], "y": fc.Bint[2]})
        run = fc.infer_discrete
    else:
        jax = pytest.importorskip("jax")
        fc.set_backend("jax")
        f0 = jax.numpy.asarray(fv, dtype="float32")
        g0 = jax.numpy.asarray(gv, dtype="float32")

        def run(_, query):
            def on(a, b):
                fs = fc.Tensor(a, {"x": fc.Bint[3]})
                out = fc.infer_discrete([fs, fs, fc.Tensor(b, {"x": fc.Bint[3],
                                                               "y": fc.Bint[2]})],
                                        query=query)
                return {k: v.data for k, v in out.items()} if query == "marginals" else out.data
            return jax.jit(on)(f0, g0)
        f = g = None
    try:
        got = run([f, f, g], query="marginals")
        get = (lambda v: np.asarray(v.detach() if hasattr(v, "detach") else v)
               if path == "jax_jit" else np.asarray(v.data.detach()))
        tol = 1e-6 if path == "jax_jit" else 1e-12
        np.testing.assert_allclose(get(got["x"]), p.sum(1), atol=tol)
        np.testing.assert_allclose(get(got["y"]), p.sum(0), atol=tol)
        h = run([f, f, g], query="entropy")
        h = float(np.asarray(h if path == "jax_jit" else h.data.detach()))
        assert np.isclose(h, -(p * np.log(p)).sum(), atol=1e-5)
    finally:
        fc.set_backend("numpy")


def test_jax_int_seed_draws_alike_eagerly_and_under_jit():
    # An int seed on jax keeps jax's keys (the tape path's KeyStream) eagerly, so the draws
    # equal the jitted ones; oracle: the same call under jax.jit.
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        rng = np.random.default_rng(8)
        f0 = jax.numpy.asarray(rng.normal(size=(3, 4)), dtype="float32")

        def draw(a):
            t = fc.Tensor(a, {"x": fc.Bint[3], "y": fc.Bint[4]})
            out = fc.infer_discrete([t], query="sample", num_samples=50, rng_key=3)
            return out["x"].data, out["y"].data

        eager, jitted = draw(f0), jax.jit(draw)(f0)
        for e, j in zip(eager, jitted):
            np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
    finally:
        fc.set_backend("numpy")


def test_eager_jax_marginals_and_entropy_by_enumeration():
    # Concrete jax arrays (no tracer) take the schedule too; the answers are jax arrays.
    jax = pytest.importorskip("jax")
    arrays = _model(2)
    arrays[3][1, 0, :] = -np.inf
    marg, entropy, var_plates = _brute_marginals(arrays)
    fc.set_backend("jax")
    try:
        fs = [fc.Tensor(jax.numpy.asarray(x, dtype="float32"), t.inputs)
              for x, t in zip(arrays, _factors(arrays))]
        got = fc.infer_discrete(fs, PLATES, query="marginals")
        for v, want in marg.items():
            assert isinstance(got[v].data, jax.Array)
            np.testing.assert_allclose(np.asarray(got[v].data), want, atol=1e-5)
        h = fc.infer_discrete(fs, PLATES, query="entropy")
        assert np.isclose(float(h.data), entropy, rtol=1e-5)
    finally:
        fc.set_backend("numpy")


def test_torch_draws_without_a_key_follow_torch_manual_seed():
    # No rng_key: torch's own global state, so torch.manual_seed reproduces the draws (a
    # numpy stream would not follow it). Oracle: the same call after the same seed.
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        t = fc.Tensor(torch.randn(4, 5, dtype=torch.float64), {"x": fc.Bint[4], "y": fc.Bint[5]})
        draws = []
        for _ in range(2):
            torch.manual_seed(11)
            np.random.seed(None)  # (a fresh numpy state each time)
            out = fc.infer_discrete([t], query="sample", num_samples=200)
            draws.append((out["x"].data.clone(), out["y"].data.clone()))
        assert all(torch.equal(a, b) for a, b in zip(*draws))
    finally:
        fc.set_backend("numpy")
