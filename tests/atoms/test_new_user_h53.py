"""A hostile new user's mistakes with Tensors (h53): integer data outside its ``Bint[n]``
bound selects nothing silently (it raises where it indexes); ``Tensor(data, "i")`` failed
with "not enough values to unpack"; Stack and Cat parts whose shared input has two domains
failed in numpy's broadcasting; ``x[np.array(1.5)]`` picked entry 1 and ``x[traced int]`` under
``jax.jit`` failed to trace. Oracles: numpy indexing and the errors' text."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError
from funsor_core.testing import assert_close

B2, B3 = fc.Bint[2], fc.Bint[3]


def _array(backend, x):
    if backend == "torch":
        return pytest.importorskip("torch").tensor(x)
    if backend == "jax":
        return pytest.importorskip("jax.numpy").array(x)
    return np.array(x)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_integer_data_outside_its_bound_raises_where_it_selects(backend):
    # Such data builds, as in funsor 0.4.8 (NumPyro's subsample indices exceed their bound);
    # used to select an entry of a Bint input it raises, naming the input and the span.
    idx = fc.Tensor(_array(backend, [0, 5, 1]), {"k": B3}, 2)
    np.testing.assert_array_equal(np.asarray(idx.data), [0, 5, 1])
    table = fc.Tensor(_array(backend, [10.0, 20.0]), {"i": B2})
    with pytest.raises(DomainError, match=r"'i' of Bint\[2\]: index values span \[0, 5\]"):
        table(i=idx)
    with pytest.raises(DomainError, match=r"span \[-1, 1\]"):
        table(i=fc.Tensor(_array(backend, [0, -1, 1]), {"k": B3}, 2))
    ok = table(i=fc.Tensor(_array(backend, [0, 1, 1]), {"k": B3}, 2))
    np.testing.assert_array_equal(np.asarray(ok.data), np.array([10.0, 20.0])[[0, 1, 1]])


def test_traced_integer_data_is_not_read_and_gathers_nan_out_of_range():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    table = fc.Tensor(jnp.array([10.0, 20.0]), {"i": B2})

    @jax.jit
    def gather(idx):  # idx is traced: its Bint[2] bound cannot be checked while building
        return table(i=fc.Tensor(idx, {"k": B3}, 2)).data

    out = np.asarray(gather(jnp.array([1, 0, 5])))
    assert_close(out[:2], np.array([10.0, 20.0])[[1, 0]])
    assert np.isnan(out[2])  # 5 is no state of Bint[2]: NaN, not jax's clamp to 20


def test_inputs_given_as_a_bare_name_raise_naming_the_form():
    with pytest.raises(TypeError, match=r"Tensor inputs must map names to Bint domains, e\.g\. "
                                        r"\{'i': Bint\[2\]\} or \[\('i', Bint\[2\]\)\], got 'i'"):
        fc.Tensor(np.zeros(2), "i")
    t = fc.Tensor(np.arange(2.0), [["i", B2]])  # pairs as lists still name the inputs
    assert t.inputs == {"i": B2}
    assert_close(t(i=1).data, np.arange(2.0)[1])


def test_stack_parts_with_one_name_of_two_domains_raise_naming_parts():
    a = fc.Tensor(np.zeros(2), {"i": B2})
    b = fc.Tensor(np.zeros(3), {"i": B3})
    with pytest.raises(DomainError, match=r"cannot stack: input 'i' is Bint\[2\] in part 0 but "
                                          r"Bint\[3\] in part 1"):
        fc.Stack("s", (a, b))
    c = fc.Tensor(np.array([5.0, 6.0]), {"i": B2})
    s = fc.Stack("s", (fc.Tensor(np.array([1.0, 2.0]), {"i": B2}), c))
    assert_close(s.align(("s", "i")).data, np.array([[1.0, 2.0], [5.0, 6.0]]))


def test_cat_parts_with_one_name_of_two_domains_raise_naming_parts():
    a = fc.Tensor(np.zeros((2, 2)), {"c": B2, "j": B2})
    b = fc.Tensor(np.zeros((3, 3)), {"c": B3, "j": B3})
    with pytest.raises(DomainError, match=r"cannot concatenate: input 'j' is Bint\[2\] in "
                                          r"part 0 but Bint\[3\] in part 1"):
        fc.Cat("c", (a, b))
    x, y = np.arange(4.0).reshape(2, 2), np.arange(6.0).reshape(3, 2)  # sizes of c may differ
    got = fc.Cat("c", (fc.Tensor(x, {"c": B2, "j": B2}), fc.Tensor(y, {"c": B3, "j": B2})))
    assert_close(got.align(("c", "j")).data, np.concatenate([x, y]))


def test_output_indexed_by_a_0d_float_array_raises_instead_of_truncating():
    t = fc.Tensor(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match=r"indexed by integers, got a 0-d array of dtype float"):
        t[np.array(1.5)]
    assert_close(t[np.array(1)].data, np.array([1.0, 2.0, 3.0])[1])


def test_output_indexed_by_a_traced_int_under_jit_gathers_or_gives_nan():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    data = np.array([1.0, 2.0, 3.0])
    t = fc.Tensor(jnp.array(data))
    pick = jax.jit(lambda k: t[k].data)
    assert_close(np.asarray(pick(jnp.array(2))), data[2])
    assert np.isnan(np.asarray(pick(jnp.array(7))))  # jax alone clamps 7 to 2: 3.0
