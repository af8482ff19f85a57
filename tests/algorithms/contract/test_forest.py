"""Level-batched elimination of tree-shaped contractions (``algorithms.contract.forest``)
against numpy brute force: every assignment of every dim enumerated by broadcasting each
operand to all dims, combined, and reduced, in float64."""

import numpy as np
import opt_einsum
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.algorithms.contract.einsum import contract_arrays
from funsor_core.algorithms.contract.forest import plan_forest, run_forest
from funsor_core.algorithms.contract.plan import plan_contraction

REDUCE = {ops.logaddexp: logsumexp, ops.max: np.max, ops.min: np.min}


def random_forest(rng, dims: int, trees: int, size: int = 2):
    """Operands (dim names) and arrays of a random forest: each dim joined to an earlier one
    of its tree, each pair in a random orientation, each dim with 0, 1 or 2 unary factors."""
    names = [opt_einsum.get_symbol(k) for k in range(dims)]
    members = [[n] for n in names[:trees]]  # dims 0 .. trees - 1 are the roots
    operands = []
    for k in range(trees, dims):
        tree = members[int(rng.integers(trees))]
        p = tree[int(rng.integers(len(tree)))]
        tree.append(names[k])
        operands.append((p, names[k]) if rng.random() < 0.5 else (names[k], p))
    for n in names:
        operands.extend([(n,)] * int(rng.choice([0, 1, 1, 2])))
    rng.shuffle(operands)
    arrays = [rng.normal(size=(size,) * len(o)) * 3 for o in operands]
    return [tuple(o) for o in operands], arrays, names, size


def brute_force(sum_op, operands, arrays, names, output):
    # The joint over every dim, by broadcasting (axes in the order of ``names``).
    if sum_op is ops.add:  # (add, mul)
        total = np.ones((1,) * len(names))
        for o, x in zip(operands, arrays):
            total = total * _broadcast(o, x, names)
    else:
        total = np.zeros((1,) * len(names))
        for o, x in zip(operands, arrays):
            total = total + _broadcast(o, x, names)
    axes = tuple(k for k, n in enumerate(names) if n not in output)
    reduce = np.sum if sum_op is ops.add else REDUCE[sum_op]
    return reduce(total, axis=axes)


def _broadcast(letters, x, names):
    order = sorted(range(len(letters)), key=lambda k: names.index(letters[k]))
    x = np.transpose(x, order)
    shape = [1] * len(names)
    for k in order:
        shape[names.index(letters[k])] = x.shape[order.index(k)]
    return x.reshape(shape)


@pytest.mark.parametrize("sum_op", [ops.logaddexp, ops.max, ops.min])
def test_random_forests_equal_brute_force(sum_op):
    # Forests of 1 to 3 trees over 6 to 9 dims, some with the root kept, in the plan's
    # batched kernel: every orientation of a pair, dims with no or two unary factors.
    rng = np.random.default_rng(0)
    for case in range(12):
        dims = int(rng.integers(6, 10))
        operands, arrays, names, size = random_forest(rng, dims, int(rng.integers(1, 4)))
        output = (names[int(rng.integers(dims))],) if case % 3 == 0 else ()
        forest = plan_forest(operands, dict.fromkeys(names, size), output)
        expected = brute_force(sum_op, operands, arrays, names, output)
        np.testing.assert_allclose(run_forest(forest, sum_op, arrays), expected, rtol=1e-12)


def test_the_plan_batches_a_wide_tree_and_not_a_chain():
    star = [("r", c) for c in "abcdefghij"] + [(c,) for c in "rabcdefghij"]
    chain = [(a, b) for a, b in zip("abcdefghij", "bcdefghijk")] + [(c,) for c in "abcdefghijk"]
    cycle = [("a", "b"), ("b", "c"), ("c", "a")]
    sizes = dict.fromkeys("abcdefghijkr", 3)
    plan = plan_contraction(star, sizes, ())
    assert plan.forest.levels == 1 and plan.forest.pays(len(plan.steps))
    plan = plan_contraction(chain, sizes, ())
    assert plan.forest.levels == 5 and not plan.forest.pays(len(plan.steps))
    assert plan_forest(cycle, sizes, ()) is None
    assert plan_forest(star, {**sizes, "a": 2}, ()) is None  # dims of two sizes
    assert plan_forest(star, sizes, ("a", "b")) is None


@pytest.mark.parametrize("backend", ["numpy", "torch", "pyro.ops.einsum.torch_log", "max"])
def test_einsum_of_a_star_in_every_semiring(backend):
    # A root and 10 leaves, each with its evidence: one batched level where the semiring
    # has it, the plan's steps in linear space; the same numbers as brute force.
    rng = np.random.default_rng(1)
    inputs = ["r"] + ["r" + c for c in "abcdefghij"] + list("abcdefghij")
    arrays = [rng.uniform(0.1, 1.0, size=(3,) * len(i)) for i in inputs]
    sum_op = {"numpy": ops.add, "torch": ops.add, "max": ops.max}.get(backend, ops.logaddexp)
    if sum_op is not ops.add:
        arrays = [np.log(x) for x in arrays]
    expected = brute_force(sum_op, inputs, arrays, list("rabcdefghij"), "r")
    if backend.startswith(("torch", "pyro")):
        import torch

        arrays = [torch.tensor(x) for x in arrays]
    for _ in range(2):  # the second call runs the elimination's array program
        actual = fc.einsum(",".join(inputs) + "->r", *arrays, backend=backend)
        np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-12)


def test_adversarial_ranges_stay_exact():
    # Factors spanning 1e-300 to 1e300 (log values +-690): a product of two overflows float64
    # in linear space. The batched forest is exact log space; a cycle's plan measures the
    # range, refuses linear space, and contracts exactly step by step.
    rng = np.random.default_rng(2)
    names = list("rabcdefghi")
    star = [("r", c) for c in names[1:]] + [(c,) for c in names]
    cycle = star + [("a", "b")]
    for operands in (star, cycle):
        arrays = [rng.uniform(-690.0, 690.0, size=(3,) * len(o)) for o in operands]
        expected = brute_force(ops.logaddexp, operands, arrays, names, ())
        actual = contract_arrays(ops.logaddexp, ops.add, ["".join(o) for o in operands], "",
                                 arrays)
        assert np.isfinite(actual)
        np.testing.assert_allclose(actual, expected, rtol=1e-12)


def test_float32_forest_keeps_its_dtype_and_digits():
    rng = np.random.default_rng(3)
    operands, arrays, names, size = random_forest(rng, 9, 2, size=3)
    forest = plan_forest(operands, dict.fromkeys(names, size), ())
    expected = brute_force(ops.logaddexp, operands, arrays, names, ())
    actual = run_forest(forest, ops.logaddexp, [x.astype(np.float32) for x in arrays])
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected, rtol=1e-5)


def test_forest_under_jax_jit_and_torch_grad():
    # Nothing in the batched kernel reads values: it traces under jit as it runs eagerly.
    # Its torch gradient is the marginal of each factor's entries (d log Z / d log f).
    import jax
    import torch

    rng = np.random.default_rng(4)
    operands, arrays, names, size = random_forest(rng, 8, 1)
    forest = plan_forest(operands, dict.fromkeys(names, size), ())
    expected = brute_force(ops.logaddexp, operands, arrays, names, ())
    jitted = jax.jit(lambda *xs: run_forest(forest, ops.logaddexp, xs))
    np.testing.assert_allclose(jitted(*arrays), expected, rtol=1e-6)
    xs = [torch.tensor(x, requires_grad=True) for x in arrays]
    run_forest(forest, ops.logaddexp, xs).backward()
    k = max(range(len(operands)), key=lambda k: len(operands[k]))  # a pair factor
    joint = brute_force(ops.logaddexp, operands, arrays, names, names) - expected
    marginal = logsumexp(joint, axis=tuple(j for j, n in enumerate(names)
                                           if n not in operands[k]))
    if names.index(operands[k][0]) > names.index(operands[k][1]):
        marginal = marginal.T
    np.testing.assert_allclose(xs[k].grad.numpy(), np.exp(marginal), rtol=1e-9)


def test_apply_optimizer_leaves_a_tree_of_tensors_whole_for_the_batched_kernel():
    # optimize would nest 20 pairwise Contractions; a tree of Tensors stays one Contraction,
    # which the exact rule contracts level by level: the same number as brute force.
    from interpretations import lazy
    from interpretations.optimize import apply_optimizer

    rng = np.random.default_rng(6)
    names = list("rabcdefghij")
    operands = [("r", c) for c in names[1:]] + [(c,) for c in names]
    arrays = [rng.normal(size=(2,) * len(o)) for o in operands]
    tensors = [fc.Tensor(x, {c: fc.Bint[2] for c in o}) for o, x in zip(operands, arrays)]
    with lazy:
        expr = fc.sum_product(ops.logaddexp, ops.add, tensors, frozenset(names))
        planned = apply_optimizer(expr)
    assert isinstance(planned, fc.Contraction) and len(planned.terms) == len(tensors)
    expected = brute_force(ops.logaddexp, operands, arrays, names, ())
    np.testing.assert_allclose(apply_optimizer(expr).data, expected, rtol=1e-12)


def star(rng, leaves: int):
    """A root joined to ``leaves`` dims, each dim with a unary factor; size 2."""
    names = ["root"] + [f"leaf{k}" for k in range(leaves)]
    operands = [("root", c) for c in names[1:]] + [(c,) for c in names]
    return operands, [rng.normal(size=(2,) * len(o)) for o in operands], names


def star_log_z(arrays, leaves: int):
    # Closed form: log sum_r u_r(r) prod_c sum_c exp(pair(r, c) + u_c(c)).
    pairs, units = arrays[:leaves], arrays[leaves:]
    return logsumexp(units[0] + sum(logsumexp(p + u[None], axis=1)
                                    for p, u in zip(pairs, units[1:])))


def test_small_forest_runs_pairwise_on_eager_jax_and_batched_under_jit(monkeypatch):
    # Eager jax (arrays or eager jax.grad tracers) compiles each new shape: a small plan runs
    # pairwise there; under jax.jit, on numpy, and past 64 steps it stays level-batched.
    # Oracles: the star's closed form in numpy; the gradients are the factors' marginals
    # (brute-force enumeration of the joint in numpy).
    jax = pytest.importorskip("jax")
    import funsor_core.algorithms.contract.plan as plan_module

    calls = []
    monkeypatch.setattr(plan_module, "run_forest", lambda *a: calls.append(1) or run_forest(*a))
    rng = np.random.default_rng(5)
    operands, arrays, names = star(rng, 10)
    plan = plan_contraction(operands, dict.fromkeys(names, 2), ())
    assert plan.level_batched(ops.logaddexp, ops.add)

    def log_z(*xs):
        return plan.run_arrays(ops.logaddexp, ops.add, list(xs))

    expected = star_log_z(arrays, 10)
    joint = brute_force(ops.logaddexp, operands, arrays, names, names) - expected
    argnums = tuple(range(len(arrays)))
    xs = [jax.numpy.asarray(x, dtype="float64") for x in arrays]
    for fn, batched in ((jax.value_and_grad(log_z, argnums), False),
                        (jax.jit(jax.value_and_grad(log_z, argnums)), True)):
        calls.clear()
        value, grads = fn(*xs)
        assert bool(calls) == batched
        np.testing.assert_allclose(float(value), expected, rtol=1e-12)
        for k in (0, 10, 11):  # a pair factor, the root's and a leaf's unary factor
            keep = operands[k]
            marginal = np.exp(logsumexp(joint, axis=tuple(j for j, n in enumerate(names)
                                                          if n not in keep)))
            np.testing.assert_allclose(np.asarray(grads[k]), marginal, rtol=1e-10)
    calls.clear()
    np.testing.assert_allclose(log_z(*arrays), expected, rtol=1e-12)  # numpy: batched
    operands, arrays, names = star(rng, 40)  # 80 steps: batched on eager jax too
    plan = plan_contraction(operands, dict.fromkeys(names, 2), ())
    value = plan.run_arrays(ops.logaddexp, ops.add, [jax.numpy.asarray(x) for x in arrays])
    np.testing.assert_allclose(float(value), star_log_z(arrays, 40), rtol=1e-12)
    assert len(calls) == 2
