"""The numpy route of the moment-matching collapse (``normal_equations._eager_host``: one
augmented Cholesky per factorization, numpy's LAPACK ufuncs called directly), the Gaussian
constructor's fast path for dict inputs and the cached relabelling of a renamed sum: each
against the general path it shortcuts.

Oracles: ``np.linalg.cholesky`` and ``np.linalg.inv``; the collapse through ``ops``
(``_eager``, every backend's path) and the QR collapse (``FAST_NORMAL_EQUATIONS`` off, which
squares nothing); the Gaussian built from the same arrays through the general constructor
branch; the renaming under ``exact`` (which aligns and substitutes); the numpy GPB2 filter.
"""

from __future__ import annotations

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian import collapse_fused, moments
from funsor_core.atoms.gaussian import normal_equations as ne
from funsor_core.atoms.gaussian.mixture import rename_gaussian_sum
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import _numpy_gpb, _slds
from tests.interpretations.test_moment_matching_sums import _step_loop


def _mixture(rng, batch=(2, 3), dim=4, rank=6):
    return rng.normal(size=batch), rng.normal(size=batch + (rank,)), rng.normal(
        size=batch + (dim, rank))


def _gram(w, s, index):
    d_b, m = ne.system_rows(w, s, index)
    return d_b, m @ m.swapaxes(-1, -2) + ne._last_unit(s.shape[-2] + 1)


def _by_qr(lw, w, s, index):
    ne.FAST_NORMAL_EQUATIONS[0] = False
    try:
        return moments.collapse_system(lw, w, s, index)
    finally:
        ne.FAST_NORMAL_EQUATIONS[0] = True


@pytest.mark.parametrize("route", ["ufunc", "wrapper"])
def test_augmented_cholesky_gives_the_factor_and_its_inverse(route, monkeypatch):
    """One factorization of ``[[G, 0], [I, tI]]``: ``L`` and ``L^{-1}`` as numpy's own; a
    batch entry that is not positive definite is NaN (and fails the check). The same through
    ``np.linalg.cholesky`` (the route where numpy lacks the LAPACK ufunc)."""
    if route == "wrapper":
        monkeypatch.setattr(ne, "_CHOLESKY", ne._nan_on_error(np.linalg.cholesky))
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 5, 7))
    gram = a @ a.swapaxes(-1, -2)
    chol, chol_inv = ne._cholesky_inverse_host(gram)
    np.testing.assert_allclose(chol, np.linalg.cholesky(gram), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(chol_inv, np.linalg.inv(np.linalg.cholesky(gram)),
                               rtol=1e-12, atol=1e-12)
    gram[2] = np.outer(a[2, :, 0], a[2, :, 0])  # singular (rank 1), a positive diagonal
    chol, chol_inv = ne._cholesky_inverse_host(gram)
    assert np.isnan(chol_inv[2]).all()
    assert route == "wrapper" or np.isfinite(chol_inv[[0, 1, 3]]).all()  # (NaN: all of it)
    assert not ne._host_check(gram, chol_inv, 4, ne._tolerance(4, 7))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_host_collapse_equals_the_general_paths(backend):
    """With a -inf component weight and an integrated coordinate: the numpy route equals the
    ``ops`` route and the QR collapse to 1e-12; torch arrays (the ``ops`` route) agree."""
    lw, w, s = _mixture(np.random.default_rng(1))
    lw[1, 2] = -np.inf
    index = (2, 0)
    d_b, gram = _gram(w, s, index)
    plan = (d_b, 4, ne._tolerance(4, 6))
    host = ne._eager_host(lw, gram, plan)
    assert host is not None
    if backend == "torch":
        import torch

        args = [torch.tensor(x) for x in (lw, w, s)]
        expected = [ops.to_numpy(x) for x in moments.collapse_system(*args, index)]
    else:
        for a, e in zip(host, ne._eager(lw, gram, plan)):
            np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)
        expected = _by_qr(lw, w, s, index)
    # The QR path's square root is another one (row signs): compare what they stand for.
    for a, e in zip(_invariants(*host), _invariants(*expected)):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


def _invariants(log_const, white_vec, prec_sqrt):
    """The normalizer, information vector and precision of ``(log_const, w, S)``."""
    return log_const, (prec_sqrt @ white_vec[..., None])[..., 0], prec_sqrt @ prec_sqrt.swapaxes(
        -1, -2)


@pytest.mark.parametrize("gap", [1e-5, 0.0])
def test_near_singular_component_falls_back_to_qr(gap):
    """A component whose Gram matrix is not numerically positive definite (two rows of its
    precision square root within 1e-5 of each other, so G has condition ~1e10; or one
    row zero, so its Cholesky fails at once): the numpy route declines, by its
    factorization or its check, and the collapse is the QR path's (which has the rank tests
    and their errors)."""
    lw, w, s = _mixture(np.random.default_rng(2))
    s[0, 1, 3] = s[0, 1, 2] + gap * s[0, 1, 3] if gap else 0.0
    d_b, gram = _gram(w, s, (0,))
    chol, chol_inv = ne._cholesky_inverse_host(gram)
    assert gap or np.isnan(chol_inv[0, 1]).all()  # the factorization itself failed
    assert ne._eager_host(lw, gram, (d_b, 4, ne._tolerance(4, 6))) is None
    if not gap:
        with pytest.raises(ValueError, match="flat along a direction"):
            moments.collapse_system(lw, w, s, (0,))
        return
    for a, e in zip(moments.collapse_system(lw, w, s, (0,)), _by_qr(lw, w, s, (0,))):
        np.testing.assert_array_equal(a, e)


def _as(backend, x):
    if backend == "torch":
        import torch

        return torch.tensor(x)
    return x


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_gaussian_dict_inputs_take_the_checked_fast_path(backend):
    """``Gaussian(white_vec, prec_sqrt, inputs=dict)`` is the Gaussian of the tuple form and
    of the general branch (a ``mean`` given instead); bad shapes still raise, every time."""
    rng = np.random.default_rng(3)
    w_np, s_np = rng.normal(size=(3, 2)), rng.normal(size=(3, 2, 2))
    w, s = _as(backend, w_np), _as(backend, s_np)
    inputs = {"i": fc.Bint[3], "x": fc.Reals[2]}
    g = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=inputs)
    h = fc.Gaussian(white_vec=w, prec_sqrt=s, inputs=tuple(inputs.items()))
    assert g.inputs == h.inputs and g.white_vec is w and g.prec_sqrt is s
    precision = s_np @ s_np.swapaxes(-1, -2)
    mean = np.linalg.solve(precision, (s_np @ w_np[..., None]))[..., 0]
    m = fc.Gaussian(mean=_as(backend, mean), precision=_as(backend, precision), inputs=inputs)
    np.testing.assert_allclose(ops.to_numpy(g.mean), ops.to_numpy(m.mean), rtol=1e-10)
    for _ in range(2):  # the second call meets the cached structure
        with pytest.raises(fc.DomainError, match="must end in \\(dim, rank\\) with dim = 2"):
            fc.Gaussian(white_vec=w, prec_sqrt=s[..., :1, :], inputs=inputs)
        with pytest.raises(fc.DomainError, match="batch shape \\(2,\\)"):
            fc.Gaussian(white_vec=w[:2], prec_sqrt=s, inputs=inputs)
        with pytest.raises(TypeError, match="map names to domains"):
            fc.Gaussian(white_vec=w, prec_sqrt=s, inputs={"i": 3, "x": fc.Reals[2]})


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_renamed_sum_equals_exact_renaming(backend):
    """Relabelling a Gaussian + Tensor sum from the cached plan gives exact's renamed term's
    values; a substitution that merges two names or changes a domain is not a renaming."""
    rng = np.random.default_rng(4)
    a = lambda x: _as(backend, x)  # noqa: E731
    g = fc.Gaussian(white_vec=a(rng.normal(size=(2, 2))),
                    prec_sqrt=a(rng.normal(size=(2, 2, 2))),
                    inputs={"i": fc.Bint[2], "x": fc.Reals[2]})
    t = fc.Tensor(a(rng.normal(size=(2, 3))), {"i": fc.Bint[2], "k": fc.Bint[3]})
    x = a(rng.normal(size=2))
    expected = (g + t)(i="j", x="y")(y=x)
    with moment_matching:
        s = g + t
        for _ in range(2):  # the second rename reads the cached plan
            renamed = s(i="j", x="y")
            assert renamed.inputs == {"j": fc.Bint[2], "y": fc.Reals[2], "k": fc.Bint[3]}
    np.testing.assert_allclose(ops.to_numpy(renamed(y=x).align(("j", "k")).data),
                               ops.to_numpy(expected.align(("j", "k")).data), rtol=1e-12)
    assert rename_gaussian_sum(s, (("i", fc.Variable("k", fc.Bint[2])),)) is None
    assert rename_gaussian_sum(s, (("i", fc.Variable("j", fc.Bint[3])),)) is None


def test_per_step_loop_takes_the_host_route_and_is_gpb2(monkeypatch):
    """The per-step SLDS loop (K = 3) on numpy collapses every step by the augmented
    Cholesky route, and its log likelihood is the numpy GPB2 filter's to 1e-9."""
    calls = []
    real = ne._cholesky_inverse_host
    monkeypatch.setattr(ne, "_cholesky_inverse_host", lambda g: calls.append(1) or real(g))
    # a replayed step factors by the fused program's augmented Cholesky (``collapse_fused``)
    fused = collapse_fused._CHOLESKY
    monkeypatch.setattr(collapse_fused, "_CHOLESKY",
                        lambda a, out, **kw: calls.append(1) or fused(a, out, **kw))
    p = _slds(seed=5, T=5, K=3, d=2, obs_dim=1)
    value, _ = _step_loop(p, "numpy", p["y"])
    np.testing.assert_allclose(value, _numpy_gpb(p, 1), rtol=1e-9)
    # the joint's and the mixture's each step, but the first (its message has no s_prev:
    # exact integration, nothing to collapse)
    assert len(calls) == 2 * (len(p["y"]) - 2)
