"""A new user's tries of allocation models and SMC (h103):

- ``smc(...)`` is documented (API page, its docstring) to return ``(log_z, ess_trace)``;
  ``result.ess_trace`` raised AttributeError (the field is ``ess``): both names work now;
- ``smc`` with a negative, fractional or NaN count said only "X must hold nonnegative
  integer counts"; it names the cell, its value and the visible indices now, as
  ``log_marginal_exact`` does (which now names them for negative and NaN counts too);
- a model with no visible index observes one number, the total count; ``X=3`` (a Python
  int) failed with "ops.is_concrete has no kernel for arguments of type int";
- ``jax.jit(lambda seed: hmm_smc(..., rng_key=seed))(0)`` failed deep in jax ("invalid PRNG
  key data"); a traced int seed is a seed now, giving the eager int seed's estimate. With
  the arrays closed over (jax arrays, concrete), ``jit`` failed first in the NaN check
  (``TracerArrayConversionError``: the detached copy is traced); it reads them now.

Oracles: the closed-form Gamma-Poisson marginal of the total count,
``log p(S+ = n) = a log(b / (b + 1)) - n log(b + 1) + lgamma(a + n) - lgamma(a) - lgamma(n + 1)``,
a brute-force enumeration of the completions of a 2 x 2 table under one hidden index, and
the forward algorithm for the HMM.
"""

from __future__ import annotations

import itertools
from math import lgamma, log

import numpy as np
import pytest

from funsor_core.allocation import AllocationModel
from funsor_core.smc import smc

NMF = ({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 2, "k": 2})


def _log_total(n, a, b):
    return a * log(b / (b + 1)) - n * log(b + 1) + lgamma(a + n) - lgamma(a) - lgamma(n + 1)


def _log_s(S, a, b):
    # S[k, i, j] under NMF's BDeu prior: alpha = a / 8 per cell, families k, (i, k), (j, k)
    n = S.sum()
    out = _log_total(n, a, b) + lgamma(n + 1) - sum(lgamma(s + 1) for s in S.ravel())
    out += lgamma(a) - lgamma(a + n)
    out += sum(lgamma(a / 2 + c) - lgamma(a / 2) for c in S.sum((1, 2)))
    for fam in (S.sum(2), S.sum(1)):  # (k, i), (k, j)
        for k in range(2):
            out += lgamma(a / 2) - lgamma(a / 2 + fam[k].sum())
            out += sum(lgamma(a / 4 + c) - lgamma(a / 4) for c in fam[k])
    return out


def _log_marginal(X, a, b):
    cells = [(i, j) for i in range(2) for j in range(2)]
    terms = []
    for split in itertools.product(*[range(X[c] + 1) for c in cells]):
        S = np.zeros((2, 2, 2), int)
        for (i, j), s in zip(cells, split):
            S[0, i, j], S[1, i, j] = s, X[i, j] - s
        terms.append(_log_s(S, a, b))
    return float(np.logaddexp.reduce(terms))


def test_smc_result_has_the_documented_ess_trace():
    m = AllocationModel(*NMF, ("i", "j"), a=0.7, b=0.5)
    X = np.array([[2, 0], [1, 1]])
    result = smc(m, X, num_particles=64, rng_key=0)
    log_z, ess_trace = result
    assert ess_trace is result.ess_trace is result.ess
    assert len(ess_trace) == X.sum()
    exact = _log_marginal(X, 0.7, 0.5)
    assert m.log_marginal_exact(X) == pytest.approx(exact, abs=1e-10)
    assert float(log_z) == pytest.approx(exact, abs=0.15)


@pytest.mark.parametrize("bad", [-1, 1.5, np.nan])
def test_a_bad_count_is_named_by_cell_and_indices(bad):
    m = AllocationModel(*NMF, ("i", "j"), a=1.0, b=1.0)
    X = np.array([[2.0, 0.0], [1.0, bad]])
    with pytest.raises(ValueError, match=r"X\[\(1, 1\)\] = .* over the indices \('i', 'j'\)"):
        smc(m, X, num_particles=4, rng_key=0)
    if bad != 1.5:  # (fractions were named already)
        with pytest.raises(ValueError, match=r"X\[\(1, 1\)\] = .* over the indices"):
            m.log_marginal_exact(X)


def test_a_model_with_no_visible_index_takes_the_total_as_a_number():
    m = AllocationModel(*NMF, (), a=1.3, b=0.4)
    for X in (3, np.array(3), [3][0]):
        assert m.log_marginal_exact(X) == pytest.approx(_log_total(3, 1.3, 0.4), abs=1e-12)
        assert float(smc(m, X, 8, rng_key=0).log_z) == pytest.approx(_log_total(3, 1.3, 0.4))


def test_hmm_smc_takes_an_int_seed_traced_under_jit():
    jax = pytest.importorskip("jax")
    from funsor_core.smc import hmm_smc

    rng = np.random.default_rng(2)
    K, T = 3, 6
    log_init = np.log(rng.dirichlet(np.ones(K)))
    log_trans = np.log(rng.dirichlet(np.ones(K), size=K))
    log_obs = rng.normal(size=(T, K))
    args = [jax.numpy.asarray(a) for a in (log_init, log_trans, log_obs)]
    traced = jax.jit(lambda seed: hmm_smc(*args, 256, rng_key=seed).log_z)(5)
    eager = hmm_smc(*args, 256, rng_key=5).log_z
    assert float(traced) == pytest.approx(float(eager), abs=1e-6)
    alpha = log_init + log_obs[0]
    for t in range(1, T):
        alpha = np.logaddexp.reduce(alpha[:, None] + log_trans, axis=0) + log_obs[t]
    assert float(eager) == pytest.approx(np.logaddexp.reduce(alpha), abs=0.05)
