"""``apply_optimizer`` of a lazy plated sum-product of Tensors through its schedule's array
program (``funsor_core.algorithms.eliminate.term_program``), against brute force over every
assignment of the unrolled variables; structures it does not cover fall back to the passes."""

from __future__ import annotations

import gc
import itertools
import weakref

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.eliminate.term_program import (
    _compile,
    run_term_program,
    term_program,
)
from funsor_core.sum_product import sum_product
from interpretations import lazy
from interpretations.optimize import apply_optimizer
from tests.backend_values import as_backend_array, to_numpy

SIZES = {"z": 2, "x": 2, "y": 3, "i": 2, "j": 3, "k": 2}
NESTED = (("z", "izx", "ijx"), "ij")  # z global, x in plate i, observations in i x j
# x in plate i and y in plate k side by side, z shared by both plates, and a factor in both
# plates that uses x alone.
SIDE_BY_SIDE = (("z", "izx", "kzy", "ikx"), "ik")
TREE = (("zx", "xy", "x", "yk"), "")  # no plates: one flat Contraction of Tensors
SEMIRINGS = {"logaddexp": (ops.logaddexp, lambda v: logsumexp(v)), "max": (ops.max, np.max)}


def random_arrays(names, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=tuple(SIZES[c] for c in n)) for n in names]


def brute_force(names, plates, arrays, reduce_all):
    # Unroll: a variable is copied once per assignment of the plates of the factors that
    # use it (their intersection); the log joint adds each factor at each assignment of its
    # plates; reduce_all reduces the joint over every assignment of every copy.
    var_plates = {}
    for n in names:
        for c in n:
            if c not in plates:
                mine = {p for p in n if p in plates}
                var_plates[c] = var_plates.get(c, mine) & mine
    copies = [(v, idx) for v in sorted(var_plates)
              for idx in itertools.product(*(range(SIZES[p]) for p in sorted(var_plates[v])))]
    joint = []
    for values in itertools.product(*(range(SIZES[v]) for v, _ in copies)):
        value_of = dict(zip(copies, values))
        total = 0.0
        for n, a in zip(names, arrays):
            own = [p for p in n if p in plates]
            for at in itertools.product(*(range(SIZES[p]) for p in own)):
                where = dict(zip(own, at))
                index = tuple(where[c] if c in plates else value_of[
                    (c, tuple(where[p] for p in sorted(var_plates[c])))] for c in n)
                total += a[index]
        joint.append(total)
    return reduce_all(np.array(joint))


def lazy_sum_product(sum_op, names, plates, arrays):
    ts = [fc.Tensor(as_backend_array(a), {c: fc.Bint[SIZES[c]] for c in n})
          for n, a in zip(names, arrays)]
    eliminate = frozenset("".join(names))
    with lazy:
        return sum_product(sum_op, ops.add, ts, eliminate, frozenset(plates))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("model", [NESTED, SIDE_BY_SIDE, TREE],
                         ids=["nested", "side_by_side", "tree"])
@pytest.mark.parametrize("semiring", sorted(SEMIRINGS))
def test_program_path_agrees_with_brute_force(backend, model, semiring):
    if backend == "torch":
        pytest.importorskip("torch")
    sum_op, reduce_all = SEMIRINGS[semiring]
    names, plates = model
    arrays = random_arrays(names, seed=len(names) + len(semiring))
    fc.set_backend(backend)
    try:
        expr = lazy_sum_product(sum_op, names, plates, arrays)
        assert term_program(expr) is not None  # the new path, not the passes
        actual = apply_optimizer(expr)
    finally:
        fc.set_backend("numpy")
    assert isinstance(actual, fc.Tensor) and not actual.inputs
    expected = brute_force(names, plates, arrays, reduce_all)
    np.testing.assert_allclose(to_numpy(actual.data), expected, rtol=1e-10)


def test_cached_program_reused_with_new_values():
    names, plates = NESTED
    first = lazy_sum_product(ops.logaddexp, names, plates, random_arrays(names, 0))
    apply_optimizer(first)
    cached = len(_compile.cache)
    arrays = random_arrays(names, 1)
    second = lazy_sum_product(ops.logaddexp, names, plates, arrays)
    assert term_program(second)[0] is term_program(first)[0]  # one program per structure
    actual = apply_optimizer(second)
    assert len(_compile.cache) == cached
    expected = brute_force(names, plates, arrays, logsumexp)
    np.testing.assert_allclose(actual.data, expected, rtol=1e-10)


def test_unrecognized_structures_fall_back():
    # Two components (z alone; y in plate k) multiply as a Binary, which the program does
    # not cover; (max, mul) needs the factors' signs. Both take the passes, still exact.
    names, plates = ("z", "ky"), "k"
    arrays = random_arrays(names, 2)
    expr = lazy_sum_product(ops.logaddexp, names, plates, arrays)
    assert term_program(expr) is None
    expected = brute_force(names, plates, arrays, logsumexp)
    np.testing.assert_allclose(apply_optimizer(expr).data, expected, rtol=1e-10)

    names, plates = NESTED
    arrays = [np.exp(a) for a in random_arrays(names, 3)]
    ts = [fc.Tensor(a, {c: fc.Bint[SIZES[c]] for c in n}) for n, a in zip(names, arrays)]
    with lazy:
        expr = sum_product(ops.max, ops.mul, ts, frozenset("zxij"), frozenset(plates))
    assert term_program(expr) is None
    expected = np.exp(brute_force(names, plates, [np.log(a) for a in arrays], np.max))
    np.testing.assert_allclose(apply_optimizer(expr).data, expected, rtol=1e-10)


def test_guard_declines_where_terms_must_be_built():
    # Under lazy the optimized term is returned; under an adjoint tape the terms are built
    # and recorded, so that the adjoint pass finds them.
    from funsor_core.adjoint import AdjointTape

    names, plates = NESTED
    expr = lazy_sum_product(ops.logaddexp, names, plates, random_arrays(names, 4))
    with lazy:
        assert run_term_program(expr) is None
        planned = apply_optimizer(expr)
    assert not isinstance(planned, fc.Tensor)
    with AdjointTape():
        assert run_term_program(expr) is None


def test_kept_plate_is_a_batch_of_graphs():
    # A plate that is not eliminated indexes separate factor graphs (funsor's semantics): the
    # result at i is the brute force of the graph whose factors are sliced at i.
    names, plates = NESTED
    arrays = random_arrays(names, 5)
    ts = [fc.Tensor(a, {c: fc.Bint[SIZES[c]] for c in n}) for n, a in zip(names, arrays)]
    with lazy:
        expr = sum_product(ops.logaddexp, ops.add, ts, frozenset("zxj"), frozenset(plates))
    assert term_program(expr) is not None
    actual = apply_optimizer(expr)
    assert tuple(actual.inputs) == ("i",)
    sliced = [tuple(c for c in n if c != "i") for n in names]
    expected = [brute_force(sliced, "j", [a[i] if "i" in n else a for n, a in
                                          zip(names, arrays)], logsumexp)
                for i in range(SIZES["i"])]
    np.testing.assert_allclose(actual.data, expected, rtol=1e-10)


def test_deeper_than_the_walk_falls_back(monkeypatch):
    # A chain of nested Contractions deeper than the walk goes takes the passes, still exact:
    # log sum over x_0..x_n of a(x_0) + sum_k m_k(x_k, x_k+1), by matrix products in numpy.
    # (The depth limit is lowered so that the chain stays short.)
    from funsor_core.algorithms.eliminate import term_program as tp

    monkeypatch.setattr(tp, "_MAX_DEPTH", 3)
    rng = np.random.default_rng(6)
    n = 6
    a, ms = rng.normal(size=2), rng.normal(size=(n, 2, 2))
    names = [f"x{k}" for k in range(n + 1)]
    expr = fc.Tensor(a, {names[0]: fc.Bint[2]})
    with lazy:
        for k in range(n):
            m = fc.Tensor(ms[k], {names[k]: fc.Bint[2], names[k + 1]: fc.Bint[2]})
            expr = fc.Contraction(ops.logaddexp, ops.add, frozenset({names[k]}), (expr, m))
        expr = expr.reduce(ops.logaddexp, names[n])
    assert term_program(expr) is None
    v = np.exp(a)
    for m in np.exp(ms):
        v = v @ m
    np.testing.assert_allclose(apply_optimizer(expr).data, np.log(v.sum()), rtol=1e-10)


# The walk holds the leaves while it runs and no longer: with the cyclic collector off, the
# leaves' arrays die with the caller's last reference (a walk that was a self-calling closure
# kept them, and under an eager jax.grad their tracers' whole trace, until a collection). Both
# a walked structure and one the walk gives up on (a Binary of two components); the values
# against brute force.
@pytest.mark.parametrize("model", [NESTED, (("z", "ky"), "k")], ids=["walked", "given_up"])
def test_walk_keeps_no_leaf_alive(model):
    names, plates = model
    arrays = random_arrays(names, 7)
    expected = brute_force(names, plates, arrays, logsumexp)
    alive = [weakref.ref(a) for a in arrays]
    enabled = gc.isenabled()
    gc.disable()
    try:
        expr = lazy_sum_product(ops.logaddexp, names, plates, arrays)
        assert (term_program(expr) is None) == (model is not NESTED)
        actual = to_numpy(apply_optimizer(expr).data)
        del expr, arrays
        kept = [r() is not None for r in alive]
    finally:
        if enabled:
            gc.enable()
    np.testing.assert_allclose(actual, expected, rtol=1e-10)
    assert not any(kept)
