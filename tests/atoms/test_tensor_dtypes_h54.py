"""Tensor data that is no numbers, and Bint Tensors meeting real Numbers (h54).

1. numpy arrays of strings, bytes, Python objects, records or dates (and lists numpy reads
   so) built a Tensor: a TypeError now names the dtype at the constructor.
2. ``Tensor(ints, inputs, 3) + 1`` is Real, as in funsor 0.4.8, but held an int array, and
   the integer op wrapped around for small dtypes (uint8 data + 100). The data is cast to
   float before the op now. Oracle: numpy arithmetic on the values as floats, and logsumexp
   of them for the reduced sum.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops

I2 = {"i": fc.Bint[2]}


@pytest.mark.parametrize("data, dtype_text", [
    (np.array(["a", "b"]), r"<U1 \(strings\)"),
    (np.array([b"a", b"b"]), r"\|S1 \(bytes\)"),
    (np.array([1, "b"], dtype=object), r"object \(Python objects\)"),
    (np.array([1.0, 2.0], dtype=object), r"object \(Python objects\)"),
    (np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"), r"datetime64\[D\] \(dates\)"),
    (np.zeros(2, dtype=[("a", float)]), r"\[.*\] \(records\)"),
    (["a", "b"], r"<U1 \(strings\)"),
])
@pytest.mark.parametrize("dtype", ["real", 2])
def test_data_that_is_no_numbers_raises_naming_its_dtype(backend, data, dtype_text, dtype):
    match = rf"Tensor data of dtype {dtype_text} cannot be a Tensor: its data must be numbers"
    fc.Tensor(np.zeros(2), I2)  # a signature seen before: Tensor(x, I2) takes the fast path
    with pytest.raises(TypeError, match=match):
        fc.Tensor(data, I2) if dtype == "real" else fc.Tensor(data, I2, dtype)
    with pytest.raises(TypeError, match=match):
        fc.Tensor(data, [("i", fc.Bint[2])], dtype)  # its full path


def test_none_in_a_list_is_no_number():
    with pytest.raises(TypeError, match=r"Tensor data \[None, 1.0\] holds None"):
        fc.Tensor([None, 1.0], I2)


def test_numbers_in_lists_and_arrays_still_build(backend):
    t = fc.Tensor([0.5, 1.5], I2)
    np.testing.assert_allclose(np.asarray(t.data), [0.5, 1.5])
    assert fc.Tensor(np.array([True, False]), I2, 2).dtype == 2
    u = fc.Tensor(np.array([1, 0]), I2, 2)
    np.testing.assert_array_equal(np.asarray(u.data), [1, 0])


BINARY = [(lambda t: t + 1, lambda a: a + 1.0), (lambda t: 1 + t, lambda a: 1.0 + a),
          (lambda t: t * 2, lambda a: a * 2.0), (lambda t: t - 1, lambda a: a - 1.0),
          (lambda t: -t, lambda a: -a), (lambda t: t + np.int64(1), lambda a: a + 1.0),
          (lambda t: t % 3, lambda a: np.mod(a, 3.0))]


@pytest.mark.parametrize("fn, oracle", BINARY, ids=["add", "radd", "mul", "sub", "neg",
                                                    "np_int", "mod"])
def test_bint_with_a_real_number_is_real_with_float_data(backend, fn, oracle):
    a = np.array([1, 2])
    t = fc.Tensor(fc.Tensor(a).data, I2, 3)  # int data on the active backend
    r = fn(t)
    assert r.output == fc.Real
    assert ops.is_floating(r.data), r.data.dtype
    np.testing.assert_allclose(np.asarray(r.data), oracle(a.astype(float)))
    z = r.reduce(ops.logaddexp, "i")
    np.testing.assert_allclose(float(z.data), logsumexp(oracle(a.astype(float))), rtol=1e-6)


@pytest.mark.parametrize("fn, oracle", BINARY, ids=["add", "radd", "mul", "sub", "neg",
                                                    "np_int", "mod"])
def test_small_integer_dtypes_do_not_wrap_around(fn, oracle):
    a = np.array([200, 100], dtype=np.uint8)
    r = fn(fc.Tensor(a, I2, 256))
    np.testing.assert_allclose(r.data, oracle(a.astype(float)))
    big = fc.Tensor(a, I2, 256) + 100
    np.testing.assert_allclose(big.data, [300.0, 200.0])


def test_integer_ops_run_on_integers():
    y = fc.Tensor(np.array([1, 2, 3]), {"j": fc.Bint[3]}, 4)
    r = 3 << y
    np.testing.assert_array_equal(r.data, np.left_shift(3, [1, 2, 3]))


def test_bint_plus_bint_stays_bint():
    t = fc.Tensor(np.array([1, 2]), I2, 3)
    r = t + fc.Number(1, 3)
    assert r.output == fc.Bint[5]
    np.testing.assert_array_equal(r.data, [2, 3])


def test_bint_plus_one_under_jit():
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    try:
        f = jax.jit(lambda d: (fc.Tensor(d, I2, 3) + 1).reduce(ops.logaddexp, "i").data)
        np.testing.assert_allclose(float(f(jnp.array([1, 2]))), logsumexp([2.0, 3.0]),
                                   rtol=1e-6)
    finally:
        fc.set_backend("numpy")


def test_a_set_of_inputs_has_no_order():
    # Two names in a set were named in hash order: the dims could be swapped silently.
    data = np.arange(6.0).reshape(2, 3)
    with pytest.raises(TypeError, match=r"are a set, which has no order"):
        fc.Tensor(data, {("i", fc.Bint[2]), ("j", fc.Bint[3])})
    t = fc.Tensor(data, [("i", fc.Bint[2]), ("j", fc.Bint[3])])  # a list keeps the order
    assert float(t(i=1, j=0).data) == data[1, 0]
    assert fc.Tensor(data[0], {("j", fc.Bint[3])}).inputs == {"j": fc.Bint[3]}  # one: no order


def test_ragged_lists_name_the_data():
    with pytest.raises(ValueError, match=r"Tensor data \[\[1.0, 2.0\], \[3.0\]\] is ragged"):
        fc.Tensor([[1.0, 2.0], [3.0]])
