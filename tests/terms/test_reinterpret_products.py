"""reinterpret of a recorded Reduce of a product chain: contracted by a plan, not multiplied out.

Oracles: ``opt_einsum.contract`` (trees too big to enumerate) and numpy brute force over the
joint table (small graphs); the old pairwise path (the product built eagerly) to 1e-12.
"""

import tracemalloc

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint
from funsor_core.terms.base import Binary, Reduce
from interpretations import exact, lazy
from tests.backend_values import as_backend_array, to_numpy


def _tree(n: int, size: int, seed: int):
    rng = np.random.default_rng(seed)
    names = [f"v{k}" for k in range(n)]
    scopes = [(v,) for v in names] + [(names[int(rng.integers(k))], names[k])
                                      for k in range(1, n)]
    tables = [rng.uniform(0.5, 1.5, size=(size,) * len(s)) for s in scopes]
    return names, scopes, tables


def _recorded(scopes, arrays, red_op, prod_op, reduced, size):
    with lazy:
        factors = [fc.Tensor(x, {v: Bint[size] for v in s}) for x, s in zip(arrays, scopes)]
        total = factors[0]
        for f in factors[1:]:
            total = prod_op(total, f)
        return total.reduce(red_op, frozenset(reduced))


def _contract(scopes, tables, kept):
    symbols = {v: opt_einsum.get_symbol(k) for k, v in enumerate(sorted({*sum(scopes, ())}))}
    eq = ",".join("".join(symbols[v] for v in s) for s in scopes)
    return opt_einsum.contract(eq + "->" + "".join(symbols[v] for v in kept), *tables)


@pytest.mark.parametrize("log", [False, True])
def test_twenty_variable_tree_reinterpreted_under_exact_is_planned(log):
    names, scopes, tables = _tree(20, 2, seed=3)
    kept = ("v4", "v11")
    red_op, prod_op = (ops.logaddexp, ops.add) if log else (ops.add, ops.mul)
    arrays = [np.log(t) for t in tables] if log else tables
    expr = _recorded(scopes, arrays, red_op, prod_op, set(names) - set(kept), 2)
    assert type(expr) is Reduce and type(expr.arg) is Binary
    tracemalloc.start()
    with exact:
        result = fc.reinterpret(expr)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # The joint table alone would be 2^20 float64 = 8 MiB.
    assert peak < 2 ** 20
    assert isinstance(result, fc.Tensor)
    actual = result.align(kept).data
    expected = _contract(scopes, tables, kept)
    np.testing.assert_allclose(np.exp(actual) if log else actual, expected, rtol=1e-10)


def _brute_force(scopes, arrays, names, kept, red, prod, size):
    # The joint table of every assignment, reduced over the other names by numpy.
    joint = None
    for x, s in zip(arrays, scopes):
        perm = [s.index(v) for v in names if v in s]
        full = np.asarray(x).transpose(perm).reshape([size if v in s else 1 for v in names])
        joint = full if joint is None else prod(joint, full)
    joint = np.broadcast_to(joint, (size,) * len(names))
    axes = tuple(k for k, v in enumerate(names) if v not in kept)
    return red(joint, axis=axes)


SEMIRINGS = {
    "logaddexp_add": (ops.logaddexp, ops.add, np.logaddexp.reduce, np.add),
    "add_mul": (ops.add, ops.mul, np.add.reduce, np.multiply),
    "max_add": (ops.max, ops.add, np.max, np.add),
    "min_add": (ops.min, ops.add, np.min, np.add),
    "max_mul": (ops.max, ops.mul, np.max, np.multiply),  # not planned: signs matter
}


@pytest.mark.parametrize("semiring", sorted(SEMIRINGS))
def test_small_graph_equals_brute_force_and_pairwise_path(semiring):
    red_op, prod_op, red, prod = SEMIRINGS[semiring]
    rng = np.random.default_rng(7)
    names = ["a", "b", "c", "d", "e"]
    scopes = [("a", "b"), ("b", "c", "d"), ("e",), ("d", "a"), ("c",), ("e", "b")]
    arrays = [rng.normal(size=(3,) * len(s)) for s in scopes]
    kept = ("c",)
    expr = _recorded(scopes, arrays, red_op, prod_op, set(names) - set(kept), 3)
    with exact:
        actual = fc.reinterpret(expr).align(kept).data
        # The old path: multiply out, then reduce.
        pairwise = fc.reinterpret(expr.arg).reduce(red_op, frozenset(set(names) - set(kept)))
    expected = _brute_force(scopes, arrays, names, kept, red, prod, 3)
    np.testing.assert_allclose(actual, expected, rtol=1e-12)
    np.testing.assert_allclose(actual, pairwise.align(kept).data, rtol=1e-12)


def test_lazy_reinterpret_keeps_the_recorded_product():
    _, scopes, tables = _tree(5, 2, seed=1)
    expr = _recorded(scopes, tables, ops.add, ops.mul, {"v0", "v1"}, 2)
    with lazy:
        again = fc.reinterpret(expr)
    assert again is expr


def test_tree_on_every_backend_and_under_jit(backend):
    names, scopes, tables = _tree(12, 2, seed=5)
    logs = [np.log(t) for t in tables]
    kept = ("v2",)
    expected = np.log(_contract(scopes, tables, kept))

    def run(arrays):
        expr = _recorded(scopes, arrays, ops.logaddexp, ops.add, set(names) - set(kept), 2)
        with exact:
            return fc.reinterpret(expr).data

    if backend == "jax":
        import jax

        run = jax.jit(run)
    actual = to_numpy(run([as_backend_array(x) for x in logs]))
    np.testing.assert_allclose(actual, expected, rtol=1e-10)
