"""funsor's ``funsor.interpreter``: interpretations, ``reinterpret`` and ``gensym``.

A thin face; the implementation lives in
``funsor_core.engine.interpreter``."""


from funsor_core.compat.stateful import interpretation
from funsor_core.engine.interpreter import (
    ENTERED,
    Interpretation,
    Tuple,
    build,
    gensym,
    get_interpretation,
    interpret,
    reflect,
    rule_name,
    set_debug,
    set_default_interpretation,
)
from funsor_core.terms.traversal import children, reinterpret

__all__ = [
    "Interpretation", "ENTERED", "get_interpretation", "reflect", "set_default_interpretation",
    "set_debug", "interpret", "build", "Tuple", "rule_name", "gensym", "children", "reinterpret",
    "interpretation",
]

