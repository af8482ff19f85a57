"""A Gaussian's precision= or covariance= must be symmetric (issue 13, item 10).

Oracles: numpy's ``max |m - m.T|`` for the reported asymmetry, and numpy's own matrices for
what the Gaussian holds when the input is symmetric up to roundoff.
"""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def to_backend(x, backend):
    if backend == "torch":
        import torch

        return torch.as_tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return np.asarray(x)


ASYMMETRIC = np.array([[2.0, 1.5], [0.5, 2.0]])  # the example


@pytest.mark.parametrize("scale", ["precision", "covariance"])
@pytest.mark.parametrize("loc", ["info_vec", "mean"])
def test_asymmetric_matrix_is_rejected(backend, scale, loc):
    m = to_backend(ASYMMETRIC, backend)
    asym = np.abs(ASYMMETRIC - ASYMMETRIC.T).max()  # numpy's answer: 1.0
    with pytest.raises(ValueError, match=rf"{scale}= is not symmetric: \|{scale}\[1, 0\] - "
                                         rf"{scale}\[0, 1\]\| = {asym:g} while its largest "
                                         rf"entry is 2"):
        fc.Gaussian(**{loc: to_backend(np.zeros(2), backend), scale: m},
                    inputs={"x": fc.Reals[2]})


def test_asymmetric_batch_entry_is_named():
    m = np.stack([np.eye(3), np.eye(3), np.eye(3)])
    m[2, 0, 2] = 0.25
    with pytest.raises(ValueError, match=r"precision= is not symmetric \(at batch index "
                                         r"\(2,\)\): \|precision\[2, 0\] - precision\[0, 2\]\|"):
        fc.Gaussian(info_vec=np.zeros((3, 3)), precision=m,
                    inputs={"i": fc.Bint[3], "x": fc.Reals[3]})


def test_roundoff_asymmetry_is_accepted(backend):
    rng = np.random.default_rng(0)
    b = rng.normal(size=(4, 6, 6))
    # Both triangles of b @ b.T, summed in different orders: symmetric up to roundoff.
    m = np.einsum("bik,bjk->bij", b, b) + 6 * np.eye(6)
    m = m + np.triu(rng.normal(size=(6, 6)), 1) * 4 * np.finfo(float).eps * np.abs(m).max()
    assert np.abs(m - np.swapaxes(m, -1, -2)).max() > 0
    g = fc.Gaussian(mean=to_backend(np.zeros((4, 6)), backend),
                    precision=to_backend(m, backend),
                    inputs={"i": fc.Bint[4], "x": fc.Reals[6]})
    np.testing.assert_allclose(np.asarray(ops.to_numpy(g.precision)), m, rtol=1e-12)


def test_square_root_form_needs_no_symmetry():
    # prec_sqrt is a factor, not a symmetric matrix: any shape is accepted as it is.
    s = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0]])
    g = fc.Gaussian(white_vec=np.zeros(3), prec_sqrt=s, inputs={"x": fc.Reals[2]})
    np.testing.assert_allclose(g.precision, s @ s.T)


def test_asymmetric_matrix_under_jit_is_nan():
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    try:
        @jax.jit
        def precision(p):
            return fc.Gaussian(info_vec=jnp.zeros((2, 2)), precision=p,
                               inputs={"i": fc.Bint[2], "x": fc.Reals[2]}).precision

        sym = np.array([[2.0, 0.5], [0.5, 2.0]])
        out = np.asarray(precision(jnp.asarray(np.stack([ASYMMETRIC, sym]))))
        assert np.isnan(out[0]).all()  # values cannot be read under jit: NaN, never a guess
        np.testing.assert_allclose(out[1], sym, rtol=1e-12)
    finally:
        fc.set_backend("numpy")
