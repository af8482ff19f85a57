"""The pairwise contraction kernels on log-space operands with unreachable entries (``-inf``):
``log_sum`` and the steps that use it (``pair``, ``reduce_dims``, ``log_pair_run``) against
numpy, with derivatives that are finite, 0 where a whole slice is ``-inf`` (the backends'
logsumexp differentiates to NaN there), on torch, jax and under ``jax.jit``.
"""

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.algorithms.contract.kernels import log_pair_run, log_pair_spec, log_sum, pair

NEG = -np.inf


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_log_sum_matches_logsumexp_with_finite_derivatives(backend):
    # log_sum against numpy's logaddexp on slices that are all -inf, partly -inf, +inf, NaN;
    # derivatives against the softmax of each slice (0 where the slice is all -inf).
    x = np.array([[0.0, 1.0, -2.0], [NEG, NEG, NEG], [NEG, 0.5, NEG], [np.inf, 0.0, NEG],
                  [np.nan, 0.0, 1.0]])
    finite = x[:3]
    with np.errstate(invalid="ignore"):
        expected = np.logaddexp.reduce(x, axis=-1)
        softmax = np.where(np.isfinite(finite), np.exp(finite - expected[:3, None]), 0.0)
    if backend == "numpy":
        np.testing.assert_array_equal(log_sum(x, -1), expected)
        return
    if backend == "torch":
        torch = pytest.importorskip("torch")
        np.testing.assert_array_equal(log_sum(torch.tensor(x), -1).numpy(), expected)
        t = torch.tensor(finite, requires_grad=True)
        log_sum(t, -1)[0::2].sum().backward()
        grad = t.grad.numpy()
        traced = None
    else:
        jax = pytest.importorskip("jax")
        jnp = jax.numpy
        np.testing.assert_array_equal(np.asarray(jax.jit(lambda y: log_sum(y, -1))(x)),
                                      expected)
        grad = np.asarray(jax.grad(lambda y: log_sum(y, -1)[0::2].sum())(jnp.asarray(finite)))
        traced = np.asarray(jax.jit(jax.grad(lambda y: log_sum(y, -1)[0::2].sum()))(finite))
    softmax[1] = 0.0  # the all -inf row is not in the loss: a zero cotangent, no NaN
    np.testing.assert_allclose(grad, softmax, rtol=1e-12)
    if traced is not None:
        np.testing.assert_allclose(traced, softmax, rtol=1e-12)


@pytest.mark.parametrize("backend", ["torch", "jax", "jax.jit"])
def test_log_space_steps_have_finite_gradients_where_unreachable(backend):
    # x (a) . y (a, b) summed over a, where column b = 2 of y is unreachable (all -inf):
    # the result there is -inf and the derivatives of the other columns' sum are their
    # posteriors, 0 in the unreachable column. By pair, and by a planned step.
    x = np.array([0.0, -1.0, NEG])
    y = np.array([[0.5, NEG, NEG], [0.0, 1.0, NEG], [2.0, 0.0, NEG]])
    z = np.logaddexp.reduce(x[:, None] + y, axis=0)
    assert z[2] == NEG
    with np.errstate(invalid="ignore"):
        post = np.where(np.isfinite(y), np.exp(x[:, None] + y - z), 0.0)  # d z_b / d y_ab
    expected_dy = np.where(np.arange(3) < 2, post, 0.0)
    expected_dx = expected_dy.sum(1)
    spec = log_pair_spec("a", "ab", "b", {"a": 3, "b": 3})

    def steps(x, y):
        return (pair(ops.logaddexp, ops.add, x, "a", y, "ab", "b"), log_pair_run(spec, x, y))

    if backend == "torch":
        torch = pytest.importorskip("torch")
        for k in range(2):
            tx, ty = (torch.tensor(v, requires_grad=True) for v in (x, y))
            out = steps(tx, ty)[k]
            np.testing.assert_allclose(out.detach().numpy(), z)
            out[:2].sum().backward()
            np.testing.assert_allclose(tx.grad.numpy(), expected_dx, rtol=1e-12)
            np.testing.assert_allclose(ty.grad.numpy(), expected_dy, rtol=1e-12)
        return
    jax = pytest.importorskip("jax")
    for k in range(2):
        def loss(x, y, k=k):
            return steps(x, y)[k][:2].sum()

        grad = jax.grad(loss, argnums=(0, 1))
        if backend == "jax.jit":
            grad = jax.jit(grad)
        dx, dy = grad(jax.numpy.asarray(x), jax.numpy.asarray(y))
        np.testing.assert_allclose(np.asarray(dx), expected_dx, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(dy), expected_dy, rtol=1e-12)


def test_log_pair_keeps_the_larger_operand_in_place_under_jit():
    # NumPyro's enumerated site x outside a plate p with a site y inside it: the step
    # log sum_y exp(b[x, y, p] + c[y, p]) broadcasts in b's own order (summing the middle axis)
    # rather than (x, p, y), which copied b by a transpose and its cotangent by another.
    # Oracle: the plated sum-product by numpy in float64, its gradient by the softmax chain
    # rule d/db[x, y, p] = softmax_x(a + sum_p f)[x] * softmax_y(b[x, :, p] + c[:, p])[y].
    jax = pytest.importorskip("jax")
    from scipy.special import logsumexp, softmax

    import funsor_core as fc
    from funsor_core.sum_product import sum_product
    from tests.backends.test_jax_logsumexp import _exps

    K, P = 3, 5
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=K), rng.normal(size=(K, K, P)), rng.normal(size=(K, P))

    def log_z(a, b, c):
        fs = [fc.Tensor(a, {"x": fc.Bint[K]}),
              fc.Tensor(b, {"x": fc.Bint[K], "y": fc.Bint[K], "p": fc.Bint[P]}),
              fc.Tensor(c, {"y": fc.Bint[K], "p": fc.Bint[P]})]
        return sum_product(ops.logaddexp, ops.add, fs, frozenset("xyp"), frozenset("p")).data

    fn = jax.value_and_grad(log_z, argnums=1)
    jaxpr = jax.make_jaxpr(fn)(a, b, c).jaxpr
    moved = [e for e in jaxpr.eqns if e.primitive.name == "transpose"
             and (K, K, P) in (e.invars[0].aval.shape, e.outvars[0].aval.shape)]
    assert not moved
    # The step's broadcast is no larger than b: its derivative keeps the value's exps (one
    # exp per entry, jax's logsumexp_shared), where a blown-up broadcast recomputes them.
    assert _exps(jaxpr).count((K, K, P)) == 1
    assert log_pair_spec("xy", "y", "x", {"x": K, "y": K})[-1]
    assert not log_pair_spec("ab", "bc", "ac", {"a": 4, "b": 4, "c": 4})[-1]
    value, grad = jax.jit(fn)(a, b, c)
    f = logsumexp(b + c[None], axis=1)  # (x, p)
    np.testing.assert_allclose(float(value), logsumexp(a + f.sum(1)), rtol=1e-12)
    expected = softmax(a + f.sum(1))[:, None, None] * softmax(b + c[None], axis=1)
    np.testing.assert_allclose(np.asarray(grad), expected, rtol=1e-10, atol=1e-14)


