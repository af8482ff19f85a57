"""A careless new user's ``@fc.function`` calls (h107): a function returning a scalar for a
declared ``Reals[2]`` output had the scalar copied into both entries (a wrong value), other
wrong shapes failed in numpy's broadcasting ("operands could not be broadcast together with
remapped shapes"); ``@fc.function(Reals[2])`` on ``f(x)`` (the output domain only) called
``f()`` at once ("missing 1 required positional argument"). Oracles: the errors' text, and
numpy on the same arrays for the functions that keep working. ``to_funsor(x, Real, {-1: "i",
-2: "i"})`` said "Tensor inputs repeat a name", with no word of dim_to_name."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.terms import DomainError


def test_a_result_of_the_wrong_shape_names_function_output_and_shape(backend):
    @fc.function(fc.Reals[2], fc.Reals[2])
    def total(x):
        return x.sum(-1)  # a scalar per batch entry, not Reals[2]

    x = fc.Tensor(np.arange(8.0).reshape(4, 2).tolist(), {"i": fc.Bint[4]})
    with pytest.raises(ValueError, match=r"@function total\(\) returned an array of shape \(4,\), "
                                         r"but its declared output Reals\[2\] over the batch "
                                         r"inputs \{'i': Bint\[4\]\} needs shape \(4, 2\)"):
        total(x)
    with pytest.raises(ValueError, match=r"returned an array of shape \(\), .* needs shape \(2,\)"):
        total(fc.Tensor([1.0, 2.0]))


def test_a_result_that_broadcasts_over_the_batch_still_works(backend):
    @fc.function(fc.Reals[2], fc.Reals[2])
    def const(x):  # ignores its argument's batch dims: one row for every entry
        return x[..., :1, :] * 0 + 1 if len(x.shape) > 1 else x * 0 + 1

    out = const(fc.Tensor(np.arange(6.0).reshape(3, 2).tolist(), {"i": fc.Bint[3]}))
    np.testing.assert_allclose(np.asarray(out.data), np.ones((3, 2)))


def test_output_domain_only_names_the_parameters_without_domains():
    with pytest.raises(TypeError, match=r"@function on f\(\): got 0 input domain\(s\) \[\] and "
                                        r"the output Reals\[2\], so the parameters \['x'\] have "
                                        "no domain"):
        @fc.function(fc.Reals[2])
        def f(x):
            return x

    @fc.function(fc.Reals[2], fc.Real)
    def g(x, scale=2.0):  # a parameter with a default needs no domain
        return scale * x.sum(-1)

    np.testing.assert_allclose(g(np.array([1.0, 2.0])).item(), 6.0)


def test_dim_to_name_naming_two_dims_alike_says_so(backend):
    # (was "Tensor inputs repeat a name", with no word of dim_to_name)
    data = fc.Tensor(np.zeros((2, 3)).tolist()).data  # an array of the active backend
    with pytest.raises(DomainError, match=r"dim_to_name=\{-1: 'i', -2: 'i'\} names the batch "
                                          r"dims of shape \(2, 3\) with \['i'\] twice"):
        fc.to_funsor(data, fc.Real, {-1: "i", -2: "i"})
    ok = fc.to_funsor(data, fc.Real, {-1: "j", -2: "i"})
    assert dict(ok.inputs) == {"i": fc.Bint[2], "j": fc.Bint[3]}
