"""funsor's ``funsor.registry``: its dispatcher classes.

A thin face; the implementation lives in
``funsor_core.compat.registry``."""


from funsor_core.compat.registry import (
    KeyedRegistry,
    PartialDefault,
    PartialDispatcher,
)

__all__ = [
    "KeyedRegistry", "PartialDefault", "PartialDispatcher"
]
