"""funsor 0.4.8 names that funsor-core does not build, each raising ``NotImplementedError``
that says what is missing (``install_as_funsor`` serves them at funsor's paths, so a client's
import works and the first use explains).

- ``funsor.ops.tracer.trace_function(fn, data)``: funsor records every op call while ``fn``
  runs on its arrays (a hook in its ``Op.__call__``) and replays the recorded program on new
  arrays. funsor-core's op dispatch has no recording hook (it is the eager hot path: one dict
  lookup per call) and no tracing array type; funsor-core's own way to run a computation
  many times is ``jax.jit`` of the function, or a lazy term substituted with new Tensors.
- ``funsor.torch.provenance.ProvenanceTensor``: a torch tensor subclass that carries a set of
  ``(name, domain)`` pairs through torch ops, converted to and from ``Constant``. It needs a
  torch class (only ``backends/`` import torch) and provenance hooks in ``to_funsor`` and
  ``to_data``; ``Constant(const_inputs, arg)`` itself is built.

Example:
    >>> trace_function(lambda x: x, {"x": np.zeros(2)})
    Traceback (most recent call last):
    ...
    NotImplementedError: funsor.ops.tracer.trace_function is not built in funsor-core: ...
"""

from __future__ import annotations

__all__ = ["trace_function", "ProvenanceTensor"]

_TRACE = ("funsor.ops.tracer.trace_function is not built in funsor-core: op calls are not "
          "recorded (no hook in the ops' eager dispatch, no tracing array type). To run a "
          "function of arrays many times fast, jax.jit it; to evaluate one expression on new "
          "arrays, build it lazily and substitute Tensors.")
_PROVENANCE = ("funsor.torch.provenance.ProvenanceTensor is not built in funsor-core (a torch "
               "tensor subclass carrying (name, domain) pairs, converted to and from Constant); "
               "use Constant(const_inputs, Tensor(data)) directly.")


def trace_function(fn, kwargs: dict, *, allow_constants: bool = False):
    """funsor's op tracer; not built (raises ``NotImplementedError`` saying why)."""
    raise NotImplementedError(_TRACE)


class ProvenanceTensor:
    """funsor's provenance-tracking torch tensor; not built (raises ``NotImplementedError``
    saying why when made)."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(_PROVENANCE)
