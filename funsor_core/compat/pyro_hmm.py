"""funsor 0.4.8's ``funsor.pyro.hmm``: ``DiscreteHMM``, a pyro distribution whose log density
is a discrete Markov chain's forward pass (``sequential_sum_product``: a log-depth tree over
time), and ``GaussianHMM``, ``GaussianMRF`` and ``SwitchingLinearHMM``, whose chains are
Gaussian (``funsor_core.compat.pyro_hmm_gaussian``).

The classes subclass pyro's ``TorchDistribution`` (through ``FunsorDistribution``), so they
are built when first asked for; this module imports pyro only then.

Example:
    >>> import torch
    >>> from funsor_core.compat.pyro_hmm import DiscreteHMM
    >>> fc.set_backend("torch")
    >>> obs = torch.distributions.Normal(torch.zeros(2), 1.0)  # one Normal per state
    >>> hmm = DiscreteHMM(torch.zeros(2), torch.zeros(3, 2, 2), obs)  # 3 steps
    >>> round(hmm.log_prob(torch.zeros(3)).item(), 5)  # 3 * log N(0; 0, 1)
    -2.75682
    >>> fc.set_backend("numpy")
"""

from __future__ import annotations

import functools

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains.term_scans import sequential_sum_product
from funsor_core.compat.pyro_convert import dist_to_funsor, funsor_to_tensor, tensor_to_funsor
from funsor_core.compat.pyro_distribution import _funsor_distribution_class
from funsor_core.compat.pyro_hmm_gaussian import gaussian_hmm_classes
from funsor_core.domains import Bint, broadcast_shape
from funsor_core.engine.backend import backend_module
from funsor_core.terms.base import Variable

__all__ = ["DiscreteHMM", "GaussianHMM", "GaussianMRF",  # noqa: F822  (built on first
           "SwitchingLinearHMM"]  # access, see __getattr__)

def __getattr__(name: str):
    if name in __all__:
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _normalize(logits):
    # log softmax along the last dim: the rows of a transition matrix sum to one.
    return logits - ops.logsumexp(logits, -1, keepdims=True)


def _check_hmm_args(initial_logits, transition_logits, observation_dist) -> tuple:
    if len(initial_logits.shape) < 1 or len(transition_logits.shape) < 2:
        raise ValueError("DiscreteHMM needs initial_logits of shape (..., state_dim) and "
                         "transition_logits of shape (..., state_dim, state_dim), got "
                         f"{tuple(initial_logits.shape)} and {tuple(transition_logits.shape)}")
    if len(observation_dist.batch_shape) < 1:
        raise ValueError("DiscreteHMM's observation_dist needs a batch dim over the states")
    sizes = {"initial_logits.shape[-1]": initial_logits.shape[-1],
             "transition_logits.shape[-2]": transition_logits.shape[-2],
             "transition_logits.shape[-1]": transition_logits.shape[-1],
             "observation_dist.batch_shape[-1]": observation_dist.batch_shape[-1]}
    if len(set(sizes.values())) > 1:
        raise ValueError("DiscreteHMM's number of states differs: " + ", ".join(
            f"{k} = {v}" for k, v in sizes.items()))
    if type(initial_logits) is not type(transition_logits):
        raise TypeError("DiscreteHMM's initial_logits and transition_logits are arrays of two "
                        f"libraries: {type(initial_logits).__name__} and "
                        f"{type(transition_logits).__name__}")
    shape = broadcast_shape(tuple(initial_logits.shape[:-1]) + (1,),
                            tuple(transition_logits.shape[:-2]),
                            tuple(observation_dist.batch_shape[:-1]))
    return shape[:-1], shape[-1:]


def _chain_log_prob(init, trans, obs, value, time_size: int):
    """log sum_z p(z_0) prod_t p(z_t | z_t-1) p(x_t | z_t), the funsor of Pyro's batch dims."""
    time = Variable("time", Bint[time_size])
    steps = trans + obs(value=value)
    chain = sequential_sum_product(ops.logaddexp, ops.add, steps, time,
                                   {"state": "state(time=1)"})
    total = init + chain.reduce(ops.logaddexp, "state(time=1)")
    return total.reduce(ops.logaddexp, "state")


@functools.cache
def _classes() -> dict:
    funsor_distribution = _funsor_distribution_class()

    class DiscreteHMM(funsor_distribution):
        """A hidden Markov model with discrete states and any observation distribution
        (``observation_dist``'s rightmost batch dim ranges over the states); time is the
        leftmost event dim. As funsor's ``funsor.pyro.hmm.DiscreteHMM`` (sampling not built,
        as there).

        Example:
            Uniform transitions make the steps independent: each is a two-Normal mixture.

            >>> import math, torch
            >>> fc.set_backend("torch")
            >>> obs = torch.distributions.Normal(torch.tensor([0.0, 2.0]), 1.0)
            >>> hmm = DiscreteHMM(torch.zeros(2), torch.zeros(2, 2, 2), obs)  # 2 steps
            >>> x = torch.tensor([0.5, 1.5])
            >>> mixture = obs.log_prob(x[:, None]).logsumexp(-1) - math.log(2)
            >>> torch.allclose(hmm.log_prob(x), mixture.sum())
            True
            >>> fc.set_backend("numpy")
        """

        def __init__(self, initial_logits, transition_logits, observation_dist,
                     validate_args=None):
            batch_shape, time_shape = _check_hmm_args(initial_logits, transition_logits,
                                                      observation_dist)
            self._has_rsample = observation_dist.has_rsample
            self._init = tensor_to_funsor(_normalize(initial_logits), ("state",))
            self._trans = tensor_to_funsor(_normalize(transition_logits),
                                           ("time", "state", "state(time=1)"))
            self._obs = dist_to_funsor(observation_dist, ("time", "state(time=1)"))
            dtype = self._obs.inputs["value"].dtype
            # The chain is summed in log_prob; the funsor held is the value alone.
            super().__init__(Variable("value", self._obs.inputs["value"]), batch_shape,
                             time_shape + tuple(observation_dist.event_shape), dtype,
                             validate_args)

        @property
        def has_rsample(self):
            return self._has_rsample

        def log_prob(self, value):
            if self._validate_args:
                self._validate_sample(value)
            ndims = max(len(self.batch_shape), value.dim() - self.event_dim)
            value = tensor_to_funsor(value, ("time",), self.event_dim - 1, self.dtype)
            result = _chain_log_prob(self._init, self._trans, self._obs, value,
                                     self.event_shape[0])
            return funsor_to_tensor(result, ndims)

        def _draw(self, sample_shape):
            raise NotImplementedError("sampling a funsor.pyro.hmm.DiscreteHMM is not built "
                                      "(nor in funsor 0.4.8)")

        def expand(self, batch_shape, _instance=None):
            new = self._get_checked_instance(DiscreteHMM, _instance)
            batch_shape = tuple(batch_shape)
            new._has_rsample = self._has_rsample
            zeros = backend_module().asarray(np.zeros(batch_shape), "real")
            new._init = self._init + tensor_to_funsor(zeros)
            new._trans, new._obs = self._trans, self._obs
            funsor_distribution.__init__(new, self.funsor_dist, batch_shape, self.event_shape,
                                         self.dtype, validate_args=False)
            new._validate_args = self._validate_args
            return new

    out = {"DiscreteHMM": DiscreteHMM, **gaussian_hmm_classes(funsor_distribution)}
    for cls in out.values():
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return out
