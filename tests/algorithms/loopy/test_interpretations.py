"""``LoopyBP`` and ``Gibbs`` as interpretations: rewrites and fall-throughs."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.api import sample_chains
from funsor_core.loopy import loopy_bp, mh
from funsor_core.terms.approximate import Approximate
from interpretations import Gibbs, LoopyBP, lazy
from tests.algorithms.loopy.models import brute_force, grid_model, joint, reduce, tree_model


def test_loopy_bp_rewrites_tree_contractions_exactly():
    factors, tables, sizes = tree_model(np.random.default_rng(0))
    j = joint(tables, sizes)  # axes a b c d e
    for op, temperature in ((ops.logaddexp, 1.0), (ops.max, 0.0)):
        with LoopyBP(tol=1e-12) as bp:
            kept = sum(factors[1:], factors[0]).reduce(op, frozenset({"a", "b", "d", "e"}))
        assert bp.result is not None and kept.inputs == {"c": fc.Bint[4]}
        np.testing.assert_allclose(kept.data, reduce(j, (0, 1, 3, 4), temperature), atol=1e-10)
        with LoopyBP():
            total = sum(factors[1:], factors[0]).reduce(op)
        assert abs(float(total.data) - brute_force(tables, sizes, temperature)[0]) < 1e-10


def test_loopy_bp_on_a_grid_is_the_bethe_log_z_and_falls_through():
    factors, _, _ = grid_model(np.random.default_rng(1))
    with LoopyBP():
        z = sum(factors[1:], factors[0]).reduce(ops.logaddexp)
    assert abs(float(z.data) - float(loopy_bp(factors).log_z.data)) < 1e-12
    single = factors[4]
    with LoopyBP() as bp:
        s = single.reduce(ops.logaddexp)  # one Tensor: exact, not BP
    assert bp.result is None
    assert abs(float(s.data) - np.log(np.exp(single.data).sum())) < 1e-12


def test_gibbs_approximate_is_an_empirical_measure():
    f = fc.Tensor(np.log(np.array([[1.0, 3.0], [2.0, 2.0]])), {"a": fc.Bint[2], "b": fc.Bint[2]})
    g = fc.Tensor(np.log(np.array([1.0, 4.0])), {"b": fc.Bint[2]})
    with lazy:
        model = f + g
    with Gibbs(1000, warmup=5, num_chains=4, rng_key=0):
        q = Approximate(ops.logaddexp, model, model, frozenset({"a", "b"}))
    assert isinstance(q, fc.Delta) and q.inputs["particle"] == fc.Bint[4000]
    indicator = fc.Tensor(np.array([0.0, 1.0]), {"b": fc.Bint[2]})
    estimate = fc.Integrate(q, indicator, frozenset({"a", "b"})).reduce(ops.mean, "particle")
    p = np.exp(f.data + g.data)
    assert abs(float(estimate.data) - p[:, 1].sum() / p.sum()) < 0.03
    with Gibbs(10, rng_key=0):  # a model with inputs outside V: declined, left as it is
        kept = Approximate(ops.logaddexp, model, model, frozenset({"a"}))
    assert not isinstance(kept, fc.Delta)


def test_loopy_bp_kept_names_are_a_batch_even_in_a_factor_of_no_reduced_name():
    rng = np.random.default_rng(2)
    f = fc.Tensor(rng.normal(size=(2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    g = fc.Tensor(rng.normal(size=(4,)), {"c": fc.Bint[4]})  # only kept names: arity 0
    h = fc.Tensor(rng.normal(size=(3, 4)), {"b": fc.Bint[3], "c": fc.Bint[4]})
    with LoopyBP():
        z = (f + g + h).reduce(ops.logaddexp, frozenset({"a", "b"}))
    j = f.data[:, :, None] + g.data[None, None, :] + h.data[None, :, :]
    expected = np.log(np.exp(j).sum(axis=(0, 1)))
    assert z.inputs == {"c": fc.Bint[4]}
    np.testing.assert_allclose(z.data, expected, atol=1e-12)


def test_gibbs_integrate_is_the_average_over_particles():
    # E_p[f] for p ∝ exp(f1 + f2) over (a, b, c), f over (a, c): the enumerated expectation.
    rng = np.random.default_rng(3)
    t1, t2, tf = (rng.normal(size=(2, 2)) for _ in range(3))
    f1 = fc.Tensor(t1, {"a": fc.Bint[2], "b": fc.Bint[2]})
    f2 = fc.Tensor(t2, {"b": fc.Bint[2], "c": fc.Bint[2]})
    f = fc.Tensor(tf, {"a": fc.Bint[2], "c": fc.Bint[2]})
    p = np.exp(t1[:, :, None] + t2[None])
    exact = (p * tf[:, None, :]).sum() / p.sum()
    with lazy:
        model = f1 + f2
    log_q = np.log(np.array([[0.2, 0.8], [0.6, 0.4]]))
    for kernel, proposal in (("gibbs", None), ("mh", None), ("mh", log_q)):
        with Gibbs(250, warmup=10, num_chains=16, rng_key=0, kernel=kernel, proposal=proposal):
            estimate = fc.Integrate(model, f, frozenset({"a", "b", "c"}))
        assert estimate.inputs == {"particle": fc.Bint[4000]}
        assert abs(float(estimate.reduce(ops.mean, "particle").data) - exact) < 0.05
    with Gibbs(10, rng_key=0):  # names of the measure outside V: declined, so exact's
        kept = fc.Integrate(model, f, frozenset({"a", "b"}))  # (h68: it stayed lazy)
    np.testing.assert_allclose(kept.align(("c",)).data, (p * tf[:, None, :]).sum((0, 1)),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="for variables that all have 3 states"):
        mh([f1, fc.Tensor(np.zeros(3), {"d": fc.Bint[3]})], 5, proposal=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="row sums"):
        mh([f1], 5, proposal=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="proposal= is for kernel='mh'"):
        sample_chains([f1], 5, kernel="gibbs", proposal=log_q)
