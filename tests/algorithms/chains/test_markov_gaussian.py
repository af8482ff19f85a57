"""MarkovProduct of Gaussian chains (Kalman-style), of Gaussian + Tensor chains and of chains
mixing a discrete and a real step pair: every strategy against the naive left fold and
against a dense closed form in numpy (the joint quadratic over all states, the inner states
integrated out by a Schur complement), with one and two step pairs, batch inputs and global
real variables that are not eliminated.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, naive_sequential_sum_product
from funsor_core.testing import random_gaussian, random_tensor
from interpretations import lazy

STRATEGIES = ["parallel", "sequential", "auto"]
_RNG = np.random.default_rng(7)
DURATIONS = sorted({1, 2, 3, 5, 8, 13, 16, 29, 50}
                   | set(_RNG.choice(np.arange(4, 50), 2, replace=False).tolist()))


def _real_names(inputs):
    return [n for n, d in inputs.items() if d.dtype == "real"]


def _dense_oracle(g, const, time, step, glob, point, batch_index):
    """log of the integral over the inner states of sum_t g_t (+ const_t), at ``point``
    (values of the first prevs, last currs and globals), for one batch index, by dense
    linear algebra on the arrays of ``g`` (numpy)."""
    duration = g.inputs[time].size
    prevs, currs = list(step), list(step.values())
    dims = {n: g.inputs[n].num_elements for n in _real_names(g.inputs)}
    offsets, at = {}, 0
    for n in _real_names(g.inputs):
        offsets[n] = at
        at += dims[n]
    # The joint vector: states 0..T of each pair (prev name p's state k), then the globals.
    slots, at = {}, 0
    for k in range(duration + 1):
        for p in prevs:
            slots[(p, k)] = at
            at += dims[p]
    for n in glob:
        slots[(n, None)] = at
        at += dims[n]
    size = at
    lam, eta, c = np.zeros((size, size)), np.zeros(size), 0.0
    w_all, s_all = np.asarray(g.white_vec), np.asarray(g.prec_sqrt)
    for t in range(duration):
        w, s = w_all[(t, *batch_index)], s_all[(t, *batch_index)]
        emb = np.zeros((s.shape[0], size))  # rows of g's x -> joint coordinates
        for n in _real_names(g.inputs):
            if n in step:
                key = (n, t)
            elif n in currs:
                key = (prevs[currs.index(n)], t + 1)
            else:
                key = (n, None)
            for j in range(dims[n]):
                emb[offsets[n] + j, slots[key] + j] = 1.0
        js = emb.T @ s  # (size, rank)
        lam += js @ js.T
        eta += js @ w
        c += -0.5 * w @ w + const[(t, *batch_index)]
    kept = [i for (p, k), at in slots.items() if k in (0, duration, None)
            for i in range(at, at + dims[p])]
    inner = [i for i in range(size) if i not in kept]
    x = np.zeros(size)
    for (p, k), at in slots.items():
        if k == 0:
            x[at:at + dims[p]] = point[p]
        elif k == duration:
            x[at:at + dims[p]] = point[step[p]]
        elif k is None:
            x[at:at + dims[p]] = point[p]
    xk = x[kept]
    value = -0.5 * xk @ lam[np.ix_(kept, kept)] @ xk + eta[kept] @ xk + c
    if inner:
        a = lam[np.ix_(inner, inner)]
        b = eta[inner] - lam[np.ix_(inner, kept)] @ xk
        value += 0.5 * b @ np.linalg.solve(a, b) + 0.5 * (
            len(inner) * np.log(2 * np.pi) - np.linalg.slogdet(a)[1])
    return value


def _evaluate(result, point, batch):
    # result at the point (real inputs), as an array over the batch inputs.
    values = {k: fc.Tensor(np.asarray(v)) for k, v in point.items()}
    out = result(**values)
    return np.asarray(out.align(tuple(batch)).data) if batch else np.asarray(out.data)


@pytest.mark.parametrize("glob", [False, True], ids=["noglobal", "global"])
@pytest.mark.parametrize("batch", [False, True], ids=["nobatch", "batch"])
@pytest.mark.parametrize("pairs", [1, 2])
def test_gaussian_chain_strategies(pairs, batch, glob):
    rng = np.random.default_rng(10 * pairs + 2 * batch + glob)
    for duration in DURATIONS[:: 2 if (batch and glob) else 1]:
        inputs = {"t": fc.Bint[duration]}
        if batch:
            inputs["b"] = fc.Bint[2]
        step = {}
        for k, dim in enumerate([2, 1][:pairs]):
            inputs[f"p{k}"] = fc.Reals[dim]
            inputs[f"c{k}"] = fc.Reals[dim]
            step[f"p{k}"] = f"c{k}"
        if glob:
            inputs["bias"] = fc.Reals[1]
        g = random_gaussian(inputs)
        const_inputs = {k: d for k, d in inputs.items() if d.dtype != "real"}
        const = random_tensor(const_inputs)
        trans = g + const
        expected = naive_sequential_sum_product(ops.logaddexp, ops.add, trans, "t", step)
        batch_names = [n for n in ("b",) if batch]
        point = {n: rng.normal(size=d.shape) for n, d in inputs.items() if d.dtype == "real"}
        oracle = np.array([
            _dense_oracle(g, np.asarray(const.data), "t", step, ["bias"] if glob else [],
                          point, idx)
            for idx in (np.ndindex(2) if batch else [()])])
        oracle = oracle.reshape((2,) if batch else ())
        np.testing.assert_allclose(_evaluate(expected, point, batch_names), oracle, rtol=1e-8,
                                   err_msg=f"naive T={duration}")
        for strategy in STRATEGIES:
            actual = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step, strategy=strategy)
            assert set(actual.inputs) == set(expected.inputs)
            np.testing.assert_allclose(_evaluate(actual, point, batch_names), oracle,
                                       rtol=1e-8, err_msg=f"{strategy} T={duration}")


def test_gaussian_without_constant_and_time_absent():
    # A Gaussian step the same at every time: T steps by repeated squaring (against the
    # same step with a time input).
    g = random_gaussian({"p": fc.Reals[2], "c": fc.Reals[2]})
    for duration in (1, 2, 6, 11):
        w = np.broadcast_to(g.white_vec, (duration,) + g.white_vec.shape)
        s = np.broadcast_to(g.prec_sqrt, (duration,) + g.prec_sqrt.shape)
        timed = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={"t": fc.Bint[duration], **g.inputs})
        expected = MarkovProduct(ops.logaddexp, ops.add, timed, "t", {"p": "c"})
        actual = MarkovProduct(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[duration]),
                               {"p": "c"})
        point = {"p": np.array([0.3, -0.2]), "c": np.array([1.0, 0.5])}
        np.testing.assert_allclose(_evaluate(actual, point, []), _evaluate(expected, point, []))


def test_mixed_discrete_and_real_pairs():
    # A Gaussian over the real pair plus a Tensor over the discrete pair: the two chains are
    # independent, so the product is the sum of a Gaussian chain and a discrete chain.
    rng = np.random.default_rng(11)
    for duration in (1, 4, 7):
        g = random_gaussian({"t": fc.Bint[duration], "x": fc.Real, "y": fc.Real})
        d = fc.Tensor(rng.normal(size=(duration, 3, 3)),
                      {"t": fc.Bint[duration], "i": fc.Bint[3], "j": fc.Bint[3]})
        step = {"x": "y", "i": "j"}
        expected = (MarkovProduct(ops.logaddexp, ops.add, g, "t", {"x": "y"})
                    + MarkovProduct(ops.logaddexp, ops.add, d, "t", {"i": "j"}))
        point = {"x": np.array(0.4), "y": np.array(-1.1)}
        for strategy in STRATEGIES:
            actual = MarkovProduct(ops.logaddexp, ops.add, g + d, "t", step, strategy=strategy)
            np.testing.assert_allclose(_evaluate(actual, point, ["i", "j"]),
                                       _evaluate(expected, point, ["i", "j"]), rtol=1e-9)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("glob", [False, True], ids=["noglobal", "global"])
def test_gaussian_filter_with_boundaries(glob, strategy):
    # A Kalman filter: the chain built lazily and reduced with a prior over its first state
    # (and/or a factor of its last state): the boundaries fold into the chain; against the
    # chain evaluated first (the naive fold) and then contracted.
    for duration in (1, 2, 7):
        inputs = {"t": fc.Bint[duration], "b": fc.Bint[2], "p": fc.Reals[2], "c": fc.Reals[2]}
        if glob:
            inputs["bias"] = fc.Real
        g = random_gaussian(inputs) + random_tensor({"t": fc.Bint[duration]})
        first = random_gaussian({"p": fc.Reals[2], **({"bias": fc.Real} if glob else {})})
        last = random_gaussian({"b": fc.Bint[2], "c": fc.Reals[2]})
        bias_prior = random_gaussian({"bias": fc.Real}) if glob else None
        expected_chain = naive_sequential_sum_product(ops.logaddexp, ops.add, g, "t",
                                                      {"p": "c"})
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, g, "t", {"p": "c"}, strategy=strategy)
        for terms, names in [((first,), {"p"}), ((last,), {"c"}), ((first, last), {"p", "c"}),
                             ((first, last), {"p", "c", "b"}), ((), {"p"})]:
            if bias_prior is not None:
                terms = terms + (bias_prior,)
                names = names | {"bias"}
            actual, expected = chain, expected_chain
            for f in terms:
                actual, expected = actual + f, expected + f
            actual = actual.reduce(ops.logaddexp, frozenset(names))
            expected = expected.reduce(ops.logaddexp, frozenset(names))
            point = {n: np.full(d.shape, 0.3) for n, d in expected.inputs.items()
                     if d.dtype == "real"}
            kept = [n for n in ("b",) if n in expected.inputs]
            np.testing.assert_allclose(_evaluate(actual, point, kept),
                                       _evaluate(expected, point, kept), rtol=1e-8,
                                       err_msg=f"T={duration} {sorted(names)}")


def test_divergent_inner_state_is_reported():
    # No information at all (a zero square root): integrating an inner state out diverges,
    # and the eager chain says so instead of returning +inf.
    inputs = {"t": fc.Bint[3], "p": fc.Real, "c": fc.Real}
    g = fc.Gaussian(white_vec=np.zeros((3, 1)), prec_sqrt=np.zeros((3, 2, 1)), inputs=inputs)
    for strategy in ("parallel", "sequential"):
        with pytest.raises(ValueError, match="cannot marginalize"):
            MarkovProduct(ops.logaddexp, ops.add, g, "t", {"p": "c"}, strategy=strategy)


def _kalman_program(d, duration):
    # A Kalman log likelihood as a user writes it: a shared transition density over
    # (p, c), an observation factor per step over c, a prior over the first state.
    def run(trans_sqrt, obs_vec, obs_sqrt, prior_vec, prior_sqrt):
        trans = fc.Gaussian(white_vec=ops.new_zeros(trans_sqrt, (trans_sqrt.shape[-1],)),
                            prec_sqrt=trans_sqrt, inputs={"p": fc.Reals[d], "c": fc.Reals[d]})
        obs = fc.Gaussian(white_vec=obs_vec, prec_sqrt=obs_sqrt,
                          inputs={"t": fc.Bint[duration], "c": fc.Reals[d]})
        prior = fc.Gaussian(white_vec=prior_vec, prec_sqrt=prior_sqrt, inputs={"p": fc.Reals[d]})
        step = trans + obs
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"p": "c"},
                                  strategy="sequential")
        return (prior + chain).reduce(ops.logaddexp, {"p", "c"}).data

    return run


@pytest.mark.parametrize("case", ["well", "stiff", "singular"])
def test_jit_kalman_filter_rank_decisions(case):
    # Under jax.jit the filter first runs without the rank tests of its steps where a cheap
    # bound shows they change nothing, and reruns with them otherwise. Every case equals the
    # eager (numpy) result: a well-conditioned chain, a stiff one (a coordinate's process
    # noise 1e-16 of the other's: the bound cannot decide, the tests pass) and one whose last
    # state no factor informs (the integral diverges: +inf under jit, an error eagerly).
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(7)
    d, duration = 2, 40
    f = 0.9 * np.eye(d) + 0.05 * rng.normal(size=(d, d))
    noise = np.array([1.0, 1e-16 if case == "stiff" else 0.5])
    lq = np.diag(1.0 / np.sqrt(noise))  # a square root of Q^{-1}
    trans_sqrt = np.concatenate([-(f.T @ lq), lq], 0)
    h = rng.normal(size=(1 if case == "singular" else d, d))
    obs_sqrt = np.broadcast_to(h.T[None] * 2.0, (duration, d, h.shape[0])).copy()
    obs_vec = rng.normal(size=(duration, h.shape[0]))
    if case == "singular":  # the transition tells nothing about the next state
        trans_sqrt = np.zeros_like(trans_sqrt)
    args = (trans_sqrt, obs_vec, obs_sqrt, rng.normal(size=d), np.eye(d))
    run = _kalman_program(d, duration)
    if case == "singular":
        with pytest.raises(ValueError, match="cannot marginalize"):
            run(*args)
    else:
        expected = float(run(*args))
        assert np.isfinite(expected)
    fc.set_backend("jax")
    try:
        actual = float(jax.jit(run)(*(jax.numpy.asarray(x) for x in args)))
        grads = jax.grad(lambda *xs: run(*xs), argnums=(1,))(
            *(jax.numpy.asarray(x) for x in args))
    finally:
        fc.set_backend("numpy")
    if case == "singular":
        assert actual == np.inf
    else:
        np.testing.assert_allclose(actual, expected, rtol=1e-9)
        assert np.isfinite(np.asarray(grads[0])).all()


# ---------------------------------------------------------------------------------------------
# Guards: sequential_sum_product of a Gaussian chain of a length that is not a power of two,
# eager and lazy then reinterpreted, against the naive left fold at random points.
# (Moved from tests/test_regressions_8.py, defect 2.)
def _at_points(factor, names, seed=0, count=4):
    # A Gaussian-valued result as numbers: its log density at a few random points.
    rng = np.random.default_rng(seed)
    return np.array([float(factor(**dict(zip(names, rng.normal(size=len(names))))).data)
                     for _ in range(count)])


@pytest.mark.parametrize("duration", [3, 5, 7, 100])
def test_sequential_sum_product_gaussian_chain(duration):
    from funsor_core.sum_product import sequential_sum_product

    trans = random_gaussian({"t": fc.Bint[duration], "x": fc.Real, "y": fc.Real})
    result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    naive = naive_sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert set(result.inputs) == {"x", "y"}
    assert np.allclose(_at_points(result, "xy"), _at_points(naive, "xy"), rtol=1e-8)


def test_sequential_sum_product_gaussian_lazy_odd_length():
    from funsor_core.sum_product import sequential_sum_product

    trans = random_gaussian({"t": fc.Bint[7], "x": fc.Real, "y": fc.Real})
    with lazy:
        result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    result = fc.reinterpret(result)
    naive = naive_sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert np.allclose(_at_points(result, "xy"), _at_points(naive, "xy"), rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# A Gaussian step built under lazy (the README's HMM idiom: `with lazy: MarkovProduct(...,
# trans + obs, ...)`) evaluates as the eagerly built one, against a hand-written Kalman
# filter in numpy.
def _arr(x):
    return fc.numeric_array(np.array(x, dtype=float))


def _linear_gaussian(seed, duration=6, d=2):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d)) * 0.6
    q = np.diag(rng.uniform(0.2, 0.6, size=d))
    h = rng.normal(size=(d, d))
    r = np.diag(rng.uniform(0.3, 0.8, size=d))
    m0, p0, ys = rng.normal(size=d), np.eye(d), rng.normal(size=(duration, d))
    return a, q, h, r, m0, p0, ys


def _kalman_log_z(a, q, h, r, m0, p0, ys):
    # log p(y) by the textbook filter, plus the log normalizers that the unnormalized
    # factors below leave out, so that it is their log Z.
    d = len(m0)
    m, p, total = m0, p0, 0.0
    for y in ys:
        m, p = a @ m, a @ p @ a.T + q
        s = h @ p @ h.T + r
        e = y - h @ m
        total += -0.5 * (np.linalg.slogdet(2 * np.pi * s)[1] + e @ np.linalg.solve(s, e))
        k = p @ h.T @ np.linalg.inv(s)
        m, p = m + k @ e, (np.eye(d) - k @ h) @ p
    total += 0.5 * len(ys) * (np.linalg.slogdet(2 * np.pi * q)[1]
                              + np.linalg.slogdet(2 * np.pi * r)[1])
    return total + 0.5 * np.linalg.slogdet(2 * np.pi * p0)[1]


def _linear_gaussian_factors(a, q, h, r, m0, p0, ys):
    duration, d = ys.shape
    li = np.linalg.inv(np.linalg.cholesky(q))
    trans_sqrt = np.concatenate([-a.T @ li.T, li.T], 0)
    ri_sqrt = np.linalg.inv(np.linalg.cholesky(r))  # -|R^-1/2 (y - H x)|^2 / 2
    trans = fc.Gaussian(white_vec=_arr(np.zeros((duration, d))),
                        prec_sqrt=_arr(np.broadcast_to(trans_sqrt, (duration, 2 * d, d))),
                        inputs={"t": fc.Bint[duration], "xp": fc.Reals[d], "xc": fc.Reals[d]})
    obs = fc.Gaussian(white_vec=_arr(ys @ ri_sqrt.T),
                      prec_sqrt=_arr(np.broadcast_to(h.T @ ri_sqrt.T, (duration, d, d))),
                      inputs={"t": fc.Bint[duration], "xc": fc.Reals[d]})
    prior = fc.Gaussian(mean=_arr(m0), covariance=_arr(p0), inputs={"xp": fc.Reals[d]})
    return trans, obs, prior


@pytest.mark.parametrize("strategy", ["parallel", "sequential", None])
def test_gaussian_step_built_lazily_evaluates(backend, strategy):
    args = _linear_gaussian(0)
    expected = _kalman_log_z(*args)
    trans, obs, prior = _linear_gaussian_factors(*args)
    for lazy_step in (True, False):
        if lazy_step:
            with lazy:
                step = trans + obs
                chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"xp": "xc"},
                                      strategy=strategy)
        else:
            step = trans + obs
            with lazy:
                chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"xp": "xc"},
                                      strategy=strategy)
        result = (prior + chain).reduce(ops.logaddexp, frozenset({"xp", "xc"}))
        assert isinstance(result, fc.Tensor), type(result).__name__
        np.testing.assert_allclose(float(ops.to_numpy(result.data)), expected, rtol=1e-9)
        # and the chain alone, integrated afterwards
        whole = MarkovProduct(ops.logaddexp, ops.add, chain.trans, "t", {"xp": "xc"},
                              strategy=strategy)
        total = (prior + whole).reduce(ops.logaddexp, frozenset({"xp", "xc"}))
        np.testing.assert_allclose(float(ops.to_numpy(total.data)), expected, rtol=1e-9)


def test_gaussian_step_built_lazily_under_jit():
    jax = pytest.importorskip("jax")
    args = _linear_gaussian(1)
    expected = _kalman_log_z(*args)
    fc.set_backend("jax")
    try:
        trans, obs, prior = _linear_gaussian_factors(*args)

        def log_z(w, s):
            tr = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=trans.inputs)
            out = []
            for strategy in ("parallel", "sequential"):
                with lazy:
                    chain = MarkovProduct(ops.logaddexp, ops.add, tr + obs, "t", {"xp": "xc"},
                                          strategy=strategy)
                out.append((prior + chain).reduce(ops.logaddexp, frozenset({"xp", "xc"})).data)
            return out

        for value in jax.jit(log_z)(trans.white_vec, trans.prec_sqrt):
            np.testing.assert_allclose(float(value), expected, rtol=1e-9)
    finally:
        fc.set_backend("numpy")


# A chain whose inner state has a coordinate that no factor informs: every backend, eager jax
# included (its arrays are concrete), raises naming the coordinate, for the chain alone, the
# filter (with a prior) and both strategies.
def test_uninformed_coordinate_raises_on_every_backend(backend):
    duration = 3
    s = np.zeros((duration, 4, 4))
    s[:, 0, 0], s[:, 2, 1], s[:, 0, 2] = 1.0, 1.0, 0.5  # xc[1] gets no information
    g = fc.Gaussian(white_vec=_arr(np.zeros((duration, 4))), prec_sqrt=_arr(s),
                    inputs={"t": fc.Bint[duration], "xp": fc.Reals[2], "xc": fc.Reals[2]})
    prior = fc.Gaussian(mean=_arr(np.zeros(2)), covariance=_arr(np.eye(2)),
                        inputs={"xp": fc.Reals[2]})
    for strategy in ("parallel", "sequential"):
        with pytest.raises(ValueError, match=r"xc\)\[1\]"):
            MarkovProduct(ops.logaddexp, ops.add, g, "t", {"xp": "xc"}, strategy=strategy)
        with lazy:
            mp = MarkovProduct(ops.logaddexp, ops.add, g, "t", {"xp": "xc"}, strategy=strategy)
        with pytest.raises(ValueError, match=r"xc\)\[1\]"):
            (prior + mp).reduce(ops.logaddexp, frozenset({"xp"}))
