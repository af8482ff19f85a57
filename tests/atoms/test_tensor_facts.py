"""Pyro's renormalization of an enumerated site's table, ``t - t.reduce(logaddexp, v)``, of a
Categorical table of positive probabilities (recorded normalized along its value) skips the
logsumexp and the subtraction: checked against numpy brute force of the explicit
renormalization (float32), torch autograd of the explicit computation from the leaf probs
(the result's and the logsumexp's own gradients), zero probabilities (not recorded: computed
as before), a changed array, a traced parameter under ``jax.jit`` (NaN, never a zero), and
the domain check the subtraction keeps."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import funsor_core as fc
from funsor_core import distribution as D
from funsor_core import ops
from funsor_core.atoms.tensor_facts import is_zero, normalized_axis
from funsor_core.domains import Bint

jax.config.update("jax_enable_x64", True)
K = 4


def _probs(dtype=np.float64, zero=False):
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(K), size=(3,)).astype(dtype)
    if zero:
        probs[1, 2] = 0.0  # an impossible value: -inf in the table
    probs[2] *= 5.0  # unnormalized: normalized as torch's Categorical does
    return probs


def _site(probs):
    t = D.Categorical(fc.Tensor(probs, {"a": Bint[3]}), value=fc.Variable("value", Bint[K]))
    return t(value="x")  # Pyro names the value after the site


def _explicit_np(probs):
    # log(p / sum p), then minus its logsumexp over x, entry by entry
    table = np.where(probs > 0, np.log(np.where(probs > 0, probs, 1.0)), -np.inf)
    table = table - np.log(probs.sum(-1, keepdims=True))
    lse = np.array([np.log(np.exp(row).sum()) for row in table])
    return table - lse[:, None]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_renormalized_table_is_the_table(backend, dtype):
    probs = _probs(dtype)
    wrap = torch.tensor if backend == "torch" else np.asarray
    t = _site(wrap(probs))
    assert normalized_axis(t.data) == 1
    norm = t.reduce(ops.logaddexp, "x")
    assert is_zero(norm.data) and dict(norm.inputs) == {"a": Bint[3]}
    out = t - norm
    assert out is t
    assert np.asarray(out.data).dtype == dtype
    rtol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(np.asarray(out.data), _explicit_np(probs.astype(float)),
                               rtol=rtol, atol=rtol)


@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_renormalized_table_gradient_matches_explicit(dtype, zero):
    # With a zero probability the table is not recorded (the masked log's zero derivative
    # makes the explicit derivative with respect to that entry 0, not the table's own):
    # the explicit computation runs, so the gradients agree there too.
    probs = torch.tensor(_probs(zero=zero), dtype=dtype)
    rng = np.random.default_rng(4)
    w = torch.tensor(rng.normal(size=(3, K)), dtype=dtype)
    w2 = torch.tensor(rng.normal(size=(3,)), dtype=dtype)
    finite = probs > 0

    leaf = probs.clone().requires_grad_()
    t = _site(leaf)
    norm = t.reduce(ops.logaddexp, "x")
    out = t - norm
    assert (out is t) is not zero
    loss = (torch.where(finite, out.data, 0.0) * w).sum() + (norm.data * w2).sum()
    loss.backward()

    ref = probs.clone().requires_grad_()  # the explicit computation, as torch writes it
    safe = torch.where(finite, ref, torch.ones_like(ref))
    table = torch.where(finite, torch.log(safe), -torch.inf) - torch.log(ref.sum(-1, True))
    lse = torch.logsumexp(table, -1)
    explicit = table - lse[:, None]
    ref_loss = (torch.where(finite, explicit, 0.0) * w).sum() + (lse * w2).sum()
    ref_loss.backward()
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(loss.detach(), ref_loss.detach(), rtol=tol, atol=tol)
    torch.testing.assert_close(leaf.grad, ref.grad, rtol=tol, atol=tol)


def test_other_names_and_changed_arrays_are_reduced():
    # Over another input the table is not normalized: the logsumexp runs (numpy oracle).
    probs = _probs(zero=True)
    assert normalized_axis(_site(probs).data) is None  # a zero probability: not recorded
    np.testing.assert_allclose((_site(probs) - _site(probs).reduce(ops.logaddexp, "x")).data,
                               _explicit_np(probs), rtol=1e-12)
    probs = _probs()
    t = _site(probs)
    other = t.reduce(ops.logaddexp, "a")
    table = _explicit_np(probs)  # equal to the table: it is normalized along x
    expected = np.log(np.exp(table).sum(0))
    np.testing.assert_allclose(other.data, expected, rtol=1e-12)
    assert not is_zero(other.data)
    # A torch array changed in place since it was recorded: reduced, not assumed zero.
    s = _site(torch.tensor(probs))
    s.data.add_(1.0)
    changed = s.reduce(ops.logaddexp, "x").data
    torch.testing.assert_close(changed, torch.logsumexp(s.data, -1))
    assert changed.abs().min() > 0.5


def test_traced_table_is_not_assumed_normalized():
    # Under jit an invalid probability makes the table NaN; its logsumexp must be NaN too.
    def norm(p):
        t = _site(p)
        return t.reduce(ops.logaddexp, "x").data

    out = jax.jit(norm)(jnp.asarray(np.array([[0.5, -0.5, 0.5, 0.5]] * 3)))
    assert bool(jnp.isnan(out).all())
    ok = jax.jit(norm)(jnp.asarray(_probs()))
    np.testing.assert_allclose(np.asarray(ok), np.zeros(3), atol=1e-12)


def test_subtracting_zeros_keeps_the_domain_check():
    zeros = _site(_probs()).reduce(ops.logaddexp, "x")  # over a: Bint[3]
    other = fc.Tensor(np.zeros((2, K)), {"a": Bint[2], "x": Bint[K]})
    with pytest.raises(ValueError, match="'a'"):
        other - zeros
