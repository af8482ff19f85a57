"""funsor's ``sarkka_bilmes_product`` (NumPyro's enumerated scans with ``history > 1``) under
``jax.jit`` with its derivative: the time shifts are strided slices of the factor (the index
aranges are concrete at trace time, so substitution reads them as progressions), not gathers
over full index arrays whose derivative is a scatter-add; and where every block state is read
by the next block the last block is a step of the chain, not a K^3 broadcast afterwards.

Oracle: brute-force enumeration of every path in numpy float64: log Z summed over the initial
and final states, and its derivative, the marginal probability of each factor entry.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Bint
from funsor_core.sum_product import sarkka_bilmes_product

jax = pytest.importorskip("jax")
jnp = jax.numpy

K, B = 2, 3
NAMES = ("time", "_PREV__PREV_x", "_PREV_x", "x", "b")


def _brute(logf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # logf[t, x_{t-2}, x_{t-1}, x_t, b]; paths x_{-2} .. x_{T-1} for each batch entry b.
    duration = logf.shape[0]
    log_z = np.zeros(B)
    grad = np.zeros_like(logf)
    for b in range(B):
        logs, hits = [], []
        for path in itertools.product(range(K), repeat=duration + 2):
            idx = [(t, path[t], path[t + 1], path[t + 2], b) for t in range(duration)]
            logs.append(sum(logf[i] for i in idx))
            hits.append(idx)
        logs = np.array(logs)
        top = logs.max()
        p = np.exp(logs - top)
        log_z[b] = top + np.log(p.sum())
        for w, idx in zip(p / p.sum(), hits):
            for i in idx:
                grad[i] += w
    return log_z, grad


def _total(data, duration):
    f = Tensor(data, dict(zip(NAMES, (Bint[duration], Bint[K], Bint[K], Bint[K], Bint[B]))))
    r = sarkka_bilmes_product(ops.logaddexp, ops.add, f, "time", frozenset({"b"}))
    return r.reduce(ops.logaddexp, frozenset(r.inputs) - {"b"}).data.sum()


@pytest.mark.parametrize("duration", [8, 7])  # whole blocks of 2; a head step folded in
def test_jitted_lagged_scan_value_and_gradient(duration):
    rng = np.random.default_rng(duration)
    logf = rng.normal(size=(duration, K, K, K, B))
    want_z, want_grad = _brute(logf)
    f = jax.jit(jax.value_and_grad(lambda d: _total(d, duration)))
    value, grad = f(jnp.asarray(logf))
    rtol = 1e-9 if value.dtype == np.float64 else 1e-4  # the suite runs jax with x64
    np.testing.assert_allclose(float(value), want_z.sum(), rtol=rtol)
    np.testing.assert_allclose(np.asarray(grad), want_grad, rtol=rtol, atol=rtol)
    prims = _primitives(jax.make_jaxpr(jax.value_and_grad(lambda d: _total(d, duration)))(
        jnp.asarray(logf)).jaxpr)
    assert not prims & {"gather", "scatter-add", "scatter_add"}, sorted(prims)


def _primitives(jaxpr) -> set:
    from jax.extend import core

    found = set()
    for eqn in jaxpr.eqns:
        found.add(eqn.primitive.name)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, core.ClosedJaxpr):
                    found |= _primitives(sub.jaxpr)
                elif isinstance(sub, core.Jaxpr):
                    found |= _primitives(sub)
    return found


def test_new_arange_is_concrete_inside_jit():
    # An index built while jit traces is readable on the host: substitution range-checks it
    # (DomainError at the call, as eagerly) instead of masking out-of-range entries with NaN.
    t = Tensor(jnp.arange(4.0), {"i": Bint[4]})

    def shifted(x):
        u = Tensor(x, {"i": Bint[4]})
        idx = Tensor(ops.new_arange(x, 1, 5, 1), {"j": Bint[4]}, 4)
        return u(i=idx).data

    from funsor_core.terms.inputs import DomainError

    with pytest.raises(DomainError, match=r"'i' of Bint\[4\].*\[1, 4\]"):
        jax.jit(shifted)(t.data)
    idx = Tensor(ops.new_arange(t.data, 0, 4, 2), {"j": Bint[2]}, 4)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: Tensor(x, {"i": Bint[4]})(
        i=idx).data)(t.data)), np.arange(4.0)[::2])
