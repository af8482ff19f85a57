"""A square precision factor integrated whole: the log normalizer from the R of S' alone
(no shift: S'x = w is solvable), against dense algebra, with the void and NaN white vectors
and the flat directions the one-system route gave."""

import numpy as np
import pytest

import funsor_core as fc
from funsor_core import ops
from funsor_core.atoms.gaussian import sqrt_info as gm

LOG_2PI = np.log(2 * np.pi)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_square_full_marginal_equals_dense_algebra(backend):
    conv = (lambda a: a) if backend == "numpy" else pytest.importorskip("torch").as_tensor
    rng = np.random.default_rng(0)
    for d in (1, 2, 4):
        w, s = rng.normal(size=(3, d)), rng.normal(size=(3, d, d)) + 1.5 * np.eye(d)
        w[1] = [np.inf] + [0.0] * (d - 1)  # a void density: log 0
        w[2, -1] = np.nan
        log_norm = np.asarray(gm.marginalize(conv(w), conv(s), range(d))[2])
        expected = 0.5 * d * LOG_2PI - np.linalg.slogdet(s[0])[1]
        np.testing.assert_allclose(log_norm[0], expected, rtol=1e-12)
        assert log_norm[1] == -np.inf and np.isnan(log_norm[2])
        g = fc.Gaussian(white_vec=conv(w[:1]), prec_sqrt=conv(s[:1]),
                        inputs={"i": fc.Bint[1], "x": fc.Reals[d]})
        total = g.reduce(ops.logaddexp, "x")
        np.testing.assert_allclose(np.asarray(total.data), [expected], rtol=1e-12)


def test_square_flat_direction_raises_as_a_taller_factor_does():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])  # x[1] = 2 x[0] only: rank 1
    taller = np.concatenate([s, np.zeros((2, 1))], -1)
    messages = []
    for prec_sqrt in (s, taller):
        with pytest.raises(ValueError) as error:
            gm.marginalize(np.zeros(prec_sqrt.shape[-1]), prec_sqrt, [0, 1], check=True,
                           names=["x", "y"])
        messages.append(str(error.value))
    assert messages[0] == messages[1] and "rank 1 < 2" in messages[0]
    assert gm.marginalize(np.zeros(2), s, [0, 1])[2] == np.inf
