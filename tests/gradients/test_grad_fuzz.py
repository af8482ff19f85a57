"""A seeded slice of the gradient fuzzer (``grad_fuzz``): torch autograd on programs of every
family, and ``jax.jit(jax.grad)`` on two small ones, each against
central finite differences of the same program on numpy in float64 (Richardson
extrapolated), with the value against the float64 value and no NaN in any gradient."""

from __future__ import annotations

import pytest

from tests.gradients import grad_fuzz
from tests.gradients.grad_programs import FAMILIES

pytest.importorskip("torch")
pytest.importorskip("jax")

TORCH_SEEDS = [(family, seed) for family in FAMILIES for seed in range(2)]
JAX_SEEDS = [("contract", 1, "jax_jit_grad"), ("chain", 5, "jax_jit_grad")]


@pytest.mark.parametrize("family,seed", TORCH_SEEDS)
def test_torch_gradient_matches_finite_differences(family, seed):
    p, res = grad_fuzz.check(seed, family, only=["torch"])
    assert res["torch"] is None, f"{p.desc}: {res['torch']}"


@pytest.mark.parametrize("family,seed,runner", JAX_SEEDS)
def test_jax_gradient_matches_finite_differences(family, seed, runner):
    p, res = grad_fuzz.check(seed, family, only=[runner])
    assert res[runner] is None, f"{p.desc}: {res[runner]}"
