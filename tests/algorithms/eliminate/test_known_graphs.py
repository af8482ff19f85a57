"""``partial_sum_product`` of Tensors whose structure it planned before (``_KNOWN_GRAPHS``):
the checks and the planning are skipped, the results equal the full path's bit for bit and
brute-force enumeration; the checks that read the arrays (one backend) still raise, under
``exact`` and ``lazy``; unhashable names and a user's rule take the full path."""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.eliminate import plated
from funsor_core.engine.interpreter import Tuple
from funsor_core.sum_product import partial_sum_product, sum_product
from funsor_core.terms.contraction import Contraction
from funsor_core.testing import assert_close
from interpretations import exact, lazy
from tests.algorithms.contract.test_replay import EQUATIONS, SEMIRINGS, SIZES, brute_force

BACKEND_OPS = {"numpy": (ops.add, ops.mul), "log": (ops.logaddexp, ops.add),
               "max": (ops.max, ops.add), "min": (ops.min, ops.add)}


def _factors(eq: str, seed: int):
    rng = np.random.default_rng(seed)
    inputs = eq.split("->")[0].split(",")
    arrays = [rng.normal(size=tuple(SIZES[c] for c in s)) for s in inputs]
    tensors = [fc.Tensor(x, {c: fc.Bint[SIZES[c]] for c in s}) for x, s in zip(arrays, inputs)]
    return arrays, tensors


@pytest.mark.parametrize("backend_name", sorted(SEMIRINGS))
@pytest.mark.parametrize("eq, plates", [e for e in EQUATIONS if e[0].endswith("->")])
def test_known_graph_gives_the_full_paths_results(eq, plates, backend_name):
    sum_op, prod_op = BACKEND_OPS[backend_name]
    arrays, tensors = _factors(eq, seed=21)
    names = frozenset(eq.split("->")[0].replace(",", ""))
    plated._KNOWN_GRAPHS.clear()
    first = sum_product(sum_op, prod_op, tensors, names, frozenset(plates))
    key_count = len(plated._KNOWN_GRAPHS.data)
    assert key_count == 1  # planned once: kept
    for _ in range(2):
        _, again = _factors(eq, seed=21)  # new Tensors of the same structure
        value = sum_product(sum_op, prod_op, again, names, frozenset(plates))
        assert np.array_equal(value.data, first.data)
    expected = brute_force(eq, plates, arrays, backend_name)
    assert_close(first.data, expected, atol=1e-10, rtol=1e-10)


def test_known_graph_still_refuses_mixed_backends_under_exact_and_lazy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 3))
    inputs_a = {"i": fc.Bint[2], "x": fc.Bint[3]}
    inputs_b = {"i": fc.Bint[2], "j": fc.Bint[4], "x": fc.Bint[3]}
    args = (ops.logaddexp, ops.add)
    names = (frozenset("ijx"), frozenset("ij"))
    for _ in range(2):
        sum_product(*args, [fc.Tensor(a, inputs_a), fc.Tensor(b, inputs_b)], *names)
    mixed = [fc.Tensor(a, inputs_a), fc.Tensor(torch.tensor(b), inputs_b)]
    message = r"holds numpy arrays and factor 1 \(inputs \['i', 'j', 'x'\]\) holds torch"
    with pytest.raises(TypeError, match=message):
        sum_product(*args, mixed, *names)
    with pytest.raises(TypeError, match=message), lazy:
        sum_product(*args, mixed, *names)


def test_known_graph_under_lazy_builds_the_terms():
    arrays, tensors = _factors("z,izx,ijx->", seed=5)
    args = (ops.logaddexp, ops.add, tensors, frozenset("zxij"), frozenset("ij"))
    value = sum_product(*args)
    sum_product(*args)
    with lazy:
        term = sum_product(*args)
    assert not isinstance(term, fc.Tensor)
    assert_close(exact(fc.reinterpret)(term), value)


def test_unhashable_names_and_a_str_name_take_the_full_path():
    _, tensors = _factors("z,iz,jz->", seed=6)
    expected = sum_product(ops.logaddexp, ops.add, tensors, frozenset("zij"), frozenset("ij"))
    for _ in range(2):
        got = partial_sum_product(ops.logaddexp, ops.add, tensors, {"z", "i", "j"}, {"i", "j"})
        assert_close(got[0], expected, atol=0, rtol=0)
    for _ in range(2):  # funsor's frozenset("zi") idiom given as a bare str: refused each time
        with pytest.raises(TypeError, match="is a str, but no factor has an input 'zi'"):
            sum_product(ops.logaddexp, ops.add, tensors, "zi", frozenset("i"))


def test_user_rule_registered_after_a_known_graph_fires(scratch_exact_rules):
    _, tensors = _factors("z,izx,ijx->", seed=8)
    args = (ops.logaddexp, ops.add, tensors, frozenset("zxij"), frozenset("ij"))
    expected = sum_product(*args)
    sum_product(*args)
    fired = []

    @exact.register(Contraction, type(ops.logaddexp), type(ops.add), frozenset,
                    Tuple[fc.Tensor, fc.Tensor])
    def user_contraction_log_pair(red_op, bin_op, reduced_vars, terms):
        fired.append(reduced_vars)
        return None  # observes, then declines

    assert_close(sum_product(*args), expected, atol=0, rtol=0)
    assert fired, "the user's rule was skipped"
