"""repr, quote and pretty of terms."""

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from interpretations import lazy


def test_repr_summarizes_arrays():
    t = fc.Tensor(np.zeros((2, 3)), {"i": Bint[2]})
    assert repr(t) == "Tensor(numpy.array(shape=(2, 3), dtype=float64), (('i', Bint[2]),), 'real')"
    # str shows the values (what print shows, as in funsor 0.4.8); repr summarizes them
    assert str(t) == "Tensor(" + str(t.data).replace("\n", "\n" + " " * 7) + ", {'i': Bint[2]})"


def test_quote_round_trip_of_each_term():
    x = fc.Variable("x", Real)
    t = fc.Tensor(np.array([1.0, 2.0]), {"i": Bint[2]})
    ns = {"np": np, "ops": ops, **{k: getattr(fc, k) for k in fc.__all__}}
    with lazy:
        terms = [x + 1, -x, t.reduce(ops.add, "i"), fc.Stack("s", (x, x)), t(i=fc.Slice("i", 2)),
                 fc.Lambda(fc.Variable("i", Bint[2]), t * x), t.align(("i",)), x.exp()[()]]
        for term in terms:
            text = fc.quote(term)
            assert fc.quote(eval(text, ns)) == text


def test_pretty_tree():
    x = fc.Variable("x", Real)
    with lazy:
        text = fc.pretty((x + 1).exp())
    lines = text.splitlines()
    assert lines[0].startswith("Unary ops.exp")
    assert lines[1].startswith("  Binary ops.add")
    assert lines[2].startswith("    Variable 'x' Real")


def test_quote_of_getitem_is_indexing_syntax_that_rebuilds_it():
    from interpretations import reflect

    i = fc.Variable("i", Bint[3])
    y = fc.Variable("y", fc.Reals[3, 3, 3])
    for interp in (reflect, lazy):
        with interp:
            for offset in range(3):
                term = y[(slice(None),) * offset + (i,)]
                text = fc.quote(term)
                # funsor's names only: no Getitem needed to read it back
                assert "Getitem" not in text
                assert eval(text, {"Variable": fc.Variable, "Reals": fc.Reals,
                                   "Bint": Bint}) is term
