"""A new user's tries of Markov products over empty domains (h23): an empty batch or an
empty state space crashed in the kernels' max shifts ("zero-size array to reduction");
oracle: the numpy forward algorithm on the same (empty) arrays, whose sum over no states is
the semiring's zero."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, markov_map, markov_marginals

T, K = 3, 2


def _forward(init, trans):
    # log-space forward algorithm, batch first: init (B, K), trans (T, B, K, K)
    alpha = init
    with np.errstate(invalid="ignore", divide="ignore"):
        for t in range(trans.shape[0]):
            alpha = np.log(np.exp(alpha[..., :, None] + trans[t]).sum(-2))
        return np.log(np.exp(alpha).sum(-1))


@pytest.mark.parametrize("batch, states", [(0, K), (2, 0)])
def test_chains_over_empty_domains(batch, states):
    trans = np.zeros((T, batch, states, states))
    init = np.zeros((batch, states))
    step = fc.Tensor(trans, {"t": fc.Bint[T], "b": fc.Bint[batch], "x_prev": fc.Bint[states],
                             "x_curr": fc.Bint[states]})
    start = fc.Tensor(init, {"b": fc.Bint[batch], "x_prev": fc.Bint[states]})
    chain = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"})
    assert chain.data.shape == (batch, states, states)
    total = (start + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
    np.testing.assert_array_equal(total.align(("b",)).data, _forward(init, trans))


def test_marginals_and_map_over_an_empty_batch_or_state_space():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        step = fc.Tensor(torch.zeros(T, 0, K, K, dtype=torch.float64),
                         {"t": fc.Bint[T], "b": fc.Bint[0], "x_prev": fc.Bint[K],
                          "x_curr": fc.Bint[K]})
        init = fc.Tensor(torch.zeros(K, dtype=torch.float64), {"x_prev": fc.Bint[K]})
        _, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"},
                                    [init])
        assert tuple(pairs.data.shape) == (T, 0, K, K)
        _, path = markov_map(step, "t", {"x_prev": "x_curr"}, [init])
        assert tuple(path["x_prev"].data.shape) == (T + 1, 0)
        none = fc.Tensor(torch.zeros(T, 0, 0, dtype=torch.float64),
                         {"t": fc.Bint[T], "x_prev": fc.Bint[0], "x_curr": fc.Bint[0]})
        with pytest.raises(ValueError, match="no path to decode"):
            markov_map(none, "t", {"x_prev": "x_curr"})
    finally:
        fc.set_backend("numpy")
