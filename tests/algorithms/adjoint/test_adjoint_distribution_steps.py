"""The adjoint of a chain's step written lazily with distributions (``MultivariateNormal``):
the tape records the Gaussian algebra that the distributions evaluate to, and the terms as
written must still find their adjoints (they were a silent ``Number(-inf)``). Checked against
a hand-written Rauch-Tung-Striebel smoother in numpy, on numpy and torch."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.adjoint import NotOnTapeError
from funsor_core.algorithms.adjoint import forward_backward
from funsor_core.distribution.continuous import MultivariateNormal, Normal
from funsor_core.sum_product import MarkovProduct
from interpretations import exact, lazy
from tests.algorithms.adjoint.test_adjoint_gaussian import chain, rts_smoother
from tests.algorithms.adjoint.test_adjoint_markov import _check_smoothed, _gaussian_of, _np

XP, XC = fc.Variable("x_prev", fc.Reals[2]), fc.Variable("x_curr", fc.Reals[2])


def _model(seed, T=4):
    """x_0 ~ N(m0, P0), x_{t+1} ~ N(A x_t, Q), y_t ~ N(H x_{t+1}, R), as lazy distributions."""
    A, Q, H, R, m0, P0, ys = chain(seed, T, 2)
    t = fc.numeric_array  # a backend array of a numpy one
    a, h = fc.Tensor(t(A.copy())), fc.Tensor(t(H.copy()))
    y = fc.Tensor(t(ys.copy()), {"t": fc.Bint[T]})
    chol = {k: fc.Tensor(t(np.linalg.cholesky(v))) for k, v in {"Q": Q, "R": R, "P0": P0}.items()}
    with lazy:
        trans = MultivariateNormal(a @ XP, scale_tril=chol["Q"], value=XC)
        obs = MultivariateNormal(h @ XC, scale_tril=chol["R"], value=y)
        step = trans + obs
        init = MultivariateNormal(fc.Tensor(t(m0.copy())), scale_tril=chol["P0"], value=XP)
        chain_term = MarkovProduct(ops.logaddexp, ops.add, step, "t", {"x_prev": "x_curr"})
        root = (init + chain_term).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    # x_1 is the first state observed: its prior is the prediction from x_0.
    means, covs = rts_smoother(A, Q, H, R, A @ m0, A @ P0 @ A.T + Q, ys)
    return (init, trans, obs, step, chain_term, root), means, covs


@pytest.mark.parametrize("backend", ["numpy", "torch"], indirect=True)
def test_lazy_distribution_step_adjoint_is_the_smoothed_pair(backend):
    (init, trans, obs, step, _, root), means, covs = _model(0)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    for term in (step, trans, obs, init):
        assert term in adj, term
    # The step times its adjoint is the pair marginal p(x_t, x_{t+1} | y); the observation
    # factor's, the smoothed marginal of x_{t+1}.
    pair = adj[step] + fc.reinterpret(step) - log_z
    _check_smoothed(pair, means, covs)
    g = _gaussian_of(adj[obs] + fc.reinterpret(obs) - log_z)
    assert np.allclose(_np(g.mean), means) and np.allclose(_np(g.covariance), covs)
    # The transition factor has no input t (one factor at every step): its adjoint sums the
    # pair marginals over t, here at a few points (numpy's logsumexp over t).
    rng = np.random.default_rng(0)
    for _ in range(3):
        point = {k: fc.Tensor(fc.numeric_array(rng.normal(size=2))) for k in ("x_prev", "x_curr")}
        got = (adj[trans] + fc.reinterpret(trans) - log_z)(**point)
        pairs = _np(pair(**point).data)
        assert np.allclose(_np(got.data), np.logaddexp.reduce(pairs))


def test_lazy_distribution_step_equals_the_eager_step():
    # The same model with the step evaluated before the chain is built: the same adjoint.
    (init, _, _, step, _, root), _, _ = _model(1, T=3)
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    eager = fc.reinterpret(step)
    with lazy:
        eager_root = (init + MarkovProduct(ops.logaddexp, ops.add, eager, "t",
                                           {"x_prev": "x_curr"})
                      ).reduce(ops.logaddexp, frozenset({"x_prev", "x_curr"}))
    eager_log_z, eager_adj = forward_backward(ops.logaddexp, ops.add, eager_root)
    assert np.allclose(_np(log_z.data), _np(eager_log_z.data))
    lazy_pair = _gaussian_of(adj[step] + eager - log_z)
    eager_pair = _gaussian_of(eager_adj[eager] + eager - log_z)
    assert np.allclose(_np(lazy_pair.mean), _np(eager_pair.mean))
    assert np.allclose(_np(lazy_pair.covariance), _np(eager_pair.covariance))


def test_a_density_of_constants_is_named_by_its_term():
    # A Normal of constants evaluates to a constant, a leaf: it and the terms built on it
    # find their adjoints (log sum_i exp f(i), and the unit of the root), which were -inf.
    f = fc.Tensor(np.log(np.array([1.0, 3.0])), {"i": fc.Bint[2]})
    with lazy:
        c = Normal(0.0, 1.0, value=0.5)
        both = c + f
        root = both.reduce(ops.logaddexp, "i")
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    assert c in adj and both in adj and root in adj
    assert np.allclose(_np(adj[c].data), np.logaddexp.reduce(_np(f.data)))
    assert float(adj[both].data) == 0.0 and float(adj[root].data) == 0.0  # the unit of add
    assert np.allclose(_np((adj[c] + fc.reinterpret(c)).data), _np(log_z.data))


def test_two_densities_of_constants_each_find_their_adjoint():
    f = fc.Tensor(np.log(np.array([1.0, 3.0])), {"i": fc.Bint[2]})
    with lazy:
        left, right = Normal(0.0, 1.0, value=0.5), Normal(0.0, 2.0, value=-0.5)
        root = (left + right + f).reduce(ops.logaddexp, "i")
    _, adj = forward_backward(ops.logaddexp, ops.add, root)
    log_f = np.logaddexp.reduce(_np(f.data))
    for term, other_scale in ((left, 2.0), (right, 1.0)):  # the other density times sum f
        other = -0.5 * (0.5 / other_scale) ** 2 - 0.5 * np.log(2 * np.pi) - np.log(other_scale)
        assert np.allclose(_np(adj[term].data), other + log_f)


def test_a_term_the_tape_cannot_name_raises_not_the_unit():
    # x * 1.0 evaluates to x, so both Normals compute one value, and the tape merges the
    # adjoints of the two places: neither Normal (nor their sum, built on them) is named,
    # and each lookup raises by name instead of the unit -inf or the merged sum (log 2 too
    # big). A term outside the expression keeps adjoint zero, as in funsor.
    x = fc.Variable("x", fc.Real)
    with lazy:
        first = Normal(x, 1.0, value=0.0)
        second = Normal(x * 1.0, 1.0, value=0.0)
        both = first + second
        root = both.reduce(ops.logaddexp, "x")
        outside = Normal(x, 3.0, value=0.0) + first
    _, adj = forward_backward(ops.logaddexp, ops.add, root)
    for term, why in ((first, "two places"), (second, "no form"), (both, "no form")):
        with pytest.raises(NotOnTapeError, match=f"Normal.*{why}"):
            adj[term]
    assert outside not in adj
    assert float(adj[outside].data) == ops.UNITS[ops.logaddexp]


def test_two_terms_that_give_one_constant_are_refused(scratch_exact_rules):
    # A user's rule that answers two densities with the same constant funsor: the tape
    # merges the adjoints of that leaf, so neither term is named (not the merged sum).
    shared = fc.Tensor(np.array(-1.0))

    @exact.register(Normal, fc.Number, fc.Number, fc.Number)
    def exact_normal_constant_h72(loc, scale, value):
        return shared

    f = fc.Tensor(np.log(np.array([1.0, 3.0])), {"i": fc.Bint[2]})
    with lazy:
        left, right = Normal(0.0, 1.0, value=0.5), Normal(0.0, 1.0, value=-0.5)
        root = (left + right + f).reduce(ops.logaddexp, "i")
    log_z, adj = forward_backward(ops.logaddexp, ops.add, root)
    assert np.allclose(_np(log_z.data), -2.0 + np.logaddexp.reduce(_np(f.data)))  # it ran
    for term in (left, right):
        with pytest.raises(NotOnTapeError, match="Normal.*no form"):
            adj[term]
