"""The active backend: which array library new arrays are made with.

Ops dispatch on the type of the arrays they see, so arrays of several backends may coexist;
the active backend only decides what fresh arrays (``testing.randn``, ``to_funsor`` of a list)
are made of. Switching is free and goes both ways.

Example:
    >>> import funsor_core as fc
    >>> fc.get_backend()
    'numpy'
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["get_backend", "set_backend", "backend_module", "backend_name_of", "on_term_class",
           "announce_term_class"]

_BACKENDS = {"numpy": "backends.numpy", "torch": "backends.torch", "jax": "backends.jax"}
_ALIASES = {"jax.numpy": "jax", "np": "numpy", "pytorch": "torch"}
_ACTIVE = ["numpy"]


def set_backend(name: str) -> None:
    """Make ``name`` ("numpy", "torch" or "jax") the backend for fresh arrays.

    Example:
        >>> fc.set_backend("numpy")
    """
    name = _ALIASES.get(name, name)
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(_BACKENDS)}")
    importlib.import_module(_BACKENDS[name])
    _ACTIVE[0] = name


def get_backend() -> str:
    """The name of the active backend."""
    return _ACTIVE[0]


def backend_module(name: str | None = None) -> ModuleType:
    """The module of backend ``name`` (default: the active one), loading it if needed."""
    name = _ALIASES.get(name, name) if name else _ACTIVE[0]
    return importlib.import_module(_BACKENDS[name])


def backend_name_of(array) -> str:
    """The backend an array belongs to, from its type's module (jax tracers count as jax).

    Example:
        >>> backend_name_of(np.zeros(2))
        'numpy'
    """
    root = type(array).__module__.split(".", 1)[0]
    if root in ("jax", "jaxlib"):
        return "jax"
    if root == "torch":
        return "torch"
    if root == "numpy" or isinstance(array, (int, float)):
        return "numpy"
    raise TypeError(f"no backend for arrays of type {type(array).__name__}")


# -- term classes, for glue that backends install (JAX pytrees) ---------------------------------
# Backends must not import the term modules; the base term class announces every term class
# here, and a backend subscribes with ``on_term_class``.
_TERM_CLASSES: list[type] = []
_TERM_CLASS_HOOKS: list = []


def announce_term_class(cls: type) -> None:
    """Called by the base term class for every term class when it is defined."""
    _TERM_CLASSES.append(cls)
    for hook in _TERM_CLASS_HOOKS:
        hook(cls)


def on_term_class(hook) -> None:
    """Call ``hook(cls)`` for every term class, now and as new ones are defined.

    Each class has ``cls.tree_flatten(term) -> (leaves, aux)`` and
    ``cls.tree_unflatten(aux, leaves) -> term``, derived from its declaration.

    Example:
        >>> seen = []
        >>> on_term_class(seen.append)
        >>> any(c.__name__ == "Tensor" for c in seen)
        True
        >>> _TERM_CLASS_HOOKS.remove(seen.append)
    """
    _TERM_CLASS_HOOKS.append(hook)
    for cls in list(_TERM_CLASSES):
        hook(cls)
