"""Declared functional parameters are checked when a compiled program runs (h71): a good 0/1
table gives np.einsum's number (the oracle), a noisy one raises naming the parameter eagerly
and gives NaN under ``jax.jit`` (before: a wrong number both ways)."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.compiled import FunctionalError
from funsor_core.algorithms.compiled.functional import table_is_functional
from interpretations import lazy

K = 3  # functional nodes x_k = g_k(u_k, u_k+1), observations over pairs of x's
RNG = np.random.default_rng(7)
US = [RNG.random(2) for _ in range(K + 1)]
OBS = [RNG.random((2, 2)) for _ in range(2 * K)]
GOOD = [np.eye(2)[RNG.integers(0, 2, (2, 2))] for _ in range(K)]
NOISY = [0.8 * t + 0.1 for t in GOOD]
PAIRS = [(k, (k + 1) % K) for k in range(K)] + [(k, (k + 2) % K) for k in range(K)]


def _program(log=False, to=np.asarray):
    us = [fc.Tensor(to(np.log(u) if log else u), {f"u{k}": fc.Bint[2]})
          for k, u in enumerate(US)]
    gs = [fc.Variable(f"g{k}", fc.Reals[2, 2, 2])[f"u{k}", f"u{k + 1}", f"x{k}"]
          for k in range(K)]
    obs = [fc.Tensor(to(np.log(o) if log else o), {f"x{a}": fc.Bint[2], f"x{b}": fc.Bint[2]})
           for o, (a, b) in zip(OBS, PAIRS)]
    names = frozenset([f"u{k}" for k in range(K + 1)] + [f"x{k}" for k in range(K)])
    sum_op, prod_op = (ops.logaddexp, ops.add) if log else (ops.add, ops.mul)
    with lazy:
        expr = fc.sum_product(sum_op, prod_op, us + gs + obs, names)
    return fc.compile(expr, functional={f"x{k}": g for k, g in enumerate(gs)},
                      method="jointree")


def _einsum(tables):
    letters = "abcd"  # u0..u3; x0..x2 are "xyz"
    eq = ",".join(letters[k] for k in range(K + 1)) + "," + ",".join(
        f"{letters[k]}{letters[k + 1]}{'xyz'[k]}" for k in range(K)) + "," + ",".join(
        "xyz"[a] + "xyz"[b] for a, b in PAIRS) + "->"
    return float(np.einsum(eq, *US, *tables, *OBS))


def _params(tables, log=False, to=np.array):  # copies: the tests write into some
    with np.errstate(divide="ignore"):
        return {f"g{k}": to(np.log(t) if log else t) for k, t in enumerate(tables)}


def test_declared_parameters_checked_numpy_both_semirings():
    for log in (False, True):
        program = _program(log)
        got = float(program(**_params(GOOD, log)))
        assert np.isclose(np.exp(got) if log else got, _einsum(GOOD), rtol=1e-12)
        arrays = [_params(GOOD, log)[v] if kind == "param" else v
                  for kind, v in program._leaves]
        assert got == float(program.plan.run_arrays(arrays, log))  # the unchecked run, bit for bit
        # The trusted answer to the noisy tables was wrong, which is why it is refused now.
        wrong = program.plan.run_arrays([_params(NOISY, log)[v] if kind == "param" else v
                                         for kind, v in program._leaves], log)
        wrong = float(np.exp(wrong) if log else wrong)
        assert not np.isclose(wrong, _einsum(NOISY), rtol=1e-3)
        with pytest.raises(FunctionalError, match=r"parameter 'g0'.*give 'x0'.*u0.*u1"):
            program(**_params(NOISY, log))


def test_writeable_numpy_changed_in_place_is_checked_again_readonly_once():
    program = _program()
    tables = _params(GOOD)
    assert np.isclose(float(program(**tables)), _einsum(GOOD))
    tables["g1"] *= 0.5  # the same object, now not a function table
    with pytest.raises(FunctionalError, match=r"parameter 'g1'"):
        program(**tables)
    frozen = _params(GOOD)
    for t in frozen.values():
        t.flags.writeable = False
    view = frozen["g2"].view()  # a read-only view of a read-only array: stamped too
    assert np.isclose(float(program(**{**frozen, "g2": view})), _einsum(GOOD))
    assert set(program._seen) == {slot[0] for slot in program._slots}
    loose = _params(GOOD)["g0"]
    readonly_view = loose.view()
    readonly_view.flags.writeable = False  # its base can still change: not stamped
    program(**{**frozen, "g0": readonly_view})
    loose *= 0.5
    with pytest.raises(FunctionalError, match=r"parameter 'g0'"):
        program(**{**frozen, "g0": readonly_view})


def test_declared_parameters_checked_torch_and_in_place_writes():
    torch = pytest.importorskip("torch")
    program = _program(to=torch.tensor)
    tables = _params(GOOD, to=torch.tensor)
    assert np.isclose(float(program(**tables)), _einsum(GOOD), rtol=1e-12)
    with torch.no_grad():
        tables["g2"].mul_(0.5)  # bumps the version: checked again
    with pytest.raises(FunctionalError, match=r"parameter 'g2'"):
        program(**tables)
    with pytest.raises(FunctionalError, match=r"parameter 'g0'"):
        program(**_params(NOISY, to=lambda a: torch.tensor(a, requires_grad=True)))


def test_declared_parameters_under_jit_nan_unless_functional():
    jax = pytest.importorskip("jax")
    u, w = US[0], OBS[0]  # a small program: one trace, one compile
    g = fc.Variable("g", fc.Reals[2, 2])["u", "x"]
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, [fc.Tensor(u, {"u": fc.Bint[2]}), g,
                                                 fc.Tensor(w, {"u": fc.Bint[2], "x": fc.Bint[2]})],
                              frozenset({"u", "x"}))
    program = fc.compile(expr, functional={"x": g}, method="jointree")
    run = jax.jit(lambda table: program(g=table))
    good, noisy = GOOD[0][0], NOISY[0][0]
    assert np.isclose(float(run(jax.numpy.asarray(good))), np.einsum("u,ux,ux->", u, good, w),
                      rtol=1e-6)
    assert np.isnan(float(run(jax.numpy.asarray(noisy))))
    # a concrete table closed over inside jit: its check is staged too (h78; was a
    # TracerBoolConversionError: the eager check of a concrete jax array is array ops)
    tables = [jax.numpy.asarray(t) for t in (good, noisy)]
    ok, bad = jax.jit(lambda: [program(g=t) for t in tables])()
    assert np.isclose(float(ok), np.einsum("u,ux,ux->", u, good, w), rtol=1e-6)
    assert np.isnan(float(bad))
    with pytest.raises(FunctionalError, match=r"parameter 'g'.*'x'"):  # eager jax: concrete
        program(g=jax.numpy.asarray(noisy))


def _by_rows(table, axis, log):
    # The definition, one row at a time: entries in {0, 1}, exactly one 1.
    one, zero = (0.0, -np.inf) if log else (1.0, 0.0)
    rows = np.moveaxis(table, axis, -1).reshape(-1, table.shape[axis])
    return all(set(r.tolist()) <= {one, zero} and int((r == one).sum()) == 1 for r in rows)


def test_table_is_functional_against_row_by_row_definition():
    rng = np.random.default_rng(3)
    cases = [np.eye(3)[rng.integers(0, 3, (2, 2))], np.array([[2.0, -1.0], [0.0, 1.0]]),
             np.array([[1.0, 0.0], [np.nan, 1.0]]), np.array([[1.0, 1.0], [0.0, 0.0]]),
             np.array([[0.5, 0.5], [0.0, 1.0]]), np.zeros((2, 2)), np.eye(2)]
    for table in cases:
        for axis in range(table.ndim):
            for log in (False, True):
                with np.errstate(divide="ignore", invalid="ignore"):
                    t = np.log(table) if log else table
                assert table_is_functional(t, axis, log) == _by_rows(t, axis, log)


def test_declared_parameter_inside_a_plate_checked():
    # sum_a f(a) prod_p sum_c h(p, a, c) k(p, c), h declared a function giving c.
    rng = np.random.default_rng(5)
    f, k = rng.random(2), rng.random((3, 2))
    good = np.eye(2)[rng.integers(0, 2, (3, 2))]
    h = fc.Variable("h", fc.Reals[3, 2, 2])["p", "a", "c"]
    terms = [fc.Variable("f", fc.Reals[2])["a"], h, fc.Variable("k", fc.Reals[3, 2])["p", "c"]]
    with lazy:
        expr = fc.sum_product(ops.add, ops.mul, terms, frozenset("acp"), frozenset("p"))
    program = fc.compile(expr, functional={"c": h})
    by_hand = sum(f[a] * np.prod(np.einsum("pc,pc->p", good[:, a], k)) for a in range(2))
    assert np.isclose(float(program(f=f, h=good, k=k)), by_hand, rtol=1e-12)
    with pytest.raises(FunctionalError, match=r"parameter 'h'.*give 'c'"):
        program(f=f, h=0.5 * good + 0.25, k=k)
