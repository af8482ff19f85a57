"""Terms become jax pytrees when jax is imported, before or after funsor_core.

``jax.jit(f)(t)`` with a numpy-backed ``Tensor`` ``t`` needs the term classes registered as
pytrees; the jax backend registers them, but a numpy user need not load it. So importing
funsor_core registers them at once if jax is loaded, and otherwise wraps the import of jax
so that the registration (``backends.jax_pytrees``: jax's own ``tree_util`` and a loop over
the term classes, not the jax backend) follows it.

Example:
    >>> import jax, numpy as np
    >>> import funsor_core as fc
    >>> float(jax.jit(lambda t: t.data.sum())(fc.Tensor(np.ones(3), {"i": fc.Bint[3]})))
    3.0
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_PYTREES = "backends.jax_pytrees"


class _AfterJax(importlib.abc.MetaPathFinder):
    """A finder that answers only for ``jax``: the spec the other finders give, whose loader
    registers the pytrees after running jax's ``__init__``. Removes itself on first use."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec("jax")
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_init = loader.exec_module

        def exec_module(module):
            run_init(module)
            importlib.import_module(_PYTREES)

        loader.exec_module = exec_module
        return spec


def register_pytrees_with_jax() -> None:
    """Register the term classes as pytrees now if jax is loaded, else right after jax's
    import (idempotent: the registering module loads once)."""
    if "jax" in sys.modules:
        importlib.import_module(_PYTREES)
    elif not any(isinstance(f, _AfterJax) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterJax())
