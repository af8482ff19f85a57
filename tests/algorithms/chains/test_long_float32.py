"""Long float32 chains whose log weights are near -1e4 per step (h69): the log-space carry
and the tree's products reach -1e7, where a float32 ulp is 1, so marginals came out above 1
(or NaN) and Viterbi paths left the best one. Checked against numpy forward-backward and
Viterbi in float64 on the same float32-rounded inputs, each step shifted by its maximum
(which changes neither the marginals nor the best path)."""

import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals

T, K = 1000, 3


def _inputs():
    rng = np.random.default_rng(5)
    with np.errstate(divide="ignore"):  # a left-to-right-and-wrap chain: true zeros
        trans = np.log(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    init = np.log(np.full(K, 1.0 / K))
    obs = rng.normal(size=(T, K)) - 1e4
    return (x.astype(np.float32) for x in (init, trans, obs))


def _oracle(init, trans, obs):
    init, trans, obs = (x.astype(np.float64) for x in (init, trans, obs))
    steps = trans[None] + (obs - obs.max(1, keepdims=True))[:, None, :]
    alpha, delta, back, ptr = [init], init, [np.zeros(K)], []
    for m in steps:
        a = alpha[-1][:, None] + m
        alpha.append(np.logaddexp.reduce(a - a.max(), 0) + a.max())
        d = delta[:, None] + m
        ptr.append(d.argmax(0))
        delta = d.max(0)
    for m in steps[::-1]:
        b = m + back[0][None]
        back.insert(0, np.logaddexp.reduce(b - b.max(), 1) + b.max())
    z = np.logaddexp.reduce(alpha[-1])
    pairs = np.exp(np.stack(alpha[:-1])[:, :, None] + steps + np.stack(back[1:])[:, None] - z)
    path = [int(delta.argmax())]
    for p in ptr[::-1]:
        path.insert(0, int(p[path[0]]))
    return pairs, path


@pytest.mark.parametrize("strategy", ["sequential", "parallel"])
def test_float32_long_chain_marginals_and_viterbi_keep_their_digits(strategy):
    init, trans, obs = _inputs()
    expected_pairs, expected_path = _oracle(init, trans, obs)
    fc.set_backend("torch")
    try:
        i = fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]})
        step = (fc.Tensor(torch.tensor(trans), {"x": fc.Bint[K], "y": fc.Bint[K]})
                + fc.Tensor(torch.tensor(obs), {"t": fc.Bint[T], "y": fc.Bint[K]}))
        _, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [i],
                                    strategy=strategy)
        _, path = markov_map(step, "t", {"x": "y"}, [i], strategy=strategy)
    finally:
        fc.set_backend("numpy")
    actual = pairs.align(("t", "x", "y")).data.double().numpy()
    # float32 rounds every sum near -1e4 to about 5e-4 (the step entries, the carry plus a
    # step), a relative error of the probabilities per rounding: a few of them per step
    np.testing.assert_allclose(actual, expected_pairs, atol=1e-2)
    assert path["x"].data.tolist() == expected_path


def test_float32_filter_gradient_is_the_posterior_of_each_state():
    # d log Z / d obs[t, k] = p(x_t+1 = k | obs). The probability-space filter (eager and
    # compiled) added its log normalizer, near -2e7, to log p before the last sum: in float32
    # that rounded the last step's softmax, whose error (0.57) then ran back through the chain.
    from funsor_core.sum_product import MarkovProduct
    from interpretations import lazy

    rng = np.random.default_rng(6)
    init = np.log(np.full(K, 1.0 / K)).astype(np.float32)
    trans = np.log(rng.dirichlet(np.ones(K), K)).astype(np.float32)  # no zeros: the filter
    obs = (rng.normal(size=(T, K)) - 1e4).astype(np.float32)
    expected = _oracle(init, trans, obs)[0].sum(1)
    fc.set_backend("torch")
    try:
        o = torch.tensor(obs, requires_grad=True)
        with lazy:
            step = (fc.Tensor(torch.tensor(trans), {"x": fc.Bint[K], "y": fc.Bint[K]})
                    + fc.Tensor(o, {"t": fc.Bint[T], "y": fc.Bint[K]}))
            chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x": "y"},
                                  strategy="sequential")
        total = (fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]}) + chain).reduce(
            ops.logaddexp, {"x", "y"})
        total.data.backward()
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(o.grad.double().numpy(), expected, atol=1e-3)
