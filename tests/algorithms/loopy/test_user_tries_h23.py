"""A new user's tries of ``gibbs`` and ``mh`` (h23): a model with a ``Bint[0]`` variable has no
assignment (``loopy_bp`` says log Z = -inf, as enumeration does); samplers raise instead of
returning values outside the domain."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.loopy import gibbs, loopy_bp, mh


def test_empty_domain_has_no_samples():
    f = fc.Tensor(np.zeros((0, 2)), {"a": fc.Bint[0], "b": fc.Bint[2]})
    assert np.exp(np.zeros((0, 2))).sum() == 0 == np.exp(float(loopy_bp([f]).log_z.data))
    for sampler in (gibbs, mh):
        with pytest.raises(ValueError, match=r"\['a'\] are Bint\[0\]"):
            sampler([f], 10, rng_key=0)


def test_plus_inf_potentials_raise_like_nan():
    f = fc.Tensor(np.array([np.inf, 0.0]), {"a": fc.Bint[2]})
    for run in (loopy_bp, lambda fs: gibbs(fs, 5, rng_key=0)):
        with pytest.raises(ValueError, match=r"factor 0 over \{'a': Bint\[2\]\} has NaN or \+inf"):
            run([f])


def test_sparse_domain_states_must_be_integers():
    g = fc.Tensor(np.log(np.arange(1.0, 10.0)).reshape(3, 3), {"b": fc.Bint[3], "c": fc.Bint[3]})
    exact = np.log(np.arange(1.0, 10.0).reshape(3, 3)[[0, 2]].sum())  # b restricted to {0, 2}
    assert abs(float(loopy_bp([g], domains={"b": [0, 2.0]}).log_z.data) - exact) < 1e-12
    with pytest.raises(ValueError, match=r"sparse domain must be .* got \[0.5, 1\]"):
        loopy_bp([g], domains={"b": [0.5, 1]})


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_zero_mass_batch_entry_has_undefined_beliefs(backend):
    # Entry 1 has every assignment at -inf (Z = 0, by enumeration); entry 0 is one factor
    # (a tree) whose beliefs are its normalized marginals. Entry 1's beliefs are NaN, not
    # uniform, eagerly and under jax.jit.
    t = np.log(np.arange(1.0, 13.0)).reshape(2, 2, 3)
    t[1] = -np.inf
    t[0, 0, 0] = -np.inf
    p0 = np.exp(t[0])
    arrays = [t]
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        arrays = [jnp.asarray(t)]

    def run(x):
        r = loopy_bp([fc.Tensor(x, {"n": fc.Bint[2], "a": fc.Bint[2], "b": fc.Bint[3]})],
                     batch=("n",), max_iters=2)
        return r.beliefs["a"].align(("n", "a")).data, r.log_z.data, \
            r.factor_beliefs[0].align(("n", "a", "b")).data

    outs = [jax.jit(run)(*arrays)] if backend == "jax" else [run(*arrays)]
    for beliefs, log_z, factor in outs:
        beliefs, log_z, factor = (np.asarray(x) for x in (beliefs, log_z, factor))
        assert np.exp(t[1]).sum() == 0 and log_z[1] == -np.inf
        np.testing.assert_allclose(np.exp(beliefs[0]), p0.sum(1) / p0.sum(), rtol=1e-5)
        np.testing.assert_allclose(np.exp(factor[0]), p0 / p0.sum(), rtol=1e-5)
        assert factor[0, 0, 0] == -np.inf  # log 0, not the internal -1e30
        assert np.isnan(beliefs[1]).all() and np.isnan(factor[1]).all()


def test_map_of_a_zero_mass_model_raises():
    f = fc.Tensor(np.full((2, 2), -np.inf), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with pytest.raises(ValueError, match="mass zero"):
        loopy_bp([f], sum_op=fc.ops.max).map_assignment()


def test_interpretations_check_their_options_when_made():
    from interpretations import Gibbs, LoopyBP

    with pytest.raises(ValueError, match="unknown schedule 'foo'"):
        LoopyBP(schedule="foo")
    with pytest.raises(ValueError, match="damping must be in"):
        LoopyBP(damping=1.0)
    with pytest.raises(ValueError, match="need int num_samples >= 1.*got 0"):
        Gibbs(num_samples=0)
    with pytest.raises(ValueError, match="need int num_samples >= 1.*got 5.0"):
        gibbs([fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})], 5.0, rng_key=0)
    # a numpy integer count still works; uniform factor: each state about half the time
    s = gibbs([fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})], np.int64(400), rng_key=0)
    assert s["a"].inputs == {"particle": fc.Bint[400]}
    assert abs(float(np.mean(s["a"].data)) - 0.5) < 0.1


def test_samplers_refuse_to_return_states_of_probability_zero():
    # Mass zero (every entry -inf: enumeration sums to 0) gave arbitrary "samples".
    zero = fc.Tensor(np.full((2, 2), -np.inf), {"a": fc.Bint[2], "b": fc.Bint[2]})
    assert np.exp(np.full((2, 2), -np.inf)).sum() == 0
    for sampler in (gibbs, mh):
        with pytest.raises(ValueError, match="chain 0 ended in a state of probability zero"):
            sampler([zero], 8, rng_key=0)
    # A zero entry at the default init (a = b = 0) is left: the draws follow enumeration.
    table = np.array([[-np.inf, 0.0], [np.log(2.0), np.log(3.0)]])  # log [[0, 1], [2, 3]]
    s = gibbs([fc.Tensor(table, {"a": fc.Bint[2], "b": fc.Bint[2]})], 2000, rng_key=0)
    a, b = np.asarray(s["a"].data), np.asarray(s["b"].data)
    assert not ((a == 0) & (b == 0)).any()
    assert abs(float(a.mean()) - 5.0 / 6.0) < 0.05  # p(a = 1) = (2 + 3) / 6


def test_anytime_domains_of_an_empty_variable_stay_empty():
    from funsor_core.loopy import anytime_bp

    f = fc.Tensor(np.zeros((0, 2)), {"a": fc.Bint[0], "b": fc.Bint[2]})
    steps = list(anytime_bp([f]))
    assert all(s.domains["a"] == () for s in steps)  # was (0,): a state Bint[0] lacks
    assert steps[-1].domains["b"] == (0, 1)
    assert np.exp(float(steps[-1].result.log_z.data)) == np.exp(np.zeros((0, 2))).sum() == 0
