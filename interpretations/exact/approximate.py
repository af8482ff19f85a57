"""Exact rule for ``Approximate``: the exact value of an approximation is the model itself."""

from __future__ import annotations

from funsor_core.ops import AssociativeOp
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Funsor
from interpretations.exact import exact


# Approximate(op, model, guide, V) = model: exact approximates nothing.
@exact.register(Approximate, AssociativeOp, Funsor, Funsor, frozenset)
def exact_approximate_funsor(op, model, guide, approx_vars):
    return model
