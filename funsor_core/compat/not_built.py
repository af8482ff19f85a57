"""funsor 0.4.8 names that funsor-core does not build, each raising ``NotImplementedError``
that says what is missing (``install_as_funsor`` serves them at funsor's paths, so a client's
import works and the first use explains).

- ``funsor.torch.provenance.ProvenanceTensor``: a torch tensor subclass that carries a set of
  ``(name, domain)`` pairs through torch ops, converted to and from ``Constant``. It needs a
  torch class (only ``backends/`` import torch) and provenance hooks in ``to_funsor`` and
  ``to_data``; ``Constant(const_inputs, arg)`` itself is built.

Example:
    >>> ProvenanceTensor()
    Traceback (most recent call last):
    ...
    NotImplementedError: funsor.torch.provenance.ProvenanceTensor is not built in funsor-core ...
"""

from __future__ import annotations

__all__ = ["ProvenanceTensor"]

_PROVENANCE = ("funsor.torch.provenance.ProvenanceTensor is not built in funsor-core (a torch "
               "tensor subclass carrying (name, domain) pairs, converted to and from Constant); "
               "use Constant(const_inputs, Tensor(data)) directly.")


class ProvenanceTensor:
    """funsor's provenance-tracking torch tensor; not built (raises ``NotImplementedError``
    saying why when made)."""

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(_PROVENANCE)
