"""Adjoint queries on random plated discrete factor graphs against brute-force enumeration of
the unrolled graph: log Z, marginals, MAP, the k best assignments, entropy and samples."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import DiscreteModel, infer_discrete

PLATES = "pqr"


def random_graph(seed: int):
    """A random plated factor graph without the forbidden plate minor: each variable has a
    factor with (optionally) a parent in a shallower or equal set of plates, and sometimes a
    second variable of its own plates. 1-3 plates of size 2, nested or not, 2-6 variables
    with domains 2-4. Returns (factors as numpy tables with their names, plate sizes,
    variable sizes, variable ordinals)."""
    rng = np.random.default_rng(seed)
    while True:
        num_plates = int(rng.integers(1, 4))
        nested = bool(rng.integers(2))
        plates = PLATES[:num_plates]
        plate_size = {p: 2 for p in plates}
        num_vars = int(rng.integers(2, 7))
        names = [f"x{k}" for k in range(num_vars)]
        size = {v: int(rng.integers(2, 5)) for v in names}
        ordinal = {}
        for v in names:
            if nested:
                ordinal[v] = plates[:int(rng.integers(0, num_plates + 1))]
            else:
                ordinal[v] = "".join(p for p in plates if rng.integers(3) == 0)
        factors = []
        for k, v in enumerate(names):
            parents = [u for u in names[:k] if set(ordinal[u]) <= set(ordinal[v])]
            scope = [v]
            if parents and rng.integers(4):
                scope.insert(0, parents[int(rng.integers(len(parents)))])
            siblings = [u for u in names[:k] if ordinal[u] == ordinal[v] and u not in scope]
            if siblings and rng.integers(3) == 0:
                scope.append(siblings[0])
            factors.append((ordinal[v], scope))
        if rng.integers(2):  # a factor over plates only
            factors.append((plates[-1], []))
        copies = sum(math.prod(plate_size[p] for p in ordinal[v]) for v in names)
        joint = math.prod(size[v] ** math.prod(plate_size[p] for p in ordinal[v])
                          for v in names)
        if joint <= 40000 and copies <= 14:
            break
    tables = []
    for fplates, scope in factors:
        shape = tuple(plate_size[p] for p in fplates) + tuple(size[v] for v in scope)
        tables.append((fplates, scope, rng.normal(size=shape)))
    return tables, plate_size, size, ordinal


def brute_force(tables, plate_size, size, ordinal):
    """The unrolled joint log table: one axis per copy of each variable (a variable in
    plates P has one copy per index of P)."""
    copies = []
    for v in sorted(size):
        for idx in itertools.product(*(range(plate_size[p]) for p in ordinal[v])):
            copies.append((v, dict(zip(ordinal[v], idx))))
    shape = tuple(size[v] for v, _ in copies)
    joint = np.zeros(shape)
    for fplates, scope, table in tables:
        for idx in itertools.product(*(range(plate_size[p]) for p in fplates)):
            where = dict(zip(fplates, idx))
            axes = []
            for v in scope:
                key = {p: where[p] for p in ordinal[v]}
                axes.append(next(a for a, c in enumerate(copies) if c == (v, key)))
            sub = table[idx] if fplates else table
            order = np.argsort(axes)
            sub = np.transpose(sub, order)
            full = [1] * len(shape)
            for a in sorted(axes):
                full[a] = shape[a]
            joint = joint + sub.reshape(full)
    return copies, joint


def used_plates(tables) -> set:
    return {p for fplates, _, _ in tables for p in fplates}


def funsor_factors(tables, plate_size, size):
    factors = []
    for fplates, scope, table in tables:
        inputs = {p: fc.Bint[plate_size[p]] for p in fplates}
        inputs.update({v: fc.Bint[size[v]] for v in scope})
        factors.append(fc.Tensor(fc.numeric_array(table), inputs))
    return factors


def _np(x):
    return np.asarray(ops.to_numpy(x.data if isinstance(x, fc.Funsor) else x))


def _index(copy, ordinal):
    v, where = copy
    return tuple(where[p] for p in sorted(ordinal[v]))


# numpy runs ten graphs, torch four (jax runs under jax.jit below).
CASES = [("numpy", seed) for seed in range(10)] + [("torch", seed) for seed in range(4)]


@pytest.fixture
def use_backend(request):
    def use(name):
        fc.set_backend(name)
        request.addfinalizer(lambda: fc.set_backend("numpy"))
    return use


@pytest.mark.parametrize("backend_name, seed", CASES)
def test_random_plated_graph_vs_brute_force(use_backend, backend_name, seed):
    use_backend(backend_name)
    tables, plate_size, size, ordinal = random_graph(seed)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    model = DiscreteModel(funsor_factors(tables, plate_size, size), used_plates(tables))
    log_z = np.logaddexp.reduce(joint.reshape(-1))
    assert np.allclose(_np(model.log_partition()), log_z)

    # Marginals of every copy of every variable.
    marginals = model.marginals()
    for a, copy in enumerate(copies):
        axes = tuple(b for b in range(joint.ndim) if b != a)
        expected = np.exp(np.logaddexp.reduce(joint, axis=axes) - log_z)
        actual = _np(marginals[copy[0]])[_index(copy, ordinal)]
        assert np.allclose(actual, expected), (copy, actual, expected)

    # MAP: the brute-force argmax, and its score.
    best = np.unravel_index(np.argmax(joint), joint.shape)
    assignment = model.map()
    for a, copy in enumerate(copies):
        assert _np(assignment[copy[0]])[_index(copy, ordinal)] == best[a], copy
    assert np.allclose(_np(model.map_score()), joint.max())

    # The k best: scores and assignments in order.
    k = 4
    scores, top = model.kbest(k)
    flat = joint.reshape(-1)
    order = np.argsort(-flat, kind="stable")[:k]
    assert np.allclose(_np(scores), flat[order])
    for r, f in enumerate(order):
        values = np.unravel_index(f, joint.shape)
        for a, copy in enumerate(copies):
            assert _np(top[copy[0]])[(r,) + _index(copy, ordinal)] == values[a], (r, copy)

    # Entropy of the posterior.
    p = np.exp(joint - log_z)
    expected_h = -(p * (joint - log_z)).sum()
    assert np.allclose(_np(model.entropy()), expected_h)


@pytest.mark.parametrize("backend_name, seed", [("numpy", 0), ("numpy", 3), ("numpy", 5),
                                                ("torch", 0), ("torch", 3)])
def test_random_plated_graph_samples_chi_square(use_backend, backend_name, seed):
    use_backend(backend_name)
    tables, plate_size, size, ordinal = random_graph(seed)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    log_z = np.logaddexp.reduce(joint.reshape(-1))
    n = 4000
    model = DiscreteModel(funsor_factors(tables, plate_size, size), used_plates(tables))
    samples = model.sample(n, rng_key=seed)
    for a, copy in enumerate(copies):
        axes = tuple(b for b in range(joint.ndim) if b != a)
        expected = np.exp(np.logaddexp.reduce(joint, axis=axes) - log_z)
        drawn = _np(samples[copy[0]])[(slice(None),) + _index(copy, ordinal)]
        counts = np.bincount(drawn, minlength=size[copy[0]])
        keep = expected * n >= 5  # chi-square needs expected counts of 5 or more
        if keep.sum() < 2:
            continue
        obs = np.append(counts[keep], counts[~keep].sum())
        exp = np.append(expected[keep], expected[~keep].sum()) * n
        obs, exp = obs[exp > 0], exp[exp > 0]
        assert stats.chisquare(obs, exp).pvalue > 1e-4, (copy, obs, exp)


def test_samples_follow_the_joint_not_only_the_marginals():
    # A two-variable chain with strong coupling: the pairs drawn follow p(a, b).
    logits = np.log(np.array([[0.45, 0.05], [0.05, 0.45]]))
    f = fc.Tensor(logits, {"a": fc.Bint[2], "b": fc.Bint[2]})
    g = fc.Tensor(np.log(np.array([0.3, 0.7])), {"a": fc.Bint[2]})
    s = infer_discrete([f, g], query="sample", num_samples=5000, rng_key=1)
    pairs = _np(s["a"]) * 2 + _np(s["b"])
    joint = np.exp(logits + np.log([0.3, 0.7])[:, None])
    joint /= joint.sum()
    assert stats.chisquare(np.bincount(pairs, minlength=4), joint.reshape(-1) * 5000).pvalue > 1e-4


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_samples_are_reproducible_by_seed(use_backend, backend_name):
    use_backend(backend_name)
    tables, plate_size, size, _ = random_graph(2)
    model = DiscreteModel(funsor_factors(tables, plate_size, size), used_plates(tables))
    a = model.sample(50, rng_key=7)
    b = model.sample(50, rng_key=7)
    c = model.sample(50, rng_key=8)
    assert all((_np(a[v]) == _np(b[v])).all() for v in a)
    assert any((_np(a[v]) != _np(c[v])).any() for v in a)


def test_sampling_semiring_forward_backward():
    # forward_backward in the (sample, add) semiring draws samples with a seed.
    f = fc.Tensor(np.log(np.array([[0.1, 0.2], [0.3, 0.4]])), {"a": fc.Bint[2],
                                                               "b": fc.Bint[2]})
    from interpretations import lazy
    with lazy:
        z = f.reduce(ops.sample, frozenset("ab"))
    value, adj = fc.forward_backward(ops.sample, ops.add, z, rng_key=0,
                                     sample_inputs={"n": fc.Bint[3000]})
    assert np.allclose(_np(value), np.log(1.0))
    points = fc.extract_samples(adj[f])
    pairs = _np(points["a"]) * 2 + _np(points["b"])
    assert stats.chisquare(np.bincount(pairs, minlength=4),
                           np.array([0.1, 0.2, 0.3, 0.4]) * 3000).pvalue > 1e-4


def test_infer_discrete_queries_and_errors():
    f = fc.Tensor(np.log(np.array([[1.0, 2.0], [3.0, 4.0]])), {"a": fc.Bint[2],
                                                               "b": fc.Bint[2]})
    assert np.allclose(_np(infer_discrete([f], query="log_partition")), np.log(10.0))
    assert np.allclose(_np(infer_discrete({"f": f}, query="marginals")["a"]), [0.3, 0.7])
    with pytest.raises(ValueError, match="unknown query 'mode'"):
        infer_discrete([f], query="mode")
    with pytest.raises(ValueError, match="real input 'x'"):
        DiscreteModel([fc.Variable("x", fc.Real) * 1.0])
    with pytest.raises(ValueError, match="plates \\['q'\\] are inputs of no factor"):
        DiscreteModel([f], plates={"q"})
    with pytest.raises(ValueError, match="k must be a positive int"):
        infer_discrete([f], query="kbest", k=0)


def test_kbest_more_than_the_number_of_assignments():
    f = fc.Tensor(np.log(np.array([0.2, 0.5, 0.3])), {"a": fc.Bint[3]})
    scores, top = infer_discrete([f], query="kbest", k=10)
    assert np.allclose(np.exp(_np(scores)), [0.5, 0.3, 0.2])
    assert _np(top["a"]).tolist() == [1, 2, 0]


def test_chain_map_is_viterbi():
    # A hidden Markov chain: the MAP assignment equals a hand-written Viterbi in numpy.
    rng = np.random.default_rng(0)
    T, K = 12, 3
    init, trans, obs = rng.normal(size=K), rng.normal(size=(K, K)), rng.normal(size=(T, K))
    factors = [fc.Tensor(init, {"x0": fc.Bint[K]})]
    for t in range(T):
        factors.append(fc.Tensor(obs[t], {f"x{t}": fc.Bint[K]}))
        if t:
            factors.append(fc.Tensor(trans, {f"x{t - 1}": fc.Bint[K], f"x{t}": fc.Bint[K]}))
    best = infer_discrete(factors, query="map")
    score = init + obs[0]
    pointers = []
    for t in range(1, T):
        cand = score[:, None] + trans
        pointers.append(cand.argmax(0))
        score = cand.max(0) + obs[t]
    path = [int(score.argmax())]
    for ptr in reversed(pointers):
        path.append(int(ptr[path[-1]]))
    path = path[::-1]
    assert [int(_np(best[f"x{t}"])) for t in range(T)] == path


def test_marginals_map_and_samples_under_jax_jit(use_backend):
    # The whole forward-backward pass traces once under jax.jit; the results equal brute force.
    jax = pytest.importorskip("jax")
    use_backend("jax")
    tables, plate_size, size, ordinal = random_graph(0)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    log_z = np.logaddexp.reduce(joint.reshape(-1))

    def model_of(arrays):
        factors = []
        for (fplates, scope, _), a in zip(tables, arrays):
            inputs = {p: fc.Bint[plate_size[p]] for p in fplates}
            inputs.update({v: fc.Bint[size[v]] for v in scope})
            factors.append(fc.Tensor(a, inputs))
        return DiscreteModel(factors, used_plates(tables))

    @jax.jit
    def queries(arrays, key):
        model = model_of(arrays)
        marginals = {k: v.data for k, v in model.marginals().items()}
        best = {k: v.data for k, v in model.map().items()}
        samples = {k: v.data for k, v in model.sample(3000, rng_key=key).items()}
        return marginals, best, samples, model.entropy().data

    arrays = [jax.numpy.asarray(t) for _, _, t in tables]
    marginals, best, samples, entropy = queries(arrays, jax.random.PRNGKey(0))
    argmax = np.unravel_index(np.argmax(joint), joint.shape)
    p = np.exp(joint - log_z)
    assert np.allclose(entropy, -(p * (joint - log_z)).sum())
    for a, copy in enumerate(copies):
        axes = tuple(b for b in range(joint.ndim) if b != a)
        expected = np.exp(np.logaddexp.reduce(joint, axis=axes) - log_z)
        index = _index(copy, ordinal)
        assert np.allclose(np.asarray(marginals[copy[0]])[index], expected)
        assert np.asarray(best[copy[0]])[index] == argmax[a]
        drawn = np.asarray(samples[copy[0]])[(slice(None),) + index]
        counts = np.bincount(drawn, minlength=size[copy[0]])
        assert stats.chisquare(counts, expected * 3000).pvalue > 1e-4, copy


def _approximating_interpretations():
    from funsor_core.approximations import argmax_approximate
    from interpretations import MonteCarlo
    return [MonteCarlo(rng_key=0, particle=fc.Bint[100]), MonteCarlo(rng_key=0),
            argmax_approximate, fc.PosteriorSample(rng_key=0)]


@pytest.mark.parametrize("index", range(4))
def test_queries_are_exact_under_approximating_interpretations(index):
    # Marginals and entropy are exact quantities: entered under Monte Carlo (with or without
    # particles) or another approximating interpretation they equal brute force, as outside.
    tables, plate_size, size, ordinal = random_graph(1)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    log_z = np.logaddexp.reduce(joint.reshape(-1))
    p = np.exp(joint - log_z)
    model = DiscreteModel(funsor_factors(tables, plate_size, size), used_plates(tables))
    with _approximating_interpretations()[index]:
        marginals, entropy = model.marginals(), model.entropy()
        best, log_partition = model.map(), model.log_partition()
        samples = model.sample(3000, rng_key=3)
    assert np.allclose(_np(entropy), -(p * (joint - log_z)).sum())
    assert np.allclose(_np(log_partition), log_z)
    argmax = np.unravel_index(np.argmax(joint), joint.shape)
    for a, copy in enumerate(copies):
        axes = tuple(b for b in range(joint.ndim) if b != a)
        expected = np.exp(np.logaddexp.reduce(joint, axis=axes) - log_z)
        index_ = _index(copy, ordinal)
        assert np.allclose(_np(marginals[copy[0]])[index_], expected)
        assert _np(best[copy[0]])[index_] == argmax[a]
        drawn = _np(samples[copy[0]])[(slice(None),) + index_]
        counts = np.bincount(drawn, minlength=size[copy[0]])
        keep = expected * 3000 >= 5
        if keep.sum() >= 2:
            obs = np.append(counts[keep], counts[~keep].sum())
            exp = np.append(expected[keep], expected[~keep].sum()) * 3000
            assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > 1e-4, copy


def test_adjoint_samples_under_monte_carlo_follow_the_posterior():
    # forward_backward(logaddexp, add) under MonteCarlo draws (a, b, c) jointly from the
    # posterior of a chain: the triples' frequencies match enumeration; a seed reproduces them.
    from interpretations import MonteCarlo, lazy
    rng = np.random.default_rng(4)
    ta, tab, tbc = rng.normal(size=2), rng.normal(size=(2, 3)), rng.normal(size=(3, 2))
    a = fc.Tensor(ta, {"a": fc.Bint[2]})
    ab = fc.Tensor(tab, {"a": fc.Bint[2], "b": fc.Bint[3]})
    bc = fc.Tensor(tbc, {"b": fc.Bint[3], "c": fc.Bint[2]})
    with lazy:
        z = fc.sum_product(ops.logaddexp, ops.add, [a, ab, bc], frozenset("abc"))
    joint = ta[:, None, None] + tab[:, :, None] + tbc[None]
    expected = np.exp(joint - np.logaddexp.reduce(joint.reshape(-1))).reshape(-1)

    def draw(seed):
        with MonteCarlo(rng_key=seed, particle=fc.Bint[4000]) as mc:
            value, adj = fc.forward_backward(ops.logaddexp, ops.add, z,
                                             batch_vars=mc.sample_vars)
        assert np.allclose(_np(value), np.logaddexp.reduce(joint.reshape(-1)))
        points = {**fc.extract_samples(adj[ab]), **fc.extract_samples(adj[bc])}
        return _np(points["a"]) * 6 + _np(points["b"]) * 2 + _np(points["c"])

    first = draw(0)
    assert stats.chisquare(np.bincount(first, minlength=12), expected * 4000).pvalue > 1e-4
    assert (draw(0) == first).all()
    assert (draw(1) != first).any()


def test_map_points_keep_the_factors_backend(use_backend):
    # numpy factors while torch is the active backend: the MAP points stay numpy (a numpy
    # scalar argmax used to become a torch array, and the backward pass failed mixing them).
    pytest.importorskip("torch")
    tables, plate_size, size, ordinal = random_graph(3)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    factors = funsor_factors(tables, plate_size, size)
    use_backend("torch")
    best = DiscreteModel(factors, used_plates(tables)).map()
    argmax = np.unravel_index(np.argmax(joint), joint.shape)
    for a, copy in enumerate(copies):
        assert isinstance(best[copy[0]].data, (np.ndarray, np.generic))
        assert best[copy[0]].data[_index(copy, ordinal)] == argmax[a]


def test_kbest_under_jax_jit_says_to_call_it_outside(use_backend):
    jax = pytest.importorskip("jax")
    use_backend("jax")

    def top(t):
        f = fc.Tensor(t, {"a": fc.Bint[3]})
        return infer_discrete([f], query="kbest", k=2)[0].data

    with pytest.raises(TypeError, match=r"factor over \['a'\] holds traced arrays.*outside "
                                        r"jax.jit"):
        jax.jit(top)(jax.numpy.zeros(3))


@pytest.mark.parametrize("backend", ["torch", "jax", "jit"])
def test_entropy_gradient_with_a_zero_probability_state(backend):
    # H = log Z - E_p[f] with p = exp(f) / Z; dH/df_k = -p_k (f_k - E_p[f]): 0 (not NaN) at a
    # state of probability 0, whose f_k is -inf (0 log 0 = 0 in the backward pass too).
    import jax
    import jax.numpy as jnp
    import torch

    probs = np.array([0.4, 0.0, 0.3, 0.3])
    with np.errstate(divide="ignore"):
        log_f = np.log(probs * 2.0)  # unnormalized: Z = 2
    on = probs > 0
    expected_h = -np.sum(probs[on] * np.log(probs[on]))
    mean_f = np.sum(probs[on] * log_f[on])
    expected_grad = np.where(on, -probs * (np.where(on, log_f, 0.0) - mean_f), 0.0)

    def entropy(f):
        return DiscreteModel([fc.Tensor(f, {"z": fc.Bint[4]})]).entropy().data

    if backend == "torch":
        f = torch.tensor(log_f, requires_grad=True)
        value = entropy(f)
        value.backward()
        value, grad = value.detach().numpy(), f.grad.numpy()
    else:
        fn = jax.value_and_grad(entropy)
        value, grad = (jax.jit(fn) if backend == "jit" else fn)(jnp.asarray(log_f))
    assert float(value) == pytest.approx(expected_h, rel=1e-12)
    np.testing.assert_allclose(np.asarray(grad), expected_grad, rtol=1e-10, atol=1e-15)


def _brute_map(copies, joint, ordinal, assignment):
    # The argmax of the unrolled joint, read off per copy; random real factors have no ties.
    best = np.unravel_index(np.argmax(joint), joint.shape)
    for a, copy in enumerate(copies):
        assert _np(assignment[copy[0]])[_index(copy, ordinal)] == best[a], copy


@pytest.mark.parametrize("backend_name, seed", [(b, s) for b in ("numpy", "torch")
                                                for s in range(10, 16)])
def test_map_equals_kbest_one_and_brute_force(use_backend, monkeypatch, backend_name, seed):
    # MAP replays the max-product tape in the k-max semiring with k = 1 on concrete Tensors;
    # the argmax adjoint (its route under jax.jit and for lazy factors) must agree with it,
    # with kbest(k=1) and with brute force, values, dtypes and inputs alike.
    pytest.importorskip(backend_name)
    use_backend(backend_name)
    tables, plate_size, size, ordinal = random_graph(seed)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    model = DiscreteModel(funsor_factors(tables, plate_size, size), used_plates(tables))
    by_replay = infer_discrete(model.factors, model.plates, query="map")
    _, top = infer_discrete(model.factors, model.plates, query="kbest", k=1)
    monkeypatch.setattr(DiscreteModel, "_replayable", lambda self: False)
    by_adjoint = model.map()
    _brute_map(copies, joint, ordinal, by_replay)
    for name, value in by_replay.items():
        assert value.inputs == by_adjoint[name].inputs and value.output == by_adjoint[
            name].output, name
        assert ops.to_numpy(value.data).dtype == ops.to_numpy(by_adjoint[name].data).dtype
        np.testing.assert_array_equal(_np(value), _np(by_adjoint[name]))
        np.testing.assert_array_equal(_np(value), _np(top[name])[0])


@pytest.mark.parametrize("seed", range(10, 13))
def test_map_under_jax_jit_equals_eager_kbest_one(use_backend, seed):
    # Under jax.jit the factors are traced: MAP takes the argmax adjoint, and equals the eager
    # k-best replay with k = 1 and brute force.
    jax = pytest.importorskip("jax")
    use_backend("jax")
    tables, plate_size, size, ordinal = random_graph(seed)
    copies, joint = brute_force(tables, plate_size, size, ordinal)
    plates = used_plates(tables)

    @jax.jit
    def map_of(arrays):
        factors = [fc.Tensor(a, f.inputs) for a, f in
                   zip(arrays, funsor_factors(tables, plate_size, size))]
        return {k: v.data for k, v in DiscreteModel(factors, plates).map().items()}

    arrays = [jax.numpy.asarray(t) for _, _, t in tables]
    traced = map_of(arrays)
    _, top = DiscreteModel(funsor_factors(tables, plate_size, size), plates).kbest(1)
    _brute_map(copies, joint, ordinal, {k: fc.Tensor(v, {}) for k, v in traced.items()})
    for name, value in traced.items():
        np.testing.assert_array_equal(np.asarray(value), _np(top[name])[0])
