"""funsor 0.4.8's ``funsor.pyro.distribution.FunsorDistribution``: a pyro distribution whose
log density and samples come from a funsor of ``value`` (and Pyro's batch dims).

The class subclasses pyro's ``TorchDistribution``, so it is built when first asked for (this
module imports pyro only then): ``from funsor_core.compat.pyro_distribution import
FunsorDistribution``.

Example:
    >>> import torch
    >>> from funsor_core.compat.pyro_distribution import FunsorDistribution
    >>> from funsor_core.pyro.convert import tensor_to_funsor
    >>> fc.set_backend("torch")
    >>> logits = torch.tensor([0.0, 1.0]).log_softmax(-1)
    >>> d = FunsorDistribution(tensor_to_funsor(logits, ("value",)), dtype=2)
    >>> d.log_prob(torch.tensor(1)).exp().item() == logits.exp()[1].item()
    True
    >>> fc.set_backend("numpy")
"""

from __future__ import annotations

import functools
import importlib

import numpy as np

from funsor_core.atoms.delta import Delta
from funsor_core.compat.pyro_convert import DIM_TO_NAME, funsor_to_tensor, tensor_to_funsor
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module
from funsor_core.terms import Funsor
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import reinterpret

__all__ = ["FunsorDistribution"]  # noqa: F822  (built on first access, see __getattr__)


def __getattr__(name: str):
    if name == "FunsorDistribution":
        return _funsor_distribution_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check(funsor_dist, batch_shape, event_shape) -> None:
    if not isinstance(funsor_dist, Funsor):
        raise TypeError(f"FunsorDistribution needs a funsor, got {type(funsor_dist).__name__}")
    if "value" not in funsor_dist.inputs:
        raise ValueError(f"FunsorDistribution's funsor needs an input 'value'; its inputs are "
                         f"{dict(funsor_dist.inputs)}")
    if not (isinstance(batch_shape, tuple) and isinstance(event_shape, tuple)):
        raise TypeError("batch_shape and event_shape must be tuples (torch.Size)")


def _sample_inputs(sample_shape: tuple, batch_shape: tuple) -> dict | None:
    """Pyro's names for the sample dims left of the batch dims (size-1 dims name none)."""
    shape = tuple(sample_shape) + tuple(batch_shape)
    inputs = {DIM_TO_NAME[d]: Bint[shape[d]]
              for d in range(-len(shape), -len(batch_shape)) if shape[d] > 1}
    return inputs or None


def _point(delta: Funsor) -> Funsor:
    """The point of ``value`` in a drawn sample (a Delta, maybe plus a weight)."""
    if isinstance(delta, Contraction):
        deltas = [t for t in delta.terms if isinstance(t, Delta)]
        if len(deltas) == 1:
            delta = deltas[0]
    if not isinstance(delta, Delta):
        raise NotImplementedError(f"sampling 'value' gave no point mass: {delta}")
    return dict(delta.terms)["value"][0]


@functools.cache
def _funsor_distribution_class():
    pyro_dist = importlib.import_module("pyro.distributions")
    constraints = pyro_dist.constraints
    _SIZE = type(pyro_dist.TorchDistribution(validate_args=False).batch_shape)  # torch.Size

    class FunsorDistribution(pyro_dist.TorchDistribution):
        """A distribution of ``value`` given by a normalized funsor ``funsor_dist`` over
        ``value`` and Pyro's batch dims (``_pyro_dim_*``); ``dtype`` is ``"real"`` or the
        number of values of a discrete ``value``.

        Example:
            A batch of two categoricals over three values, from their normalized logits:

            >>> import torch
            >>> from funsor_core.pyro.convert import tensor_to_funsor
            >>> fc.set_backend("torch")
            >>> logits = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 0.0]]).log_softmax(-1)
            >>> d = FunsorDistribution(tensor_to_funsor(logits, ("value",)), (2,), dtype=3)
            >>> v, cat = torch.tensor([0, 2]), torch.distributions.Categorical(logits=logits)
            >>> torch.allclose(d.log_prob(v), cat.log_prob(v))
            True
            >>> fc.set_backend("numpy")
        """

        arg_constraints = {}

        def __init__(self, funsor_dist, batch_shape=(), event_shape=(), dtype="real",
                     validate_args=None):
            _check(funsor_dist, tuple(batch_shape), tuple(event_shape))
            # torch.Size, as every torch distribution's shapes (torch keeps what it is given)
            super().__init__(_SIZE(batch_shape), _SIZE(event_shape), validate_args)
            self.funsor_dist = funsor_dist
            self.dtype = dtype

        @constraints.dependent_property
        def support(self):
            if self.dtype == "real":
                return constraints.real
            return constraints.integer_interval(0, self.dtype - 1)

        def log_prob(self, value):
            if self._validate_args:
                self._validate_sample(value)
            ndims = max(len(self.batch_shape), value.dim() - self.event_dim)
            value = tensor_to_funsor(value, event_output=self.event_dim, dtype=self.dtype)
            return funsor_to_tensor(reinterpret(self.funsor_dist(value=value)), ndims)

        def _draw(self, sample_shape):
            delta = self.funsor_dist.sample(
                frozenset({"value"}), _sample_inputs(sample_shape, self.batch_shape))
            ndims = len(sample_shape) + len(self.batch_shape) + len(self.event_shape)
            return funsor_to_tensor(_point(delta), ndims)

        def sample(self, sample_shape=()):
            return self._draw(tuple(sample_shape)).detach()

        def rsample(self, sample_shape=()):
            return self._draw(tuple(sample_shape))

        def expand(self, batch_shape, _instance=None):
            new = self._get_checked_instance(type(self), _instance)
            # + 0 over the new batch dims: the funsor gains their inputs. batch_shape is
            # kept as given (torch's expand passes a torch.Size, as funsor 0.4.8 keeps it).
            zeros = backend_module().asarray(np.zeros(tuple(batch_shape)), "real")
            funsor_dist = self.funsor_dist + tensor_to_funsor(zeros)
            FunsorDistribution.__init__(new, funsor_dist, batch_shape, self.event_shape,
                                        self.dtype, validate_args=False)
            new._validate_args = self._validate_args
            return new

    FunsorDistribution.__module__ = __name__
    FunsorDistribution.__qualname__ = "FunsorDistribution"
    return FunsorDistribution
