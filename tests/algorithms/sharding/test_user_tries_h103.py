"""A new user's tries of sharding (h103):

- ``sharded(mesh, time={"data": "x"})`` around a plated reduction over ``data`` (a plate
  passed as a time), or ``sharded(mesh, plates={"t": "x"})`` around a Markov product over
  ``t`` (a time passed as a plate), ran on one device with no word: the misspelling check
  saw the name reduced and was satisfied. The right value came back but nothing was split;
  leaving the block now raises a ``ValueError`` naming the name and the argument it belongs
  in, eagerly and under ``jax.jit``.

Oracles: numpy brute force (logsumexp of the same tables) for the values that do run.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sharding import sharded
from funsor_core.sum_product import sum_product

jax = pytest.importorskip("jax")
jnp = jax.numpy

N, K, T = 5, 3, 6
RNG = np.random.default_rng(0)
TABLE, PRIOR = RNG.normal(size=(N, K)), RNG.normal(size=K)
TRANS, OBS = RNG.normal(size=(K, K)), RNG.normal(size=(T, K))


def _mesh():
    return jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))


def _mixture(**where):
    with sharded(_mesh(), **where):
        lik = fc.Tensor(jnp.asarray(TABLE), {"data": fc.Bint[N], "z": fc.Bint[K]})
        prior = fc.Tensor(jnp.asarray(PRIOR), {"z": fc.Bint[K]})
        return sum_product(ops.logaddexp, ops.add, [lik, prior], frozenset({"data", "z"}),
                           frozenset({"data"})).data


def _chain(**where):
    with sharded(_mesh(), **where):
        step = fc.Tensor(jnp.asarray(TRANS[None] + OBS[:, None, :]),
                         {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
        chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[T]),
                                 {"x": "y"})
        return chain.reduce(ops.logaddexp, frozenset({"x", "y"})).data


def _logsumexp(x, axis=None):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis=axis) + np.log(np.exp(x - m).sum(axis=axis))


@pytest.mark.parametrize("jit", [False, True])
def test_a_plate_passed_as_a_time_and_a_time_as_a_plate_are_named(jit):
    run = (lambda f, **w: jax.jit(lambda: f(**w))()) if jit else (lambda f, **w: f(**w))
    # z is global (the prior has no plate): log sum_z exp(prior_z + sum_n table_nz)
    mixture = _logsumexp(PRIOR + TABLE.sum(0))
    alpha = _logsumexp(TRANS + OBS[0][None], axis=0)
    for t in range(1, T):
        alpha = _logsumexp(alpha[:, None] + TRANS + OBS[t][None], axis=0)
    assert float(run(_mixture, plates={"data": "x"})) == pytest.approx(mixture, rel=1e-5)
    assert float(run(_chain, time={"t": "x"})) == pytest.approx(_logsumexp(alpha), rel=1e-5)
    with pytest.raises(ValueError, match=r"time 'data' is reduced as a plate .* pass it as "
                                         r"plates=\{'data': 'x'\}"):
        run(_mixture, time={"data": "x"})
    with pytest.raises(ValueError, match=r"plate 't' is the time of a Markov product .* pass "
                                         r"it as time=\{'t': 'x'\}"):
        run(_chain, plates={"t": "x"})
