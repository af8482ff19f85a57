"""funsor's ``funsor.torch.provenance``: ``ProvenanceTensor``, a torch tensor tagged with
``(name, domain)`` pairs. A thin face; the class lives in the torch backend and is loaded by
``funsor_core.compat.provenance`` (importing this module imports torch, as funsor's does)."""

from funsor_core.compat.provenance import ProvenanceTensor

__all__ = ["ProvenanceTensor"]
