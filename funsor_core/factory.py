"""funsor's ``funsor.factory``: ``make_funsor`` and its type hints.

A thin face; the implementation lives in
``funsor_core.terms.factory``."""


from funsor_core.terms.factory import (
    Bound,
    Fresh,
    Has,
    Value,
    make_funsor,
)

__all__ = [
    "Bound", "Fresh", "Has", "Value", "make_funsor"
]
