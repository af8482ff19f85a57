"""The fast construction path of the common ``Normal`` (``distribution.fast_normal``): the
same densities as scipy, the same terms as the general path, taken only where the exact
rule would run, and the general path's errors for everything it declines."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import funsor_core as fc
from funsor_core import ops
from funsor_core.distribution import Normal
from funsor_core.distribution.fast_normal import fast_normal
from funsor_core.engine.protocol import FunsorMeta
from interpretations import lazy


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_fast_normal_densities_against_scipy(backend):
    fc.set_backend(backend)
    try:
        a = fc.numeric_array
        x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
        xs, ys = np.array([-1.0, 0.3, 2.0]), np.array([0.5, -0.2, 1.0])
        n = {"n": fc.Bint[3]}
        cases = [  # (args, kwargs, the value's name, scipy's loc at the points, scale)
            ((x, 0.5, y), {}, "y", xs, 0.5),
            ((a(np.array(0.3)), a(np.array(1.5))), {"value": "y"}, "y", 0.3, 1.5),
            ((fc.Tensor(a(np.array(0.3))), fc.Tensor(a(np.array(2.0))), y), {}, "y", 0.3, 2.0),
            ((-1.0, 2, y), {}, "y", -1.0, 2.0),
            ((x, a(np.array(0.7))), {}, "value", xs, 0.7),
        ]
        for args, kwargs, name, loc, scale in cases:
            d = fast_normal(Normal, args, kwargs)
            assert d is not None, args  # the fast path applies
            assert isinstance(d.terms[0], fc.Gaussian) and isinstance(d.terms[1], fc.Tensor)
            at = {name: fc.Tensor(a(ys), n)}
            if "x" in d.inputs:
                at["x"] = fc.Tensor(a(xs), n)
            actual = ops.to_numpy(d(**at).data)
            np.testing.assert_allclose(actual, st.norm(loc, scale).logpdf(ys), rtol=1e-12)
            general = FunsorMeta.__call__(Normal, *args, **kwargs)  # the general path
            assert general.inputs == d.inputs
            np.testing.assert_array_equal(ops.to_numpy(general(**at).data), actual)
    finally:
        fc.set_backend("numpy")


def test_fast_normal_declines_and_the_general_path_decides():
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    torch = pytest.importorskip("torch")
    declined = [
        ((x, -1.0, y), {}),  # a bad scale: the general path's error
        ((x, float("nan"), y), {}),
        ((x, np.array(0.0), y), {}),
        ((x, 1.0, x), {}),  # one name for loc and value
        ((np.array(0.0, dtype=np.float32), np.array(1.0), y), {}),  # mixed dtypes
        ((torch.tensor(0.0, dtype=torch.float64), np.array(1.0), y), {}),  # mixed backends
        ((fc.Variable("v", fc.Reals[2]), 1.0), {}),  # a vector value
        ((x, 1.0), {"value": y, "loc": x}),
    ]
    for args, kwargs in declined:
        assert fast_normal(Normal, args, kwargs) is None, args
    with pytest.raises(ValueError, match="parameter 'scale' must be positive"):
        Normal(x, -1.0, y)
    with pytest.raises(ValueError, match="parameter 'scale' must be positive"):
        Normal(x, np.array(0.0), y)
    with lazy:  # no rule runs under lazy: no fast path, the term stays a Normal
        assert fast_normal(Normal, (x, 1.0, y), {}) is None
        assert type(Normal(x, 1.0, y)) is Normal


def test_normal_parametrized_as_funsor_types_it():
    # Normal's own metaclass (the fast path) combines with the parametrized classes'.
    x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    typed = Normal[fc.Funsor, fc.Funsor, fc.Funsor]
    assert typed is Normal[fc.Funsor, fc.Funsor, fc.Funsor] and issubclass(typed, Normal)
    d = typed(x, 2.0, y)
    assert float(d(x=1.0, y=1.0).data) == pytest.approx(st.norm(1.0, 2.0).logpdf(1.0), rel=1e-12)


def test_fast_normal_under_jit_with_a_closed_over_scale():
    # Under jax.jit a closed-over scale is concrete but its check is staged: checked on the
    # host, so the fast path still applies; a traced scale takes the general path (NaN).
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    fc.set_backend("jax")
    try:
        scale = jnp.asarray(0.7)

        def logp(loc, value, bad):
            good = Normal(loc, scale, value="x")(x=value).data
            return good, Normal(loc, bad, value="x")(x=value).data

        good, nan = jax.jit(logp)(jnp.asarray(0.2), jnp.asarray(1.1), jnp.asarray(-1.0))
        assert float(good) == pytest.approx(st.norm(0.2, 0.7).logpdf(1.1), rel=1e-12)
        assert np.isnan(float(nan))
    finally:
        fc.set_backend("numpy")
