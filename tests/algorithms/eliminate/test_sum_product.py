"""Tensor variable elimination and Markov-chain sums against brute-force enumeration."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.sum_product import PlateError, partial_sum_product, sum_product


def _t(data, names, sizes):
    return fc.Tensor(data, {n: fc.Bint[sizes[n]] for n in names})


def test_sum_product_plated_vs_enumeration(backend):
    rng = np.random.default_rng(0)
    sizes = {"a": 2, "p": 3, "b": 2}
    fa, fab = rng.uniform(size=2), rng.uniform(size=(2, 3, 2))
    f1 = _t(fc.to_data(fc.Tensor(fa)), "a", sizes)
    f2 = _t(fc.to_data(fc.Tensor(fab)), "apb", sizes)
    r = fc.sum_product(ops.add, ops.mul, [f1, f2], frozenset("apb"), frozenset("p"))
    expected = sum(fa[a] * np.prod([fab[a, p].sum() for p in range(3)]) for a in range(2))
    assert np.allclose(ops.to_numpy(r.data), expected)


def test_forbidden_plate_minor_names_plates_and_variables():
    sizes = {"x": 2, "y": 2, "p": 2, "q": 2}
    fx = _t(np.ones((2, 2)), "px", sizes)
    fy = _t(np.ones((2, 2)), "qy", sizes)
    fxy = _t(np.ones((2, 2, 2, 2)), "pqxy", sizes)
    with pytest.raises(PlateError, match="'x'.*plate 'p'.*'y'.*plate 'q'"):
        fc.sum_product(ops.add, ops.mul, [fx, fy, fxy], frozenset("xypq"), frozenset("pq"))


@pytest.mark.parametrize("duration", [1, 2, 5, 8])
def test_sequential_sum_product_vs_matrix_power(duration):
    rng = np.random.default_rng(duration)
    mats = rng.uniform(size=(duration, 3, 3))
    trans = fc.Tensor(mats, {"t": fc.Bint[duration], "x": fc.Bint[3], "y": fc.Bint[3]})
    expected = mats[0]
    for k in range(1, duration):
        expected = expected @ mats[k]
    for fn in (fc.sequential_sum_product, fc.naive_sequential_sum_product):
        r = fn(ops.add, ops.mul, trans, fc.Variable("t", fc.Bint[duration]), {"x": "y"})
        assert np.allclose(r.align(("x", "y")).data, expected)


def test_sequential_sum_product_log_semiring():
    rng = np.random.default_rng(9)
    logs = rng.normal(size=(6, 2, 2))
    trans = fc.Tensor(logs, {"t": fc.Bint[6], "x": fc.Bint[2], "y": fc.Bint[2]})
    expected = np.exp(logs[0])
    for k in range(1, 6):
        expected = expected @ np.exp(logs[k])
    r = fc.sequential_sum_product(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    assert np.allclose(np.exp(r.align(("x", "y")).data), expected)


# ---------------------------------------------------------------------------------------------
# Guards: a plate not in `eliminate` stays an input of the result; factor order and repeated
# factors do not matter (groups were once removed with ``==``, which builds a funsor); (max,
# mul) needs nonnegative factors and says so. Oracles: enumeration of every assignment.
# (Moved from tests/test_defects_8.py, defect 8, tests/test_regressions_8.py, defect 1, and
# tests/test_regressions_13.py, item 7.)
def _named_tensor(data, names):
    from tests.backend_values import as_backend_array

    return fc.Tensor(as_backend_array(data), {n: fc.Bint[s] for n, s in zip(names, np.shape(data))})


def test_sum_product_keeps_plate_not_eliminated():
    import itertools

    np.random.seed(8)
    fa = np.random.rand(2)  # f(a)
    gaq = np.random.rand(2, 3)  # g(a, q), q an eliminated plate
    hap = np.random.rand(2, 4)  # h(a, p), p a plate that is kept
    kabp = np.random.rand(2, 5, 4)  # k(a, b, p), b a variable inside plate p
    factors = [fc.Tensor(fa, {"a": fc.Bint[2]}),
               fc.Tensor(gaq, {"a": fc.Bint[2], "q": fc.Bint[3]}),
               fc.Tensor(hap, {"a": fc.Bint[2], "p": fc.Bint[4]}),
               fc.Tensor(kabp, {"a": fc.Bint[2], "b": fc.Bint[5], "p": fc.Bint[4]})]
    result = fc.sum_product(ops.add, ops.mul, factors, eliminate=frozenset("abq"),
                            plates=frozenset("pq"))
    assert result.inputs == {"p": fc.Bint[4]}
    # Brute force: one factor graph per value of p; sum over (a, b), product over q.
    expected = np.zeros(4)
    for p in range(4):
        for a, b in itertools.product(range(2), range(5)):
            expected[p] += fa[a] * np.prod(gaq[a]) * hap[a, p] * kabp[a, b, p]
    assert np.allclose(result.data, expected)


NETWORK_SIZES = {"a": 2, "b": 3, "c": 2, "d": 3}
# A Bayesian network a -> b, a -> c, (b, c) -> d: p(a) p(b|a) p(c|a) p(d|b,c).
NETWORK = ["a", "ab", "ac", "bcd"]
NETWORK_ORDERS = [(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 1, 3), (0, 2, 3, 1), (0, 3, 1, 2),
                  (0, 3, 2, 1), (1, 0, 2, 3), (1, 0, 3, 2), (1, 2, 0, 3), (1, 2, 3, 0),
                  (1, 3, 0, 2), (1, 3, 2, 0), (2, 0, 1, 3), (2, 0, 3, 1), (2, 1, 0, 3),
                  (2, 1, 3, 0), (2, 3, 0, 1), (2, 3, 1, 0), (3, 0, 1, 2), (3, 0, 2, 1),
                  (3, 1, 0, 2), (3, 1, 2, 0), (3, 2, 0, 1), (3, 2, 1, 0)]  # all 24


def _network_tables(rng):
    return [rng.uniform(0.1, 1.0, size=tuple(NETWORK_SIZES[c] for c in names))
            for names in NETWORK]


def _enumerate(tables, names_list, keep):
    # Sum the product of all tables over every assignment of the letters not in ``keep``.
    import itertools

    letters = sorted(set("".join(names_list)))
    out = np.zeros(tuple(NETWORK_SIZES[c] for c in keep))
    for values in itertools.product(*(range(NETWORK_SIZES[c]) for c in letters)):
        point = dict(zip(letters, values))
        p = 1.0
        for table, names in zip(tables, names_list):
            p *= table[tuple(point[c] for c in names)]
        out[tuple(point[c] for c in keep)] += p
    return out


@pytest.mark.parametrize("order", NETWORK_ORDERS)
def test_sum_product_bayesian_network_any_factor_order(order):
    rng = np.random.default_rng(1)
    tables = _network_tables(rng)
    factors = [_named_tensor(tables[k], NETWORK[k]) for k in order]
    for keep in ("", "d", "ad"):
        eliminate = frozenset("abcd") - frozenset(keep)
        result = fc.sum_product(ops.add, ops.mul, factors, eliminate)
        data = result.align(tuple(keep)).data if keep else result.data
        assert np.allclose(data, _enumerate(tables, NETWORK, keep))


def test_sum_product_repeated_factor():
    # The reported reproducer: [fa, fb, fb], and a group that merges into a non-first group.
    rng = np.random.default_rng(2)
    ta, tb, tc = rng.uniform(size=2), rng.uniform(size=(2, 3)), rng.uniform(size=3)
    fa, fb, fc_ = _named_tensor(ta, "a"), _named_tensor(tb, "ab"), _named_tensor(tc, "c")
    r = fc.sum_product(ops.add, ops.mul, [fa, fb, fb], frozenset("ab"))
    assert np.allclose(r.data, sum(ta[a] * tb[a, b] ** 2 for a in range(2) for b in range(3)))
    r = fc.sum_product(ops.add, ops.mul, [fc_, fa, fb], frozenset("abc"))
    assert np.allclose(r.data, tc.sum() * (ta[:, None] * tb).sum())


def _brute_max_mul(tables, names_list, keep=""):
    import itertools

    letters = sorted(set("".join(names_list)))
    sizes = {c: t.shape[n.index(c)] for t, n in zip(tables, names_list) for c in n}
    best = {}
    for values in itertools.product(*(range(sizes[c]) for c in letters)):
        point = dict(zip(letters, values))
        p = np.prod([t[tuple(point[c] for c in n)] for t, n in zip(tables, names_list)])
        key = tuple(point[c] for c in keep)
        best[key] = max(best.get(key, -np.inf), p)
    return best


def test_sum_product_max_mul_with_negative_factors():
    from tests.backend_values import values_on_every_backend

    rng = np.random.default_rng(5)
    # Two components ({a} and {b, c}): the maxima of the parts are not the max of the product.
    tables = [rng.normal(size=2), rng.normal(size=3), rng.normal(size=(3, 2))]
    names = ["a", "b", "bc"]
    expected = _brute_max_mul(tables, names)[()]
    assert expected != pytest.approx(np.max(tables[0]) * np.max(tables[1][:, None] * tables[2]))

    def fn(x, y, z):
        factors = [fc.Tensor(d, {c: fc.Bint[s] for c, s in zip(n, d.shape)})
                   for d, n in zip((x, y, z), names)]
        return fc.sum_product(ops.max, ops.mul, factors, frozenset("abc")).data

    for value in values_on_every_backend(fn, *tables):
        assert float(value) == pytest.approx(expected)


def test_sum_product_max_mul_plates():
    rng = np.random.default_rng(6)
    a, ab = rng.uniform(0.1, 1.0, size=2), rng.uniform(0.1, 1.0, size=(2, 3))
    fa, fab = fc.Tensor(a, {"a": fc.Bint[2]}), fc.Tensor(ab, {"a": fc.Bint[2], "b": fc.Bint[3]})
    # Positive factors: plate b is product-reduced: max_a a_a prod_b ab_{a,b}.
    r = fc.sum_product(ops.max, ops.mul, [fa, fab], frozenset("ab"), frozenset("b"))
    assert r.item() == pytest.approx(np.max(a * np.prod(ab, axis=1)))
    negative = fc.Tensor(-ab, {"a": fc.Bint[2], "b": fc.Bint[3]})
    with pytest.raises(ValueError, match=r"\(ops.max, ops.mul\) needs nonnegative factors"):
        fc.sum_product(ops.max, ops.mul, [fa, negative], frozenset("ab"), frozenset("b"))


@pytest.mark.parametrize("sum_op,prod_op,unit", [(ops.logaddexp, ops.add, 0.0),
                                                 (ops.add, ops.mul, 1.0)])
def test_sum_product_of_no_factors_is_the_unit(sum_op, prod_op, unit):
    # Pyro's TraceMarkovEnum_ELBO asks for the product of a plate level with no factors; the
    # empty product is the semiring's one (a Number), as in funsor.
    assert partial_sum_product(sum_op, prod_op, [], frozenset(), frozenset()) == []
    result = sum_product(sum_op, prod_op, [], frozenset(), frozenset("i"))
    assert isinstance(result, fc.Number) and result.data == unit
