"""Ragged batches of discrete chains (``lengths=``, ``mask=``): ``markov_product``,
``markov_marginals`` and ``markov_map`` of a padded batch against the forward, smoothing
and Viterbi recursions in numpy run one sequence at a time on its unpadded steps, in the
sum and max semirings, on numpy, torch and under ``jax.jit`` with traced lengths.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals, markov_product, masked_steps
from interpretations import lazy

T, K = 6, 3
LENGTHS = np.array([1, T, 3, 0])  # a length-1, a full-length and an empty sequence


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=K), rng.normal(size=(K, K)),
            rng.normal(size=(T, len(LENGTHS), K)))


def _reduce(sum_op):
    return np.logaddexp.reduce if sum_op is ops.logaddexp else np.max


def _numpy_product(sum_op, a, o, b, n):
    # The semiring product of the first n steps a + o[t, b], (K, K); the identity for n = 0.
    red = _reduce(sum_op)
    out = np.where(np.eye(K) > 0, 0.0, -np.inf)
    for t in range(n):
        out = red(out[:, :, None] + (a + o[t, b][None, :])[None], axis=1)
    return out


def _numpy_smoother(init, a, o):
    # (log Z, pairs (n, K, K), last-state marginal) of one unpadded sequence o (n, K).
    n = o.shape[0]
    alpha = [init]
    for t in range(n):
        alpha.append(np.logaddexp.reduce(alpha[-1][:, None] + a, axis=0) + o[t])
    beta = [np.zeros(K)]
    for t in range(n - 1, -1, -1):
        beta.insert(0, np.logaddexp.reduce(a + (o[t] + beta[0])[None, :], axis=1))
    log_z = np.logaddexp.reduce(alpha[-1])
    pairs = np.array([np.exp(alpha[t][:, None] + a + (o[t] + beta[t + 1])[None] - log_z)
                      for t in range(n)]).reshape(n, K, K)
    return log_z, pairs, np.exp(alpha[-1] - log_z)


def _numpy_viterbi(init, a, o):
    delta, back = init.copy(), []
    for t in range(o.shape[0]):
        cand = delta[:, None] + a + o[t][None, :]
        back.append(cand.argmax(0))
        delta = cand.max(0)
    path = [int(delta.argmax())]
    for t in range(o.shape[0] - 1, -1, -1):
        path.insert(0, int(back[t][path[0]]))
    return delta.max(), path


def _chain(a, o, init=None):
    at = fc.Tensor(a, {"x": fc.Bint[K], "y": fc.Bint[K]})
    ot = fc.Tensor(o, {"t": fc.Bint[T], "b": fc.Bint[len(LENGTHS)], "y": fc.Bint[K]})
    with lazy:
        step = at + ot
    return step if init is None else (fc.Tensor(init, {"x": fc.Bint[K]}), step)


def _as(backend, x):
    if backend == "torch":
        import torch
        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return x


def _lengths(backend):
    return fc.Tensor(_as(backend, LENGTHS), {"b": fc.Bint[len(LENGTHS)]}, dtype=T + 1)


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_markov_product_ragged(backend, sum_op, strategy):
    _, a, o = _data()

    def product(a, o, lengths):
        n = fc.Tensor(lengths, {"b": fc.Bint[len(LENGTHS)]}, dtype=T + 1)
        mp = markov_product(sum_op, ops.add, _chain(a, o), "t", {"x": "y"}, strategy=strategy,
                            lengths=n)
        return mp.align(("b", "x", "y")).data

    if backend == "jax":  # under jit, the lengths traced (eager jax compiles op by op)
        import jax
        product = jax.jit(product)
    actual = ops.to_numpy(product(*(_as(backend, x) for x in (a, o, LENGTHS))))
    for b, n in enumerate(LENGTHS):
        np.testing.assert_allclose(actual[b], _numpy_product(sum_op, a, o, b, n), rtol=1e-10)


def test_markov_product_mask_skips_steps():
    # A 0/1 mask over (t, b) that skips steps in the middle: the product of the kept steps.
    _, a, o = _data(1)
    rng = np.random.default_rng(2)
    keep = rng.integers(0, 2, size=(T, len(LENGTHS)))
    mask = fc.Tensor(keep, {"t": fc.Bint[T], "b": fc.Bint[len(LENGTHS)]}, dtype=2)
    mp = markov_product(ops.logaddexp, ops.add, _chain(a, o), "t", {"x": "y"}, mask=mask)
    for b in range(len(LENGTHS)):
        kept = o[keep[:, b] == 1, b][:, None]
        expected = _numpy_product(ops.logaddexp, a, kept, 0, kept.shape[0])
        np.testing.assert_allclose(mp.align(("b", "x", "y")).data[b], expected, rtol=1e-10)


def test_marginals_and_viterbi_ragged_torch():
    torch = pytest.importorskip("torch")
    init, a, o = _data(3)
    fc.set_backend("torch")
    try:
        i, step = _chain(*(torch.tensor(x) for x in (a, o)), init=torch.tensor(init))
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                        lengths=_lengths("torch"))
        best, path = markov_map(step, "t", {"x": "y"}, [i], lengths=_lengths("torch"))
    finally:
        fc.set_backend("numpy")
    _check_smoothing(init, a, o, total.align(("b",)).data.numpy(),
                     pairs.align(("t", "b", "x", "y")).data.numpy())
    _check_viterbi(init, a, o, best.align(("b",)).data.numpy(),
                   path["x"].align(("t", "b")).data.numpy())


def test_marginals_and_viterbi_ragged_jax_jit_traced_lengths():
    jax = pytest.importorskip("jax")
    init, a, o = _data(4)

    def smooth(init, a, o, lengths):
        i, step = _chain(a, o, init=init)
        n = fc.Tensor(lengths, {"b": fc.Bint[len(LENGTHS)]}, dtype=T + 1)
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                        lengths=n)
        best, path = markov_map(step, "t", {"x": "y"}, [i], lengths=n, strategy="parallel")
        return (total.align(("b",)).data, pairs.align(("t", "b", "x", "y")).data,
                best.align(("b",)).data, path["x"].align(("t", "b")).data)

    fc.set_backend("jax")
    try:
        out = jax.jit(smooth)(*(jax.numpy.asarray(x) for x in (init, a, o, LENGTHS)))
    finally:
        fc.set_backend("numpy")
    _check_smoothing(init, a, o, np.asarray(out[0]), np.asarray(out[1]))
    _check_viterbi(init, a, o, np.asarray(out[2]), np.asarray(out[3]))


def _check_smoothing(init, a, o, total, pairs):
    for b, n in enumerate(LENGTHS):
        log_z, expected, last = _numpy_smoother(init, a, o[:n, b])
        np.testing.assert_allclose(total[b], log_z, rtol=1e-10)
        np.testing.assert_allclose(pairs[:n, b], expected, rtol=1e-9, atol=1e-12)
        # Past the length the state is carried: the last state's marginal on the diagonal.
        for t in range(n, T):
            np.testing.assert_allclose(pairs[t, b], np.diag(last), rtol=1e-9, atol=1e-12)


def _check_viterbi(init, a, o, best, path):
    for b, n in enumerate(LENGTHS):
        score, expected = _numpy_viterbi(init, a, o[:n, b])
        np.testing.assert_allclose(best[b], score, rtol=1e-12)
        np.testing.assert_array_equal(path[:n + 1, b], expected)
        np.testing.assert_array_equal(path[n + 1:, b], expected[-1])  # the last valid state


def test_masked_steps_shared_transition_gains_the_batch():
    # lengths over a batch name the steps lack: the masked steps gain it.
    a = np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))
    step = fc.Tensor(a, {"x": fc.Bint[2], "y": fc.Bint[2]})
    n = fc.Tensor(np.array([2, 0]), {"b": fc.Bint[2]})
    m = masked_steps(ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[2]), {"x": "y"},
                     lengths=n)
    assert m.inputs == {"t": fc.Bint[2], "b": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]}
    np.testing.assert_array_equal(m.data[:, 0], [a, a])
    np.testing.assert_array_equal(m.data[0, 1], np.where(np.eye(2) > 0, 0.0, -np.inf))


@pytest.mark.parametrize("lengths,match", [
    (np.array([1, 7, 3, 0]), r"lengths must be integers in 0\.\.6 .*'t'.*\[7\]"),
    (np.array([1, -1, 3, 0]), r"lengths must be integers in 0\.\.6 .*\[-1\]"),
])
def test_bad_lengths_are_named(lengths, match):
    _, a, o = _data()
    n = fc.Tensor(lengths, {"b": fc.Bint[4]})
    with pytest.raises(ValueError, match=match):
        markov_product(ops.logaddexp, ops.add, _chain(a, o), "t", {"x": "y"}, lengths=n)


def test_bad_inputs_are_named():
    _, a, o = _data()
    step = _chain(a, o)
    over_state = fc.Tensor(np.ones(K, dtype=int), {"x": fc.Bint[K]})
    with pytest.raises(ValueError, match=r"lengths has the step names \['x'\]"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, lengths=over_state)
    over_time = fc.Tensor(np.ones(T, dtype=int), {"t": fc.Bint[T]})
    with pytest.raises(ValueError, match=r"lengths has inputs \['t'\]"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, lengths=over_time)
    with pytest.raises(TypeError, match="lengths must be a Tensor"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, lengths=[1, 2, 3, 4])
    twos = fc.Tensor(np.full((T, 4), 2), {"t": fc.Bint[T], "b": fc.Bint[4]})
    with pytest.raises(ValueError, match="mask must hold 0/1"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, mask=twos)
    g = fc.Gaussian(mean=np.zeros((T, 2)), covariance=np.broadcast_to(np.eye(2), (T, 2, 2)),
                    inputs={"t": fc.Bint[T], "u": fc.Real, "v": fc.Real})
    with pytest.raises(NotImplementedError, match="needs the steps as Tensors.*takes "
                                                  "lengths=, not mask="):
        markov_product(ops.logaddexp, ops.add, g, "t", {"u": "v"},
                       mask=fc.Tensor(np.ones(T, dtype=int), {"t": fc.Bint[T]}))
    with pytest.raises(ValueError, match=r"Gaussian chain of 0 steps .* got \[0\]"):
        markov_product(ops.logaddexp, ops.add, g, "t", {"u": "v"}, lengths=fc.Tensor(np.array(0)))


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_ragged_filter_total_under_jit_traced_lengths(sum_op):
    # (init + markov_product(lengths=n)) summed over the states: the forward algorithm (or
    # the best score) of each unpadded sequence, with lengths traced by jax.jit.
    jax = pytest.importorskip("jax")
    init, a, o = _data(5)

    def total(init, a, o, lengths):
        i, step = _chain(a, o, init=init)
        n = fc.Tensor(lengths, {"b": fc.Bint[len(LENGTHS)]}, dtype=T + 1)
        with lazy:
            chain = markov_product(sum_op, ops.add, step, "t", {"x": "y"}, lengths=n)
        return (i + chain).reduce(sum_op, {"x", "y"}).align(("b",)).data

    fc.set_backend("jax")
    try:
        out = np.asarray(jax.jit(total)(*(jax.numpy.asarray(x) for x in (init, a, o, LENGTHS))))
    finally:
        fc.set_backend("numpy")
    red = _reduce(sum_op)
    for b, n in enumerate(LENGTHS):
        expected = red(init[:, None] + _numpy_product(sum_op, a, o, b, n), axis=None)
        np.testing.assert_allclose(out[b], expected, rtol=1e-10)


def test_marginals_with_a_mask_equal_lengths():
    # A prefix mask is the same as its lengths.
    torch = pytest.importorskip("torch")
    init, a, o = _data(6)
    keep = (np.arange(T)[:, None] < LENGTHS[None]).astype(int)
    fc.set_backend("torch")
    try:
        i, step = _chain(*(torch.tensor(x) for x in (a, o)), init=torch.tensor(init))
        mask = fc.Tensor(torch.tensor(keep), {"t": fc.Bint[T], "b": fc.Bint[len(LENGTHS)]},
                         dtype=2)
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                        mask=mask)
    finally:
        fc.set_backend("numpy")
    _check_smoothing(init, a, o, total.align(("b",)).data.numpy(),
                     pairs.align(("t", "b", "x", "y")).data.numpy())


def _gaussian_steps(w, s, lengths_b):
    return fc.Gaussian(white_vec=w, prec_sqrt=s,
                       inputs={"t": fc.Bint[w.shape[0]], "b": fc.Bint[lengths_b],
                               "u": fc.Reals[2], "v": fc.Reals[2]})


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max])
def test_gaussian_markov_product_ragged_against_one_at_a_time(sum_op):
    # Each entry's product of its first lengths[b] steps, against MarkovProduct of the
    # unpadded steps (the unmasked code), compared at random points, on numpy, torch and
    # under jax.jit with traced lengths.
    jax = pytest.importorskip("jax")
    from tests.backend_values import as_backend_array, to_numpy

    rng = np.random.default_rng(8)
    lengths = np.array([1, T, 2])
    w, s = rng.normal(size=(T, 3, 4)), rng.normal(size=(T, 3, 4, 4)) + 3 * np.eye(4)
    points = rng.normal(size=(5, 2, 2))

    def ragged(w, s, lengths, points):
        n = fc.Tensor(lengths, {"b": fc.Bint[3]}, dtype=T + 1)
        mp = markov_product(sum_op, ops.add, _gaussian_steps(w, s, 3), "t", {"u": "v"},
                            lengths=n)
        p = fc.Tensor(points, {"p": fc.Bint[5]})
        return mp(u=p[:, 0], v=p[:, 1]).align(("p", "b")).data

    jitted = jax.jit(ragged)
    for name, run in (("numpy", ragged), ("torch", ragged), ("jax", jitted)):
        fc.set_backend(name)
        try:
            actual = to_numpy(run(*(as_backend_array(x, name)
                                    for x in (w, s, lengths, points))))
        finally:
            fc.set_backend("numpy")
        for b, n in enumerate(lengths):
            one = fc.MarkovProduct(sum_op, ops.add, _gaussian_steps(w[:n], s[:n], 3)(b=b),
                                   "t", {"u": "v"})
            p = fc.Tensor(points, {"p": fc.Bint[5]})
            expected = one(u=p[:, 0], v=p[:, 1]).align(("p",)).data
            np.testing.assert_allclose(actual[:, b], expected, rtol=1e-8, atol=1e-10)
    # A traced length 0 (an empty Gaussian chain, a ValueError eagerly) gives NaN for its
    # entry only; it gave the first step's product (the same compiled program: no compile).
    fc.set_backend("jax")
    try:
        empty = to_numpy(jitted(*(as_backend_array(x, "jax")
                                  for x in (w, s, np.array([1, T, 0]), points))))
    finally:
        fc.set_backend("numpy")
    assert np.isnan(empty[:, 2]).all()
    np.testing.assert_allclose(empty[:, :2], actual[:, :2], rtol=1e-12)


def test_lengths_or_mask_of_another_domain_are_named():
    # A batch or time name shared with the chain must keep its domain (it failed in a
    # reshape, or a broadcast, deep in the kernel).
    _, a, o = _data()
    step = _chain(a, o)
    short = fc.Tensor(np.array([1, 2]), {"b": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"lengths has input 'b' as Bint\[2\], but the chain "
                                         r"has 'b' as Bint\[4\]"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, lengths=short)
    mask = fc.Tensor(np.ones((T - 1, 4)), {"t": fc.Bint[T - 1], "b": fc.Bint[4]})
    with pytest.raises(ValueError, match=rf"mask has input 't' as Bint\[{T - 1}\], but the "
                                         rf"chain has 't' as Bint\[{T}\]"):
        markov_product(ops.logaddexp, ops.add, step, "t", {"x": "y"}, mask=mask)
    with pytest.raises(ValueError, match=r"lengths has input 'b' as Bint\[2\]"):
        fc.windowed_filter(ops.logaddexp, ops.add, step, "t", {"x": "y"},
                           fc.Tensor(np.zeros(K), {"x": fc.Bint[K]}), lengths=short)


def test_normal_random_walk_with_lengths_against_dense_covariances():
    # The README's Kalman idiom (Normal steps plus readings, a Gaussian plus a Tensor) with
    # lengths=: each entry's log p(y_1..y_n) against the multivariate normal density of the
    # dense covariance of the walk (numpy by hand). Called under `with lazy:` (as the Tensor
    # example is), the partial products stay lazy: an error that says to call it outside
    # (h79; it said only "the carried message is Reduce").
    from funsor_core.distribution import Normal

    rng = np.random.default_rng(3)
    y, lengths = rng.normal(size=(4, 2)), np.array([4, 2])
    xp, xc = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
    walk = Normal(xp, 1.0, xc) + Normal(xc, 0.5, fc.Tensor(y, {"t": fc.Bint[4], "b": fc.Bint[2]}))
    n = fc.Tensor(lengths, {"b": fc.Bint[2]})
    chain = markov_product(ops.logaddexp, ops.add, walk, "t", {"x_prev": "x_curr"}, lengths=n)
    log_z = (Normal(0.0, 1.0, xp) + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
    for b, m in enumerate(lengths):
        walk_cov = np.minimum.outer(np.arange(m + 1), np.arange(m + 1)) + 1.0  # x_0 ~ N(0, 1)
        cov = walk_cov[1:, 1:] + 0.25 * np.eye(m)
        obs = y[:m, b]
        expected = -0.5 * (obs @ np.linalg.solve(cov, obs) + np.linalg.slogdet(2 * np.pi * cov)[1])
        np.testing.assert_allclose(log_z.align(("b",)).data[b], expected, rtol=1e-10)
    with lazy:
        with pytest.raises(NotImplementedError, match="lazy(.|\n)*outside `with lazy:`"):
            markov_product(ops.logaddexp, ops.add, walk, "t", {"x_prev": "x_curr"}, lengths=n)
