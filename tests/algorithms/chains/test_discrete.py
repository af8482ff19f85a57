"""Every array kernel of a discrete log-space chain (``chains.discrete._run``, each kernel and
derivative that ``cost_model.choose_discrete_kernel`` can choose, and repeated squaring) on
chains with ``-inf`` entries: states that no path reaches. Values and gradients against
enumeration of every path in numpy: unreachable states get marginal 0 and every gradient is
finite (the backends' logsumexp differentiates to NaN on a slice of ``-inf``).
"""

import itertools

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.chains.discrete import _run
from funsor_core.algorithms.chains.discrete_tree import UNIT
from funsor_core.engine.backend import backend_of

K, T, B = 3, 4, 2
NEG = -np.inf

# (kernel, derivative, sides, power): what choose_discrete_kernel returns, with the boundaries
# given (an array, UNIT: summed with no factor, or None: left open); the filters need a left
# side, and a power of one step (repeated squaring) always runs the sequential fold.
ALL_SIDES = [("array", "array"), ("array", None), (None, "array"), (None, None),
             (UNIT, "array"), ("array", UNIT)]
EAGER = ([("tree", None, s, False) for s in ALL_SIDES]
         + [("sequential", None, s, p) for s in ALL_SIDES for p in (False, True)
            if not (p and UNIT in s)]
         + [("eager_log_filter", None, s, False) for s in ALL_SIDES if s[0] is not None])
# Compiled, each program costs seconds to build: every kernel and derivative once, and the
# tree and the fold with each kind of boundary.
COMPILED = ([(k, d, ("array", "array"), False) for k, d in [
    ("scan_log_filter", "sequential"), ("scan_log_filter", "fast_log_filter"),
    ("fast_log_filter_inloop", "fast_log_filter"), ("fast_log_filter", "tree")]]
    + [("fast_log_filter", None, s, False) for s in [("array", "array"), ("array", None)]]
    + [("tree", None, s, False) for s in [("array", "array"), (None, None), (UNIT, "array")]]
    + [("sequential", None, s, p) for s, p in [(("array", "array"), True),
                                                ((None, "array"), False),
                                                (("array", UNIT), False)]])


def _chain(seed: int):
    # A left-to-right HMM (a state moves on or stays; the last one stays) whose first state is
    # state 0, with observation weights of which some are -inf: several states are
    # unreachable at each time, as are some transitions, and every sequence has a finite path.
    rng = np.random.default_rng(seed)
    a = np.full((K, K), NEG)
    for i in range(K):
        a[i, i] = rng.normal()
        if i + 1 < K:
            a[i, i + 1] = rng.normal()
    o = rng.normal(size=(T, B, 1, K))
    o[1, 0, 0, 0] = o[2, 1, 0, 1] = NEG
    left = np.where(np.arange(K) == 0, rng.normal(size=(B, K)), NEG)
    right = rng.normal(size=(B, K))
    right[1, 2] = NEG
    return a[None, None], o, left, right


def _oracle(left, mats, right):
    # log sum over paths of exp(left[x0] + sum_t mats[t, x_t, x_t+1] + right[x_T]) per
    # sequence, and the derivatives of the sum over sequences with respect to each of them.
    paths = np.array(list(itertools.product(range(K), repeat=T + 1)))
    totals, d_left, d_mats, d_right = [], np.zeros_like(left), np.zeros_like(mats), \
        np.zeros_like(right)
    for b in range(B):
        score = left[b, paths[:, 0]] + right[b, paths[:, -1]]
        for t in range(T):
            score = score + mats[t, b, paths[:, t], paths[:, t + 1]]
        total = np.logaddexp.reduce(score)
        assert np.isfinite(total)
        w = np.exp(score - total)
        np.add.at(d_left[b], paths[:, 0], w)
        np.add.at(d_right[b], paths[:, -1], w)
        for t in range(T):
            np.add.at(d_mats[t, b], (paths[:, t], paths[:, t + 1]), w)
        totals.append(total)
    return np.array(totals), d_left, d_mats, d_right


def _case(seed, sides, power):
    a, o, left, right = _chain(seed)
    if power:  # one step repeated: no observations
        o = np.zeros_like(o[:1])
    ls, rs = sides
    left = left if ls == "array" else np.zeros((B, K))
    right = right if rs == "array" else np.zeros((B, K))
    mats = np.broadcast_to(a + o, (T, B, K, K))
    total, d_left, d_mats, d_right = _oracle(left, mats, right)
    d_a = d_mats.sum((0, 1))[None, None]
    d_o = d_mats.sum(2)[:, :, None, :]
    if power:
        d_o = d_o.sum(0, keepdims=True)
    return (a, o, left, right), total, (d_a, d_o, d_left, d_right)


def _loss(xp_lse, kernel, derivative, sides, power, backend, a, o, left, right):
    # The kernel's result, its open boundaries summed against left / right: the total.
    ls, rs = sides
    has = [UNIT if s is UNIT else s is not None for s in sides]
    out = _run(ops.logaddexp, ops.add, kernel, derivative, T if power else None, has[0],
               has[1], backend, (a, o), left if ls == "array" else None,
               right if rs == "array" else None)
    if ls is None and rs is None:
        out = xp_lse(left[:, :, None] + out + right[:, None, :], (-2, -1))
    elif ls is None:
        out = xp_lse(left + out, -1)
    elif rs is None:
        out = xp_lse(out + right, -1)
    return out.sum()


def _params(cases):
    return [pytest.param(*case, id="-".join(str(x) for x in (case[0], case[1]) + case[2]
                                             + (case[3],))) for case in cases]


def _check(total, grads, expected_total, expected_grads, sides):
    # The gradients of a, o, and of left / right where they are arrays of the chain (UNIT
    # sums the states without one).
    np.testing.assert_allclose(total, expected_total.sum(), rtol=1e-10)
    used = (True, True) + tuple(side is not UNIT for side in sides)
    for actual, expected, u in zip(grads, expected_grads, used):
        if not u:
            continue
        assert np.isfinite(actual).all()
        np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kernel, derivative, sides, power", _params(EAGER))
def test_eager_kernels_with_unreachable_states(kernel, derivative, sides, power):
    torch = pytest.importorskip("torch")
    args, expected_total, expected_grads = _case(0, sides, power)
    # numpy: the value, without a warning (warnings are errors here) or a NaN.
    value = _loss(lambda x, axis: np.logaddexp.reduce(x, axis=axis), kernel, derivative,
                  sides, power, backend_of(args[0]), *args)
    np.testing.assert_allclose(value, expected_total.sum(), rtol=1e-10)
    tensors = [torch.tensor(x, requires_grad=True) for x in args]
    total = _loss(lambda x, axis: torch.logsumexp(x, axis), kernel, derivative, sides, power,
                  backend_of(tensors[0]), *tensors)
    total.backward()
    _check(total.item(), [None if t.grad is None else t.grad.numpy() for t in tensors],
           expected_total, expected_grads, sides)


@pytest.mark.parametrize("kernel, derivative, sides, power", _params(COMPILED))
def test_compiled_kernels_with_unreachable_states(kernel, derivative, sides, power):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    args, expected_total, expected_grads = _case(1, sides, power)
    backend = backend_of(jnp.zeros(1))

    def loss(*xs):
        return _loss(jax.nn.logsumexp, kernel, derivative, sides, power, backend, *xs)

    total, grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))(
        *(jnp.asarray(x) for x in args))
    _check(float(total), [np.asarray(g) for g in grads], expected_total, expected_grads, sides)
