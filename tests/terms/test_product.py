"""``Product[...]`` domains and ``Tuple`` terms: tuple-valued funsors."""

import pickle

import pytest

import funsor_core as fc
from funsor_core.domains import Bint, Real, Reals
from funsor_core.terms.product import Product, ProductDomain, Tuple, tuple_to_funsor
from funsor_core.testing import random_tensor
from interpretations import lazy


def test_product_domain_is_interned_and_round_trips():
    d = Product[Bint[3], Real, Reals[2]]
    assert d is Product[Bint[3], Real, Reals[2]]
    assert d.__args__ == (Bint[3], Real, Reals[2])
    assert d.shape == (3,)
    assert eval(repr(d)) is d
    assert pickle.loads(pickle.dumps(d)) is d
    assert Product[Real, Product[Real, Real]].__args__[1] is Product[Real, Real]


def test_product_rejects_non_domains():
    with pytest.raises(TypeError, match="takes domains"):
        Product[Real, 3]


@pytest.mark.parametrize("interp", [fc.reflect, lazy], ids=["reflect", "lazy"])
def test_tuple_inputs_output_index_and_unpack(interp):
    x = fc.Number(1, 3)
    y = fc.Number(2.5)
    z = random_tensor({"i": Bint[2]})
    xyz = Tuple((x, y, z))
    assert xyz.inputs == {"i": Bint[2]}
    assert xyz.output is Product[Bint[3], Real, Real]
    with interp:  # indexing is structural: the same under every interpretation
        assert xyz[0] is x and xyz[1] is y and xyz[2] is z and xyz[-1] is z
        assert xyz[:] is xyz
        assert xyz[1:] is Tuple((y, z))
        assert xyz[::2] is Tuple((x, z))
    a, b, c = xyz
    assert (a, b, c) == (x, y, z) and len(xyz) == 3


def test_tuple_substitution_reaches_parts():
    z = random_tensor({"i": Bint[2]})
    t = Tuple((z, fc.Variable("x", Real)))
    s = t(i=1, x=0.5)
    assert isinstance(s, Tuple) and not s.inputs
    assert s[0].data == z.data[1] and s[1].data == 0.5


def test_tuple_domain_clash_names_the_input():
    with pytest.raises(fc.DomainError, match="'i'"):
        Tuple((random_tensor({"i": Bint[2]}), random_tensor({"i": Bint[3]})))


def test_tuple_to_funsor():
    t = tuple_to_funsor((1.0, 2), Product[Real, Bint[3]])
    assert t.output is Product[Real, Bint[3]] and t[1] is fc.Number(2, 3)
    with pytest.raises(TypeError, match="Product"):
        tuple_to_funsor((1.0,), Real)
    assert isinstance(Product[Real], ProductDomain)
