"""The level-batched kernel's stacking (one concatenation per group of equal shapes; beliefs
from one unary factor per dim, the others scattered in) and the einsum plan it is cached in,
against numpy brute force (``test_forest.brute_force``: every assignment enumerated) and
``opt_einsum.contract``."""

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract.forest import plan_forest, run_forest
from tests.algorithms.contract.test_forest import brute_force

BACKENDS = ["numpy", "torch"]


def covered_tree(rng, dims: int, size: int, scale: float = 3.0):
    """A random tree in which every dim has one or two unary factors (the stacked beliefs
    plus extra ones scattered in), pairs in random orientation, operands shuffled."""
    names = [opt_einsum.get_symbol(k) for k in range(dims)]
    operands = []
    for k in range(1, dims):
        p = names[int(rng.integers(k))]
        operands.append((p, names[k]) if rng.random() < 0.5 else (names[k], p))
    for n in names:
        operands.extend([(n,)] * int(rng.integers(1, 3)))
    rng.shuffle(operands)
    arrays = [rng.uniform(-scale, scale, size=(size,) * len(o)) for o in operands]
    return [tuple(o) for o in operands], arrays, names


def as_backend(arrays, backend, dtype=np.float64):
    if backend == "torch":
        import torch

        return [torch.tensor(x.astype(dtype)) for x in arrays]
    return [x.astype(dtype) for x in arrays]


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_dim_with_unary_factors_equals_brute_force(backend):
    # Stacked beliefs with extras (some dims have two unary factors), a kept root and none.
    rng = np.random.default_rng(10)
    for output_kept in (False, True):
        operands, arrays, names = covered_tree(rng, 8, 3)
        output = (names[0],) if output_kept else ()
        forest = plan_forest(operands, dict.fromkeys(names, 3), output)
        assert forest.beliefs is not None and forest.extra
        expected = brute_force(ops.logaddexp, operands, arrays, names, output)
        actual = run_forest(forest, ops.logaddexp, as_backend(arrays, backend))
        np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_adversarial_float32_tree_is_exact_in_log_space(backend):
    # Log factors of +-600 (1e-260 to 1e260 in linear space) in float32: the batched kernel
    # is an exact logsumexp per level, so the result keeps float32's digits.
    rng = np.random.default_rng(11)
    operands, arrays, names = covered_tree(rng, 7, 2, scale=600.0)
    forest = plan_forest(operands, dict.fromkeys(names, 2), ())
    expected = brute_force(ops.logaddexp, operands, arrays, names, ())
    actual = run_forest(forest, ops.logaddexp, as_backend(arrays, backend, np.float32))
    assert str(actual.dtype).endswith("float32")
    np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cached_einsum_plan_gives_new_values_the_new_answer(backend):
    # A wide tree (the forest pays): the first call plans and builds Tensors, later calls of
    # the same shapes replay the cached array program on arrays; each against opt_einsum in
    # linear space on its own values. Tensor operands are keyed by their inputs: other
    # domain sizes (the last round) plan anew.
    rng = np.random.default_rng(12)
    operands = [("r", c) for c in "abcdefghij"] + [(c,) for c in "rabcdefghij"]
    eq = ",".join("".join(o) for o in operands) + "->"
    fc.set_backend(backend)
    try:
        for size in (3, 3, 3, 2):
            probs = [rng.uniform(0.1, 1.0, size=(size,) * len(o)) for o in operands]
            expected = np.log(opt_einsum.contract(eq, *probs))
            logs = as_backend([np.log(p) for p in probs], backend)
            actual = fc.einsum(eq, *logs, backend="log")
            np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-12)
            tensors = [fc.Tensor(x, {c: fc.Bint[size] for c in o})
                       for x, o in zip(logs, operands)]
            actual = fc.sum_product(ops.logaddexp, ops.add, tensors, frozenset("rabcdefghij"))
            np.testing.assert_allclose(ops.to_numpy(actual.data), expected, rtol=1e-12)
            actual = fc.einsum(eq, *tensors, backend="log")
            np.testing.assert_allclose(ops.to_numpy(actual.data), expected, rtol=1e-12)
            linear = fc.einsum(eq, *as_backend(probs, backend), backend=backend)
            np.testing.assert_allclose(ops.to_numpy(linear), np.exp(expected), rtol=1e-12)
    finally:
        fc.set_backend("numpy")


def test_tensor_fast_path_shares_signatures_and_keeps_identity():
    # The one-frame Tensor: cons-hashed like any term (same array, same Tensor), one inputs
    # dict per signature, equal to the full path's; output dims and subclasses go the full way.
    x, y = np.zeros((2, 3)), np.ones((2, 3))
    d = {"i": fc.Bint[2], "j": fc.Bint[3]}
    a, b, c = fc.Tensor(x, d), fc.Tensor(y, dict(d)), fc.Tensor(y + 1, d)
    assert fc.Tensor(x, d) is a and a is not b
    assert a.inputs == b.inputs == d and b.inputs is c.inputs and b.output is fc.Real
    assert a._ikey is b._ikey is c._ikey and b.data is y
    v = fc.Tensor(x, {"i": fc.Bint[2]})
    assert v.output == fc.Reals[3] and fc.Tensor(x, {"i": fc.Bint[2]}) is v
    from interpretations import lazy

    with lazy:
        assert fc.Tensor(x, d) is a
    with pytest.raises(ValueError, match="does not match its inputs"):
        fc.Tensor(np.zeros((3, 3)), d)


def test_a_contraction_of_many_terms_is_cons_hashed_by_their_identity():
    # More than 8 terms are keyed by identity alone: the same terms give the same lazy term,
    # an equal-valued but distinct Tensor a different one; its value is the brute-force sum.
    from interpretations import lazy

    xs = [np.full(2, float(k)) for k in range(10)]
    ts = [fc.Tensor(x, {"i": fc.Bint[2]}) for x in xs]
    with lazy:
        a = fc.Contraction(ops.logaddexp, ops.add, frozenset("i"), tuple(ts))
        b = fc.Contraction(ops.logaddexp, ops.add, frozenset("i"), tuple(ts))
        other = ts[:-1] + [fc.Tensor(xs[-1].copy(), {"i": fc.Bint[2]})]
        c = fc.Contraction(ops.logaddexp, ops.add, frozenset("i"), tuple(other))
    assert a is b and a is not c
    expected = np.logaddexp.reduce(np.sum(xs, axis=0))
    np.testing.assert_allclose(fc.reinterpret(a).data, expected, rtol=1e-12)
