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
from collections.abc import Iterator, Mapping
from types import ModuleType

from funsor_core.ops.op import set_backend_loader

__all__ = ["get_backend", "set_backend", "set_default_backend", "backend_module",
           "backend_name_of", "backend_of", "backend_names", "host_backend", "BackendTable",
           "on_term_class", "announce_term_class"]

# The one place that names backends: the rest of funsor_core asks a backend module (found
# here by name or by array type) for a function or a fact, and never compares names.
_BACKENDS = {"numpy": "backends.numpy", "torch": "backends.torch", "jax": "backends.jax"}
_ALIASES = {"jax.numpy": "jax", "np": "numpy", "pytorch": "torch"}
# The first component of an array type's module -> its backend (jax tracers live in jaxlib).
# numpyro's distribution objects hold jax arrays: they convert on the jax backend.
_ROOTS = {"numpy": "numpy", "torch": "torch", "jax": "jax", "jaxlib": "jax", "numpyro": "jax"}
_HOST = "numpy"  # the backend of host arrays: numpy is funsor_core's one array dependency
_DEFAULT = [_HOST]  # the process default: the backend of contexts that chose none
# Loaded backend modules by name, and backends by array type: lookups on hot paths stay one
# dict read (both are bounded: a handful of names and array types).
_MODULES: dict[str, ModuleType] = {}
_BY_TYPE: dict[type, ModuleType] = {}
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("funsor_core_backend")


def _checked(name: str) -> str:
    name = _ALIASES.get(name, name)
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {sorted(_BACKENDS)}")
    backend_module(name)
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
    """The module of backend ``name`` (default: the active one), loading it if needed.

    Example:
        >>> backend_module().NAME
        'numpy'
    """
    name = _ALIASES.get(name, name) if name else _ACTIVE.get(_DEFAULT[0])
    module = _MODULES.get(name)
    if module is None:
        module = _MODULES[name] = importlib.import_module(_BACKENDS[name])
    return module


def host_backend() -> ModuleType:
    """The backend of host (numpy) arrays, whichever backend is active.

    Example:
        >>> type(host_backend().asarray(0.0, "real")).__name__
        'ndarray'
    """
    return backend_module(_HOST)


def backend_names(aliases: bool = False) -> tuple[str, ...]:
    """The names of the backends (with ``aliases``: also the other names they answer to).

    Example:
        >>> len(backend_names())
        3
    """
    return tuple(_BACKENDS) + (tuple(_ALIASES) if aliases else ())


def _root_backend_of_type(typ: type) -> str | None:
    # By inheritance: a subclass defined elsewhere (a distribution of a library built on
    # torch.distributions, a user's array subclass) belongs to the backend of the first
    # class in its MRO that a backend's library defines. Paid once per type (callers cache).
    for cls in typ.__mro__:
        name = _ROOTS.get(cls.__module__.split(".", 1)[0])
        if name is not None:
            return name
    return None


def _backend_name_of_type(typ: type) -> str | None:
    name = _root_backend_of_type(typ)
    if name is None and issubclass(typ, (int, float)):
        name = _HOST
    return name


def backend_name_of(array) -> str:
    """The backend an array belongs to, from its type's module (jax tracers count as jax).

    Example:
        >>> backend_name_of(np.zeros(2))
        'numpy'
    """
    name = _backend_name_of_type(type(array))
    if name is None:
        raise TypeError(f"no backend for arrays of type {type(array).__name__}")
    return name


def _load_backend_of_type(typ: type) -> bool:
    # The hook behind ops' first sight of an array type: torch and jax load on demand.
    name = _root_backend_of_type(typ)
    if name is None or name in _MODULES:
        return False
    backend_module(name)
    return True


set_backend_loader(_load_backend_of_type)

_RAISE = object()


def backend_of(array, default=_RAISE) -> ModuleType:
    """The module of the backend an array (or a generator, or a Python number) belongs to:
    where the core finds that backend's functions and facts. A type with no backend gives
    ``default`` if one is passed, else raises ``TypeError``. Cached by type.

    Example:
        >>> backend_of(np.zeros(2)).NAME
        'numpy'
        >>> backend_of("text", None) is None
        True
    """
    module = _BY_TYPE.get(type(array))
    if module is None:
        name = _backend_name_of_type(type(array))
        if name is None:
            if default is _RAISE:
                raise TypeError(f"no backend for arrays of type {type(array).__name__}")
            return default
        module = _BY_TYPE[type(array)] = backend_module(name)
    return module


class BackendTable(Mapping):
    """A read-only table: backend name -> that backend's attribute ``attr``, for backends
    that have one (funsor's name tables, such as ``BACKEND_TO_EINSUM_BACKEND``). A backend
    loads when its entry is read; iterating loads every backend that can be imported.

    Example:
        >>> BackendTable("NAME")["numpy"]
        'numpy'
    """

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __getitem__(self, name: str):
        try:
            return getattr(backend_module(name), self.attr)
        except (KeyError, AttributeError):
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        # Lazily, in the registry's order: a search for the first entry loads no more
        # backends than it reads.
        for name in _BACKENDS:
            try:
                module = backend_module(name)
            except ImportError:  # an array library that is not installed has no entry
                continue
            if hasattr(module, self.attr):
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return repr(dict(self))


# -- term classes, for glue that backends install (JAX pytrees) ---------------------------------
# Backends must not import the term modules; the base term class announces every term class
# here, and a backend subscribes with ``on_term_class``.
_TERM_CLASSES: list[type] = []
_TERM_CLASS_HOOKS: list = []


def announce_term_class(cls: type) -> None:
    """Called by the base term class for every term class when it is defined: it is kept,
    and every hook given to ``on_term_class`` is called with it.

    Example:
        >>> seen = []
        >>> on_term_class(seen.append)
        >>> class Probe:  # a term class's flatten protocol, for the jax hook
        ...     tree_flatten = classmethod(lambda cls, x: ([], None))
        ...     tree_unflatten = classmethod(lambda cls, aux, leaves: cls())
        >>> announce_term_class(Probe)
        >>> seen[-1] is Probe
        True
        >>> _TERM_CLASS_HOOKS.remove(seen.append); _TERM_CLASSES.remove(Probe)
    """
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
