"""A float32 chain whose step is built lazily as a sum (a transition matrix plus observations
near -1e4 per step): the pair marginals of markov_marginals, and markov_map's score, against
a float64 numpy forward-backward and Viterbi over the same (float32-rounded) inputs.

Adding the pieces in float32 rounds each step entry to the ulp of 1e4 (5e-4), which moved
the pairs by 1e-4 to 2e-3 (chain fuzz seed 643: ragged, a global variable, sequential, T=32);
a careful float32 forward-backward gets 1e-7 on these inputs.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals
from interpretations import lazy

T, B, G, K = 16, 2, 2, 3
STEP = {"x_prev": "x_curr"}


def _data(seed: int):
    r = np.random.default_rng(seed)
    init = r.normal(size=(B, G, K)).astype(np.float32)
    mat = r.normal(size=(G, K, K)).astype(np.float32)
    obs = (r.normal(size=(T, B, K)) * 2 - 1e4).astype(np.float32)
    return init, mat, obs


def _exact_sum(mat, obs):
    return mat.astype(np.float64)[None, None] + obs.astype(np.float64)[:, :, None, None, :]


def _oracle(init, steps, keep, semiring, duration=T):
    # float64 forward-backward (or Viterbi) over the float32 inputs, masked steps the identity
    eye = np.where(np.eye(K) > 0, 0.0, -np.inf)
    steps = np.where(keep[:, :, None, None, None], steps, eye)
    red = np.logaddexp.reduce if semiring == "sum" else np.max
    alpha = [init.astype(np.float64)]
    for t in range(duration):
        alpha.append(red(alpha[-1][..., :, None] + steps[t], axis=-2))
    total = red(alpha[-1], axis=-1)
    if semiring == "max":
        return total, None
    beta = [np.zeros((B, G, K))]
    for t in range(duration - 1, -1, -1):
        beta.insert(0, red(steps[t] + beta[0][..., None, :], axis=-1))
    pairs = np.stack([np.exp(alpha[t][..., :, None] + steps[t] + beta[t + 1][..., None, :]
                             - total[..., None, None]) for t in range(duration)])
    return total, pairs


def _chain(init, mat, obs, ragged):
    x = {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]}
    f_init = fc.Tensor(init, {"b": fc.Bint[B], "g": fc.Bint[G], "x_prev": fc.Bint[K]})
    m = fc.Tensor(mat, {"g": fc.Bint[G], **x})
    o = fc.Tensor(obs, {"t": fc.Bint[T], "b": fc.Bint[B], "x_curr": fc.Bint[K]})
    with lazy:
        step = m + o
    lengths = np.array([T, 5])
    keep = np.arange(T)[:, None] < lengths[None, :]
    kw = {}
    if ragged == "lengths":
        kw["lengths"] = fc.Tensor(lengths, {"b": fc.Bint[B]}, dtype=T + 1)
    elif ragged == "mask":
        keep = keep & (np.arange(T)[:, None] % 3 != 1)
        kw["mask"] = fc.Tensor(keep.astype(np.int64), {"t": fc.Bint[T], "b": fc.Bint[B]},
                               dtype=2)
    else:
        keep = np.ones((T, B), dtype=bool)
    return f_init, step, kw, keep


@pytest.mark.parametrize("ragged", ["none", "lengths", "mask"])
@pytest.mark.parametrize("strategy", [None, "sequential"])
def test_float32_lazy_sum_pairs_keep_their_digits(ragged, strategy):
    init, mat, obs = _data(643)
    f_init, step, kw, keep = _chain(init, mat, obs, ragged)
    total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", STEP, [f_init],
                                    strategy, **kw)
    e_total, e_pairs = _oracle(init, _exact_sum(mat, obs), keep, "sum")
    got = np.asarray(pairs.align(("t", "b", "g", "x_prev", "x_curr")).data, np.float64)
    assert np.abs(got - e_pairs).max() < 1e-5  # 1e-4 and more when the sum was rounded
    got_total = np.asarray(total.align(("b", "g")).data, np.float64)
    np.testing.assert_allclose(got_total, e_total, rtol=2e-6)  # the shifts given back


def test_float32_lazy_sum_best_score_gets_its_shifts_back():
    init, mat, obs = _data(644)
    f_init, step, kw, keep = _chain(init, mat, obs, "lengths")
    score, path = markov_map(step, "t", STEP, [f_init], "sequential", **kw)
    e_score, _ = _oracle(init, _exact_sum(mat, obs), keep, "max")
    got = np.asarray(score.align(("b", "g")).data, np.float64)
    np.testing.assert_allclose(got, e_score, rtol=2e-6)




def test_float32_dense_step_pairs_keep_their_digits_on_jax():
    # a dense float32 step near -1e4 on eager jax (fuzz seed 1108): the O(1) initial factor
    # added to it rounded it (pairs 1.4e-4 off)
    import jax.numpy as jnp

    init, mat, obs = _data(1108)
    dense = (mat[None, None] + obs[:, :, None, None, :])[:1]  # float32, as the chain sees it
    x = {"x_prev": fc.Bint[K], "x_curr": fc.Bint[K]}
    keep = np.array([[True, False]])
    fc.set_backend("jax")
    try:
        f_init = fc.Tensor(jnp.asarray(init), {"b": fc.Bint[B], "g": fc.Bint[G],
                                               "x_prev": fc.Bint[K]})
        step = fc.Tensor(jnp.asarray(dense), {"t": fc.Bint[1], "b": fc.Bint[B],
                                              "g": fc.Bint[G], **x})
        lengths = fc.Tensor(jnp.asarray(np.array([1, 0])), {"b": fc.Bint[B]}, dtype=2)
        total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", STEP, [f_init],
                                        lengths=lengths)
        got = np.asarray(pairs.align(("t", "b", "g", "x_prev", "x_curr")).data, np.float64)
        got_total = np.asarray(total.align(("b", "g")).data, np.float64)
    finally:
        fc.set_backend("numpy")
    e_total, e_pairs = _oracle(init, dense.astype(np.float64), keep, "sum", duration=1)
    assert np.abs(got - e_pairs).max() < 1e-5
    np.testing.assert_allclose(got_total, e_total, rtol=2e-6)
