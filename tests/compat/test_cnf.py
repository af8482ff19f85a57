"""funsor's ``funsor.cnf`` names: einsum backend strings and the GaussianMixture check."""

import numpy as np
import opt_einsum
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.cnf import (
    BACKEND_TO_EINSUM_BACKEND,
    BACKEND_TO_LOGSUMEXP_BACKEND,
    BACKEND_TO_MAP_BACKEND,
    GaussianMixture,
)
from funsor_core.domains import Bint, Real
from funsor_core.interpreter import gensym
from funsor_core.testing import assert_close, random_gaussian, random_tensor


@pytest.mark.parametrize("table, reduce", [
    (BACKEND_TO_EINSUM_BACKEND, lambda a: a.sum(1)),
    (BACKEND_TO_LOGSUMEXP_BACKEND, lambda a: np.log(np.exp(a).sum(1))),
    (BACKEND_TO_MAP_BACKEND, lambda a: a.max(1)),
], ids=["sum", "logsumexp", "max"])
def test_backend_strings_pick_the_semiring(backend, table, reduce):
    np.random.seed(0)
    x = np.random.randn(2, 3)
    y = np.random.randn(3)
    fx = fc.Tensor(_on_backend(x), {"a": Bint[2], "b": Bint[3]})
    fy = fc.Tensor(_on_backend(y), {"b": Bint[3]})
    result = fc.einsum("ab,b->a", fx, fy, backend=table[backend])
    if table is BACKEND_TO_EINSUM_BACKEND:
        expected = opt_einsum.contract("ab,b->a", x, y)
    else:  # log and max semirings combine factors by +
        expected = reduce(x + y[None, :])
    assert_close(ops.to_numpy(result.data), expected, atol=1e-10, rtol=1e-10)


def _on_backend(x):
    if fc.get_backend() == "numpy":
        return x
    if fc.get_backend() == "torch":
        import torch

        return torch.tensor(x)
    import jax.numpy as jnp

    return jnp.asarray(x)


def test_gaussian_mixture_is_a_gaussian_plus_weights():
    g = random_gaussian({"i": Bint[2], "x": Real})
    w = random_tensor({"i": Bint[2]})
    assert isinstance(g + w, GaussianMixture)
    assert isinstance(w + g, GaussianMixture)
    assert not isinstance(g, GaussianMixture)
    assert not isinstance(w + w, GaussianMixture)
    with_variable = g + fc.Variable("y", Real)  # a Contraction, but not of weights
    assert isinstance(with_variable, fc.Contraction)
    assert not isinstance(with_variable, GaussianMixture)
    assert not issubclass(fc.Contraction, GaussianMixture)


def test_gensym_names_are_fresh():
    names = {gensym("x") for _ in range(100)}
    assert len(names) == 100 and all(n.startswith("x_") for n in names)
    assert gensym().startswith("V")
    obj = object()
    assert gensym(obj) == id(obj)
