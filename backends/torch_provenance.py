"""``ProvenanceTensor``: a torch tensor that carries a set of ``(name, domain)`` pairs, its
*provenance*, through every torch function (funsor's ``funsor.torch.provenance``).

A result's provenance is the union of its tensor arguments' provenances. The core converts
one to ``Constant(provenance, Tensor(data))`` in ``to_funsor`` and back in ``to_data``; it
asks the backend through ``provenance_of`` and ``with_provenance`` and never names the class.

Example:
    >>> x = ProvenanceTensor(torch.ones(2), frozenset({("x", "Real")}))
    >>> y = ProvenanceTensor(torch.ones(2), frozenset({("y", "Real")}))
    >>> z = torch.add(x, y) * 2
    >>> sorted(name for name, _ in z._provenance), z._t
    (['x', 'y'], tensor([4., 4.]))
"""

from __future__ import annotations

import torch

__all__ = ["ProvenanceTensor", "provenance_of", "with_provenance"]


class ProvenanceTensor(torch.Tensor):
    """``data`` (kept as ``_t``, the very object) tagged with ``provenance`` (``_provenance``,
    a frozenset). With an empty provenance the constructor returns ``data`` itself, and a
    ProvenanceTensor of a ProvenanceTensor merges the two provenances.

    Every torch function runs on the untagged tensors (so autograd sees ``_t``) and tags its
    tensor results with the union of its arguments' provenances.

    Example:
        >>> t = torch.zeros(2)
        >>> ProvenanceTensor(t) is t, ProvenanceTensor(t, frozenset({"a"}))._t is t
        (True, True)
    """

    _t: torch.Tensor
    _provenance: frozenset

    def __new__(cls, data, provenance: frozenset = frozenset(), **kwargs):
        if not isinstance(provenance, frozenset):
            raise TypeError(f"ProvenanceTensor(data, provenance): provenance is a frozenset of "
                            f"(name, domain) pairs, got {type(provenance).__name__}")
        if isinstance(data, ProvenanceTensor):
            provenance = provenance | data._provenance
            data = data._t
        if not provenance:
            return data
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"ProvenanceTensor(data, provenance): data is a torch.Tensor, got "
                            f"{type(data).__name__}")
        # Shares data's storage, shape and dtype (so it reads as the tensor it stands for);
        # computations never use it: __torch_function__ hands them _t.
        out = torch.Tensor._make_subclass(cls, data.detach())
        out._t = data
        out._provenance = provenance
        return out

    def __init__(self, *args, **kwargs) -> None:
        pass  # __new__ did it all

    def __repr__(self) -> str:
        pairs = ", ".join(sorted(f"{k}: {v}" for k, v in self._provenance))
        return f"ProvenanceTensor({self._t!r}, provenance={{{pairs}}})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        found: set = set()
        args = _untag(args, found)
        kwargs = _untag(kwargs or {}, found)
        return _tag(func(*args, **kwargs), frozenset(found))

    def __reduce_ex__(self, protocol):
        return ProvenanceTensor, (self._t, self._provenance)


def _untag(x, found: set):
    if isinstance(x, ProvenanceTensor):
        found.update(x._provenance)
        return x._t
    if type(x) in (tuple, list):
        return type(x)(_untag(v, found) for v in x)
    if type(x) is dict:
        return {k: _untag(v, found) for k, v in x.items()}
    return x


def _tag(x, provenance: frozenset):
    if not provenance:
        return x
    if isinstance(x, torch.Tensor):
        return ProvenanceTensor(x, provenance)
    if type(x) in (tuple, list):
        return type(x)(_tag(v, provenance) for v in x)
    return x


def provenance_of(x) -> tuple | None:
    """``(data, provenance)`` of a ProvenanceTensor, None for any other value.

    Example:
        >>> provenance_of(torch.zeros(1)) is None
        True
    """
    if isinstance(x, ProvenanceTensor):
        return x._t, x._provenance
    return None


def with_provenance(data, provenance: frozenset):
    """``data`` tagged with ``provenance`` (``data`` itself if it is empty).

    Example:
        >>> with_provenance(torch.zeros(1), frozenset({"a"}))._provenance
        frozenset({'a'})
    """
    return ProvenanceTensor(data, frozenset(provenance))
