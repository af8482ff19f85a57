"""A new user's tries of loopy inference (h90):

- ``mh(..., proposal=q)`` with a NaN in ``q`` ran (a NumPy RuntimeWarning, then samples):
  the row-sum check compared NaN, which is False; it is refused now, naming the proposal;
- under ``jax.jit`` a model of mass zero, a NaN potential or a NaN proposal gave ``gibbs``
  and ``mh`` samples (a chain stuck at 0, or states of probability zero) where the same call
  eagerly raises; the chain's states are -1 (no state) now, as ``infer_discrete``'s paths;
- ``loopy_bp(domains={"x00": np.array([True, False])})`` (a mask) read the mask as the states
  {1, 0}, the full domain, and ran plain BP; a boolean domain is refused, naming the fix.

Oracles: enumeration of all 2^9 states of a 3x3 Ising grid (numpy), and the eager calls'
errors for what jit marks void.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.loopy.api import checked_states
from funsor_core.algorithms.loopy.graph import FactorGraph
from funsor_core.algorithms.loopy.mcmc import SamplerPlan
from funsor_core.loopy import gibbs, loopy_bp, mh

N = 3
NAMES = [f"x{i}{j}" for i in range(N) for j in range(N)]
COUPLING = np.array([[0.4, -0.4], [-0.4, 0.4]])


def _grid(array=np.asarray):
    rng = np.random.default_rng(90)
    factors = []
    for i, j in itertools.product(range(N), range(N)):
        factors.append(fc.Tensor(array(0.5 * rng.normal(size=2)), {f"x{i}{j}": fc.Bint[2]}))
        for di, dj in ((1, 0), (0, 1)):
            if i + di < N and j + dj < N:
                factors.append(fc.Tensor(array(COUPLING), {f"x{i}{j}": fc.Bint[2],
                                                           f"x{i + di}{j + dj}": fc.Bint[2]}))
    return factors


def _enumerate(factors):
    """log Z and p(x = 1) of every variable, over all 2^9 assignments."""
    states = np.array(list(itertools.product(range(2), repeat=len(NAMES))))
    log_p = np.zeros(len(states))
    for f in factors:
        cols = [NAMES.index(n) for n in f.inputs]
        log_p += np.asarray(f.data)[tuple(states[:, c] for c in cols)]
    w = np.exp(log_p - log_p.max())
    return np.log(w.sum()) + log_p.max(), (w[:, None] * states).sum(0) / w.sum()


def test_ising_grid_by_bp_and_gibbs_against_enumeration():
    factors = _grid()
    log_z, p1 = _enumerate(factors)
    bp = loopy_bp(factors)
    beliefs = np.array([np.exp(np.asarray(bp.beliefs[n].data)[1]) for n in NAMES])
    assert abs(float(bp.log_z.data) - log_z) < 0.15  # Bethe, not exact on a loopy grid
    assert np.abs(beliefs - p1).max() < 0.04
    for sampler in (gibbs, mh):  # 10,000 draws: about 0.01 of error per marginal here
        s = sampler(factors, 400, warmup=20, num_chains=25, rng_key=1)
        means = np.array([np.asarray(s[n].data).mean() for n in NAMES])
        assert np.abs(means - p1).max() < 0.04, sampler.__name__
    # A spanning tree of the grid (the vertical couplings of column 0 only): BP is exact.
    tree = [f for f in factors if len(f.inputs) == 1 or
            len({n[1] for n in f.inputs}) == 1 or set(f.inputs) <= {"x00", "x10", "x20"}]
    assert len(tree) == 9 + 8  # the unary factors and the 8 edges of a spanning tree
    log_z, p1 = _enumerate(tree)
    bp = loopy_bp(tree)
    beliefs = np.array([np.exp(np.asarray(bp.beliefs[n].data)[1]) for n in NAMES])
    assert abs(float(bp.log_z.data) - log_z) < 1e-10 and np.abs(beliefs - p1).max() < 1e-10
    # A sparse domain {1} of x00 is BP on the tree clamped there: exact too.
    clamp = fc.Tensor(np.array([-np.inf, 0.0]), {"x00": fc.Bint[2]})
    with np.errstate(invalid="ignore"):
        clamped_log_z, _ = _enumerate(tree + [clamp])
    sparse = loopy_bp(tree, domains={"x00": [1]})
    assert abs(float(sparse.log_z.data) - clamped_log_z) < 1e-10
    with pytest.raises(ValueError, match=r"a boolean mask: pass its states, np.flatnonzero"):
        loopy_bp(tree, domains={"x00": np.array([False, True])})


def test_a_nan_proposal_is_refused():
    f = fc.Tensor(np.log(np.array([[1.0, 3.0], [2.0, 2.0]])), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"proposal: a \(2, 2\) array .* got NaN or \+inf"):
        mh([f], 10, rng_key=0, proposal=np.full((2, 2), np.nan))


INPUTS = {"a": fc.Bint[2], "b": fc.Bint[2]}


def _run(table, proposal):
    return mh([fc.Tensor(table, INPUTS)], 6, num_chains=2, rng_key=0, proposal=proposal)["a"].data


def test_what_raises_eagerly_gives_no_state_under_jit():
    # The check on the chains' states as jit sees them (traced), on a small program; the
    # whole sampler under jit: tests/algorithms/loopy/test_mcmc.py (one compile, shared).
    jax = pytest.importorskip("jax")
    table = np.log(np.array([[1.0, 3.0], [2.0, 2.0]]))
    proposal = np.log(np.full((2, 2), 0.5))
    nan_table, nan_proposal = table.copy(), proposal.copy()
    nan_table[0, 1] = nan_proposal[1, 0] = np.nan
    states = np.array([[[0, 1], [1, 1]], [[1, 0], [0, 0]]])  # (rounds, chains, variables)

    @jax.jit
    def check(t, q, x):  # x traced too: the states as the sampler returns them under jit
        plan = SamplerPlan(FactorGraph.build([fc.Tensor(t, INPUTS)]))
        return checked_states(plan, x, "mh", q)

    for t, q in ((np.full((2, 2), -np.inf), proposal), (nan_table, proposal),
                 (table, nan_proposal)):
        with pytest.raises(ValueError):  # the oracle: eagerly (numpy) it is an error
            _run(t, q)
        got = np.asarray(check(jax.numpy.asarray(t), jax.numpy.asarray(q), states))
        assert (got == -1).all()
    # Only chain 1 ends in a state of probability zero, (0, 0): only its states are void.
    zero_at_00 = np.array([[-np.inf, 0.0], [0.0, 0.0]])
    got = np.asarray(check(jax.numpy.asarray(zero_at_00), jax.numpy.asarray(proposal), states))
    assert (got[:, 1] == -1).all() and (got[:, 0] == states[:, 0]).all()
