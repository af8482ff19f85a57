"""A seeded slice of the chain fuzzers (``chain_fuzz``, ``chain_fuzz_lagged``,
``chain_fuzz_gaussian``, ``chain_fuzz_adjoint``): random discrete and Gaussian chains through
every entry point against float64 numpy recursions, path enumeration and closed-form Gaussian
algebra, sampled paths against the exact posterior, and the regressions the long runs found,
each against its own numpy oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.discrete_tree import log_tree, parallel_chain, scaled_log_tree
from funsor_core.sum_product import markov_marginals, markov_product
from interpretations import lazy
from tests.algorithms.chains.chain_fuzz import check, draw
from tests.algorithms.chains.chain_fuzz_adjoint import check_adjoint, draw_adjoint
from tests.algorithms.chains.chain_fuzz_gaussian import check_gaussian, draw_gaussian
from tests.algorithms.chains.chain_fuzz_lagged import check_lagged, draw_lagged

# numpy and torch cases only (a jax compile each would cost seconds); jax, eager and under
# jax.jit, runs in the long fuzz (``python -m tests.algorithms.chains.chain_fuzz 0 5000``).
_SEEDS = [s for s in range(200) if draw(s).backend != "jax"][:12]


@pytest.mark.parametrize("seed", _SEEDS)
def test_fuzz_slice(seed):
    assert check(draw(seed)) == []


@pytest.mark.parametrize("seed", [s for s in range(100) if draw_lagged(s)["backend"] != "jax"][:4])
def test_fuzz_lagged_slice(seed):
    assert check_lagged(draw_lagged(seed)) == []


def _lse_total(steps, left, right):
    # float64 numpy: log sum over all paths of left[x0] + sum_t steps[t, x_t, x_t+1] + right
    v = left
    for m in steps:
        v = np.logaddexp.reduce(v[:, None] + m, axis=0)
    return np.logaddexp.reduce(v + right)


def test_scaled_tree_checks_the_step_it_passes_through():
    # T = 3 with two matrices left (the fused boundary form): the last step passes the round
    # unmultiplied, and an entry of it that linear_exp makes 0 (-500 in float64) was returned
    # as -inf: the total with a boundary on that column came out -inf.
    steps = np.zeros((3, 2, 2))
    steps[-1, :, 1] = -500.0
    rest = scaled_log_tree(steps, 2)
    if rest is not None:  # if taken, it must equal the exact tree
        np.testing.assert_allclose(rest[-1], steps[-1])
    left, right = np.zeros(2), np.array([-np.inf, 0.0])
    total = parallel_chain(ops.logaddexp, ops.add, steps, left, right, True)
    np.testing.assert_allclose(total, _lse_total(steps, left, right), rtol=1e-12)
    np.testing.assert_allclose(log_tree(ops.logaddexp, ops.add, steps)[0],
                               np.logaddexp.reduce(
                                   np.logaddexp.reduce(steps[0][:, :, None] + steps[1][None],
                                                       axis=1)[:, :, None] + steps[2][None],
                                   axis=1), rtol=1e-12)


def test_float32_marginals_no_nan_at_impossible_pairs():
    # float32, T = 3, an -inf transition on the step that passes the tree's round: its pair
    # marginal is 0 (torch's derivative of log(0) gave NaN), the others forward-backward's.
    torch = pytest.importorskip("torch")
    r = np.random.default_rng(0)
    steps = r.normal(size=(3, 3, 3)).astype(np.float32)
    steps[2, 1, 2] = -np.inf
    steps[2, :, 0] = -np.inf
    init = r.normal(size=3).astype(np.float32)
    fc.set_backend("torch")
    try:
        i = fc.Tensor(torch.tensor(init), {"x": fc.Bint[3]})
        s = fc.Tensor(torch.tensor(steps), {"t": fc.Bint[3], "x": fc.Bint[3], "y": fc.Bint[3]})
        _, pairs = markov_marginals(ops.logaddexp, ops.add, s, "t", {"x": "y"}, [i], "parallel")
    finally:
        fc.set_backend("numpy")
    st, a = steps.astype(np.float64), [init.astype(np.float64)]
    for m in st:
        a.append(np.logaddexp.reduce(a[-1][:, None] + m, axis=0))
    b = [np.zeros(3)]
    for m in st[::-1]:
        b.insert(0, np.logaddexp.reduce(m + b[0][None], axis=1))
    z = np.logaddexp.reduce(a[-1])
    expected = np.stack([np.exp(a[t][:, None] + st[t] + b[t + 1][None] - z) for t in range(3)])
    np.testing.assert_allclose(pairs.data.numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("seed", [s for s in range(60) if draw_gaussian(s)["backend"] != "jax"
                                  and draw_gaussian(s)["T"] <= 12][:6])
def test_fuzz_gaussian_slice(seed):
    assert check_gaussian(draw_gaussian(seed)) == []


def test_gaussian_ragged_product_under_lazy_says_why():
    # markov_product(lengths=) of Gaussian steps keeps each entry's partial product step by
    # step; under lazy those are Reduce terms, and the error named only the Reduce (from the
    # selection inside). Eagerly it is the chain of each entry's first n_b steps.
    T = 3
    r = np.random.default_rng(1)
    S = r.normal(size=(T, 2, 2, 2)) * 0.3 + np.eye(2)[None, None] * np.array([0, 1])[:, None]
    W = r.normal(size=(T, 2, 2))
    trans = fc.Gaussian(white_vec=W, prec_sqrt=S, inputs={
        "t": fc.Bint[T], "b": fc.Bint[2], "x_prev": fc.Real, "x_curr": fc.Real})
    n = fc.Tensor(np.array([1, 3]), {"b": fc.Bint[2]}, dtype=T + 1)
    with pytest.raises(NotImplementedError, match=r"markov_product\(lengths=.*lazy"):
        with lazy:
            markov_product(ops.logaddexp, ops.add, trans, "t", {"x_prev": "x_curr"}, lengths=n)
    eager = markov_product(ops.logaddexp, ops.add, trans, "t", {"x_prev": "x_curr"}, lengths=n)
    # entry 0: its first step alone, -0.5 |z S_0 - w_0|^2 at z = (0.5, -1)
    z = np.array([0.5, -1.0])
    got = eager(x_prev=0.5, x_curr=-1.0).data
    np.testing.assert_allclose(got[0], -0.5 * np.sum((z @ S[0, 0] - W[0, 0]) ** 2), rtol=1e-10)


# 12600386: a path of posterior 6.4e-6 drawn twice in 4000, within chance (3 in 160,000 over
# 40 keys; Poisson(1.03)); the exact binomial tails accept it, a normal band did not.
@pytest.mark.parametrize("seed", [s for s in range(20) if draw_adjoint(s)["K"] > 1][:3]
                         + [12600386])
def test_fuzz_adjoint_slice(seed):
    assert check_adjoint(draw_adjoint(seed)) == []
