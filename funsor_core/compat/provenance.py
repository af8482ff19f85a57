"""funsor's ``funsor.torch.provenance.ProvenanceTensor``, loaded from the torch backend (the
class subclasses ``torch.Tensor``, and only ``backends/`` import torch). Importing this module
loads the torch backend, as importing funsor's module imports torch.

A ``ProvenanceTensor(data, frozenset({(name, domain), ...}))`` carries its pairs through every
torch function; ``to_funsor`` makes it ``Constant(pairs, Tensor(data))`` and ``to_data`` of a
Constant on torch makes one (``backends/torch_provenance.py``).

Example:
    >>> import torch
    >>> c = fc.Constant({"x": fc.Real}, fc.Tensor(torch.zeros(2)))
    >>> pt = fc.to_data(c)
    >>> isinstance(pt, ProvenanceTensor), pt._provenance, fc.to_funsor(pt) is c
    (True, frozenset({('x', Real)}), True)
"""

from __future__ import annotations

from funsor_core.engine.backend import backend_module

__all__ = ["ProvenanceTensor"]

# funsor's module of this name is torch's alone, so this one names its backend.
ProvenanceTensor = backend_module("torch").ProvenanceTensor
