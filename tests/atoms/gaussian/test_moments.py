"""normal_equations: the moment-matching collapse by Cholesky of the Gram matrices, against
the QR path (the switch ``FAST_NORMAL_EQUATIONS`` off) on every backend, eagerly and under
``jax.jit``; ill-conditioned and rank-deficient systems must take the QR path and give
exactly what it gives (``+inf``, the ValueError naming coordinates).

Results are compared as densities, not arrays: row signs of a QR factor are the kernel's, so
the invariants are the precision ``S S'``, the information vector ``S w`` and the constant
``log_const - 0.5 ||w||^2``.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from funsor_core import ops
from funsor_core.atoms.gaussian import moments
from funsor_core.atoms.gaussian import normal_equations as ne

BACKENDS = ["numpy", "torch", "jax.jit"]  # eager jax: in the -inf weights and rank tests


@pytest.fixture
def switch():
    """Restore the switch after a test that turns it off."""
    yield ne.FAST_NORMAL_EQUATIONS
    ne.FAST_NORMAL_EQUATIONS[0] = True


def _system(rng, batch=(2, 3), dim=5, rank=8, scale=1.0):
    """A random well-conditioned mixture: log weights, white_vec, prec_sqrt."""
    s = rng.normal(size=batch + (dim, rank)) * scale
    w = rng.normal(size=batch + (rank,))
    return rng.normal(size=batch), w, s


def _to(backend, x):
    if backend.startswith("jax"):
        import jax.numpy as jnp

        return jnp.asarray(x, dtype=jnp.float64 if x.dtype == np.float64 else jnp.float32)
    if backend == "torch":
        import torch

        return torch.tensor(x)
    return x


def _collapse(backend, fast, args, index):
    """``collapse_system`` on ``backend`` with the switch set to ``fast``, as numpy invariants."""
    ne.FAST_NORMAL_EQUATIONS[0] = fast
    try:
        arrays = [_to(backend, a) for a in args]
        if backend == "jax.jit":
            out = _jitted_collapse(fast, index)(*arrays)
        else:
            out = moments.collapse_system(*arrays, index)
    finally:
        ne.FAST_NORMAL_EQUATIONS[0] = True
    return _invariants(*(np.asarray(x.detach() if hasattr(x, "detach") else x) for x in out))


@functools.cache
def _jitted_collapse(fast, index):
    """One jitted ``collapse_system`` per switch and index, shared by the tests: each shape
    compiles once (traced with the switch set to ``fast`` by ``_collapse``)."""
    import jax

    return jax.jit(lambda lw, w, s: moments.collapse_system(lw, w, s, index))


def _invariants(log_const, white_vec, prec_sqrt):
    precision = prec_sqrt @ np.swapaxes(prec_sqrt, -1, -2)
    info = (prec_sqrt @ white_vec[..., None])[..., 0]
    return log_const - 0.5 * (white_vec ** 2).sum(-1), precision, info


def _assert_same(actual, expected, rtol=1e-9):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * np.abs(e).max())


def _count_qr(monkeypatch):
    calls = []
    qr = moments._collapse_system_qr

    def spy(*args):
        calls.append(1)
        return qr(*args)

    monkeypatch.setattr(moments, "_collapse_system_qr", spy)
    return calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", [None, (0, 1), (3, 0, 2), (4,)])
def test_fast_equals_qr(backend, index, monkeypatch):
    args = _system(np.random.default_rng(0))
    expected = _collapse(backend, False, args, index)
    calls = _count_qr(monkeypatch)
    actual = _collapse(backend, True, args, index)
    if backend != "jax.jit":
        assert not calls  # the fast path was taken
    _assert_same(actual, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fast_equals_qr_rank_above_dim_scales(backend):
    """Coordinates on scales 1e-3 .. 1e3: the check is on the column-scaled factor."""
    rng = np.random.default_rng(1)  # the shapes and index of _ill: jax.jit compiles shared
    lw, w, s = _system(rng, batch=(2, 3), dim=4, rank=6)
    s = s * np.array([1.0, 1e-3, 1e3, 10.0])[:, None]  # kept: 1e-3, 1e3, 10 (spread 1e6)
    _assert_same(_collapse(backend, True, (lw, w, s), (0,)),
                 _collapse(backend, False, (lw, w, s), (0,)))


@pytest.mark.parametrize("backend", [*BACKENDS, "jax"])
def test_fast_minus_inf_weights(backend):
    # The shapes and index of ``_ill``'s systems: jax compiles each eager op and the jitted
    # collapse once for this test and the ill-conditioned ones.
    lw, w, s = _system(np.random.default_rng(2), dim=4, rank=6)
    lw[0, 1] = -np.inf  # one component of no mass
    lw[1] = -np.inf  # a mixture of no mass at all: -inf, unit covariance at the origin
    actual = _collapse(backend, True, (lw, w, s), (0,))
    expected = _collapse(backend, False, (lw, w, s), (0,))
    assert np.isneginf(actual[0][1]) and np.isneginf(expected[0][1])
    np.testing.assert_allclose(actual[1][1], np.eye(3))
    _assert_same([x[0] for x in actual], [x[0] for x in expected])
    for a, e in zip(actual[1:], expected[1:]):
        np.testing.assert_allclose(a, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dim", [8, 16])  # Gram matrices of 9 (in blocks) and 17 (LAPACK)
def test_fast_equals_qr_traced_larger(dim):
    """Under ``jax.jit`` the factorizations are written out (``small_linalg``) up to its
    ``BLOCK``; both regimes against the QR path."""
    args = _system(np.random.default_rng(8), batch=(3, 3), dim=dim, rank=dim + 2)
    index = tuple(range(0, dim, 2))
    _assert_same(_collapse("jax.jit", True, args, index),
                 _collapse("jax.jit", False, args, index))


@pytest.mark.parametrize("kind", ["good", "cond9", "offset"])
def test_traced_check_at_block_sizes(kind):
    """The traced check accepts a well-conditioned mixture of 8-d components (a Gram matrix
    of 9, factored in blocks) and rejects an ill-conditioned one."""
    rng = np.random.default_rng(9)
    lw, w, s = _system(rng, batch=(2, 3), dim=8, rank=10)
    if kind == "cond9":
        u, _, vt = np.linalg.svd(s[0, 1], full_matrices=False)
        s[0, 1] = u @ np.diag(np.logspace(0, -9, 8)) @ vt
    elif kind == "offset":
        w[0, 1] = 1e9 * (s[0, 1].T @ rng.normal(size=8)) / np.linalg.norm(s[0, 1])
    d_b, m = ne.system_rows(w, s, (0, 3, 5))
    gram = m @ m.swapaxes(-1, -2) + ne._last_unit(9)
    _, ok = _jitted_traced((d_b, 8, ne._tolerance(8, 10)))(lw, gram)
    assert bool(ok) == (kind == "good")


@functools.cache
def _jitted_traced(plan):
    """One jitted traced check per plan, shared by the kinds: one compile for the three."""
    import jax

    return jax.jit(lambda lw, g: ne._traced(lw, g, plan))


def _ill(kind, rng):
    """A mixture with one bad component (batch entry (0, 1))."""
    lw, w, s = _system(rng, batch=(2, 3), dim=4, rank=6)
    if kind.startswith("cond"):  # condition number 10^k of the component's precision sqrt
        u, _, vt = np.linalg.svd(s[0, 1], full_matrices=False)
        s[0, 1] = u @ np.diag(np.logspace(0, -int(kind[4:]), 4)) @ vt
    elif kind == "offset":  # white_vec far out, in the span of S: ||w||^2 - ||z||^2 cancels
        w[0, 1] = 1e9 * (s[0, 1].T @ rng.normal(size=4)) / np.linalg.norm(s[0, 1])
    return lw, w, s


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["cond6", "cond9", "cond12", "offset"])
def test_ill_conditioned_takes_qr(backend, kind, monkeypatch):
    args = _ill(kind, np.random.default_rng(3))
    expected = _collapse(backend, False, args, (0,))
    calls = _count_qr(monkeypatch)
    actual = _collapse(backend, True, args, (0,))
    if backend == "jax.jit":
        _assert_same(actual, expected, rtol=1e-12)
    else:
        assert calls  # declined
        for a, e in zip(actual, expected):
            np.testing.assert_array_equal(a, e)  # the QR path itself


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_rank_deficient_raises(backend):
    lw, w, s = _system(np.random.default_rng(4), batch=(3,), dim=3, rank=4)
    s[1, 2] = 2.0 * s[1, 0]  # x[2] of component 1 carries what x[0] does
    args = [_to(backend, a) for a in (lw, w, s)]
    with pytest.raises(ValueError, match="cannot marginalize"):
        moments.collapse_system(*args, (0, 2))


def test_rank_deficient_traced_as_qr():
    import jax

    lw, w, s = _system(np.random.default_rng(4), batch=(3,), dim=3, rank=4)
    s[1, 2] = 2.0 * s[1, 0]
    fn = jax.jit(lambda *a: moments.collapse_system(*a, (0, 2)))
    args = [_to("jax", a) for a in (lw, w, s)]
    actual = fn(*args)
    ne.FAST_NORMAL_EQUATIONS[0] = False
    try:
        expected = jax.jit(lambda *a: moments.collapse_system(*a, (0, 2)))(*args)
    finally:
        ne.FAST_NORMAL_EQUATIONS[0] = True
    assert not np.isfinite(np.asarray(expected[0]))  # what the QR path makes of +inf log_z
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax.jit"])
def test_float32_takes_qr(backend, monkeypatch):
    lw, w, s = (x.astype(np.float32) for x in _system(np.random.default_rng(5)))
    calls = _count_qr(monkeypatch)
    actual = _collapse(backend, True, (lw, w, s), (1,))
    expected = _collapse(backend, False, (lw, w, s), (1,))
    assert calls
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def _loss(log_const, white_vec, prec_sqrt, probe):
    """A scalar depending on every invariant (sign conventions cancel)."""
    info = (prec_sqrt @ white_vec[..., None])[..., 0]
    precision = prec_sqrt @ prec_sqrt.swapaxes(-1, -2)
    quad = (probe * (precision @ probe[:, None])[..., 0]).sum(-1)
    return (log_const - 0.5 * (white_vec ** 2).sum(-1) + (info * probe).sum(-1) - quad).sum()


def test_torch_gradients():
    import torch

    rng = np.random.default_rng(6)
    args = _system(rng)
    probe = torch.tensor(rng.normal(size=4))
    grads = []
    for fast in (True, False):
        ne.FAST_NORMAL_EQUATIONS[0] = fast
        try:
            xs = [torch.tensor(a, requires_grad=True) for a in args]
            out = moments.collapse_system(*xs, (1,))
            grads.append(torch.autograd.grad(_loss(*out, probe), xs))
        finally:
            ne.FAST_NORMAL_EQUATIONS[0] = True
    for a, e in zip(*grads):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-8, atol=1e-10)


@functools.cache
def _jax_grad(fast, jit):
    """The gradient of ``_loss`` after ``collapse_system(..., (0,))`` in the three arrays,
    shared by the kinds of ``test_jax_gradients`` (one compile per switch ``fast``: the
    caller sets the switch, read when the function is traced)."""
    import jax

    def loss(lw, w, s, probe):
        return _loss(*moments.collapse_system(lw, w, s, (0,)), probe)

    grad = jax.grad(loss, argnums=(0, 1, 2))
    return jax.jit(grad) if jit else grad


@pytest.mark.parametrize("kind", ["good", "singular"])  # cond12: test_ill_conditioned_takes_qr
@pytest.mark.parametrize("jit", [True])  # eager jax.grad traces the same way, op by op
def test_jax_gradients(kind, jit):
    """Equal gradients; where the QR path is taken, no NaN from the failed fast path."""
    import jax.numpy as jnp

    rng = np.random.default_rng(7)
    args = _ill(kind, rng) if kind != "singular" else _ill("cond12", rng)
    if kind == "singular":  # the Cholesky fails outright (NaN), but the component is integrable
        args[2][0, 1, 3] = args[2][0, 1, 1] * (1 + 1e-15)
    probe = jnp.asarray(rng.normal(size=3))
    xs = [jnp.asarray(a) for a in args]
    actual = _jax_grad(True, jit)(*xs, probe)
    ne.FAST_NORMAL_EQUATIONS[0] = False
    try:
        # Compiled, as the branch of the cond is: at condition 1e12 the gradient itself
        # moves by ~1e-4 between eager and compiled QR (kappa^2 eps times its size).
        expected = _jax_grad(False, True)(*xs, probe)
    finally:
        ne.FAST_NORMAL_EQUATIONS[0] = True
    for a, e in zip(actual, expected):
        a, e = np.asarray(a), np.asarray(e)
        assert np.isnan(a).sum() == np.isnan(e).sum()
        np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-9 * np.nanmax(np.abs(e)))


def test_guarded_zero_derivative_where_failed():
    import jax
    import jax.numpy as jnp

    from funsor_core.engine.backend import backend_module

    guarded = backend_module("jax").guarded

    def f(x):
        return jnp.sqrt(x), x > 0

    def g(x):
        return guarded(f, (x,), (jnp.ones(()),))[0]

    assert float(jax.grad(g)(0.0)) == 0.0  # sqrt' is inf at 0: taken at the safe input
    assert float(jax.grad(g)(4.0)) == 0.25
    assert float(jax.jit(jax.grad(g))(4.0)) == 0.25


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_failed_cholesky_takes_qr(backend, monkeypatch):
    """A component whose Gram matrix is singular to working precision: the Cholesky fails or
    barely succeeds, and either way the QR path decides, as it does alone."""
    lw, w, s = _ill("cond12", np.random.default_rng(7))
    s[0, 1, 3] = s[0, 1, 1] * (1 + 1e-15)
    outcomes = []
    for fast in (False, True):
        calls = _count_qr(monkeypatch)
        try:
            outcomes.append(_collapse(backend, fast, (lw, w, s), (0,)))
        except ValueError as e:
            outcomes.append(str(e))
        assert calls
    if isinstance(outcomes[0], str):
        assert outcomes[0] == outcomes[1]
    else:
        for a, e in zip(*outcomes):
            np.testing.assert_array_equal(a, e)


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_cholesky_failure_is_none_or_nan(backend):
    """Not positive definite: numpy and torch raise (None here), jax gives NaN; both fail the
    check, so the QR path runs."""
    g = _to(backend, np.array([[[1.0, 2.0], [2.0, 1.0]]]))
    chol = ne._cholesky(g)
    if backend == "jax":
        assert np.isnan(np.asarray(chol)).any()
        inv = ops.triangular_inv(chol, upper=False)
        assert not ne._well_conditioned(np.asarray(g), np.asarray(inv))
    else:
        assert chol is None


def _marginal_by_hand(w, s, d_b):
    """The marginal over the coordinates after ``d_b`` as (constant, precision, info), in
    numpy from P = S S' and b = S w (Schur complements)."""
    p, b = s @ np.swapaxes(s, -1, -2), (s @ w[..., None])[..., 0]
    pbb, pab, bb = p[..., :d_b, :d_b], p[..., d_b:, :d_b], b[..., :d_b]
    sol = np.linalg.solve(pbb, np.concatenate([bb[..., None], np.swapaxes(pab, -1, -2)], -1))
    const = (-0.5 * (w ** 2).sum(-1) + 0.5 * (bb * sol[..., 0]).sum(-1)
             + 0.5 * d_b * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(pbb)[1])
    info = b[..., d_b:] - (pab @ sol[..., :1])[..., 0]
    return const, p[..., d_b:, d_b:] - pab @ sol[..., 1:], info


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_marginal_gram_is_the_marginal(backend):
    _, w, s = _system(np.random.default_rng(8), batch=(3,), dim=4, rank=6)
    _, m = ne.system_rows(_to(backend, w), _to(backend, s), None)
    w2, s2, norm = ne.marginal_gram(m @ m.swapaxes(-1, -2), 2, 6)
    actual = _invariants(*(np.asarray(ops.to_numpy(x)) for x in (norm, w2, s2)))
    _assert_same(actual, _marginal_by_hand(w, s, 2), rtol=1e-10)


def test_marginal_gram_declines_where_the_qr_path_decides():
    rng = np.random.default_rng(9)
    _, w, s = _ill("cond12", rng)
    _, m = ne.system_rows(w, s, None)
    assert ne.marginal_gram(m @ m.swapaxes(-1, -2), 1, s.shape[-1]) is None  # ill-conditioned
    _, m = ne.system_rows(w.astype(np.float32), s.astype(np.float32), None)
    assert ne.marginal_gram(m @ m.swapaxes(-1, -2), 1, s.shape[-1]) is None  # float32


# -- the numpy host route (``normal_equations._eager_host``, ``moments._block_gram_host``) ---------
def test_host_collapse_equals_the_array_path():
    """On numpy arrays the fast path calls numpy directly; the same arithmetic as the path
    every backend takes (``_eager`` through ``ops``), to rounding, with an integrated
    coordinate and a component of no mass."""
    lw, w, s = _system(np.random.default_rng(10), batch=(3, 4), dim=4, rank=6)
    lw[1, 2] = -np.inf
    d_b, m = ne.system_rows(w, s, (2, 0))
    gram = m @ m.swapaxes(-1, -2) + ne._last_unit(5)
    plan = (d_b, 4, ne._tolerance(4, 6))
    actual, expected = ne._eager_host(lw, gram, plan), ne._eager(lw, gram, plan)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


def test_block_gram_host_is_the_joint_systems_gram():
    """The joint Gram matrix summed from each Gaussian's own (a batch input order to permute,
    real rows that are not contiguous) is ``M M'`` of the joint system, built as the QR path
    builds it (each system aligned and padded, then concatenated)."""
    import funsor_core as fc

    rng = np.random.default_rng(11)
    g1 = fc.Gaussian(white_vec=rng.normal(size=(3, 3)), prec_sqrt=rng.normal(size=(3, 3, 3)),
                     inputs={"i": fc.Bint[3], "x": fc.Real, "y": fc.Reals[2]})
    g2 = fc.Gaussian(white_vec=rng.normal(size=(3, 2, 2)),
                     prec_sqrt=rng.normal(size=(3, 2, 2, 2)),
                     inputs={"i": fc.Bint[3], "j": fc.Bint[2], "x": fc.Real, "z": fc.Real})
    g3 = fc.Gaussian(white_vec=rng.normal(size=(1,)), prec_sqrt=rng.normal(size=(1, 1)),
                     inputs={"z": fc.Real})  # rows placed by slices (a run), not index arrays
    gs = (g1, g2, g3)
    plan = moments.collapse_layout(gs, (), frozenset({"i"}), frozenset({"x"}))
    assert plan.gaussians[1][0] is not None and plan.gaussians[1][5] is not None  # perm, rows
    _, m = ne.system_rows(*moments._joint_system(gs, plan), plan.index)
    np.testing.assert_allclose(moments._block_gram_host(gs, plan),
                               m @ m.swapaxes(-1, -2), rtol=1e-13, atol=1e-13)


def test_collapse_and_rename_results_are_the_constructors():
    """The collapse's ``g + t`` and a renamed sum, built by ``Contraction.make``, are what
    the constructor builds from the same terms: canonical order, merged inputs, output."""
    import funsor_core as fc
    from funsor_core.engine.interpreter import reflect
    from funsor_core.terms.contraction import Contraction
    from interpretations import moment_matching

    g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
                    inputs={"i": fc.Bint[2], "x": fc.Real})
    t = fc.Tensor(np.zeros((2, 3)), {"i": fc.Bint[2], "k": fc.Bint[3]})
    with moment_matching:
        collapsed = (g + t).reduce(ops.logaddexp, "i")
        renamed = (g + t)(i="j", k="a")
    for term in (collapsed, renamed):
        with reflect:
            built = Contraction(None, ops.add, frozenset(), tuple(reversed(term.terms)))
        assert term.terms == built.terms and term.output == built.output
        assert list(term.inputs.items()) == list(built.inputs.items())
    assert list(renamed.inputs) == ["j", "x", "a"]


def test_pending_sum_checks_domains_and_backends():
    """A sum kept side by side (``Contraction.make``) still refuses a name of two domains and
    arrays of two backends, with the constructor's messages."""
    import torch

    import funsor_core as fc
    from interpretations import moment_matching

    g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
                    inputs={"i": fc.Bint[2], "x": fc.Real})
    with moment_matching:
        with pytest.raises(ValueError, match="'i'"):
            g + fc.Tensor(np.zeros(3), {"i": fc.Bint[3]})
        with pytest.raises(TypeError, match="numpy.*torch|torch.*numpy"):
            g + fc.Tensor(torch.zeros(2), {"i": fc.Bint[2]})
        s = g + fc.Tensor(np.zeros(2), {"i": fc.Bint[2]}) + 1.0
    assert [type(t).__name__ for t in s.terms] == ["Gaussian", "Tensor", "Number"]
