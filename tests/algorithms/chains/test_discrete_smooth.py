"""Smoothing (posterior marginals) and Viterbi decoding of discrete chains by the derivative
of the chain's total, against the forward-backward and Viterbi recursions written in numpy,
for both strategies, on torch and under ``jax.jit``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals
from interpretations import lazy


def _numpy_smoother(init, a, o):
    # Pairwise posteriors p(x_{t-1}, x_t | all) per sequence b, by forward-backward in numpy.
    duration, batch, k = o.shape
    alpha = np.empty((duration + 1, batch, k))
    alpha[0] = init
    for t in range(duration):
        alpha[t + 1] = np.logaddexp.reduce(alpha[t][:, :, None] + a, axis=1) + o[t]
    beta = np.zeros((duration + 1, batch, k))
    for t in range(duration - 1, -1, -1):
        beta[t] = np.logaddexp.reduce(a + (o[t] + beta[t + 1])[:, None, :], axis=2)
    log_z = np.logaddexp.reduce(alpha[-1], axis=-1)
    pairs = (alpha[:-1][:, :, :, None] + a + (o + beta[1:])[:, :, None, :]
             - log_z[None, :, None, None])
    return log_z, np.exp(pairs)


def _numpy_viterbi(init, a, o):
    duration, batch, k = o.shape
    paths, scores = [], []
    for b in range(batch):
        delta, back = init.copy(), []
        for t in range(duration):
            cand = delta[:, None] + a + o[t, b][None, :]
            back.append(cand.argmax(0))
            delta = cand.max(0)
        state = int(delta.argmax())
        path = [state]
        for t in range(duration - 1, -1, -1):
            state = int(back[t][state])
            path.append(state)
        paths.append(path[::-1])
        scores.append(delta.max())
    return np.array(scores), np.array(paths).T  # (T + 1, batch)


def _chain(init, a, o):
    k, (duration, batch, _) = init.shape[0], o.shape
    i = fc.Tensor(init, {"x": fc.Bint[k]})
    at = fc.Tensor(a, {"x": fc.Bint[k], "y": fc.Bint[k]})
    ot = fc.Tensor(o, {"t": fc.Bint[duration], "b": fc.Bint[batch], "y": fc.Bint[k]})
    with lazy:
        step = at + ot
    return i, step


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_marginals_and_viterbi_torch(strategy):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    init, a, o = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(7, 2, 3))
    log_z, pairs = _numpy_smoother(init, a, o)
    scores, path = _numpy_viterbi(init, a, o)
    fc.set_backend("torch")
    try:
        i, step = _chain(*(torch.tensor(x) for x in (init, a, o)))
        total, actual = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                         strategy=strategy)
        best, decoded = markov_map(step, "t", {"x": "y"}, [i], strategy=strategy)
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(total.align(("b",)).data.numpy(), log_z, rtol=1e-10)
    np.testing.assert_allclose(actual.align(("t", "b", "x", "y")).data.numpy(), pairs,
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(best.align(("b",)).data.numpy(), scores, rtol=1e-12)
    np.testing.assert_array_equal(decoded["x"].align(("t", "b")).data.numpy(), path)


def test_marginals_and_viterbi_jax_jit():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    init, a, o = rng.normal(size=4), rng.normal(size=(4, 4)), rng.normal(size=(10, 3, 4))
    log_z, pairs = _numpy_smoother(init, a, o)
    scores, path = _numpy_viterbi(init, a, o)

    def smooth(init, a, o):
        i, step = _chain(init, a, o)
        total, marg = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])
        best, decoded = markov_map(step, "t", {"x": "y"}, [i], strategy="parallel")
        return (total.align(("b",)).data, marg.align(("t", "b", "x", "y")).data,
                best.align(("b",)).data, decoded["x"].align(("t", "b")).data)

    fc.set_backend("jax")
    try:
        out = jax.jit(smooth)(*(jnp.asarray(x) for x in (init, a, o)))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(out[0]), log_z, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(out[1]), pairs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(out[2]), scores, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(out[3]), path)


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_numpy_chains_by_torch_autograd(dtype, tol):
    # numpy has no autodiff: the chain is differentiated by torch, the results are numpy
    pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    init, a, o = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(6, 2, 3))
    log_z, pairs = _numpy_smoother(init, a, o)
    scores, path = _numpy_viterbi(init, a, o)
    i, step = _chain(*(x.astype(dtype) for x in (init, a, o)))
    total, actual = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])
    lengths = fc.Tensor(np.array([6, 4]), {"b": fc.Bint[2]}, 7)
    best, decoded = markov_map(step, "t", {"x": "y"}, i, lengths=lengths)
    assert isinstance(actual.data, np.ndarray) and actual.data.dtype == dtype
    assert isinstance(decoded["x"].data, np.ndarray)
    np.testing.assert_allclose(total.align(("b",)).data, log_z, rtol=tol)
    np.testing.assert_allclose(actual.align(("t", "b", "x", "y")).data, pairs, atol=tol)
    np.testing.assert_allclose(best.align(("b",)).data[0], scores[0], rtol=tol)
    np.testing.assert_array_equal(decoded["x"].align(("t", "b")).data[:, 0], path[:, 0])
    short, short_path = _numpy_viterbi(init, a, o[:4, 1:])  # entry 1 stops after 4 steps
    np.testing.assert_allclose(best.align(("b",)).data[1], short[0], rtol=tol)
    carried = np.concatenate([short_path[:, 0], short_path[-1:, 0].repeat(2)])
    np.testing.assert_array_equal(decoded["x"].align(("t", "b")).data[:, 1], carried)


def test_numpy_chains_leave_no_garbage():
    # The conversion to torch was a closure calling itself, a reference cycle per call left to
    # the cyclic collector (which a training loop then pays at unpredictable steps).
    pytest.importorskip("torch")
    import gc

    i, step = _chain(*(np.full(s, 0.5) for s in ((3,), (3, 3), (4, 2, 3))))
    markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()


def test_numpy_chains_without_torch_say_so(monkeypatch):
    from funsor_core.algorithms.chains import discrete_smooth

    def no_torch(name):  # what loading the torch backend does where torch is not installed
        raise ModuleNotFoundError(f"No module named '{name}'")

    monkeypatch.setattr(discrete_smooth, "backend_module", no_torch)
    i, step = _chain(np.zeros(2), np.zeros((2, 2)), np.zeros((3, 1, 2)))
    with pytest.raises(NotImplementedError, match="^markov_marginals .*no autodiff"):
        markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])
    with pytest.raises(NotImplementedError, match="^markov_map .*no autodiff"):
        markov_map(step, "t", {"x": "y"}, [i])


@pytest.mark.parametrize("time,step,match", [
    ("t", {"x": "z"}, r"step names \['z'\] are not inputs of the chain"),  # was KeyError: 'z'
    (fc.Variable("t", fc.Bint[5]), {"x": "y"}, r"time 't' is Bint\[5\] but the chain has 't': "
                                               r"Bint\[3\]"),  # was silently T = 3
    (fc.Variable("t", fc.Real), {"x": "y"}, "time 't' must be Bint"),
    (fc.Variable("s", fc.Real), {"x": "y"}, "time 's' must be Bint"),
])
def test_marginals_errors_name_the_mistake(time, step, match):
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        i, chain = _chain(torch.zeros(2), torch.zeros(2, 2), torch.zeros(3, 1, 2))
        with pytest.raises(ValueError, match=match):
            markov_marginals(ops.logaddexp, ops.add, chain, time, step, [i])
        with pytest.raises(ValueError, match=match):
            markov_map(chain, time, step, [i])
        # The right Variable is accepted: uniform steps, so every pair has mass 1/4 per step.
        _, pairs = markov_marginals(ops.logaddexp, ops.add, chain, fc.Variable("t", fc.Bint[3]),
                                    {"x": "y"}, [i])
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(pairs.align(("t", "b", "x", "y")).data.numpy(),
                               np.full((3, 1, 2, 2), 0.25))


# ---------------------------------------------------------------------------------------------
# Ties and unreachable states: chains of small integer scores, where several paths are often
# best, and chains with -inf entries (a left-to-right HMM). Oracle: every path enumerated in
# numpy. markov_map must return a path whose score is the best one (it used to mix two tied
# paths); markov_marginals must give 0, not NaN, where a state is unreachable.
def _enumerate(init, mats):
    # init (B, S), mats (T, B, S, S): per sequence the best score, log Z and the pair
    # marginals (T, B, S, S), and every path (N, T + 1) with its scores (B, N).
    duration, batch, k = mats.shape[0], mats.shape[1], mats.shape[-1]
    paths = np.array(list(itertools.product(range(k), repeat=duration + 1)))
    scores = init[:, paths[:, 0]]
    for t in range(duration):
        scores = scores + mats[t][:, paths[:, t], paths[:, t + 1]]
    log_z = np.logaddexp.reduce(scores, axis=1)
    pairs = np.zeros_like(mats)
    for b in range(batch):
        w = np.exp(scores[b] - log_z[b])
        for t in range(duration):
            np.add.at(pairs[t, b], (paths[:, t], paths[:, t + 1]), w)
    return scores.max(1), log_z, pairs, paths, scores


def _path_scores(init, mats, path):
    # The score of the decoded path (T + 1, B) of each sequence.
    batch = np.arange(init.shape[0])
    score = init[batch, path[0]]
    for t in range(mats.shape[0]):
        score = score + mats[t, batch, path[t], path[t + 1]]
    return score


def _tied_chains(seed, duration, batch, sizes, unreachable):
    # Integer scores in {-2, -1, 0}: ties between best paths are common. The joint state of
    # several variables (sizes) is flattened in C order, as markov_map's step names sorted.
    rng = np.random.default_rng(seed)
    k = int(np.prod(sizes))
    init = rng.integers(-2, 1, size=(batch, k)).astype(float)
    mats = rng.integers(-2, 1, size=(duration, batch, k, k)).astype(float)
    if unreachable:  # a left-to-right chain over the joint states, from state 0
        mats[:, :, np.tril_indices(k, -1)[0], np.tril_indices(k, -1)[1]] = -np.inf
        init[:, 1:] = -np.inf
    return init, mats


def _tied_terms(init, mats, sizes, convert):
    names = ("u", "x")[-len(sizes):]  # prev names, sorted; currs "v", "y"
    currs = {"u": "v", "x": "y"}
    duration, batch = mats.shape[:2]
    state_inputs = {n: fc.Bint[s] for n, s in zip(names, sizes)}
    i = fc.Tensor(convert(init.reshape((batch,) + sizes)), {"b": fc.Bint[batch], **state_inputs})
    inputs = {"t": fc.Bint[duration], "b": fc.Bint[batch], **state_inputs}
    inputs.update((currs[n], fc.Bint[s]) for n, s in zip(names, sizes))
    trans = fc.Tensor(convert(mats.reshape((duration, batch) + sizes + sizes)), inputs)
    return i, trans, {n: currs[n] for n in names}


def _joint_path(decoded, sizes):
    names = ("u", "x")[-len(sizes):]
    path = 0
    for n, s in zip(names, sizes):
        path = path * s + np.asarray(decoded[n].align(("t", "b")).data)
    return path


@pytest.mark.parametrize("sizes", [(3,), (2, 2)], ids=["one-name", "two-names"])
@pytest.mark.parametrize("unreachable", [False, True], ids=["finite", "left-to-right"])
@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_markov_map_ties_torch(strategy, unreachable, sizes):
    torch = pytest.importorskip("torch")
    init, mats = _tied_chains(5, 3, 40, sizes, unreachable)
    best, _, _, _, _ = _enumerate(init, mats)
    fc.set_backend("torch")
    try:
        i, trans, step = _tied_terms(init, mats, sizes, torch.tensor)
        score, decoded = markov_map(trans, "t", step, [i], strategy=strategy)
    finally:
        fc.set_backend("numpy")
    path = _joint_path(decoded, sizes)
    np.testing.assert_array_equal(score.align(("b",)).data.numpy(), best)
    np.testing.assert_array_equal(_path_scores(init, mats, path), best)


@pytest.mark.parametrize("unreachable", [False, True], ids=["finite", "left-to-right"])
def test_markov_map_ties_jax_jit(unreachable):
    jax = pytest.importorskip("jax")
    sizes = (3,)
    init, mats = _tied_chains(6, 4, 40, sizes, unreachable)
    best, _, _, _, _ = _enumerate(init, mats)

    def decode(init, mats):
        i, trans, step = _tied_terms(init, mats, sizes, lambda x: x)
        out = []
        for strategy in ("parallel", "sequential"):
            score, decoded = markov_map(trans, "t", step, [i], strategy=strategy)
            out += [score.align(("b",)).data, decoded["x"].align(("t", "b")).data]
        return out

    fc.set_backend("jax")
    try:
        out = jax.jit(decode)(jax.numpy.asarray(init), jax.numpy.asarray(mats))
    finally:
        fc.set_backend("numpy")
    for score, path in zip(out[0::2], out[1::2]):
        np.testing.assert_array_equal(np.asarray(score), best)
        np.testing.assert_array_equal(_path_scores(init, mats, np.asarray(path)), best)


def test_markov_map_issue_example_both_backends():
    # init [0, -1], one step [[-2, -1], [0, -2]]: the best paths [0, 1] and [1, 0] score -1;
    # the per-time argmax of the split derivative returned [0, 0], which scores -2.
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    init, mats = np.array([[0.0, -1.0]]), np.array([[[[-2.0, -1.0], [0.0, -2.0]]]])
    best, _, _, _, _ = _enumerate(init, mats)
    for name, convert in (("torch", torch.tensor), ("jax", jax.numpy.asarray)):
        fc.set_backend(name)
        try:
            i, trans, step = _tied_terms(init, mats, (2,), convert)
            for strategy in ("parallel", "sequential"):
                score, decoded = markov_map(trans, "t", step, [i], strategy=strategy)
                path = _joint_path(decoded, (2,))
                assert float(score.align(("b",)).data[0]) == best[0] == -1.0
                assert _path_scores(init, mats, path)[0] == -1.0
        finally:
            fc.set_backend("numpy")


def _left_to_right(duration, batch, seed):
    # The issue's HMM (init [0, -inf, -inf], transitions [[.6, .4, 0], [0, .6, .4],
    # [0, 0, 1]]) and random observation weights, some of them -inf.
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore"):
        a = np.log(np.array([[0.6, 0.4, 0.0], [0.0, 0.6, 0.4], [0.0, 0.0, 1.0]]))
    o = rng.normal(size=(duration, batch, 3))
    o[0, 0, 1] = o[2, 1 % batch, 0] = -np.inf
    return np.array([0.0, -np.inf, -np.inf]), a, o


@pytest.mark.parametrize("strategy", [None, "parallel", "sequential"])
def test_marginals_zero_where_unreachable_torch(strategy):
    torch = pytest.importorskip("torch")
    init, a, o = _left_to_right(5, 2, 2)
    mats = a[None, None] + o[:, :, None, :]
    _, log_z, pairs, _, _ = _enumerate(np.broadcast_to(init, (2, 3)), mats)
    fc.set_backend("torch")
    try:
        i, step = _chain(*(torch.tensor(x) for x in (init, a, o)))
        total, actual = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                         strategy=strategy)
    finally:
        fc.set_backend("numpy")
    actual = actual.align(("t", "b", "x", "y")).data.numpy()
    assert np.isfinite(actual).all()
    np.testing.assert_allclose(total.align(("b",)).data.numpy(), log_z, rtol=1e-12)
    np.testing.assert_allclose(actual, pairs, rtol=1e-9, atol=1e-15)


def test_marginals_zero_where_unreachable_jax_jit():
    jax = pytest.importorskip("jax")
    init, a, o = _left_to_right(6, 3, 3)
    mats = a[None, None] + o[:, :, None, :]
    _, log_z, pairs, _, _ = _enumerate(np.broadcast_to(init, (3, 3)), mats)

    def smooth(init, a, o):
        i, step = _chain(init, a, o)
        out = []
        for strategy in (None, "parallel", "sequential"):
            total, marg = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                           strategy=strategy)
            out += [total.align(("b",)).data, marg.align(("t", "b", "x", "y")).data]
        return out

    fc.set_backend("jax")
    try:
        out = jax.jit(smooth)(*(jax.numpy.asarray(x) for x in (init, a, o)))
    finally:
        fc.set_backend("numpy")
    for total, marg in zip(out[0::2], out[1::2]):
        assert np.isfinite(np.asarray(marg)).all()
        np.testing.assert_allclose(np.asarray(total), log_z, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(marg), pairs, rtol=1e-9, atol=1e-15)
