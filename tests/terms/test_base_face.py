"""``funsor_core.terms.base`` is the historical path of the term language's core: every public
name of the modules it was split into (funsor, leaves, generic, conversion, inputs) still
resolves there, to the same object, and Funsor has the methods those modules install."""

import importlib

import pytest

from funsor_core.terms import base

PARTS = ("funsor", "leaves", "generic", "conversion")


@pytest.mark.parametrize("part", PARTS)
def test_base_re_exports_every_public_name(part):
    module = importlib.import_module(f"funsor_core.terms.{part}")
    assert module.__all__
    assert {n: getattr(base, n, None) for n in module.__all__} == {
        n: getattr(module, n) for n in module.__all__}


def test_base_all_resolves():
    assert all(hasattr(base, n) for n in base.__all__)


def test_funsor_has_its_term_building_methods():
    # installed by terms/methods.py (reduce, align, substitution, indexing, input_vars)
    for name in ("__call__", "reduce", "align", "__getitem__", "input_vars"):
        assert name in vars(base.Funsor), name
