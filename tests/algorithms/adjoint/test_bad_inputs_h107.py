"""A careless new user's adjoint calls (h107): ``adjoint(ops.logaddexp, ops.add, array)`` and
``tape.adjoint(..., array)`` failed with "'numpy.ndarray' object has no attribute 'inputs'".
Oracles: the errors' text, and numpy for the marginals the right call still gives."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import AdjointTape, adjoint
from interpretations import lazy


def test_adjoint_of_an_array_names_the_call():
    with pytest.raises(TypeError, match=r"forward_backward: the expression must be a funsor .*"
                                        r"got ndarray"):
        adjoint(ops.logaddexp, ops.add, np.ones(2))
    with pytest.raises(TypeError, match=r"forward_backward: .*got float"):
        fc.forward_backward(ops.logaddexp, ops.add, 1.0)
    with AdjointTape() as tape:
        pass
    with pytest.raises(TypeError, match=r"AdjointTape.adjoint: the expression must be a funsor"):
        tape.adjoint(ops.logaddexp, ops.add, np.ones(2))


def test_adjoint_of_a_lazy_reduction_still_gives_the_marginals():
    p = np.array([[1.0, 2.0], [3.0, 4.0]])
    f = fc.Tensor(np.log(p), {"a": fc.Bint[2], "b": fc.Bint[2]})
    with lazy:
        z = f.reduce(ops.logaddexp, frozenset("ab"))
    adj = adjoint(ops.logaddexp, ops.add, z)
    np.testing.assert_allclose(np.exp((adj[f] + f).data - np.log(p.sum())), p / p.sum())
