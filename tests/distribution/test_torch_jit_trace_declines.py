"""Under ``torch.jit.trace`` (Pyro's ``JitTraceEnum_ELBO``) array values are traced, as under
``jax.jit``: a rule that reads them (``ops.known_true``, e.g. Categorical's "every probability
is positive, so a plain log") must decline, not bake the answer of the tracing inputs into
the traced function. Oracle: the same function run eagerly on the new inputs (value and
autograd gradient), where a zero probability gets a zero, not NaN, derivative."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint

torch = pytest.importorskip("torch")


def _masked_table_sum(p):
    from funsor_core.distribution import Categorical

    probs = fc.Tensor(p, {"i": Bint[2]})
    table = Categorical(probs=probs, value=fc.Variable("v", Bint[3])).data
    # the log probabilities of the positive entries only: a zero's entry is masked out
    return ops.where(p > 0, table, ops.full_like(table, 0.0)).sum()


def _value_and_grad(fn, p):
    p = p.clone().requires_grad_(True)
    value = fn(p)
    (grad,) = torch.autograd.grad(value, p)
    return value.detach().numpy(), grad.numpy()


def test_traced_categorical_keeps_the_zero_safe_log():
    fc.set_backend("torch")
    try:
        positive = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], dtype=torch.float64)
        with_zero = torch.tensor([[0.0, 0.4, 0.6], [0.6, 0.1, 0.3]], dtype=torch.float64)
        with warnings.catch_warnings():  # (shape reads are traced as constants: harmless)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            traced = torch.jit.trace(_masked_table_sum, positive.clone().requires_grad_(True),
                                     check_trace=False)
        want_value, want_grad = _value_and_grad(_masked_table_sum, with_zero)
        assert np.isfinite(want_grad).all()
        value, grad = _value_and_grad(traced, with_zero)
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    finally:
        fc.set_backend("numpy")

