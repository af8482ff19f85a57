"""A moment-matched mixture with no batch left holds an array, not a numpy scalar.

Found by the differential fuzzer against funsor 0.4.8 (tests/compat/funsor_diff, h87): on
numpy, ``(g + t).reduce(ops.logaddexp, "i")`` under ``moment_matching`` built its Tensor part
from numpy's full reduction, an ``np.float64``, so ``to_data`` of its mass was a numpy scalar
where funsor (and every other path of ours) gives a 0-d ``ndarray``. The mass is exact under
moment matching: the oracle is sum_i exp(t_i) * integral of exp(-(x p_i - w_i)^2 / 2) dx,
which is exp(t_i) * sqrt(2 pi) / |p_i|, by hand.
"""

from collections import OrderedDict

import numpy as np

import funsor_core as fc
from funsor_core import Bint, Real, Tensor, ops
from interpretations import moment_matching


def test_collapsed_mixture_tensor_holds_an_ndarray_with_the_exact_mass():
    rng = np.random.default_rng(0)
    w, p, t = rng.normal(size=(2, 1)), rng.normal(size=(2, 1, 1)), rng.normal(size=2)
    g = fc.Gaussian(white_vec=w, prec_sqrt=p, inputs=OrderedDict(i=Bint[2], x=Real))
    with moment_matching:
        mixed = (g + Tensor(t, OrderedDict(i=Bint[2]))).reduce(ops.logaddexp, "i")
    assert all(isinstance(x.data, np.ndarray) for x in mixed.terms if isinstance(x, Tensor))
    total = mixed.reduce(ops.logaddexp)
    mass = fc.to_data(total)
    assert isinstance(mass, np.ndarray) and mass.shape == ()
    expected = np.logaddexp.reduce(t + 0.5 * np.log(2 * np.pi) - np.log(np.abs(p[:, 0, 0])))
    np.testing.assert_allclose(mass, expected, rtol=1e-12)


def test_zero_dim_results_of_the_eager_fast_paths_hold_ndarrays():
    # numpy returns scalars for a[1], a.sum() and 0-d + 0-d; funsor's Tensors hold 0-d arrays.
    a = np.array([0.5, -1.0, 2.0])
    t = Tensor(a, OrderedDict(i=Bint[3]))
    g = fc.Gaussian(white_vec=np.ones(1), prec_sqrt=2.0 * np.ones((1, 1)),
                    inputs=OrderedDict(x=Real))
    cases = [(t(i=1), a[1]), (t(i=1) + t(i=2), a[1] + a[2]), (t(i=1) * 3.0, 3 * a[1]),
             (t.reduce(ops.add, "i"), a.sum()),
             (t.reduce(ops.logaddexp), np.logaddexp.reduce(a)),
             (g.reduce(ops.logaddexp), 0.5 * np.log(2 * np.pi) - np.log(2.0))]
    for got, expected in cases:
        assert isinstance(got, Tensor) and type(got.data) is np.ndarray and got.data.shape == ()
        np.testing.assert_allclose(got.data, expected, rtol=1e-14)
