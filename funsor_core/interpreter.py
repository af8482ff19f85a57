"""funsor's ``funsor.interpreter``: interpretations, ``reinterpret`` and ``gensym``.

A thin face; the implementation lives in ``funsor_core.engine.interpreter``, and
``gensym``, which only funsor's users call, in ``funsor_core.compat.gensym``."""

from funsor_core.compat.gensym import gensym
from funsor_core.compat.stateful import interpretation
from funsor_core.engine.interpreter import (
    ENTERED,
    Interpretation,
    Tuple,
    build,
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
