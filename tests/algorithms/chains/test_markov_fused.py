"""MarkovProduct as a filter (a lazily built chain reduced with its boundary factors), eager
against ``jax.jit``, gradients (torch, jax), and chains of 10^5 steps.

Oracles: the naive left fold of the evaluated chain (``naive_sequential_sum_product``), a
hand-written forward algorithm (numpy; and torch / jax for gradients, differentiated by
their own autodiff), and the eager numpy result for the jitted one.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, naive_sequential_sum_product
from funsor_core.testing import random_gaussian
from interpretations import lazy

SEMIRINGS = [(ops.logaddexp, ops.add, False), (ops.add, ops.mul, True), (ops.max, ops.add, False),
             (ops.min, ops.add, False)]


def _hmm(rng, duration, batch, k=3, positive=False):
    draw = (lambda *s: rng.uniform(0.2, 2.0, size=s)) if positive else (
        lambda *s: rng.normal(size=s))
    a = fc.Tensor(draw(k, k), {"x": fc.Bint[k], "y": fc.Bint[k]})
    o = fc.Tensor(draw(duration, batch, k), {"t": fc.Bint[duration], "b": fc.Bint[batch],
                                             "y": fc.Bint[k]})
    init = fc.Tensor(draw(k), {"x": fc.Bint[k]})
    final = fc.Tensor(draw(batch, k), {"b": fc.Bint[batch], "y": fc.Bint[k]})
    return a, o, init, final


@pytest.mark.parametrize("strategy", ["parallel", "sequential", "auto"])
@pytest.mark.parametrize("sum_op,prod_op,positive", SEMIRINGS,
                         ids=lambda x: getattr(x, "name", str(x)))
def test_boundaries_fold_into_the_chain(sum_op, prod_op, positive, strategy):
    rng = np.random.default_rng(0)
    for duration in (1, 2, 5, 12):
        a, o, init, final = _hmm(rng, duration, 2, positive=positive)
        step = prod_op(a, o)  # evaluated: the oracle's chain
        chain = naive_sequential_sum_product(sum_op, prod_op, step, "t", {"x": "y"})
        with lazy:
            lazy_chain = MarkovProduct(sum_op, prod_op, prod_op(a, o), "t", {"x": "y"},
                                       strategy=strategy)
        cases = [((init,), {"x"}), ((final,), {"y"}), ((init, final), {"x", "y"}),
                 ((init, final), {"x", "y", "b"}), ((), {"x"}), ((init,), {"b"})]
        for terms, names in cases:
            actual, expected = lazy_chain, chain
            for f in terms:
                actual, expected = prod_op(actual, f), prod_op(expected, f)
            actual = actual.reduce(sum_op, frozenset(names))
            expected = expected.reduce(sum_op, frozenset(names))
            assert isinstance(actual, fc.Tensor), (terms, names)
            kept = tuple(expected.inputs)
            np.testing.assert_allclose(np.asarray(actual.align(kept).data),
                                       np.asarray(expected.data), rtol=1e-10,
                                       err_msg=f"T={duration} {names}")


def _numpy_forward(init, a, o):
    # log sum_x exp(init[x_-1] + sum_t a[x_t-1, x_t] + o[t, b, x_t]), one per b.
    alpha = np.broadcast_to(init, (o.shape[1], init.shape[0]))
    for t in range(o.shape[0]):
        alpha = np.logaddexp.reduce(alpha[:, :, None] + a, axis=1) + o[t]
    return np.logaddexp.reduce(alpha, axis=-1)


def _program(init, a, o, strategy=None):
    k, (duration, batch, _) = init.shape[0], o.shape
    i = fc.Tensor(init, {"x": fc.Bint[k]})
    at = fc.Tensor(a, {"x": fc.Bint[k], "y": fc.Bint[k]})
    ot = fc.Tensor(o, {"t": fc.Bint[duration], "b": fc.Bint[batch], "y": fc.Bint[k]})
    with lazy:
        chain = MarkovProduct(ops.logaddexp, ops.add, at + ot, "t", {"x": "y"},
                              strategy=strategy)
    return (i + chain).reduce(ops.logaddexp, {"x", "y"}).align(("b",)).data


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_jit_equals_eager(strategy):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(1)
    init, a, o = rng.normal(size=4), rng.normal(size=(4, 4)), rng.normal(size=(23, 3, 4))
    expected = _numpy_forward(init, a, o)
    np.testing.assert_allclose(_program(init, a, o, strategy), expected, rtol=1e-10)
    fc.set_backend("jax")
    try:
        args = tuple(jnp.asarray(x) for x in (init, a, o))
        eager = _program(*args, strategy)
        jitted = jax.jit(lambda *xs: _program(*xs, strategy))(*args)
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(eager), expected, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(jitted), expected, rtol=1e-10)


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_jit_equals_eager_gaussian(strategy):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    g = random_gaussian({"t": fc.Bint[5], "b": fc.Bint[2], "p": fc.Reals[2], "c": fc.Reals[2]})
    expected = MarkovProduct(ops.logaddexp, ops.add, g, "t", {"p": "c"}, strategy=strategy)
    point = {"p": np.array([0.1, -0.3]), "c": np.array([0.7, 0.2])}
    expected = np.asarray(expected(**point).align(("b",)).data)

    def program(w, s):
        gj = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=g.inputs)
        mp = MarkovProduct(ops.logaddexp, ops.add, gj, "t", {"p": "c"}, strategy=strategy)
        return mp(**{k: jnp.asarray(v) for k, v in point.items()}).align(("b",)).data

    fc.set_backend("jax")
    try:
        args = (jnp.asarray(g.white_vec), jnp.asarray(g.prec_sqrt))
        np.testing.assert_allclose(np.asarray(program(*args)), expected, rtol=1e-9)
        np.testing.assert_allclose(np.asarray(jax.jit(program)(*args)), expected, rtol=1e-9)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_torch_gradients(strategy, batch):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    init, a, o = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(9, batch, 3))
    weights = torch.tensor([1.0, -2.0][:batch])

    def hand(i, a, o):  # the forward algorithm in torch: the oracle's gradient
        alpha = i.expand(o.shape[1], -1)
        for t in range(o.shape[0]):
            alpha = torch.logsumexp(alpha[:, :, None] + a, 1) + o[t]
        return torch.logsumexp(alpha, -1)

    fc.set_backend("torch")
    try:
        grads = []
        for fn in (hand, lambda *xs: _program(*xs, strategy)):
            xs = [torch.tensor(x, requires_grad=True) for x in (init, a, o)]
            (fn(*xs) * weights).sum().backward()
            grads.append([x.grad.numpy() for x in xs])
        # The matrix (unfused) chain too: its total differentiated through the kernels.
        xs = [torch.tensor(x, requires_grad=True) for x in (init, a, o)]
        i, at, ot = (fc.Tensor(x, inp) for x, inp in zip(xs, (
            {"x": fc.Bint[3]}, {"x": fc.Bint[3], "y": fc.Bint[3]},
            {"t": fc.Bint[9], "b": fc.Bint[batch], "y": fc.Bint[3]})))
        mp = MarkovProduct(ops.logaddexp, ops.add, at + ot, "t", {"x": "y"}, strategy=strategy)
        total = (i + mp).reduce(ops.logaddexp, {"x", "y"}).align(("b",)).data
        (total * weights).sum().backward()
        grads.append([x.grad.numpy() for x in xs])
    finally:
        fc.set_backend("numpy")
    for actual in grads[1:]:
        for g_actual, g_expected in zip(actual, grads[0]):
            np.testing.assert_allclose(g_actual, g_expected, rtol=1e-9, atol=1e-12)


def test_jax_gradients():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(3)
    init, a, o = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(9, 2, 3))

    def hand(i, a, o):
        def step(alpha, ot):
            return jax.nn.logsumexp(alpha[:, :, None] + a, 1) + ot, None
        alpha, _ = jax.lax.scan(step, jnp.broadcast_to(i, (2, 3)), o)
        return jax.nn.logsumexp(alpha, -1)

    weights = jnp.array([1.0, -2.0])
    args = tuple(jnp.asarray(x) for x in (init, a, o))
    expected = jax.grad(lambda *xs: (hand(*xs) * weights).sum(), argnums=(0, 1, 2))(*args)
    fc.set_backend("jax")
    try:
        both = jax.jit(jax.grad(lambda *xs: sum(
            (_program(*xs, strategy) * weights).sum() for strategy in ("parallel", "sequential")),
            argnums=(0, 1, 2)))(*args)
    finally:
        fc.set_backend("numpy")
    for g_actual, g_expected in zip(both, expected):
        np.testing.assert_allclose(np.asarray(g_actual), 2 * np.asarray(g_expected), rtol=1e-9,
                                   atol=1e-12)


def test_fast_filter_recomputes_lost_digits():
    # Under jax the filter runs in probability space; transitions peaking elsewhere than the
    # carry make its sums underflow, and the chain is recomputed exactly in log space.
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a = np.array([[0.0, -2000.0], [-2000.0, 0.0]])
    o = np.zeros((6, 1, 2))
    o[3, 0, 0] = -5000.0  # state 0 impossible at step 3: the path must cross over
    init = np.array([0.0, -3000.0])
    expected = _program(init, a, o, "sequential")
    assert np.isfinite(expected).all()
    fc.set_backend("jax")
    try:
        actual = jax.jit(lambda *xs: _program(*xs, "sequential"))(
            *(jnp.asarray(x) for x in (init, a, o)))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-12)


@pytest.mark.parametrize("k,duration,batch", [(3, 7, 1), (4, 300, 1), (4, 60, 16), (24, 40, 1),
                                               (24, 30, 3)])
def test_fast_filter_layouts(k, duration, batch):
    # The jitted filter's layouts, chosen by size: exps inside the loop (tiny chains) or
    # before it, a fused multiply-and-sum or a matrix product for the step, the untracked
    # loop (every transition well above the underflow floor) or the tracked one (a
    # transition of weight zero); and a step where every state is impossible (total -inf).
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    rng = np.random.default_rng(k + duration)
    init, a, o = rng.normal(size=k), rng.normal(size=(k, k)), rng.normal(size=(duration, batch, k))
    zero = a.copy()
    zero[0, 1] = -np.inf
    dead = o.copy()
    dead[duration // 2, 0] = -np.inf
    fc.set_backend("jax")
    try:
        run = jax.jit(lambda *xs: _program(*xs, "sequential"))
        for case in ((init, a, o), (init, zero, o), (init, a, dead)):
            actual = np.asarray(run(*(jnp.asarray(x) for x in case)))
            expected = _numpy_forward(*case)
            assert np.isneginf(actual[0]) == np.isneginf(expected[0])
            np.testing.assert_allclose(actual, expected, rtol=1e-10)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("duration", [300, 5000])
def test_fast_filter_time_varying_transitions(duration):
    # A transition matrix per step (exps inside the loop for a small carry up to a few
    # thousand steps, before it beyond), jitted, against a numpy forward algorithm.
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(duration)
    k = 2
    init, a = rng.normal(size=k), rng.normal(size=(duration, k, k))
    o = rng.normal(size=(duration, k))
    alpha = init
    for t in range(duration):
        alpha = np.logaddexp.reduce(alpha[:, None] + a[t], axis=0) + o[t]
    expected = np.logaddexp.reduce(alpha)

    def program(i, a_, o_):
        it = fc.Tensor(i, {"x": fc.Bint[k]})
        at = fc.Tensor(a_, {"t": fc.Bint[duration], "x": fc.Bint[k], "y": fc.Bint[k]})
        ot = fc.Tensor(o_, {"t": fc.Bint[duration], "y": fc.Bint[k]})
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, at + ot, "t", {"x": "y"},
                                  strategy="sequential")
        return (it + chain).reduce(ops.logaddexp, {"x", "y"}).data

    fc.set_backend("jax")
    try:
        actual = jax.jit(program)(*(jax.numpy.asarray(x) for x in (init, a, o)))
    finally:
        fc.set_backend("numpy")
    np.testing.assert_allclose(float(actual), expected, rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_eager_probability_filter(backend):
    # Eagerly the log-space filter runs in probability space when every shifted transition
    # is well above the underflow floor, else in log space; both against the numpy forward
    # algorithm, with a step where every state is impossible, a transition of weight zero,
    # batch dims only the transition or only the observations have, and 300 steps (more
    # than one block of normalizers).
    if backend == "torch":
        torch = pytest.importorskip("torch")
        to = torch.as_tensor
    else:
        to = np.asarray
    rng = np.random.default_rng(5)
    k, duration = 5, 300
    init, a, o = rng.normal(size=k), rng.normal(size=(k, k)), rng.normal(size=(duration, 2, k))
    zero = a.copy()
    zero[1, 2] = -np.inf
    dead = o.copy()
    dead[7, 1] = -np.inf
    fc.set_backend(backend)
    try:
        for case in ((init, a, o), (init, zero, o), (init, a, dead), (init, a, o[:, :1])):
            actual = np.asarray(_program(*(to(x) for x in case), "sequential"))
            np.testing.assert_allclose(actual, _numpy_forward(*case), rtol=1e-10)
        # A transition per batch element: each chain of the batch its own matrix.
        ab = rng.normal(size=(2, k, k))
        i = fc.Tensor(to(init), {"x": fc.Bint[k]})
        at = fc.Tensor(to(ab), {"b": fc.Bint[2], "x": fc.Bint[k], "y": fc.Bint[k]})
        ot = fc.Tensor(to(o), {"t": fc.Bint[duration], "b": fc.Bint[2], "y": fc.Bint[k]})
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, at + ot, "t", {"x": "y"},
                                  strategy="sequential")
        actual = np.asarray((i + chain).reduce(ops.logaddexp, {"x", "y"}).align(("b",)).data)
        expected = [_numpy_forward(init, ab[j], o[:, j:j + 1])[0] for j in range(2)]
        np.testing.assert_allclose(actual, expected, rtol=1e-10)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "jit"])
def test_filter_message_keeps_far_states(backend):
    # The forward message (last states kept) where one state's weight is e^-900 below the
    # others at the last step: in probability space it rounds to zero, so the filter hands
    # the chain to log space, which keeps its finite log weight (never -inf for it).
    rng = np.random.default_rng(6)
    k, duration = 4, 30
    init, a, o = rng.normal(size=k), rng.normal(size=(k, k)), rng.normal(size=(duration, 1, k))
    o[-1, 0, 2] = -900.0
    alpha = init[None]
    for t in range(duration):
        alpha = np.logaddexp.reduce(alpha[:, :, None] + a, axis=1) + o[t]

    def message(i, a_, o_):
        it = fc.Tensor(i, {"x": fc.Bint[k]})
        at = fc.Tensor(a_, {"x": fc.Bint[k], "y": fc.Bint[k]})
        ot = fc.Tensor(o_, {"t": fc.Bint[duration], "b": fc.Bint[1], "y": fc.Bint[k]})
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, at + ot, "t", {"x": "y"},
                                  strategy="sequential")
        return (it + chain).reduce(ops.logaddexp, "x").align(("b", "y")).data

    name = "jax" if backend == "jit" else backend
    to = {"numpy": np.asarray, "torch": lambda x: pytest.importorskip("torch").as_tensor(x),
          "jax": lambda x: pytest.importorskip("jax").numpy.asarray(x)}[name]
    run = pytest.importorskip("jax").jit(message) if backend == "jit" else message
    fc.set_backend(name)
    try:
        actual = np.asarray(run(*(to(x) for x in (init, a, o))))
    finally:
        fc.set_backend("numpy")
    assert np.isfinite(actual).all()
    np.testing.assert_allclose(actual, alpha, rtol=1e-12)


def test_long_chain_no_recursion_bounded_memory():
    # 10^5 steps (parallel) under a recursion limit far below the chain's length: nothing
    # recurses per step. The sequential loop runs 5,000 steps under the same limit (12 times
    # it; a Python loop on numpy, slow under tracemalloc), in bounded memory: its carry is one
    # vector, so its peak stays a few copies of the input (3.4 of them at 5,000 steps as at
    # 20,000), as the parallel scan's does; a carry kept per step (~100 bytes) would exceed 4.
    import tracemalloc

    rng = np.random.default_rng(4)
    init, a = rng.normal(size=3), rng.normal(size=(3, 3)) - 1.0
    o = rng.normal(size=(100_000, 1, 3))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        parallel = _program(init, a, o, "parallel")
        tracemalloc.start()
        sequential = _program(init, a, o[:5_000], "sequential")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        chain = fc.Tensor(rng.normal(size=(100_000, 2, 2)),
                          {"t": fc.Bint[100_000], "p": fc.Bint[2], "c": fc.Bint[2]})
        matrix = MarkovProduct(ops.logaddexp, ops.add, chain, "t", {"p": "c"})
        g = random_gaussian({"t": fc.Bint[100_000], "p": fc.Real, "c": fc.Real})
        gauss = MarkovProduct(ops.logaddexp, ops.add, g, "t", {"p": "c"}, strategy="parallel")
    finally:
        sys.setrecursionlimit(limit)
    assert peak < 4 * o[:5_000].nbytes, peak
    assert np.isfinite(parallel).all() and np.isfinite(sequential).all()
    np.testing.assert_allclose(sequential, _numpy_forward(init, a, o[:5_000]), rtol=1e-9)
    assert np.isfinite(matrix.data).all()
    assert np.isfinite(gauss.reduce(ops.logaddexp).data)


# -- the parallel tree with its boundaries, against a numpy forward algorithm -------------------
def _np_semiring(sum_op):
    return {ops.logaddexp: np.logaddexp.reduce, ops.max: np.max}[sum_op]


def _np_chain(sum_op, mats, left, right):
    # The left fold of the step matrices (T, B, K, K) in the semiring (sum_op, +), by hand.
    red = _np_semiring(sum_op)
    total = mats[0]
    for m in mats[1:]:
        total = red(total[:, :, :, None] + m[:, None, :, :], axis=2)
    if left is not None:
        total = red(left[:, :, None] + total, axis=1)  # (B, C)
        return total if right is None else red(total + right, axis=1)
    return total if right is None else red(total + right[:, None, :], axis=2)


# A large K (the kernels' shifted product) needs no long chain.
_TREE_SIZES = [(k, batch, duration) for k, batch in [(3, 1), (3, 4), (48, 1)]
               for duration in (2, 3, 5, 7, 8, 13, 100) if k < 48 or duration <= 8]


@pytest.mark.parametrize("sides", ["none", "left", "right", "both"])
@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max], ids=lambda op: op.name)
@pytest.mark.parametrize("k,batch,duration", _TREE_SIZES)
def test_parallel_tree_matches_forward_algorithm(k, batch, duration, sum_op, sides):
    from funsor_core.algorithms.chains.discrete import chain_product

    rng = np.random.default_rng(duration * 7 + k)
    trans = rng.normal(size=(k, k))
    obs = rng.normal(size=(duration, batch, k))
    left = rng.normal(size=(batch, k)) if sides in ("left", "both") else None
    right = rng.normal(size=(batch, k)) if sides in ("right", "both") else None
    factors = (trans[None, None], obs[:, :, None, :])
    actual = chain_product(sum_op, ops.add, factors, "parallel", left, right)
    expected = _np_chain(sum_op, trans + obs[:, :, None, :], left, right)
    assert actual.shape == expected.shape
    assert np.allclose(actual, expected, atol=1e-10)


# -- the reduction of a chain with its boundary skips the intermediate Contraction term only
# where no other rule would see that term.
def _hmm_likelihood(a, o, init):
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, a + o, "t", {"x": "y"})
    return (init + mp).reduce(ops.logaddexp, {"x", "y"})


def _np_likelihood(a, o, init):
    alpha = np.broadcast_to(init.data, (o.data.shape[1], init.data.shape[0]))
    for obs in o.data:
        alpha = np.logaddexp.reduce(alpha[:, :, None] + a.data, axis=1) + obs
    return np.logaddexp.reduce(alpha, axis=-1)


@pytest.mark.parametrize("rewrite", [False, True])
def test_user_rule_steps_the_fused_chain_aside(scratch_exact_rules, rewrite):
    from funsor_core.engine.interpreter import Tuple
    from funsor_core.terms.contraction import Contraction

    a, o, init, _ = _hmm(np.random.default_rng(0), 6, 2)
    expected = _np_likelihood(a, o, init)
    assert np.allclose(_hmm_likelihood(a, o, init).data, expected)  # the fast path
    fired = []

    @scratch_exact_rules.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                            Tuple[MarkovProduct, fc.Tensor])
    def user_contraction_markov_tensor(red_op, bin_op, reduced_vars, terms):
        fired.append(reduced_vars)
        return fc.Tensor(np.zeros(2), {"b": fc.Bint[2]}) if rewrite else None

    actual = _hmm_likelihood(a, o, init)
    assert fired == [frozenset({"x", "y"})], "the user's rule was skipped"
    assert np.allclose(actual.data, np.zeros(2) if rewrite else expected)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_scaled_tree_falls_back_where_digits_would_be_lost(backend):
    # Shifted by its maximum, each matrix is [[1, 0], [0, 1]] or [[0, 1], [1, 0]] to double
    # precision (exp(-1000) underflows), so a linear-space product has a zero where the true
    # log weight is -1000 + log 2: the check must send the chain to the exact tree.
    from funsor_core.algorithms.chains.discrete import chain_product
    from funsor_core.algorithms.chains.discrete_tree import scaled_log_tree

    a = np.array([[0.0, -1000.0], [-1000.0, 0.0]])
    b = np.array([[-1000.0, 0.0], [0.0, -1000.0]])
    mats = np.stack([a, b, a, b, a])[:, None]  # (T, batch, K, K)
    to = (lambda x: x) if backend == "numpy" else __import__("torch").tensor
    assert scaled_log_tree(to(mats)) is None
    for left, right in [(None, None), (np.zeros((1, 2)), None), (np.zeros((1, 2)),) * 2]:
        actual = chain_product(ops.logaddexp, ops.add, (to(mats),), "parallel",
                               None if left is None else to(left),
                               None if right is None else to(right))
        expected = _np_chain(ops.logaddexp, mats, left, right)
        assert np.allclose(np.asarray(actual), expected, atol=1e-9)
        assert np.isfinite(np.asarray(actual)).all()


@pytest.mark.parametrize("duration", [2, 3, 6, 33])
def test_scaled_tree_matches_the_exact_tree(duration):
    from funsor_core.algorithms.chains.discrete_tree import log_tree, scaled_log_tree

    mats = np.random.default_rng(duration).normal(scale=3.0, size=(duration, 2, 3, 3))
    for stop in (1, 2):
        scaled = scaled_log_tree(mats, stop)
        exact = log_tree(ops.logaddexp, ops.add, mats, stop)
        if duration <= stop:
            assert scaled is None
            continue
        assert len(scaled) == exact.shape[0]
        # The pieces may split the total differently; their product is the same.
        total = list(scaled)
        if stop == 2 and len(total) == 2:
            total = [np.logaddexp.reduce(total[0][..., :, :, None] + total[1][..., None], -2)]
            exact = [np.logaddexp.reduce(exact[0][..., :, :, None] + exact[1][..., None], -2)]
        assert np.allclose(total[0], exact[0], atol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_left_to_right_chain_takes_the_exact_tree(backend):
    # True zeros (a left-to-right HMM: no way back to an earlier state) fail the scaled
    # tree's check at its first round; the exact tree gives the -inf entries.
    from funsor_core.algorithms.chains.discrete import chain_product
    from funsor_core.algorithms.chains.discrete_tree import scaled_log_tree

    rng = np.random.default_rng(5)
    trans = np.where(np.triu(np.ones((3, 3))) > 0, rng.normal(size=(3, 3)), -np.inf)
    mats = trans + rng.normal(size=(11, 1, 1, 3))  # (T, batch, K, K)
    to = (lambda x: x) if backend == "numpy" else __import__("torch").tensor
    assert scaled_log_tree(to(mats)) is None
    left = np.zeros((1, 3))
    for lt in (None, left):
        with np.errstate(invalid="ignore"):  # the oracle's logaddexp of -inf entries
            expected = _np_chain(ops.logaddexp, mats, lt, None)
        actual = np.asarray(chain_product(ops.logaddexp, ops.add, (to(mats),), "parallel",
                                          None if lt is None else to(lt)))
        assert np.array_equal(np.isinf(actual), np.isinf(expected))
        assert np.allclose(actual[np.isfinite(actual)], expected[np.isfinite(expected)])
