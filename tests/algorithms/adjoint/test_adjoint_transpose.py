"""Adjoints as transposes and as gradients: the transpose of a linear einsum against
opt_einsum, log-space adjoints against torch autograd of the log partition function, the
transposes of gathers and concatenations against numpy, and the adjoint of a parallel-scan
chain against enumeration."""

import itertools

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.adjoint import AdjointTape, adjoint, forward_backward
from funsor_core.engine.interpreter import reflect
from funsor_core.sum_product import sequential_sum_product
from interpretations import lazy

EQUATIONS = ["ab,bc->", "ab,bc->ac", "a,ab,bc,c->", "abc,bcd,cde->ae", "ab,b,bc,c,cd,d->",
             "a,a,a->a", "ab,ab->"]
SIZES = {c: 2 + k % 3 for k, c in enumerate("abcde")}


def _np(x):
    data = x.data if isinstance(x, fc.Funsor) else x
    return np.asarray(data if isinstance(data, float) else ops.to_numpy(data))


def _operands(eq, seed):
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    arrays = [rng.normal(size=tuple(SIZES[c] for c in letters)) for letters in inputs]
    tensors = [fc.Tensor(fc.numeric_array(a), {c: fc.Bint[SIZES[c]] for c in letters})
               for a, letters in zip(arrays, inputs)]
    return inputs, arrays, tensors


@pytest.mark.parametrize("eq", EQUATIONS)
def test_transpose_of_a_linear_einsum_is_the_einsum_of_the_others(backend, eq):
    # d(sum_out z) / d x_k = the einsum of the other operands onto x_k's letters.
    inputs, arrays, tensors = _operands(eq, 0)
    out = eq.split("->")[1]
    with reflect:
        expr = fc.einsum(eq, *tensors)
        if out:
            expr = expr.reduce(ops.add)
    adj = adjoint(ops.add, ops.mul, expr)
    for k, letters in enumerate(inputs):
        rest = inputs[:k] + inputs[k + 1:]
        # Letters of x_k that no other operand has just index the derivative: broadcast.
        common = "".join(c for c in letters if any(c in r for r in rest))
        expected = opt_einsum.contract(f"{','.join(rest)}->{common}",
                                       *(arrays[:k] + arrays[k + 1:]))
        expected = np.broadcast_to(
            expected.reshape(tuple(SIZES[c] if c in common else 1 for c in letters)),
            tuple(SIZES[c] for c in letters))
        actual = adj[tensors[k]]
        if isinstance(actual, fc.Tensor):
            actual = fc.Tensor(actual.data, actual.inputs) + 0 * tensors[k]  # broadcast
            actual = _np(actual.align(tuple(letters)))
        else:
            actual = _np(actual) * np.ones_like(expected)
        assert np.allclose(actual, expected), (k, letters)


def _torch_log_z(tables, plate_size, size, ordinal, torch):
    # The unrolled joint in torch, built by broadcasting (independent of funsor-core).
    from tests.algorithms.adjoint.test_adjoint_discrete import brute_force
    copies, _ = brute_force([(p, s, np.zeros(t.shape)) for p, s, t in tables], plate_size,
                            size, ordinal)
    shape = tuple(size[v] for v, _ in copies)
    joint = torch.zeros(shape)
    for fplates, scope, table in tables:
        for idx in itertools.product(*(range(plate_size[p]) for p in fplates)):
            where = dict(zip(fplates, idx))
            axes = [next(a for a, c in enumerate(copies)
                         if c == (v, {p: where[p] for p in ordinal[v]})) for v in scope]
            sub = table[idx] if fplates else table
            sub = sub.permute(*np.argsort(axes).tolist()) if axes else sub
            full = [1] * len(shape)
            for a in sorted(axes):
                full[a] = shape[a]
            joint = joint + sub.reshape(full)
    return torch.logsumexp(joint.reshape(-1), 0)


@pytest.mark.parametrize("seed", range(6))
def test_marginals_are_the_autograd_of_the_log_partition(seed):
    # d log Z / d f(x) = p(f's inputs = x): the adjoint gives it, torch autograd checks it.
    torch = pytest.importorskip("torch")
    from tests.algorithms.adjoint.test_adjoint_discrete import (
        funsor_factors,
        random_graph,
        used_plates,
    )
    tables, plate_size, size, ordinal = random_graph(seed)
    leaves = [(p, s, torch.tensor(t, requires_grad=True)) for p, s, t in tables]
    log_z = _torch_log_z(leaves, plate_size, size, ordinal, torch)
    grads = torch.autograd.grad(log_z, [t for _, _, t in leaves])
    factors = funsor_factors(tables, plate_size, size)
    with reflect:
        expr = fc.sum_product(ops.logaddexp, ops.add, factors,
                              frozenset(size) | used_plates(tables), used_plates(tables))
    value, adj = forward_backward(ops.logaddexp, ops.add, expr)
    assert np.allclose(_np(value), log_z.item())
    for f, (fplates, scope, _), grad in zip(factors, tables, grads):
        marginal = (adj[f] + f - value).exp()
        names = tuple(fplates) + tuple(scope)
        actual = _np((marginal + 0 * f).align(names)) if names else _np(marginal)
        assert np.allclose(actual, grad.numpy()), (fplates, scope)


def test_transpose_of_a_gather_is_a_scatter_add(backend):
    # y(k) = x(i = idx(k)), with repeated indices: x's adjoint sums A over the k that hit i.
    idx = np.array([2, 0, 2, 1, 2])
    x = fc.Tensor(fc.numeric_array(np.arange(3.0)), {"i": fc.Bint[3]})
    index = fc.Tensor(fc.numeric_array(idx), {"k": fc.Bint[5]}, 3)
    weights = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    w = fc.Tensor(fc.numeric_array(weights), {"k": fc.Bint[5]})
    with reflect:
        expr = (x(i=index) * w).reduce(ops.add, "k")
    adj = adjoint(ops.add, ops.mul, expr)
    expected = np.zeros(3)
    np.add.at(expected, idx, weights)
    assert np.allclose(_np(adj[x]), expected)


def test_transpose_of_a_cat_splits_the_adjoint():
    a = fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]})
    b = fc.Tensor(np.arange(3.0), {"i": fc.Bint[3]})
    w = fc.Tensor(np.array([10.0, 20.0, 30.0, 40.0, 50.0]), {"i": fc.Bint[5]})
    with reflect:
        expr = (fc.Cat("i", (a, b)) * w).reduce(ops.add, "i")
    adj = adjoint(ops.add, ops.mul, expr)
    assert np.allclose(_np(adj[a]), [10.0, 20.0])
    assert np.allclose(_np(adj[b]), [30.0, 40.0, 50.0])


def test_transpose_of_differences_and_negations():
    x = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
    y = fc.Tensor(np.array([3.0, 5.0]), {"i": fc.Bint[2]})
    with lazy:
        z = (2.0 * x - (-y)).reduce(ops.add, "i")
    adj = adjoint(ops.add, ops.mul, z)
    assert np.allclose(_np(adj[x]), 2.0) and np.allclose(_np(adj[y]), 1.0)


def test_unsupported_term_on_the_path_raises():
    # A nonlinear op between the root and a leaf has no transpose: loud, never a zero.
    x = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
    with lazy:
        z = (x * x).exp().reduce(ops.add, "i")
    with pytest.raises(NotImplementedError, match="Unary\\(ops.exp\\).*ops.add, ops.mul"):
        adjoint(ops.add, ops.mul, z)
    with lazy:
        w = (x - x).reduce(ops.logaddexp, "i")
    with pytest.raises(NotImplementedError, match="Binary\\(ops.sub\\).*logaddexp"):
        adjoint(ops.logaddexp, ops.add, w)


@pytest.mark.parametrize("T", [2, 5, 8])
def test_parallel_scan_adjoint_is_the_chain_marginals(T):
    # HMM pair marginals from the adjoint of sequential_sum_product against enumeration.
    rng = np.random.default_rng(T)
    K = 3
    logits = rng.normal(size=(T, K, K))
    trans = fc.Tensor(logits, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    with AdjointTape() as tape:
        log_z = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
        log_z = log_z.reduce(ops.logaddexp)
    adj = tape.adjoint(ops.logaddexp, ops.add, log_z, (trans,))[trans]
    pair = np.exp(_np((adj + trans - log_z).align(("t", "x", "y"))))
    joint = np.zeros((K,) * (T + 1))
    for states in itertools.product(range(K), repeat=T + 1):
        joint[states] = sum(logits[t, states[t], states[t + 1]] for t in range(T))
    p = np.exp(joint - np.logaddexp.reduce(joint.reshape(-1)))
    for t in range(T):
        axes = tuple(a for a in range(T + 1) if a not in (t, t + 1))
        assert np.allclose(pair[t], p.sum(axis=axes))


@pytest.mark.parametrize("eq, plates", [("a,ai,abij->", "ij"), ("ab,bc,cd->", ""),
                                        ("a,abi,bcij,cdij->", "ij")])
def test_plated_marginals_match_pyro_einsum_adjoint(eq, plates):
    # Pyro's einsum with the torch_marginal backend computes, for each operand, the log of
    # its unnormalized marginal: the adjoint plus the operand.
    torch = pytest.importorskip("torch")
    pyro_contract = pytest.importorskip("pyro.ops.contract")
    from pyro.ops.einsum.adjoint import require_backward

    fc.set_backend("torch")
    try:
        sizes = {"a": 2, "b": 3, "c": 2, "d": 3, "i": 2, "j": 3}
        inputs = eq.split("->")[0].split(",")
        rng = np.random.default_rng(0)
        arrays = [torch.tensor(rng.normal(size=[sizes[c] for c in s])) for s in inputs]
        tensors = [fc.Tensor(a, {c: fc.Bint[sizes[c]] for c in s})
                   for a, s in zip(arrays, inputs)]
        with AdjointTape() as tape:
            root = fc.einsum(eq, *tensors, plates=plates,
                             backend="pyro.ops.einsum.torch_marginal")
        adj = tape.adjoint(ops.logaddexp, ops.add, root, tensors)
        for a, s in zip(arrays, inputs):
            a._pyro_dims = s
            require_backward(a)
        out = pyro_contract.einsum(eq, *arrays, plates=plates, modulo_total=False,
                                   backend="pyro.ops.einsum.torch_marginal")[0]
        out._pyro_backward()
        for t, a, s in zip(tensors, arrays, inputs):
            marginal = adj[t] + t
            extra = frozenset(marginal.inputs) - frozenset(s)
            if extra:
                marginal = marginal.reduce(ops.logaddexp, extra)
            actual = marginal.align(tuple(s)).data if s else marginal.data
            assert torch.allclose(actual, a._pyro_backward_result), s
    finally:
        fc.set_backend("numpy")
