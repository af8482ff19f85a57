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
_JAX = [s for s in range(400) if draw(s)["jit"] and draw(s)["query"]["kind"] == "point"
        and len(draw(s)["factors"]) == 1][:1]


@pytest.mark.parametrize("seeds", [_NUMPY, _TORCH, _JAX], ids=["numpy", "torch", "jax"])
def test_fuzz_slice_agrees_with_dense_numpy(seeds):
    failures = []
    for seed in seeds:
        failures += [f"seed {seed}: {f}" for f in check(draw(seed))]
    assert not failures, "\n".join(failures[:10])


def test_fuzz_slice_covers_what_it_claims():
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
