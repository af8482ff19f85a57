"""moment_matching of a mixture with a flat component stays lazy, and stays exact (#28, h92).

Decided: a component whose precision is rank-deficient by its shapes has no moments; the
sum stays the lazy mixture ``exact`` keeps (funsor 0.4.8 does the same on this input, checked
in the clients venv), because programs rely on it: completing the mixture with a proper
factor and integrating the reals gives the exact value, and ``forward_backward`` under
``moment_matching`` carries likelihood messages through such sums. Oracle: dense numpy
Gaussian algebra, per component, then logsumexp over the mixture.
"""

import numpy as np
from scipy.special import logsumexp

import funsor_core as fc
from funsor_core import ops
from interpretations import moment_matching
from tests.interpretations.test_moment_matching import _numpy_moments, _random_gaussian


def test_flat_mixture_stays_lazy_and_completes_to_the_exact_value():
    rng = np.random.default_rng(92)
    batch = {"i": fc.Bint[3]}
    g, w, s = _random_gaussian(rng, "numpy", batch, 3, rank=2)  # rank 2 < dim 3: flat
    logits = rng.normal(size=3)
    prior_w, prior_s = rng.normal(size=4), rng.normal(size=(3, 4))  # a proper factor
    prior = fc.Gaussian(white_vec=prior_w, prec_sqrt=prior_s, inputs={"x": fc.Reals[3]})
    with moment_matching:
        mixture = (g + fc.Tensor(logits, batch)).reduce(ops.logaddexp, "i")
        assert isinstance(mixture, fc.Contraction) and mixture.reduced_vars == {"i"}
        total = (mixture + prior).reduce(ops.logaddexp, "x")
    # each component times the prior: stack the rank columns (sum of the log densities)
    ws = np.concatenate([w, np.broadcast_to(prior_w, (3, 4))], -1)
    ss = np.concatenate([s, np.broadcast_to(prior_s, (3, 3, 4))], -1)
    expected = _numpy_moments(ws, ss, logits)[0]
    np.testing.assert_allclose(float(total.data), float(expected), rtol=1e-10)
    np.testing.assert_allclose(float(expected), float(logsumexp(
        [_numpy_moments(ws[k:k + 1], ss[k:k + 1], logits[k:k + 1])[0] for k in range(3)])))
