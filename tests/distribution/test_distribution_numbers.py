"""Python numbers given to a distribution family: backend-free in a template, and of the
arrays' dtype when arrays come with them (issue #27 items 17 and 18).

A template built under ``lazy`` on numpy, pickled, and evaluated after ``set_backend`` on
torch or jax (eagerly and under ``jax.jit``) gives scipy's log density and the eager value
on that backend. A family given a Python number beside float32 or float64 arrays answers in
the arrays' dtype, on every backend.
"""

from __future__ import annotations

import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from interpretations import lazy
from tests.distribution.distribution_cases import CASES
from tests.distribution.test_distribution import _arrays, _to, _value_dtype

jax.config.update("jax_enable_x64", True)
# Families whose parameters are all scalars, so that Python numbers can give every one.
SCALAR = [c for c in CASES if all(np.ndim(a) == 1 for a in _arrays(c)[0].values())
          and _value_dtype(c) == "real" and np.ndim(_arrays(c)[1]) == 1]


@pytest.fixture(autouse=True)
def _numpy_after():
    yield
    fc.set_backend("numpy")


def _scalars(case):
    params, value = _arrays(case)
    return {k: float(a[0]) for k, a in params.items()}, float(value[0])


def _scipy(case, params, value) -> float:
    return float(case.scipy(**{k: np.array([[p]]) for k, p in params.items()},
                            value=np.array([[value]]))[0, 0])


@pytest.mark.parametrize("backend", ["torch", "jax"])
@pytest.mark.parametrize("case", SCALAR, ids=[c.name for c in SCALAR])
def test_lazy_template_of_numbers_is_backend_free(case, backend):
    params, value = _scalars(case)
    fc.set_backend("numpy")
    with lazy:
        template = case.family(**params, value=fc.Variable("v", Real))
    assert all(type(a) is fc.Number for a in template._args[:-1]), template
    blob = pickle.dumps(template)
    fc.set_backend(backend)
    loaded = pickle.loads(blob)
    v = _to(backend, np.array(value), "float64")
    expected = _scipy(case, params, value)
    eager = case.family(**params, value=v)  # built eagerly on the backend
    actual = loaded(v=v)
    assert type(actual.data) is type(eager.data)
    np.testing.assert_allclose(float(ops.to_numpy(actual.data)), expected, rtol=1e-6)
    np.testing.assert_allclose(float(ops.to_numpy(eager.data)), expected, rtol=1e-6)
    if backend == "jax":
        jitted = jax.jit(lambda v: loaded(v=v).data)(v)
        np.testing.assert_allclose(float(jitted), expected, rtol=1e-6)


@pytest.mark.parametrize("backend", ["torch", "jax"])
def test_lazy_gaussian_template_of_numbers_is_backend_free(backend):
    from scipy.stats import multivariate_normal

    from funsor_core.distribution import Normal

    fc.set_backend("numpy")
    x0, x1 = fc.Variable("x0", Real), fc.Variable("x1", Real)
    with lazy:  # x0 ~ N(0.5, 1), x1 ~ N(x0, 2), y ~ N(x1, 0.5): every constant a number
        model = Normal(0.5, 1.0, x0) + Normal(x0, 2.0, x1) + Normal(x1, 0.5, "y")
    blob = pickle.dumps(model)
    fc.set_backend(backend)
    loaded = pickle.loads(blob)
    y = _to(backend, np.array(0.7), "float64")
    actual = loaded(y=y).reduce(ops.logaddexp, {"x0", "x1"})
    expected = multivariate_normal(0.5, 1.0 + 4.0 + 0.25).logpdf(0.7)
    np.testing.assert_allclose(float(ops.to_numpy(actual.data)), expected, rtol=1e-10)


def test_numbers_are_checked_under_lazy():
    from funsor_core.distribution import Gamma, Uniform

    with lazy, pytest.raises(ValueError, match="Gamma: parameter 'rate' must be positive"):
        Gamma(2.0, -1.0)
    with lazy, pytest.raises(ValueError, match="Uniform: parameter 'high' must be greater"):
        Uniform(1.0, 0.0)


# -- item 18: numbers follow the arrays' dtype ------------------------------------------------
def _mixed_cases(backend, dtype):
    """``(case, name, family(...) with parameter name a Python number, scipy's density)``."""
    for case in CASES:
        params, value = _arrays(case)
        for name in [k for k, a in params.items() if np.ndim(a) == 1]:
            args = {k: float(a[0]) if k == name else fc.Tensor(_to(backend, a, dtype),
                                                                {"i": Bint[len(a)]})
                    for k, a in params.items()}
            vdtype = (list(params.values())[0].shape[-1] if _value_dtype(case) == "int"
                      else "real")
            v = fc.Tensor(_to(backend, value, dtype), {"j": Bint[len(value)]}, vdtype)
            p = {k: np.asarray(a)[:, None] for k, a in params.items()}
            p[name] = np.full_like(p[name], params[name][0])
            yield case, name, lambda c=case, a=args, v=v: _aligned(c.family(**a, value=v)), \
                case.scipy(**p, value=np.asarray(value)[None])


def _aligned(result):
    return result.align(tuple(n for n in ("i", "j") if n in result.inputs)).data


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_numbers_beside_arrays_follow_their_dtype_in_every_family(backend, dtype):
    fc.set_backend(backend)
    cases = list(_mixed_cases(backend, dtype))
    if backend == "jax":  # one jit for all (eager jax compiles every small op)
        values = jax.jit(lambda: [make() for _, _, make, _ in cases])()
    else:
        values = [make() for _, _, make, _ in cases]
    tol = 1e-4 if dtype == "float32" else 1e-6
    for (case, name, _, expected), actual in zip(cases, values):
        assert str(actual.dtype).endswith(dtype), (case.name, name, actual.dtype)
        actual = np.asarray(ops.to_numpy(actual), dtype=np.float64)
        np.testing.assert_allclose(np.broadcast_to(actual, expected.shape), expected,
                                   rtol=tol, atol=tol, err_msg=f"{case.name} {name}")


def test_numbers_default_to_the_backend_dtype_alone():
    from funsor_core.distribution import Normal

    fc.set_backend("torch")
    assert Normal(0.0, 1.0, 0.5).data.dtype == torch.get_default_dtype()
    fc.set_backend("jax")
    assert Normal(0.0, 1.0, 0.5).data.dtype == jnp.zeros(()).dtype
