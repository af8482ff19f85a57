"""``Gaussian(info_vec=, precision=)`` is ``-0.5 x'Px + i'x - 0.5 i'P^-1 i`` (maximum 0), as its
docstring says and as funsor 0.4.8 gives (a user reading "+ const" expected 0); oracle: the
quadratic form and the Gaussian integral by numpy."""

from __future__ import annotations

import numpy as np

import funsor_core as fc
from funsor_core import ops

ETA, P = np.array([1.0, 0.5]), np.array([[2.0, 0.3], [0.3, 1.0]])


def test_info_form_density_and_integral():
    g = fc.Gaussian(info_vec=ETA, precision=P, inputs={"z": fc.Reals[2]})
    x = np.array([0.1, -0.2])
    const = -0.5 * ETA @ np.linalg.solve(P, ETA)
    np.testing.assert_allclose(float(g(z=x).data), -0.5 * x @ P @ x + ETA @ x + const, rtol=1e-12)
    log_z = np.log(2 * np.pi) - 0.5 * np.log(np.linalg.det(P))  # integral of exp(max 0 form)
    np.testing.assert_allclose(float(g.reduce(ops.logaddexp, "z").data), log_z, rtol=1e-12)
