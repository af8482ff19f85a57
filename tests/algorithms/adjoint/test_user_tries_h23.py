"""A new user's tries of ``forward_backward`` under ``PosteriorSample`` (h23): without
``batch_vars`` the backward pass summed the particles out, giving a Tensor that was neither
samples nor marginals; the draws now keep their sample inputs. Oracle: the posterior by
enumeration."""

from __future__ import annotations

import numpy as np

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import forward_backward
from funsor_core.algorithms.adjoint.kinds import PosteriorSample
from funsor_core.montecarlo import extract_samples
from interpretations import lazy


def test_posterior_samples_keep_their_particles_without_batch_vars():
    a = np.log(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    b = np.log(np.array([3.0, 1.0, 2.0]))
    fa = fc.Tensor(a, {"i": fc.Bint[2], "j": fc.Bint[3]})
    fb = fc.Tensor(b, {"j": fc.Bint[3]})
    joint = np.exp(a + b)
    posterior = joint / joint.sum()
    with lazy:
        z = (fa + fb).reduce(ops.logaddexp, frozenset({"i", "j"}))
    n = 4000
    with PosteriorSample(rng_key=0, particle=fc.Bint[n]):
        _, adj = forward_backward(ops.logaddexp, ops.add, z)
    points = extract_samples(adj[fa])
    assert points["i"].inputs == {"particle": fc.Bint[n]} == points["j"].inputs
    counts = np.zeros((2, 3))
    np.add.at(counts, (np.asarray(points["i"].data), np.asarray(points["j"].data)), 1)
    np.testing.assert_allclose(counts / n, posterior, atol=0.03)
