"""Smoothing (posterior marginals) and Viterbi decoding of discrete chains by the derivative
of the chain's total, against the forward-backward and Viterbi recursions written in numpy,
for both strategies, on torch and under ``jax.jit``.
"""

from __future__ import annotations

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


def test_numpy_chains_say_they_need_autodiff():
    i, step = _chain(np.zeros(2), np.zeros((2, 2)), np.zeros((3, 1, 2)))
    with pytest.raises(NotImplementedError, match="numpy arrays have no autodiff"):
        markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i])


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
