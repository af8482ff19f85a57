"""Distributions under ``jax.jit`` whose arrays the traced function closes over.

A closed-over jax array is concrete, but every op on it inside a traced function is staged,
so a parameter check on it answers with a tracer (issue #27 item 15: ``TracerArrayConversion
Error ... bool[]``). Every family, with its parameters closed over (the value traced), its
value closed over (the parameters traced) and half of each, must give scipy's log density;
a closed-over invalid parameter still raises when the function is traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st

import funsor_core as fc
from funsor_core import distribution as D
from tests.distribution.distribution_cases import CASES
from tests.distribution.test_distribution import _arrays, _broadcast, _density

jax.config.update("jax_enable_x64", True)
IDS = [c.name for c in CASES]
MODES = ["params_closed", "value_closed", "half_closed"]
SAMPLE = ("Normal", "MultivariateNormal", "Dirichlet", "Uniform", "Binomial")


@pytest.fixture(autouse=True)
def _jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


def _jitted(case, mode, params, value):
    """``(jitted function, its traced arguments)``: the rest of the arrays closed over."""
    names = list(params)
    if mode == "params_closed":
        return jax.jit(lambda v: _density(case, params, v)), (value,)
    if mode == "value_closed":
        return jax.jit(lambda *ps: _density(case, dict(zip(names, ps)), value)), tuple(
            params.values())
    first = names[0]  # the first parameter traced, the others and the value closed over
    return jax.jit(lambda p: _density(case, {**params, first: p}, value)), (params[first],)


# Every family with its parameters closed over; the other modes (a jit each) on a sample.
MODE_CASES = [(case, mode, f"{cid}-{mode}") for case, cid in zip(CASES, IDS) for mode in MODES
              if mode == "params_closed" or case.name in SAMPLE]


@pytest.mark.parametrize("case,mode", [c[:2] for c in MODE_CASES], ids=[c[2] for c in MODE_CASES])
def test_closed_over_arrays_under_jit_match_scipy(case, mode):
    params, value = _arrays(case)
    jparams = {k: jnp.asarray(a) for k, a in params.items()}
    fn, args = _jitted(case, mode, jparams, jnp.asarray(value))
    p, v = _broadcast(params, value, case)
    np.testing.assert_allclose(np.asarray(fn(*args)), case.scipy(**p, value=v), rtol=1e-6,
                               atol=1e-7)


def test_issue_repro_mvn_closed_over_scale_tril():
    scale_tril = jnp.array([[1.0, 0.0], [0.4, 0.8]])
    fn = jax.jit(lambda loc: D.MultivariateNormal(loc, scale_tril, jnp.ones(2)).data)
    expected = st.multivariate_normal(np.zeros(2), np.asarray(scale_tril @ scale_tril.T))
    np.testing.assert_allclose(float(fn(jnp.zeros(2))), expected.logpdf(np.ones(2)), rtol=1e-10)


# Built outside the jit: closed over as they are (an op inside the trace gives a tracer).
LOW, HIGH, BAD_TRIL = jnp.array(1.0), jnp.array(0.0), jnp.diag(jnp.array([1.0, -1.0]))


@pytest.mark.parametrize("make, match", [
    (lambda bad, v: D.Normal(0.0, fc.Tensor(bad, {"i": fc.Bint[2]}), v),
     "Normal: parameter 'scale' must be positive, but it is -1.* at i=1"),
    (lambda bad, v: D.Uniform(LOW, HIGH, v), "Uniform: parameter 'high' must be greater"),
    (lambda bad, v: D.MultivariateNormal(jnp.zeros(2), BAD_TRIL, jnp.stack([v, v])),
     "MultivariateNormal: parameter 'scale_tril' must be a lower triangular"),
])
def test_closed_over_invalid_parameter_raises_under_jit(make, match):
    bad = jnp.array([1.0, -1.0])
    with pytest.raises(ValueError, match=match):
        jax.jit(lambda v: make(bad, v).data)(0.5)
