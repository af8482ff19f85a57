"""The array replay of recorded plated eliminations (``funsor_core.algorithms.contract.replay``):
its values against brute-force enumeration of every assignment, its results against the
terms' replay, and the cases where it must step aside (a user rule, the debug log, lazy)."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract import einsum as einsum_module
from funsor_core.algorithms.eliminate.plated import recorded_program
from funsor_core.engine.interpreter import Tuple, set_debug
from funsor_core.sum_product import partial_sum_product
from funsor_core.terms.base import Reduce
from funsor_core.terms.contraction import Contraction
from funsor_core.testing import assert_close
from interpretations import exact, lazy

# backend string -> (sum over a list of axes, product of two arrays), in numpy
SEMIRINGS = {
    "numpy": (lambda x, axes: np.sum(x, axis=axes), np.multiply),
    "log": (lambda x, axes: logsumexp(x, axis=axes), np.add),
    "max": (lambda x, axes: np.max(x, axis=axes), np.add),
    "min": (lambda x, axes: np.min(x, axis=axes), np.add),
}

# (equation, plates): a global variable and a plate-local one with nested observations; a
# kept global variable; two kept names in a permuted order; sibling plates.
EQUATIONS = [
    ("z,izx,ijx->", "ij"),
    ("x,ixy,ijy->x", "ij"),
    ("xw,ixy,ijy->wx", "ij"),
    ("z,iz,jz->", "ij"),
    ("a,ab,ibc,ic->a", "i"),
]
SIZES = {"i": 2, "j": 3, "z": 2, "x": 3, "y": 2, "w": 2, "a": 2, "b": 3, "c": 2}


def random_operands(eq: str, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    return [rng.normal(size=tuple(SIZES[c] for c in letters)) for letters in inputs]


def brute_force(eq: str, plates: str, operands: list, backend: str):
    """The plated einsum by enumerating every copy of every variable: a variable has one
    copy per assignment of the plates of all operands that use it."""
    sum_, prod = SEMIRINGS[backend]
    lhs, output = eq.split("->")
    inputs = lhs.split(",")
    variables = sorted({c for c in lhs.replace(",", "") if c not in plates})
    var_plates = {v: "".join(sorted(set.intersection(*(set(p for p in s if p in plates)
                                                       for s in inputs if v in s))))
                  for v in variables}
    copies = [(v, idx) for v in variables
              for idx in itertools.product(*(range(SIZES[p]) for p in var_plates[v]))]
    assert all(var_plates[c] == "" for c in output)  # the kept names are global here
    out_shape = tuple(SIZES[c] for c in output)
    table: dict = {}  # output entry -> the products of every assignment reaching it
    for values in itertools.product(*(range(SIZES[v]) for v, _ in copies)):
        value = dict(zip(copies, values))
        total = None
        for letters, x in zip(inputs, operands):
            own_plates = [c for c in letters if c in plates]
            for p_idx in itertools.product(*(range(SIZES[p]) for p in own_plates)):
                at = dict(zip(own_plates, p_idx))
                index = tuple(
                    at[c] if c in plates else
                    value[(c, tuple(at[p] for p in var_plates[c]))] for c in letters)
                total = x[index] if total is None else prod(total, x[index])
        key = tuple(value[(c, ())] for c in output)
        table.setdefault(key, []).append(total)
    result = np.empty(out_shape)
    for key, totals in table.items():
        result[key] = sum_(np.array(totals), (0,))
    return result


@pytest.mark.parametrize("backend_name", sorted(SEMIRINGS))
@pytest.mark.parametrize("eq, plates", EQUATIONS)
def test_einsum_replay_matches_brute_force(backend, eq, plates, backend_name):
    operands = random_operands(eq)
    expected = brute_force(eq, plates, operands, backend_name)
    arrays = [_as_backend(x, backend) for x in operands]
    # The first call records the elimination, the later ones replay it on the arrays.
    for _ in range(3):
        actual = fc.einsum(eq, *arrays, plates=plates, backend=backend_name)
        assert tuple(actual.shape) == expected.shape
        assert_close(np.asarray(ops.to_numpy(actual)), expected, atol=1e-10, rtol=1e-10)


def _as_backend(x, backend):
    if backend == "torch":
        import torch

        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(x)
    return x


def test_einsum_replay_under_jit_matches_brute_force():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        eq, plates = EQUATIONS[2]
        operands = random_operands(eq, seed=1)
        expected = brute_force(eq, plates, operands, "log")
        arrays = [jax.numpy.asarray(x) for x in operands]
        # Two traces: the first records on tracers, the second replays on tracers.
        for _ in range(2):
            fn = jax.jit(lambda *xs: fc.einsum(eq, *xs, plates=plates, backend="log"))
            assert_close(np.asarray(fn(*arrays)), expected, atol=1e-10, rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def _count_terms(monkeypatch, cls) -> list:
    # Counts the terms of cls built (every construction passes _prepare).
    calls = []
    prepare = cls._prepare.__func__

    def counting(c, *args, **kwargs):
        calls.append(c)
        return prepare(c, *args, **kwargs)

    monkeypatch.setattr(cls, "_prepare", classmethod(counting))
    return calls


def test_einsum_replay_builds_no_terms(monkeypatch):
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    first = fc.einsum(eq, *operands, plates=plates, backend="log")
    calls = _count_terms(monkeypatch, Contraction)
    second = fc.einsum(eq, *operands, plates=plates, backend="log")
    assert calls == []
    assert_close(second, first, atol=0, rtol=0)


def test_sum_product_replay_gives_the_terms_results():
    # Kept plate i: results with inputs. The replay on arrays returns what the recording run
    # (terms, exact rules) returned, inputs in the same order and bitwise the same data.
    rng = np.random.default_rng(2)
    a = fc.Tensor(rng.normal(size=(2, 3)), {"i": fc.Bint[2], "x": fc.Bint[3]})
    b = fc.Tensor(rng.normal(size=(2, 4, 3)), {"i": fc.Bint[2], "j": fc.Bint[4],
                                                "x": fc.Bint[3]})
    args = (ops.logaddexp, ops.add, [a, b], frozenset("xj"), frozenset("ij"))
    with lazy:
        lazy_results = partial_sum_product(*args)
    recorded = partial_sum_product(*args)
    assert recorded_program(*args) is not None
    replayed = partial_sum_product(*args)
    assert len(replayed) == len(recorded) == len(lazy_results)
    for r, s, t in zip(replayed, recorded, lazy_results):
        assert isinstance(r, fc.Tensor) and r.inputs == s.inputs
        assert np.array_equal(r.data, s.data)
        assert_close(r, exact(fc.reinterpret)(t))  # the lazy term, evaluated
    expected = logsumexp(b.data.sum(1) + a.data, axis=-1)
    assert_close(replayed[0].data, expected)


@pytest.mark.parametrize("term", ["contraction", "reduce"])
def test_user_rule_on_exact_still_fires(scratch_exact_rules, term):
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    expected = float(fc.einsum(eq, *operands, plates=plates, backend="log"))
    fc.einsum(eq, *operands, plates=plates, backend="log")  # replayed on arrays
    fired = []
    if term == "contraction":
        @exact.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                        Tuple[fc.Tensor, fc.Tensor])
        def user_contraction_log_tensors(red_op, bin_op, reduced_vars, terms):
            fired.append(reduced_vars)
            return None  # observes, then declines: the built-in rule computes
    else:
        @exact.register(Reduce, type(ops.add), fc.Tensor, frozenset)
        def user_reduce_add_tensor(op, arg, reduced_vars):
            fired.append(reduced_vars)
            return None
    actual = float(fc.einsum(eq, *operands, plates=plates, backend="log"))
    assert fired, "the user's rule was skipped"
    assert actual == pytest.approx(expected, abs=1e-12)


def test_user_rule_rewriting_the_result_is_used(scratch_exact_rules):
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    expected = float(fc.einsum(eq, *operands, plates=plates, backend="log"))
    fc.einsum(eq, *operands, plates=plates, backend="log")

    # A user's rule for the last step, over z: the result shifted by 100.
    @exact.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                    Tuple[fc.Tensor, fc.Tensor])
    def user_contraction_shifted(red_op, bin_op, reduced_vars, terms):
        if reduced_vars != frozenset("z"):
            return None
        x = fc.Tensor(terms[0].data + terms[1].data, terms[0].inputs)
        return x.reduce(ops.logaddexp, reduced_vars) + 100.0

    actual = float(fc.einsum(eq, *operands, plates=plates, backend="log"))
    assert actual == pytest.approx(expected + 100.0, abs=1e-9)


def test_debug_log_sees_every_rule_of_a_replayed_einsum(caplog):
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    fc.einsum(eq, *operands, plates=plates, backend="log")
    set_debug(True)
    try:
        with caplog.at_level(logging.DEBUG, logger="funsor_core.rules"):
            fc.einsum(eq, *operands, plates=plates, backend="log")
    finally:
        set_debug(False)
    assert "exact_contraction_tensors" in caplog.text
    assert "exact_reduce_tensor" in caplog.text


def test_lazy_einsum_after_replay_stays_lazy():
    eq, plates = EQUATIONS[0]
    operands = [fc.Tensor(x, {c: fc.Bint[SIZES[c]] for c in letters})
                for x, letters in zip(random_operands(eq), ("z", "izx", "ijx"))]
    value = fc.einsum(eq, *operands, plates=plates, backend="log")
    fc.einsum(eq, *operands, plates=plates, backend="log")
    with lazy:
        term = fc.einsum(eq, *operands, plates=plates, backend="log")
    assert not isinstance(term, fc.Tensor)
    assert_close(exact(fc.reinterpret)(term), value)


def test_replayed_einsum_still_names_a_bad_size():
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    for _ in range(2):
        fc.einsum(eq, *operands, plates=plates, backend="log")
    bad = operands[:2] + [np.zeros((SIZES["i"], SIZES["j"], SIZES["x"] + 1))]
    with pytest.raises(ValueError, match="letter 'x' has size 3 in operand 1 but 4 in operand 2"):
        fc.einsum(eq, *bad, plates=plates, backend="log")


def test_replayed_sum_product_still_refuses_mixed_backends():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3))
    b = rng.normal(size=(2, 4, 3))
    inputs_a = {"i": fc.Bint[2], "x": fc.Bint[3]}
    inputs_b = {"i": fc.Bint[2], "j": fc.Bint[4], "x": fc.Bint[3]}
    args = (ops.logaddexp, ops.add)
    names = (frozenset("ijx"), frozenset("ij"))
    for _ in range(2):  # recorded, then replayed on numpy arrays
        fc.sum_product(*args, [fc.Tensor(a, inputs_a), fc.Tensor(b, inputs_b)], *names)
    mixed = [fc.Tensor(a, inputs_a), fc.Tensor(torch.tensor(b), inputs_b)]
    with pytest.raises(TypeError, match=r"holds numpy arrays and factor 1 \(inputs \['i', "
                                        r"'j', 'x'\]\) holds torch arrays"):
        fc.sum_product(*args, mixed, *names)


def test_array_programs_cache_is_keyed_by_structure():
    eq, plates = EQUATIONS[0]
    operands = random_operands(eq)
    for _ in range(2):
        fc.einsum(eq, *operands, plates=plates, backend="log")
    # Other values of the same structure share the entry.
    key = einsum_module._structure_key(eq, random_operands(eq, seed=5), plates, "log", False)
    assert key in einsum_module._ARRAY_PROGRAMS, "the plated einsum of arrays was not kept"


def test_unplated_einsum_of_arrays_replays_and_steps_aside_under_lazy(monkeypatch):
    # An einsum of arrays without plates runs its contraction's array program from the
    # second call (no Tensor or Contraction built); under lazy it still builds the term.
    rng = np.random.default_rng(5)
    eq = "a,ab,bc,bd,c->a"
    operands = [rng.normal(size=(2,) * len(s)) for s in eq.split("->")[0].split(",")]
    expected = fc.einsum(eq, *operands, backend="log")
    calls = _count_terms(monkeypatch, Contraction)
    tensors = _count_terms(monkeypatch, fc.Tensor)
    again = fc.einsum(eq, *operands, backend="log")
    assert calls == [] and tensors == []
    assert_close(again, expected, atol=0, rtol=0)
    brute = (operands[0][:, None, None, None] + operands[1][:, :, None, None]
             + operands[2][None, :, :, None] + operands[3][None, :, None, :]
             + operands[4][None, None, :, None])
    assert_close(expected, np.log(np.exp(brute).sum((1, 2, 3))), rtol=1e-12)
    with lazy:
        term = fc.einsum(eq, *operands, backend="log")
    assert not isinstance(term, np.ndarray) and calls


def test_recorded_program_is_the_one_sum_product_runs():
    # recorded_program and partial_sum_product ask the schedule cache with one key, so the
    # program a caller keeps is the one the eager call replays (not a second plan of it).
    from funsor_core.algorithms.eliminate.schedule import plan_elimination

    rng = np.random.default_rng(5)
    f = fc.Tensor(rng.normal(size=(2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    args = (ops.logaddexp, ops.add, [f], frozenset("ij"), frozenset("i"))
    fc.clear_caches()
    (result,) = partial_sum_product(*args)
    planned = len(plan_elimination.cache)
    program = recorded_program(*args)
    assert len(plan_elimination.cache) == planned
    (replayed,) = program.run([f.data])
    expected = logsumexp(f.data, axis=1).sum(0)  # j summed out, then the plate's product
    assert_close(result.data, expected)
    assert_close(replayed, expected)
