"""Building Contractions cheaply: the small-structure cache of ``Contraction._prepare``, the
layout cache of ``Contraction.make``, the cons key by term identity. Each is checked against
the general path (the caches cleared, or ``_checked`` called directly), against brute force,
and against the terms a user rule and the adjoint tape see."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint.tape import canonical_key
from funsor_core.engine.cache import clear_caches
from funsor_core.engine.interpreter import Interpretation
from funsor_core.terms.contraction import Contraction, term_sort_key
from funsor_core.terms.inputs import DomainError
from interpretations import exact, lazy

B = fc.Bint
SIZES = {"i": 2, "j": 3, "k": 4}


def _tensor(names, seed):
    data = np.random.default_rng(seed).normal(size=tuple(SIZES[n] for n in names))
    return fc.Tensor(data, {n: B[SIZES[n]] for n in names}), data


def _build(red_op, bin_op, reduced, terms):
    with lazy:
        return Contraction(red_op, bin_op, frozenset(reduced), terms)


def test_cons_identity_with_and_without_the_cache():
    x, _ = _tensor("ij", 0)
    y, _ = _tensor("jk", 1)
    clear_caches()
    cold = _build(ops.logaddexp, ops.add, "j", (y, x))  # a miss: the general path
    warm = _build(ops.logaddexp, ops.add, "j", (x, y))  # a hit, the terms in the other order
    assert warm is cold
    assert cold.terms[0] is x and cold.terms[1] is y  # canonical order: sorted input names
    assert cold.inputs == {"i": B[2], "k": B[4]} and list(cold.inputs) == ["i", "k"]
    # The same structure over other arrays: a new term, laid out as the cached one.
    x2, _ = _tensor("ij", 2)
    other = _build(ops.logaddexp, ops.add, "j", (y, x2))
    assert other is not cold and other.terms[0] is x2
    assert other.inputs == cold.inputs and other.output is cold.output


@pytest.mark.parametrize("red_op, bin_op", [(ops.logaddexp, ops.add), (ops.add, ops.mul),
                                            (None, ops.add), (ops.max, ops.add)])
def test_cached_prepare_equals_the_checked_path(red_op, bin_op):
    x, _ = _tensor("ij", 0)
    y, _ = _tensor("k", 1)
    z, _ = _tensor("ji", 2)
    g = fc.Variable("i", B[2])
    reduced = frozenset() if red_op is None else frozenset("j")
    for terms in itertools.permutations((x, y, z, g)):
        expected = Contraction._checked(red_op, bin_op, reduced, terms)
        for _ in range(2):  # a miss then a hit
            args = Contraction._prepare(red_op, bin_op, reduced, terms)
            assert args[:3] == expected[:3]
            assert all(map(lambda a, b: a is b, args[3], expected[3]))
        built = _build(red_op, bin_op, reduced, terms)
        assert built.inputs == {k: d for k, d in merge(expected[3]).items() if k not in reduced}


def merge(terms):
    out = {}
    for t in terms:
        out.update(t.inputs)
    return out


@pytest.mark.parametrize("red_op, bin_op", [(ops.logaddexp, ops.add), (ops.add, ops.mul)])
def test_built_contraction_against_brute_force(red_op, bin_op):
    (x, xd), (y, yd), (z, zd) = _tensor("ij", 0), _tensor("jk", 1), _tensor("k", 2)
    for _ in range(2):  # the second build hits the cache
        term = _build(red_op, bin_op, "jk", (z, y, x))
        with exact:
            actual = fc.reinterpret(term)
        # Every assignment of (i, j, k), combined and reduced by hand.
        full = np.empty((2, 3, 4))
        for i, j, k in itertools.product(range(2), range(3), range(4)):
            v = [xd[i, j], yd[j, k], zd[k]]
            full[i, j, k] = sum(v) if bin_op is ops.add else np.prod(v)
        flat = full.reshape(2, -1)
        expected = logsumexp(flat, 1) if red_op is ops.logaddexp else flat.sum(1)
        np.testing.assert_allclose(actual.data, expected, rtol=1e-12)


def test_a_cached_structure_still_checks_other_terms():
    x, _ = _tensor("ij", 0)
    y, _ = _tensor("jk", 1)
    _build(ops.logaddexp, ops.add, "j", (x, y))
    bad = fc.Tensor(np.zeros((4, 4)), {"j": B[4], "k": B[4]})
    with pytest.raises(DomainError, match="'j'"):
        _build(ops.logaddexp, ops.add, "j", (x, bad))
    with pytest.raises(ValueError, match="cannot reduce with ops.sub"):
        _build(ops.sub, ops.add, "j", (x, y))
    with pytest.raises(ValueError, match="not inputs"):
        _build(ops.logaddexp, ops.add, "q", (x, y))


def test_a_cached_structure_still_checks_backends():
    torch = pytest.importorskip("torch")
    x, _ = _tensor("ij", 0)
    y, yd = _tensor("jk", 1)
    _build(ops.logaddexp, ops.add, "j", (x, y))  # kept: numpy arrays
    y_torch = fc.Tensor(torch.tensor(yd), y.inputs)  # the same inputs, another array type
    with pytest.raises(TypeError, match="holds torch arrays and term 1 holds numpy"):
        _build(ops.logaddexp, ops.add, "j", (y_torch, x))


def test_user_rule_and_tape_see_the_same_terms():
    x, xd = _tensor("ij", 0)
    y, yd = _tensor("jk", 1)
    seen = []
    spy = Interpretation("spy_contraction_build", fallback=lazy)

    @spy.register(Contraction, object, object, frozenset, tuple)
    def spy_contraction_any(red_op, bin_op, reduced_vars, terms):
        seen.append(terms)
        return None  # declines: the lazy term is built as it is

    plain = _build(ops.logaddexp, ops.add, "j", (y, x))
    for _ in range(2):
        with spy:
            spied = Contraction(ops.logaddexp, ops.add, frozenset("j"), (y, x))
        assert spied is plain
    assert len(seen) == 2 and all(t[0] is x and t[1] is y for t in seen)
    # Evaluated under exact, and under a user rule on top of exact that declines: bit for bit
    # the same, and the sum by hand.
    spy_exact = Interpretation("spy_exact_contraction_build", fallback=exact)

    @spy_exact.register(Contraction, object, object, frozenset, tuple)
    def spy_exact_contraction_any(red_op, bin_op, reduced_vars, terms):
        seen.append(terms)
        return None

    with exact:
        value = fc.reinterpret(spied)
    with spy_exact:
        spied_value = fc.reinterpret(spied)
    assert len(seen) == 3
    np.testing.assert_array_equal(spied_value.data, value.data)
    np.testing.assert_allclose(value.data, logsumexp(xd[:, :, None] + yd[None], axis=1),
                               rtol=1e-13)
    # The tape keys a Contraction of atoms by its atoms, not by the cons key.
    rebuilt = _build(ops.logaddexp, ops.add, "j",
                     (fc.Tensor(x.data, x.inputs), fc.Tensor(y.data, y.inputs)))
    assert canonical_key(rebuilt) == canonical_key(plain)


def test_make_matches_the_constructor_in_every_order():
    (x, _), (y, _), (z, _) = _tensor("ij", 0), _tensor("jk", 1), _tensor("k", 2)
    g = fc.Gaussian(white_vec=np.zeros(1), prec_sqrt=np.ones((1, 1)), inputs={"r": fc.Real})
    n = fc.Number(0.5)
    clear_caches()
    for terms in itertools.permutations((x, y, z, g, n)):
        made = Contraction.make(ops.add, terms)
        built = _build(None, ops.add, (), terms)
        assert all(map(lambda a, b: a is b, made.terms, built.terms))
        assert made.inputs == built.inputs and list(made.inputs) == list(built.inputs)
        assert made.output is built.output
        keys = [term_sort_key(t) for t in made.terms]
        assert keys == sorted(keys)


def test_make_layout_keyed_by_input_order_not_only_names():
    # The layout key holds a Tensor's input items in order: the same names in another order
    # (a renamed filter message) is another layout, never the cached one.
    x, xd = _tensor("ij", 0)
    swapped = fc.Tensor(xd.T.copy(), {"j": B[3], "i": B[2]})
    (y, yd) = _tensor("jk", 1)
    clear_caches()
    for a in (x, swapped, x):
        made = Contraction.make(ops.add, (a, y))
        built = _build(None, ops.add, (), (a, y))
        assert list(made.inputs) == list(built.inputs)
        with exact:
            out = fc.reinterpret(made).align(("i", "j", "k")).data
        np.testing.assert_allclose(out, xd[:, :, None] + yd[None], rtol=1e-12)


def test_plain_numbers_are_converted_every_time():
    x, xd = _tensor("ij", 0)
    for _ in range(2):  # never kept: to_funsor converts the float
        term = _build(None, ops.add, (), (2.5, x))
        assert term.terms[0] is x and type(term.terms[1]) is fc.Number
        with exact:
            np.testing.assert_array_equal(fc.reinterpret(term).data, xd + 2.5)


def test_lazy_build_in_the_metaclass_is_the_interpreters():
    from funsor_core.engine.protocol import pending_setup

    x, _ = _tensor("ij", 0)
    y, _ = _tensor("jk", 1)
    term = _build(ops.logaddexp, ops.add, "j", (y, x))  # built in ContractionMeta's frame
    assert lazy.builds_class_as_is(Contraction)
    assert lazy.interpret(Contraction, term._args) is term  # the interpreter's own path
    assert pending_setup()[0] is None  # the slot does not keep the terms alive
    with pytest.raises(DomainError):
        _build(ops.logaddexp, ops.add, "j", (x, fc.Tensor(np.zeros(4), {"j": B[4]})))
    assert pending_setup()[0] is None
