"""``to_funsor``/``array_to_funsor`` with arguments of the wrong kind: a TypeError naming the
argument and the fix, not an AttributeError from inside the conversion."""

from __future__ import annotations

import types

import numpy as np
import pytest

import funsor_core as fc


def test_dim_to_name_as_a_tuple_of_names_is_refused_with_the_fix():
    with pytest.raises(TypeError, match=r"dim_to_name must be a dict .* got \('i', 'j'\)"):
        fc.to_funsor(np.ones((2, 3)), fc.Real, ("i", "j"))


def test_inputs_dict_in_place_of_the_output_domain_is_refused():
    with pytest.raises(TypeError, match="output must be a domain .* got {'i': Bint"):
        fc.array_to_funsor(np.ones(2), {"i": fc.Bint[2]})


def test_any_mapping_names_dims():
    data = np.arange(6.0).reshape(2, 3)
    names = types.MappingProxyType({-2: "i", -1: "j"})
    t = fc.to_funsor(data, fc.Real, names)
    assert dict(t.inputs) == {"i": fc.Bint[2], "j": fc.Bint[3]}
    np.testing.assert_array_equal(t.align(("i", "j")).data, data)
