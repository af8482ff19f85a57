"""The thesis's grid (Singh 2014, 7.2.7.1) against its text, term by term."""

from __future__ import annotations

import numpy as np

from funsor_core.algorithms.loopy.models import thesis_grid


def test_thesis_grid_is_gamma_of_the_text():
    # Without noise each table is gamma(k) = k log(1 - p) + log p with one p per factor
    # (read back from gamma(0) = log p), at k = v for unaries and k = v_i + v_j L for pairs.
    n, L = 3, 4
    factors, (unary, right, down) = thesis_grid(np.random.default_rng(0), n, L, noise_sd=0.0)
    v = np.arange(L)
    k_pair = v[:, None] + v[None, :] * L
    ps = []
    for table, k in [(t, v) for t in unary.reshape(-1, L)] + [
            (t, k_pair) for t in np.concatenate([right.reshape(-1, L, L),
                                                 down.reshape(-1, L, L)])]:
        p = np.exp(table.flat[0])
        np.testing.assert_allclose(table, k * np.log1p(-p) + np.log(p), rtol=1e-12)
        ps.append(p)
    assert len(set(ps)) == len(factors) == n * n + 2 * n * (n - 1)  # one p per factor
    # Factor scopes: x_{i,j} with its right and lower neighbour, v_i first (slope log(1-p)).
    assert list(factors[n * n].inputs) == ["x0_0", "x0_1"]
    assert list(factors[n * n + n * (n - 1)].inputs) == ["x0_0", "x1_0"]
    np.testing.assert_array_equal(factors[n * n].data, right[0, 0])


def test_thesis_grid_noise_is_gaussian_with_the_given_sd():
    # What a least-squares line through each unary table leaves is the noise: sd noise_sd
    # (0.1, not the variance reading's 0.32), and the line's slope is log(1 - p) < 0.
    _, (unary, _, _) = thesis_grid(np.random.default_rng(1), 2, 300, noise_sd=0.1)
    v = np.arange(300)
    for table in unary.reshape(-1, 300):
        slope, intercept = np.polyfit(v, table, 1)
        assert slope < 0 and abs(np.std(table - slope * v - intercept) - 0.1) < 0.015
