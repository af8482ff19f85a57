"""Adversarial numerics of Gaussian construction (h42): ill-conditioned and rank-deficient
precisions, against closed forms built from an exactly orthogonal basis."""
import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

# A Hadamard basis over 2 is exactly orthonormal in floating point, so P = H diag(lam) H'
# is stored exactly for integer lam and its log normalizer is known in closed form.
H = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]], float) / 2


@pytest.mark.parametrize("cond", [1e8, 1e12])
def test_ill_conditioned_precision_log_normalizer(cond):
    lam = np.array([cond, 3.0 * cond ** 0.5, 7.0, 1.0])
    precision = (H * lam) @ H.T
    info_vec = np.array([0.3, -1.0, 2.0, 0.5])
    g = fc.Gaussian(info_vec=info_vec, precision=precision, inputs={"x": fc.Reals[4]})
    # log ∫ exp(-0.5 (x-m)'P(x-m)) dx = (n/2) log 2π - 0.5 log det P
    expected = 2 * np.log(2 * np.pi) - 0.5 * np.log(lam).sum()
    actual = float(g.reduce(ops.logaddexp, "x").data)
    assert abs(actual - expected) <= 50 * cond * 2.2e-16 * (1 + abs(expected))
    # The marginal precision of y is the inverse of the exact covariance's y block.
    g2 = fc.Gaussian(info_vec=info_vec, precision=precision,
                     inputs={"x": fc.Reals[2], "y": fc.Reals[2]})
    marginal = g2.reduce(ops.logaddexp, "x")
    schur = np.linalg.inv(((H / lam) @ H.T)[2:, 2:])
    gauss = marginal if isinstance(marginal, fc.Gaussian) else next(
        t for t in marginal.terms if isinstance(t, fc.Gaussian))
    np.testing.assert_allclose(np.asarray(gauss.precision), schur, rtol=0,
                               atol=10 * cond * 2.2e-16 * np.abs(schur).max())


def _rank_two_precisions(dtype):
    # A A' with A 4x2: rank 2 exactly; rounded to float32 some of these are positive
    # definite by roundoff (eigenvalue ratio ~1e-9, below float32's eps), which numpy's
    # float64 factorization of float32 input used to accept (a finite log normalizer).
    rng = np.random.default_rng(2)
    out = []
    for _ in range(20):
        a = rng.standard_normal((4, 2)).astype(dtype)
        out.append(a @ a.T)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rank_deficient_precision_raises_on_numpy(dtype):
    ps = _rank_two_precisions(dtype)
    if dtype is np.float32:  # the roundoff-PD case the check is for is in this sample
        assert any(np.linalg.eigvalsh(p.astype(np.float64))[0] > 0 for p in ps)
    for p in ps:
        with pytest.raises(ValueError, match="precision= is not positive definite"):
            fc.Gaussian(info_vec=np.zeros(4, dtype), precision=p, inputs={"x": fc.Reals[4]})


class _Backend:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.old = fc.get_backend()
        fc.set_backend(self.name)

    def __exit__(self, *exc):
        fc.set_backend(self.old)


def test_rank_deficient_covariance_raises_on_numpy_and_torch_alike():
    torch = pytest.importorskip("torch")
    for p in _rank_two_precisions(np.float32)[:6]:
        for name, arr in (("numpy", p), ("torch", torch.tensor(p))):
            with _Backend(name), pytest.raises(ValueError, match="covariance= is not positive"):
                fc.Gaussian(mean=arr[0] * 0, covariance=arr, inputs={"x": fc.Reals[4]})


def test_rank_deficient_precision_is_nan_under_jit():
    jax = pytest.importorskip("jax")
    p = next(p for p in _rank_two_precisions(np.float32)
             if np.linalg.eigvalsh(p.astype(np.float64))[0] > 0)
    old = fc.get_backend()
    fc.set_backend("jax")
    try:
        f = jax.jit(lambda m: fc.Gaussian(info_vec=m[0] * 0, precision=m,
                                          inputs={"x": fc.Reals[4]}).reduce(ops.logaddexp).data)
        assert np.isnan(float(f(jax.numpy.asarray(p))))
    finally:
        fc.set_backend(old)
