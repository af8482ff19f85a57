"""One binary contraction as one batched matmul: equal to einsum for every combination of
empty C/X/S/Y, in linear and log space, on numpy, torch and jax; no intermediate larger
than |C||X||Y| or the operands."""

import itertools
import math

import numpy as np

import funsor_core as fc
from funsor_core.algorithms.compiled.lowering import pair_spec, run_pair
from tests.backend_values import values_on_every_backend

GROUPS = {"C": ("c1", "c2"), "X": ("x",), "S": ("s1", "s2"), "Y": ("y",)}
SIZES = {"c1": 2, "c2": 3, "x": 4, "s1": 2, "s2": 3, "y": 5, "a": 3, "b": 2}
LETTERS = {"c1": "c", "c2": "d", "x": "x", "s1": "s", "s2": "t", "y": "y", "a": "a", "b": "b"}


def _cases():
    # Each of C, X, S, Y present or empty (16 cases), the operands' names shuffled.
    rng = np.random.default_rng(0)
    for present in itertools.product((False, True), repeat=4):
        groups = {g: names if on else () for (g, names), on in zip(GROUPS.items(), present)}
        a = list(groups["C"] + groups["X"] + groups["S"])
        b = list(groups["C"] + groups["S"] + groups["Y"])
        rng.shuffle(a)
        rng.shuffle(b)
        yield tuple(a), tuple(b), groups["C"] + groups["X"] + groups["Y"]


def _to(backend, x):
    if backend == "torch":
        import torch
        return torch.tensor(x)
    if backend == "jax":
        import jax.numpy as jnp
        return jnp.asarray(x)
    return x


def test_pair_equals_einsum_for_every_empty_group(backend):
    rng = np.random.default_rng(1)
    cases = []
    for a_names, b_names, out in _cases():
        a = rng.normal(size=[SIZES[n] for n in a_names])
        b = rng.normal(size=[SIZES[n] for n in b_names])
        cases.append((pair_spec(a_names, b_names, out, SIZES), a_names, b_names, a, b))

    def run_all(arrays):
        return [run_pair(spec, a, b, log) for (spec, *_), (a, b) in zip(cases, arrays)
                for log in (False, True)]

    if backend == "jax":  # one jit (eager jax compiles each op), on every fifth case
        import jax
        cases = cases[::5]
        run_all = jax.jit(run_all)
    outputs = run_all([(_to(backend, a), _to(backend, b)) for *_, a, b in cases])
    for k, (spec, a_names, b_names, a, b) in enumerate(cases):
        eq = "{},{}->{}".format(*("".join(LETTERS[n] for n in names)
                                  for names in (a_names, b_names, spec.out_names)))
        expected = np.einsum(eq, a, b)
        actual, log_actual = (np.asarray(x) for x in outputs[2 * k: 2 * k + 2])
        assert actual.shape == expected.shape
        assert np.allclose(actual, expected, rtol=1e-12, atol=1e-12), eq
        log_expected = np.log(np.einsum(eq, np.exp(a), np.exp(b)))
        assert np.allclose(log_actual, log_expected, rtol=1e-12, atol=1e-12), eq
        # One matmul of (C, X, S) x (C, S, Y): nothing larger than the result or operands.
        c, x, s = spec.shape_a
        assert spec.shape_b[:2] == (c, s)
        assert math.prod(spec.out_shape) == c * x * spec.shape_b[2]


def test_pair_sums_names_of_one_side_first():
    a_names, b_names = ("a", "x", "s1"), ("s1", "b", "y")
    a = np.random.default_rng(2).normal(size=(3, 4, 2))
    b = np.random.default_rng(3).normal(size=(2, 2, 5))
    spec = pair_spec(a_names, b_names, ("x", "y"), SIZES)
    assert spec.a_sum == (0,) and spec.b_sum == (1,)
    expected = np.einsum("axs,sby->xy", a, b)
    assert np.allclose(run_pair(spec, a, b, log=False), expected, rtol=1e-12)
    # Under jax.jit (traced operands) the same pair runs as one einsum of the same names.
    for value in values_on_every_backend(lambda a, b: run_pair(spec, a, b, log=False), a, b,
                                         eager_jax=False)[2:]:
        assert np.allclose(value, expected, rtol=1e-12)


def test_log_pair_keeps_minus_infinity_without_warnings():
    # A row of -inf (an impossible configuration) stays -inf, with no nan and no warning.
    a = np.array([[0.0, -np.inf], [-np.inf, -np.inf]])
    b = np.array([[0.0], [-np.inf]])
    spec = pair_spec(("x", "s1"), ("s1", "y"), ("x", "y"), {"x": 2, "s1": 2, "y": 1})
    out = run_pair(spec, a, b, log=True)
    assert out[0, 0] == 0.0 and out[1, 0] == -np.inf


def test_plan_runs_every_backend(backend):
    f = fc.Tensor(_to(backend, np.arange(6.0).reshape(2, 3)), {"i": fc.Bint[2], "j": fc.Bint[3]})
    g = fc.Tensor(_to(backend, np.ones(3)), {"j": fc.Bint[3]})
    out = fc.plan([f, g], frozenset({"j"}))([f, g])
    assert np.allclose(np.asarray(out.data), [3.0, 12.0])
