"""Compiled plated elimination: a plated ``sum_product`` built under ``lazy`` compiles to one
program (each plate a batch dim of its own sub-program, the plate's product a reduction in
the program), checked against numpy written by hand, on numpy, torch, jax and under
``jax.jit``, in linear and log space, with nested plates and jax gradients."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import sum_product
from interpretations.lazy import lazy
from tests.backend_values import values_on_every_backend

# Globals a: 2, b: 3; plate p: 3 with a local c: 2; plate q: 2 nested in p with local d: 3.
SHAPES = {"f": (2,), "g": (2, 3), "h": (3, 2, 2), "k": (3, 2), "m": (3, 2, 2, 3)}
NAMES = {"f": "a", "g": "ab", "h": "pac", "k": "pc", "m": "pqcd"}


def _expression(sum_op, prod_op, keys, plates):
    terms = [fc.Variable(k, fc.Reals[SHAPES[k]])[tuple(NAMES[k])] for k in keys]
    names = frozenset("".join(NAMES[k] for k in keys))
    with lazy:
        return sum_product(sum_op, prod_op, terms, names, frozenset(plates))


def _by_hand(e):
    # sum_ab f g prod_p [sum_c h k prod_q (sum_d m)], in linear space, loops over the plates.
    total = 0.0
    for a in range(2):
        for b in range(3):
            plate = 1.0
            for p in range(3):
                local = 0.0
                for c in range(2):
                    inner = np.prod([e["m"][p, q, c].sum() for q in range(2)]) if "m" in e else 1
                    local += e["h"][p, a, c] * e["k"][p, c] * inner
                plate *= local
            total += e["f"][a] * e["g"][a, b] * plate
    return total


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return {k: rng.normal(size=s) * 0.5 for k, s in SHAPES.items()}


@pytest.mark.parametrize("nested", [False, True])
def test_plated_program_matches_numpy_on_every_backend(nested):
    keys = ("f", "g", "h", "k", "m") if nested else ("f", "g", "h", "k")
    logs = {k: v for k, v in _data().items() if k in keys}
    expected = _by_hand({k: np.exp(v) for k, v in logs.items()})
    expr = _expression(ops.logaddexp, ops.add, keys, "pq" if nested else "p")
    log_program = fc.compile(expr)
    assert set(log_program.inputs) == set(keys)
    assert len(fc.cost(expr)["plates"]) == (2 if nested else 1)  # one sub-program per plate
    for value in values_on_every_backend(lambda *xs: log_program(**dict(zip(keys, xs))),
                                         *logs.values(), eager_jax=False):
        assert np.isclose(value, np.log(expected), rtol=1e-12)
    linear = fc.compile(_expression(ops.add, ops.mul, keys, "pq" if nested else "p"))
    assert np.isclose(linear(**{k: np.exp(v) for k, v in logs.items()}), expected, rtol=1e-12)
    runs = linear.runs
    linear(**{k: np.exp(v) for k, v in logs.items()})
    assert linear.runs == runs + 1


def test_plated_program_gradient_under_jax_jit():
    import jax
    import jax.numpy as jnp

    keys = ("f", "g", "h", "k")
    logs = {k: v for k, v in _data(1).items() if k in keys}
    program = fc.compile(_expression(ops.logaddexp, ops.add, keys, "p"))
    fc.set_backend("jax")
    try:
        grad = jax.jit(jax.grad(lambda h: program(**{**logs, "h": h})))(jnp.asarray(logs["h"]))
    finally:
        fc.set_backend("numpy")

    def log_z(h):  # the numpy loops by hand
        return np.log(_by_hand({k: np.exp(v) for k, v in {**logs, "h": h}.items()}))

    eps, fd = 1e-6, np.zeros(SHAPES["h"])
    for idx in np.ndindex(fd.shape):
        step = np.zeros(SHAPES["h"])
        step[idx] = eps
        fd[idx] = (log_z(logs["h"] + step) - log_z(logs["h"] - step)) / (2 * eps)
    assert np.allclose(np.asarray(grad), fd, rtol=1e-6, atol=1e-9)
