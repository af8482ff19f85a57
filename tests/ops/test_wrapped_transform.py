"""ops.WrappedTransformOp: a library transform object as an op (funsor's test_ops).

Oracles: the closed forms of the power transform y = x ** 0.5 (inverse y ** 2, log-Jacobian
log(0.5) - 0.5 log x) by numpy; identity and lifetime of the interned ops by weak references.
"""

import weakref

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops


def _library(backend):
    if backend == "torch":
        import torch.distributions as td

        return td, lambda x: __import__("torch").tensor(x)
    import jax.numpy as jnp

    td = pytest.importorskip("numpyro.distributions")
    return td, jnp.asarray


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_wrapped_transform_values(name):
    td, array = _library(name)
    t = td.transforms.PowerTransform(0.5)
    op = ops.WrappedTransformOp(fn=t)
    x = np.array([0.25, 1.0, 4.0])
    y = ops.to_numpy(op(array(x)))
    np.testing.assert_allclose(y, np.sqrt(x))
    np.testing.assert_allclose(ops.to_numpy(op.inv(array(y))), x)
    ladj = op.log_abs_det_jacobian(array(x), array(y))
    np.testing.assert_allclose(ops.to_numpy(ladj), np.log(0.5) - 0.5 * np.log(x))
    # on a funsor: a term over the same inputs, whose values are the transform's
    f = fc.Tensor(array(x), {"i": fc.Bint[3]})
    g = op(f)
    assert dict(g.inputs) == {"i": fc.Bint[3]}
    np.testing.assert_allclose(ops.to_numpy(g.data), np.sqrt(x))


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_wrapped_transform_interned_and_collected(name):
    td, _ = _library(name)
    t = td.transforms.PowerTransform(0.5)
    W = ops.WrappedTransformOp
    assert W(fn=t) is W(fn=t)
    assert W(fn=t).inv is W(fn=t).inv
    assert W(fn=t).log_abs_det_jacobian is W(fn=t).log_abs_det_jacobian
    assert W(fn=t) is not W(fn=td.transforms.PowerTransform(0.5))
    op = W(fn=t)
    alive = weakref.ref(op)
    del op
    assert alive() is None  # no cycle and no global table keeps an unused op
