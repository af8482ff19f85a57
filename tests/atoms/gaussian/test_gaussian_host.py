"""Small eager Gaussian work of jax runs on host copies (``atoms/gaussian/host.py``): the
route (concrete CPU arrays only, never traced ones), the values against closed forms and a
hand-written Kalman filter, and that an eager first call compiles nothing."""

import logging
import math

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian.host import HOST_MAX, host_copies
from funsor_core.distribution import Normal
from funsor_core.sum_product import MarkovProduct
from interpretations import lazy

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture
def jax_backend():
    fc.set_backend("jax")
    yield
    fc.set_backend("numpy")


class _Compiles(logging.Handler):
    def __init__(self):
        super().__init__()
        self.names = []

    def emit(self, record):
        if record.getMessage().startswith("Compiling "):
            self.names.append(record.getMessage().split(" with")[0])


@pytest.fixture
def compiles():
    handler, logger = _Compiles(), logging.getLogger("jax")
    logger.addHandler(handler)
    with jax.log_compiles(True):
        yield handler.names
    logger.removeHandler(handler)


def test_host_copies_route():
    assert host_copies(np.zeros(2)) is None  # numpy needs no copy
    views = host_copies(jnp.zeros(2), jnp.ones((2, 2)))
    assert [type(v) for v in views] == [np.ndarray, np.ndarray]
    assert host_copies(jnp.zeros(HOST_MAX + 1)) is None  # big enough to compile


def _log_normal(y, loc, var):
    return -0.5 * (math.log(2 * math.pi * var) + (y - loc) ** 2 / var)


def test_eager_normal_integral_compiles_nothing(jax_backend, compiles):
    # A shape no other test uses, so any kernel this program needed would compile here.
    loc_np, y_np = np.linspace(-1.0, 1.0, 13), np.linspace(0.5, 2.0, 13)
    x = fc.Variable("x", fc.Real)
    loc = fc.Tensor(fc.numeric_array(loc_np), {"i": fc.Bint[13]})
    y = fc.Tensor(fc.numeric_array(y_np), {"i": fc.Bint[13]})
    joint = Normal(loc, 0.7, x) + Normal(x, 1.3, y)
    result = joint.reduce(ops.logaddexp, "x")
    # only the scale's positivity check (distribution/base.py, a generic op on a 0-d array,
    # compiled once per process) may compile; the Gaussian work runs on the host
    assert [c for c in compiles if c != "Compiling jit(greater)"] == []
    assert isinstance(result.data, jax.Array)
    expected = _log_normal(y_np, loc_np, 0.7 ** 2 + 1.3 ** 2)  # y ~ N(loc, 0.7^2 + 1.3^2)
    np.testing.assert_allclose(np.asarray(result.data), expected, rtol=1e-12)


def test_normal_integral_under_jit_equals_eager(jax_backend):
    seen = []

    def integral(loc):
        seen.append(host_copies(loc))
        x = fc.Variable("x", fc.Real)
        t = fc.Tensor(loc, {"i": fc.Bint[3]})
        return (Normal(t, 0.5, x) + Normal(x, 2.0, 1.0)).reduce(ops.logaddexp, "x").data

    loc = jnp.asarray(np.array([0.0, 1.0, -2.0]))
    eager, traced = integral(loc), jax.jit(integral)(loc)
    assert seen[0] is not None and seen[1] is None  # traced values take the backend's ops
    expected = _log_normal(1.0, np.asarray(loc), 0.25 + 4.0)
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(traced), expected, rtol=1e-12)


def _kalman_log_likelihood(y, q, r):
    # x_0 ~ N(0, 1), x_t = x_{t-1} + N(0, q^2), y_t ~ N(x_t, r^2): the filter by hand
    m, p, ll = 0.0, 1.0, 0.0
    for obs in y:
        p = p + q * q
        s = p + r * r
        ll += _log_normal(obs, m, s)
        m, p = m + p / s * (obs - m), p - p * p / s
    return ll


@pytest.mark.parametrize("backend", ["jax", "numpy"])
def test_eager_gaussian_chain(backend, compiles):
    fc.set_backend(backend)
    try:
        y_np = np.random.RandomState(0).randn(17).cumsum()
        x_prev, x_curr = fc.Variable("x_prev", fc.Real), fc.Variable("x_curr", fc.Real)
        y = fc.Tensor(fc.numeric_array(y_np), {"t": fc.Bint[17]})
        walk = Normal(x_prev, 0.8, x_curr) + Normal(x_curr, 0.5, y)
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, walk, "t", {"x_prev": "x_curr"})
        total = (Normal(0.0, 1.0, x_prev) + chain).reduce(ops.logaddexp, {"x_prev", "x_curr"})
        # only the Normal's scale check may compile (see above); every Gaussian step, the
        # chain, and the sum of its constant and the prior's run on the host
        assert [c for c in compiles if c != "Compiling jit(greater)"] == []
        np.testing.assert_allclose(float(total.data), _kalman_log_likelihood(y_np, 0.8, 0.5),
                                   rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def test_eager_sum_compressed_on_the_host(jax_backend, compiles):
    # Two Gaussians whose concatenated rank passes the compression threshold (5 > 2 * 2):
    # the QR and the split-off constant run on the host (no kernel compiled), float32 stays
    # float32, and the sum's density and its full marginal equal the numpy backend's.
    rng = np.random.default_rng(11)
    w1, s1 = rng.normal(size=(7, 3)), rng.normal(size=(7, 2, 3))
    w2, s2 = rng.normal(size=(7, 2)), rng.normal(size=(7, 2, 2)) + 2 * np.eye(2)
    inputs = {"i": fc.Bint[7], "x": fc.Reals[2]}

    def total(conv):
        g1 = fc.Gaussian(white_vec=conv(w1), prec_sqrt=conv(s1), inputs=inputs)
        return g1 + fc.Gaussian(white_vec=conv(w2), prec_sqrt=conv(s2), inputs=inputs)

    fc.set_backend("numpy")
    expected = total(np.asarray)
    at = rng.normal(size=2)
    expected_at = expected(x=at).align(("i",)).data
    expected_mass = expected.reduce(ops.logaddexp, "x").align(("i",)).data
    fc.set_backend("jax")
    result = total(fc.numeric_array)
    assert compiles == []
    np.testing.assert_allclose(np.asarray(result(x=fc.numeric_array(at)).align(("i",)).data),
                               expected_at, rtol=1e-10)
    np.testing.assert_allclose(
        np.asarray(result.reduce(ops.logaddexp, "x").align(("i",)).data), expected_mass,
        rtol=1e-10)
    low = fc.Gaussian(white_vec=jax.device_put(w1.astype(np.float32)),
                      prec_sqrt=jax.device_put(s1.astype(np.float32)), inputs=inputs)
    low = low + low + low
    assert all(getattr(t, "data", getattr(t, "white_vec", None)).dtype == jnp.float32
               for t in getattr(low, "terms", (low,)))


def test_small_torch_work_runs_on_the_host_outside_autograd():
    # Plain small CPU float tensors take numpy views (torch dispatches each op in microseconds
    # where numpy takes one); tensors that carry gradients, other dtypes and provenance
    # tensors keep torch's ops. The values equal numpy's, float32 stays float32, and the
    # gradient through the torch route is the dense one: d/dS of -log|det S| is -S^{-T}.
    torch = pytest.importorskip("torch")
    from backends.torch_facts import ProvenanceTensor

    assert [type(a).__name__ for a in host_copies(torch.ones(2), torch.ones(2, 2))] == [
        "ndarray", "ndarray"]
    for other in (torch.ones(2, requires_grad=True), torch.ones(2, dtype=torch.float16),
                  ProvenanceTensor(torch.ones(2), frozenset({("a", fc.Bint[2])}))):
        assert host_copies(other) is None
    rng = np.random.default_rng(12)
    w, s = rng.normal(size=(3, 2)), rng.normal(size=(3, 2, 2)) + 2 * np.eye(2)
    inputs = {"i": fc.Bint[3], "x": fc.Reals[2]}
    x = fc.Variable("x", fc.Reals[2])
    expected = fc.Integrate(fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs), x, "x")
    fc.set_backend("torch")
    try:
        for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
            g = fc.Gaussian(white_vec=torch.tensor(w, dtype=dtype),
                            prec_sqrt=torch.tensor(s, dtype=dtype), inputs=inputs)
            got = fc.Integrate(g, x, "x")
            assert got.data.dtype == dtype and isinstance(got.data, torch.Tensor)
            np.testing.assert_allclose(got.data.numpy(), expected.data, rtol=rtol)
        s_grad = torch.tensor(s, requires_grad=True)
        g = fc.Gaussian(white_vec=torch.tensor(w), prec_sqrt=s_grad, inputs=inputs)
        g.reduce(ops.logaddexp, "x").data.sum().backward()
        np.testing.assert_allclose(s_grad.grad.numpy(),
                                   -np.linalg.inv(s).transpose(0, 2, 1), rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def test_forward_mode_tangents_keep_the_torch_route():
    # inside a forward-AD dual level a plain tensor may carry a tangent that a numpy view
    # drops (it came back None): log of the integral of exp(-(x - m)^2 / 2 - x^2 / 2) is
    # log sqrt(pi) - m^2 / 4, its tangent in m is -m / 2
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as fwad

    try:
        fc.set_backend("torch")
        one = torch.eye(1, dtype=torch.float64)
        with fwad.dual_level():
            m = fwad.make_dual(torch.full((1,), 0.5, dtype=torch.float64),
                               torch.ones(1, dtype=torch.float64))
            g = fc.Gaussian(mean=m, covariance=one, inputs={"x": fc.Real})
            h = fc.Gaussian(mean=torch.zeros(1, dtype=torch.float64), covariance=one,
                            inputs={"x": fc.Real})
            total = (g + h).reduce(ops.logaddexp, "x")
            value, tangent = fwad.unpack_dual(total.data)
        assert tangent is not None
        np.testing.assert_allclose(float(value), 0.5 * np.log(np.pi) - 0.25 ** 2)
        np.testing.assert_allclose(float(tangent), -0.25)
    finally:
        fc.set_backend("numpy")
