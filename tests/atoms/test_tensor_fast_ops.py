"""The eager Tensor operators' one-frame programs (``funsor_core/atoms/tensor_fast_ops.py``,
issue #29 item 4) give the Tensor the general path gives: the oracle is the same expression
built under a user interpretation whose declining rule sits ahead of the exact one, which
turns the fast path off (and must see every term), on numpy and torch. Values are compared
bit for bit (the same kernel runs), and so are inputs, their order, output domain and dtype."""

import contextlib

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


def _same_result(fast, general):
    # A Tensor bit for bit, or (for a lazy answer) the same class and inputs.
    if type(general) is fc.Tensor:
        _same_tensor(fast, general)
    else:
        assert type(fast) is type(general)
        assert list(fast.inputs.items()) == list(general.inputs.items())


def test_subs_declines_what_it_does_not_cover(backend):
    # Everything but an int in range takes the general path: the same answer, or the same
    # error naming the variable and its domain.
    x = fc.Tensor(as_backend_array(np.arange(6.0).reshape(2, 3)), {"i": B2, "j": B3})
    index = fc.Tensor(as_backend_array(np.array([1, 0, 1])), {"m": B3}, 2)
    values = [True, np.int64(1), "k", fc.Variable("k", B2), index, 1]
    for value in values:
        _same_result(*_both(lambda t, v=value: t(i=v), x))
    _same_result(*_both(lambda t: t(1, 2), x))  # positional: the general path
    _same_result(*_both(lambda t: t(i=1, j=2), x))  # two names: the general path
    for bad in (-1, 2, 10**30, slice(0, 1)):
        with pytest.raises(Exception) as fast_error:
            x(i=bad)
        spy, _ = _spy()
        with spy, pytest.raises(Exception) as general_error:
            x(i=bad)
        assert type(fast_error.value) is type(general_error.value)
        assert str(fast_error.value) == str(general_error.value)
        assert "i=" in str(fast_error.value) and "Bint[2]" in str(fast_error.value)


def test_program_cache_follows_the_interpretation(backend):
    # The programs are cached per interpretation instance: a cached exact answer never runs
    # under lazy or a user rule, and the debug switch turns them off.
    from funsor_core.engine.fast_path import eager_program, eager_program_key
    from funsor_core.engine.interpreter import set_debug

    x = fc.Tensor(as_backend_array(np.ones((2, 3))), {"i": B2, "j": B3})
    pkey = eager_program_key("eager_subs_int", (fc.Subs, fc.Tensor, tuple))
    x(i=0), x + x  # noqa: B018  (fill the caches)
    assert eager_program(pkey).__name__ == "subs_tensor_int"
    with lazy:
        assert type(x(i=0)) is fc.Subs and type(x + x) is fc.Binary
    spy, seen = _spy()
    with spy:
        x(i=0), x + x  # noqa: B018
    assert [s[0] for s in seen] == ["subs", "binary"]
    set_debug(True)
    try:
        assert eager_program(pkey) is False
        _same_tensor(x(i=1), x(i=0))
    finally:
        set_debug(False)
    assert eager_program(pkey).__name__ == "subs_tensor_int"


def test_fast_results_pickle_and_cons(backend):
    import pickle

    x = fc.Tensor(as_backend_array(np.arange(6.0).reshape(2, 3)), {"i": B2, "j": B3})
    for fn in (lambda t: t(j=2), lambda t: t + t, lambda t: (t + t)(i=1)):
        fast, general = _both(fn, x)
        _same_tensor(pickle.loads(pickle.dumps(fast)), fast)
        # Neither result is in the cons table (both built as Tensor.make builds): a Tensor
        # of the same array and inputs is another object, cons-hashed from then on.
        again = fc.Tensor(fast.data, fast.inputs)
        assert again is not fast and again is fc.Tensor(fast.data, fast.inputs)
        assert fc.Tensor(general.data, general.inputs) is not general
        assert hash(fast) != hash(again)


def test_torch_autograd_same_as_general_path():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        grads = []
        for general in (False, True):
            a = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).requires_grad_()
            b = torch.ones(2, 3, dtype=torch.float64).requires_grad_()
            inputs = {"i": B2, "j": B3}
            spy, seen = _spy()
            with spy if general else contextlib.nullcontext():
                out = (fc.Tensor(a, inputs) * fc.Tensor(b, inputs))(i=1)
            assert bool(seen) == general
            out.data.sum().backward()
            grads.append((a.grad.numpy(), b.grad.numpy()))
        for fast, slow in zip(*grads):
            np.testing.assert_array_equal(fast, slow)
        np.testing.assert_array_equal(grads[0][1], [[0, 0, 0], [3, 4, 5]])  # d(a*b)/db = a
    finally:
        fc.set_backend("numpy")


def test_jax_eager_and_jit_same_as_general_path():
    # Traced arrays take the same one-frame programs (nothing reads their values); the
    # general path, forced by the declining rules, is the oracle, eagerly and under jit.
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        inputs = {"i": B2, "j": B3}
        rng = np.random.default_rng(5)
        a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))

        def f(a, b):
            x, y = fc.Tensor(a, inputs), fc.Tensor(b, inputs)
            return ((x + y)(i=1).data, (x * y)(j=2).data)

        def general(a, b):
            spy, seen = _spy()
            with spy:
                result = f(a, b)
            assert seen
            return result

        a, b = as_backend_array(a), as_backend_array(b)
        for fast, slow in ((f(a, b), general(a, b)), (jax.jit(f)(a, b), jax.jit(general)(a, b))):
            for u, v in zip(fast, slow):
                np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
        np.testing.assert_allclose(np.asarray(f(a, b)[0]), (np.asarray(a) + np.asarray(b))[1])
        fast = (fc.Tensor(a, inputs) + fc.Tensor(b, inputs))(i=0)
        leaves, tree = jax.tree_util.tree_flatten(fast)
        _same_tensor(jax.tree_util.tree_unflatten(tree, leaves), fast)
    finally:
        fc.set_backend("numpy")
