"""The steps of an ``ArrayProgram`` resolved once per array type
(``funsor_core.algorithms.contract.fused``): on random plated graphs in every semiring they
give what brute-force enumeration gives and, bit for bit, what the registered implementations
give step by step; a second call (cached plan and closures) equals a fresh plan bit for bit;
adversarial ranges, ``-inf`` slices, float32, gradients, the memory budget and kernel
registration behave as on the unfused path."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract import replay
from funsor_core.algorithms.contract.fused import fused_reduce
from funsor_core.algorithms.eliminate.schedule import plan_elimination, structure_of
from funsor_core.engine.cache import clear_caches
from funsor_core.ops.op import kernel_generation
from funsor_core.sum_product import sum_product
from tests.algorithms.eliminate.test_plated_graphs import (
    GRAPHS,
    SEMIRINGS,
    brute_force,
    draw,
    has_minor,
    to_tensor,
)

torch = pytest.importorskip("torch")

LOG = (ops.logaddexp, ops.add)


def _unfused(monkeypatch):
    # The registered implementations, step by step (the program as it ran before fusing).
    monkeypatch.setattr(replay.ArrayProgram, "_fused_steps", lambda self, sample: None)


def _plated(d=3, ni=4, nj=2, seed=0, scale=1.0, convert=np.asarray):
    """z global, x in plate i, observations in plates i x j (the benchmark's model)."""
    rng = np.random.default_rng(seed)
    arrays = [scale * rng.normal(size=(d,)), scale * rng.normal(size=(ni, d, d)),
              scale * rng.normal(size=(ni, nj, d))]
    domains = ({"z": fc.Bint[d]}, {"i": fc.Bint[ni], "z": fc.Bint[d], "x": fc.Bint[d]},
               {"i": fc.Bint[ni], "j": fc.Bint[nj], "x": fc.Bint[d]})
    return [fc.Tensor(convert(a), dom) for a, dom in zip(arrays, domains)], arrays


def _enumerate(prior, trans, obs):
    # Every assignment of z and of the copies x_1 .. x_I, in log space (numpy).
    d, ni = prior.shape[0], trans.shape[0]
    terms = []
    for z in range(d):
        for xs in np.ndindex(*(d,) * ni):
            terms.append(prior[z] + sum(trans[i, z, x] + obs[i, :, x].sum()
                                        for i, x in enumerate(xs)))
    return logsumexp(terms)


def _run(tensors):
    return sum_product(*LOG, tensors, frozenset("zxij"), frozenset("ij")).data


def _exact_bits(a, b):
    a, b = ops.to_numpy(a), ops.to_numpy(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("semiring", ["log", "linear", "max", "min"])
@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_random_plated_graphs_fused_equal_enumeration_and_unfused_bits(semiring, name,
                                                                       monkeypatch):
    fc.set_backend(name)
    convert = torch.tensor if name == "torch" else np.asarray
    sum_op, prod_op, kind, _, _ = SEMIRINGS[semiring]
    fused = checked = 0
    try:
        for factors, sizes, plates, seed in GRAPHS[:12]:
            if has_minor(factors):
                continue
            rng = np.random.default_rng(seed)
            arrays = [draw(rng, kind, tuple(sizes[n] for n in tuple(fp) + names))
                      for names, fp in factors]
            tensors = [to_tensor(n, fp, convert(a), sizes, semiring)
                       for (n, fp), a in zip(factors, arrays)]
            args = (sum_op, prod_op, tensors, frozenset(sizes), frozenset(plates))
            program = plan_elimination(sum_op, prod_op, structure_of(sum_op, prod_op, tensors),
                                       frozenset(sizes), frozenset(plates), False).program
            actual = sum_product(*args).data
            fused += bool(program is not None and program._fused_steps(tensors[0].data))
            np.testing.assert_allclose(ops.to_numpy(actual),
                                       brute_force(factors, arrays, sizes, semiring), rtol=1e-9)
            with monkeypatch.context() as m:
                _unfused(m)
                _exact_bits(actual, sum_product(*args).data)
            checked += 1
    finally:
        fc.set_backend("numpy")
    assert checked >= 8 and fused >= 6


@pytest.mark.parametrize("convert", [np.asarray, torch.tensor], ids=["numpy", "torch"])
def test_second_call_equals_a_fresh_plan_bit_for_bit(convert):
    tensors, arrays = _plated(convert=convert)
    clear_caches()
    first = _run(tensors)  # plans, compiles, fuses
    schedule = plan_elimination(*LOG, structure_of(*LOG, tensors), frozenset("zxij"),
                                frozenset("ij"), False)
    assert schedule.program._fused  # the closures were kept
    second = _run(tensors)  # every cache hit
    _exact_bits(first, second)
    assert abs(float(first) - _enumerate(*arrays)) < 1e-12 * abs(_enumerate(*arrays))


@pytest.mark.parametrize("convert", [np.asarray, torch.tensor], ids=["numpy", "torch"])
def test_adversarial_ranges_stay_exact(convert, monkeypatch):
    # Factors from 1e-300 to 1e300 in probability (log values of about +-690) and a state
    # that no path reaches (-inf): the log kernel, never a linear-space shortcut.
    tensors, arrays = _plated(scale=300.0, convert=convert)
    arrays[1][:, :, 0] = -np.inf
    tensors[1] = fc.Tensor(convert(arrays[1]), tensors[1].inputs)
    actual = _run(tensors)
    expected = _enumerate(*arrays)
    assert np.isfinite(expected)
    np.testing.assert_allclose(float(actual), expected, rtol=1e-12)
    _unfused(monkeypatch)
    _exact_bits(actual, _run(tensors))


@pytest.mark.parametrize("convert", [lambda a: np.asarray(a, np.float32),
                                     lambda a: torch.tensor(a, dtype=torch.float32)],
                         ids=["numpy", "torch"])
def test_float32_keeps_its_dtype_and_agrees_with_float64_enumeration(convert, monkeypatch):
    tensors, arrays = _plated(convert=convert)
    actual = _run(tensors)
    assert str(actual.dtype).endswith("float32")
    np.testing.assert_allclose(float(actual), _enumerate(*arrays), rtol=1e-5)
    _unfused(monkeypatch)
    _exact_bits(actual, _run(tensors))


def test_torch_gradient_of_an_unreachable_state_is_zero_not_nan(monkeypatch):
    # The fused step keeps log_sum's guarded form for arrays that track gradients.
    def grads():
        tensors, arrays = _plated(convert=torch.tensor)
        arrays[1][:, :, 0] = -np.inf
        leaf = torch.tensor(arrays[1], requires_grad=True)
        tensors[1] = fc.Tensor(leaf, tensors[1].inputs)
        _run(tensors).backward()
        return leaf.grad, arrays

    fused, arrays = grads()
    assert torch.isfinite(fused).all() and (fused[:, :, 0] == 0).all()
    # Oracle: d total / d trans[i, z, x] is the posterior of (z, x_i), by enumeration.
    prior, trans, obs = arrays
    a = obs.sum(1)
    local = logsumexp(trans + a[:, None, :], axis=-1)  # (i, z)
    total = logsumexp(prior + local.sum(0))
    post_z = np.exp(prior + local.sum(0) - total)  # (z,)
    expected = post_z[None, :, None] * np.exp(trans + a[:, None, :] - local[:, :, None])
    np.testing.assert_allclose(fused.numpy(), expected, rtol=1e-10, atol=1e-300)
    _unfused(monkeypatch)
    _exact_bits(fused, grads()[0])


def test_memory_budget_is_checked_per_call():
    tensors, _ = _plated(d=16, ni=8, nj=2)
    _run(tensors)  # fused and cached
    with pytest.raises(fc.MemoryBudgetError, match="this elimination needs"):
        with fc.memory_budget(64):
            _run(tensors)


def test_registering_a_kernel_resolves_the_closures_again():
    tensors, arrays = _plated()
    first = _run(tensors)
    program = plan_elimination(*LOG, structure_of(*LOG, tensors), frozenset("zxij"),
                               frozenset("ij"), False).program
    before, generation = dict(program._fused), kernel_generation()
    kernel = ops.logsumexp.kernels[np.ndarray]
    calls = []

    def counting(x, axis=None, keepdims=False):
        calls.append(axis)
        return kernel(x, axis, keepdims)

    try:
        ops.logsumexp.register(np.ndarray, counting)
        assert kernel_generation() > generation
        second = _run(tensors)
        assert calls  # the new kernel runs, not the one resolved before
        assert set(program._fused) - set(before)
    finally:
        ops.logsumexp.register(np.ndarray, kernel)
    _exact_bits(first, second)
    np.testing.assert_allclose(float(first), _enumerate(*arrays), rtol=1e-12)


def test_under_jax_jit_the_closures_trace_the_same_arithmetic():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        tensors, arrays = _plated(convert=jax.numpy.asarray)
        domains = [t.inputs for t in tensors]

        def total(*xs):
            return _run([fc.Tensor(x, dom) for x, dom in zip(xs, domains)])

        jitted = jax.jit(total)(*(t.data for t in tensors))
        program = plan_elimination(*LOG, structure_of(*LOG, tensors), frozenset("zxij"),
                                   frozenset("ij"), False).program
        assert any("Tracer" in typ.__name__ for typ, _ in program._fused)  # fused on tracers
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(float(jitted), _enumerate(*arrays), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", [ops.add, ops.logaddexp])
def test_an_int_axis_reduction_calls_torch_itself_with_the_kernels_bits(op, dtype):
    # The closure of a one-axis reduction calls torch's function by position (the kernel's
    # ``int_axis``); the oracle is the kernel's general path (a tuple of axes, by keyword).
    x = torch.tensor(np.random.default_rng(3).normal(size=(3, 4, 5)) * 300, dtype=getattr(
        torch, dtype))
    x[0, :, 1] = -float("inf")
    kernel = ops.REDUCE_OPS[op].array_kernel(torch.Tensor)
    for axis in range(3):
        step = fused_reduce(op, (axis,), x)
        cells = [c.cell_contents for c in step.__closure__]
        assert any(c is kernel.int_axis for c in cells)  # (no kernel frame between)
        _exact_bits(step(x), kernel(x, (axis,)))
        _exact_bits(kernel(x, axis, True), kernel(x, (axis,), True))
