"""Cat of Gaussians (and of Gaussian + Tensor sums) along a Bint input, then substitutions of
ints, slices, Tensor indices, Variables and reals: one Gaussian, so every substitution
evaluates (issue 27, item 10: ``Cat("u", (g1, g2))(u=2, z=1.0)`` stayed a lazy Subs).

Oracle: each part's density in numpy from its own arrays, -0.5 ||w - x S||^2 (+ its Tensor),
read at the part and local index that the concatenated index falls in.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.testing import random_gaussian, random_tensor
from tests.backend_values import values_on_every_backend

SIZES = (2, 3)


def to_np(x):
    return np.asarray(ops.to_numpy(ops.detach(x)))


def _parts(kind: str, seed: int = 0):
    # Part 0 over (u, j, z, y); part 1 lacks y and j (zero rows, broadcast), and has its own
    # rank, so the Cat pads ranks and embeds coordinates.
    np.random.seed(seed)
    g0 = random_gaussian({"u": fc.Bint[2], "j": fc.Bint[2], "z": fc.Real, "y": fc.Real})
    g1 = random_gaussian({"u": fc.Bint[3], "z": fc.Real})
    if kind == "gaussian":
        return g0, g1
    return g0 + random_tensor({"u": fc.Bint[2]}), g1 + random_tensor({"u": fc.Bint[3]})


def _oracle(parts, u: int, j: int, z: float, y: float) -> float:
    # The density of the concatenation at (u, j, z, y), from the parts' own arrays.
    k, local = (0, u) if u < SIZES[0] else (1, u - SIZES[0])
    part = parts[k]
    terms = part.terms if isinstance(part, fc.Contraction) else (part,)
    total = 0.0
    for t in terms:
        if isinstance(t, fc.Gaussian):
            point = np.array([z, y]) if "y" in t.inputs else np.array([z])
            index = (local, j) if "j" in t.inputs else (local,)
            w, s = to_np(t.white_vec)[index], to_np(t.prec_sqrt)[index]
            total += -0.5 * np.sum((w - point @ s) ** 2)
        else:
            total += to_np(t.data)[local]
    return total


def _check(result, parts, where):
    # result is an atom (no Cat, no Subs); read it at every remaining (u, j) and at z, y.
    assert not isinstance(result, (fc.Cat, fc.Subs)), type(result).__name__
    for u, j in where:
        values = {k: v for k, v in (("j", j), ("z", 0.7), ("y", -0.4)) if k in result.inputs}
        got = result(**values)
        got = float(to_np(got.data)[u if "u" in got.inputs else ()] if got.inputs else got.data)
        assert np.isclose(got, _oracle(parts, u, j, 0.7, -0.4)), (u, j)


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_plus_tensor"])
def test_cat_gaussians_is_one_atom(kind):
    parts = _parts(kind)
    cat = fc.Cat("u", parts)
    assert not isinstance(cat, fc.Cat)
    assert cat.inputs == {"u": fc.Bint[5], "j": fc.Bint[2], "z": fc.Real, "y": fc.Real}
    _check(cat, parts, [(u, j) for u in range(5) for j in range(2)])


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_plus_tensor"])
@pytest.mark.parametrize("u", [0, 1, 2, 4])
def test_cat_gaussians_then_int_and_real(kind, u):
    parts = _parts(kind)
    result = fc.Cat("u", parts)(u=u, z=0.7, y=-0.4, j=1)
    assert isinstance(result, fc.Tensor) and not result.inputs
    assert np.isclose(float(to_np(result.data)), _oracle(parts, u, 1, 0.7, -0.4))
    part_only = fc.Cat("u", parts)(u=u)
    assert not isinstance(part_only, (fc.Cat, fc.Subs))


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_plus_tensor"])
@pytest.mark.parametrize("start, stop, step", [(0, 5, 1), (1, 4, 1), (0, 5, 2), (1, 5, 3)])
def test_cat_gaussians_then_slice(kind, start, stop, step):
    parts = _parts(kind)
    index = fc.Slice("u", start, stop, step, 5)
    result = fc.Cat("u", parts)(u=index)
    picked = list(range(start, stop, step))
    assert result.inputs["u"] == fc.Bint[len(picked)]
    renamed = [(k, j) for k in range(len(picked)) for j in range(2)]
    for k, j in renamed:  # position k of the slice is u = picked[k]
        got = result(u=k, j=j, z=0.7, y=-0.4)
        assert np.isclose(float(to_np(got.data)), _oracle(parts, picked[k], j, 0.7, -0.4))


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_plus_tensor"])
def test_cat_gaussians_then_tensor_index_and_variable(kind):
    parts = _parts(kind)
    picked = [4, 0, 2]
    index = fc.Tensor(np.array(picked), {"k": fc.Bint[3]}, 5)
    result = fc.Cat("u", parts)(u=index)
    assert not isinstance(result, (fc.Cat, fc.Subs))
    for k, u in enumerate(picked):
        got = result(k=k, j=0, z=0.7, y=-0.4)
        assert np.isclose(float(to_np(got.data)), _oracle(parts, u, 0, 0.7, -0.4))
    renamed = fc.Cat("u", parts)(u=fc.Variable("v", fc.Bint[5]))
    assert not isinstance(renamed, (fc.Cat, fc.Subs)) and "v" in renamed.inputs
    got = renamed(v=3, j=1, z=0.7, y=-0.4)
    assert np.isclose(float(to_np(got.data)), _oracle(parts, 3, 1, 0.7, -0.4))


def test_cat_gaussians_new_name_and_real_only():
    parts = _parts("gaussian")
    cat = fc.Cat("w", parts, "u")  # concatenated input named apart from the parts' index
    assert set(cat.inputs) == {"w", "j", "z", "y"}
    conditioned = cat(z=0.7, y=-0.4)
    assert isinstance(conditioned, fc.Tensor)
    for w in range(5):
        got = float(to_np(conditioned(w=w, j=1).data))
        assert np.isclose(got, _oracle(parts, w, 1, 0.7, -0.4))


def test_cat_gaussians_on_every_backend_and_under_jit():
    # The repro of issue 27 item 10, as a function of the parts' arrays.
    np.random.seed(3)
    g0 = random_gaussian({"u": fc.Bint[2], "z": fc.Real})
    g1 = random_gaussian({"u": fc.Bint[3], "z": fc.Real})
    arrays = [to_np(a) for a in (g0.white_vec, g0.prec_sqrt, g1.white_vec, g1.prec_sqrt)]

    def fn(w0, s0, w1, s1):
        parts = (fc.Gaussian(w0, s0, {"u": fc.Bint[2], "z": fc.Real}),
                 fc.Gaussian(w1, s1, {"u": fc.Bint[3], "z": fc.Real}))
        return fc.Cat("u", parts)(u=2, z=1.0).data

    expected = -0.5 * np.sum((arrays[2][0] - 1.0 * arrays[3][0, 0]) ** 2)
    for value in values_on_every_backend(fn, *arrays):
        assert np.isclose(value, expected)


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_plus_tensor"])
@pytest.mark.parametrize("subs", ["int", "slice", "tensor", "variable", "real"])
def test_stack_of_the_parts_then_substitute_equals_the_cat(kind, subs):
    # The same five components stacked one by one: every substitution evaluates, and agrees
    # with the oracle at each position.
    parts = _parts(kind)
    stack = fc.Stack("u", tuple(p(u=k) for p in parts for k in range(p.inputs["u"].size)))
    value, positions = {
        "int": (fc.Number(3, 5), [3]),
        "slice": (fc.Slice("u", 1, 5, 2, 5), [1, 3]),
        "tensor": (fc.Tensor(np.array([4, 0]), {"u": fc.Bint[2]}, 5), [4, 0]),
        "variable": (fc.Variable("u", fc.Bint[5]), list(range(5))),
        "real": (None, list(range(5))),
    }[subs]
    result = stack(z=0.7) if value is None else stack(u=value)
    assert not isinstance(result, (fc.Stack, fc.Subs))
    for k, u in enumerate(positions):
        at = {"u": k} if "u" in result.inputs else {}
        got = result(**at, j=1, **{n: v for n, v in (("z", 0.7), ("y", -0.4))
                                    if n in result.inputs})
        assert np.isclose(float(to_np(got.data)), _oracle(parts, u, 1, 0.7, -0.4))
