"""Programs a new user writes from the README (h108) on allocation models: an int seed
traced under ``jax.jit`` (``jax.jit(lambda s: smc(m, X, n, rng_key=s))(3)``) drew the shuffled
token order from seed 0 and the particles from seed 3, a silently different estimate from the
eager ``rng_key=3``; it now raises, naming the remedies, and ``order="cells"`` (no host draw)
gives the eager run's estimate. Oracles: the eager run and ``log_marginal_exact``."""

from __future__ import annotations

import numpy as np
import pytest

from funsor_core.allocation import AllocationModel
from funsor_core.smc import smc

jax = pytest.importorskip("jax")

NMF = AllocationModel({"k": (), "i": ("k",), "j": ("k",)}, {"i": 2, "j": 3, "k": 2},
                      visible=("i", "j"), a=1.0, b=1.0)
X = np.array([[2, 0, 1], [0, 1, 1]])


def test_a_traced_int_seed_with_a_shuffled_order_raises():
    Xj = jax.numpy.asarray(X)
    with pytest.raises(ValueError, match="traced"):
        jax.jit(lambda s: smc(NMF, Xj, 16, rng_key=s).log_z)(3)


def test_a_traced_int_seed_with_cells_order_matches_the_eager_seed():
    Xj = jax.numpy.asarray(X)
    traced = jax.jit(lambda s: smc(NMF, Xj, 64, rng_key=s, order="cells").log_z)(3)
    eager = smc(NMF, Xj, 64, rng_key=3, order="cells").log_z
    np.testing.assert_allclose(float(traced), float(eager), rtol=1e-12)
    assert abs(float(eager) - NMF.log_marginal_exact(X)) < 0.3
