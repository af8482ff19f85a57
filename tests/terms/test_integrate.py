"""Integrate against Tensor and Delta measures, with numpy oracles."""

import numpy as np

import funsor_core as fc
from funsor_core import ops
from tests.backend_values import values_on_every_backend


def test_integrate_tensor_measure(backend):
    rng = np.random.default_rng(0)
    m, f = rng.normal(size=(2, 3)), rng.normal(size=(3, 4))
    lm = fc.Tensor(fc.to_data(fc.Tensor(m)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    fn = fc.Tensor(fc.to_data(fc.Tensor(f)), {"j": fc.Bint[3], "k": fc.Bint[4]})
    r = fc.Integrate(lm, fn, frozenset({"j"}))
    expected = np.einsum("ij,jk->ik", np.exp(m), f)
    assert np.allclose(ops.to_numpy(r.align(("i", "k")).data), expected)


def test_integrate_tensor_measure_is_stable():
    lm = fc.Tensor(np.array([1000.0, 1000.0]), {"i": fc.Bint[2]})
    f = fc.Tensor(np.array([1.0, 3.0]), {"i": fc.Bint[2]})
    r = fc.Integrate(lm - 1000.0, f, "i")
    assert np.allclose(r.data, 4.0)


def test_integrate_delta_measure():
    p = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
    d = fc.Delta("x", p, fc.Tensor(np.log(np.array([0.5, 0.25])), {"i": fc.Bint[2]}))
    x = fc.Variable("x", fc.Real)
    r = fc.Integrate(d, x * x, "x")
    assert np.allclose(r.data, [0.5 * 1.0, 0.25 * 4.0])


def test_integrate_lazy_measure_stays_lazy():
    x = fc.Variable("x", fc.Real)
    r = fc.Integrate(x * 0.0, x, "x")
    assert isinstance(r, fc.Integrate) and not r.inputs


# ---------------------------------------------------------------------------------------------
# Guards: integrating over a Bint Variable the terms lack repeats the measure (funsor's
# convention). (Moved from tests/test_regressions_13.py, item 6.)
def test_integrate_over_absent_variable_repeats_the_measure():
    p = np.array([0.25, 0.75])
    log_p = fc.Tensor(np.log(p), {"j": fc.Bint[2]})
    f = fc.Tensor(np.array([4.0, 8.0]), {"j": fc.Bint[2]})
    k = fc.Variable("k", fc.Bint[3])
    # sum over (j, k) of p_j f_j: three copies of the expectation.
    np.testing.assert_allclose(fc.Integrate(log_p, f, {"j", k}).data, 3 * (p @ [4.0, 8.0]))


# Integrate(c, f, V) for a constant log measure c: exp(c) * sum_V f (f itself when V is empty);
# numpy by hand on every backend and under jax.jit.
def test_integrate_number_measure_on_every_backend():
    f = np.random.default_rng(1).normal(size=3)

    def integrals(data):
        fn = fc.Tensor(data, {"i": fc.Bint[3]})
        kept = fc.Integrate(fc.Number(0.3), fn, frozenset())
        summed = fc.Integrate(fc.Number(0.3), fn, "i")
        assert isinstance(kept, fc.Tensor) and isinstance(summed, fc.Tensor)
        return ops.cat([kept.align(("i",)).data, ops.reshape(summed.data, (1,))], 0)

    expected = np.exp(0.3) * np.concatenate([f, [f.sum()]])
    for actual in values_on_every_backend(integrals, f):
        assert np.allclose(actual, expected)


def test_integrate_number_measure_with_a_lazy_integrand():
    x = fc.Variable("x", fc.Real)
    r = fc.Integrate(fc.Number(-0.5), x * 2.0, frozenset())
    assert np.allclose(r(x=3.0).data, np.exp(-0.5) * 6.0)
