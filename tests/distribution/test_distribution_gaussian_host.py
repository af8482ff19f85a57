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


def test_concrete_jax_scale_is_checked_on_the_host_without_compiling():
    # A concrete jax scale's positivity is checked on a numpy view: the first bad entry is
    # numpy's (the oracle: np.argwhere(~(scale > 0))[0]), and no XLA kernel is compiled for
    # the check (shapes no other test uses, so a compiled `greater` would show in jax's log).
    import logging

    jax = pytest.importorskip("jax")
    compiled = []

    class _Log(logging.Handler):
        def emit(self, record):
            compiled.append(record.getMessage().startswith("Compiling "))

    scale = np.abs(np.random.default_rng(2).normal(size=(5, 3))).astype(np.float32) + 0.1
    scale[3, 1], scale[4, 0] = -0.2, 0.0
    bad = tuple(np.argwhere(~(scale > 0))[0])
    inputs = {"i": fc.Bint[5], "j": fc.Bint[3]}
    handler, saved = _Log(), jax.config.jax_log_compiles
    logging.getLogger("jax").addHandler(handler)
    jax.config.update("jax_log_compiles", True)
    fc.set_backend("jax")
    try:
        x = fc.Variable("x", fc.Real)
        with pytest.raises(ValueError, match=f"'scale' must be positive, but it is "
                                             f"{scale[bad]:.4g} at i={bad[0]}, j={bad[1]}"):
            Normal(x, fc.Tensor(jax.device_put(scale), inputs), 0.5)
    finally:
        jax.config.update("jax_log_compiles", saved)
        logging.getLogger("jax").removeHandler(handler)
        fc.set_backend("numpy")
    assert not any(compiled)
