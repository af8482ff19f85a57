"""A careless new user's Tensor and Delta calls (h107): ``Tensor(None)`` was nan on numpy (and
a backend's own message on torch and jax), ``Tensor("abc")`` numpy's "could not convert
string to float", ``Tensor(tensor_funsor)`` a late failure; ``Delta(("x", point))`` (one pair
where a tuple of pairs is meant) "not enough values to unpack"; ``f.align(("i", "i"))`` a
silent success. Oracles: the errors' text, and numpy for the calls that must keep working."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc

B2 = fc.Bint[2]


@pytest.mark.parametrize("data, kind", [(None, "NoneType"), ("abc", "str"), (b"ab", "bytes"),
                                        ({"a": 1.0}, "dict"), ({1.0, 2.0}, "set")])
def test_tensor_data_that_is_no_array_or_number_raises(backend, data, kind):
    with pytest.raises(TypeError, match=rf"Tensor data must be an array or a number, got {kind}"):
        fc.Tensor(data)
    with pytest.raises(TypeError, match=f"got {kind}"):
        fc.Tensor(data, {"i": B2})


def test_tensor_of_a_funsor_names_its_inputs(backend):
    f = fc.Tensor(np.zeros(2), {"i": B2}) if backend == "numpy" else fc.Tensor([0.0, 1.0],
                                                                               {"i": B2})
    with pytest.raises(TypeError, match=r"got a funsor \(Tensor with inputs \{'i': Bint\[2\]\}"):
        fc.Tensor(f, {"i": B2})


@pytest.mark.parametrize("data", [1.5, 2, True, [0.5, 1.5]])
def test_numbers_and_lists_still_make_tensors(backend, data):
    t = fc.Tensor(data, {"i": B2}) if isinstance(data, list) else fc.Tensor(data)
    np.testing.assert_allclose(np.asarray(t.data, dtype=float), np.asarray(data, dtype=float))


@pytest.mark.parametrize("terms", [("x", np.zeros(())), (("x", (np.zeros(()),)),),
                                   ("x",), (("x", (np.zeros(()), 0.0, 1.0)),)])
def test_delta_with_malformed_terms_names_the_form(terms):
    with pytest.raises(TypeError, match=r"Delta\(terms\) takes a tuple of \(name, \(point, "
                                        r"log_density\)\) pairs.*got "):
        fc.Delta(terms)


def test_delta_terms_form_still_works():
    d = fc.Delta((("x", (fc.Tensor(np.array(1.5)), fc.Tensor(np.array(-0.5)))),))
    np.testing.assert_allclose(float(d(x=1.5).data), -0.5)


def test_align_by_a_repeated_name_raises():
    f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": B2, "j": fc.Bint[3]})
    with pytest.raises(ValueError, match=r"cannot align by \['i', 'i', 'j'\]: a name appears "
                                         "twice"):
        f.align(("i", "i", "j"))
    np.testing.assert_array_equal(f.align(("j", "i")).data, np.arange(6.0).reshape(2, 3).T)
