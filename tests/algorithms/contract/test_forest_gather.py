"""The level-batched kernel's flipped pairs (read swapped by one gather), its resolved level
kernels and torch's row scatter, against numpy brute force (``test_forest.brute_force``:
every assignment enumerated) and ``np.add.at``. (einsum's structure key of Tensor operands:
``test_level_batch``.)"""

import numpy as np
import opt_einsum
import pytest
from scipy.special import logsumexp

from funsor_core import ops
from funsor_core.algorithms.contract.forest import plan_forest, run_forest
from tests.algorithms.contract.test_forest import brute_force

SEMIRINGS = [ops.logaddexp, ops.max, ops.min]


def oriented_tree(rng, dims: int, size: int, flip: str, scale: float = 3.0):
    """A random tree with one unary factor per dim (and a second on dim 0), each pair given
    as (parent, child), as (child, parent), or in random orientation (``flip``); rooting
    at the center then flips a few pairs, all but a few, or about half."""
    names = [opt_einsum.get_symbol(k) for k in range(dims)]
    operands = []
    for k in range(1, dims):
        p, c = names[int(rng.integers(k))], names[k]
        swap = {"none": False, "all": True}.get(flip, rng.random() < 0.5)
        operands.append((c, p) if swap else (p, c))
    operands += [(n,) for n in names] + [(names[0],)]
    arrays = [rng.uniform(-scale, scale, size=(size,) * len(o)) for o in operands]
    return operands, arrays, names


def to_backend(arrays, backend, dtype=np.float64, grad=False):
    if backend == "torch":
        import torch

        return [torch.tensor(x.astype(dtype), requires_grad=grad) for x in arrays]
    return [x.astype(dtype) for x in arrays]


@pytest.mark.parametrize("flip", ["none", "all", "random"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_flipped_pairs_in_every_semiring_equal_brute_force(backend, flip):
    # One gather reads every pair given as (child, parent) swapped: none, most or half of
    # them, with a kept dim and without, in each semiring with a batched kernel.
    rng = np.random.default_rng(20)
    operands, arrays, names = oriented_tree(rng, 9, 3, flip)
    for output in ((), (names[4],)):
        forest = plan_forest(operands, dict.fromkeys(names, 3), output)
        assert (forest.edge_gather is None) == (not forest.flips.any())
        for sum_op in SEMIRINGS:
            expected = brute_force(sum_op, operands, arrays, names, output)
            actual = run_forest(forest, sum_op, to_backend(arrays, backend))
            np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-12)


def test_gathered_pairs_under_jax_jit_and_in_float32():
    # The gather index is structure: under jax.jit the kernel traces as it runs eagerly.
    # Log factors of +-700 (1e-304 to 1e304) in float32 stay exact (an exact logsumexp per
    # level), with the dtype kept.
    import jax

    rng = np.random.default_rng(21)
    operands, arrays, names = oriented_tree(rng, 5, 2, "all", scale=700.0)
    forest = plan_forest(operands, dict.fromkeys(names, 2), ())
    assert forest.edge_gather is not None
    expected = brute_force(ops.logaddexp, operands, arrays, names, ())
    jitted = jax.jit(lambda *xs: run_forest(forest, ops.logaddexp, xs))
    np.testing.assert_allclose(jitted(*arrays), expected, rtol=1e-6)
    for backend in ("numpy", "torch"):
        actual = run_forest(forest, ops.logaddexp, to_backend(arrays, backend, np.float32))
        assert str(actual.dtype).endswith("float32")
        np.testing.assert_allclose(ops.to_numpy(actual), expected, rtol=1e-5)


def test_torch_gradient_through_gathered_pairs_is_the_pair_marginal():
    # d log Z / d log f(a, b) is the posterior marginal of (a, b), in the pair's own axis
    # order, flipped or not: enumerated from the brute-force joint.
    rng = np.random.default_rng(22)
    operands, arrays, names = oriented_tree(rng, 7, 3, "random")
    forest = plan_forest(operands, dict.fromkeys(names, 3), ())
    xs = to_backend(arrays, "torch", grad=True)
    run_forest(forest, ops.logaddexp, xs).backward()
    log_z = brute_force(ops.logaddexp, operands, arrays, names, ())
    joint = brute_force(ops.logaddexp, operands, arrays, names, names) - log_z
    for k in (k for k, o in enumerate(operands) if len(o) == 2):
        marginal = logsumexp(joint, axis=tuple(j for j, n in enumerate(names)
                                               if n not in operands[k]))
        if names.index(operands[k][0]) > names.index(operands[k][1]):
            marginal = marginal.T  # brute force's axes follow ``names``
        np.testing.assert_allclose(xs[k].grad.numpy(), np.exp(marginal), rtol=1e-9)


def test_torch_scatter_add_rows_equals_numpy_add_at():
    # One int64 row index with one row of values each takes index_add; broadcast values, an
    # int32 index or two index arrays take index_put. Repeated rows accumulate, out of place.
    import torch

    rng = np.random.default_rng(23)
    dest = rng.normal(size=(5, 3))
    rows = np.array([4, 0, 4, 2, 4])
    values = rng.normal(size=(5, 3))
    cases = [((rows,), values), ((rows.astype(np.int32),), values), ((rows,), values[:1]),
             ((rows, np.array([0, 1, 2, 0, 1])), values[:, 0])]
    for index, vals in cases:
        expected = dest.copy()
        np.add.at(expected, index, vals)
        t = torch.tensor(dest)
        actual = ops.scatter_add(t, tuple(torch.tensor(i) for i in index), torch.tensor(vals))
        np.testing.assert_allclose(actual.numpy(), expected, rtol=1e-15)
        np.testing.assert_array_equal(t.numpy(), dest)  # out of place
