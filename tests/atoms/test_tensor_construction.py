"""The fast constructor path of Tensor and the eager operators' direct rule calls (issue #29
items 1-2): a signature of inputs seen before is validated by one lookup, yet every error of
the full check still raises; cons-hashing keeps its identities and forgets dead terms; and
the eager operators run the active interpretation's rules, so a user rule, ``lazy`` or a
tape still see every term. Oracles: numpy by hand, and the same term built through the
constructor."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from funsor_core.engine.cons import _CONS
from funsor_core.engine.interpreter import Interpretation
from funsor_core.terms.base import Binary, DomainError, Reduce, Subs, Unary
from interpretations import exact, lazy
from tests.backend_values import as_backend_array, to_numpy

B2, B3 = Bint[2], Bint[3]


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def test_known_inputs_still_raise_every_error(backend):
    inputs = {"i": B2, "j": B3}
    x = fc.Tensor(as_backend_array(np.zeros((2, 3, 4))), inputs)  # the signature is now known
    assert x.output is Reals[4] and x.inputs == inputs
    with pytest.raises(DomainError, match=r"shape \(3, 2\) does not match its inputs"):
        fc.Tensor(as_backend_array(np.zeros((3, 2))), inputs)
    with pytest.raises(DomainError, match=r"shape \(2,\) does not match"):
        fc.Tensor(as_backend_array(np.zeros(2)), inputs)
    with pytest.raises(DomainError, match="cannot hold Bint"):
        fc.Tensor(as_backend_array(np.zeros((2, 3))), inputs, 3)
    with pytest.raises(DomainError, match="dtype must be 'real' or an int bound"):
        fc.Tensor(as_backend_array(np.zeros((2, 3), dtype=int)), inputs, True)
    with pytest.raises(DomainError, match="must be a Bint"):
        fc.Tensor(as_backend_array(np.zeros((2, 3))), {"i": B2, "j": Real})
    with pytest.raises(TypeError, match="map names to domains"):
        fc.Tensor(as_backend_array(np.zeros((2, 3))), {"i": B2, "j": [3]})
    # Integer data with a bound, and a domain as the dtype, as the full check normalizes.
    y = fc.Tensor(as_backend_array(np.arange(6).reshape(2, 3)), dict(inputs), B3)
    assert y.dtype == 3 and y.output is B3


def test_signatures_are_interned_and_terms_cons_hashed(backend):
    a = as_backend_array(np.arange(6.0).reshape(2, 3))
    x = fc.Tensor(a, {"i": B2, "j": B3})
    y = fc.Tensor(as_backend_array(np.ones((2, 3))), {"i": B2, "j": B3})  # another dict
    assert x._ikey is y._ikey  # rules compare signatures with ``is`` first
    assert fc.Tensor(a, {"i": B2, "j": B3}) is x
    assert fc.Tensor(a, {"j": B2, "i": B3}) is not x  # another signature, another term
    np.testing.assert_array_equal(to_numpy((x + y).data), np.arange(6.0).reshape(2, 3) + 1)


def test_cons_table_forgets_dead_terms():
    table_size = lambda: len(_CONS.get(fc.Tensor, {}))  # noqa: E731
    # (Reference counting frees each Tensor at once, and its entry with it: no gc needed.)
    keep = fc.Tensor(np.zeros(2), {"i": B2})
    before = table_size()
    for _ in range(200):
        fc.Tensor(np.zeros(2), {"i": B2})
    assert table_size() <= before + 1
    assert fc.Tensor(keep.data, {"i": B2}) is keep


def test_eager_ops_match_the_constructor_path(backend):
    # The operators call the rules directly; building the terms through the constructors
    # (the interpreter's path) gives the same numbers, and numpy by hand agrees.
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(3,))
    x = fc.Tensor(as_backend_array(a), {"i": B2, "j": B3})
    y = fc.Tensor(as_backend_array(b), {"j": B3})
    cases = [
        (x - y, Binary(ops.sub, x, y), a - b),
        (2.0 * x, Binary(ops.mul, fc.Number(2.0), x), 2.0 * a),
        (x.exp(), Unary(ops.exp, x), np.exp(a)),
        (x(j=2), Subs(x, (("j", fc.Number(2, 3)),)), a[:, 2]),
        (x.reduce(ops.logaddexp, "i"), Reduce(ops.logaddexp, x, frozenset("i")),
         np.log(np.exp(a).sum(0))),
    ]
    for fast, slow, expected in cases:
        assert fast.inputs == slow.inputs and fast.output is slow.output
        np.testing.assert_allclose(to_numpy(fast.data), expected, rtol=1e-12)
        np.testing.assert_allclose(to_numpy(slow.data), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="input 'j' is Bint"):
        x + fc.Tensor(as_backend_array(np.zeros(2)), {"j": B2})


def test_eager_ops_leave_terms_to_other_interpretations():
    x = fc.Tensor(np.arange(3.0), {"i": B3})
    with lazy:
        assert type(x + x) is Binary and type(x(i=1)) is Subs
        assert type(x.reduce(ops.add, "i")) is Reduce and type(-x) is Unary
    # A rule registered ahead of the built-in one (on a kind in front of exact) is the one
    # that runs; a kind overriding ``interpret`` (a tape) sees every term it builds.
    seen = []

    class Tape(Interpretation):
        def interpret(self, cls, args):
            seen.append(cls.__name__)
            return self.defer(cls, args)

    first = Interpretation("first_h4", fallback=exact)

    @first.register(Binary, type(ops.add), fc.Tensor, fc.Tensor)
    def first_binary_add_tensor_tensor(op, lhs, rhs):
        return fc.Number(42.0)

    with first:
        assert (x + x).data == 42.0
        assert to_numpy((x * x).data).tolist() == [0.0, 1.0, 4.0]
    with Tape("tape_h4", fallback=exact):
        _ = (x + x)(i=0).exp()
    assert [name for name in seen if name != "Number"][:3] == ["Binary", "Subs", "Unary"]


def test_constructor_fast_path_keeps_rules_and_errors():
    # Tensor(array, inputs) of a known signature skips the interpreter only where no rule
    # sees Tensors: a rule on Tensor still sees the construction, and a shape that does not
    # match known inputs still raises the full check's error.
    a = np.zeros((2, 3))
    x = fc.Tensor(a, {"i": B2, "j": B3})  # the signature is now known
    seen = []
    spy = Interpretation("construction_spy", fallback=exact)

    @spy.register(fc.Tensor, object, object, object)
    def construction_spy_tensor(data, inputs, dtype):
        seen.append((id(data), inputs, dtype))
        return None

    with spy:
        y = fc.Tensor(a, {"i": B2, "j": B3})
    assert seen == [(id(a), x._ikey, "real")] and y is x
    with pytest.raises(DomainError, match="does not match its inputs"):
        fc.Tensor(np.zeros((3, 2)), {"i": B2, "j": B3})
