"""Programs a new user writes from the README (h108) on loopy graphs: BP on a float32 grid
(torch's default dtype) never reported convergence with the default ``tol=1e-8``, below the
roundoff of a float32 message, and ran all ``max_iters`` (1000 sweeps, 30x the float64
count; cluster BP and single-value sparsity too); max-product's ``map_assignment`` on a loopy
graph with hard constraints (a colouring) decoded an assignment of probability 0, breaking
the constraint that closes a loop. Oracle: enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import loopy_bp


def _grid(n=3, seed=0):
    rng = np.random.default_rng(seed)
    names = [f"x{i}{j}" for i in range(n) for j in range(n)]
    unary = {v: 0.3 * rng.normal(size=2) for v in names}
    pairs = {}
    for i, j in itertools.product(range(n), range(n)):
        for a, b in ((i, j + 1), (i + 1, j)):
            if a < n and b < n:
                pairs[f"x{i}{j}", f"x{a}{b}"] = (0.5 * np.array([[1.0, -1.0], [-1.0, 1.0]])
                                                  + 0.1 * rng.normal(size=(2, 2)))
    return names, unary, pairs


def _exact_marginals(names, unary, pairs):
    logp = np.zeros((2,) * len(names))
    axis = {v: k for k, v in enumerate(names)}
    for v, t in unary.items():
        logp = logp + np.expand_dims(t, [k for k in range(len(names)) if k != axis[v]])
    for (a, b), t in pairs.items():
        keep = (axis[a], axis[b])
        logp = logp + np.expand_dims(t, [k for k in range(len(names)) if k not in keep])
    p = np.exp(logp - logp.max())
    p /= p.sum()
    return {v: p.sum(tuple(k for k in range(len(names)) if k != axis[v])) for v in names}


def _array(backend, x):
    if backend == "torch":
        return pytest.importorskip("torch").tensor(x)
    if backend == "jax":
        return pytest.importorskip("jax.numpy").asarray(x)
    return x


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("options", [{"schedule": "flooding"}, {"schedule": "sequential"},
                                     {"sparsity_threshold": 0.99}])
def test_float32_bp_converges_with_the_default_tol(backend, options):
    names, unary, pairs = _grid()

    def factors(dtype):
        fs = [fc.Tensor(_array(backend, t.astype(dtype)), {v: fc.Bint[2]})
              for v, t in unary.items()]
        return fs + [fc.Tensor(_array(backend, t.astype(dtype)), {a: fc.Bint[2], b: fc.Bint[2]})
                     for (a, b), t in pairs.items()]

    r32 = loopy_bp(factors(np.float32), **options)
    r64 = loopy_bp(factors(np.float64), **options)
    assert r32.converged and r32.num_iters <= r64.num_iters
    exact = _exact_marginals(names, unary, pairs)
    for v in names:
        b32 = np.exp(np.asarray(r32.beliefs[v].data, np.float64))
        b64 = np.exp(np.asarray(r64.beliefs[v].data, np.float64))
        np.testing.assert_allclose(b32, b64, atol=1e-4)   # the float64 fixed point
        assert np.abs(b64 - exact[v]).max() < 0.1          # loopy: sensible, not exact


def test_float32_cluster_bp_converges_with_the_default_tol():
    torch = pytest.importorskip("torch")
    names, unary, pairs = _grid()
    factors = [fc.Tensor(torch.tensor(t, dtype=torch.float32), {v: fc.Bint[2]})
               for v, t in unary.items()]
    factors += [fc.Tensor(torch.tensor(t, dtype=torch.float32), {a: fc.Bint[2], b: fc.Bint[2]})
                for (a, b), t in pairs.items()]
    r = loopy_bp(factors, clusters=[(v,) for v in names], max_iters=300)
    assert r.converged and r.num_iters < 100
    rows = [tuple(f"x{i}{j}" for j in range(3)) for i in range(3)]  # a chain of clusters
    exact = _exact_marginals(names, unary, pairs)
    r = loopy_bp(factors, clusters=rows)
    assert r.converged
    for v in names:
        np.testing.assert_allclose(np.exp(r.beliefs[v].data.double().numpy()), exact[v],
                                   atol=1e-5)


def _coloring(extra_ternary=False):
    # 3-colouring of a 5-cycle a-b-c-d-e with the chord a-c; e has 2 colours; a prefers 0.
    dom = {"a": 3, "b": 3, "c": 3, "d": 3, "e": 2}
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"), ("a", "c")]
    tables = [(("a",), np.log(np.array([0.5, 0.3, 0.2])))]
    for u, v in edges:
        t = np.zeros((dom[u], dom[v]))
        for i in range(min(dom[u], dom[v])):
            t[i, i] = -np.inf
        tables.append(((u, v), t))
    if extra_ternary:  # b, d, e not all of colour 1
        t = np.zeros((3, 3, 2))
        t[1, 1, 1] = -np.inf
        tables.append((("b", "d", "e"), t))
    return dom, tables


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("extra_ternary", [False, True])
def test_max_product_decoding_keeps_hard_constraints_on_loops(backend, extra_ternary):
    # The decoder fixed the chord's end c from the factor (a, c) alone and broke b != c,
    # an assignment of probability 0 where feasible ones exist. Oracle: enumeration.
    dom, tables = _coloring(extra_ternary)
    factors = [fc.Tensor(_array(backend, t), {v: fc.Bint[dom[v]] for v in vs})
               for vs, t in tables]
    names = list(dom)

    def score(x):
        return sum(t[tuple(x[v] for v in vs)] for vs, t in tables)

    best = max(score(dict(zip(names, xs)))
               for xs in itertools.product(*[range(dom[v]) for v in names]))
    got = loopy_bp(factors, sum_op=fc.ops.max).map_assignment()
    assert np.isfinite(score(got)) and np.isclose(score(got), best)


def test_max_product_decoding_scores_a_closing_factor_on_the_right_variable():
    # A ternary factor leaves u1 and u2 free once a is fixed; the hard constraint u2 != a
    # closes the loop on u2 alone (the second of the two free axes). Oracle: enumeration.
    rng = np.random.default_rng(0)
    tri = rng.normal(size=(3, 3, 3)) * 0.1
    tri[0, 0, 0] = 2.0
    ne = np.where(np.eye(3) > 0, -np.inf, 0.0)
    tables = [(("a",), np.log(np.array([0.8, 0.1, 0.1]))), (("a", "u1", "u2"), tri),
              (("u2", "a"), ne)]
    factors = [fc.Tensor(t, {v: fc.Bint[3] for v in vs}) for vs, t in tables]

    def score(x):
        return sum(t[tuple(x[v] for v in vs)] for vs, t in tables)

    best = max(score(dict(zip(("a", "u1", "u2"), xs)))
               for xs in itertools.product(range(3), repeat=3))
    got = loopy_bp(factors, sum_op=fc.ops.max).map_assignment()
    assert np.isclose(score(got), best)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_cluster_bp_map_assignment_says_what_to_use_and_the_advice_holds(backend):
    # ClusterBPResult.map_assignment was an AttributeError; it now says to argmax the
    # max-product cluster beliefs on a tree-shaped cluster graph. Oracle: enumeration.
    rng = np.random.default_rng(1)
    names = ["a", "b", "c", "d"]
    tables = [rng.normal(size=(2, 2)) for _ in range(3)]
    factors = [fc.Tensor(_array(backend, t), {u: fc.Bint[2], v: fc.Bint[2]})
               for t, u, v in zip(tables, names, names[1:])]
    r = loopy_bp(factors, sum_op=fc.ops.max, clusters=[("a", "b"), ("c", "d")])
    with pytest.raises(NotImplementedError, match="cluster_beliefs"):
        r.map_assignment()
    joint = np.einsum("ab,bc,cd->abcd", *[np.exp(t) for t in tables])
    best = np.unravel_index(np.argmax(joint), joint.shape)
    decoded = []
    for belief in r.cluster_beliefs:
        data = np.asarray(belief.data) if backend != "torch" else belief.data.numpy()
        decoded += list(np.unravel_index(np.argmax(data), data.shape))
    assert tuple(decoded) == tuple(best)


def test_tempered_beliefs_are_normalized_in_the_tempered_reduction():
    # The docs said "normalized log-beliefs"; at temperature T they satisfy
    # T logsumexp(b / T) = 0, and exp(b / T) are the marginals of exp(sum(factors) / T).
    # Oracle: enumeration of a 3-variable chain (a tree, so BP is exact).
    rng = np.random.default_rng(2)
    t_ab, t_bc, u_a = rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), rng.normal(size=2)
    factors = [fc.Tensor(u_a, {"a": fc.Bint[2]}),
               fc.Tensor(t_ab, {"a": fc.Bint[2], "b": fc.Bint[2]}),
               fc.Tensor(t_bc, {"b": fc.Bint[2], "c": fc.Bint[2]})]
    temp = 0.5
    logp = u_a[:, None, None] + t_ab[:, :, None] + t_bc[None]
    p = np.exp(logp / temp - np.logaddexp.reduce((logp / temp).ravel()))
    r = loopy_bp(factors, temperature=temp)
    np.testing.assert_allclose(float(r.log_z.data),
                               temp * np.logaddexp.reduce((logp / temp).ravel()), atol=1e-9)
    for v, axes in (("a", (1, 2)), ("b", (0, 2)), ("c", (0, 1))):
        np.testing.assert_allclose(np.exp(r.beliefs[v].data / temp), p.sum(axes), atol=1e-9)


def test_an_annealing_schedule_closed_over_works_under_jit_as_the_error_says():
    from funsor_core.loopy import gibbs
    f = fc.Tensor(jax_numpy().log(jax_numpy().array([[1.0, 3.0], [2.0, 2.0]])),
                  {"a": fc.Bint[2], "b": fc.Bint[2]})
    schedule = np.linspace(1.0, 0.1, 50)
    jax = pytest.importorskip("jax")
    with pytest.raises(TypeError, match="close over a Python number or a numpy array"):
        jax.jit(lambda s: gibbs([f], 50, rng_key=0, temperature=s)["a"].data)(schedule)
    jitted = jax.jit(lambda: gibbs([f], 50, rng_key=0, temperature=schedule)["a"].data)()
    eager = gibbs([f], 50, rng_key=0, temperature=schedule)["a"].data
    np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))


def jax_numpy():
    return pytest.importorskip("jax.numpy")
