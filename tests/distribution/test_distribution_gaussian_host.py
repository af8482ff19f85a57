"""Normal with a Python-number scale: its Gaussian's constants made on the host (one
triangular block, the array path's roundings), against scipy's densities and against the
same Normal with the scale given as an array."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal


def test_normal_of_a_number_scale_is_built_on_the_host():
    # Normal(loc, sd, value) with a Python-number sd: the same density as scipy's, square
    # root precision +-diag(1/sd) (one block: triangular), vector values included.
    rng = np.random.default_rng(1)
    x, y = fc.Variable("x", fc.Reals[2]), fc.Variable("y", fc.Reals[2])
    xs, ys = rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    n = {"n": fc.Bint[4]}
    for loc, value, at, expected in [
        (x, y, {"x": xs, "y": ys}, st.norm(xs, 0.5).logpdf(ys).sum(-1)),
        (1.5, y, {"y": ys}, st.norm(1.5, 0.5).logpdf(ys).sum(-1)),
        (x, -0.5, {"x": xs}, st.norm(xs, 0.5).logpdf(-0.5).sum(-1)),
    ]:
        d = Normal(loc, 0.5, value)
        g = d.terms[0]
        assert isinstance(g, fc.Gaussian)
        assert g._triangular == ("upper" if len(at) == 1 else None)
        actual = d(**{k: fc.Tensor(v, n) for k, v in at.items()}).data
        np.testing.assert_allclose(actual, expected, rtol=1e-12)
        if len(at) == 1:  # the triangular log normalizer: log ∫ exp(density) = 0
            assert float((g + d.terms[1]).reduce(ops.logaddexp).data) == pytest.approx(
                0.0, abs=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_of_a_number_scale_rounds_as_the_array_path(dtype):
    # The host constants of Normal(loc, 0.3, value) equal those of the same Normal with the
    # scale given as a 0-d torch array of the default dtype, bit for bit.
    import torch

    saved = torch.get_default_dtype()
    fc.set_backend("torch")
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
        c = fc.Tensor(torch.tensor([0.25, -1.5]), {"t": fc.Bint[2]})
        for loc, value in [(x, y), (0.7, y), (c, y)]:
            host = Normal(loc, 0.3, value)
            arrays = Normal(loc, torch.tensor(0.3), value)
            for a, b in zip((*host.terms[0]._args[:2], host.terms[1].data),
                            (*arrays.terms[0]._args[:2], arrays.terms[1].data)):
                assert a.dtype == b.dtype and torch.equal(a, b), (loc, value)
    finally:
        torch.set_default_dtype(saved)
        fc.set_backend("numpy")
