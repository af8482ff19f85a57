"""A seeded slice of the Gaussian fuzzer (``gaussian_fuzz.py``): random programs of
``Gaussian`` constructors, ``Normal``/``MultivariateNormal`` with affine arguments, sums,
substitutions, ``Delta``, reductions, ``Integrate``, ``fc.moments``, ``moment_matching`` and
``MonteCarlo`` against dense float64 numpy algebra; and the regressions the long runs found,
each against its own numpy oracle."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from tests.atoms.gaussian.gaussian_fuzz import check, draw

# numpy cases are cheap; torch a few; jax compiles, so one case under jax.jit with a short
# program (the long runs cover jax eager and jit: ``python -m ...gaussian_fuzz 0 2000``).
_NUMPY = [s for s in range(400) if draw(s)["backend"] == "numpy"][:40]
_TORCH = [s for s in range(400) if draw(s)["backend"] == "torch"][:6]
_JAX = [106]  # under jax.jit: MultivariateNormal(A @ y + b) integrated (affine, traced)


@pytest.mark.parametrize("seeds", [_NUMPY, _TORCH, _JAX], ids=["numpy", "torch", "jax"])
def test_fuzz_slice_agrees_with_dense_numpy(seeds):
    failures = []
    for seed in seeds:
        failures += [f"seed {seed}: {f}" for f in check(draw(seed))]
    assert not failures, "\n".join(failures[:10])


def test_fuzz_slice_covers_what_it_claims():
    assert draw(_JAX[0])["jit"] and draw(_JAX[0])["factors"][0]["kind"] == "mvn"
    cases = [draw(s) for s in _NUMPY + _TORCH + _JAX]
    assert {c["query"]["kind"] for c in cases} >= {"point", "marginal", "lognorm", "integrate",
                                                    "moments", "mm", "mc", "bint_lae"}
    assert {f["kind"] for c in cases for f in c["factors"]} >= {
        "sqrt", "info", "meancov", "meanprec", "scale_tril", "normal", "mvn"}
    assert {c["numerics"] for c in cases} == {"plain", "illcond", "rankdef", "huge"}
    assert {c["dtype"] for c in cases} == {"float32", "float64"}
    assert {c["transform"]["kind"] for c in cases} >= {"const", "rename", "affine", "slice",
                                                       "delta"}


# Found by the fuzzer: the expectation of a quadratic under a float32 Gaussian came back in
# float64 (numpy, jax; torch promoted too): the finite-difference probe points and their
# coefficients were float64 host constants.
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_float32_quadratic_expectation_stays_float32(backend):
    pytest.importorskip(backend)
    rng = np.random.default_rng(0)
    s = (rng.normal(size=(3, 4)) + np.eye(3, 4)).astype(np.float32)
    w = rng.normal(size=4).astype(np.float32)
    fc.set_backend(backend)
    try:
        if backend == "torch":
            import torch

            sw, ss = torch.tensor(w), torch.tensor(s)
        else:
            sw, ss = w, s
        g = fc.Gaussian(white_vec=sw, prec_sqrt=ss, inputs={"x": fc.Reals[2], "y": fc.Real})
        x = fc.Variable("x", fc.Reals[2])
        out = fc.Integrate(g, x[0] * x[1], frozenset({"x", "y"}))
        data = np.asarray(fc.ops.to_numpy(out.data))
    finally:
        fc.set_backend("numpy")
    assert data.dtype == np.float32
    # Closed form: Z (m0 m1 + C01), P = S S', m = P^-1 S w, Z = ∫ exp(-0.5 |x S - w|^2).
    s64, w64 = s.astype(np.float64), w.astype(np.float64)
    p = s64 @ s64.T
    cov = np.linalg.inv(p)
    m = cov @ s64 @ w64
    log_z = 0.5 * m @ p @ m - 0.5 * w64 @ w64 + 1.5 * np.log(2 * np.pi) \
        - 0.5 * np.linalg.slogdet(p)[1]
    np.testing.assert_allclose(data, np.exp(log_z) * (m[0] * m[1] + cov[0, 1]), rtol=1e-4)


# Found by the fuzzer: affine coefficients were read as v(e_i) - v(0), which cancels the
# constant: MultivariateNormal(A x + b) with |b| ~ 4e5 in float32 had its coefficient of x
# off by 3% (the log normalizer of seed 5166 by 1.3%).
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_affine_coefficients_next_to_a_large_constant(dtype):
    from funsor_core.analysis.affine import extract_affine_flat
    from funsor_core.distribution import MultivariateNormal

    a = np.array([[0.7192181], [-0.1773295]], dtype=dtype)
    b = np.array([384617.78, -1.0e6], dtype=dtype)
    x = fc.Variable("x", fc.Real)
    const, coeffs = extract_affine_flat(fc.Tensor(a[:, 0]) * x + fc.Tensor(b))
    np.testing.assert_allclose(coeffs["x"].data, a.T, rtol=4 * np.finfo(dtype).eps)
    np.testing.assert_array_equal(const.data, b)
    # The Gaussian of the MVN at a point against its closed form in float64 numpy.
    lower = np.array([[0.81, 0.0], [0.15, 0.82]], dtype=dtype)
    z = np.array([1.4, -0.3], dtype=dtype)
    d = MultivariateNormal(fc.Tensor(a[:, 0]) * x + fc.Tensor(b), scale_tril=fc.Tensor(lower),
                           value=fc.Tensor(z))
    xv = -5.0e5
    r = np.linalg.solve(lower.astype(np.float64),
                        z.astype(np.float64) - a[:, 0].astype(np.float64) * xv
                        - b.astype(np.float64))
    expected = -0.5 * r @ r - np.log(np.diag(lower.astype(np.float64))).sum() - np.log(2 * np.pi)
    actual = float(d(x=np.asarray(xv, dtype=dtype)).data)
    np.testing.assert_allclose(actual, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


# Found by the fuzzer: samples of a float32 Gaussian (and so Monte Carlo estimates) came back
# float64 on numpy: the noise was drawn in the backend's default float dtype.
def test_float32_gaussian_samples_stay_float32():
    g = fc.Gaussian(mean=np.array([1.0, -2.0], dtype=np.float32),
                    covariance=np.diag([4.0, 0.25]).astype(np.float32), inputs={"x": fc.Reals[2]})
    s = g.sample(frozenset({"x"}), {"particle": fc.Bint[4000]}, rng_key=0)
    delta = next(t for t in s.terms if isinstance(t, fc.Delta))
    point = delta.terms[0][1][0].data
    assert point.dtype == np.float32
    # moments of the draws against the Gaussian's (a loose, seeded 6-sigma bound)
    sd = np.array([2.0, 0.5])
    assert (np.abs(point.mean(0) - [1.0, -2.0]) <= 6 * sd / np.sqrt(4000)).all()
    assert (np.abs(point.var(0) / sd ** 2 - 1) <= 6 * np.sqrt(2 / 4000)).all()
