"""``AllocationModel``: golden values of Cemgil et al. (Examples 3.2 and 3.4, Figure 9), and
identities checked against independent oracles: normalization against scipy's negative
binomial, the chain rule of the predictives against the closed form, Markov equivalence,
the complete-graph urn, and the exact expectation of the SIS weight by enumeration.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp
from scipy.stats import nbinom

from funsor_core.algorithms.smc.allocation_smc import allocation_step, initial_tables
from funsor_core.algorithms.smc.urns import compositions
from funsor_core.allocation import AllocationModel, log_marginal_complete_graph

NMF = {"k": (), "i": ("k",), "j": ("k",)}
X1 = np.array([[2, 1, 1, 0], [0, 0, 1, 2], [0, 0, 1, 1]])
X2 = np.array([[4, 3, 0], [0, 0, 3], [0, 0, 3]])


def nmf(X, K, a, b):
    return AllocationModel(NMF, {"i": X.shape[0], "j": X.shape[1], "k": K}, ("i", "j"), a, b)


def test_example_3_2_bdeu_and_flat_priors():
    S = np.array([[2, 1], [0, 1]])
    graphs = {"indep": {"i": (), "j": ()}, "i<-j": {"i": ("j",), "j": ()},
              "i->j": {"i": (), "j": ("i",)}}
    golden = {("bdeu", "indep"): -7.97684, ("bdeu", "i<-j"): -8.09462,
              ("bdeu", "i->j"): -8.09462, ("flat", "indep"): -8.80839,
              ("flat", "i->j"): -8.47192, ("flat", "i<-j"): -8.54888}
    for (prior, graph), value in golden.items():
        m = AllocationModel(graphs[graph], {"i": 2, "j": 2}, ("i", "j"), 1.0, 1.0, prior)
        assert round(m.log_marginal_allocation(S), 5) == value, (prior, graph)
    # i - j: the complete graph's one urn (an independent formula) agrees with both DAGs.
    assert round(log_marginal_complete_graph(S, 1.0, 1.0), 5) == -8.09462


def test_example_3_4_missing_entry():
    expected = [-18.714, -18.070, -17.829, -17.754, -17.764, -17.822, -17.909]
    for K in (1, 2):
        for row, argmax in (([3, 3], 3), ([4, 1], 1)):
            first = row[0]
            scores = [nmf(np.array([[first, m], row]), K, 4.0, 0.01)
                      .log_marginal_exact(np.array([[first, m], row])) for m in range(7)]
            assert int(np.argmax(scores)) == argmax
            if K == 1 and first == 3:
                np.testing.assert_allclose(scores, expected, atol=5e-4)


@pytest.mark.parametrize("X, a, golden", [
    (X1, 1.0, [-20.227, -19.811, -20.093, -20.345]),
    (X1, 10.0, [-14.487, -14.458, -14.443, -14.435]),
    (X2, 1.0, [-22.751, -17.254, -16.991, -16.872]),
])
def test_figure_9_exact(X, a, golden):
    values = [nmf(X, K, a, a / X.sum()).log_marginal_exact(X) for K in (1, 2, 3, 4)]
    np.testing.assert_allclose(values, golden, atol=5e-4)


def _scipy_log_pi(S, model):
    """log pi(S) (C.3) written out with scipy, as an oracle for the model's family code."""
    S = S.astype(float)
    T = S.sum()
    out = nbinom(model.a, model.b / (model.b + 1)).logpmf(T)
    out += gammaln(T + 1) - gammaln(S + 1).sum()
    names = model.names
    for n, fa in model.families.items():
        counts = np.einsum(S, list(range(S.ndim)), [names.index(m) for m in fa])
        alpha = model.alpha[n]
        out += (gammaln(alpha + counts) - gammaln(alpha)).sum()
        size = model.cards[n]
        parent = counts.sum(0)
        out -= (gammaln(size * alpha + parent) - gammaln(size * alpha)).sum()
    return out


def test_normalization_and_scipy_oracle():
    # The allocation probabilities of every S with S_+ = T sum to Pr(S_+ = T) (NB(a, b)).
    model = AllocationModel({"a": (), "b": ("a",), "c": ("a", "b")}, {"a": 2, "b": 2, "c": 2},
                            ("b", "c"), 0.7, 0.3)
    T = 3
    rows = compositions(T, 8).reshape(-1, 2, 2, 2)
    scores = model.log_marginal_allocation(rows, batch_ndim=1)
    np.testing.assert_allclose(logsumexp(scores), nbinom(0.7, 0.3 / 1.3).logpmf(T), atol=1e-12)
    for S in rows[::17]:
        np.testing.assert_allclose(model.log_marginal_allocation(S), _scipy_log_pi(S, model),
                                   atol=1e-12)


def test_chain_rule_of_predictives():
    # prod_tau Pr(c^tau | S^{tau-1}) = pi(S) / (NB(T) * T! / prod S!), in any token order.
    rng = np.random.default_rng(0)
    model = AllocationModel({"i": (), "k": ("i",), "j": ("k", "i")}, {"i": 2, "k": 3, "j": 2},
                            ("i", "j"), 2.0, 0.5)
    S = rng.integers(0, 3, size=(2, 3, 2))
    T = int(S.sum())
    closed = (_scipy_log_pi(S, model) - nbinom(2.0, 0.5 / 1.5).logpmf(T)
              - gammaln(T + 1) + gammaln(S + 1.0).sum())
    cells = np.repeat(np.argwhere(np.ones(S.shape, bool)), S.reshape(-1), axis=0)
    for order in (cells, cells[rng.permutation(T)]):
        counts, total = np.zeros(S.shape), 0.0
        for cell in order:
            total += model.log_predictive(counts)[tuple(cell)]
            counts[tuple(cell)] += 1
        np.testing.assert_allclose(total, closed, atol=1e-10)
    np.testing.assert_allclose(logsumexp(model.log_predictive(S)), 0.0, atol=1e-12)


def test_markov_equivalence_and_complete_graph():
    X = np.array([[2, 0, 1], [0, 1, 1]])
    values = [AllocationModel(p, {"i": 2, "j": 3, "k": 2}, ("i", "j"), 1.0, 0.2)
              .log_marginal_exact(X)
              for p in (NMF, {"j": (), "k": ("j",), "i": ("k",)}, {"i": (), "k": ("i",),
                                                                      "j": ("k",)})]
    np.testing.assert_allclose(values, values[0], atol=1e-10)
    S = np.array([[[1, 0], [2, 1]], [[0, 0], [1, 3]]])
    for order in itertools.permutations("xyz"):
        parents = {n: tuple(order[:k]) for k, n in enumerate(order)}
        m = AllocationModel(parents, {"x": 2, "y": 2, "z": 2}, ("x", "y", "z"), 1.5, 0.5)
        np.testing.assert_allclose(m.log_marginal_complete(S),
                                   log_marginal_complete_graph(S, 1.5, 0.5), atol=1e-10)


def test_exact_sis_expectation():
    # E_q[W] over every hidden trajectory (each with its proposal probability) equals p(X).
    X = np.array([[1, 0], [1, 1]])  # T = 3 tokens
    model = nmf(X, 2, 1.0, 0.5)
    tokens = np.repeat(np.argwhere(X >= 0), X.reshape(-1), axis=0)
    T = len(tokens)
    log_const = (nbinom(1.0, 0.5 / 1.5).logpmf(T) + gammaln(T + 1) - gammaln(X + 1.0).sum())
    expectation = 0.0
    for path in itertools.product(range(2), repeat=T):
        tables = [np.array(t) for t in initial_tables(model, np.zeros(()), 1)]
        log_q = log_w = 0.0
        for (i, j), k in zip(tokens, path):
            step = allocation_step(model, 1)
            log_u, log_joint = step.weigh(tuple(tables), np.array([i, j]))[:2]
            log_q += log_joint[0, k] - log_u[0]
            log_w += log_u[0]
            cell = {"i": i, "j": j, "k": k}
            for table, fa in zip(tables, model.families.values()):
                table[(0,) + tuple(cell[m] for m in fa)] += 1
        expectation += math.exp(log_q + log_w)
    np.testing.assert_allclose(math.log(expectation) + log_const, model.log_marginal_exact(X),
                               atol=1e-12)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="cycle"):
        AllocationModel({"i": ("j",), "j": ("i",)}, {"i": 2, "j": 2}, "ij", 1.0, 1.0)
    with pytest.raises(ValueError, match="unknown parents"):
        AllocationModel({"i": ("z",)}, {"i": 2}, "i", 1.0, 1.0)
    m = nmf(X1, 2, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"shape \(3, 4\)"):
        m.log_marginal_exact(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="smc"):
        m.log_marginal_exact(X1 * 10)
