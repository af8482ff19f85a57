"""A lazy ``sum_product`` root that ``run_schedule`` built as planned carries its schedule's
program (``schedule.recorded_root``), which ``apply_optimizer`` runs without walking the
tree: against brute force over every assignment in every kernel semiring, bit for bit against
the walked program, a user rule registered after a cached call, rewritten steps, jax.jit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.eliminate import built_steps, term_program
from funsor_core.algorithms.eliminate.built_steps import recorded_root
from funsor_core.engine.interpreter import Tuple
from funsor_core.sum_product import sum_product
from funsor_core.terms.contraction import Contraction
from interpretations import exact, lazy
from interpretations.optimize import apply_optimizer
from tests.algorithms.eliminate.test_term_program import (
    NESTED,
    SIDE_BY_SIDE,
    SIZES,
    TREE,
    brute_force,
    random_arrays,
)
from tests.backend_values import as_backend_array, to_numpy

# (sum_op, prod_op) -> (the arrays' map from the log-space draws, the brute force's reduction
# of the log joint, the map of its answer back): every semiring with a kernel and a program.
SEMIRINGS = {
    "logaddexp,add": (ops.logaddexp, ops.add, lambda a: a, logsumexp, lambda v: v),
    "add,mul": (ops.add, ops.mul, np.exp, logsumexp, np.exp),
    "max,add": (ops.max, ops.add, lambda a: a, np.max, lambda v: v),
    "min,add": (ops.min, ops.add, lambda a: a, np.min, lambda v: v),
}


def lazy_root(sum_op, prod_op, names, plates, arrays):
    ts = [fc.Tensor(as_backend_array(a), {c: fc.Bint[SIZES[c]] for c in n})
          for n, a in zip(names, arrays)]
    with lazy:
        return sum_product(sum_op, prod_op, ts, frozenset("".join(names)), frozenset(plates))


@pytest.mark.parametrize("model", [NESTED, SIDE_BY_SIDE, TREE],
                         ids=["nested", "side_by_side", "tree"])
@pytest.mark.parametrize("semiring", sorted(SEMIRINGS))
def test_recorded_program_agrees_with_brute_force_and_the_walk(model, semiring, monkeypatch):
    sum_op, prod_op, to_space, reduce_all, from_log = SEMIRINGS[semiring]
    names, plates = model
    logs = random_arrays(names, seed=len(semiring) + len(names))
    expr = lazy_root(sum_op, prod_op, names, plates, [to_space(a) for a in logs])
    assert recorded_root(expr) is not None  # the recorded path, not the walk
    actual = apply_optimizer(expr)
    assert isinstance(actual, fc.Tensor) and not actual.inputs
    expected = from_log(brute_force(names, plates, logs, reduce_all))
    np.testing.assert_allclose(to_numpy(actual.data), expected, rtol=1e-10)
    # The walked program of the same tree (no record) makes the same kernel calls.
    monkeypatch.setattr(term_program, "recorded_root", lambda e: None)
    walked = apply_optimizer(expr)
    assert np.array_equal(to_numpy(walked.data), to_numpy(actual.data))


def test_torch_recorded_program_is_bit_for_bit_the_walked_one(monkeypatch):
    pytest.importorskip("torch")
    names, plates = NESTED
    logs = random_arrays(names, seed=7)
    fc.set_backend("torch")
    try:
        expr = lazy_root(ops.logaddexp, ops.add, names, plates, logs)
        assert recorded_root(expr) is not None
        actual = to_numpy(apply_optimizer(expr).data)
        monkeypatch.setattr(term_program, "recorded_root", lambda e: None)
        walked = to_numpy(apply_optimizer(expr).data)
    finally:
        fc.set_backend("numpy")
    assert np.array_equal(actual, walked)
    np.testing.assert_allclose(actual, brute_force(names, plates, logs, logsumexp), rtol=1e-10)


def test_user_rule_registered_after_a_cached_call_is_honoured(scratch_exact_rules):
    names, plates = NESTED
    logs = random_arrays(names, seed=8)
    expected = brute_force(names, plates, logs, logsumexp)
    first = lazy_root(ops.logaddexp, ops.add, names, plates, logs)
    np.testing.assert_allclose(apply_optimizer(first).data, expected, rtol=1e-10)
    fired = []

    @exact.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                    Tuple[fc.Tensor, fc.Tensor])
    def user_contraction_shifted_h39(red_op, bin_op, reduced_vars, terms):
        fired.append(reduced_vars)
        if reduced_vars != frozenset("z"):
            return None
        x = fc.Tensor(terms[0].data + terms[1].data, terms[0].inputs)
        return x.reduce(ops.logaddexp, reduced_vars) + 100.0  # the user's own answer

    second = lazy_root(ops.logaddexp, ops.add, names, plates, logs)
    assert recorded_root(second) is not None  # recorded; the program's guard decides
    actual = apply_optimizer(second)
    assert fired, "the user's rule was skipped"
    np.testing.assert_allclose(actual.data, expected + 100.0, rtol=1e-10)


@pytest.fixture
def scratch_lazy_rules():
    from conftest import _scratch_rules

    yield from _scratch_rules(lazy)


def test_a_step_rewritten_by_a_rule_is_not_recorded(scratch_lazy_rules):
    # A user's lazy rule that evaluates the plate reduction of the observations at once: the
    # built tree is not the schedule's, so it is not recorded; its walk computes it.
    names, plates = NESTED
    logs = random_arrays(names, seed=9)
    fired = []

    @lazy.register(fc.Reduce, type(ops.add), fc.Tensor, frozenset)
    def lazy_reduce_add_tensor_h39(op, arg, reduced_vars):
        fired.append(reduced_vars)
        with exact:
            return arg.reduce(op, reduced_vars)

    expr = lazy_root(ops.logaddexp, ops.add, names, plates, logs)
    assert fired and recorded_root(expr) is None
    actual = apply_optimizer(expr)
    np.testing.assert_allclose(actual.data, brute_force(names, plates, logs, logsumexp),
                               rtol=1e-10)


def test_record_leaves_with_its_root():
    names, plates = NESTED
    expr = lazy_root(ops.logaddexp, ops.add, names, plates, random_arrays(names, seed=10))
    key = id(expr)
    assert key in built_steps._ROOTS.data
    del expr  # (its last reference: the callback runs at once)
    entry = built_steps._ROOTS.data.get(key)
    assert entry is None or entry[0]() is None


def test_under_lazy_the_recorded_root_stays_lazy():
    names, plates = NESTED
    expr = lazy_root(ops.logaddexp, ops.add, names, plates, random_arrays(names, seed=11))
    with lazy:
        planned = apply_optimizer(expr)
    assert not isinstance(planned, fc.Tensor)


def test_jit_traces_the_same_program(monkeypatch):
    jax = pytest.importorskip("jax")
    names, plates = NESTED
    logs = [np.asarray(a) for a in random_arrays(names, seed=12)]
    domains = [{c: fc.Bint[SIZES[c]] for c in n} for n in names]

    def fn(*arrays):
        ts = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        with lazy:
            e = sum_product(ops.logaddexp, ops.add, ts, frozenset("zxij"), frozenset(plates))
        return apply_optimizer(e).data

    fc.set_backend("jax")
    try:
        arrays = [jax.numpy.asarray(a) for a in logs]
        recorded = str(jax.make_jaxpr(fn)(*arrays))
        monkeypatch.setattr(term_program, "recorded_root", lambda e: None)
        walked = str(jax.make_jaxpr(fn)(*arrays))
    finally:
        fc.set_backend("numpy")
    assert recorded == walked


def test_recipe_builds_the_terms_the_constructors_build():
    # The first lazy build of a schedule runs the constructors (and keeps the recipe); the
    # second, from the same factors, passes the recipe: cons-hashing gives the same objects
    # only for the same arguments, so every step's term is the one the constructors built.
    names, plates = NESTED
    ts = [fc.Tensor(a, {c: fc.Bint[SIZES[c]] for c in n})
          for n, a in zip(names, random_arrays(names, seed=13))]
    built_steps._RECIPES.clear()
    with lazy:
        first = sum_product(ops.logaddexp, ops.add, ts, frozenset("zxij"), frozenset(plates))
        assert built_steps._RECIPES.data  # kept
        second = sum_product(ops.logaddexp, ops.add, ts, frozenset("zxij"), frozenset(plates))
    assert second is first and recorded_root(second) is not None


def test_mixed_backends_raise_at_the_sum_product_call():
    # With a recipe kept for the structure, factors of two backends raise at the call the
    # user wrote (h47; before, the lazy build kept them and apply_optimizer raised), naming
    # both factors by their inputs and both backends.
    torch = pytest.importorskip("torch")
    names, plates = NESTED
    arrays = random_arrays(names, seed=14)
    lazy_root(ops.logaddexp, ops.add, names, plates, arrays)  # (the recipe is kept)
    ts = [fc.Tensor(a, {c: fc.Bint[SIZES[c]] for c in n}) for n, a in zip(names, arrays)]
    ts[1] = fc.Tensor(torch.tensor(arrays[1]), ts[1].inputs)
    with lazy, pytest.raises(TypeError, match=r"factor 0 \(inputs .*\) holds numpy arrays "
                                              r"and factor 1 \(inputs .*\) holds torch"):
        sum_product(ops.logaddexp, ops.add, ts, frozenset("zxij"), frozenset(plates))
