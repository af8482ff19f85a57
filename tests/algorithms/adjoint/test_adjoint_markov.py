"""The adjoint through a ``MarkovProduct``: marginals of Gaussian chains (the Kalman smoother)
against a hand-written Rauch-Tung-Striebel smoother in numpy and against the chain unrolled
into one variable per step; of discrete chains (sum and max, with -inf entries) against
enumeration of every path; on every backend, both strategies, and under ``jax.jit``; and
the errors where the adjoint has no rule (a chain it cannot smooth, a term on the path without
a backward rule), which were silent zeros."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import forward_backward
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy
from tests.algorithms.adjoint.test_adjoint_gaussian import chain, rts_smoother

STRATEGIES = ["parallel", "sequential"]
# Every backend with every strategy, but eager jax only sequentially: it runs the parallel
# scan op by op, a compile per new shape, so the tests below run both strategies of jax
# under jit (one program). (Was: a jax-parallel case that ran the sequential one again.)
BACKEND_STRATEGIES = pytest.mark.parametrize(
    "backend, strategy", [(b, s) for b in ("numpy", "torch", "jax") for s in STRATEGIES
                          if (b, s) != ("jax", "parallel")], indirect=["backend"])


def _np(x):
    return np.asarray(ops.to_numpy(x))


def _arr(x):
    return fc.numeric_array(np.array(x, dtype=float))  # a writable copy (torch)


def _steps(A, Q, H, R, ys):
    """The transition x_t -> x_{t+1} and the observation of x_{t+1} as Gaussians over time."""
    T, d = ys.shape
    li = np.linalg.inv(np.linalg.cholesky(Q))
    trans_sqrt = np.concatenate([-A.T @ li.T, li.T], 0)
    ri = np.linalg.inv(R)
    inputs = {"t": fc.Bint[T], "x_prev": fc.Reals[d], "x_curr": fc.Reals[d]}
    trans = fc.Gaussian(white_vec=_arr(np.zeros((T, d))),
                        prec_sqrt=_arr(np.broadcast_to(trans_sqrt, (T, 2 * d, d))),
                        inputs=inputs)
    obs = fc.Gaussian(info_vec=_arr(ys @ ri @ H),
                      precision=_arr(np.broadcast_to(H.T @ ri @ H, (T, d, d))),
                      inputs={"t": fc.Bint[T], "x_curr": fc.Reals[d]})
    return trans, obs


def _kalman(seed, T=6, d=2):
    A, Q, H, R, m0, P0, ys = chain(seed, T, d)
    trans, obs = _steps(A, Q, H, R, ys)
    init = fc.Gaussian(mean=_arr(m0), covariance=_arr(P0), inputs={"x_prev": fc.Reals[d]})
    # x_1 is the first state observed: its prior is the prediction from x_0.
    means, covs = rts_smoother(A, Q, H, R, A @ m0, A @ P0 @ A.T + Q, ys)
    return trans, obs, init, means, covs


def _root(init, step, strategy):
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"},
                           strategy=strategy)
        return (init + mp).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))


def _gaussian_of(term):
    terms = term.terms if isinstance(term, fc.Contraction) else (term,)
    (g,) = [t for t in terms if isinstance(t, fc.Gaussian)]
    return g


def _check_smoothed(pair, means, covs):
    # The pair marginals (t, x_prev, x_curr): x_curr at step t is x_{t+1}, which the
    # smoother's step t holds; each pair marginal integrates to one.
    curr = pair.reduce(ops.logaddexp, "x_prev")
    g = _gaussian_of(curr)
    assert np.allclose(_np(g.mean), means, atol=1e-8)
    assert np.allclose(_np(g.covariance), covs, atol=1e-8)
    assert np.allclose(_np(pair.reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"})).data),
                       0.0, atol=1e-8)
    prev = _gaussian_of(pair.reduce(ops.logaddexp, "x_curr"))
    assert np.allclose(_np(prev.mean)[1:], means[:-1], atol=1e-8)


@BACKEND_STRATEGIES
@pytest.mark.parametrize("lazy_step", [False, True], ids=["eager_step", "lazy_step"])
def test_gaussian_markov_product_marginals_are_the_rts_smoother(backend, strategy, lazy_step):
    trans, obs, init, means, covs = _kalman(0)
    if lazy_step:
        with lazy:
            step = trans + obs
    else:
        step = trans + obs
    log_z, adj = forward_backward(ops.logaddexp, ops.add, _root(init, step, strategy))
    assert isinstance(log_z, fc.Tensor)
    _check_smoothed(adj[step] + fc.reinterpret(step) - log_z, means, covs)
    if lazy_step:  # trans plus its adjoint is the same pair marginal; obs, that of x_curr
        _check_smoothed(adj[trans] + trans - log_z, means, covs)
        g = _gaussian_of(adj[obs] + obs - log_z)
        assert np.allclose(_np(g.mean), means) and np.allclose(_np(g.covariance), covs)


def test_gaussian_markov_product_marginals_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        trans, obs, init, means, covs = _kalman(1)

        def smoothed(tw, ts, ow, op):
            tr = fc.Gaussian(white_vec=tw, prec_sqrt=ts, inputs=trans.inputs)
            ob = fc.Gaussian(white_vec=ow, prec_sqrt=op, inputs=obs.inputs)
            out = []
            for strategy in STRATEGIES:
                step = tr + ob
                log_z, adj = forward_backward(ops.logaddexp, ops.add,
                                              _root(init, step, strategy))
                curr = _gaussian_of((adj[step] + step - log_z).reduce(ops.logaddexp,
                                                                      "x_prev"))
                out += [curr.mean, curr.covariance]
            return out

        args = (trans.white_vec, trans.prec_sqrt, obs.white_vec, obs.prec_sqrt)
        for i, x in enumerate(jax.jit(smoothed)(*args)):
            assert np.allclose(_np(x), means if i % 2 == 0 else covs, atol=1e-8)
    finally:
        fc.set_backend("numpy")


def test_gaussian_markov_product_against_the_unrolled_chain():
    # The same model unrolled into one variable per state (x0 .. xT), the route that needs
    # no backward rule for MarkovProduct: the marginal of each observation factor agrees.
    from funsor_core.engine.interpreter import reflect
    from funsor_core.sum_product import sum_product
    trans, obs, init, _, _ = _kalman(2, T=5)
    T = 5
    with lazy:
        step = trans + obs
    log_z, adj = forward_backward(ops.logaddexp, ops.add, _root(init, step, None))
    factors = [init(x_prev="x0")]
    for t in range(T):
        factors += [trans(t=t, x_prev=f"x{t}", x_curr=f"x{t + 1}"),
                    obs(t=t, x_curr=f"x{t + 1}")]
    with reflect:
        expr = sum_product(ops.logaddexp, ops.add, factors,
                           frozenset(f"x{t}" for t in range(T + 1)))
    log_z2, adj2 = forward_backward(ops.logaddexp, ops.add, expr)
    assert np.allclose(_np(log_z.data), _np(log_z2.data))
    marginal = adj[obs] + obs - log_z
    for t in range(T):
        f = factors[2 + 2 * t]
        expected = _gaussian_of(adj2[f] + f - log_z2)
        actual = _gaussian_of(marginal(t=t))
        assert np.allclose(_np(actual.mean), _np(expected.mean))
        assert np.allclose(_np(actual.covariance), _np(expected.covariance))


def test_gaussian_markov_product_with_batch_input():
    # Two independent chains (a Bint batch input m), each smoothed as its own.
    parts = [_kalman(seed, T=4) for seed in (3, 4)]
    trans = fc.Gaussian(white_vec=_arr(np.stack([_np(p[0].white_vec) for p in parts], 1)),
                        prec_sqrt=_arr(np.stack([_np(p[0].prec_sqrt) for p in parts], 1)),
                        inputs={"t": fc.Bint[4], "m": fc.Bint[2],
                                "x_prev": fc.Reals[2], "x_curr": fc.Reals[2]})
    obs = fc.Gaussian(white_vec=_arr(np.stack([_np(p[1].white_vec) for p in parts], 1)),
                      prec_sqrt=_arr(np.stack([_np(p[1].prec_sqrt) for p in parts], 1)),
                      inputs={"t": fc.Bint[4], "m": fc.Bint[2], "x_curr": fc.Reals[2]})
    init = fc.Gaussian(white_vec=_arr(np.stack([_np(p[2].white_vec) for p in parts])),
                       prec_sqrt=_arr(np.stack([_np(p[2].prec_sqrt) for p in parts])),
                       inputs={"m": fc.Bint[2], "x_prev": fc.Reals[2]})
    step = trans + obs
    log_z, adj = forward_backward(ops.logaddexp, ops.add, _root(init, step, None))
    pair = adj[step] + step - log_z
    for m, p in enumerate(parts):
        # the marginal under the joint over m is p(m | y) times the chain's own smoother
        g = _gaussian_of(pair(m=m).reduce(ops.logaddexp, "x_prev"))
        assert np.allclose(_np(g.mean), p[3]) and np.allclose(_np(g.covariance), p[4])


def test_markov_product_without_a_backward_rule_raises():
    # A Gaussian chain whose adjoint couples its first and last states (a loop) is not a
    # filter: it raises instead of giving the steps an adjoint of zero.
    trans, obs, init, _, _ = _kalman(5, T=3)
    loop = fc.Gaussian(mean=_arr(np.zeros(4)), covariance=_arr(np.eye(4)),
                       inputs={"x_prev": fc.Reals[2], "x_curr": fc.Reals[2]})
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"x_prev": "x_curr"})
        root = (loop + mp).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    with pytest.raises(NotImplementedError, match="MarkovProduct"):
        forward_backward(ops.logaddexp, ops.add, root)


def _paths(init, tr):
    T, K = tr.shape[0], tr.shape[1]
    paths = np.array(list(itertools.product(range(K), repeat=T + 1)))
    scores = init[paths[:, 0]] + sum(tr[t, paths[:, t], paths[:, t + 1]] for t in range(T))
    return paths, scores


def _tensor_chain():
    rng = np.random.default_rng(3)
    T, K = 5, 3
    tr = rng.normal(size=(T, K, K))
    tr[2, 1, :] = -np.inf  # state 1 at step 2 leads nowhere: its marginals are 0
    tr[0, :, 2] = -np.inf
    return tr, rng.normal(size=K)


def _tensor_marginals(tr, init_data, sum_op, strategy):
    T, K = tr.shape[:2]
    trans = fc.Tensor(tr, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    init = fc.Tensor(init_data, {"x": fc.Bint[K]})
    with lazy:
        mp = MarkovProduct(sum_op, ops.add, trans, "t", {"x": "y"}, strategy=strategy)
        root = (init + mp).reduce(sum_op, frozenset("xy"))
    value, adj = forward_backward(sum_op, ops.add, root)
    return value.data, (adj[trans] + trans - value).align(("t", "x", "y")).data


def _check_tensor_marginals(tr, init_data, sum_op, value, actual):
    T, K = tr.shape[:2]
    paths, scores = _paths(init_data, tr)
    red = np.logaddexp.reduce if sum_op is ops.logaddexp else np.max
    total = red(scores)
    expected = np.full((T, K, K), -np.inf)
    for t, a, b in itertools.product(range(T), range(K), range(K)):
        hit = (paths[:, t] == a) & (paths[:, t + 1] == b) & (scores > -np.inf)
        if hit.any():
            expected[t, a, b] = red(scores[hit]) - total
    assert np.allclose(_np(value), total)
    assert not np.isnan(_np(actual)).any()
    assert np.allclose(np.exp(_np(actual)), np.exp(expected))


@BACKEND_STRATEGIES
@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max], ids=["sum", "max"])
def test_tensor_markov_product_marginals_by_enumeration(backend, strategy, sum_op):
    tr, init_data = _tensor_chain()
    value, actual = _tensor_marginals(_arr(tr), _arr(init_data), sum_op, strategy)
    _check_tensor_marginals(tr, init_data, sum_op, value, actual)


def test_tensor_markov_product_marginals_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        tr, init_data = _tensor_chain()

        def marginals(tr_, init_):
            return [_tensor_marginals(tr_, init_, sum_op, strategy)
                    for sum_op in (ops.logaddexp, ops.max) for strategy in STRATEGIES]

        results = jax.jit(marginals)(_arr(tr), _arr(init_data))
        for (sum_op, _), (value, actual) in zip(
                itertools.product((ops.logaddexp, ops.max), STRATEGIES), results):
            _check_tensor_marginals(tr, init_data, sum_op, value, actual)
    finally:
        fc.set_backend("numpy")


def test_gaussian_markov_product_with_a_switched_regime():
    # A regime m ~ prior(m) that switches the whole chain's parameters (a Bint input of the
    # step, reduced outside the chain): the pair marginals are p(m | y) times each regime's
    # own smoother, p(m | y) by the hand-written Kalman filters' evidence.
    from tests.algorithms.chains.test_markov_gaussian import (
        _kalman_log_z,
        _linear_gaussian,
        _linear_gaussian_factors,
    )
    models = [_linear_gaussian(seed, duration=4) for seed in (6, 7)]
    factors = [_linear_gaussian_factors(*m) for m in models]

    def stacked(k, axis):
        g = [f[k] for f in factors]
        inputs = dict(g[0].inputs)
        names = list(inputs)
        inputs = {**{n: inputs[n] for n in names[:axis]}, "m": fc.Bint[2],
                  **{n: inputs[n] for n in names[axis:]}}
        return fc.Gaussian(white_vec=_arr(np.stack([_np(x.white_vec) for x in g], axis)),
                           prec_sqrt=_arr(np.stack([_np(x.prec_sqrt) for x in g], axis)),
                           inputs=inputs)

    trans, obs, prior = stacked(0, 1), stacked(1, 1), stacked(2, 0)
    weights = np.log([0.3, 0.7])
    regime = fc.Tensor(_arr(weights), {"m": fc.Bint[2]})
    with lazy:
        step = trans + obs
        mp = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"xp": "xc"})
        root = (regime + prior + mp).reduce(ops.logaddexp, frozenset({"xp", "xc", "m"}))
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    evidence = weights + np.array([_kalman_log_z(*m) for m in models])
    assert np.allclose(_np(log_z.data), np.logaddexp.reduce(evidence))
    post = np.exp(evidence - np.logaddexp.reduce(evidence))
    pair = adj[trans] + trans - log_z
    mass = np.exp(_np(pair.reduce(ops.logaddexp, frozenset({"xp", "xc"})).align(("t", "m")).data))
    assert np.allclose(mass, np.broadcast_to(post, mass.shape))
    assert np.allclose(np.exp(_np((adj[regime] + regime - log_z).data)), post)
    for m, (a, q, h, r, m0, p0, ys) in enumerate(models):
        means, covs = rts_smoother(a, q, h, r, a @ m0, a @ p0 @ a.T + q, ys)
        g = _gaussian_of(pair(m=m).reduce(ops.logaddexp, "xp"))
        assert np.allclose(_np(g.mean), means) and np.allclose(_np(g.covariance), covs)


@BACKEND_STRATEGIES
def test_gaussian_markov_product_max_marginals(backend, strategy):
    # In (max, add) each step's max-marginal peaks at 0 (the MAP path's score is the root)
    # and, a Gaussian, has the smoothed mean (the MAP of a linear-Gaussian chain) and the
    # smoothed covariance (its Hessian is the marginal precision).
    trans, obs, init, means, covs = _kalman(9)
    step = trans + obs
    with lazy:
        mp = MarkovProduct(ops.max, ops.add, step, "t", {"x_prev": "x_curr"}, strategy=strategy)
        root = (init + mp).reduce(ops.max, frozenset({"x_prev", "x_curr"}))
    value, adj = forward_backward(ops.max, ops.add, root)
    pair = adj[step] + step - value
    peak = pair.reduce(ops.max, frozenset({"x_prev", "x_curr"}))
    assert np.allclose(_np(peak.data), 0.0, atol=1e-8)
    g = _gaussian_of(pair.reduce(ops.max, "x_prev"))
    assert np.allclose(_np(g.mean), means) and np.allclose(_np(g.covariance), covs)


def test_gaussian_markov_product_samples_raise():
    # Posterior samples of a Gaussian chain: no silent zero adjoint for the steps; the
    # backward pass names the MarkovProduct.
    trans, obs, init, _, _ = _kalman(8, T=3)
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"x_prev": "x_curr"})
        root = (init + mp).reduce(ops.logaddexp, frozenset(mp.inputs))
    with pytest.raises(NotImplementedError, match="MarkovProduct"):
        forward_backward(ops.sample, ops.add, root, rng_key=0, sample_inputs={})


def test_markov_product_with_a_discrete_and_a_real_pair(backend):
    # A step with a Gaussian pair and an independent discrete pair (was: NotImplementedError):
    # run on the tape as its steps; the real marginals are the RTS smoother, the discrete
    # pair marginals those of enumeration. (A switching chain: test_adjoint_markov_switching.)
    # jax runs under jit: eagerly the tape compiled op by op (11 s) for the same code.
    trans, obs, init, means, covs = _kalman(8, T=3)
    tr = np.random.default_rng(0).normal(size=(3, 2, 2))

    def marginals(tw, ts, d_data):
        tr_ = fc.Gaussian(white_vec=tw, prec_sqrt=ts, inputs=trans.inputs)
        step = tr_ + obs + fc.Tensor(d_data, {"t": fc.Bint[3], "i": fc.Bint[2], "j": fc.Bint[2]})
        start = init + fc.Tensor(_arr(np.zeros(2)), {"i": fc.Bint[2]})
        with lazy:
            mp = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr", "i": "j"})
            root = (start + mp).reduce(ops.logaddexp, frozenset(mp.inputs))
        log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
        pair = adj[step] + step - log_z
        g = _gaussian_of(pair.reduce(ops.logaddexp, frozenset({"x_prev", "i", "j"})))
        discrete = pair.reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
        return g.mean, g.covariance, discrete.align(("t", "i", "j")).data

    if backend == "jax":
        import jax

        marginals = jax.jit(marginals)
    mean, cov, discrete = marginals(trans.white_vec, trans.prec_sqrt, _arr(tr))
    assert np.allclose(_np(mean), means) and np.allclose(_np(cov), covs)
    actual = np.exp(_np(discrete))
    paths, scores = _paths(np.zeros(2), tr)
    expected = np.zeros((3, 2, 2))
    for t, a, b in itertools.product(range(3), range(2), range(2)):
        hit = (paths[:, t] == a) & (paths[:, t + 1] == b)
        expected[t, a, b] = np.exp(np.logaddexp.reduce(scores[hit]) - np.logaddexp.reduce(scores))
    assert np.allclose(actual, expected)


# A term without a backward rule (here a Stack, computed on arrays) on the path from a leaf
# to the root: the leaf's adjoint is not silently zero; reading it raises, naming the term.
# The adjoint of the term's own value, and of what does not lie behind it, stay exact.
def test_reading_an_adjoint_behind_a_term_without_a_backward_rule_raises():
    a = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
    b = fc.Tensor(np.array([2.0, -1.0]), {"i": fc.Bint[2]})
    c = fc.Tensor(np.array([0.5, 0.3]), {"j": fc.Bint[2]})
    with lazy:
        s = fc.Stack("j", (a, b))
        z = (s + c).reduce(ops.logaddexp, frozenset({"i", "j"}))
    value, adj = forward_backward(ops.logaddexp, ops.add, z)
    joint = np.stack([a.data, b.data], 1) + c.data  # (i, j), by hand
    total = np.logaddexp.reduce(joint.ravel())
    assert np.allclose(_np(value.data), total)
    stacked = fc.reinterpret(s)
    marginal = (adj[s] + stacked - value).align(("i", "j")).data
    assert np.allclose(np.exp(marginal), np.exp(joint - total))
    assert np.allclose(np.exp(_np((adj[c] + c - value).data)),
                       np.exp(np.logaddexp.reduce(joint, 0) - total))
    for leaf in (a, b):
        with pytest.raises(NotImplementedError, match="passes through a Stack"):
            adj[leaf]


def test_tensor_markov_product_with_a_lazily_built_step(backend):
    # The README's HMM idiom: a shared transition matrix plus per-step observation scores,
    # added under lazy; each factor's adjoint gives its marginals, against enumeration.
    tr, init_data = _tensor_chain()
    T, K = tr.shape[:2]
    rng = np.random.default_rng(4)
    shared, scores = rng.normal(size=(K, K)), rng.normal(size=(T, K))
    trans = fc.Tensor(_arr(shared), {"x": fc.Bint[K], "y": fc.Bint[K]})
    obs = fc.Tensor(_arr(scores), {"t": fc.Bint[T], "y": fc.Bint[K]})
    init = fc.Tensor(_arr(init_data), {"x": fc.Bint[K]})
    strategy = "sequential" if backend == "jax" else None  # see the test above
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"x": "y"},
                           strategy=strategy)
        root = (init + mp).reduce(ops.logaddexp, frozenset("xy"))
    value, adj = forward_backward(ops.logaddexp, ops.add, root)
    paths, path_scores = _paths(init_data, shared[None] + scores[:, None, :])
    total = np.logaddexp.reduce(path_scores)
    assert np.allclose(_np(value.data), total)
    expected = np.array([[np.logaddexp.reduce(path_scores[paths[:, t + 1] == k]) - total
                          for k in range(K)] for t in range(T)])
    actual = _np((adj[obs] + obs - value).align(("t", "y")).data)
    assert np.allclose(np.exp(actual), np.exp(expected))
    # the shared matrix: the expected number of each transition, summed over time
    counts = np.zeros((K, K))
    for t in range(T):
        for a, b in itertools.product(range(K), range(K)):
            hit = (paths[:, t] == a) & (paths[:, t + 1] == b)
            counts[a, b] += np.exp(np.logaddexp.reduce(path_scores[hit]) - total)
    pair = _np((adj[trans] + trans - value).align(("x", "y")).data)
    assert np.allclose(np.exp(pair), counts)
