"""Single-value sparsity (Singh 2014 ch. 7.1): a threshold above 1 is LoopyBP exactly; on a
chain the marginals are the exact conditionals given the fixed values (numpy enumeration);
fixing is revocable."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.loopy import loopy_bp
from interpretations import LoopyBP
from tests.algorithms.loopy.models import _model, grid_model, joint
from tests.backend_values import as_backend_array


def _chain(rng, n=6, d=3):
    """A chain over n variables of d states; strong unary evidence on every other one."""
    sizes = {f"x{i}": d for i in range(n)}
    scopes = [(f"x{i}",) for i in range(n)] + [(f"x{i}", f"x{i + 1}") for i in range(n - 1)]
    factors, tables, sizes = _model(rng, sizes, scopes, False)
    for i in range(0, n, 2):  # peak x0, x2, ...: their marginals pass a threshold of 0.9
        scope, t = tables[i]
        t = t.copy()
        t[rng.integers(d)] += 6.0
        tables[i] = (scope, t)
        factors[i] = fc.Tensor(t, dict(factors[i].inputs))
    return factors, tables, sizes


def _conditionals(tables, sizes, fixed):
    """Each variable's exact marginal given the ``fixed`` values, by enumeration."""
    j = joint(tables, sizes)
    names = list(sizes)
    index = tuple(fixed.get(v, slice(None)) for v in names)
    free = [v for v in names if v not in fixed]
    cond = j[index]
    p = np.exp(cond - np.logaddexp.reduce(cond.reshape(-1)))
    return {v: p.sum(axis=tuple(a for a in range(len(free)) if a != k))
            for k, v in enumerate(free)}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_chain_marginals_are_the_exact_conditionals_given_the_fixed_values(backend):
    pytest.importorskip(backend)
    _, tables, sizes = _chain(np.random.default_rng(0))
    fc.set_backend(backend)
    try:
        fs = [fc.Tensor(as_backend_array(t, backend), {v: fc.Bint[sizes[v]] for v in s})
              for s, t in tables]
        r = loopy_bp(fs, sparsity_threshold=0.9, tol=1e-12)
    finally:
        fc.set_backend("numpy")
    assert r.converged and set(r.fixed) == {"x0", "x2", "x4"}
    expected = _conditionals(tables, sizes, r.fixed)
    for v in sizes:
        got = np.exp(np.asarray(r.beliefs[v].data, dtype=float))
        if v in r.fixed:  # a point mass at the fixed value, its actual marginal confident
            np.testing.assert_allclose(got, np.eye(sizes[v])[r.fixed[v]], atol=1e-12)
            assert np.exp(np.asarray(r.actual_marginals[v].data))[r.fixed[v]] >= 0.9
        else:
            np.testing.assert_allclose(got, expected[v], atol=1e-10)


def test_threshold_above_one_is_loopy_bp_and_fixing_is_revocable():
    factors, tables, sizes = grid_model(np.random.default_rng(1), n=3, coupling=0.6)
    plain, sparse = loopy_bp(factors, tol=1e-10), loopy_bp(factors, tol=1e-10,
                                                            sparsity_threshold=1.01)
    assert sparse.fixed == {} and sparse.num_iters == plain.num_iters
    assert float(sparse.log_z.data) == float(plain.log_z.data)
    for v in sizes:
        assert (sparse.beliefs[v].data == plain.beliefs[v].data).all()
    # a's own factor makes it confident at 0 after one sweep; d's evidence, arriving along
    # strong couplings a sweep per link, then leaves a at about 1/2: the decision is revoked.
    b2, pair = fc.Bint[2], np.log(np.array([[0.99, 0.01], [0.01, 0.99]]))
    fs = [fc.Tensor(np.log(np.array([0.97, 0.03])), {"a": b2}),
          fc.Tensor(np.log(np.array([1e-4, 1.0])), {"d": b2})]
    fs += [fc.Tensor(pair, {u: b2, v: b2}) for u, v in ("ab", "bc", "cd")]
    assert loopy_bp(fs, sparsity_threshold=0.95, max_iters=1).fixed["a"] == 0
    r = loopy_bp(fs, sparsity_threshold=0.95)
    assert r.converged and r.fixed == {"d": 1}
    tables = [(tuple(f.inputs), f.data) for f in fs]
    expected = _conditionals(tables, {v: 2 for v in "abcd"}, r.fixed)
    for v in "abc":
        np.testing.assert_allclose(np.exp(r.beliefs[v].data), expected[v], atol=1e-10)
    with LoopyBP(sparsity_threshold=0.95):  # the interpretation form: the same Bethe log Z
        lazy_z = sum(fs[1:], fs[0]).reduce(ops.logaddexp)
    assert abs(float(lazy_z.data) - float(r.log_z.data)) < 1e-12
    with pytest.raises(ValueError, match="either domains= .* or sparsity_threshold="):
        loopy_bp(fs, sparsity_threshold=0.9, domains={"a": [0]})
    with pytest.raises(ValueError, match="sparsity_threshold must be a probability"):
        loopy_bp(fs, sparsity_threshold=0.0)


def test_under_jit_a_threshold_above_one_is_loopy_bp_and_others_raise():
    jax = pytest.importorskip("jax")
    factors, tables, sizes = grid_model(np.random.default_rng(2), n=2)
    expected = float(loopy_bp(factors, tol=1e-12).log_z.data)
    fc.set_backend("jax")
    try:
        def log_z(threshold, *arrays):
            fs = [fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, factors)]
            return loopy_bp(fs, tol=1e-12, max_iters=50,
                            sparsity_threshold=threshold).log_z.data
        arrays = [as_backend_array(t, "jax") for _, t in tables]
        got = jax.jit(lambda *a: log_z(1.5, *a))(*arrays)
        with pytest.raises(NotImplementedError, match="traced"):
            jax.jit(lambda *a: log_z(0.9, *a))(*arrays)
    finally:
        fc.set_backend("numpy")
    assert abs(float(got) - expected) < 1e-10
