"""The IMM filter's steps on arrays (``filter.imm_fused``) against the numpy IMM of
``test_imm`` (mix per next mode, predict, update, from the textbook recursion), and the guard
that sends the steps back to terms."""

from __future__ import annotations

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.filter import imm_fused
from funsor_core.algorithms.filter.windowed import windowed_filter
from interpretations import moment_matching
from tests.algorithms.filter.test_imm import _numpy_imm
from tests.interpretations.test_moment_matching import STEP, _slds, _slds_factors


def _counted(monkeypatch) -> list:
    runs = []
    run = imm_fused.ImmSteps.run

    def counted(self, msg, t, size):
        out = run(self, msg, t, size)
        runs.append((t, size, out is not None))
        return out

    monkeypatch.setattr(imm_fused.ImmSteps, "run", counted)
    return runs


def _total(init, trans):
    msg = windowed_filter(ops.logaddexp, ops.add, trans, "time", STEP, init, 1, method="imm")
    return msg.reduce(ops.logaddexp).data


def test_steps_after_the_first_run_on_arrays(monkeypatch):
    runs = _counted(monkeypatch)
    for T in (7, 8):  # the last step's names alternate with the parity of the chain
        p = _slds(seed=41, T=T, K=3, d=2, obs_dim=1)
        with moment_matching:  # factors built here: a sum of several model Gaussians
            init, trans = _slds_factors(p, "numpy")
            total = _total(init, trans)
        np.testing.assert_allclose(total, _numpy_imm(p), rtol=1e-9)
    assert runs == [(1, 6, True), (1, 7, True)]


def test_a_rule_ahead_of_moment_matching_keeps_the_terms(monkeypatch,
                                                        scratch_moment_matching_rules):
    # A user's rule for the steps' Contractions comes before the built-in one (its pattern
    # is more specific): every step must be built as terms, so that it fires.
    from funsor_core.atoms.gaussian.atom import Gaussian
    from funsor_core.atoms.tensor import Tensor
    from funsor_core.engine.interpreter import Tuple
    from funsor_core.terms.contraction import Contraction

    seen = []

    @scratch_moment_matching_rules.register(Contraction, type(ops.logaddexp), type(ops.add),
                                            frozenset, Tuple[(Gaussian, Tensor), ...])
    def moment_matching_contraction_spy(red_op, bin_op, reduced_vars, terms):
        seen.append(reduced_vars)
        return None

    runs = _counted(monkeypatch)
    p = _slds(seed=42, T=5, K=2, d=2, obs_dim=1)
    init, trans = _slds_factors(p, "numpy")
    with moment_matching:
        total = _total(init, trans)
    np.testing.assert_allclose(total, _numpy_imm(p), rtol=1e-9)
    assert runs == [] and len(seen) >= 2 * 4  # every step's two reductions seen as terms
