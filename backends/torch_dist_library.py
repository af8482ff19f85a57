"""``dist`` of funsor's face ``funsor.torch.distributions``: ``torch.distributions`` plus the
families funsor's tests read from ``pyro.distributions`` that torch lacks
(``DirichletMultinomial``), so that funsor-core needs no pyro for them.

Every other name is ``torch.distributions``' own object.

Example:
    >>> Normal is torch.distributions.Normal
    True
    >>> d = DirichletMultinomial(torch.tensor([1.0, 1.0]), torch.tensor(2.0))
    >>> round(float(d.log_prob(torch.tensor([1.0, 1.0])).exp()), 4)  # uniform over 3 splits
    0.3333
"""

from __future__ import annotations

import torch
import torch.distributions
from torch.distributions import *  # noqa: F403
from torch.distributions import constraints

__all__ = ["DirichletMultinomial"]


def __getattr__(name: str):
    return getattr(torch.distributions, name)  # submodules and names outside __all__


class DirichletMultinomial(torch.distributions.Distribution):
    """Counts ``x`` of ``total_count`` draws from a category distribution that is itself
    drawn from ``Dirichlet(concentration)`` (pyro's ``DirichletMultinomial``):

        log p(x) = lgamma(n + 1) + lgamma(A) - lgamma(n + A)
                   + sum_k [lgamma(x_k + a_k) - lgamma(a_k) - lgamma(x_k + 1)],   A = sum_k a_k.

    Example:
        >>> d = DirichletMultinomial(torch.ones(2, 3), 4.0)
        >>> d.batch_shape, d.event_shape, d.mean
        (torch.Size([2]), torch.Size([3]), tensor([[1.3333, 1.3333, 1.3333],
                [1.3333, 1.3333, 1.3333]]))
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1),
                       "total_count": constraints.nonnegative_integer}
    support = constraints.independent(constraints.nonnegative_integer, 1)

    def __init__(self, concentration, total_count=1, validate_args=None) -> None:
        concentration = torch.as_tensor(concentration)
        total_count = torch.as_tensor(total_count, dtype=concentration.dtype,
                                      device=concentration.device)
        batch_shape = torch.broadcast_shapes(concentration.shape[:-1], total_count.shape)
        self.concentration = concentration.expand(batch_shape + concentration.shape[-1:])
        self.total_count = total_count.expand(batch_shape)
        super().__init__(batch_shape, concentration.shape[-1:], validate_args=validate_args)

    @property
    def mean(self) -> torch.Tensor:
        a = self.concentration
        return a / a.sum(-1, keepdim=True) * self.total_count.unsqueeze(-1)

    def log_prob(self, value) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, n = self.concentration, self.total_count
        total = a.sum(-1)
        lg = torch.lgamma
        return (lg(n + 1) + lg(total) - lg(n + total)
                + (lg(value + a) - lg(a) - lg(value + 1)).sum(-1))

    def sample(self, sample_shape=()) -> torch.Tensor:
        # Dirichlet probabilities, then the counts by stick breaking: category k takes a
        # Binomial share of the draws left, with the probability renormalized to what is left.
        with torch.no_grad():
            probs = torch.distributions.Dirichlet(self.concentration).sample(
                torch.Size(sample_shape))
            left_n = self.total_count.expand(probs.shape[:-1]).clone()
            left_p = torch.ones_like(left_n)
            counts = []
            for k in range(probs.shape[-1] - 1):
                p = (probs[..., k] / left_p).clamp(0, 1)
                x = torch.distributions.Binomial(left_n, p).sample()
                counts.append(x)
                left_n, left_p = left_n - x, (left_p - probs[..., k]).clamp_min(0)
            counts.append(left_n)
            return torch.stack(counts, -1)
