"""Regressions from issue 13 (items 6, 7, 12, 14), each against an independent oracle.

Oracles: numpy reductions and brute-force enumeration of every assignment (a max over all
assignments of the full product, with no distributive law), numpy's own ``1 / x``, and the
Tensor that a Stack of Numbers stands for. Numbers are checked on numpy, torch and jax, and
under ``jax.jit`` where a number is computed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real
from funsor_core.sum_product import (
    mixed_sequential_sum_product,
    naive_sequential_sum_product,
    sarkka_bilmes_product,
    sequential_sum_product,
)
from funsor_core.terms.base import DomainError, Reduce
from interpretations import lazy, normalize

jax = pytest.importorskip("jax")
jnp = jax.numpy
torch = pytest.importorskip("torch")


def _array(data, backend=None):
    backend = backend or fc.get_backend()
    if backend == "torch":
        return torch.as_tensor(np.asarray(data))
    if backend == "jax":
        return jnp.asarray(np.asarray(data))
    return np.asarray(data)


def _np(x):
    return np.asarray(x.detach() if isinstance(x, torch.Tensor) else x)


def _values(fn, *args):
    """``fn`` (arrays -> array) on numpy, torch, jax, and jax under ``jax.jit``."""
    out = []
    for name in ("numpy", "torch", "jax"):
        fc.set_backend(name)
        try:
            out.append(_np(fn(*(_array(a, name) for a in args))))
        finally:
            fc.set_backend("numpy")
    fc.set_backend("jax")
    try:
        out.append(_np(jax.jit(fn)(*(jnp.asarray(np.asarray(a)) for a in args))))
    finally:
        fc.set_backend("numpy")
    return out


def _np_logsumexp(x, axis=None):
    return np.logaddexp.reduce(x, axis=axis)  # ufunc.reduce defaults to axis 0


NP_REDUCE = {ops.add: np.sum, ops.mul: np.prod, ops.logaddexp: _np_logsumexp,
             ops.max: np.max, ops.min: np.min}


# ---------------------------------------------------------------------------------------------
# Item 6: one policy for reduced_vars (names, Variables, sets of either) everywhere.
@pytest.mark.parametrize("op", list(NP_REDUCE), ids=lambda op: op.name)
def test_reduce_term_accepts_variables(op):
    data = np.random.default_rng(0).uniform(0.5, 1.5, size=(3, 4))
    i, j = fc.Variable("i", Bint[3]), fc.Variable("j", Bint[4])

    def fn(x):
        t = fc.Tensor(x, {"i": Bint[3], "j": Bint[4]})
        return Reduce(op, t, frozenset({i})).align(("j",)).data

    for value in _values(fn, data):
        np.testing.assert_allclose(value, NP_REDUCE[op](data, axis=0), rtol=1e-12)
    t = fc.Tensor(data, {"i": Bint[3], "j": Bint[4]})
    # Every spelling of "reduce i and j" agrees: names, Variables, mixed, a single Variable.
    expected = NP_REDUCE[op](data)
    for spelling in ({"i", "j"}, {i, j}, frozenset({i, "j"}), ["i", j]):
        np.testing.assert_allclose(t.reduce(op, spelling).data, expected, rtol=1e-12)
        np.testing.assert_allclose(Reduce(op, t, spelling).data, expected, rtol=1e-12)
    np.testing.assert_allclose(Reduce(op, t, i).align(("j",)).data,
                               NP_REDUCE[op](data, axis=0), rtol=1e-12)


def test_contraction_and_integrate_accept_variables():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(size=(2, 3)), rng.uniform(size=3)
    ta, tb = fc.Tensor(a, {"i": Bint[2], "j": Bint[3]}), fc.Tensor(b, {"j": Bint[3]})
    j = fc.Variable("j", Bint[3])
    c = fc.Contraction(ops.add, ops.mul, frozenset({j}), (ta, tb))
    np.testing.assert_allclose(c.data, a @ b)
    log_p = fc.Tensor(np.log(b), {"j": Bint[3]})
    np.testing.assert_allclose(fc.Integrate(log_p, ta, j).data, a @ b)
    np.testing.assert_allclose(fc.Integrate(log_p, ta, {j}).data, a @ b)
    r = fc.sum_product(ops.add, ops.mul, [ta, tb], frozenset({j}))
    np.testing.assert_allclose(r.data, a @ b)


def test_variable_of_another_domain_raises_naming_both():
    t = fc.Tensor(np.arange(3.0), {"i": Bint[3]})
    wrong = fc.Variable("i", Bint[5])
    pattern = r"input 'i' of .* is Bint\[3\], not Bint\[5\]"
    with pytest.raises(DomainError, match=pattern):
        t.reduce(ops.add, wrong)
    with pytest.raises(DomainError, match=pattern):
        Reduce(ops.add, t, frozenset({wrong}))
    with pytest.raises(DomainError, match=pattern):
        fc.Contraction(ops.add, ops.mul, frozenset({wrong}), (t, t))
    with pytest.raises(DomainError, match=pattern):
        fc.Integrate(t, t, frozenset({wrong}))
    with lazy:  # checked when the term is built, under every interpretation
        with pytest.raises(DomainError, match=pattern):
            Reduce(ops.add, t, frozenset({wrong}))


def test_absent_bare_name_raises_everywhere():
    t = fc.Tensor(np.arange(3.0), {"i": Bint[3]})
    pattern = r"cannot reduce over \['k'\]: not inputs of"
    with pytest.raises(ValueError, match=pattern):
        t.reduce(ops.add, "k")
    with pytest.raises(ValueError, match=pattern):
        Reduce(ops.add, t, frozenset({"i", "k"}))
    with pytest.raises(ValueError, match=pattern):
        fc.Contraction(ops.add, ops.mul, frozenset({"k"}), (t, t))
    with pytest.raises(ValueError, match=pattern):
        fc.Integrate(t, t, "k")
    with pytest.raises(ValueError, match="y: Real"):  # a real Variable has no count
        Reduce(ops.add, t, frozenset({fc.Variable("y", Real)}))


@pytest.mark.parametrize("op", list(NP_REDUCE), ids=lambda op: op.name)
def test_absent_bint_variable_repeats_in_every_term(op):
    # funsor's convention: reducing over a Variable the term lacks repeats its value.
    data = np.random.default_rng(2).uniform(0.5, 1.5, size=3)
    k = fc.Variable("k", Bint[4])
    expected = NP_REDUCE[op](np.tile(data, (4, 1)), axis=0)  # four copies, folded by op
    everything = NP_REDUCE[op](np.tile(data, 4))

    def fn(x):
        return Reduce(op, fc.Tensor(x, {"i": Bint[3]}), frozenset({k})).data

    for value in _values(fn, data):
        np.testing.assert_allclose(value, expected, rtol=1e-12)
    t = fc.Tensor(data, {"i": Bint[3]})
    np.testing.assert_allclose(t.reduce(op, {k, "i"}).data, everything, rtol=1e-12)
    np.testing.assert_allclose(fc.Contraction(op, None, frozenset({k, "i"}), (t,)).data,
                               everything, rtol=1e-12)


@pytest.mark.parametrize("red_op, bin_op", [(ops.add, ops.mul), (ops.logaddexp, ops.add),
                                            (ops.max, ops.mul), (ops.max, ops.add)],
                         ids=lambda op: op.name)
def test_absent_variable_repeats_in_contraction(red_op, bin_op):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.5, 1.5, size=(2, 3)), rng.uniform(0.5, 1.5, size=3)
    ta, tb = fc.Tensor(a, {"i": Bint[2], "j": Bint[3]}), fc.Tensor(b, {"j": Bint[3]})
    k = fc.Variable("k", Bint[5])
    np_bin = {ops.mul: np.multiply, ops.add: np.add}[bin_op]
    joint = np_bin(a, b)[None].repeat(5, axis=0)  # k, i, j: the product repeated along k
    expected = NP_REDUCE[red_op](NP_REDUCE[red_op](joint, axis=2), axis=0)
    c = fc.Contraction(red_op, bin_op, frozenset({k, "j"}), (ta, tb))
    np.testing.assert_allclose(c.data, expected, rtol=1e-12)


def test_integrate_over_absent_variable_repeats_the_measure():
    p = np.array([0.25, 0.75])
    log_p, f = fc.Tensor(np.log(p), {"j": Bint[2]}), fc.Tensor(np.array([4.0, 8.0]),
                                                                 {"j": Bint[2]})
    k = fc.Variable("k", Bint[3])
    # sum over (j, k) of p_j f_j: three copies of the expectation.
    np.testing.assert_allclose(fc.Integrate(log_p, f, {"j", k}).data, 3 * (p @ [4.0, 8.0]))


# ---------------------------------------------------------------------------------------------
# Item 7: (max, mul) and (min, mul) distribute only over factors known nonnegative.
def _max_mul_brute(x, t, op):
    return NP_REDUCE[op](x * t)


@pytest.mark.parametrize("op", [ops.max, ops.min], ids=lambda op: op.name)
@pytest.mark.parametrize("x", [-1.0, 0.0, 2.5])
def test_max_of_product_with_factor_of_unknown_sign(op, x):
    t_data = np.array([1.0, 2.0, 3.0])
    expr = (fc.Variable("x", Real) * fc.Tensor(t_data, {"j": Bint[3]})).reduce(op, "j")
    expected = _max_mul_brute(x, t_data, op)
    assert expr(x=x).item() == pytest.approx(expected)
    with lazy:
        lazy_expr = (fc.Variable("x", Real) * fc.Tensor(t_data, {"j": Bint[3]})).reduce(op, "j")
    assert fc.reinterpret(lazy_expr(x=x)).item() == pytest.approx(expected)
    assert fc.apply_optimizer(lazy_expr)(x=x).item() == pytest.approx(expected)

    def fn(x_data, t):
        e = (fc.Variable("x", Real) * fc.Tensor(t, {"j": Bint[3]})).reduce(op, "j")
        return e(x=fc.Tensor(x_data)).data

    for value in _values(fn, np.array(x), t_data):
        assert float(value) == pytest.approx(expected)


def test_max_of_product_distributes_over_a_nonnegative_factor():
    t_data = np.array([1.0, -2.0, 3.0])
    x = fc.Variable("x", Real)
    expr = (x.exp() * fc.Tensor(t_data, {"j": Bint[3]})).reduce(ops.max, "j")
    # exp(x) >= 0 by structure: the max over j is taken once, on the Tensor alone.
    assert "j" not in str(expr) and isinstance(expr, fc.Contraction)
    for value in (-1.0, 0.5):
        assert expr(x=value).item() == pytest.approx(np.max(np.exp(value) * t_data))


def test_normalize_pulls_out_only_nonnegative_factors():
    rng = np.random.default_rng(4)
    a, t = rng.normal(size=2), rng.normal(size=3)
    ta, tt = fc.Tensor(a, {"i": Bint[2]}), fc.Tensor(t, {"j": Bint[3]})
    expected = np.max(a * np.max(t))  # max_i (a_i * max_j t_j), by its definition
    with normalize:
        expr = (ta * tt.reduce(ops.max, "j")).reduce(ops.max, "i")
    assert fc.reinterpret(expr).item() == pytest.approx(expected)


def _brute_max_mul(tables, names_list, keep=""):
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
    rng = np.random.default_rng(5)
    # Two components ({a} and {b, c}): the maxima of the parts are not the max of the product.
    tables = [rng.normal(size=2), rng.normal(size=3), rng.normal(size=(3, 2))]
    names = ["a", "b", "bc"]
    expected = _brute_max_mul(tables, names)[()]
    assert expected != pytest.approx(np.max(tables[0]) * np.max(tables[1][:, None] * tables[2]))

    def fn(x, y, z):
        factors = [fc.Tensor(d, {c: Bint[s] for c, s in zip(n, d.shape)})
                   for d, n in zip((x, y, z), names)]
        return fc.sum_product(ops.max, ops.mul, factors, frozenset("abc")).data

    for value in _values(fn, *tables):
        assert float(value) == pytest.approx(expected)


def test_sum_product_max_mul_plates():
    rng = np.random.default_rng(6)
    a, ab = rng.uniform(0.1, 1.0, size=2), rng.uniform(0.1, 1.0, size=(2, 3))
    fa, fab = fc.Tensor(a, {"a": Bint[2]}), fc.Tensor(ab, {"a": Bint[2], "b": Bint[3]})
    # Positive factors: plate b is product-reduced: max_a a_a prod_b ab_{a,b}.
    r = fc.sum_product(ops.max, ops.mul, [fa, fab], frozenset("ab"), frozenset("b"))
    assert r.item() == pytest.approx(np.max(a * np.prod(ab, axis=1)))
    negative = fc.Tensor(-ab, {"a": Bint[2], "b": Bint[3]})
    with pytest.raises(ValueError, match=r"\(ops.max, ops.mul\) needs nonnegative factors"):
        fc.sum_product(ops.max, ops.mul, [fa, negative], frozenset("ab"), frozenset("b"))


def test_chains_max_mul_need_known_signs():
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(4, 2, 2))
    inputs = {"t": Bint[4], "x": Bint[2], "y": Bint[2]}
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
                    jnp.exp(jnp.asarray(logits)))
    finally:
        fc.set_backend("numpy")


# ---------------------------------------------------------------------------------------------
# Item 12: a Stack of Numbers converts like its Tensor.
@pytest.mark.parametrize("dtype", ["real", 3])
def test_to_data_of_a_stack_of_numbers(backend, dtype):
    values = (1.0, 2.0) if dtype == "real" else (1, 2)
    stack = fc.Stack("s", tuple(fc.Number(v, dtype) for v in values))
    tensor = fc.Tensor(_array(np.array(values)), {"s": Bint[2]}, dtype)
    for name_to_dim in ({"s": -1}, {"s": -2}):
        actual = fc.to_data(stack, name_to_dim=name_to_dim)
        expected = np.reshape(np.array(values), (2,) + (1,) * (-name_to_dim["s"] - 1))
        np.testing.assert_array_equal(_np(actual), expected)
        np.testing.assert_array_equal(_np(actual), _np(fc.to_data(tensor, name_to_dim)))
        assert type(actual) is type(tensor.data)


# ---------------------------------------------------------------------------------------------
# Item 14: clear errors at the point of the mistake, and integer powers that are real.
def test_empty_chain_says_so():
    trans = fc.Tensor(np.ones((0, 2, 2)), {"t": Bint[0], "x": Bint[2], "y": Bint[2]})
    pattern = r"the chain is empty \('t' is Bint\[0\]\); it needs at least one step"
    for scan in (sequential_sum_product, naive_sequential_sum_product,
                 mixed_sequential_sum_product):
        with pytest.raises(ValueError, match=pattern):
            scan(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
    lagged = fc.Tensor(np.ones((0, 2, 2)), {"t": Bint[0], "x": Bint[2], "_PREV_x": Bint[2]})
    with pytest.raises(ValueError, match=pattern):
        sarkka_bilmes_product(ops.logaddexp, ops.add, lagged, "t")


def test_prev_curr_domain_mismatch_names_the_inputs():
    trans = fc.Tensor(np.ones((4, 2, 3)), {"t": Bint[4], "x": Bint[2], "y": Bint[3]})
    pattern = r"the prev input 'x' is Bint\[2\] but its curr input 'y' is Bint\[3\]"
    for scan in (sequential_sum_product, naive_sequential_sum_product):
        with pytest.raises(ValueError, match=pattern) as info:
            scan(ops.logaddexp, ops.add, trans, "t", {"x": "y"})
        assert "_drop" not in str(info.value)


def test_float_data_for_a_bint_tensor_raises(backend):
    data = _array(np.array([0.5, 1.7]))
    with pytest.raises(DomainError, match=r"dtype .*float.* cannot hold Bint\[3\] values"):
        fc.Tensor(data, {"k": Bint[2]}, 3)
    ok = fc.Tensor(_array(np.array([0, 2])), {"k": Bint[2]}, 3)  # integers are fine
    assert ok.dtype == 3


@pytest.mark.parametrize("dtype", ["real", 5])
@pytest.mark.parametrize("exponent", [-1, -2, 2])
def test_integer_tensor_power_is_real(dtype, exponent):
    data = np.array([1, 2, 4])

    def fn(x):
        return (fc.Tensor(x, {"k": Bint[3]}, dtype) ** exponent).data

    expected = 1.0 / data.astype(float) ** -exponent if exponent < 0 else data ** exponent
    for value in _values(fn, data):
        np.testing.assert_allclose(value, expected, rtol=1e-12)


def test_float32_survives_numpy_scalars_and_number_coefficients():
    # A numpy float32 scalar (what a 0-d float32 expression returns) stays float32, and an
    # affine substitution with Number coefficients (`0.5 * y`) keeps a float32 Gaussian
    # float32; the values equal the float64 computation.
    assert fc.Tensor(np.float32(1.5)).data.dtype == np.float32
    assert fc.Tensor(np.float64(1.5)).data.dtype == np.float64
    y = fc.Variable("y", fc.Real)
    results = {}
    for dtype in (np.float32, np.float64):
        g = fc.Gaussian(white_vec=np.array([0.3], dtype), prec_sqrt=np.array([[1.7]], dtype),
                        inputs={"x": fc.Real})
        sub = g(x=0.5 * y + 1.0)
        assert sub.white_vec.dtype == dtype and sub.prec_sqrt.dtype == dtype
        results[dtype] = sub(y=np.array(0.8, dtype)).data
    # Oracle: -0.5 * (x * s - w) ** 2 at x = 0.5 * 0.8 + 1.0.
    expected = -0.5 * (1.4 * 1.7 - 0.3) ** 2
    np.testing.assert_allclose(results[np.float64], expected, rtol=1e-12)
    np.testing.assert_allclose(results[np.float32], expected, rtol=1e-6)
