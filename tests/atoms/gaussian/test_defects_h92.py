"""float32 Gaussians with large constants: Integrate raises instead of a silent inf (#28, h92).

A float32 Gaussian whose information vectors are ~1e6 has log normalizers of ~1e13 that
float32 holds to ~1e6; a normalized measure ``g - g.reduce(logaddexp)`` could then integrate
to exp(4e5): ``Integrate`` returned inf silently, eagerly and under ``MonteCarlo`` (the
Gaussian fuzzer had kept float32 information vectors at 1e3 to avoid it). Now a ValueError
names the variables and the dtype. Oracle: the float64 closed form exp(c) * mean, finite
where float32's exp overflows. (The fuzzer's case, seed 725, a normalized measure, now
integrates to the right number: tests/atoms/gaussian/test_normalized_h102.py.)
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import Bint, Real, ops
from interpretations import MonteCarlo

OVERFLOW = r"Integrate over \['x'\].*beyond the largest float32"


def _measure(dtype, log_mass):
    # A normal density of mean m_i (mass 1) plus a constant: Integrate(., x) = exp(c_i) m_i.
    mean = np.array([[1.5], [-2.0]])
    g = fc.Gaussian(mean=mean.astype(dtype), covariance=np.ones((2, 1, 1), dtype),
                    inputs={"i": Bint[2], "x": Real})
    g = g - g.reduce(ops.logaddexp, "x")
    return g + fc.Tensor(np.array(log_mass, dtype), {"i": Bint[2]}), mean[:, 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_integrate_mass_overflow_raises_instead_of_inf(dtype):
    x = fc.Variable("x", Real)
    c = [3.0, 200.0]  # exp(200) = 7e86: a float64 number, beyond float32 (3.4e38)
    q, mean = _measure(dtype, c)
    if dtype is np.float64:
        out = fc.Integrate(q, x, frozenset({"x"}))
        np.testing.assert_allclose(out.data, np.exp(c) * mean, rtol=1e-12)
        return
    with pytest.raises(ValueError, match=OVERFLOW):
        fc.Integrate(q, x, frozenset({"x"}))
    with pytest.raises(ValueError, match=OVERFLOW):
        with MonteCarlo(rng_key=0, particle=Bint[10]):
            fc.Integrate(q, (x * 0.1).exp(), frozenset({"x"}))
    # in range, the float32 answer is the closed form
    q, mean = _measure(dtype, [3.0, 20.0])
    out = fc.Integrate(q, x, frozenset({"x"}))
    np.testing.assert_allclose(out.data, np.exp([3.0, 20.0]) * mean, rtol=1e-5)
