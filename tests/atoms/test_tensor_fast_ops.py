"""The eager Tensor operators' one-frame programs (``funsor_core/atoms/tensor_fast_ops.py``,
issue #29 item 4) give the Tensor the general path gives: the oracle is the same expression
built under a user interpretation whose declining rule sits ahead of the exact one, which
turns the fast path off (and must see every term), on numpy and torch. Values are compared
bit for bit (the same kernel runs), and so are inputs, their order, output domain and dtype."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.tensor_fast_ops import _BINARY_ENTRIES
from funsor_core.domains import Bint, Real
from funsor_core.engine.interpreter import Interpretation
from interpretations import exact, lazy
from tests.backend_values import as_backend_array, to_numpy

B2, B3 = Bint[2], Bint[3]


@pytest.fixture(params=["numpy", "torch"])
def backend(request):
    fc.set_backend(request.param)
    yield request.param
    fc.set_backend("numpy")


def _spy():
    """A user interpretation over ``exact`` whose rules on Tensor terms record and decline."""
    seen = []
    spy = Interpretation("fast_ops_spy", fallback=exact)

    @spy.register(fc.Binary, ops.BinaryOp, fc.Tensor, fc.Tensor)
    def fast_ops_spy_binary(op, lhs, rhs):
        seen.append(("binary", op))

    @spy.register(fc.Subs, fc.Tensor, tuple)
    def fast_ops_spy_subs(arg, subs):
        seen.append(("subs", subs))

    @spy.register(fc.Reduce, ops.Op, fc.Tensor, frozenset)
    def fast_ops_spy_reduce(op, arg, reduced_vars):
        seen.append(("reduce", reduced_vars))

    @spy.register(fc.Number, float, str)
    def fast_ops_spy_number(data, dtype):
        seen.append(("number", data))

    return spy, seen


def _same_tensor(fast, general):
    assert type(fast) is type(general) is fc.Tensor
    assert list(fast.inputs.items()) == list(general.inputs.items())
    assert fast._ikey == general._ikey == tuple(fast.inputs.items())
    assert fast.output is general.output and fast._args[2] == general._args[2]
    assert fast.data.dtype == general.data.dtype
    np.testing.assert_array_equal(to_numpy(fast.data), to_numpy(general.data))


def _both(fn, *args):
    spy, seen = _spy()
    with spy:
        general = fn(*args)
    assert seen, "the user rule must see the term"
    return fn(*args), general


BINARY = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x / y,
          ops.logaddexp, ops.max, lambda x, y: x < y]


def test_binary_same_as_general_path(backend):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    x, y = (fc.Tensor(as_backend_array(v), {"i": B2, "j": B3}) for v in (a, b))
    yt = fc.Tensor(as_backend_array(b.T), {"j": B3, "i": B2})  # other order: aligned
    v = fc.Tensor(as_backend_array(a[:, 0]), {"i": B2})  # fewer inputs: broadcast
    for fn in BINARY:
        for lhs, rhs in ((x, y), (x, yt), (yt, x), (x, v), (v, y)):
            fast, general = _both(fn, lhs, rhs)
            _same_tensor(fast, general)
            _same_tensor(fn(lhs, rhs), general)  # the second call: the cached entry
    kernel = ops.add.kernels[type(x.data)]
    assert (ops.add, kernel, Real, Real) in _BINARY_ENTRIES  # the one-frame program ran
    with pytest.raises(ValueError, match="input 'i' is Bint"):  # the general path's error
        x + fc.Tensor(as_backend_array(np.zeros((3, 3))), {"i": B3, "j": B3})


def test_binary_numbers_ints_and_bools(backend):
    rng = np.random.default_rng(1)
    n = fc.Tensor(as_backend_array(rng.integers(0, 3, (2, 3))), {"i": B2, "j": B3}, 3)
    t = fc.Tensor(as_backend_array(rng.integers(0, 2, (2, 3)).astype(bool)),
                  {"i": B2, "j": B3}, 2)
    x = fc.Tensor(as_backend_array(rng.normal(size=(2, 3))), {"i": B2, "j": B3})
    for lhs, rhs in ((n, t), (t, t), (t, n), (n, n)):
        for fn in (lambda p, q: p + q, lambda p, q: p * q, lambda p, q: p < q):
            _same_tensor(*_both(fn, lhs, rhs))
    fast, general = _both(lambda p, q: p * q, x, t)  # real times bool
    _same_tensor(fast, general)
    for fn in (lambda p: p * 2.0, lambda p: 2.0 - p, lambda p: p * -0.0):  # float operands
        spy, seen = _spy()
        with spy:
            general = fn(x)
        assert seen[0][0] == "number"  # a user rule on Number sees the float's Number
        _same_tensor(fn(x), general)
    assert (x * 2.0).data is not None and fc.Number(-0.0) is not fc.Number(0.0)


def test_subs_int_same_as_general_path(backend):
    data = np.arange(24.0).reshape(2, 3, 4)
    x = fc.Tensor(as_backend_array(data), {"i": B2, "j": B3, "k": Bint[4]})
    for name, size in (("i", 2), ("j", 3), ("k", 4)):
        for value in (0, size - 1):
            _same_tensor(*_both(lambda t, kw={name: value}: t(**kw), x))
        for bad in (-1, size):  # negative and out of range: the general path's error
            with pytest.raises(ValueError) as fast_error:
                x(**{name: bad})
            spy, _ = _spy()
            with spy, pytest.raises(ValueError) as general_error:
                x(**{name: bad})
            assert str(fast_error.value) == str(general_error.value)
    assert x(z=0) is x  # not an input: nothing to substitute


def test_reduce_same_as_general_path(backend):
    data = np.random.default_rng(2).normal(size=(2, 3, 4))
    x = fc.Tensor(as_backend_array(data), {"i": B2, "j": B3, "k": Bint[4]})
    n = fc.Tensor(as_backend_array(np.arange(6).reshape(2, 3) % 3), {"i": B2, "j": B3}, 3)
    for op in (ops.logaddexp, ops.add, ops.max):
        for names in ("i", "k", frozenset({"i", "k"}), frozenset({"i", "j", "k"})):
            _same_tensor(*_both(lambda t, op=op, names=names: t.reduce(op, names), x))
        _same_tensor(*_both(lambda t, op=op: t.reduce(op, "j"), n))  # integers: the rule's path
    expected = np.log(np.exp(data).sum(1))
    np.testing.assert_allclose(to_numpy(x.reduce(ops.logaddexp, "j").data), expected)


def test_user_rule_sees_and_overrides(backend):
    x = fc.Tensor(as_backend_array(np.ones((2, 3))), {"i": B2, "j": B3})
    mine = Interpretation("fast_ops_user", fallback=exact)

    @mine.register(fc.Binary, type(ops.add), fc.Tensor, fc.Tensor)
    def fast_ops_user_add(op, lhs, rhs):
        return fc.Number(7.0)

    @mine.register(fc.Subs, fc.Tensor, tuple)
    def fast_ops_user_subs(arg, subs):
        return fc.Number(8.0)

    with mine:
        assert (x + x) is fc.Number(7.0) and x(i=0) is fc.Number(8.0)
        assert isinstance(x * x, fc.Tensor)  # another op: the exact rule
    with lazy:
        assert type(x + x) is fc.Binary and type(x(i=0)) is fc.Subs
        assert type(x.reduce(ops.add, "i")) is fc.Reduce
