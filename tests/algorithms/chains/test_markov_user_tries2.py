"""A new user's tries of markov_marginals (round 2): float32 steps with a float64 init."""

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_marginals

torch = pytest.importorskip("torch")


def test_float32_steps_with_float64_init_on_torch():
    # the linear-space chain's loop matmul raised torch's "expected scalar type Double"
    T, K = 3, 2
    rng = np.random.default_rng(5)
    init = np.log(rng.dirichlet(np.ones(K)))
    steps = np.log(rng.dirichlet(np.ones(K), size=(T, K))).astype(np.float32)
    f_init = fc.Tensor(torch.tensor(init), {"x": fc.Bint[K]})
    f_steps = fc.Tensor(torch.tensor(steps), {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    total, _ = markov_marginals(ops.logaddexp, ops.add, f_steps, "t", {"x": "y"}, [f_init])
    brute = np.logaddexp.reduce([init[s[0]] + sum(steps[t, s[t], s[t + 1]] for t in range(T))
                                 for s in itertools.product(range(K), repeat=T + 1)])
    assert total.data.dtype == torch.float64
    assert np.isclose(total.data.item(), brute, atol=1e-5)
