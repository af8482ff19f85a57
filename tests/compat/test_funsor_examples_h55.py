"""What funsor 0.4.8's own examples, run as users run them (helper h55), showed in funsor-core.

Oracles: the table of log-probabilities itself (a Categorical of a conditional probability
table is that table, logged).
"""

from __future__ import annotations

import pytest

import funsor_core as fc
from funsor_core.domains import Bint

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_backend():
    fc.set_backend("torch")
    yield
    fc.set_backend("numpy")


def _dist():
    from funsor_core.torch import distributions
    return distributions


def test_log_probabilities_passed_as_probs_are_refused_with_a_hint():
    # funsor's examples/eeg_slds.py passes normalized log-probabilities as Categorical probs
    dist = _dist()
    logp = torch.tensor([[0.3, 0.7], [0.6, 0.4]]).log()
    with pytest.raises(ValueError, match=r"probs.*log-probabilities\? pass logits="):
        dist.Categorical(fc.Tensor(logp, {"s": Bint[2]}), value="t")
    ok = dist.Categorical(fc.Tensor(logp.exp(), {"s": Bint[2]}), value=fc.Variable("t", Bint[2]))
    assert torch.allclose(ok.data, logp)  # the table itself: log p(t | s)


def test_stateful_interpretation_is_served_from_the_interpretations_package():
    # funsor's talbot.py imports it from funsor.interpretations; the clients shim looks there
    import interpretations
    from funsor_core.compat.stateful import StatefulInterpretation
    assert interpretations.StatefulInterpretation is StatefulInterpretation
    assert "StatefulInterpretation" in interpretations.__all__


def test_torch_distributions_face_serves_constraints():
    # pyroapi's tests write dist.constraints.positive under the "funsor" backend
    from funsor_core.torch import distributions
    assert distributions.constraints is torch.distributions.constraints
    assert distributions.constraints.positive.check(torch.tensor(2.0))
