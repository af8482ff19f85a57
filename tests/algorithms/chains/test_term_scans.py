"""funsor's ``sequential_sum_product`` idiom (``term_scans``), which now runs a chain of
Tensors as one ``MarkovProduct`` (the chain kernels): against a numpy fold of the step
matrices written here, in every semiring, with one and two step pairs and a batch input, on
every backend and under ``jax.jit``; under ``lazy`` it stays one term that evaluates to the
same numbers."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import MarkovProduct, sequential_sum_product
from interpretations import lazy

# (sum_op, prod_op, numpy sum over an axis, numpy product, positive factors)
SEMIRINGS = [
    (ops.logaddexp, ops.add, np.logaddexp.reduce, np.add, False),
    (ops.add, ops.mul, np.sum, np.multiply, True),
    (ops.max, ops.add, np.max, np.add, False),
    (ops.min, ops.add, np.min, np.add, False),
]


def _chain(seed, duration, pairs, batch, positive):
    # trans(t, [b], p0, c0, [p1, c1]) and its array laid out (T, B, S, S), S the flat state.
    rng = np.random.default_rng(seed)
    sizes = [2, 3][:pairs]
    shape = (duration, batch) + tuple(s for s in sizes for _ in range(2))
    data = rng.uniform(0.2, 2.0, size=shape) if positive else rng.normal(size=shape)
    inputs = {"t": fc.Bint[duration], "b": fc.Bint[batch]}
    for k, size in enumerate(sizes):
        inputs[f"p{k}"] = fc.Bint[size]
        inputs[f"c{k}"] = fc.Bint[size]
    step = {f"p{k}": f"c{k}" for k in range(pairs)}
    prevs = [2 + 2 * k for k in range(pairs)]
    currs = [3 + 2 * k for k in range(pairs)]
    flat = data.transpose([0, 1] + prevs + currs)
    states = int(np.prod(sizes))
    return data, inputs, step, flat.reshape(duration, batch, states, states)


def _fold(np_sum, np_prod, mats):
    # The semiring product of the T matrices (T, B, S, S), one step at a time.
    total = mats[0]
    for m in mats[1:]:
        total = np_sum(np_prod(total[..., :, :, None], m[..., None, :, :]), axis=-2)
    return total


def _result_array(result, pairs, batch):
    names = ("b",) + tuple(f"p{k}" for k in range(pairs)) + tuple(f"c{k}" for k in range(pairs))
    data = np.asarray(ops.to_numpy(result.align(names).data))
    states = int(np.prod(data.shape[1:])) if pairs else 1
    side = int(round(states ** 0.5))
    return data.reshape(batch, side, side)


@pytest.mark.parametrize("pairs", [1, 2])
@pytest.mark.parametrize("sum_op,prod_op,np_sum,np_prod,positive", SEMIRINGS,
                         ids=lambda x: getattr(x, "name", ""))
def test_sequential_sum_product_is_the_fold(backend, sum_op, prod_op, np_sum, np_prod,
                                            positive, pairs):
    for duration in (1, 2, 7, 16):
        data, inputs, step, mats = _chain(duration + pairs, duration, pairs, 2, positive)
        trans = fc.Tensor(fc.numeric_array(data), inputs)
        result = sequential_sum_product(sum_op, prod_op, trans, "t", step)
        assert isinstance(result, fc.Tensor)
        assert set(result.inputs) == set(inputs) - {"t"}
        np.testing.assert_allclose(_result_array(result, pairs, 2),
                                   _fold(np_sum, np_prod, mats), rtol=1e-9, atol=1e-12)


def test_sequential_sum_product_under_jit():
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        data, inputs, step, mats = _chain(0, 33, 2, 3, False)

        def total(x):
            trans = fc.Tensor(x, inputs)
            z = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", step)
            return z.reduce(ops.logaddexp, frozenset(step) | frozenset(step.values())).data

        actual = jax.jit(total)(fc.numeric_array(data))
        expected = np.logaddexp.reduce(_fold(np.logaddexp.reduce, np.add, mats), axis=(-2, -1))
        np.testing.assert_allclose(np.asarray(actual), expected, rtol=1e-9)
    finally:
        fc.set_backend("numpy")


def test_sequential_sum_product_stays_one_term_under_lazy():
    # funsor's lazy idiom: one MarkovProduct (the adjoint places paths along it whole), which
    # evaluates to the fold; a reduction of it too.
    data, inputs, step, mats = _chain(1, 9, 1, 2, False)
    trans = fc.Tensor(data, inputs)
    with lazy:
        chain = sequential_sum_product(ops.max, ops.add, trans, "t", step)
        root = chain.reduce(ops.max, frozenset({"p0", "c0"}))
    assert isinstance(chain, MarkovProduct)
    np.testing.assert_allclose(_result_array(fc.reinterpret(chain), 1, 2),
                               _fold(np.max, np.add, mats))
    np.testing.assert_allclose(np.asarray(fc.reinterpret(root).align(("b",)).data),
                               _fold(np.max, np.add, mats).max(axis=(-2, -1)))


@pytest.mark.parametrize("case", ["zeros", "spread"])
def test_sequential_sum_product_under_jit_keeps_every_digit(case):
    # Under jax.jit the log normalizer runs in linear space, checked on the device: true
    # zeros (a left-to-right chain) and products whose entries span more than the float
    # range send it to the exact log-space tree; both agree with the numpy fold.
    jax = pytest.importorskip("jax")
    fc.set_backend("jax")
    try:
        data, inputs, step, mats = _chain(2, 21, 1, 2, False)
        if case == "zeros":
            data = np.where(np.triu(np.ones((2, 2))) > 0, data, -np.inf)
        else:
            data = data * np.array([1.0, 900.0])  # exp(-900) underflows in linear space
        mats = data.reshape(mats.shape)

        def product(x):
            return sequential_sum_product(ops.logaddexp, ops.add, fc.Tensor(x, inputs), "t",
                                          step).align(("b", "p0", "c0")).data

        actual = np.asarray(jax.jit(product)(fc.numeric_array(data)))
        expected = _fold(np.logaddexp.reduce, np.add, mats)
        np.testing.assert_allclose(actual, expected, rtol=1e-9)
    finally:
        fc.set_backend("numpy")


def _lazy_step(torch, duration, k, plate):
    # Pyro's TraceMarkovEnum_ELBO step, built under lazy: a transition matrix whose prev
    # name is renamed (a lazy Subs) plus observations summed over a plate (a lazy Reduce).
    rng = np.random.default_rng(3)
    mat = torch.tensor(rng.normal(size=(k, k)), requires_grad=True)
    obs = torch.tensor(rng.normal(size=(duration, k, plate)))
    with lazy:
        step = (fc.Tensor(mat, {"raw": fc.Bint[k], "x": fc.Bint[k]})(raw="_PREV_x")
                + fc.Tensor(obs, {"t": fc.Bint[duration], "x": fc.Bint[k], "i": fc.Bint[plate]})
                .reduce(ops.add, "i"))
    return mat, obs, step


@pytest.mark.parametrize("scan", ["sequential", "sarkka_bilmes"])
def test_lazy_tensor_step_is_one_markov_product(scan):
    # A step still lazy but made of Tensors is one MarkovProduct (evaluated once by the chain
    # kernels, not log2(T) rounds of substitutions into the lazy step): the same value as a
    # torch fold of the step matrices written here, and the same gradient.
    from funsor_core.sum_product import sarkka_bilmes_product

    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        mat, obs, step = _lazy_step(torch, 13, 3, 4)
        with lazy:
            if scan == "sequential":
                chain = sequential_sum_product(ops.logaddexp, ops.add, step, "t",
                                               {"_PREV_x": "x"})
                assert isinstance(chain, MarkovProduct)
            else:
                chain = sarkka_bilmes_product(ops.logaddexp, ops.add, step,
                                              fc.Variable("t", fc.Bint[13]))
        actual = fc.reinterpret(chain).align(("_PREV_x", "x")).data
        total = mat + obs.sum(-1)[:, None, :]  # (t, prev, curr)
        expected = total[0]
        for m in total[1:]:
            expected = torch.logsumexp(expected[:, :, None] + m[None], dim=1)
        np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(),
                                   rtol=1e-10)
        grad, = torch.autograd.grad(actual.logsumexp((0, 1)), mat)
        want, = torch.autograd.grad(expected.logsumexp((0, 1)), mat)
        np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=1e-10)
    finally:
        fc.set_backend("numpy")


def _funsor_rounding(backend, m):
    # funsor 0.4.8's sequential_sum_product written out in the backend's own array calls:
    # rounds pairing steps (0, 1), (2, 3), ... (an odd last step passed on), each pair by
    # funsor's log-space einsum: both operands shifted by their maxima over the summed
    # states, exponentiated, a matrix product, its log, plus the two shifts.
    if backend == "torch":
        import torch as xp

        def amax(x, d):
            return x.amax(d, keepdim=True)
        cat = xp.cat
    else:
        xp = pytest.importorskip("jax.numpy") if backend == "jax" else np

        def amax(x, d):
            return x.max(d, keepdims=True)
        cat = xp.concatenate
    while m.shape[0] > 1:
        n = m.shape[0]
        a, b = m[0:n - 1:2], m[1::2]
        sa, sb = amax(a, -1), amax(b, -2)
        q = (sa + sb) + xp.log(xp.matmul(xp.exp(a - sa), xp.exp(b - sb)))
        m = cat([q, m[n - 1:]]) if n % 2 else q
    return m[0]


def test_float32_chain_rounds_as_funsor(backend):
    # NumPyro compares its scans with its unrolled models to 1e-7: float32 chains keep
    # funsor's association and its pairs' rounding, to the bit, eagerly and under jax.jit.
    # (jax: one compiled program each side; eagerly the chain runs the same program.)
    for duration in (7,) if backend == "jax" else (2, 7):
        data, inputs, step, _ = _chain(duration, duration, 1, 2, False)
        x = fc.numeric_array((3.0 * data).astype(np.float32))

        def product(x, inputs=inputs, step=step):
            trans = fc.Tensor(x, inputs)
            return sequential_sum_product(ops.logaddexp, ops.add, trans, "t", step).align(
                ("b", "p0", "c0")).data

        def oracle(x):
            return _funsor_rounding(backend, x)

        if backend == "jax":
            import jax
            product, oracle = jax.jit(product), jax.jit(oracle)
        expected = np.asarray(oracle(x))
        assert np.array_equal(np.asarray(ops.to_numpy(product(x))), expected)


def test_float32_chain_keeps_its_digits_where_funsor_rounding_cannot(backend):
    # True zeros (a left-to-right chain) and products spanning more than float32's range:
    # funsor's shifted pairs would lose digits (or give log 0), so the chain takes the
    # exact log-space tree: against a float64 numpy fold.
    data, inputs, step, mats = _chain(4, 9, 1, 2, False)
    data = np.where(np.triu(np.ones((2, 2))) > 0, data, -np.inf) * np.array([1.0, 60.0])
    mats = data.reshape(mats.shape)
    trans = fc.Tensor(fc.numeric_array(data.astype(np.float32)), inputs)
    result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", step)
    actual = np.asarray(ops.to_numpy(result.align(("b", "p0", "c0")).data))
    np.testing.assert_allclose(actual, _fold(np.logaddexp.reduce, np.add, mats), rtol=1e-5)


def test_float32_chain_gradient():
    torch = pytest.importorskip("torch")
    fc.set_backend("torch")
    try:
        data, inputs, step, _ = _chain(5, 11, 1, 2, False)
        x = torch.tensor(data, dtype=torch.float32, requires_grad=True)
        total = sequential_sum_product(ops.logaddexp, ops.add, fc.Tensor(x, inputs), "t", step)
        grad, = torch.autograd.grad(total.data.logsumexp((0, 1, 2)), x)
        x64 = torch.tensor(data, requires_grad=True)
        fold = x64[0]  # x64 is (t, b, p0, c0)
        for step_mat in x64[1:]:
            fold = torch.logsumexp(fold[..., :, :, None] + step_mat[..., None, :, :], dim=-2)
        want, = torch.autograd.grad(fold.logsumexp((0, 1, 2)), x64)
        np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    finally:
        fc.set_backend("numpy")


@pytest.mark.parametrize("scan", ["sequential_sum_product", "naive_sequential_sum_product",
                                  "mixed_sequential_sum_product"])
def test_one_step_gaussian_chain_is_the_step(scan):
    # Found by the differential fuzzer (h93): at T = 1 the chain kernel returned the step plus
    # a zero Tensor (a lazy Contraction) where funsor 0.4.8 returns the step, a Gaussian.
    # Oracle: a product over one step is that step; its log density by numpy from the
    # square-root information arrays, -|x @ prec_sqrt - white_vec|^2 / 2.
    import funsor_core.sum_product as sp

    rng = np.random.default_rng(3)
    white, root = rng.normal(size=(1, 3)), rng.normal(size=(1, 2, 3))
    trans = fc.Gaussian(white_vec=white, prec_sqrt=root,
                        inputs={"t": fc.Bint[1], "x_prev": fc.Real, "x_curr": fc.Real})
    result = getattr(sp, scan)(ops.logaddexp, ops.add, trans, fc.Variable("t", fc.Bint[1]),
                               {"x_prev": "x_curr"})
    assert isinstance(result, fc.Gaussian)
    for point in rng.normal(size=(4, 2)):
        value = result(x_prev=float(point[0]), x_curr=float(point[1])).data
        np.testing.assert_allclose(value, -0.5 * np.sum((point @ root[0] - white[0]) ** 2))


def _gaussian_chain_numpy(white, root, first, last):
    # log of the integral over x_1..x_{T-1} of exp(sum_t -|[x_t, x_{t+1}] @ root_t - white_t|^2
    # / 2) at x_0 = first, x_T = last: the joint quadratic in all T + 1 scalars, then the
    # Gaussian integral over the middle ones in closed form.
    T = len(white)
    J, h, c = np.zeros((T + 1, T + 1)), np.zeros(T + 1), -0.5 * np.sum(white ** 2)
    for t in range(T):
        J[t:t + 2, t:t + 2] += root[t] @ root[t].T
        h[t:t + 2] += root[t] @ white[t]
    ends, mid = [0, T], list(range(1, T))
    z = np.array([first, last])
    out = -0.5 * z @ J[np.ix_(ends, ends)] @ z + h[ends] @ z + c
    if mid:
        jmm = J[np.ix_(mid, mid)]
        r = h[mid] - J[np.ix_(mid, ends)] @ z
        out += 0.5 * r @ np.linalg.solve(jmm, r) + 0.5 * len(mid) * np.log(2 * np.pi)
        out -= 0.5 * np.linalg.slogdet(jmm)[1]
    return out


@pytest.mark.parametrize("num_segments", [None, 1, 2, 3, 4, 5])
@pytest.mark.parametrize("time", ["t", "variable"])
def test_gaussian_chain_every_schedule_and_time_spelling(num_segments, time):
    # The differential fuzzer (h93) caught a one-step shortcut that read the step count of a
    # time given by name as 1: mixed_sequential_sum_product, which passes the name on, gave
    # the first step alone. Oracle: the chain's integral in closed form by numpy.
    from funsor_core.sum_product import mixed_sequential_sum_product

    rng = np.random.default_rng(5)
    white, root = rng.normal(size=(5, 2)), rng.normal(size=(5, 2, 2))
    trans = fc.Gaussian(white_vec=white, prec_sqrt=root,
                        inputs={"t": fc.Bint[5], "x_prev": fc.Real, "x_curr": fc.Real})
    t = fc.Variable("t", fc.Bint[5]) if time == "variable" else "t"
    step = {"x_prev": "x_curr"}
    results = [mixed_sequential_sum_product(ops.logaddexp, ops.add, trans, t, step,
                                            num_segments)]
    if num_segments is None:
        results.append(sequential_sum_product(ops.logaddexp, ops.add, trans, t, step))
    for result in results:
        for first, last in rng.normal(size=(3, 2)):
            value = result(x_prev=float(first), x_curr=float(last)).data
            np.testing.assert_allclose(value, _gaussian_chain_numpy(white, root, first, last))
