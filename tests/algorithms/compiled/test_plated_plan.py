"""``fc.plan(factors, eliminate, plates)`` (API.md: ``plates=`` is part of plan's signature;
it raised NotImplementedError): a plated model planned from its factors, run in linear and
log space, on numpy, torch and jax (and under ``jax.jit``), against brute force in numpy."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops

X, Y, NI, NJ = 2, 3, 4, 5


def _model(proto=None):
    rng = np.random.default_rng(7)
    a, b, c = rng.normal(size=X), rng.normal(size=(NI, X, Y)), rng.normal(size=(NI, NJ, Y))
    # log p = logsumexp_x [a_x + sum_i logsumexp_y (b_ixy + sum_j c_ijy)]
    inner = np.logaddexp.reduce(b + c.sum(1)[:, None, :], axis=2)  # (NI, X)
    log_z = np.logaddexp.reduce(a + inner.sum(0))
    arr = (lambda x: x) if proto is None else (lambda x: ops.new_array(proto, x))
    factors = [fc.Tensor(arr(a), {"x": fc.Bint[X]}),
               fc.Tensor(arr(b), {"i": fc.Bint[NI], "x": fc.Bint[X], "y": fc.Bint[Y]}),
               fc.Tensor(arr(c), {"i": fc.Bint[NI], "j": fc.Bint[NJ], "y": fc.Bint[Y]})]
    return factors, log_z


ALL, PLATES = frozenset("xyij"), frozenset("ij")


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_plated_plan_against_brute_force(backend):
    pytest.importorskip(backend)
    try:
        fc.set_backend(backend)
        factors, log_z = _model(fc.get_default_prototype())
        p = fc.plan(factors, ALL, plates=PLATES)
        got = p(factors, ops.logaddexp, ops.add)
        np.testing.assert_allclose(float(got.data), log_z, rtol=1e-5)
        linear = p([f.exp() for f in factors])  # (add, mul)
        np.testing.assert_allclose(np.log(float(linear.data)), log_z, rtol=1e-5)
        assert len(p.stats()["plates"]) == 2  # the plates' sub-programs (nested)
    finally:
        fc.set_backend("numpy")


def test_plated_plan_under_jax_jit():
    jax = pytest.importorskip("jax")
    try:
        fc.set_backend("jax")
        factors, log_z = _model(fc.get_default_prototype())
        p = fc.plan(factors, ALL, plates=PLATES)

        def run(*arrays):
            ts = [fc.Tensor(x, f.inputs) for x, f in zip(arrays, factors)]
            return p(ts, ops.logaddexp, ops.add).data

        np.testing.assert_allclose(float(jax.jit(run)(*[f.data for f in factors])), log_z,
                                   rtol=1e-5)
    finally:
        fc.set_backend("numpy")


def test_kept_names_and_structure_errors():
    factors, _ = _model()
    p = fc.plan(factors, frozenset("yij"), plates={"i", "j"})  # x kept
    kept = p(factors, ops.logaddexp, ops.add)
    a, b, c = (np.asarray(f.data) for f in factors)
    expected = a + np.logaddexp.reduce(b + c.sum(1)[:, None, :], axis=2).sum(0)
    np.testing.assert_allclose(kept.align(("x",)).data, expected)
    with pytest.raises(ValueError, match="structure it was planned for"):
        p([factors[1], factors[0], factors[2]])
    with pytest.raises(ValueError, match=r"plates \['k'\] are inputs of no factor"):
        fc.plan(factors, ALL, plates={"k"})
