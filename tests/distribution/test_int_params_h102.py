"""Integer parameter arrays take the float dtype their backend promotes them to (#28, h102).

``Normal(int64 loc, float64 scale)`` cast the integer loc to the default float dtype before
anything else: under torch's float32 default ``loc = 2**24 + 1`` became ``2**24``, and the log
density at ``2**24 + 1`` was 0.5 off (torch's own ``log_prob`` keeps it exact). Now an
integer array given with float arrays follows the backend's promotion with them (torch and
jax: the float's dtype; numpy: float64); with no float in sight, the default float dtype (as
torch's ``Normal(1, 2)`` is float32 under its float32 default). Oracle: scipy.stats in
float64.
"""

import numpy as np
import pytest
import scipy.stats as st

import funsor_core as fc
import funsor_core.distribution as dist
from funsor_core import Bint, ops

BIG = 2**24 + 1  # the first integer float32 cannot hold
SCIPY = {"Normal": st.norm, "Laplace": st.laplace, "Cauchy": st.cauchy}


def _arrays(backend):
    if backend == "torch":
        import torch

        return lambda a: torch.as_tensor(a)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray
    return np.asarray


@pytest.fixture
def torch_float32_default():
    import torch

    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(old)


@pytest.mark.parametrize("family", sorted(SCIPY))
@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_int_loc_with_float64_scale_is_exact(family, backend, torch_float32_default):
    fc.set_backend(backend)
    try:
        a = _arrays(backend)
        loc = np.array([BIG, 3], dtype=np.int64)
        scale = np.array([1.0, 2.0])
        value = np.array([BIG + 0.0, 0.5])
        expected = SCIPY[family](loc.astype(np.float64), scale).logpdf(value)
        cls = getattr(dist, family)
        # positional arrays, a free value substituted
        got = cls(a(loc), a(scale), value="x")(x=a(value))
        assert np.asarray(ops.to_numpy(got.data)).dtype == np.float64
        np.testing.assert_allclose(ops.to_numpy(got.data), expected.sum(), rtol=1e-12)
        # the value given at construction, a batch input
        i = {"i": Bint[2]}
        got = cls(fc.Tensor(a(loc), i), fc.Tensor(a(scale), i), value=fc.Tensor(a(value), i))
        np.testing.assert_allclose(ops.to_numpy(got.data), expected, rtol=1e-12)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_int_params_with_float32_follow_the_backend(backend, torch_float32_default):
    # torch promotes int64 with float32 to float32 (its log_prob's dtype); numpy to float64
    fc.set_backend(backend)
    try:
        a = _arrays(backend)
        # (a batch of 2 given as plain arrays: the log density sums it)
        got = dist.Normal(a(np.array([1, 3])), a(np.array([1.0, 2.0], np.float32)),
                          value=a(np.array([0.5, 0.25], np.float32)))
        got = np.asarray(ops.to_numpy(got.data))
        if backend == "torch":
            import torch

            ref = torch.distributions.Normal(torch.tensor([1, 3]), torch.tensor([1.0, 2.0]))
            want = ref.log_prob(torch.tensor([0.5, 0.25])).numpy().sum()
            assert got.dtype == want.dtype == np.float32
        else:
            want = st.norm([1.0, 3.0], [1.0, 2.0]).logpdf(np.float32([0.5, 0.25])).sum()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_all_int_params_take_the_default_float(backend, torch_float32_default):
    # no float in sight: the backend's default float dtype (torch: float32 here)
    fc.set_backend(backend)
    try:
        a = _arrays(backend)
        g = dist.Normal(a(np.array(1)), a(np.array(3)), value="x")
        default = np.float32 if backend == "torch" else np.float64
        got = g(x=a(np.array(0.5, default)))
        assert np.asarray(ops.to_numpy(got.data)).dtype == default
        np.testing.assert_allclose(ops.to_numpy(got.data), st.norm(1.0, 3.0).logpdf(0.5),
                                   rtol=1e-6 if default is np.float32 else 1e-12)
    finally:
        fc.set_backend("numpy")
