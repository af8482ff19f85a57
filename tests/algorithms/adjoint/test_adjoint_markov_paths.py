"""Points along a discrete ``MarkovProduct`` in a backward pass: the MAP path under
``argmax_approximate`` (ties included) against brute force over every path, and posterior
paths (forward filter, backward sample) against enumeration by a chi-square test; on every
backend, both strategies, under ``jax.jit``, through a plate and through funsor's
``modified_partial_sum_product`` idiom; and the errors where no path can be placed. (Was: the
step's adjoint a plain Tensor, ``extract_samples`` giving ``{}``.)"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import forward_backward
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy
from tests.algorithms.adjoint.test_adjoint_markov import (
    BACKEND_STRATEGIES,
    STRATEGIES,
    _arr,
    _np,
    _paths,
)


def _point_root(init_data, tr, sum_op, strategy, pairs=("x", "y")):
    T, K = tr.shape[:2]
    x, y = pairs
    arr = _arr if isinstance(tr, np.ndarray) else (lambda a: a)  # traced under jit
    trans = fc.Tensor(arr(tr), {"t": fc.Bint[T], x: fc.Bint[K], y: fc.Bint[K]})
    init = fc.Tensor(arr(init_data), {x: fc.Bint[K]})
    with lazy:
        mp = MarkovProduct(sum_op, ops.add, trans, "t", {x: y}, strategy=strategy)
        root = (init + mp).reduce(sum_op, frozenset(pairs))
    return trans, init, root


def _path_arrays(adj, trans, init, pairs=("x", "y")):
    # The step's points (over t, then any batch) and the init's point, as arrays.
    pts = fc.extract_samples(adj[trans])
    x = pts[pairs[0]].align(("t",) + tuple(n for n in pts[pairs[0]].inputs if n != "t"))
    y = pts[pairs[1]].align(tuple(x.inputs))
    x0 = fc.extract_samples(adj[init])[pairs[0]]
    return x.data, y.data, x0.align(tuple(x0.inputs)).data


def _path_of(adj, trans, init):
    return _checked_path(*_path_arrays(adj, trans, init))


def _checked_path(xs, ys, x0):
    # The path x_0 .. x_T, checked consistent: curr[t] is prev[t + 1], and the init's point
    # is prev[0].
    xs, ys, x0 = _np(xs), _np(ys), _np(x0)
    assert (ys[:-1] == xs[1:]).all()
    assert (np.broadcast_to(x0, xs[0].shape) == xs[0]).all()
    return np.concatenate([xs, ys[-1:]], 0)  # (T + 1, *batch)


def _integer_chain(seed, T=4, K=3):
    rng = np.random.default_rng(seed)  # few distinct scores: many ties
    return rng.integers(-2, 1, K).astype(float), rng.integers(-2, 1, (T, K, K)).astype(float)


def _score(init_data, tr, path):
    return init_data[path[0]] + sum(tr[t, path[t], path[t + 1]] for t in range(len(tr)))


@BACKEND_STRATEGIES  # eager jax sequentially (it compiles per shape); both under jit, below
def test_tensor_markov_product_map_path_with_ties(backend, strategy):
    # argmax_approximate through a Tensor chain: the step factor's adjoint carries the MAP
    # path (was: a plain Tensor, extract_samples gave {}), which scores the brute-force
    # optimum also where paths tie.
    from funsor_core.algorithms.adjoint import argmax_approximate
    for seed in range(8):
        init_data, tr = _integer_chain(seed)
        trans, init, root = _point_root(init_data, tr, ops.max, strategy)
        with argmax_approximate:
            value, adj = forward_backward(ops.max, ops.add, root)
        path = _path_of(adj, trans, init)
        best = _paths(init_data, tr)[1].max()
        assert np.isclose(_np(value.data), best) and np.isclose(_score(init_data, tr, path), best)
        # the step's adjoint plus the step is the best total along the path
        marginal = fc.reinterpret(adj[trans] + trans)
        assert np.allclose(_np(marginal.reduce(ops.max, frozenset("xy")).data), best)


def test_viterbi_through_modified_partial_sum_product(backend):
    # funsor's (and Pyro's) idiom: an HMM by modified_partial_sum_product under lazy, MAP by
    # the adjoint; the init factor's x_0 is the step's first prev state.
    from funsor_core.algorithms.adjoint import argmax_approximate
    from funsor_core.algorithms.eliminate.markov_plates import modified_partial_sum_product
    # jax runs under jit: eagerly the tape compiled op by op (4 s) for the same code.
    init_data, tr = _integer_chain(11, T=5, K=2)
    T, K = tr.shape[:2]

    def map_path(init_arr, tr_arr):
        f_init = fc.Tensor(init_arr, {"x_0": fc.Bint[K]})
        f_trans = fc.Tensor(tr_arr, {"time": fc.Bint[T], "x_prev": fc.Bint[K],
                                     "x_curr": fc.Bint[K]})
        dom = frozenset({"x_0", "x_prev", "x_curr", "time"})
        with lazy:
            res = modified_partial_sum_product(
                ops.max, ops.add, [f_init, f_trans], dom,
                {"time": frozenset({("x_0", "x_prev", "x_curr")})})
        root = res[0] if isinstance(res, list) else res
        with argmax_approximate:
            value, adj = forward_backward(ops.max, ops.add, root)
        pts = fc.extract_samples(adj[f_trans])
        return (pts["x_prev"].data, pts["x_curr"].data,
                fc.extract_samples(adj[f_init])["x_0"].data)

    if backend == "jax":
        import jax

        map_path = jax.jit(map_path)
    xs, ys, x0 = map(_np, map_path(_arr(init_data), _arr(tr)))
    assert (ys[:-1] == xs[1:]).all()
    assert int(x0) == xs[0]
    best = _paths(init_data, tr)[1].max()
    assert np.isclose(_score(init_data, tr, np.append(xs, ys[-1])), best)


def _path_frequencies(init_data, tr, paths_drawn):
    # chi-square statistic of the drawn paths (T + 1, N) against the exact posterior
    paths, scores = _paths(init_data, tr)
    probs = np.exp(scores - np.logaddexp.reduce(scores))
    K = tr.shape[1]
    index = sum(paths_drawn[t] * K ** (len(tr) - t) for t in range(len(tr) + 1))
    counts = np.bincount(index, minlength=len(probs))
    expected = probs * paths_drawn.shape[1]
    return ((counts - expected) ** 2 / expected).sum(), len(probs) - 1


# jax draws the paths under jit (test_tensor_markov_product_points_under_jit, both
# strategies); eagerly it would compile op by op and prove nothing more.
@pytest.mark.parametrize("backend", ["numpy", "torch"], indirect=True)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_tensor_markov_product_posterior_paths_are_exact(backend, strategy):
    # forward_backward(ops.sample): a joint posterior draw of the whole path per particle
    # (forward filter, backward sample), against enumeration by a chi-square test.
    from scipy.stats import chi2
    rng = np.random.default_rng(5)
    init_data, tr = rng.normal(size=2), rng.normal(size=(3, 2, 2))
    trans, init, root = _point_root(init_data, tr, ops.logaddexp, strategy)
    _, adj = forward_backward(ops.sample, ops.add, root, rng_key=0,
                              sample_inputs={"particle": fc.Bint[4000]})
    stat, df = _path_frequencies(init_data, tr, _path_of(adj, trans, init))
    assert stat < chi2.ppf(0.999, df)


def test_tensor_markov_product_points_under_jit():
    jax = pytest.importorskip("jax")
    from scipy.stats import chi2

    from funsor_core.algorithms.adjoint import argmax_approximate
    fc.set_backend("jax")
    try:
        init_data, tr = _integer_chain(3)
        rng = np.random.default_rng(6)
        s_init, s_tr = rng.normal(size=2), rng.normal(size=(3, 2, 2))

        def points(init_, tr_, s_init_, s_tr_):
            out = []
            for strategy in STRATEGIES:
                trans, init, root = _point_root(init_, tr_, ops.max, strategy)
                with argmax_approximate:
                    _, adj = forward_backward(ops.max, ops.add, root)
                out.append(_path_arrays(adj, trans, init))
                trans, init, root = _point_root(s_init_, s_tr_, ops.logaddexp, strategy)
                _, adj = forward_backward(ops.sample, ops.add, root, rng_key=0,
                                          sample_inputs={"particle": fc.Bint[4000]})
                out.append(_path_arrays(adj, trans, init))
            return out

        results = jax.jit(points)(*map(_arr, (init_data, tr, s_init, s_tr)))
        best = _paths(init_data, tr)[1].max()
        for i, arrays in enumerate(results):
            path = _checked_path(*arrays)
            if i % 2 == 0:
                assert np.isclose(_score(init_data, tr, path), best)
            else:
                stat, df = _path_frequencies(s_init, s_tr, path)
                assert stat < chi2.ppf(0.999, df)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("case", ["semiring", "no_time"])
def test_tensor_markov_product_points_that_cannot_be_placed_raise(case):
    # No silent adjoint without points: a max chain inside a logaddexp pass, or a step
    # without a time input (a point per step has no place in it), names the chain.
    from funsor_core.algorithms.adjoint import argmax_approximate
    init_data, tr = _integer_chain(1)
    if case == "no_time":
        trans = fc.Tensor(tr[0], {"x": fc.Bint[3], "y": fc.Bint[3]})
        init = fc.Tensor(init_data, {"x": fc.Bint[3]})
        with lazy:
            mp = MarkovProduct(ops.max, ops.add, trans, fc.Variable("t", fc.Bint[4]),
                               {"x": "y"})
            root = (init + mp).reduce(ops.max, frozenset("xy"))
        interp, sum_op = argmax_approximate, ops.max
    else:
        trans = fc.Tensor(tr, {"t": fc.Bint[4], "x": fc.Bint[3], "y": fc.Bint[3]})
        with lazy:
            mp = MarkovProduct(ops.max, ops.add, trans, "t", {"x": "y"})
            root = mp.reduce(ops.logaddexp, frozenset("xy"))
        interp, sum_op = argmax_approximate, ops.logaddexp
    with interp, pytest.raises(NotImplementedError, match="MarkovProduct"):
        forward_backward(sum_op, ops.add, root)


def test_tensor_markov_product_map_paths_through_a_plate():
    # Viterbi through a plate m of independent chains (a batch input of the steps): one
    # best path per chain, each scoring its brute-force optimum.
    from funsor_core.algorithms.adjoint import argmax_approximate
    rng = np.random.default_rng(0)
    M, T, K = 3, 4, 3
    tr = rng.integers(-2, 1, (T, M, K, K)).astype(float)
    ini = rng.integers(-2, 1, (M, K)).astype(float)
    trans = fc.Tensor(tr, {"t": fc.Bint[T], "m": fc.Bint[M], "x": fc.Bint[K], "y": fc.Bint[K]})
    init = fc.Tensor(ini, {"m": fc.Bint[M], "x": fc.Bint[K]})
    for strategy in STRATEGIES:
        with lazy:
            mp = MarkovProduct(ops.max, ops.add, trans, "t", {"x": "y"}, strategy=strategy)
            root = (init + mp).reduce(ops.max, frozenset("xy")).reduce(ops.add, "m")
        with argmax_approximate:
            _, adj = forward_backward(ops.max, ops.add, root)
        path = _path_of(adj, trans, init)  # (T + 1, m)
        for m in range(M):
            best = _paths(ini[m], tr[:, m])[1].max()
            assert np.isclose(_score(ini[m], tr[:, m], path[:, m]), best)


def test_map_path_of_a_lazily_built_step(backend):
    # The README's HMM idiom (a shared transition matrix plus per-step observation scores,
    # added under lazy): the observation factor's adjoint carries the MAP states over time
    # (was: a dense indicator, extract_samples {}), along the brute-force best path.
    from funsor_core.algorithms.adjoint import argmax_approximate
    init_data, tr = _integer_chain(4)
    T, K = tr.shape[:2]
    scores = np.random.default_rng(4).integers(-2, 1, (T, K)).astype(float)
    shared = fc.Tensor(_arr(tr[0]), {"x": fc.Bint[K], "y": fc.Bint[K]})
    obs = fc.Tensor(_arr(scores), {"t": fc.Bint[T], "y": fc.Bint[K]})
    init = fc.Tensor(_arr(init_data), {"x": fc.Bint[K]})
    strategy = "sequential" if backend == "jax" else None
    with lazy:
        mp = MarkovProduct(ops.max, ops.add, shared + obs, "t", {"x": "y"}, strategy=strategy)
        root = (init + mp).reduce(ops.max, frozenset("xy"))
    with argmax_approximate:
        _, adj = forward_backward(ops.max, ops.add, root)
    states = _np(fc.extract_samples(adj[obs])["y"].align(("t",)).data)
    x0 = int(_np(fc.extract_samples(adj[init])["x"].data))
    steps = tr[0][None] + scores[:, None, :]
    assert np.isclose(_score(init_data, steps, np.append(x0, states)),
                      _paths(init_data, steps)[1].max())


def _idiom_viterbi(tr, ini, sizes):
    # funsor's idiom: sequential_sum_product under lazy, the argmax adjoint, the points read
    # back as flat states (T + 1, m) of the two step pairs (x, y) and (u, v).
    from funsor_core.algorithms.adjoint import argmax_approximate
    from funsor_core.sum_product import sequential_sum_product
    T, M = tr.shape[:2]
    (kx, ku) = sizes
    inputs = {"t": fc.Bint[T], "m": fc.Bint[M], "x": fc.Bint[kx], "u": fc.Bint[ku],
              "y": fc.Bint[kx], "v": fc.Bint[ku]}
    trans = fc.Tensor(tr, inputs)
    init = fc.Tensor(ini, {"m": fc.Bint[M], "x": fc.Bint[kx], "u": fc.Bint[ku]})
    with lazy:
        chain = sequential_sum_product(ops.max, ops.add, trans, "t", {"x": "y", "u": "v"})
        root = (init + chain).reduce(ops.max, frozenset("xyuv")).reduce(ops.add, "m")
    with argmax_approximate:
        _, adj = forward_backward(ops.max, ops.add, root)
    pts = fc.extract_samples(adj[trans])
    order = ("t", "m")
    x, u = pts["x"].align(order).data, pts["u"].align(order).data
    y, v = pts["y"].align(order).data, pts["v"].align(order).data
    return x * ku + u, y * ku + v


def test_viterbi_through_sequential_sum_product(backend):
    # The Viterbi path by funsor's sequential_sum_product idiom (two step pairs, a plate of
    # chains), placed by one vectorized backtrack: each chain's path scores its brute-force
    # optimum, eagerly on every backend and under jax.jit.
    rng = np.random.default_rng(7)
    T, M, sizes = 4, 2, (2, 2)
    tr = rng.normal(size=(T, M) + sizes + sizes)
    ini = rng.normal(size=(M,) + sizes)
    flat = tr.reshape(T, M, 4, 4)
    if backend == "jax":
        import jax
        run = jax.jit(lambda a, b: _idiom_viterbi(a, b, sizes))
    else:
        def run(a, b):
            return _idiom_viterbi(a, b, sizes)
    prev, curr = run(_arr(tr), _arr(ini))
    prev, curr = _np(prev), _np(curr)
    assert (prev[1:] == curr[:-1]).all()
    path = np.concatenate([prev, curr[-1:]], 0)
    for m in range(M):
        best = _paths(ini[m].reshape(-1), flat[:, m])[1].max()
        assert np.isclose(_score(ini[m].reshape(-1), flat[:, m], path[:, m]), best)


def test_chain_recorded_under_argmax_still_gives_exact_max_marginals():
    # A chain recorded under argmax_approximate is evaluated by its kernel (points need only
    # its value); exact messages asked of the same tape still come, through its steps: the
    # max-marginal of every step pair against brute force over every path.
    from funsor_core.adjoint import AdjointTape
    from funsor_core.algorithms.adjoint import argmax_approximate
    from funsor_core.sum_product import sequential_sum_product
    init_data, tr = _integer_chain(5)
    T, K = tr.shape[:2]
    trans = fc.Tensor(tr, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    init = fc.Tensor(init_data, {"x": fc.Bint[K]})
    with argmax_approximate, AdjointTape() as tape:
        chain = sequential_sum_product(ops.max, ops.add, trans, "t", {"x": "y"})
        z = (init + chain).reduce(ops.max, frozenset("xy"))
    adj = tape.adjoint(ops.max, ops.add, z, (trans,), approximate=False)[trans]
    actual = _np((adj + trans).align(("t", "x", "y")).data)
    paths, scores = _paths(init_data, tr)
    for t in range(T):
        for x in range(K):
            for y in range(K):
                through = (paths[:, t] == x) & (paths[:, t + 1] == y)
                assert np.isclose(actual[t, x, y], scores[through].max())
