"""funsor 0.4.8 idioms that a switching user writes (helper h37, issue #28): each was run on
funsor-core beside funsor 0.4.8, and each difference found is pinned here.

Oracles: numpy brute force (``np.einsum`` over the arrays); the errors name the argument.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from interpretations import lazy


def _factors(seed=0):
    rng = np.random.RandomState(seed)
    a, b = rng.rand(2, 3), rng.rand(3, 4)
    f = fc.Tensor(a, {"i": Bint[2], "j": Bint[3]})
    g = fc.Tensor(b, {"j": Bint[3], "k": Bint[4]})
    return a, b, f, g


def test_contraction_takes_unpacked_terms():
    # funsor 0.4.8 builds Contraction(red_op, bin_op, reduced_vars, *terms) (its own rules
    # call it so); it was a TypeError about _prepare's arity here.
    a, b, f, g = _factors()
    j = fc.Variable("j", Bint[3])
    expected = np.einsum("ij,jk->ik", a, b)
    eager = fc.Contraction(ops.add, ops.mul, frozenset({j}), f, g)
    np.testing.assert_allclose(eager.align(("i", "k")).data, expected, rtol=1e-12)
    with lazy:
        term = fc.Contraction(ops.add, ops.mul, frozenset({j}), f, g)
    assert isinstance(term, fc.Contraction) and len(term.terms) == 2
    np.testing.assert_allclose(fc.reinterpret(term).align(("i", "k")).data, expected,
                               rtol=1e-12)
    three = fc.Contraction(ops.add, ops.mul, frozenset({"j", "k"}), f, g, fc.Tensor(
        np.arange(4.0), {"k": Bint[4]}))
    np.testing.assert_allclose(three.data, np.einsum("ij,jk,k->i", a, b, np.arange(4.0)),
                               rtol=1e-12)


def test_markov_product_step_names_must_be_a_mapping():
    # A set of names (not pairs) failed inside dict() with "dictionary update sequence
    # element #0 has length 6"; now the message names step_names and shows its form.
    trans = fc.Tensor(np.zeros((3, 2, 2)), {"time": Bint[3], "a": Bint[2], "b": Bint[2]})
    with pytest.raises(ValueError, match="step_names must map step names to free names"):
        fc.MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"a": "b"},
                         frozenset({"a", "b"}))
    # the mapping form still renames the free step inputs
    renamed = fc.MarkovProduct(ops.logaddexp, ops.add, trans, "time", {"a": "b"},
                               {"a": "a0", "b": "b0"})
    assert set(renamed.inputs) == {"a0", "b0"}
    # log(sum exp 0) over 2^(T-1) paths between fixed ends: (T - 1) log 2 with T = 3
    np.testing.assert_allclose(renamed.align(("a0", "b0")).data, np.full((2, 2), 2 * np.log(2)),
                               rtol=1e-12)
