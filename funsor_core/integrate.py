"""funsor's ``funsor.integrate``: ``Integrate``.

A thin face; the implementation lives in
``funsor_core.terms.integrate``."""


from funsor_core.terms.integrate import (
    Integrate,
)

__all__ = [
    "Integrate"
]
