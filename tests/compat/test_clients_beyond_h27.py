"""Client programs beyond the client run (#28): NumPyro's ``infer_discrete`` converts each
enumerated site's value with ``to_data(value, name_to_dim=<every enumerated name>)``; the array
must have the site's own shape (annotation.py's ``bincount`` of ``c.squeeze(-1)`` failed)."""

import itertools

import numpy as np

import funsor_core as fc
from funsor_core.domains import Bint


def test_to_data_pads_only_to_own_inputs():
    # A value over plate "item" (dim -2) while name_to_dim also names enum dim "c" (-3):
    # numpy's reshape of the same values is the oracle, shape (4, 1) and not (1, 4, 1).
    values = np.array([2, 0, 1, 2])
    x = fc.Tensor(values, {"item": Bint[4]}, 3)
    actual = np.asarray(fc.to_data(x, name_to_dim={"c": -3, "item": -2}))
    np.testing.assert_array_equal(actual, values.reshape(4, 1))
    # Two inputs, transposed in name_to_dim, with an unused name farther left.
    m = np.arange(6.0).reshape(2, 3)
    y = fc.Tensor(m, {"i": Bint[2], "j": Bint[3]})
    actual = np.asarray(fc.to_data(y, name_to_dim={"z": -4, "i": -1, "j": -3}))
    np.testing.assert_array_equal(actual, m.T.reshape(3, 1, 2))


def test_map_values_of_enumerated_plate_site_have_site_shape():
    # The MAP class of each item from the argmax of its enumerated posterior, then to_data as
    # numpyro's infer_discrete calls it; the oracle is brute-force enumeration in numpy.
    rng = np.random.default_rng(0)
    prior = np.array([0.2, 0.3, 0.5])
    lik = rng.dirichlet(np.ones(3), size=3)          # lik[c, y]
    ann = rng.integers(0, 3, size=(4, 3))             # items x positions
    log_post = np.log(prior)[None, :] + np.log(lik[:, ann]).sum(-1).T  # item x c
    f = fc.Tensor(log_post, {"item": Bint[4], "c": Bint[3]})
    best = fc.Tensor(np.argmax(np.asarray(f.align(("item", "c")).data), -1), {"item": Bint[4]}, 3)
    value = np.asarray(fc.to_data(best, name_to_dim={"c": -3, "item": -2}))
    def score(c, i):
        return np.log(prior[c]) + sum(np.log(lik[c, y]) for y in ann[i])

    brute = [max(range(3), key=lambda c, i=i: score(c, i)) for i in range(4)]
    assert value.shape == (4, 1)
    np.testing.assert_array_equal(value[:, 0], brute)
    assert list(itertools.chain(*value)) == brute
