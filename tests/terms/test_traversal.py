"""substitute: values on DAGs with shared subterms, and how long intermediate arrays live."""

import gc
import tracemalloc
import weakref

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from funsor_core.terms.traversal import substitute
from interpretations import lazy

N = 10 ** 6  # float64: one array is 8 MB, far above what the terms themselves allocate


def test_substitute_shared_subterms_by_hand():
    # y is used by three parents, and z = y * b is reached under two substitutions that agree
    # on y's inputs (x) but not on b's: each (subterm, substitution) pair is built once and
    # kept until its last parent is built.
    x, b = fc.Variable("x", Real), fc.Variable("b", Real)
    with lazy:
        y = x * 2.0 + 1.0
        z = y * b
        expr = y * y + y.exp() + z + z(b=3.0)
    xs = np.linspace(-1.0, 1.0, 5)
    actual = substitute(expr, {"x": fc.Tensor(xs, {"i": Bint[5]}), "b": fc.Number(0.5)})
    y_np = xs * 2.0 + 1.0
    expected = y_np * y_np + np.exp(y_np) + y_np * 0.5 + y_np * 3.0
    assert isinstance(actual, fc.Tensor)
    np.testing.assert_allclose(actual.data, expected)


def test_substitute_frees_intermediates_as_it_goes():
    # A chain of 24 elementwise ops: each intermediate array is freed once the next one is
    # computed, as in straight-line numpy code, so at most two live at a time (not 24).
    x = fc.Variable("x", Real)
    with lazy:
        expr = x
        for _ in range(6):
            expr = (expr * 1.5 + 1.0).exp().log()
    data = np.random.default_rng(0).normal(size=N)
    value = fc.Tensor(data, {"i": Bint[N]})
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        actual = substitute(expr, {"x": value})
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    expected = data
    for _ in range(6):
        expected = expected * 1.5 + 1.0
    np.testing.assert_allclose(actual.data, expected)
    assert peak < 2.5 * data.nbytes, peak / data.nbytes


def test_built_terms_keep_no_arguments_alive():
    # Binary and Contraction keep what _prepare checked for _setup; that must not outlive
    # the construction, whether the term is built or a rule evaluates it (exact here).
    data = np.ones(N)
    t = fc.Tensor(data, {"i": Bint[N]})
    s = fc.Tensor(np.ones(3), {"j": Bint[3]})
    alive = weakref.ref(data)
    total = (t + s).reduce(ops.add, "i")  # a Binary, then a Contraction over the big array
    with lazy:
        lazy_total = (t * 2.0).reduce(ops.add, "i")  # built as terms, not evaluated
    del data, t, lazy_total
    gc.collect()
    assert alive() is None
    np.testing.assert_allclose(total.data, np.full(3, 2.0 * N))


def test_reinterpret_keeps_leaves_no_rule_sees():
    # A leaf that would be built again as it is stays the same object (issue #29 item 3:
    # apply_optimizer's three passes rebuilt every Tensor); a kind that wraps construction
    # (a tape) still sees every leaf, and the value matches numpy by hand.
    from funsor_core.engine.interpreter import Interpretation
    from funsor_core.engine.protocol import children
    from interpretations import exact
    from interpretations.optimize import apply_optimizer

    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=4)
    x = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]})
    y = fc.Tensor(b, {"j": fc.Bint[3], "k": fc.Bint[4]})
    z = fc.Tensor(c, {"k": fc.Bint[4]})
    with lazy:
        expr = (x + y + z).reduce(ops.logaddexp, frozenset("ijk"))
        planned = apply_optimizer(expr)
    leaves = {id(t) for t in (x, y, z)}
    found = []
    stack = [planned]
    while stack:
        node = stack.pop()
        kids = children(node)
        stack.extend(kids)
        if type(node) is fc.Tensor:
            found.append(id(node) in leaves)
    assert found and all(found)
    assert fc.reinterpret(x) is x
    expected = np.log(np.exp(a[:, :, None] + b[None] + c).sum())
    np.testing.assert_allclose(apply_optimizer(expr).data, expected, rtol=1e-12)
    seen = []

    class Tape(Interpretation):
        def interpret(self, cls, args):
            seen.append(cls)
            return self.defer(cls, args)

    with Tape("tape_traversal", fallback=exact):
        fc.reinterpret(expr)
    assert seen.count(fc.Tensor) == 3


def test_substitute_into_a_lazy_align_keeps_the_order_of_the_names_left():
    # An aligned lazy term loses a name to substitution: the rest keep their order, and the
    # value is the formula at the substituted values (x * 2 + y + z by hand).
    x, y, z = (fc.Variable(n, fc.Real) for n in "xyz")
    aligned = (x * 2.0 + y + z).align(("z", "y", "x"))
    assert tuple(aligned.inputs) == ("z", "y", "x")
    partial = aligned(y=1.0)
    assert tuple(partial.inputs)[:2] == ("z", "x") and set(partial.inputs) == {"x", "z"}
    assert float(partial(x=3.0, z=0.5).data) == 3.0 * 2.0 + 1.0 + 0.5
    with pytest.raises(ValueError, match=r"cannot align by \['w'\]"):
        aligned.align(("w",))
