"""The active backend: which array library new arrays are made with.

Ops dispatch on the type of the arrays they see, so arrays of several backends may coexist;
the active backend only decides what fresh arrays (``testing.randn``, ``to_funsor`` of a list)
are made of. Switching is free and goes both ways.

The active backend belongs to the thread or asyncio task, like the active interpretation: it
lives in a ``contextvars.ContextVar``, so four threads (or tasks) may each use their own
backend at once. A thread or task that never chose one uses the *process default*: "numpy",
changed by ``set_default_backend``, or by ``set_backend`` called in the main thread outside a
running event loop (so that a script choosing a backend at its top keeps it in the threads it
starts, as funsor 0.4.8 did). ``set_backend`` anywhere else changes only its own thread or
task; an asyncio task starts with a copy of its creator's choice.

Example:
    >>> import funsor_core as fc
    >>> fc.get_backend()
    'numpy'
"""

from __future__ import annotations

import contextvars
import importlib
import sys
import threading
from types import ModuleType

__all__ = ["get_backend", "set_backend", "set_default_backend", "backend_module",
           "backend_name_of", "on_term_class", "announce_term_class"]

_BACKENDS = {"numpy": "backends.numpy", "torch": "backends.torch", "jax": "backends.jax"}
_ALIASES = {"jax.numpy": "jax", "np": "numpy", "pytorch": "torch"}
_DEFAULT = ["numpy"]  # the process default: the backend of contexts that chose none
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("funsor_core_backend")


def _checked(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(_BACKENDS)}")
    importlib.import_module(_BACKENDS[name])
    return name


def _in_main_context() -> bool:
    # The main thread, outside a running asyncio loop (so not inside a task).
    if threading.current_thread() is not threading.main_thread():
        return False
    aio = sys.modules.get("asyncio")
    if aio is None:
        return True
    try:
        aio.get_running_loop()
    except RuntimeError:
        return True
    return False


def set_backend(name: str) -> None:
    """Make ``name`` ("numpy", "torch" or "jax") the backend for fresh arrays in this thread or
    asyncio task; in the main thread outside an event loop, also the process default.

    Example:
        >>> fc.set_backend("numpy")
    """
    name = _checked(name)
    _ACTIVE.set(name)
    if _in_main_context():
        _DEFAULT[0] = name


def set_default_backend(name: str) -> None:
    """Make ``name`` the backend of every thread and task that has not chosen one, and of this
    one.

    Example:
        >>> set_default_backend("numpy")
    """
    name = _checked(name)
    _DEFAULT[0] = name
    _ACTIVE.set(name)


def get_backend() -> str:
    """The name of the backend active in this thread or task.

    Example:
        >>> get_backend()
        'numpy'
    """
    return _ACTIVE.get(_DEFAULT[0])


def backend_module(name: str | None = None) -> ModuleType:
    """The module of backend ``name`` (default: the active one), loading it if needed."""
    name = _ALIASES.get(name, name) if name else _ACTIVE.get(_DEFAULT[0])
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
