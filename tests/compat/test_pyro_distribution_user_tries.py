"""A new user's tries of ``funsor.pyro.distribution.FunsorDistribution`` (#28)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pyro.distributions")  # imported at collection, as test_pyro_convert does

import funsor_core as fc  # noqa: E402
from funsor_core.pyro.convert import tensor_to_funsor  # noqa: E402
from funsor_core.pyro.distribution import FunsorDistribution  # noqa: E402


@pytest.fixture(autouse=True)
def _torch_backend():
    old = fc.get_backend()
    fc.set_backend("torch")
    yield
    fc.set_backend(old)


def test_expand_keeps_the_torch_size_it_is_given():
    # torch's Distribution.expand passes a torch.Size, and funsor 0.4.8 keeps it as given.
    logits = torch.randn(3, 4).log_softmax(-1)
    d = FunsorDistribution(tensor_to_funsor(logits, ("value",)), torch.Size([3]), (), 4)
    wide = d.expand(torch.Size([2, 3]))
    assert type(wide.batch_shape) is torch.Size and wide.batch_shape == (2, 3)
    value = torch.tensor([0, 3, 1])
    expected = torch.distributions.Categorical(logits=logits).log_prob(value)
    torch.testing.assert_close(wide.log_prob(value), expected.expand(2, 3))
