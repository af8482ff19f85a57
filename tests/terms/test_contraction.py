"""Contraction: the normal form built by ``normalize`` and its exact evaluation."""

import itertools

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.terms.contraction import Contraction
from interpretations import normalize

SIZES = {"i": 2, "j": 3, "k": 4}


def _tensor(names, seed):
    rng = np.random.default_rng(seed)
    data = rng.normal(size=tuple(SIZES[n] for n in names))
    return fc.Tensor(fc.to_data(fc.Tensor(data)), {n: fc.Bint[SIZES[n]] for n in names}), data


def test_normalize_flattens_and_orders_terms():
    x, y, z = (fc.Variable(n, fc.Real) for n in "xyz")
    with normalize:
        a = (x + y) + z
        b = z + (y + x)
    assert type(a) is Contraction and a is b
    assert a.red_op is None and a.bin_op is ops.add and len(a.terms) == 3
    assert [t.name for t in a.terms] == ["x", "y", "z"]


def test_normalize_merges_reductions():
    f = fc.Variable("i", fc.Bint[2]) * fc.Variable("x", fc.Real)
    with normalize:
        r = f.reduce(ops.add, "i").reduce(ops.add, "x")
    assert type(r) is Contraction
    assert r.red_op is ops.add and r.bin_op is ops.mul and r.reduced_vars == {"i", "x"}


def test_normalize_unit_law():
    x = fc.Variable("x", fc.Real)
    with normalize:
        assert (x * 1.0) is x


@pytest.mark.parametrize("red_op, bin_op", [(ops.add, ops.mul), (ops.logaddexp, ops.add),
                                            (ops.max, ops.add), (ops.min, ops.add)])
def test_exact_contraction_vs_numpy(red_op, bin_op, backend):
    f, fd = _tensor("ij", 0)
    g, gd = _tensor("jk", 1)
    h, hd = _tensor("k", 2)
    result = Contraction(red_op, bin_op, frozenset("jk"), (f, g, h))
    assert isinstance(result, fc.Tensor) and list(result.inputs) == ["i"]
    if bin_op is ops.mul:
        expected = opt_einsum.contract("ij,jk,k->i", fd, gd, hd)
    else:
        joint = fd[:, :, None] + gd[None] + hd[None, None]
        if red_op is ops.logaddexp:
            expected = np.log(np.exp(joint).sum((1, 2)))
        elif red_op is ops.max:
            expected = joint.max((1, 2))
        else:
            expected = joint.min((1, 2))
    assert np.allclose(ops.to_numpy(result.data), expected)


@pytest.mark.parametrize("order", list(itertools.permutations("ijk")))
def test_reduce_joint_in_every_order(order):
    f, fd = _tensor("ij", 3)
    g, gd = _tensor("jk", 4)
    x = fc.Variable("x", fc.Real)  # keeps the joint lazy, so the reductions form Contractions
    joint = f + g + x
    result = joint
    for name in order:
        result = result.reduce(ops.logaddexp, name)
    value = result(x=0.5)
    expected = np.log(np.exp(fd[:, :, None] + gd[None]).sum()) + 0.5
    assert np.allclose(ops.to_numpy(value.data), expected)


def test_contraction_with_lazy_term_reduces_tensor_part():
    f, fd = _tensor("ij", 5)
    x = fc.Variable("x", fc.Real)
    r = (f + x).reduce(ops.logaddexp, "j")
    assert type(r) is Contraction and "j" not in r.inputs
    tensors = [t for t in r.terms if isinstance(t, fc.Tensor)]
    assert len(tensors) == 1 and "j" not in tensors[0].inputs
    expected = np.log(np.exp(fd).sum(1)) + 2.0
    assert np.allclose(r(x=2.0).data, expected)


def test_contraction_substitution_avoids_capture():
    # r(y) = sum_i i * y. Substituting y := i + 0.5, with a *free* i, must rename the bound
    # i first: the result is sum_k k * (i + 0.5) = i + 0.5, a function of the free i (a
    # capture would give the constant sum_i i * (i + 0.5) = 1.5).
    i = fc.Variable("i", fc.Bint[2])
    y = fc.Variable("y", fc.Real)
    with normalize:
        r = (i * y).reduce(ops.add, "i")
        s = r(y=fc.Variable("i", fc.Bint[2]) + 0.5)
    assert set(s.inputs) == {"i"}
    for value in range(2):
        expected = sum(k * (value + 0.5) for k in range(2))  # brute force over the bound k
        assert float(fc.reinterpret(s)(i=value).data) == pytest.approx(expected)


def test_contraction_errors_name_the_problem():
    with pytest.raises(ValueError, match="red_op=None cannot reduce"):
        Contraction(None, ops.add, frozenset("i"), (fc.Variable("i", fc.Bint[2]),))
    with pytest.raises(ValueError, match="needs a bin_op"):
        Contraction(ops.add, None, frozenset(), (fc.Number(1.0), fc.Number(2.0)))


# ---------------------------------------------------------------------------------------------
# Guards: one policy for reduced_vars (names, Variables, sets of either) in Reduce and
# Contraction, funsor's convention that reducing over an absent Bint Variable repeats the term,
# (max, mul) / (min, mul) distributing only over factors known nonnegative, and contraction
# over more variables than einsum has letters. Numbers on numpy, torch, jax and under jax.jit.
# (Moved from tests/test_regressions_13.py, items 6 and 7, and tests/test_regressions_8.py,
# defect 4.)
def _np_logsumexp(x, axis=None):
    return np.logaddexp.reduce(x, axis=axis)  # ufunc.reduce defaults to axis 0


NP_REDUCE = {ops.add: np.sum, ops.mul: np.prod, ops.logaddexp: _np_logsumexp,
             ops.max: np.max, ops.min: np.min}


def _values(fn, *args):
    from tests.backend_values import values_on_every_backend

    return values_on_every_backend(fn, *args)


@pytest.mark.parametrize("op", list(NP_REDUCE), ids=lambda op: op.name)
def test_reduce_term_accepts_variables(op):
    data = np.random.default_rng(0).uniform(0.5, 1.5, size=(3, 4))
    i, j = fc.Variable("i", fc.Bint[3]), fc.Variable("j", fc.Bint[4])

    def fn(x):
        t = fc.Tensor(x, {"i": fc.Bint[3], "j": fc.Bint[4]})
        return fc.Reduce(op, t, frozenset({i})).align(("j",)).data

    for value in _values(fn, data):
        np.testing.assert_allclose(value, NP_REDUCE[op](data, axis=0), rtol=1e-12)
    t = fc.Tensor(data, {"i": fc.Bint[3], "j": fc.Bint[4]})
    # Every spelling of "reduce i and j" agrees: names, Variables, mixed, a single Variable.
    expected = NP_REDUCE[op](data)
    for spelling in ({"i", "j"}, {i, j}, frozenset({i, "j"}), ["i", j]):
        np.testing.assert_allclose(t.reduce(op, spelling).data, expected, rtol=1e-12)
        np.testing.assert_allclose(fc.Reduce(op, t, spelling).data, expected, rtol=1e-12)
    np.testing.assert_allclose(fc.Reduce(op, t, i).align(("j",)).data,
                               NP_REDUCE[op](data, axis=0), rtol=1e-12)


def test_contraction_and_integrate_accept_variables():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(size=(2, 3)), rng.uniform(size=3)
    ta, tb = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]}), fc.Tensor(b, {"j": fc.Bint[3]})
    j = fc.Variable("j", fc.Bint[3])
    c = fc.Contraction(ops.add, ops.mul, frozenset({j}), (ta, tb))
    np.testing.assert_allclose(c.data, a @ b)
    log_p = fc.Tensor(np.log(b), {"j": fc.Bint[3]})
    np.testing.assert_allclose(fc.Integrate(log_p, ta, j).data, a @ b)
    np.testing.assert_allclose(fc.Integrate(log_p, ta, {j}).data, a @ b)
    r = fc.sum_product(ops.add, ops.mul, [ta, tb], frozenset({j}))
    np.testing.assert_allclose(r.data, a @ b)


@pytest.mark.parametrize("op", list(NP_REDUCE), ids=lambda op: op.name)
def test_absent_bint_variable_repeats_in_every_term(op):
    # funsor's convention: reducing over a Variable the term lacks repeats its value.
    data = np.random.default_rng(2).uniform(0.5, 1.5, size=3)
    k = fc.Variable("k", fc.Bint[4])
    expected = NP_REDUCE[op](np.tile(data, (4, 1)), axis=0)  # four copies, folded by op
    everything = NP_REDUCE[op](np.tile(data, 4))

    def fn(x):
        return fc.Reduce(op, fc.Tensor(x, {"i": fc.Bint[3]}), frozenset({k})).data

    for value in _values(fn, data):
        np.testing.assert_allclose(value, expected, rtol=1e-12)
    t = fc.Tensor(data, {"i": fc.Bint[3]})
    np.testing.assert_allclose(t.reduce(op, {k, "i"}).data, everything, rtol=1e-12)
    np.testing.assert_allclose(fc.Contraction(op, None, frozenset({k, "i"}), (t,)).data,
                               everything, rtol=1e-12)


@pytest.mark.parametrize("red_op, bin_op", [(ops.add, ops.mul), (ops.logaddexp, ops.add),
                                            (ops.max, ops.mul), (ops.max, ops.add)],
                         ids=lambda op: op.name)
def test_absent_variable_repeats_in_contraction(red_op, bin_op):
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.5, 1.5, size=(2, 3)), rng.uniform(0.5, 1.5, size=3)
    ta, tb = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]}), fc.Tensor(b, {"j": fc.Bint[3]})
    k = fc.Variable("k", fc.Bint[5])
    np_bin = {ops.mul: np.multiply, ops.add: np.add}[bin_op]
    joint = np_bin(a, b)[None].repeat(5, axis=0)  # k, i, j: the product repeated along k
    expected = NP_REDUCE[red_op](NP_REDUCE[red_op](joint, axis=2), axis=0)
    c = fc.Contraction(red_op, bin_op, frozenset({k, "j"}), (ta, tb))
    np.testing.assert_allclose(c.data, expected, rtol=1e-12)


@pytest.mark.parametrize("op", [ops.max, ops.min], ids=lambda op: op.name)
@pytest.mark.parametrize("x", [-1.0, 0.0, 2.5])
def test_max_of_product_with_factor_of_unknown_sign(op, x):
    from interpretations import lazy

    t_data = np.array([1.0, 2.0, 3.0])
    expr = (fc.Variable("x", fc.Real) * fc.Tensor(t_data, {"j": fc.Bint[3]})).reduce(op, "j")
    expected = NP_REDUCE[op](x * t_data)  # by brute force: the product at every j
    assert expr(x=x).item() == pytest.approx(expected)
    with lazy:
        lazy_expr = (fc.Variable("x", fc.Real)
                     * fc.Tensor(t_data, {"j": fc.Bint[3]})).reduce(op, "j")
    assert fc.reinterpret(lazy_expr(x=x)).item() == pytest.approx(expected)
    assert fc.apply_optimizer(lazy_expr)(x=x).item() == pytest.approx(expected)

    def fn(x_data, t):
        e = (fc.Variable("x", fc.Real) * fc.Tensor(t, {"j": fc.Bint[3]})).reduce(op, "j")
        return e(x=fc.Tensor(x_data)).data

    for value in _values(fn, np.array(x), t_data):
        assert float(value) == pytest.approx(expected)


def test_max_of_product_distributes_over_a_nonnegative_factor():
    t_data = np.array([1.0, -2.0, 3.0])
    x = fc.Variable("x", fc.Real)
    expr = (x.exp() * fc.Tensor(t_data, {"j": fc.Bint[3]})).reduce(ops.max, "j")
    # exp(x) >= 0 by structure: the max over j is taken once, on the Tensor alone.
    assert "j" not in str(expr) and isinstance(expr, fc.Contraction)
    for value in (-1.0, 0.5):
        assert expr(x=value).item() == pytest.approx(np.max(np.exp(value) * t_data))


def test_normalize_pulls_out_only_nonnegative_factors():
    rng = np.random.default_rng(4)
    a, t = rng.normal(size=2), rng.normal(size=3)
    ta, tt = fc.Tensor(a, {"i": fc.Bint[2]}), fc.Tensor(t, {"j": fc.Bint[3]})
    expected = np.max(a * np.max(t))  # max_i (a_i * max_j t_j), by its definition
    with normalize:
        expr = (ta * tt.reduce(ops.max, "j")).reduce(ops.max, "i")
    assert fc.reinterpret(expr).item() == pytest.approx(expected)


def test_contract_tensors_hundred_variable_chain(backend):
    # Inputs named v0..v99 (the einsum letters are made up inside), against opt_einsum.
    from tests.backend_values import as_backend_array

    rng = np.random.default_rng(4)
    tables = [rng.uniform(0.5, 1.5, size=(2, 2)) for _ in range(99)]
    factors = [fc.Tensor(as_backend_array(t), {f"v{k}": fc.Bint[2], f"v{k + 1}": fc.Bint[2]})
               for k, t in enumerate(tables)]
    reduced = frozenset(f"v{k}" for k in range(1, 100))

    def run(arrays):
        fs = tuple(fc.Tensor(x, dict(f.inputs)) for x, f in zip(arrays, factors))
        return fc.Contraction(ops.add, ops.mul, reduced, fs).data

    if backend == "jax":  # one compile: eagerly each of the 98 distinct steps compiles
        import jax

        run = jax.jit(run)
    result = run([f.data for f in factors])
    symbols = [opt_einsum.get_symbol(v) for v in range(100)]
    eq = ",".join(symbols[k] + symbols[k + 1] for k in range(99)) + "->" + symbols[0]
    assert np.allclose(ops.to_numpy(result), opt_einsum.contract(eq, *tables))
