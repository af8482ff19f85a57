"""A fused ``ArrayProgram`` run as one generated function (``fused.straight_line``): on
random plated graphs, the plated model with ``-inf`` entries, float32 and torch gradients, it
gives what enumeration gives and, bit for bit, what the loop over the same step closures
gives (a program past ``_MAX_STRAIGHT`` values keeps that loop); ``apply_optimizer`` of a lazy
``sum_product`` runs it too."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract import fused
from funsor_core.algorithms.eliminate.schedule import plan_elimination, structure_of
from funsor_core.sum_product import sum_product
from interpretations import lazy
from interpretations.optimize import apply_optimizer
from tests.algorithms.contract.test_fused import LOG, _enumerate, _exact_bits, _plated, _run
from tests.algorithms.eliminate.test_plated_graphs import (
    GRAPHS,
    SEMIRINGS,
    brute_force,
    draw,
    has_minor,
    to_tensor,
)

torch = pytest.importorskip("torch")


def _program(tensors, eliminate, plates, sum_op=ops.logaddexp, prod_op=ops.add):
    return plan_elimination(sum_op, prod_op, structure_of(sum_op, prod_op, tensors),
                            frozenset(eliminate), frozenset(plates), False).program


@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_random_plated_graphs_straight_equals_enumeration_and_the_loop_bits(name, monkeypatch):
    fc.set_backend(name)
    convert = torch.tensor if name == "torch" else np.asarray
    sum_op, prod_op, kind, _, _ = SEMIRINGS["log"]
    straight = 0
    try:
        for factors, sizes, plates, seed in GRAPHS[:10]:
            if has_minor(factors):
                continue
            rng = np.random.default_rng(seed)
            arrays = [draw(rng, kind, tuple(sizes[n] for n in tuple(fp) + names))
                      for names, fp in factors]
            tensors = [to_tensor(n, fp, convert(a), sizes, "log")
                       for (n, fp), a in zip(factors, arrays)]
            args = (sum_op, prod_op, tensors, frozenset(sizes), frozenset(plates))
            actual = sum_product(*args).data
            np.testing.assert_allclose(ops.to_numpy(actual),
                                       brute_force(factors, arrays, sizes, "log"), rtol=1e-9)
            program = _program(tensors, sizes, plates, sum_op, prod_op)
            entry = program and program._fused_steps(tensors[0].data)
            straight += bool(entry and entry[0] >= 0)
            with monkeypatch.context() as m:  # the same closures, in the loop
                m.setattr(fused, "_MAX_STRAIGHT", 0)
                if program is not None:
                    program._fused.clear()
                _exact_bits(actual, sum_product(*args).data)
                if entry:
                    assert program._fused_steps(tensors[0].data)[0] == -1
            if program is not None:
                program._fused.clear()
    finally:
        fc.set_backend("numpy")
    assert straight >= 5


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("convert", [np.asarray, torch.tensor], ids=["numpy", "torch"])
def test_apply_optimizer_of_a_lazy_sum_product_with_minus_inf(convert, dtype):
    tensors, arrays = _plated(scale=30.0, convert=convert)
    arrays[1][:, :, 0] = -np.inf  # a state no path reaches
    cast = (lambda a: convert(a).to(getattr(torch, dtype))) if convert is torch.tensor else (
        lambda a: np.asarray(a, dtype))
    tensors = [fc.Tensor(cast(a), t.inputs) for a, t in zip(arrays, tensors)]
    with lazy:
        expr = sum_product(*LOG, tensors, frozenset("zxij"), frozenset("ij"))
    actual = apply_optimizer(expr).data
    assert str(actual.dtype).endswith(dtype)
    expected = _enumerate(*arrays)
    np.testing.assert_allclose(float(actual), expected, rtol=1e-12 if dtype == "float64" else 1e-5)
    _exact_bits(actual, _run(tensors))  # the eager sum_product's program, bit for bit
    assert _program(tensors, "zxij", "ij")._fused_steps(tensors[0].data)[0] == 3


def test_torch_gradient_through_the_generated_function_matches_enumeration():
    tensors, arrays = _plated(convert=torch.tensor)
    leaf = torch.tensor(arrays[2], requires_grad=True)
    tensors[2] = fc.Tensor(leaf, tensors[2].inputs)
    with lazy:
        expr = sum_product(*LOG, tensors, frozenset("zxij"), frozenset("ij"))
    apply_optimizer(expr).data.backward()
    # Oracle: d total / d obs[i, j, x] is the posterior of x_i = x (numpy, by enumeration of
    # z; x_i given z is local to plate i).
    prior, trans, obs = arrays
    a = obs.sum(1)
    local = np.logaddexp.reduce(trans + a[:, None, :], axis=-1)  # (i, z)
    post_z = np.exp(prior + local.sum(0) - np.logaddexp.reduce(prior + local.sum(0)))
    post_x = (post_z[None, :, None] * np.exp(trans + a[:, None, :] - local[:, :, None])).sum(1)
    expected = np.broadcast_to(post_x[:, None, :], obs.shape)
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-10)
