"""funsor's ``funsor.typing``: generic classes and deep type checks.

A thin face; the implementation lives in
``funsor_core.engine.typing``."""


from funsor_core.engine.typing import (
    GenericTypeMeta,
    Variadic,
    deep_isinstance,
    deep_issubclass,
    deep_type,
    get_args,
    get_origin,
    get_type_hints,
    params_subclass,
    register_subclasscheck,
    typing_wrap,
)

__all__ = [
    "GenericTypeMeta", "Variadic", "deep_isinstance", "deep_issubclass", "deep_type",
    "get_args", "get_origin", "get_type_hints", "params_subclass", "register_subclasscheck",
    "typing_wrap"
]
