"""Cluster BP under ``batch=`` with samples, FRAK (per-element kept sets) and callable
compressions against a loop over the batch and enumeration of each element's joint; the errors a
user meets (numpy oracles)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.loopy.cluster_bp import cluster_bp
from funsor_core.algorithms.loopy.cluster_compress import (
    INDEX_BYTES,
    project_frak,
    project_samples,
)
from funsor_core.loopy import loopy_bp
from tests.algorithms.loopy.models import brute_force, tree_model
from tests.algorithms.loopy.test_cluster_bp_options import RING, _grid, _per_element
from tests.backend_values import as_backend_array, to_numpy

TREE_CLUSTERS = [("a",), ("b", "c"), ("d",), ("e",)]


def _batched_and_loop(factors, seeds, **kw):
    r = cluster_bp(factors, RING, batch=("n",), rng_key=seeds, **kw)
    ones = [cluster_bp(_per_element(factors, i), RING,
                       rng_key=seeds if isinstance(seeds, int) else seeds[i], **kw)
            for i in range(3)]
    return r, ones


@pytest.mark.parametrize("compression, seeds, schedule, temperature", [
    (("samples", 3), 5, "flooding", 1.0),  # one seed: every element draws as it does alone
    (("samples", 2), (4, 9, 11), "sequential", 0.5),  # a seed per element
    (("frak", 1), 0, "flooding", 1.0),  # kept sets grow per element, to different sizes
    (("frak", 2), 0, "sequential", 0.0)])
def test_batched_samples_and_frak_equal_a_loop_over_the_batch(compression, seeds, schedule,
                                                              temperature):
    factors, _, _ = _grid(np.random.default_rng(7), scale=0.8, batch=3)
    kw = dict(compression=compression, schedule=schedule, temperature=temperature, tol=0.0,
              max_iters=3)
    r, ones = _batched_and_loop(factors, seeds, **kw)
    for i, one in enumerate(ones):
        for v, b in one.beliefs.items():
            np.testing.assert_allclose(r.beliefs[v](n=i).data, b.data, atol=1e-12, err_msg=v)
        for c, b in enumerate(one.cluster_beliefs):
            np.testing.assert_allclose(r.cluster_beliefs[c](n=i).data, b.data, atol=1e-12)
        assert abs(float(r.log_z.data[i]) - float(one.log_z.data)) < 1e-12
    # Bytes: each element's own kept configurations (FRAK's lists differ in length).
    assert r.counts.network_bytes == sum(one.counts.network_bytes for one in ones)


def test_batched_samples_on_torch_equal_a_loop():
    # The backend's own generator (numbers differ across backends; the derivation does not).
    factors, _, _ = _grid(np.random.default_rng(8), scale=0.8, batch=3)
    fc.set_backend("torch")
    try:
        fs = [fc.Tensor(as_backend_array(np.asarray(f.data), "torch"), f.inputs)
              for f in factors]
        r, ones = _batched_and_loop(fs, (1, 2, 3), compression=("samples", 2), tol=0.0,
                                    max_iters=2)
        for i, one in enumerate(ones):
            np.testing.assert_allclose(to_numpy(r.beliefs["x00"](n=i).data),
                                       to_numpy(one.beliefs["x00"].data), atol=1e-12)
    finally:
        fc.set_backend("numpy")


def _user_samples(log_table, *, k, rng_key, state):
    # A user's callable: the signature of the docs, no batch_dims (it projects one table).
    return project_samples(log_table, k=k, rng_key=rng_key)


def _user_frak(log_table, *, k, rng_key, state):  # stateful: its kept list per message
    return project_frak(log_table, k=k, state=state)


@pytest.mark.parametrize("compression, seeds, schedule, temperature", [
    ((_user_samples, 2), (4, 9, 11, 2, 7, 5), "flooding", 1.0),  # a seed per element
    ((_user_samples, 3), 5, "sequential", 0.5),  # one seed: each element as alone
    ((_user_frak, 1), 0, "flooding", 1.0),  # kept lists grow per element
    ((_user_frak, 2), 0, "random", 0.0)])
def test_batched_callable_equals_a_loop_over_the_batch(compression, seeds, schedule,
                                                       temperature):
    # Two batch inputs (n: the unaries, m: a coupling), so per-element seeds run in C order.
    factors, _, _ = _grid(np.random.default_rng(12), scale=0.8, batch=3)
    coupling = np.random.default_rng(13).normal(size=(2, 2, 2))
    factors.append(fc.Tensor(coupling, {"m": fc.Bint[2], "x00": fc.Bint[2],
                                        "x11": fc.Bint[2]}))
    kw = dict(compression=compression, schedule=schedule, temperature=temperature, tol=0.0,
              max_iters=3)
    r = cluster_bp(factors, RING, batch=("n", "m"), rng_key=seeds, **kw)
    bytes_alone = 0
    for flat, (i, j) in enumerate(np.ndindex(3, 2)):
        fs = [f(**{b: x for b, x in (("n", i), ("m", j)) if b in f.inputs}) for f in factors]
        one = cluster_bp(fs, RING, rng_key=seeds if isinstance(seeds, int) else seeds[flat],
                         **kw)
        bytes_alone += one.counts.network_bytes
        for v, b in one.beliefs.items():
            np.testing.assert_allclose(r.beliefs[v](n=i, m=j).data, b.data, atol=1e-12,
                                       err_msg=v)
        assert abs(float(r.log_z(n=i, m=j).data) - float(one.log_z.data)) < 1e-12
    assert r.counts.network_bytes == bytes_alone


def test_k_at_the_message_size_is_exact_on_a_tree_per_element():
    # FRAK with k = 12 keeps all of a whole-cluster message over (b, c) in its first call.
    # Samples draw with replacement, so k = N draws need not draw all N: 50 draws of the
    # boundary messages (<= 3 configurations) draw them all here, which their bytes (those
    # of k-best keeping everything) confirm. Both are then full: exact on a tree-shaped
    # cluster graph, for each of two batched models.
    factors, tables, sizes = tree_model(np.random.default_rng(9))
    unary = np.random.default_rng(10).normal(size=(2, 2))
    batched = factors + [fc.Tensor(unary, {"n": fc.Bint[2], "a": fc.Bint[2]})]
    exact = [brute_force(tables + [(("a",), u)], sizes)[1] for u in unary]
    runs = [cluster_bp(batched, TREE_CLUSTERS, ("frak", 12), batch=("n",), scope="cluster",
                       tol=1e-13),
            cluster_bp(batched, TREE_CLUSTERS, ("samples", 50), batch=("n",), tol=1e-13,
                       rng_key=3)]
    for r in runs:
        assert r.converged
        for i, marg in enumerate(exact):
            for v, m in marg.items():
                np.testing.assert_allclose(r.beliefs[v](n=i).data, m, atol=1e-10, err_msg=v)
    # Boundary messages a, b to (a, b) (sent to 1 cluster) and b, d, e to (b, d, e) (to 2),
    # all kept, of 2 elements: a value and an index each.
    whole = 2 * (8 + INDEX_BYTES) * sum(sizes[v] * n for v, n in zip("abbde", (1, 1, 2, 2, 2)))
    assert runs[1].counts.network_bytes == runs[1].num_iters * whole


def test_a_user_s_mistakes_get_errors_naming_them():
    factors, _, _ = tree_model(np.random.default_rng(11))
    for k in (0, 2.5, True):
        with pytest.raises(ValueError, match=rf"compression \('merged', {k}\): k is the "
                           "number of configurations kept per message, an int >= 1"):
            loopy_bp(factors, clusters=TREE_CLUSTERS, compression=("merged", k))
    with pytest.raises(ValueError, match=r"'full' takes no k .*e.g. \('kbest', 3\)"):
        loopy_bp(factors, clusters=TREE_CLUSTERS, compression=("full", 3))
    with pytest.raises(TypeError, match="rng_key is an int seed; got 1.5"):
        cluster_bp(factors, TREE_CLUSTERS, ("samples", 2), rng_key=1.5)
    # k above a message's configurations keeps it whole (as kbest always did): full.
    full = cluster_bp(factors, TREE_CLUSTERS, "full", tol=1e-12)
    for name in ("kbest", "merged", "frak"):
        big = cluster_bp(factors, TREE_CLUSTERS, (name, 1000), tol=1e-12)
        np.testing.assert_allclose(big.beliefs["c"].data, full.beliefs["c"].data, atol=1e-12)
    batched = factors + [fc.Tensor(np.zeros((2, 2)), {"n": fc.Bint[2], "a": fc.Bint[2]})]
    with pytest.raises(TypeError, match=r"one int seed per batch element \(2 for batch shape "
                       r"\(2,\), in C order\); got \(1, 2, 3\)"):
        cluster_bp(batched, TREE_CLUSTERS, ("samples", 2), batch=("n",), rng_key=(1, 2, 3))
    with pytest.raises(ValueError, match="schedule='random' draws one update order shared"):
        cluster_bp(batched, TREE_CLUSTERS, ("samples", 2), schedule="random", batch=("n",),
                   rng_key=(1, 2))
    with pytest.raises(TypeError, match="one int seed per batch element"):
        cluster_bp(batched, TREE_CLUSTERS, ("samples", 2), ops.max, batch=("n",),
                   rng_key=[1.0, 2.0])
