"""funsor_core.pyro.hmm (funsor's ``funsor.pyro.hmm``): DiscreteHMM's log density.

Oracle: the forward algorithm written by hand (a loop over time in float64 torch), with
torch.distributions' own observation densities.
"""

from __future__ import annotations

import pytest

import funsor_core as fc

torch = pytest.importorskip("torch")
pytest.importorskip("pyro")
td = torch.distributions


def _forward(init, trans, obs_logp):
    # alpha_t(j) = logsumexp_i alpha_t-1(i) + trans(i, j) + obs_t(j), alpha_-1 = init.
    alpha = init.log_softmax(-1)
    trans = trans.log_softmax(-1)
    for t in range(obs_logp.shape[-2]):
        step = trans[..., t, :, :] if trans.dim() > 2 else trans
        alpha = (alpha[..., :, None] + step).logsumexp(-2) + obs_logp[..., t, :]
    return alpha.logsumexp(-1)


def test_discrete_hmm_log_prob_is_the_forward_algorithm():
    from funsor_core.pyro.hmm import DiscreteHMM, GaussianHMM

    fc.set_backend("torch")
    try:
        g = torch.Generator().manual_seed(0)
        init = torch.randn(2, 3, generator=g, dtype=torch.float64)  # batch 2, 3 states
        trans = torch.randn(4, 3, 3, generator=g, dtype=torch.float64)  # 4 steps
        loc = torch.randn(4, 3, generator=g, dtype=torch.float64)
        obs = td.Normal(loc, 0.5)
        value = torch.randn(2, 4, generator=g, dtype=torch.float64)
        actual = DiscreteHMM(init, trans, obs).log_prob(value)
        expected = _forward(init, trans, obs.log_prob(value[..., None]))
        torch.testing.assert_close(actual, expected)
        with pytest.raises(TypeError, match="initial_dist"):  # funsor's arguments
            GaussianHMM()
    finally:
        fc.set_backend("numpy")


def test_discrete_hmm_checks_its_arguments_when_built():
    import numpy as np

    from funsor_core.pyro.hmm import DiscreteHMM

    fc.set_backend("torch")
    try:
        obs3 = td.Normal(torch.zeros(5, 3), 1.0)
        with pytest.raises(ValueError, match=r"number of states differs: .*"
                                             r"transition_logits.shape\[-1\] = 4"):
            DiscreteHMM(torch.zeros(3), torch.zeros(5, 3, 4), obs3)
        with pytest.raises(ValueError, match=r"observation_dist.batch_shape\[-1\] = 4"):
            DiscreteHMM(torch.zeros(3), torch.zeros(5, 3, 3), td.Normal(torch.zeros(5, 4), 1.0))
        with pytest.raises(TypeError, match="two libraries: ndarray and Tensor"):
            DiscreteHMM(np.zeros(3), torch.zeros(5, 3, 3), obs3)
        hmm = DiscreteHMM(torch.zeros(3), torch.zeros(5, 3, 3), obs3)
        # torch.Size, as pyro's own DiscreteHMM: its methods work on the shapes
        assert hmm.event_shape == td.Normal(torch.zeros(5), 1.0).batch_shape
        assert hmm.event_shape.numel() == 5 and hmm.expand((4,)).batch_shape.numel() == 4
    finally:
        fc.set_backend("numpy")
