"""Named factors (a dict) are taken by value by loopy inference and compiled plans, as by
``infer_discrete`` (a dict iterated gave its keys: "got str at position 0"); checked against
enumeration of the joint table in numpy (the model is a tree, where BP is exact)."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import gibbs, loopy_bp


def _named():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=2)
    factors = {"pair": fc.Tensor(a, {"x": fc.Bint[2], "y": fc.Bint[3]}),
               "prior": fc.Tensor(b, {"x": fc.Bint[2]})}
    return factors, a + b[:, None]


def test_loopy_bp_and_gibbs_take_named_factors():
    factors, joint = _named()
    p = np.exp(joint - np.logaddexp.reduce(joint.ravel()))
    bp = loopy_bp(factors)
    np.testing.assert_allclose(float(bp.log_z), np.logaddexp.reduce(joint.ravel()), rtol=1e-8)
    np.testing.assert_allclose(np.exp(np.asarray(bp.beliefs["y"].data)), p.sum(0), atol=1e-8)
    draws = gibbs(factors, num_samples=4, rng_key=0)
    assert set(draws) == {"x", "y"}


def test_plan_takes_named_factors():
    factors, joint = _named()
    plan = fc.plan(factors, frozenset({"x", "y"}))
    total = plan(factors, sum_op=ops.logaddexp, prod_op=ops.add)
    np.testing.assert_allclose(float(total.data), np.logaddexp.reduce(joint.ravel()))


@pytest.mark.parametrize("backend", ["numpy", "torch"])  # (jax: 3 s of compiling the sampler)
def test_sample_marginals_in_the_factors_backend_and_dtype(backend):
    # Samples.marginals() were numpy float64 Tensors on every backend: subtracting BP's
    # beliefs on torch raised the mixed-backend TypeError; now they are the samples' backend
    # and the factors' float dtype, close to enumeration (3 binomial standard errors, plus
    # 0.05 for the chain's autocorrelation)
    pytest.importorskip(backend)
    try:
        fc.set_backend(backend)
        factors, joint = _named()
        proto = ops.astype(fc.get_default_prototype(), "float32")
        factors = {k: fc.Tensor(ops.new_array(proto, np.asarray(f.data, np.float32)), f.inputs)
                   for k, f in factors.items()}
        draws = gibbs(factors, num_samples=400, warmup=10, rng_key=0)
        marginal = draws.marginals()["y"]
        belief = loopy_bp(factors).beliefs["y"]
        assert type(marginal.data) is type(belief.data)
        assert marginal.data.dtype == belief.data.dtype
        exact = np.exp(joint - np.logaddexp.reduce(joint.ravel())).sum(0)
        got = np.exp(np.asarray((marginal - belief + belief).data, np.float64))
        assert np.all(np.abs(got - exact) < 3 * np.sqrt(exact * (1 - exact) / 400) + 0.05)
    finally:
        fc.set_backend("numpy")


def test_sample_marginals_under_jax_jit():
    # counted by the backend's ops (numpy's bincount raised jax's tracer conversion error)
    jax = pytest.importorskip("jax")
    from funsor_core.algorithms.loopy.api import samples_of_states
    from funsor_core.algorithms.loopy.graph import FactorGraph

    try:
        fc.set_backend("jax")
        factors, _ = _named()
        factors = [fc.Tensor(jax.numpy.asarray(f.data, "float32"), f.inputs)
                   for f in factors.values()]
        graph = FactorGraph.build(factors)
        states = np.random.default_rng(0).integers(0, 2, size=(50, 3, len(graph.names)))
        states[..., graph.names.index("y")] += states[..., 0]  # y in 0..2

        def marginal(s):
            return samples_of_states(graph, s, 50, 3).marginals()["y"].data

        y = states[..., graph.names.index("y")].ravel()
        expected = np.log(np.bincount(y, minlength=3) / y.size)
        got = jax.jit(marginal)(jax.numpy.asarray(states))
        assert got.dtype == np.float32
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)
    finally:
        fc.set_backend("numpy")


def test_sample_marginals_of_a_state_never_drawn_warn_nothing():
    import warnings

    draws = gibbs([fc.Tensor(np.array([0.0, -np.inf]), {"a": fc.Bint[2]})], 20, rng_key=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's log(0) warned
        marginal = draws.marginals()["a"]
    assert np.asarray(marginal.data).tolist() == [0.0, -np.inf]  # every draw is a = 0
