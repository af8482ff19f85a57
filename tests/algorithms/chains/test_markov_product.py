"""MarkovProduct of discrete chains: every strategy against the naive left fold and against
brute-force enumeration in numpy, in every semiring, with one and two step pairs, with and
without batch inputs, for T sampled from 1..50 (odd, even and prime lengths, fixed seed).

Oracles: ``naive_sequential_sum_product`` (one pairwise contraction term per step: the
definition of the Markov product as a left fold) and, for small chains, the sum over every
path of the product of its steps, written with numpy loops here.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.chains.cost_model import (
    markov_strategy,
    parallel_rounds,
    recorded_choices,
)
from funsor_core.sum_product import (
    MarkovProduct,
    mixed_sequential_sum_product,
    naive_sequential_sum_product,
    sequential_sum_product,
)
from funsor_core.testing import assert_close
from interpretations import lazy

# T = 1..50 sampled with a fixed seed: always the edges, odd and even, primes and powers of 2.
_RNG = np.random.default_rng(2024)
DURATIONS = sorted({1, 2, 3, 4, 7, 8, 16, 17, 31, 32, 47, 50}
                   | set(_RNG.choice(np.arange(5, 50), 3, replace=False).tolist()))
STRATEGIES = ["parallel", "sequential", "auto"]
# (sum_op, prod_op, positive): factors are drawn positive for the (add, mul)-like pairs.
SEMIRINGS = [(ops.logaddexp, ops.add, False), (ops.add, ops.mul, True), (ops.max, ops.add, False),
             (ops.min, ops.add, False), (ops.max, ops.mul, True)]
NP_SUM = {ops.logaddexp: np.logaddexp.reduce, ops.add: np.sum, ops.max: np.max,
          ops.min: np.min}
NP_PROD = {ops.add: np.add, ops.mul: np.multiply}


def _chain(rng, duration, pairs, batch, positive, time="t"):
    """A transition Tensor with inputs time, (batch b), and ``pairs`` prev/curr pairs."""
    sizes = [2, 3][:pairs]
    inputs = {time: fc.Bint[duration]}
    if batch:
        inputs["b"] = fc.Bint[2]
    step = {}
    for k, size in enumerate(sizes):
        inputs[f"p{k}"] = fc.Bint[size]
        inputs[f"c{k}"] = fc.Bint[size]
        step[f"p{k}"] = f"c{k}"
    shape = tuple(d.size for d in inputs.values())
    data = rng.uniform(0.2, 2.0, size=shape) if positive else rng.normal(size=shape)
    return fc.Tensor(data, inputs), step


def _values(result, names):
    return np.asarray(result.align(tuple(names)).data)


@pytest.mark.parametrize("batch", [False, True], ids=["nobatch", "batch"])
@pytest.mark.parametrize("pairs", [1, 2])
@pytest.mark.parametrize("sum_op,prod_op,positive", SEMIRINGS,
                         ids=lambda x: getattr(x, "name", str(x)))
def test_strategies_equal_naive_fold(sum_op, prod_op, positive, pairs, batch):
    rng = np.random.default_rng(pairs + 2 * batch)
    for duration in DURATIONS:
        trans, step = _chain(rng, duration, pairs, batch, positive)
        expected = naive_sequential_sum_product(sum_op, prod_op, trans, "t", step)
        names = tuple(expected.inputs)
        for strategy in STRATEGIES:
            actual = MarkovProduct(sum_op, prod_op, trans, "t", step, strategy=strategy)
            assert isinstance(actual, fc.Tensor)
            assert dict(actual.inputs) == dict(expected.inputs)
            np.testing.assert_allclose(_values(actual, names), _values(expected, names),
                                       rtol=1e-9, atol=1e-12,
                                       err_msg=f"T={duration} {strategy}")


def _paths(sum_op, prod_op, data, size):
    # data: (T, K, K); returns (K, K): sum over paths x_0 .. x_T with fixed ends.
    duration = data.shape[0]
    out = np.empty((size, size))
    for first, last in itertools.product(range(size), repeat=2):
        totals = []
        for middle in itertools.product(range(size), repeat=duration - 1):
            path = (first, *middle, last)
            value = data[0, path[0], path[1]]
            for t in range(1, duration):
                value = NP_PROD[prod_op](value, data[t, path[t], path[t + 1]])
            totals.append(value)
        out[first, last] = NP_SUM[sum_op](np.array(totals))
    return out


@pytest.mark.parametrize("duration", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("sum_op,prod_op,positive", SEMIRINGS,
                         ids=lambda x: getattr(x, "name", str(x)))
def test_brute_force_enumeration(sum_op, prod_op, positive, duration):
    rng = np.random.default_rng(duration)
    trans, step = _chain(rng, duration, 1, False, positive)
    expected = _paths(sum_op, prod_op, np.asarray(trans.data), 2)
    for strategy in STRATEGIES:
        actual = MarkovProduct(sum_op, prod_op, trans, "t", step, strategy=strategy)
        np.testing.assert_allclose(_values(actual, ("p0", "c0")), expected, rtol=1e-10)


def test_or_and_semiring_reachability():
    # (or_, and_) on bool adjacency: reachable in exactly T steps (numpy matrix powers).
    rng = np.random.default_rng(0)
    adj = rng.uniform(size=(6, 4, 4)) < 0.4
    trans = fc.Tensor(adj, {"t": fc.Bint[6], "p": fc.Bint[4], "c": fc.Bint[4]}, dtype=2)
    expected = np.eye(4, dtype=int)
    for t in range(6):
        expected = (expected @ adj[t].astype(int)) > 0
    for strategy in STRATEGIES:
        actual = MarkovProduct(ops.or_, ops.and_, trans, "t", {"p": "c"}, strategy=strategy)
        np.testing.assert_array_equal(np.asarray(actual.align(("p", "c")).data), expected)


def test_time_absent_is_a_matrix_power():
    # A step without the time input repeats: T steps are its T-th power (numpy).
    m = np.array([[0.5, 0.5], [0.2, 0.8]])
    trans = fc.Tensor(m, {"p": fc.Bint[2], "c": fc.Bint[2]})
    for duration in (1, 2, 5, 13):
        time = fc.Variable("t", fc.Bint[duration])
        for strategy in STRATEGIES:
            actual = MarkovProduct(ops.add, ops.mul, trans, time, {"p": "c"}, strategy=strategy)
            np.testing.assert_allclose(_values(actual, ("p", "c")),
                                       np.linalg.matrix_power(m, duration))
    # No step pairs: the plain product over time (T copies without time).
    five = MarkovProduct(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[5]), {})
    np.testing.assert_allclose(_values(five, ("p", "c")), m ** 5)


def test_no_step_pairs_is_a_plate_product():
    rng = np.random.default_rng(1)
    trans = fc.Tensor(rng.normal(size=(5, 3)), {"t": fc.Bint[5], "i": fc.Bint[3]})
    actual = MarkovProduct(ops.logaddexp, ops.add, trans, "t", {})
    np.testing.assert_allclose(np.asarray(actual.data), trans.data.sum(0))


def test_step_names_rename_the_result():
    rng = np.random.default_rng(2)
    trans, step = _chain(rng, 6, 1, True, False)
    plain = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step)
    renamed = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step, {"p0": "a", "c0": "z"})
    assert set(renamed.inputs) == {"b", "a", "z"}
    np.testing.assert_allclose(_values(renamed, ("b", "a", "z")), _values(plain, ("b", "p0", "c0")))
    # Lazily: substituting a Variable renames the free step name (step_names), and
    # evaluating afterwards agrees with renaming the evaluated result.
    with lazy:
        mp = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step)
        sub = mp(p0="first")
    assert isinstance(sub, MarkovProduct) and set(sub.inputs) == {"b", "first", "c0"}
    value = fc.reinterpret(sub)
    np.testing.assert_allclose(_values(value, ("b", "first", "c0")),
                               _values(plain, ("b", "p0", "c0")))
    # A substituted value that mentions a bound name is not captured (alpha-renaming).
    with lazy:
        cross = mp(b=fc.Variable("t", fc.Bint[2]))
    assert set(cross.inputs) == {"t", "p0", "c0"}
    np.testing.assert_allclose(_values(fc.reinterpret(cross), ("t", "p0", "c0")),
                               _values(plain, ("b", "p0", "c0")))


def test_strategy_setting_and_auto_choice():
    rng = np.random.default_rng(3)
    trans, step = _chain(rng, 40, 1, False, False)
    with markov_strategy("sequential"), recorded_choices() as log:
        MarkovProduct(ops.logaddexp, ops.add, trans, "t", step)
    assert (log[0].strategy, log[0].reason) == ("sequential", "forced")
    with recorded_choices() as log:
        MarkovProduct(ops.logaddexp, ops.add, trans, "t", step, strategy="parallel")
    assert (log[0].strategy, log[0].reason) == ("parallel", "forced")
    with recorded_choices() as log:
        MarkovProduct(ops.logaddexp, ops.add, trans, "t", step)
    assert log[0].strategy in ("parallel", "sequential") and "estimated" in log[0].reason
    # A discrete chain on arrays then records the kernel that runs it, of that strategy.
    assert log[-1].strategy == log[0].strategy and log[-1].kernel is not None
    assert [parallel_rounds(t) for t in (1, 2, 3, 1024, 1025)] == [0, 1, 2, 10, 11]
    with pytest.raises(ValueError, match="unknown Markov product strategy 'fast'"):
        with markov_strategy("fast"):
            pass


def test_not_a_semiring_is_a_left_fold():
    # (logaddexp, mul) does not distribute: only the sequential fold is the definition.
    rng = np.random.default_rng(4)
    trans, step = _chain(rng, 5, 1, False, True)
    expected = naive_sequential_sum_product(ops.logaddexp, ops.mul, trans, "t", step)
    actual = MarkovProduct(ops.logaddexp, ops.mul, trans, "t", step, strategy="parallel")
    np.testing.assert_allclose(_values(actual, ("p0", "c0")), _values(expected, ("p0", "c0")))


@pytest.mark.parametrize("args,match", [
    (dict(step={"p": "q"}), r"step names \['q'\] are not inputs of trans"),
    (dict(step={"p": "d"}), "prev 'p' is Bint\\[2\\] but curr 'd' is Bint\\[3\\]"),
    (dict(time="s"), "time 's' is not an input of trans"),
    (dict(strategy="fast"), "unknown strategy 'fast'"),
    (dict(step_names={"p": "b"}), r"would have names \['b'\] twice"),
])
def test_errors_name_the_mistake(args, match):
    trans = fc.Tensor(np.zeros((3, 2, 2, 2, 3)), {"t": fc.Bint[3], "b": fc.Bint[2],
                                                 "p": fc.Bint[2], "c": fc.Bint[2],
                                                 "d": fc.Bint[3]})
    kwargs = dict(time="t", step={"p": "c"})
    kwargs.update(args)
    with pytest.raises(ValueError, match=match):
        MarkovProduct(ops.logaddexp, ops.add, trans, kwargs.pop("time"), kwargs.pop("step"),
                      **kwargs)
    with lazy, pytest.raises(ValueError, match=match):  # checked when built, lazily too
        MarkovProduct(ops.logaddexp, ops.add, trans, "t" if "time" not in args else "s",
                      args.get("step", {"p": "c"}), args.get("step_names"),
                      args.get("strategy"))


@pytest.mark.parametrize("fn", [sequential_sum_product, naive_sequential_sum_product,
                                lambda *a: mixed_sequential_sum_product(*a, 2)])
def test_scan_functions_check_time(fn):
    # A misspelt time name used to be read as "the same factor at every step, one step" and
    # returned trans unchanged, still over 't'; a real time failed with "Real has no finite
    # size". Both name the time now; a Variable absent from trans is still a matrix power.
    m = np.array([[0.5, 0.5], [0.2, 0.8]])
    trans = fc.Tensor(np.stack([m] * 3), {"t": fc.Bint[3], "p": fc.Bint[2], "c": fc.Bint[2]})
    with pytest.raises(ValueError, match="time 'time' is not an input of the transition"):
        fn(ops.add, ops.mul, trans, "time", {"p": "c"})
    with pytest.raises(ValueError, match="time 't' must be Bint"):
        fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Real), {"p": "c"})
    with pytest.raises(ValueError, match=r"time 't' must be Bint.*Bint\[3\]"):
        fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[4]), {"p": "c"})
    np.testing.assert_allclose(_values(fn(ops.add, ops.mul, trans, "t", {"p": "c"}), ("p", "c")),
                               np.linalg.matrix_power(m, 3))
    power = fn(ops.add, ops.mul, trans(t=0), fc.Variable("s", fc.Bint[4]), {"p": "c"})
    np.testing.assert_allclose(_values(power, ("p", "c")), np.linalg.matrix_power(m, 4))


@pytest.mark.parametrize("strategy", ["parallel", "sequential"])
def test_backends_agree(backend, strategy):
    rng = np.random.default_rng(5)
    data = rng.normal(size=(11, 2, 3, 3))
    inputs = {"t": fc.Bint[11], "b": fc.Bint[2], "p": fc.Bint[3], "c": fc.Bint[3]}
    fc.set_backend("numpy")
    expected = naive_sequential_sum_product(ops.logaddexp, ops.add, fc.Tensor(data, inputs),
                                            "t", {"p": "c"})
    fc.set_backend(backend)
    trans = fc.Tensor(_to_backend(data, backend), inputs)
    actual = MarkovProduct(ops.logaddexp, ops.add, trans, "t", {"p": "c"}, strategy=strategy)
    np.testing.assert_allclose(np.asarray(ops.to_numpy(actual.align(("b", "p", "c")).data)),
                               _values(expected, ("b", "p", "c")), rtol=1e-10)


def _to_backend(data, backend):
    if backend == "torch":
        import torch

        return torch.tensor(data)
    if backend == "jax":
        import jax.numpy as jnp

        return jnp.asarray(data)
    return data


def test_assert_close_helper_on_results():
    rng = np.random.default_rng(6)
    trans, step = _chain(rng, 9, 2, True, False)
    a = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step, strategy="parallel")
    b = MarkovProduct(ops.logaddexp, ops.add, trans, "t", step, strategy="sequential")
    assert_close(a, b.align(tuple(a.inputs)), rtol=1e-10)


def _jax_filter_cases():
    rng = np.random.default_rng(7)
    benign = (rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(12, 2, 3)))
    # Transitions peaking elsewhere than the carry: the probability-space filter's sums
    # underflow, and the chain is recomputed exactly in log space (under the cond).
    a = np.array([[0.0, -2000.0], [-2000.0, 0.0]])
    o = rng.normal(size=(6, 2, 2))
    o[3, 0, 0] = -5000.0  # state 0 impossible at step 3 in sequence 0: the path crosses over
    cases = [benign, (np.array([0.0, -3000.0]), a, o)]
    # One sequence of a few states, beyond the tiny chains: the values come from the loop
    # that exponentiates each step's weights itself, the derivatives from the other one.
    cases.append((rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(200, 1, 3))))
    o = rng.normal(size=(300, 1, 2))
    o[150, 0, 0] = -5000.0
    cases.append((np.array([0.0, -3000.0]), a, o))
    zeros = rng.normal(size=(3, 3))
    zeros[0, 2] = zeros[2, 0] = -800.0  # exp underflows to 0: the tracked loop
    cases.append((rng.normal(size=3), zeros, rng.normal(size=(200, 1, 3))))
    # One short sequence: values from scan_log_filter, derivatives from the exact scan.
    cases.append((rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(12, 1, 3))))
    return cases


@pytest.mark.parametrize("case", [0, 1, 2, 3, 4, 5],
                         ids=["fast", "underflow", "inloop", "inloop-underflow", "inloop-zeros",
                              "tiny-single"])
def test_jax_grad_through_jitted_filter_equals_oracle(case):
    # jax.grad (and jax.jvp) of the jitted HMM likelihood, a lazily built chain contracted
    # with its initial factor, against a plain log-space scan differentiated by jax.
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    init, a, o = (jnp.asarray(x) for x in _jax_filter_cases()[case])
    weights = jnp.array([1.0, -2.0])
    k, (duration, batch) = a.shape[0], o.shape[:2]

    def oracle(a, o):
        def step(alpha, ot):
            return jax.nn.logsumexp(alpha[:, :, None] + a, 1) + ot, None
        alpha, _ = jax.lax.scan(step, jnp.broadcast_to(init, (batch, k)), o)
        return (jax.nn.logsumexp(alpha, -1) * weights).sum()

    def program(a, o):
        i = fc.Tensor(init, {"x": fc.Bint[k]})
        ta = fc.Tensor(a, {"x": fc.Bint[k], "y": fc.Bint[k]})
        to = fc.Tensor(o, {"t": fc.Bint[duration], "b": fc.Bint[batch], "y": fc.Bint[k]})
        with lazy:
            chain = MarkovProduct(ops.logaddexp, ops.add, ta + to, "t", {"x": "y"},
                                  strategy="sequential")
        total = (i + chain).reduce(ops.logaddexp, {"x", "y"}).align(("b",)).data
        return (total * weights).sum()

    tangents = (jnp.asarray(np.random.default_rng(8).normal(size=a.shape)), jnp.ones_like(o))

    def derivatives(fn):  # value, gradient, jvp (and hessian): ONE compiled program per fn
        def all_of(a, o):
            return (fn(a, o), jax.grad(fn, argnums=(0, 1))(a, o),
                    jax.jvp(fn, (a, o), tangents)[1],
                    jax.hessian(fn)(a, o) if case in (2, 5) else None)
        return jax.jit(all_of)(a, o)

    fc.set_backend("jax")
    try:
        value, grads, jvp, hessian = derivatives(program)
    finally:
        fc.set_backend("numpy")
    expected_value, expected_grads, oracle_jvp, oracle_hessian = derivatives(oracle)
    if hessian is not None:  # second order, through both programs' derivatives
        np.testing.assert_allclose(np.asarray(hessian), np.asarray(oracle_hessian),
                                   rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(np.asarray(value), np.asarray(expected_value), rtol=1e-12)
    for actual, expected in zip(grads, expected_grads):
        assert np.isfinite(np.asarray(actual)).all()
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-9,
                                   atol=1e-12)
    np.testing.assert_allclose(np.asarray(jvp), np.asarray(oracle_jvp), rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# Guards: sequential_sum_product for every length (not only powers of two), in log space with
# a batch input, lazy then reinterpreted; a step or time that names no input, an empty chain
# and prev/curr inputs of different domains raise naming them; (max, mul) chains need factors
# known nonnegative, and refuse under jax.jit rather than guess. Oracles: numpy matrix
# products and enumeration of every path.
# (Moved from tests/test_regressions_8.py, defects 2 and 3, and tests/test_regressions_13.py,
# items 7 and 14.)
def _bint_tensor(data, names):
    from tests.backend_values import as_backend_array

    return fc.Tensor(as_backend_array(data), {n: fc.Bint[s] for n, s in zip(names, np.shape(data))})


def _chain_matrices(duration, seed=0):
    return np.random.default_rng(seed).uniform(size=(duration, 3, 3))


def _matrix_chain(mats):
    expected = mats[0]
    for m in mats[1:]:
        expected = expected @ m
    return expected


@pytest.mark.parametrize("duration", range(1, 18))
def test_sequential_sum_product_tensor_every_length(duration):
    mats = _chain_matrices(duration, duration)
    trans = _bint_tensor(mats, ("t", "x", "y"))
    result = sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    naive = naive_sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    assert np.allclose(result.align(("x", "y")).data, _matrix_chain(mats))
    assert np.allclose(result.align(("x", "y")).data, naive.align(("x", "y")).data)


@pytest.mark.parametrize("duration", [1, 2, 3, 6, 7, 16, 17])
def test_sequential_sum_product_log_semiring_with_batch(backend, duration):
    # A batch input "b" rides along; log space against numpy matrix products of exp. jax runs
    # under jit: eagerly each duration's tree compiled op by op (8 s of the suite, no more
    # code covered than the numpy run plus one jitted program).
    logs = np.random.default_rng(duration).normal(size=(duration, 2, 3, 3))

    def chain(data):
        trans = fc.Tensor(data, {n: fc.Bint[s] for n, s in zip("tbxy", logs.shape)})
        result = sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
        return result.align(("b", "x", "y")).data

    if backend == "jax":
        import jax

        chain = jax.jit(chain)
    from tests.backend_values import as_backend_array

    expected = np.stack([_matrix_chain(np.exp(logs[:, b])) for b in range(2)])
    assert np.allclose(np.exp(ops.to_numpy(chain(as_backend_array(logs)))), expected)


@pytest.mark.parametrize("duration", [2, 3, 5, 8, 13, 17])
def test_sequential_sum_product_tensor_lazy_then_reinterpret(duration):
    mats = _chain_matrices(duration, 100 + duration)
    trans = _bint_tensor(mats, ("t", "x", "y"))
    with lazy:
        result = sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"})
    result = fc.reinterpret(result)
    assert isinstance(result, fc.Tensor)
    assert np.allclose(result.align(("x", "y")).data, _matrix_chain(mats))


@pytest.mark.parametrize("fn", [sequential_sum_product, naive_sequential_sum_product])
def test_sequential_sum_product_step_names_must_be_inputs(fn):
    trans = _bint_tensor(np.ones((3, 2)), ("t", "x_curr"))
    with pytest.raises(ValueError, match=r"\['x_prev'\] are not inputs.*\['t', 'x_curr'\]"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr"})
    trans = _bint_tensor(np.ones((2, 2)), ("x_prev", "x_curr"))
    with pytest.raises(ValueError, match=r"\['y_prev', 'y_curr'\] are not inputs"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr", "y_prev": "y_curr"})
    # A time *name* trans lacks is refused (funsor 0.4.8 accepts only a Variable, whose size
    # gives the number of steps); it used to return trans unchanged, hiding a misspelt time.
    with pytest.raises(ValueError, match="time 't' is not an input of the transition factor"):
        fn(ops.add, ops.mul, trans, "t", {"x_prev": "x_curr"})
    one = fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[1]), {"x_prev": "x_curr"})
    np.testing.assert_allclose(one.align(("x_prev", "x_curr")).data, np.ones((2, 2)))


def test_chains_max_mul_need_known_signs():
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(4, 2, 2))
    inputs = {"t": fc.Bint[4], "x": fc.Bint[2], "y": fc.Bint[2]}
    positive = fc.Tensor(np.exp(logits), inputs)
    expected = naive_sequential_sum_product(ops.max, ops.mul, positive, "t", {"x": "y"})
    # Oracle: the best path by enumeration of the two intermediate-free states per step.
    best = np.zeros((2, 2))
    for path in itertools.product(range(2), repeat=5):
        p = np.prod([np.exp(logits[t, path[t], path[t + 1]]) for t in range(4)])
        best[path[0], path[-1]] = max(best[path[0], path[-1]], p)
    np.testing.assert_allclose(expected.data, best)
    actual = sequential_sum_product(ops.max, ops.mul, positive, "t", {"x": "y"})
    np.testing.assert_allclose(actual.data, best)
    signed = fc.Tensor(logits, inputs)
    for scan in (sequential_sum_product, naive_sequential_sum_product,
                 mixed_sequential_sum_product):
        with pytest.raises(ValueError, match="needs nonnegative factors"):
            scan(ops.max, ops.mul, signed, "t", {"x": "y"})
    # Under jax.jit the sign of a traced array is unknown: the scan refuses, never guesses.
    fc.set_backend("jax")
    try:
        with pytest.raises(ValueError, match="sign is unknown"):
            jax.jit(lambda d: sequential_sum_product(
                ops.max, ops.mul, fc.Tensor(d, inputs), "t", {"x": "y"}).data)(
                    jax.numpy.exp(jax.numpy.asarray(logits)))
    finally:
        fc.set_backend("numpy")


def test_empty_chain_says_so():
    from funsor_core.sum_product import sarkka_bilmes_product

    trans = fc.Tensor(np.ones((0, 2, 2)), {"t": fc.Bint[0], "x": fc.Bint[2], "y": fc.Bint[2]})
    pattern = r"the chain is empty \('t' is Bint\[0\]\); it needs at least one step"
    for scan in (sequential_sum_product, naive_sequential_sum_product,
                 mixed_sequential_sum_product):
        with pytest.raises(ValueError, match=pattern):
            scan(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    lagged = fc.Tensor(np.ones((0, 2, 2)),
                       {"t": fc.Bint[0], "x": fc.Bint[2], "_PREV_x": fc.Bint[2]})
    with pytest.raises(ValueError, match=pattern):
        sarkka_bilmes_product(ops.logaddexp, ops.add, lagged, "t")


def test_prev_curr_domain_mismatch_names_the_inputs():
    trans = fc.Tensor(np.ones((4, 2, 3)), {"t": fc.Bint[4], "x": fc.Bint[2], "y": fc.Bint[3]})
    pattern = r"the prev input 'x' is Bint\[2\] but its curr input 'y' is Bint\[3\]"
    for scan in (sequential_sum_product, naive_sequential_sum_product):
        with pytest.raises(ValueError, match=pattern) as info:
            scan(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
        assert "_drop" not in str(info.value)


# ---------------------------------------------------------------------------------------------
# Unreachable states (#27 item 2): the gradient of a filtered log Z of a lazily built chain
# with respect to its observation weights is the filtering marginal p(x_t | y_1..T), 0 where
# a state is unreachable, not NaN (the backends' logsumexp differentiates to NaN on a slice
# of -inf). A left-to-right HMM, eagerly and under jax.jit, every strategy. Oracle: every path
# enumerated in numpy.
def _left_to_right_oracle(init, a, o):
    duration, k = o.shape
    paths = np.array(list(itertools.product(range(k), repeat=duration + 1)))
    score = init[paths[:, 0]] + sum(a[paths[:, t], paths[:, t + 1]] + o[t, paths[:, t + 1]]
                                    for t in range(duration))
    log_z = np.logaddexp.reduce(score)
    grad = np.zeros_like(o)
    for t in range(duration):
        np.add.at(grad[t], paths[:, t + 1], np.exp(score - log_z))
    return log_z, grad


def _left_to_right_log_z(init, a, o, strategy):
    # strategy "terms": funsor's sequential_sum_product, pairwise contractions of terms.
    duration, k = o.shape
    i = fc.Tensor(init, {"x": fc.Bint[k]})
    trans = fc.Tensor(a, {"x": fc.Bint[k], "y": fc.Bint[k]})
    obs = fc.Tensor(o, {"t": fc.Bint[duration], "y": fc.Bint[k]})
    if strategy == "terms":
        chain = sequential_sum_product(ops.logaddexp, ops.add, trans + obs,
                                       fc.Variable("t", fc.Bint[duration]), {"x": "y"})
        return (i + chain).reduce(ops.logaddexp, frozenset({"x", "y"})).data
    with lazy:
        chain = MarkovProduct(ops.logaddexp, ops.add, trans + obs, "t", {"x": "y"},
                              strategy=strategy)
    return (i + chain).reduce(ops.logaddexp, frozenset({"x", "y"})).data


# Eager jax differentiates op by op (a compile each): the term route runs on torch and jit.
UNREACHABLE_CASES = [(b, s) for b in ("torch", "jax", "jax.jit")
                     for s in (None, "parallel", "sequential", "terms")
                     if (b, s) != ("jax", "terms")]


@pytest.mark.parametrize("backend, strategy", UNREACHABLE_CASES)
def test_filtered_log_z_gradient_where_unreachable(backend, strategy):
    with np.errstate(divide="ignore"):
        a = np.log(np.array([[0.6, 0.4, 0.0], [0.0, 0.6, 0.4], [0.0, 0.0, 1.0]]))
    init = np.array([0.0, -np.inf, -np.inf])
    rng = np.random.default_rng(4)
    cases = [np.zeros((3, 3)), rng.normal(size=(5, 3))]  # the issue's, and observed weights
    cases[1][1, 0] = -np.inf  # a -inf column of a step
    # Eager jax differentiates op by op (a compile each): the case only there; the
    # -inf column runs on torch and under jax.jit, through the same kernels.
    for o in cases[:1] if backend == "jax" else cases:
        log_z, expected = _left_to_right_oracle(init, a, o)
        if backend == "torch":
            torch = pytest.importorskip("torch")
            obs = torch.tensor(o, requires_grad=True)
            fc.set_backend("torch")
            try:
                value = _left_to_right_log_z(torch.tensor(init), torch.tensor(a), obs, strategy)
            finally:
                fc.set_backend("numpy")
            value.backward()
            value, grad = value.item(), obs.grad.numpy()
        else:
            jax = pytest.importorskip("jax")
            ji, ja = jax.numpy.asarray(init), jax.numpy.asarray(a)
            fn = jax.value_and_grad(lambda o, ji=ji, ja=ja: _left_to_right_log_z(ji, ja, o,
                                                                                strategy))
            fc.set_backend("jax")
            try:
                value, grad = (jax.jit(fn) if backend == "jax.jit" else fn)(jax.numpy.asarray(o))
            finally:
                fc.set_backend("numpy")
            value, grad = float(value), np.asarray(grad)
        assert np.isfinite(grad).all()
        np.testing.assert_allclose(value, log_z, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(grad, expected, rtol=1e-9, atol=1e-15)
