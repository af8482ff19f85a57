"""funsor's ``funsor.constant``: ``Constant``.

A thin face; the implementation lives in
``funsor_core.terms.constant``."""


from funsor_core.terms.constant import (
    Constant,
)

__all__ = [
    "Constant"
]
