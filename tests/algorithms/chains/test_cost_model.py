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
