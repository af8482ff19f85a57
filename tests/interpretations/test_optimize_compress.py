"""``apply_optimizer`` against opt_einsum / numpy, ``compress_gaussians`` against the closed-form
density of the uncompressed factor."""

import numpy as np
import opt_einsum
import pytest
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from funsor_core.domains import Bint, Real, Reals
from interpretations import compress_gaussians, lazy, reflect

SIZES = {"i": 2, "j": 3, "k": 4, "l": 2}


def _factor(names, rng):
    return fc.Tensor(rng.standard_normal(tuple(SIZES[n] for n in names)),
                     {n: Bint[SIZES[n]] for n in names})


@pytest.mark.parametrize("interp", [lazy, reflect])
def test_apply_optimizer_of_a_lazy_chain_matches_opt_einsum(interp):
    rng = np.random.default_rng(0)
    fs = [_factor(n, rng) for n in ("ij", "jk", "kl", "l")]
    with interp:
        expr = (fs[0] * fs[1] * fs[2] * fs[3]).reduce(ops.add, frozenset("jkl"))
    assert not isinstance(expr, fc.Tensor)
    actual = fc.apply_optimizer(expr)
    expected = opt_einsum.contract("ij,jk,kl,l->i", *(f.data for f in fs))
    assert isinstance(actual, fc.Tensor)
    np.testing.assert_allclose(actual.data, expected, rtol=1e-10)


def test_apply_optimizer_in_the_log_semiring_matches_brute_force():
    rng = np.random.default_rng(1)
    fs = [_factor(n, rng) for n in ("ij", "jk", "k")]
    with lazy:
        expr = (fs[0] + fs[1] + fs[2]).reduce(ops.logaddexp, frozenset("ijk"))
    total = (fs[0].data[:, :, None] + fs[1].data[None] + fs[2].data[None, None])
    np.testing.assert_allclose(fc.apply_optimizer(expr).data, logsumexp(total), rtol=1e-10)


def test_apply_optimizer_keeps_free_variables_lazy_and_exact_where_possible():
    x = fc.Variable("x", Real)
    t = fc.Tensor(np.array([1.0, 2.0]), {"i": Bint[2]})
    with lazy:
        expr = (t * x).reduce(ops.add, "i")
    out = fc.apply_optimizer(expr)
    assert out.inputs == {"x": Real}
    np.testing.assert_allclose(out(x=2.0).data, 6.0)


@pytest.mark.parametrize("dim, rank", [(1, 3), (2, 5), (3, 4)])
def test_compress_gaussians_keeps_the_density_with_rank_dim(dim, rank):
    rng = np.random.default_rng(dim * 10 + rank)
    white_vec = rng.standard_normal((2, rank))
    prec_sqrt = rng.standard_normal((2, dim, rank))
    with fc.Gaussian.set_compression_threshold(100):
        g = fc.Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt,
                        inputs={"b": Bint[2], "x": Reals[dim]})
    assert isinstance(g, fc.Gaussian) and g.rank == rank
    with compress_gaussians:
        h = fc.reinterpret(g)
    gauss = [t for t in h.terms if isinstance(t, fc.Gaussian)]
    assert len(gauss) == 1 and gauss[0].rank == dim
    points = rng.standard_normal((2, dim))
    # Oracle: -0.5 ||x P - w||^2 of the uncompressed square-root factor, per batch entry.
    resid = np.einsum("bd,bdr->br", points, prec_sqrt) - white_vec
    expected = -0.5 * (resid ** 2).sum(-1)
    value = h(x=fc.Tensor(points, {"b": Bint[2]}))
    np.testing.assert_allclose(value.align(("b",)).data, expected, rtol=1e-8)
    # full rank already: left as it is
    with compress_gaussians:
        again = fc.reinterpret(gauss[0])
    assert isinstance(again, fc.Gaussian) and again.rank == dim
