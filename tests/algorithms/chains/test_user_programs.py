"""Mistakes and mixtures a practitioner makes with discrete chains (h69): a boundary factor
over the chain's time, a raw array of lengths, step factors of two backends, float32 steps
with float64 observations. Errors name the argument; numbers match numpy forward-backward."""

import itertools

import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import markov_map, markov_marginals
from interpretations import lazy

T, K = 4, 3


def _arrays():
    rng = np.random.default_rng(0)
    return (np.log(rng.dirichlet(np.ones(K))), np.log(rng.dirichlet(np.ones(K), K)),
            rng.normal(size=(T, K)))


def _pair_marginals(init, trans, obs):
    # numpy forward-backward: p(x_t = i, x_t+1 = j | obs), obs[t] on x_t+1
    steps = trans[None] + obs[:, None, :]
    alpha, beta = [init], [np.zeros(K)]
    for m in steps:
        alpha.append(np.logaddexp.reduce(alpha[-1][:, None] + m, 0))
    for m in steps[::-1]:
        beta.insert(0, np.logaddexp.reduce(m + beta[0][None], 1))
    z = np.logaddexp.reduce(alpha[-1])
    return np.exp(np.stack(alpha[:-1])[:, :, None] + steps + np.stack(beta[1:])[:, None] - z)


def _step(trans, obs):
    with lazy:
        return (fc.Tensor(trans, {"x": fc.Bint[K], "y": fc.Bint[K]})
                + fc.Tensor(obs, {"t": fc.Bint[T], "y": fc.Bint[K]}))


@pytest.mark.parametrize("query", ["marginals", "map"])
def test_boundary_factor_over_the_time_input_is_refused(query):
    init, trans, obs = _arrays()
    step = _step(trans, obs)
    per_step = fc.Tensor(np.zeros((T, K)), {"t": fc.Bint[T], "x": fc.Bint[K]})
    with pytest.raises(ValueError, match="boundary factor 0 .* has the chain's time input 't'"):
        if query == "map":
            markov_map(step, "t", {"x": "y"}, [per_step])
        else:
            markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"}, [per_step])


def test_a_raw_array_of_lengths_is_refused_naming_its_own_type():
    init, trans, obs = _arrays()
    step = _step(trans, obs)
    with pytest.raises(TypeError, match="lengths must be a Tensor .* got numpy.ndarray"):
        markov_map(step, "t", {"x": "y"}, [fc.Tensor(init, {"x": fc.Bint[K]})],
                   lengths=np.array([2, 3]))


def test_step_factors_of_two_backends_raise_naming_both():
    init, trans, obs = _arrays()
    fc.set_backend("torch")
    try:
        # The lazily built step is refused where it is built, as the eager `+` is.
        with pytest.raises(TypeError, match="holds torch arrays .* holds numpy arrays"):
            with lazy:
                (fc.Tensor(torch.tensor(trans), {"x": fc.Bint[K], "y": fc.Bint[K]})
                 + fc.Tensor(obs, {"t": fc.Bint[T], "y": fc.Bint[K]}))
    finally:
        fc.set_backend("numpy")


def test_float32_transitions_with_float64_observations_give_float64_pairs():
    init, trans, obs = _arrays()
    trans = trans.astype(np.float32)
    step = _step(trans, obs)
    total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", {"x": "y"},
                                    [fc.Tensor(init, {"x": fc.Bint[K]})])
    assert pairs.data.dtype == np.float64 and total.data.dtype == np.float64
    expected = _pair_marginals(init, trans.astype(np.float64), obs)
    np.testing.assert_allclose(pairs.align(("t", "x", "y")).data, expected, atol=1e-12)


def test_factorial_hmm_with_a_lazy_normal_emission_matches_enumeration():
    # Two chains a, b; y_t ~ Normal(la[a_t+1] + lb[b_t+1], 0.7), the emission written as a
    # distribution under lazy (markov_marginals refused it: "needs a chain of Tensors").
    from funsor_core.distribution import Normal

    def normal_logpdf(v, mean, sd):
        return -0.5 * ((v - mean) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2 * np.pi)

    rng = np.random.default_rng(10)
    n, ka, kb = 2, 2, 3
    ta, tb = np.log(rng.dirichlet(np.ones(ka), ka)), np.log(rng.dirichlet(np.ones(kb), kb))
    ia, ib = np.log(rng.dirichlet(np.ones(ka))), np.log(rng.dirichlet(np.ones(kb)))
    la, lb, ys = rng.normal(size=ka), rng.normal(size=kb), rng.normal(size=n)
    scores = {}
    for a in itertools.product(range(ka), repeat=n + 1):
        for b in itertools.product(range(kb), repeat=n + 1):
            scores[a, b] = ia[a[0]] + ib[b[0]] + sum(
                ta[a[t], a[t + 1]] + tb[b[t], b[t + 1]]
                + normal_logpdf(ys[t], la[a[t + 1]] + lb[b[t + 1]], 0.7) for t in range(n))
    z = np.logaddexp.reduce(list(scores.values()))
    expected = np.zeros((n, ka, ka))
    for (a, _), s in scores.items():
        for t in range(n):
            expected[t, a[t], a[t + 1]] += np.exp(s - z)
    best = max(scores, key=scores.get)
    loc = fc.Tensor(la, {"a_curr": fc.Bint[ka]}) + fc.Tensor(lb, {"b_curr": fc.Bint[kb]})
    with lazy:
        step = (fc.Tensor(ta, {"a_prev": fc.Bint[ka], "a_curr": fc.Bint[ka]})
                + fc.Tensor(tb, {"b_prev": fc.Bint[kb], "b_curr": fc.Bint[kb]})
                + Normal(loc, 0.7, value=fc.Tensor(ys, {"t": fc.Bint[n]})))
    init = fc.Tensor(ia, {"a_prev": fc.Bint[ka]}) + fc.Tensor(ib, {"b_prev": fc.Bint[kb]})
    step_names = {"a_prev": "a_curr", "b_prev": "b_curr"}
    total, pairs = markov_marginals(ops.logaddexp, ops.add, step, "t", step_names, [init])
    assert np.isclose(float(total.data), z)
    actual = pairs.reduce(ops.add, {"b_prev", "b_curr"}).align(("t", "a_prev", "a_curr")).data
    np.testing.assert_allclose(actual, expected, atol=1e-12)
    score, path = markov_map(step, "t", step_names, [init])
    assert (tuple(path["a_prev"].data.tolist()), tuple(path["b_prev"].data.tolist())) == best
    assert np.isclose(float(score.data), scores[best])
