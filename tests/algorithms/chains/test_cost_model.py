"""The chains' one cost model: named thresholds, a readable ChainChoice, recorded choices,
and the one repeated squaring."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains import cost_model as cm
from funsor_core.algorithms.chains.discrete import chain_product
from funsor_core.algorithms.chains.power import repeated_squaring


def _kernel(strategy="sequential", compiles=True, duration=100, carry=4, vector=4, states=4,
            shared=True):
    return cm.choose_discrete_kernel(strategy, compiles, True, duration, carry, vector,
                                     states, shared)


def test_kernel_thresholds_are_the_named_constants():
    # The tiny filter: T x carry at the bound stays in the log-space scan, above it does not.
    tiny_t = cm.TINY_FILTER_ELEMENTS // 4
    assert _kernel(duration=tiny_t, shared=False).kernel == "sequential"
    assert _kernel(duration=tiny_t + 1, shared=False).kernel == "fast_log_filter_inloop"
    # scan_log_filter up to SHORT_CHAIN_STEPS steps and FEW_STATES states.
    assert _kernel(duration=cm.SHORT_CHAIN_STEPS).kernel == "scan_log_filter"
    assert _kernel(duration=cm.SHORT_CHAIN_STEPS + 1).kernel == "fast_log_filter"
    k = cm.FEW_STATES
    assert _kernel(duration=1000, carry=k, vector=k, states=k).kernel == "scan_log_filter"
    k += 1
    assert _kernel(duration=1000, carry=k, vector=k, states=k).kernel != "scan_log_filter"
    # Tree derivatives from TREE_DERIVATIVE_STEPS steps of a few states.
    long = _kernel(duration=cm.TREE_DERIVATIVE_STEPS, carry=2, vector=2, states=2)
    assert (long.kernel, long.derivative) == ("fast_log_filter", "tree")
    short = _kernel(duration=cm.TREE_DERIVATIVE_STEPS - 1, carry=2, vector=2, states=2)
    assert short.derivative != "tree"
    # Eagerly (no compiler) a filter always tries the probability-space loop.
    assert _kernel(compiles=False).kernel == "eager_log_filter"
    assert _kernel(strategy="parallel").kernel == "tree"


def test_chain_choice_is_a_frozen_record():
    choice = _kernel()
    assert isinstance(choice, cm.ChainChoice) and choice.reason
    with pytest.raises(dataclasses.FrozenInstanceError):
        choice.kernel = "tree"


def test_recorded_choices_strategy_then_kernel():
    rng = np.random.default_rng(0)
    trans = fc.Tensor(np.log(rng.dirichlet(np.ones(3), size=(20, 3))),
                      {"t": fc.Bint[20], "x": fc.Bint[3], "y": fc.Bint[3]})
    init = fc.Tensor(np.zeros(3), {"x": fc.Bint[3]})
    with cm.recorded_choices() as log:
        chain = fc.MarkovProduct(ops.logaddexp, ops.add, trans, "t", {"x": "y"},
                                 strategy="sequential")
        (chain + init).reduce(ops.logaddexp)
    assert log and log[0] == cm.ChainChoice("sequential", None, "forced")
    assert all(c.strategy == "sequential" for c in log)
    with cm.recorded_choices() as outer:
        with cm.recorded_choices() as inner:
            chain_product(ops.add, ops.mul, (np.ones((4, 2, 2)),), "parallel")
    assert [c.kernel for c in inner] == ["tree"] and outer == []


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 13])
def test_repeated_squaring_oracle(n):
    m = np.array([[0.5, 0.5], [0.25, 0.75]])
    expected = np.eye(2)
    for _ in range(n):  # oracle: n plain products
        expected = expected @ m
    np.testing.assert_allclose(repeated_squaring(np.matmul, m, n), expected)
    calls = []
    repeated_squaring(lambda a, b: calls.append(1) or a @ b, m, n)
    assert len(calls) <= 2 * int(np.log2(n))  # squarings and products, log many
    with pytest.raises(ValueError, match="at least one step"):
        repeated_squaring(np.matmul, m, 0)


@pytest.mark.parametrize("batch, kernel", [(1, "scan_log_filter"), (2, "fast_log_filter_inloop")])
def test_compiled_filter_kernels_on_jax(batch, kernel):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    k, t = 4, 300
    a = np.log(rng.dirichlet(np.ones(k), size=k))  # shared matrix
    o = rng.normal(size=(t, batch, 1, k))  # a vector over curr states per step
    left = rng.normal(size=(batch, k))
    with cm.recorded_choices() as log:
        out = chain_product(ops.logaddexp, ops.add, (jnp.asarray(a[None, None]),
                                                     jnp.asarray(o)),
                            "sequential", jnp.asarray(left))
    assert log[-1].kernel == kernel
    v = left  # oracle: the log-space forward algorithm in numpy
    for s in range(t):
        v = np.logaddexp.reduce(v[:, :, None] + a[None] + o[s], axis=1)
    np.testing.assert_allclose(np.asarray(out), v, rtol=1e-9)


def test_two_state_compiled_chains_fold():
    def strategy(state=2, batch=1, duration=100, vector=False, compiled=True, gaussian=False):
        problem = cm.ChainProblem("jax", compiled, "cpu", state, batch, duration, vector,
                                  gaussian)
        return cm.choose_strategy(problem)[0]

    # Two states on a CPU, compiled: a short fold of one sequence, or a filter's small carry.
    assert strategy() == "sequential"
    assert strategy(duration=cm.TWO_STATE_FOLD_STEPS + 1) == "parallel"
    assert strategy(batch=2, duration=10) == "parallel"
    limit = cm.TWO_STATE_FILTER_CARRY // 4
    assert strategy(batch=4, duration=limit, vector=True) == "sequential"
    assert strategy(batch=4, duration=limit + 1, vector=True) == "parallel"
    # Three states, Gaussians, a GPU or no compiler: the cost model's estimates decide.
    for problem in (cm.ChainProblem("jax", True, "cpu", 3, 1, 10),
                    cm.ChainProblem("jax", True, "cpu", 2, 1, 10, gaussian=True),
                    cm.ChainProblem("jax", True, "gpu", 2, 1, 10),
                    cm.ChainProblem("numpy", False, "cpu", 2, 1, 10)):
        seq, par = cm._costs(problem)
        choice = cm.choose_strategy(problem)
        assert choice[0] == ("parallel" if par < seq else "sequential")
        assert "estimated" in choice[1]


def test_two_state_jitted_fold_value_and_gradient():
    # A 2-state HMM under jax.jit(value_and_grad): the fold it now takes against the log
    # partition function and the pair marginals (its gradient) by enumerating all 2^(T+1) paths.
    jax = pytest.importorskip("jax")
    import itertools

    fc.set_backend("jax")
    try:
        rng = np.random.default_rng(2)
        t = 10
        trans = rng.normal(size=(t, 2, 2)) * 3.0 - 50.0  # an offset far from 0 in float32
        init = rng.normal(size=2)

        def log_z(w):
            step = fc.Tensor(w, {"t": fc.Bint[t], "x": fc.Bint[2], "y": fc.Bint[2]})
            chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x": "y"})
            return (fc.Tensor(jax.numpy.asarray(init, "float32"), {"x": fc.Bint[2]})
                    + chain).reduce(ops.logaddexp).data

        with cm.recorded_choices() as log:
            value, grad = jax.jit(jax.value_and_grad(log_z))(
                jax.numpy.asarray(trans, "float32"))
        assert log[0].strategy == "sequential" and "two states" in log[0].reason
        w32 = trans.astype(np.float32).astype(np.float64)
        scores, pairs = [], []
        for path in itertools.product(range(2), repeat=t + 1):
            scores.append(init[path[0]] + sum(w32[s, path[s], path[s + 1]] for s in range(t)))
            pairs.append(path)
        scores = np.array(scores)
        expected = np.logaddexp.reduce(scores)
        weights = np.exp(scores - expected)
        marginals = np.zeros((t, 2, 2))
        for w, path in zip(weights, pairs):
            for s in range(t):
                marginals[s, path[s], path[s + 1]] += w
        np.testing.assert_allclose(float(value), expected, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(grad), marginals, atol=2e-5)
    finally:
        fc.set_backend("numpy")
