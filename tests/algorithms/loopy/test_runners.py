"""Eager jax runs one program compiled per structure: a second call with new factor values
reuses it (no new cache entry) and gives what the uncached computation gives."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.engine.cache import cache_info
from funsor_core.loopy import loopy_bp, mh

SCOPES = [("a", "b"), ("b", "c"), ("a", "c"), ("c",)]
LOG_Q = np.log(np.array([[0.3, 0.7], [0.9, 0.1]]))  # MH with a user's proposal


def _cycle(rng, to_array):
    tables = [(s, rng.normal(size=(2,) * len(s))) for s in SCOPES]
    return [fc.Tensor(to_array(t), {v: fc.Bint[2] for v in s}) for s, t in tables], tables


def _compiled_count():
    return cache_info()["loopy.compiled_runners"].size


def test_eager_jax_reuses_one_compiled_program_per_structure():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(0)
    fc.set_backend("jax")
    try:
        factors, _ = _cycle(rng, jax.numpy.asarray)
        mh(factors, 20, num_chains=3, rng_key=1, proposal=LOG_Q)
        first = loopy_bp(factors)
        assert first.beliefs and first.log_z is not None
        before = _compiled_count()
        factors, tables = _cycle(rng, jax.numpy.asarray)  # new values, same structure
        got = mh(factors, 20, num_chains=3, rng_key=1, proposal=LOG_Q)["b"].data
        r = loopy_bp(factors, tol=1e-12)
        beliefs = {v: np.asarray(r.beliefs[v].data) for v in "abc"}
        log_z = float(r.log_z.data)
        assert _compiled_count() == before

        # Oracle: the uncached path, traced inside the user's jit, with the same seed.
        def traced(*arrays):
            fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, factors)]
            return mh(fs, 20, num_chains=3, rng_key=1, proposal=LOG_Q)["b"].data
        expected = jax.jit(traced)(*[f.data for f in factors])
        assert (np.asarray(expected) == np.asarray(got)).all()
    finally:
        fc.set_backend("numpy")
    # Oracle for BP: numpy's (never compiled) run of the same model.
    reference = loopy_bp([fc.Tensor(t, {v: fc.Bint[2] for v in s}) for s, t in tables],
                         tol=1e-12)
    assert abs(log_z - float(reference.log_z.data)) < 1e-10
    for v in "abc":
        np.testing.assert_allclose(beliefs[v], reference.beliefs[v].data, atol=1e-10)
