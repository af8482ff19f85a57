"""Markov and plated sum-products against brute-force enumeration of every discrete assignment.

Each oracle lists the unrolled factors by hand in numpy (one copy per plate value or time
step, named by that value) and sums the product of their entries over every assignment of
the eliminated variables: nothing in funsor_core is used to compute the expected numbers.
"""


import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import (
    PlateError,
    dynamic_partial_sum_product,
    mixed_sequential_sum_product,
    modified_partial_sum_product,
    naive_sarkka_bilmes_product,
    naive_sequential_sum_product,
    partial_sum_product,
    partial_unroll,
    sarkka_bilmes_product,
    sequential_sum_product,
)


def brute_force(factors, sizes, summed, kept=()):
    """sum over ``summed`` of prod of factor entries; factors are (array, names) pairs.

    Every joint assignment is enumerated at once: the product is formed on the full grid of
    ``kept + summed`` (one axis each), then the summed axes are added up. Returns an array
    over ``kept`` (in that order).
    """
    axes = list(kept) + [v for v in summed if v not in kept]
    pos = {v: i for i, v in enumerate(axes)}
    joint = np.ones([sizes[v] for v in axes])
    for data, names in factors:
        ids = [pos[n] for n in names]
        placed = np.einsum(np.asarray(data, float), ids, sorted(set(ids)))  # a repeat: diagonal
        joint = joint * placed.reshape([sizes[v] if i in ids else 1 for i, v in enumerate(axes)])
    return joint.sum(axis=tuple(range(len(kept), len(axes))))


def _tensor(data, names, domains):
    return fc.Tensor(fc.to_data(fc.Tensor(np.asarray(data))), {n: domains[n] for n in names})


def _value(result, kept=()):
    return np.asarray(ops.to_numpy(result.align(tuple(kept)).data) if kept else
                      ops.to_numpy(result.data))


SEMIRINGS = [(ops.add, ops.mul, False), (ops.logaddexp, ops.add, True)]


def _reduce(prod_op, factors):
    out = factors[0]
    for f in factors[1:]:
        out = prod_op(out, f)
    return out


def _hmm(rng, duration, x_dim=2, y_dim=3):
    # init(x_0), trans(time, x_prev, x_curr), emit(time, x_curr, y_curr) as positive arrays.
    return (rng.uniform(0.5, 1.5, size=x_dim),
            rng.uniform(0.5, 1.5, size=(duration, x_dim, x_dim)),
            rng.uniform(0.5, 1.5, size=(duration, x_dim, y_dim)))


def _hmm_oracle(init, trans, emit):
    duration, x_dim, y_dim = emit.shape
    sizes = {f"x{t}": x_dim for t in range(duration + 1)}
    sizes.update({f"y{t}": y_dim for t in range(1, duration + 1)})
    factors = [(init, ["x0"])]
    for t in range(duration):
        factors.append((trans[t], [f"x{t}", f"x{t + 1}"]))
        factors.append((emit[t], [f"x{t + 1}", f"y{t + 1}"]))
    return float(brute_force(factors, sizes, sorted(sizes)))


@pytest.mark.parametrize("impl", [modified_partial_sum_product, dynamic_partial_sum_product])
@pytest.mark.parametrize("sum_op, prod_op, log", SEMIRINGS)
@pytest.mark.parametrize("duration", [1, 2, 5])
@pytest.mark.parametrize("first", ["", "y_curr", "all"])
def test_markov_partial_sum_product_hmm_vs_enumeration(impl, sum_op, prod_op, log, duration,
                                                       first):
    init, trans, emit = _hmm(np.random.default_rng(duration), duration)
    dom = {"x_0": fc.Bint[2], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2],
           "y_curr": fc.Bint[3], "time": fc.Bint[duration]}
    conv = np.log if log else np.asarray
    factors = [_tensor(conv(init), ["x_0"], dom),
               _tensor(conv(trans), ["time", "x_prev", "x_curr"], dom),
               _tensor(conv(emit), ["time", "x_curr", "y_curr"], dom)]
    everything = frozenset(dom)
    vars1 = {"": frozenset(), "y_curr": frozenset({"y_curr"}), "all": everything}[first]
    plate_to_step = {"time": frozenset({("x_0", "x_prev", "x_curr")})}
    partial = impl(sum_op, prod_op, factors, vars1, plate_to_step)
    result = _reduce(prod_op, impl(sum_op, prod_op, partial, everything - vars1, plate_to_step))
    expected = _hmm_oracle(init, trans, emit)
    actual = _value(result)
    assert np.allclose(np.exp(actual) if log else actual, expected)


def _lazy_dynamic_hmm(init, trans, emit, wrap):
    # Pyro's TraceMarkovEnum_ELBO pattern: built under lazy, then evaluated.
    from interpretations import lazy

    duration = emit.shape[0]
    dom = {"x_0": fc.Bint[2], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2],
           "y_curr": fc.Bint[3], "time": fc.Bint[duration]}
    factors = [fc.Tensor(wrap(init), {"x_0": dom["x_0"]}),
               fc.Tensor(wrap(trans), {k: dom[k] for k in ("time", "x_prev", "x_curr")}),
               fc.Tensor(wrap(emit), {k: dom[k] for k in ("time", "x_curr", "y_curr")})]
    with lazy:
        [r] = dynamic_partial_sum_product(ops.logaddexp, ops.add, factors, frozenset(dom),
                                          {"time": frozenset({("x_0", "x_prev", "x_curr")})})
    return fc.reinterpret(r).data


@pytest.mark.parametrize("duration", [1, 6])
def test_dynamic_history_one_lazy_torch_value_and_gradient(duration):
    # The first-order scan path of dynamic_partial_sum_product: value vs enumeration, gradient
    # vs torch autograd of the explicit log-space forward recursion.
    import torch

    init, trans, emit = (np.log(a) for a in _hmm(np.random.default_rng(duration), duration))
    arrays = [torch.tensor(a, requires_grad=True) for a in (init, trans, emit)]
    value = _lazy_dynamic_hmm(*arrays, wrap=lambda a: a)
    assert np.isclose(float(value.detach()), np.log(_hmm_oracle(*(np.exp(a) for a in
                                                         (init, trans, emit)))))
    value.backward()
    ref = [torch.tensor(a, requires_grad=True) for a in (init, trans, emit)]
    alpha = ref[0]
    for t in range(duration):
        alpha = torch.logsumexp(alpha[:, None] + ref[1][t], 0) + ref[2][t].logsumexp(-1)
    alpha.logsumexp(0).backward()
    for a, r in zip(arrays, ref):
        assert torch.allclose(a.grad, r.grad, rtol=1e-12, atol=1e-12)


def test_dynamic_history_one_lazy_under_jax_jit():
    jax = pytest.importorskip("jax")
    init, trans, emit = (np.log(a) for a in _hmm(np.random.default_rng(3), 5))
    got = jax.jit(lambda *a: _lazy_dynamic_hmm(*a, wrap=lambda x: x))(
        *(jax.numpy.asarray(a) for a in (init, trans, emit)))
    assert np.isclose(float(got), np.log(_hmm_oracle(*(np.exp(a) for a in
                                                       (init, trans, emit)))))


@pytest.mark.parametrize("impl", [modified_partial_sum_product, dynamic_partial_sum_product])
def test_markov_partial_sum_product_chain_inside_a_plate(impl):
    # One HMM per sequence: the result is the product over sequences of each HMM's sum.
    rng = np.random.default_rng(3)
    seqs, duration = 2, 3
    init = rng.uniform(0.5, 1.5, size=(seqs, 2))
    trans = rng.uniform(0.5, 1.5, size=(seqs, duration, 2, 2))
    emit = rng.uniform(0.5, 1.5, size=(seqs, duration, 2, 3))
    dom = {"s": fc.Bint[seqs], "x_0": fc.Bint[2], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2],
           "y_curr": fc.Bint[3], "time": fc.Bint[duration]}
    factors = [_tensor(init, ["s", "x_0"], dom),
               _tensor(trans, ["s", "time", "x_prev", "x_curr"], dom),
               _tensor(emit, ["s", "time", "x_curr", "y_curr"], dom)]
    plate_to_step = {"s": {}, "time": frozenset({("x_0", "x_prev", "x_curr")})}
    # Keep the plate: one result per sequence.
    kept = impl(ops.add, ops.mul, factors, frozenset(dom) - {"s"}, plate_to_step)
    per_seq = [_hmm_oracle(init[s], trans[s], emit[s]) for s in range(seqs)]
    assert np.allclose(_value(_reduce(ops.mul, kept), ["s"]), per_seq)
    [result] = impl(ops.add, ops.mul, factors, frozenset(dom), plate_to_step)
    assert np.allclose(_value(result), np.prod(per_seq))


def test_dynamic_partial_sum_product_history_2_vs_enumeration():
    # x_t depends on x_{t-1} and x_{t-2}; the chain starts from the initial pair (x_0, x_1).
    rng = np.random.default_rng(5)
    duration = 4
    init = rng.uniform(0.5, 1.5, size=(2, 2))
    trans = rng.uniform(0.5, 1.5, size=(duration, 2, 2, 2))
    dom = {"x_0": fc.Bint[2], "x_1": fc.Bint[2], "x_pp": fc.Bint[2], "x_p": fc.Bint[2],
           "x_c": fc.Bint[2], "t": fc.Bint[duration]}
    factors = [_tensor(init, ["x_0", "x_1"], dom),
               _tensor(trans, ["t", "x_pp", "x_p", "x_c"], dom)]
    [result] = dynamic_partial_sum_product(
        ops.add, ops.mul, factors, frozenset(dom),
        {"t": frozenset({("x_0", "x_1", "x_pp", "x_p", "x_c")})})
    sizes = {f"x{t}": 2 for t in range(duration + 2)}
    oracle = [(init, ["x0", "x1"])]
    oracle += [(trans[t], [f"x{t}", f"x{t + 1}", f"x{t + 2}"]) for t in range(duration)]
    assert np.allclose(_value(result), brute_force(oracle, sizes, sorted(sizes)))


def test_modified_partial_sum_product_rejects_history_2():
    f = fc.Tensor(np.ones(2), {"x_0": fc.Bint[2]})
    with pytest.raises(ValueError, match="history 2.*dynamic_partial_sum_product"):
        modified_partial_sum_product(ops.add, ops.mul, [f], frozenset({"x_0"}),
                                     {"t": frozenset({("x_0", "x_1", "a", "b", "c")})})


def test_markov_intractable_names_the_variable_and_dimension():
    # x lives in (time) but y's chain lives in (time, tones): y's scan would need x per tone.
    dom = {"time": fc.Bint[3], "tones": fc.Bint[2], "x_0": fc.Bint[2], "x_prev": fc.Bint[2],
           "x_curr": fc.Bint[2], "y_0": fc.Bint[2], "y_prev": fc.Bint[2], "y_curr": fc.Bint[2]}
    factors = [fc.Tensor(np.ones(2), {"x_0": dom["x_0"]}),
               fc.Tensor(np.ones((3, 2, 2)), {n: dom[n] for n in ["time", "x_prev", "x_curr"]}),
               fc.Tensor(np.ones((2, 2, 2)), {n: dom[n] for n in ["tones", "x_0", "y_0"]}),
               fc.Tensor(np.ones((3, 2, 2, 2, 2)),
                         {n: dom[n] for n in ["time", "tones", "x_curr", "y_prev", "y_curr"]})]
    steps = {"tones": {}, "time": frozenset({("x_0", "x_prev", "x_curr"),
                                             ("y_0", "y_prev", "y_curr")})}
    with pytest.raises(PlateError, match="intractable! variable 'x_curr'.*'time'"):
        modified_partial_sum_product(ops.add, ops.mul, factors, frozenset(dom), steps)


def test_partial_unroll_names_and_values():
    rng = np.random.default_rng(7)
    duration = 3
    init, trans, emit = _hmm(rng, duration)
    dom = {"x_0": fc.Bint[2], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2],
           "y_curr": fc.Bint[3], "time": fc.Bint[duration]}
    factors = [_tensor(init, ["x_0"], dom), _tensor(trans, ["time", "x_prev", "x_curr"], dom),
               _tensor(emit, ["time", "x_curr", "y_curr"], dom)]
    unrolled, names, remaining = partial_unroll(
        factors, frozenset(dom), {"time": frozenset({("x_0", "x_prev", "x_curr")})})
    assert names == {"x_0", "x_1", "x_2", "x_3", "y_curr_1", "y_curr_2", "y_curr_3"}
    assert remaining == {}
    assert len(unrolled) == 1 + 2 * duration
    assert {frozenset(f.inputs) for f in unrolled} >= {frozenset({"x_0", "x_1"}),
                                                       frozenset({"x_3", "y_curr_3"})}
    result = _reduce(ops.mul, unrolled).reduce(ops.add, names)
    assert np.allclose(_value(result), _hmm_oracle(init, trans, emit))


def test_partial_unroll_plate_and_error():
    f = fc.Tensor(np.arange(6.0).reshape(2, 3), {"i": fc.Bint[2], "a": fc.Bint[3]})
    unrolled, names, remaining = partial_unroll([f], frozenset("ia"), {"i": {}, "j": {}})
    assert names == {"a_0", "a_1"} and remaining == {"j": {}}
    assert np.allclose(_value(unrolled[1], ["a_1"]), [3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match=r"\['a'\] live in plate 'i' but are not eliminated"):
        partial_unroll([f], frozenset("i"), {"i": {}})


@pytest.mark.parametrize("duration, num_segments", [(12, 1), (12, 3), (12, 5), (7, 2), (5, 4),
                                                    (6, 6), (6, 9)])
def test_mixed_sequential_sum_product_vs_matrix_product(duration, num_segments):
    mats = np.random.default_rng(duration).uniform(size=(duration, 3, 3))
    trans = fc.Tensor(mats, {"t": fc.Bint[duration], "x": fc.Bint[3], "y": fc.Bint[3]})
    expected = np.linalg.multi_dot(list(mats)) if duration > 1 else mats[0]
    r = mixed_sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"}, num_segments)
    assert np.allclose(_value(r, ["x", "y"]), expected)


def test_mixed_sequential_sum_product_rejects_zero_segments():
    trans = fc.Tensor(np.ones((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    with pytest.raises(ValueError, match="num_segments must be at least 1.*'t'"):
        mixed_sequential_sum_product(ops.add, ops.mul, trans, "t", {"x": "y"}, 0)


def _lagged_oracle(data, names, duration, global_names, sizes):
    # The chain as unrolled factors: the name "_PREV_"*k + v at time t is v at time t - k; the
    # result keeps v at T-1 and v at -1 .. -L_v (those present in some factor).
    factors = []
    for t in range(duration):
        renamed = []
        for n in names:
            if n in global_names:
                renamed.append(n)
                continue
            k = 0
            while n.startswith("_PREV_" * (k + 1)):
                k += 1
            renamed.append(f"{n[6 * k:]}@{t - k}")
        factors.append((data[t], renamed))
    all_vars = {n for _, ns in factors for n in ns}
    kept = sorted(v for v in all_vars if v in global_names or v.endswith(f"@{duration - 1}")
                  or int(v.split("@")[1]) < 0)
    summed = sorted(all_vars - set(kept))
    dom = {v: sizes[v.split("@")[0]] for v in all_vars}
    return brute_force(factors, dom, summed, kept), kept


def _kept_name(v):
    # v@t (t < 0) is the lagged name "_PREV_" * -t + v; v@(T-1) is v itself.
    if "@" not in v:
        return v
    base, t = v.split("@")
    return "_PREV_" * -int(t) + base if int(t) < 0 else base


@pytest.mark.parametrize("impl", [naive_sarkka_bilmes_product, sarkka_bilmes_product])
@pytest.mark.parametrize("duration", [1, 2, 3, 4, 5, 7])
@pytest.mark.parametrize("names", [("a",), ("a", "_PREV_a"), ("a", "b", "_PREV__PREV_b"),
                                   ("a", "_PREV_a", "b", "_PREV__PREV__PREV_b"),
                                   ("g", "a", "_PREV_a", "_PREV__PREV_a")])
def test_sarkka_bilmes_vs_enumeration(impl, duration, names):
    rng = np.random.default_rng(duration + len(names))
    sizes = {"a": 2, "b": 2, "g": 2}
    data = rng.uniform(0.5, 1.5, size=(duration,) + tuple(sizes[n.replace("_PREV_", "")]
                                                          for n in names))
    dom = {n: fc.Bint[sizes[n.replace("_PREV_", "")]] for n in names}
    trans = fc.Tensor(data, {"time": fc.Bint[duration], **dom})
    global_names = frozenset({"g"} & set(names))
    kwargs = {"num_periods": 2} if impl is sarkka_bilmes_product else {}
    result = impl(ops.add, ops.mul, trans, fc.Variable("time", fc.Bint[duration]),
                  global_names, **kwargs)
    if not any(n.startswith("_PREV_") for n in names):
        # No lags: the steps are multiplied with shared names, as in funsor.
        assert np.allclose(_value(result, ["a"]), data.prod(0))
        return
    expected, kept = _lagged_oracle(data, names, duration, global_names, sizes)
    kept_names = [_kept_name(v) for v in kept]
    assert set(result.inputs) == set(kept_names)
    assert np.allclose(_value(result, kept_names), expected)


@pytest.mark.parametrize("duration", [2, 5])
def test_sarkka_bilmes_lag_one_lazy_vs_enumeration(duration):
    # Lag 1 (Pyro's vectorized HMM): built under lazy and then evaluated, the value and the
    # torch gradient are the unrolled chain's (numpy enumeration; torch autograd of the
    # explicit log-space forward recursion).
    import torch

    from interpretations import lazy

    rng = np.random.default_rng(duration)
    data = rng.normal(size=(duration, 3, 3))
    dom = {"_PREV_a": fc.Bint[3], "a": fc.Bint[3]}
    expected, kept = _lagged_oracle(np.exp(data), ("_PREV_a", "a"), duration, frozenset(),
                                    {"a": 3})
    arr = torch.tensor(data, requires_grad=True)
    with lazy:
        term = sarkka_bilmes_product(ops.logaddexp, ops.add,
                                     fc.Tensor(arr, {"time": fc.Bint[duration], **dom}), "time")
    result = fc.reinterpret(term)
    kept_names = [_kept_name(v) for v in kept]
    got = result.align(tuple(kept_names)).data
    assert np.allclose(np.exp(got.detach().numpy()), expected)
    got.logsumexp((0, 1)).backward()
    ref = torch.tensor(data, requires_grad=True)
    alpha = ref[0]  # (prev at -1, a at 0)
    for t in range(1, duration):
        alpha = torch.logsumexp(alpha[:, :, None] + ref[t][None], 1)
    alpha.logsumexp((0, 1)).backward()
    assert torch.allclose(arr.grad, ref.grad, rtol=1e-12, atol=1e-12)


def test_sarkka_bilmes_log_semiring_matches_naive():
    rng = np.random.default_rng(11)
    names = {"a": fc.Bint[2], "_PREV__PREV_a": fc.Bint[2], "b": fc.Bint[3], "_PREV_b": fc.Bint[3]}
    trans = fc.Tensor(rng.normal(size=(9, 2, 2, 3, 3)), {"time": fc.Bint[9], **names})
    naive = naive_sarkka_bilmes_product(ops.logaddexp, ops.add, trans, "time")
    fast = sarkka_bilmes_product(ops.logaddexp, ops.add, trans, "time")
    order = tuple(naive.inputs)
    assert np.allclose(_value(fast, order), _value(naive, order))


def test_sarkka_bilmes_rejects_orphan_lag():
    trans = fc.Tensor(np.ones((3, 2)), {"time": fc.Bint[3], "_PREV_z": fc.Bint[2]})
    with pytest.raises(ValueError, match=r"\['_PREV_z'\] have no present-time input.*'z'"):
        sarkka_bilmes_product(ops.add, ops.mul, trans, "time")


@pytest.mark.parametrize("sum_op, prod_op, log", SEMIRINGS)
def test_plate_to_scale_vs_repeated_plate(sum_op, prod_op, log):
    # Scaling plate i by s equals a plate s times as long whose values repeat.
    rng = np.random.default_rng(2)
    fa, fai, faj = (rng.uniform(0.5, 1.5, size=s) for s in [(2,), (2, 3), (2, 4)])
    scale_i, scale_j = 2, 3
    expected = sum(fa[a] * np.prod(fai[a]) ** scale_i * np.prod(faj[a]) ** scale_j
                   for a in range(2))
    conv = np.log if log else np.asarray
    dom = {"a": fc.Bint[2], "i": fc.Bint[3], "j": fc.Bint[4]}
    factors = [_tensor(conv(fa), "a", dom), _tensor(conv(fai), "ai", dom),
               _tensor(conv(faj), "aj", dom)]
    r = fc.sum_product(sum_op, prod_op, factors, frozenset("aij"), frozenset("ij"),
                       plate_to_scale={"i": scale_i, "j": scale_j})
    actual = _value(r)
    assert np.allclose(np.exp(actual) if log else actual, expected)


def test_plate_to_scale_nested_plates():
    # g(a, i) and f(a, i, j): every factor with a is inside plate i, so a is local to i. The
    # product over j is scaled by 3, then a is summed, then the product over i scaled by 2.
    rng = np.random.default_rng(4)
    g, f = rng.uniform(0.5, 1.5, size=(2, 2)), rng.uniform(0.5, 1.5, size=(2, 2, 3))
    expected = np.prod([sum(g[a, i] * np.prod(f[a, i]) ** 3 for a in range(2))
                        for i in range(2)]) ** 2
    dom = {"a": fc.Bint[2], "i": fc.Bint[2], "j": fc.Bint[3]}
    r = fc.sum_product(ops.add, ops.mul, [_tensor(g, "ai", dom), _tensor(f, "aij", dom)],
                       frozenset("aij"), frozenset("ij"), plate_to_scale={"i": 2, "j": 3})
    assert np.allclose(_value(r), expected)


def test_pedantic_names_the_plate_and_the_kept_variable():
    f = fc.Tensor(np.ones((2, 2, 2)), {"i": fc.Bint[2], "x": fc.Bint[2], "z": fc.Bint[2]})
    with pytest.raises(ValueError, match="plate 'i': the kept variable 'z'"):
        fc.sum_product(ops.add, ops.mul, [f], frozenset("ix"), frozenset("i"), pedantic=True)
    # Without pedantic the plate is product-reduced as in funsor.
    r = fc.sum_product(ops.add, ops.mul, [f], frozenset("ix"), frozenset("i"))
    assert np.allclose(_value(r, ["z"]), [4.0, 4.0])


def test_partial_sum_product_matches_modified_without_chains():
    rng = np.random.default_rng(8)
    dom = {"a": fc.Bint[2], "b": fc.Bint[2], "c": fc.Bint[2], "i": fc.Bint[2], "j": fc.Bint[2]}
    data = {k: rng.uniform(0.5, 1.5, size=(2,) * len(k)) for k in ["a", "abi", "bcij"]}
    factors = [_tensor(d, k, dom) for k, d in data.items()]
    eliminate = frozenset("abcij")
    # Unrolled by hand: b is copied per i, c per (i, j).
    sizes = {f"{v}{i}{j}": 2 for v in "c" for i in range(2) for j in range(2)}
    sizes.update({f"b{i}": 2 for i in range(2)}, a=2)
    oracle = [(data["a"], ["a"])]
    oracle += [(data["abi"][:, :, i], ["a", f"b{i}"]) for i in range(2)]
    oracle += [(data["bcij"][:, :, i, j], [f"b{i}", f"c{i}{j}"]) for i in range(2)
               for j in range(2)]
    expected = brute_force(oracle, sizes, sorted(sizes))
    for impl in (modified_partial_sum_product, dynamic_partial_sum_product):
        result = _reduce(ops.mul, impl(ops.add, ops.mul, factors, eliminate,
                                       {"i": {}, "j": {}}))
        assert np.allclose(_value(result), expected)
    result = _reduce(ops.mul, partial_sum_product(ops.add, ops.mul, factors, eliminate,
                                                  frozenset("ij")))
    assert np.allclose(_value(result), expected)


def test_markov_backends(backend):
    # One chain per backend: modified (sequential scan), mixed and Sarkka-Bilmes paths.
    init, trans, emit = _hmm(np.random.default_rng(1), 4)
    dom = {"x_0": fc.Bint[2], "x_prev": fc.Bint[2], "x_curr": fc.Bint[2],
           "y_curr": fc.Bint[3], "time": fc.Bint[4]}
    factors = [_tensor(init, ["x_0"], dom), _tensor(trans, ["time", "x_prev", "x_curr"], dom),
               _tensor(emit, ["time", "x_curr", "y_curr"], dom)]
    [r] = modified_partial_sum_product(ops.add, ops.mul, factors, frozenset(dom),
                                       {"time": frozenset({("x_0", "x_prev", "x_curr")})})
    assert np.allclose(_value(r), _hmm_oracle(init, trans, emit))
    t = _tensor(trans, ["time", "x", "y"], {"time": fc.Bint[4], "x": fc.Bint[2],
                                            "y": fc.Bint[2]})
    mixed = mixed_sequential_sum_product(ops.add, ops.mul, t, "time", {"x": "y"}, 2)
    assert np.allclose(_value(mixed, ["x", "y"]), np.linalg.multi_dot(list(trans)))
    lagged = _tensor(trans, ["time", "_PREV__PREV_x", "x"], {"time": fc.Bint[4],
                                                             "x": fc.Bint[2],
                                                             "_PREV__PREV_x": fc.Bint[2]})
    fast = sarkka_bilmes_product(ops.add, ops.mul, lagged, "time")
    naive = naive_sarkka_bilmes_product(ops.add, ops.mul, lagged, "time")
    order = tuple(naive.inputs)
    assert np.allclose(_value(fast, order), _value(naive, order))


def test_naive_and_parallel_scans_agree_with_empty_step():
    # With no prev/curr pairs the chain is a product over time, on every scan.
    data = np.random.default_rng(6).uniform(size=(5, 2))
    trans = fc.Tensor(data, {"t": fc.Bint[5], "a": fc.Bint[2]})
    for fn in (naive_sequential_sum_product, sequential_sum_product):
        assert np.allclose(_value(fn(ops.add, ops.mul, trans, "t", {}), ["a"]), data.prod(0))
    r = mixed_sequential_sum_product(ops.add, ops.mul, trans, "t", {}, 2)
    assert np.allclose(_value(r, ["a"]), data.prod(0))
