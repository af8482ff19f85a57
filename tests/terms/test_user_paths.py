"""A switching funsor user's programs (h67): ``Slice`` bounds that are no concrete integer
(a traced index under ``jax.jit``, a float) raise a ``TypeError`` naming the input and the
bound when the Slice is built (before: ``TracerBoolConversionError`` from a comparison deep
inside); integer-like bounds (numpy ints, concrete 0-d arrays) select as Python's slice."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import funsor_core as fc

A = np.arange(6.0).reshape(2, 3)


def test_slice_traced_start_raises_naming_it():
    f = fc.Tensor(jnp.asarray(A), {"i": fc.Bint[2], "j": fc.Bint[3]})
    fn = jax.jit(lambda s: f(j=fc.Slice("j", s, 3, 1, 3)).data)
    with pytest.raises(TypeError, match="Slice 'j': start must be a concrete integer"):
        fn(1)


def test_slice_float_bound_raises():
    with pytest.raises(TypeError, match="Slice 'i': stop must be a concrete integer, got 2.5"):
        fc.Slice("i", 0, 2.5, 1, 3)


@pytest.mark.parametrize("start", [np.int64(1), np.array(1), jnp.array(1)])
def test_slice_integer_like_bounds_select_as_python(start):
    f = fc.Tensor(A, {"i": fc.Bint[2], "j": fc.Bint[3]})
    out = f(j=fc.Slice("j", start, 3, 1, 3))
    assert out.inputs == {"i": fc.Bint[2], "j": fc.Bint[2]}
    np.testing.assert_array_equal(out.align(("i", "j")).data, A[:, 1:3])


# A funsor's .sum()/.max()/.argmax() reduce output dims (as in funsor); an input's name or
# an axis outside the output raises naming both and the .reduce spelling (before: "'>=' not
# supported between instances of 'str' and 'int'", or numpy's axis error from the kernel).
@pytest.mark.parametrize("call, kind, match", [
    (lambda f: f.argmax("j"), TypeError, "ops.argmax .* 'j' is no axis of its output Reals"),
    (lambda f: f.max("i"), TypeError, r"f.reduce\(ops.add, 'i'\)"),
    (lambda f: f.sum(1), ValueError, r"1 is no axis of its output Reals\[3\]"),
])
def test_output_reduction_with_a_name_or_bad_axis_raises(call, kind, match):
    with pytest.raises(kind, match=match):
        call(fc.Tensor(A, {"i": fc.Bint[2]}))


def test_output_reduction_axes_as_numpy():
    f = fc.Tensor(A, {"i": fc.Bint[2]})
    np.testing.assert_array_equal(f.argmax().data, A.argmax(-1))
    np.testing.assert_array_equal(f.sum(np.int64(0)).data, A.sum(-1))  # a numpy int axis
    np.testing.assert_array_equal(f.max(-1).data, A.max(-1))
    g = fc.Tensor(np.arange(12.0).reshape(2, 2, 3), {"i": fc.Bint[2]})
    np.testing.assert_array_equal(g.sum((0, 1)).data, np.arange(12.0).reshape(2, 6).sum(-1))
    np.testing.assert_array_equal(g.sum([1]).data, np.arange(12.0).reshape(2, 2, 3).sum(-1))


@pytest.mark.parametrize("dtype", ["foo", True, -2, 3.0])
def test_number_with_a_dtype_that_is_no_bound_raises(dtype):
    # was: TypeError "'<' not supported between instances of 'int' and 'str'" (for "foo")
    with pytest.raises(fc.terms.inputs.DomainError, match="a dtype is 'real' or an int bound"):
        fc.Number(1, dtype)


def test_number_with_a_numpy_int_bound_is_the_int_bound():
    n = fc.Number(3, np.int64(5))
    assert n.output == fc.Bint[5] and n is fc.Number(3, 5) and n.data == 3
