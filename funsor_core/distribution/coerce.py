"""``CoerceDistributionToFunsor``: a backend distribution built from funsors becomes a funsor.

Pyro's ``poutine.collapse`` and NumPyro's ``handlers.collapse`` put an instance on their
distributions' construction hook (``COERCIONS``): inside the handler, sample sites hold
names or funsors instead of arrays, so ``dist.Normal(loc_funsor, 1.0)`` must build the
funsor family ``Normal(loc_funsor, 1.0)``, a lazy log density that the handler later
contracts. A call whose parameters are all arrays is left to the library (``None``).

The family is found by class name in the backend's module of families
(``BACKEND_TO_DISTRIBUTIONS_BACKEND``); NumPyro's ``BinomialProbs``-style classes fall back
to the name without ``Probs``. Positional arguments are named after the class's
``__init__`` signature; a string parameter is a free variable of that name.

Example:
    >>> class Normal:  # a stand-in for a backend distribution class
    ...     arg_constraints = {"loc": None, "scale": None}
    ...     def __init__(self, loc, scale, validate_args=None):
    ...         pass
    >>> coerce = CoerceDistributionToFunsor("numpy")
    >>> coerce(Normal, (0.0, 1.0), {}) is None  # all numbers: the library builds it
    True
    >>> d = coerce(Normal, ("x", 1.0), {})
    >>> sorted(d.inputs)  # a log density of the free names
    ['value', 'x']
"""

from __future__ import annotations

import importlib
import inspect
import warnings
import weakref
from typing import Any

from funsor_core.distribution.base import BACKEND_TO_DISTRIBUTIONS_BACKEND
from funsor_core.engine.backend import set_backend
from funsor_core.terms.base import Funsor

__all__ = ["CoerceDistributionToFunsor"]

_MISSING = object()


class CoerceDistributionToFunsor:
    """Build the funsor family of a backend distribution class when any of its parameters is
    a funsor or a name (a hook on the class's construction: ``None`` lets the class build).

    Args:
        backend: the funsor backend whose family module serves the classes (``"torch"``,
            ``"jax"``; any backend works, the families are the same on all of them).

    Example:
        >>> class Bernoulli:
        ...     arg_constraints = {"probs": None}
        ...     def __init__(self, probs=None, logits=None):
        ...         pass
        >>> d = CoerceDistributionToFunsor("numpy")(Bernoulli, (), {"probs": "p"})
        >>> sorted(d.inputs)
        ['p', 'value']
    """

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._module = None
        # class -> (its __init__ argument names, its funsor family or None)
        self._classes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @property
    def module(self):
        """The module of funsor families for ``backend`` (the backend is set on first use)."""
        if self._module is None:
            set_backend(self.backend)
            names = BACKEND_TO_DISTRIBUTIONS_BACKEND
            name = names[self.backend] if self.backend in names else None
            self._module = importlib.import_module(name or "funsor_core.distribution")
        return self._module

    def __call__(self, cls: type, args: tuple, kwargs: dict) -> Funsor | None:
        constraints = getattr(cls, "arg_constraints", None)
        if not constraints:
            return None
        fields, family, accepted = self._describe(cls)
        named = dict(zip(fields, args))
        named.update(kwargs)
        if not any(isinstance(v, (str, Funsor)) for k, v in named.items() if k in constraints):
            return None
        if family is None:
            warnings.warn(f"missing funsor for {cls.__name__}", RuntimeWarning, stacklevel=2)
            return None
        # Library-only options (validate_args, ...) have no meaning for a log density.
        return family(**{k: v for k, v in named.items() if k in accepted})

    def _describe(self, cls: type) -> tuple[tuple[str, ...], Any, frozenset]:
        # (the class's positional argument names, its family, the names the family takes)
        known = self._classes.get(cls)
        if known is None:
            params = list(inspect.signature(cls.__init__).parameters.values())[1:]
            fields = tuple(p.name for p in params
                           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
            family = self._family(cls.__name__)
            accepted = frozenset() if family is None else frozenset(
                getattr(family, "fields", None) or inspect.signature(family).parameters)
            known = self._classes[cls] = (fields, family, accepted)
        return known

    def _family(self, name: str):
        family = getattr(self.module, name, _MISSING)
        if family is _MISSING and name.endswith("Probs"):
            family = getattr(self.module, name[: -len("Probs")], _MISSING)
        # A family or a family-building function (``Bernoulli`` picks probs or logits).
        return family if family is not _MISSING and callable(family) else None
