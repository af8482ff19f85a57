"""Compressed cluster messages (Singh 2014, 8.2): samples, merged and FRAK against numpy
oracles (a stable argsort for the k best, the rest's mass by hand), on numpy and torch and one
``jax.jit`` case; the ``CompressedMessages`` rule equals the array functions."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_compress import (
    INDEX_BYTES,
    KL_FLOOR,
    _draw_flat,
    project_frak,
    project_merged,
    project_samples,
    table_errors,
)
from interpretations import CompressedMessages
from tests.backend_values import as_backend_array, to_numpy

BACKENDS = ["numpy", "torch"]


def _table(seed=0, shape=(3, 2, 2)):
    t = np.random.default_rng(seed).normal(size=shape)
    t.reshape(-1)[[4, 7]] = t.reshape(-1)[1]  # ties: the lowest flat index ranks first
    t.reshape(-1)[9] = -np.inf  # a configuration with no mass
    return t


def _merged_oracle(t, kept):
    """Kept entries as they are, the rest's mass ``Z - sum kept`` (summed over the rest, so
    that no cancellation leaves a spurious mass) spread uniformly."""
    flat = t.reshape(-1)
    rest = np.ones(flat.size, bool)
    rest[kept] = False
    with np.errstate(divide="ignore"):
        out = np.full(flat.shape, np.log(np.exp(flat[rest]).sum() / rest.sum()))
    out[kept] = flat[kept]
    return out.reshape(t.shape)


def _bytes(t, count, merged):
    return count * (8 + INDEX_BYTES * t.ndim) + (8 if merged else 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_merged_is_the_k_best_plus_the_rest_spread_uniformly_and_keeps_z(backend):
    t = _table()
    x = as_backend_array(t, backend)
    for k in (1, 5, t.size - 1):
        p = project_merged(x, k=k)
        kept = np.argsort(-t.reshape(-1), kind="stable")[:k]
        got = to_numpy(p.log_table)
        np.testing.assert_allclose(got, _merged_oracle(t, kept), rtol=1e-12)
        np.testing.assert_allclose(np.logaddexp.reduce(got.reshape(-1)),
                                   np.logaddexp.reduce(t.reshape(-1)), rtol=1e-13)
        assert p.nbytes == _bytes(t, k, merged=True) and p.state is None
    full = project_merged(x, k=t.size)
    np.testing.assert_array_equal(to_numpy(full.log_table), t)


@pytest.mark.parametrize("backend", BACKENDS)
def test_samples_keep_drawn_configurations_at_their_own_values(backend):
    t = _table(1)
    x = as_backend_array(t, backend)
    p = project_samples(x, k=40, rng_key=3)
    got = to_numpy(p.log_table)
    support = np.isfinite(got)
    np.testing.assert_array_equal(got[support], t[support])  # scored by their own value
    assert not support.reshape(-1)[9]  # never a configuration of no mass
    assert support.sum() >= 2 and p.nbytes == _bytes(t, int(support.sum()), merged=False)
    np.testing.assert_array_equal(to_numpy(project_samples(x, k=40, rng_key=3).log_table), got)


def test_draws_follow_the_normalized_table():
    t = _table(2)
    draws = _draw_flat(t.reshape(-1), 20000, 0)
    freq = np.bincount(draws, minlength=t.size) / draws.size
    p = np.exp(t.reshape(-1) - np.logaddexp.reduce(t.reshape(-1)))
    assert 0.5 * np.abs(freq - p).sum() < 0.02 and freq[9] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_frak_list_grows_by_the_map_and_stops_when_it_holds_it(backend):
    t1 = _table(3)
    t2 = t1.copy()
    t2.reshape(-1)[5] = t1.max() + 1.0  # a new MAP
    a = project_frak(as_backend_array(t1, backend))
    assert a.state == (int(np.argmax(t1)),)
    b = project_frak(as_backend_array(t2, backend), state=a.state)
    assert b.state == a.state + (5,)
    c = project_frak(as_backend_array(t2, backend), state=b.state)
    assert c.state == b.state and c.nbytes == _bytes(t2, 2, merged=True)
    np.testing.assert_allclose(to_numpy(c.log_table), _merged_oracle(t2, list(c.state)),
                               rtol=1e-12)
    # with k: up to k absent best ones per call; k = N keeps everything, the table itself
    d = project_frak(as_backend_array(t2, backend), k=3, state=a.state)
    assert d.state == a.state + tuple(i for i in np.argsort(-t2.reshape(-1), kind="stable")[:3]
                                      if i not in a.state)
    full = project_frak(as_backend_array(t2, backend), k=t2.size)
    np.testing.assert_array_equal(to_numpy(full.log_table), t2)


def test_bad_k_and_state_raise_naming_them():
    t = _table()
    with pytest.raises(ValueError, match=r"project_merged: k .* got k=13"):
        project_merged(t, k=13)
    with pytest.raises(ValueError, match="project_frak: state"):
        project_frak(t, state=(99,))
    with pytest.raises(ValueError, match="project_samples: k is the number of draws"):
        project_samples(t, k=0)
    with pytest.raises(ValueError, match=r"state is a pair \(mask of shape \(3, 4\), int"):
        project_frak(t.reshape(3, 4), batch_dims=1, state=(np.zeros((3, 3), bool), 0))
    with pytest.raises(ValueError, match="one key per batch element: got 2 keys for 3"):
        project_samples(t.reshape(3, 4), k=2, rng_key=(1, 2), batch_dims=1)


def test_merged_and_frak_under_jit():
    # (samples' threefry draws take 2 s to compile on CPU: left to eager torch and numpy)
    # FRAK traced keeps its list as a mask: two calls, the second growing the first's list.
    jax = pytest.importorskip("jax")
    t = _table()
    t2 = t.copy()
    t2.reshape(-1)[5] = t.max() + 1.0  # a new MAP
    fc.set_backend("jax")
    try:
        x, x2 = as_backend_array(t, "jax"), as_backend_array(t2, "jax")

        traced_bytes = []

        def fn(x, x2):
            first = project_frak(x, k=2)
            second = project_frak(x2, k=2, state=first.state)
            traced_bytes.append(second.nbytes)  # an int at trace time: the bound, 2 + 2
            return project_merged(x, k=4).log_table, second.log_table

        merged, frak = jax.jit(fn)(x, x2)
    finally:
        fc.set_backend("numpy")
    kept = np.argsort(-t.reshape(-1), kind="stable")[:4]
    np.testing.assert_allclose(to_numpy(merged), _merged_oracle(t, kept), rtol=1e-12)
    eager = project_frak(t2, k=2, state=project_frak(t, k=2).state)
    np.testing.assert_allclose(to_numpy(frak), _merged_oracle(t2, list(eager.state)),
                               rtol=1e-12)
    assert traced_bytes == [_bytes(t2, 4, merged=True)]


def test_table_errors_closed_forms():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.5, 0.25])
    with np.errstate(divide="ignore"):
        e = table_errors(np.log(p), np.log(q))
    fp = np.maximum(p, KL_FLOOR) / np.maximum(p, KL_FLOOR).sum()
    assert e["tv"] == pytest.approx(0.25) and e["l2"] == pytest.approx(np.sqrt(2 * 0.25 ** 2))
    assert e["hellinger"] == pytest.approx(
        np.sqrt(0.5 * ((np.sqrt(0.5) - 0.5) ** 2 + 0.25)))
    assert e["sym_kl"] == pytest.approx(np.sum(fp * np.log(fp / q)) + np.sum(q * np.log(q / fp)))


def test_compressed_messages_rule_equals_the_array_functions():
    t = _table(4)
    m = fc.Tensor(t, {"a": fc.Bint[3], "b": fc.Bint[2], "c": fc.Bint[2]})
    names = frozenset({"a", "b", "c"})
    with CompressedMessages("merged", k=3):
        q = fc.Approximate(ops.logaddexp, m, m, names)
    np.testing.assert_array_equal(q.data, project_merged(t, k=3).log_table)
    with CompressedMessages("samples", k=10, rng_key=2):
        s = fc.Approximate(ops.logaddexp, m, m, names)
    assert dict(s.inputs) == dict(m.inputs)  # the first message of seed 2 is seed 2's draws
    np.testing.assert_array_equal(s.data, project_samples(t, k=10, rng_key=2).log_table)
    t2 = t.copy()
    t2[2, 1, 0] = t.max() + 1.0
    frak = CompressedMessages("frak")
    with frak:
        fc.Approximate(ops.logaddexp, m, m, names)
        m2 = fc.Tensor(t2, dict(m.inputs))
        r = fc.Approximate(ops.logaddexp, m2, m2, names)
    assert frak.result.state == (int(np.argmax(t)), int(np.argmax(t2)))
    np.testing.assert_array_equal(r.data, project_frak(t2, state=frak.result.state).log_table)
    other = fc.Tensor(np.zeros((3, 2, 2)), dict(m.inputs))
    with CompressedMessages("merged", k=3):  # the model is not the guide: declined
        assert fc.Approximate(ops.logaddexp, other, m, names) is other
