"""Contractions of many terms (issue #29 item 1: 1,000-variable trees): the C-level paths
taken for long term tuples (sorting, merged inputs, backend check, cons key, dispatch key,
``reinterpret`` of a Contraction whose children no rule sees) give what the per-term paths
give, keep every error, and a rule on the leaves still sees them. Oracles: numpy brute force
by broadcasting, ``term_sort_key`` sorting, the same checks on short tuples."""

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract.plan import plan_contraction, plan_terms
from funsor_core.engine.interpreter import Interpretation
from funsor_core.engine.patterns import tuple_type
from funsor_core.terms.contraction import Contraction, sort_terms, term_sort_key
from funsor_core.terms.inputs import merge_all_inputs
from funsor_core.terms.traversal import reinterpret
from interpretations import exact, lazy, normalize
from interpretations.optimize import apply_optimizer

NAMES = "abcdefghijkl"


def star(rng, backend_array=np.asarray):
    """A tree of 12 Bint[2] variables (each joined to an earlier one) with one unary factor
    per variable: 23 Tensors, in an order the canonical sort changes."""
    terms, arrays, dims = [], [], []
    for k in range(1, len(NAMES)):
        p = NAMES[int(rng.integers(k))]
        dims.append((NAMES[k], p))
    dims += [(n,) for n in NAMES]
    for d in dims:
        x = rng.normal(size=(2,) * len(d))
        arrays.append(x)
        terms.append(fc.Tensor(backend_array(x), {n: fc.Bint[2] for n in d}))
    return terms, arrays, dims


def brute_force(arrays, dims):
    total = np.zeros((2,) * len(NAMES))
    for x, d in zip(arrays, dims):
        axes = [NAMES.index(n) for n in d]
        shape = [2 if k in axes else 1 for k in range(len(NAMES))]
        order = np.argsort(axes)
        total = total + np.transpose(x, order).reshape(shape)
    return logsumexp(total)


def test_apply_optimizer_many_tensors_no_pass_rebuilds():
    rng = np.random.default_rng(0)
    terms, arrays, dims = star(rng)
    with lazy:
        expr = Contraction(ops.logaddexp, ops.add, frozenset(NAMES), tuple(terms))
    assert len(expr.terms) == len(terms)
    assert any(a is not b for a, b in zip(expr.terms, terms))  # it was sorted
    with normalize:
        assert reinterpret(expr) is expr  # no rule changes it: the same term, no rebuild
    np.testing.assert_allclose(apply_optimizer(expr).data, brute_force(arrays, dims),
                               rtol=1e-12)
    np.testing.assert_allclose(reinterpret(expr).data, brute_force(arrays, dims), rtol=1e-12)


def test_reinterpret_many_leaves_a_leaf_rule_sees_them():
    # The per-class shortcut must not hide leaves from a kind with a rule on Tensor.
    rng = np.random.default_rng(1)
    terms, arrays, dims = star(rng)
    with lazy:
        expr = Contraction(ops.logaddexp, ops.add, frozenset(NAMES), tuple(terms))
    seen = []
    spy = Interpretation("many_terms_spy", fallback=exact)

    @spy.register(fc.Tensor, object, object, object)
    def many_terms_spy_tensor(data, inputs, dtype):
        seen.append(id(data))
        return None

    assert not spy.builds_class_as_is(fc.Tensor) and exact.builds_class_as_is(fc.Tensor)
    with spy:
        result = reinterpret(expr)
    assert sorted(seen) == sorted(id(t.data) for t in terms)
    np.testing.assert_allclose(result.data, brute_force(arrays, dims), rtol=1e-12)


def test_sort_terms_many_matches_term_sort_key():
    rng = np.random.default_rng(2)
    terms, _, _ = star(rng)
    terms = terms + [fc.Variable("z", fc.Real), fc.Number(2.0)]
    shuffled = [terms[k] for k in rng.permutation(len(terms))]
    expected = sorted(shuffled, key=term_sort_key)  # stable, as sort_terms
    assert list(sort_terms(tuple(shuffled))) == expected
    ordered = tuple(expected)
    assert sort_terms(ordered) is ordered


def test_many_terms_errors_still_named():
    rng = np.random.default_rng(3)
    terms, _, _ = star(rng)
    bad = fc.Tensor(np.zeros(3), {"a": fc.Bint[3]})
    with pytest.raises(ValueError, match="'a'"):
        Contraction(ops.logaddexp, ops.add, frozenset(NAMES), tuple(terms) + (bad,))
    torch = pytest.importorskip("torch")
    other = fc.Tensor(torch.zeros(2), {"a": fc.Bint[2]})
    with pytest.raises(TypeError, match="one backend"):
        Contraction(ops.logaddexp, ops.add, frozenset(NAMES), tuple(terms) + (other,))


def test_many_terms_cons_and_dispatch_keys():
    rng = np.random.default_rng(4)
    terms, _, _ = star(rng)
    with lazy:
        one = Contraction(ops.logaddexp, ops.add, frozenset("a"), tuple(terms))
        two = Contraction(ops.logaddexp, ops.add, frozenset("a"), tuple(reversed(terms)))
    assert one is two  # cons-hashed by the identities of the sorted terms
    long = tuple(terms) + ((1, 2),)
    assert tuple_type(tuple(terms)) is tuple_type(tuple(terms[:9]))  # Tuple[Tensor, ...]
    assert tuple_type(long) is not tuple_type(tuple(terms))


def test_recurring_structure_sorted_and_merged_as_the_first_time():
    # A Contraction of many Tensors keeps its checked inputs and canonical order per structure
    # (the terms' input keys): fresh Tensors of that structure, a repeated term, and a reduced
    # Variable no term has (a constant term appended) are ordered as term_sort_key orders them.
    rng = np.random.default_rng(5)
    for _ in range(2):  # the second round finds the structure known
        terms, arrays, dims = star(rng)
        terms = terms + [terms[3]]  # a repeated term: positions, not identities
        with lazy:
            expr = Contraction(ops.logaddexp, ops.add, frozenset(NAMES), tuple(terms))
        expected = sorted(terms, key=term_sort_key)
        assert list(expr.terms) == expected
        np.testing.assert_allclose(
            reinterpret(expr).data,
            brute_force(arrays + [arrays[3]], dims + [dims[3]]), rtol=1e-12)
    with lazy:
        kept = Contraction(ops.logaddexp, ops.add, frozenset("a"), tuple(terms))
    merged = merge_all_inputs(sorted(terms, key=term_sort_key))  # in the canonical order
    assert list(kept.inputs) == [n for n in merged if n != "a"]
    extra = fc.Variable("extra", fc.Bint[3])
    with lazy:
        repeated = Contraction(ops.logaddexp, ops.add, frozenset({extra, *NAMES}), tuple(terms))
    assert len(repeated.terms) == len(terms) + 1 and list(repeated.terms) == sorted(
        repeated.terms, key=term_sort_key)
    np.testing.assert_allclose(
        reinterpret(repeated).data,
        brute_force(arrays + [arrays[3]], dims + [dims[3]]) + np.log(3), rtol=1e-12)


def test_plan_terms_many_tensors_is_the_plan_of_their_names():
    rng = np.random.default_rng(6)
    terms, _, dims = star(rng)
    plan = plan_terms(tuple(terms), frozenset("bc"))
    direct = plan_contraction(dims, dict.fromkeys(NAMES, 2),
                              tuple(n for n in merge_all_inputs(terms) if n not in "bc"))
    assert plan is direct
    fresh, _, _ = star(np.random.default_rng(6))  # the same structure, other Tensors
    assert plan_terms(tuple(fresh), frozenset("bc")) is plan
