"""Functional factors: the check, the identities of Darwiche (2020) Theorems 3-4 and
Corollary 1 on random functional tables (brute force by broadcasting), and the negative
control: a non-functional table breaks the identities and is refused by the check."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core.algorithms.compiled import (
    Functional,
    FunctionalError,
    eliminate_functional,
    index_table,
)

from .networks import brute_force

U, X, A, B = 3, 4, 2, 3  # f(u, x) functional for x; g over (u, x, a), h over (u, x, b)


def _tables(rng, functional=True):
    f = np.zeros((U, X))
    f[np.arange(U), rng.integers(0, X, size=U)] = 1.0
    if not functional:
        f[0] = 0.0
        f[0, :2] = 1.0  # two ones for u = 0: 0/1, but not a function
    g = rng.random((U, X, A)) * f[:, :, None]  # G contains f: zero wherever f is
    h = rng.random((U, X, B)) * f[:, :, None]
    return f, g, h


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_theorems_on_random_functional_tables(seed):
    f, g, h = _tables(np.random.default_rng(seed))
    gh = g[:, :, :, None] * h[:, :, None, :]  # (u, x, a, b)
    # Theorem 4: f * G = G.
    assert np.array_equal(f[:, :, None] * g, g)
    # Theorem 3: G * H = G * sum_X H.
    assert np.allclose(gh, g[:, :, :, None] * h.sum(1)[:, None, None, :], rtol=0, atol=1e-15)
    # Corollary 1: sum_X G * H = (sum_X G)(sum_X H).
    assert np.allclose(gh.sum(1), g.sum(1)[:, :, None] * h.sum(1)[:, None, :],
                       rtol=0, atol=1e-15)


def test_negative_control_identity_fails_and_check_refuses():
    f, g, h = _tables(np.random.default_rng(0), functional=False)
    gh = g[:, :, :, None] * h[:, :, None, :]
    assert not np.allclose(gh.sum(1), g.sum(1)[:, :, None] * h.sum(1)[:, None, :])
    t = fc.Tensor(f, {"u": fc.Bint[U], "x": fc.Bint[X]})
    with pytest.raises(FunctionalError, match=r"'x'.*at \{'u': 0\}, 2 entries are 1"):
        fc.functional(t, "x")
    # Declared anyway (bypassing the check), the planner's rewrites go wrong: the check is
    # what keeps them exact.
    factors = [fc.Tensor(np.ones(U) / U, {"u": fc.Bint[U]}), Functional(t, "x"),
               fc.Tensor(rng_table(1, (X, A)), {"x": fc.Bint[X], "a": fc.Bint[A]}),
               fc.Tensor(rng_table(2, (X, B)), {"x": fc.Bint[X], "b": fc.Bint[B]})]
    cards = {"u": U, "x": X, "a": A, "b": B}
    plan = fc.plan(factors, frozenset(cards), method="jointree")
    assert plan.stats()["leaves"] == 5  # the functional factor was replicated
    assert not np.allclose(plan(factors).data, brute_force(factors, cards))


def rng_table(seed, shape):
    return np.random.default_rng(seed).random(shape)


@pytest.mark.parametrize("data, why", [
    (np.array([[0.0, 0.5], [1.0, 0.0]]), r"entry 0.5 is neither 0.0 nor 1.0"),
    (np.array([[0.0, 0.0], [1.0, 0.0]]), r"at \{'u': 0\}, 0 entries are 1"),
])
def test_functional_check_names_variable_and_assignment(data, why):
    t = fc.Tensor(data, {"u": fc.Bint[2], "x": fc.Bint[2]})
    with pytest.raises(FunctionalError, match=r"out='x'.*" + why):
        fc.functional(t, "x")


def test_functional_log_space_and_domains():
    t = fc.Tensor(np.where(np.eye(3)[[2, 0, 1]] > 0, 0.0, -np.inf),
                  {"u": fc.Bint[3], "x": fc.Bint[3]})
    assert fc.functional(t, "x", log=True).parents == ("u",)
    with pytest.raises(FunctionalError, match="neither 0.0 nor 1.0"):
        fc.functional(t, "x")  # a log-space table read as linear
    with pytest.raises(FunctionalError, match="'y' is not an input"):
        fc.functional(t, "y")
    with pytest.raises(FunctionalError, match="must be scalar valued"):
        fc.functional(fc.Tensor(np.zeros((2, 3)), {"u": fc.Bint[2]}), "u")


def test_symbolic_factor_is_trusted():
    f = fc.Variable("f", fc.Reals[2, 3])["u", "x"]
    declared = fc.functional(f, "x")
    assert declared.out == "x" and declared.parents == ("u",)


def test_eliminate_functional_gather_agrees_with_sum_product():
    rng = np.random.default_rng(3)
    f, _, _ = _tables(rng)
    t = fc.functional(fc.Tensor(f, {"u": fc.Bint[U], "x": fc.Bint[X]}), "x")
    h = fc.Tensor(rng.random((X, A)), {"x": fc.Bint[X], "a": fc.Bint[A]})
    expected = np.einsum("ux,xa->ua", f, h.data)
    assert np.array_equal(index_table(t).data, f.argmax(1))
    actual = eliminate_functional(h, t).align(("u", "a"))
    assert np.allclose(actual.data, expected, rtol=0, atol=1e-15)
