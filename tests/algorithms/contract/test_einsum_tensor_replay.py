"""``einsum`` of Tensors alone runs its recorded array program on the Tensors' arrays from the
second call (``algorithms.contract.einsum``): no Contraction built, the result Tensor equal bit
for bit to the terms' and to brute-force enumeration; it steps aside under ``lazy``, for a
user's rule and for integer data labelled real."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.engine.interpreter import Tuple
from funsor_core.terms.contraction import Contraction
from funsor_core.testing import assert_close
from interpretations import exact, lazy
from tests.algorithms.contract.test_replay import (
    EQUATIONS,
    SEMIRINGS,
    SIZES,
    _as_backend,
    _count_terms,
    brute_force,
    random_operands,
)


def _tensors(eq: str, arrays: list) -> list:
    inputs = eq.split("->")[0].split(",")
    return [fc.Tensor(x, {c: fc.Bint[SIZES[c]] for c in letters})
            for x, letters in zip(arrays, inputs)]


@pytest.mark.parametrize("backend_name", sorted(SEMIRINGS))
@pytest.mark.parametrize("eq, plates", EQUATIONS + [("a,ab,bc,bw,c->a", ""),
                                                    ("ab,bc,c->ca", "")])
def test_einsum_of_tensors_replays_the_terms_result(eq, plates, backend_name):
    operands = random_operands(eq, seed=7)
    expected = brute_force(eq, plates, operands, backend_name)
    output = eq.split("->")[1]
    first = fc.einsum(eq, *_tensors(eq, operands), plates=plates, backend=backend_name)
    for _ in range(2):  # recorded by the first call, replayed on the arrays after
        again = fc.einsum(eq, *_tensors(eq, operands), plates=plates, backend=backend_name)
        assert isinstance(again, fc.Tensor) and tuple(again.inputs) == tuple(output)
        assert again.inputs == first.inputs and again.output == first.output
        assert np.array_equal(again.data, first.data)
    assert_close(first.data, expected, atol=1e-10, rtol=1e-10)


def test_einsum_of_tensors_replay_builds_no_contraction_and_stays_lazy(monkeypatch):
    eq = "a,ab,bc,bw,c->a"
    operands = random_operands(eq, seed=3)
    first = fc.einsum(eq, *_tensors(eq, operands), backend="log")
    calls = _count_terms(monkeypatch, Contraction)
    again = fc.einsum(eq, *_tensors(eq, operands), backend="log")
    assert calls == []
    assert np.array_equal(again.data, first.data)
    with lazy:
        term = fc.einsum(eq, *_tensors(eq, operands), backend="log")
    assert isinstance(term, Contraction) and calls
    assert_close(exact(fc.reinterpret)(term), first)


def test_user_rule_registered_after_a_replay_fires(scratch_exact_rules):
    eq = "a,ab,bc,bw,c->a"
    operands = random_operands(eq, seed=4)
    expected = fc.einsum(eq, *_tensors(eq, operands), backend="log")
    fc.einsum(eq, *_tensors(eq, operands), backend="log")  # replayed
    fired = []

    @exact.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                    Tuple[fc.Tensor, fc.Tensor, fc.Tensor, fc.Tensor, fc.Tensor])
    def user_contraction_log_five_tensors(red_op, bin_op, reduced_vars, terms):
        fired.append(reduced_vars)
        return None  # observes, then declines

    actual = fc.einsum(eq, *_tensors(eq, operands), backend="log")
    assert fired, "the user's rule was skipped"
    assert_close(actual, expected, atol=0, rtol=0)


def test_integer_data_labelled_real_is_cast_as_the_terms_cast_it():
    eq = "ab,b->a"
    a, b = np.arange(6).reshape(2, 3), np.arange(3)
    tensors = [fc.Tensor(a, {"a": fc.Bint[2], "b": fc.Bint[3]}),
               fc.Tensor(b, {"b": fc.Bint[3]})]
    for _ in range(3):
        result = fc.einsum(eq, *tensors, backend="linear")
        assert_close(result.data, (a * b).sum(1).astype(float))


def _tree(n: int, seed: int):
    # A random tree of n variables of domain 3 (subscripts, log factors): a root prior, a
    # table per edge, a unary factor per variable.
    rng = np.random.default_rng(seed)
    sym = "abcdefghijklmnop"[:n]
    parents = [None] + [int(rng.integers(k)) for k in range(1, n)]
    inputs = [sym[0]] + [sym[parents[k]] + sym[k] for k in range(1, n)] + list(sym)
    return inputs, [rng.normal(size=(3,) * len(s)) for s in inputs]


def _brute_log(inputs, arrays, n: int) -> float:
    # log sum over all 3**n assignments of the sum of the log factors, by broadcasting.
    sym = "abcdefghijklmnop"[:n]
    total = np.zeros((3,) * n)
    for letters, x in zip(inputs, arrays):
        perm = sorted(range(len(letters)), key=lambda k: sym.index(letters[k]))
        shape = [1] * n
        for c in letters:
            shape[sym.index(c)] = 3
        total = total + np.transpose(x, perm).reshape(shape)
    return float(logsumexp(total))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tree_of_tensors_with_adversarial_ranges_against_brute_force(backend, dtype):
    # Factors spanning 1e-300 to 1e300 (log values of -690 to 690): the replayed program is
    # the log-space kernel and stays exact, in float32 too.
    if backend == "torch":
        torch = pytest.importorskip("torch")
    n = 8
    inputs, arrays = _tree(n, seed=11)
    scale = np.random.default_rng(12).choice([-690.0, 0.0, 690.0], size=len(arrays))
    arrays = [x + s for x, s in zip(arrays, scale)]
    expected = _brute_log(inputs, arrays, n)
    eq = ",".join(inputs) + "->"
    converted = [_as_backend(x.astype(dtype), backend) for x in arrays]
    if backend == "torch":
        assert converted[0].dtype == getattr(torch, dtype)
    tensors = [fc.Tensor(x, {c: fc.Bint[3] for c in letters})
               for x, letters in zip(converted, inputs)]
    rtol = 1e-10 if dtype == "float64" else 1e-5
    values = [fc.einsum(eq, *tensors, backend="log") for _ in range(3)]
    for v in values:
        assert str(v.data.dtype).endswith(dtype)
        assert float(v.data) == pytest.approx(expected, rel=rtol)
    assert float(values[2].data) == float(values[0].data)  # the replay: bit for bit
