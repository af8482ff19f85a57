"""The generic terms (funsor's ``funsor.terms``): the ``Funsor`` base class, ``Variable``,
``Number``, ``Unary``, ``Binary``, ``Reduce``, ``Subs``, ``Align``, the array terms (``Lambda``,
``Independent``, ``Stack``, ``Cat``, ``Slice``, ``Function``), ``Contraction``, ``Integrate``,
``Product`` and ``Constant``, with traversal (substitution, alpha-renaming) and printing.

Example:
    >>> from funsor_core.terms import Variable
    >>> Variable("x", fc.Real).inputs
    {'x': Real}
"""

from funsor_core.terms import (  # noqa: F401  (they register hooks and builders)
    backend_check,
    op_builders,
    operators,
    output_ops,
)
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import (
    Align,
    Binary,
    DomainError,
    Funsor,
    FunsorMeta,
    Number,
    Reduce,
    Subs,
    Unary,
    Variable,
    is_atom,
    merge_all_inputs,
    merge_inputs,
    to_funsor,
)
from funsor_core.terms.lifting import symbolic
from funsor_core.terms.printing import (
    pretty,
    quote,
    short_repr,
)
from funsor_core.terms.reshaping import (
    Cat,
    Function,
    Independent,
    Lambda,
    Slice,
    Stack,
)
from funsor_core.terms.traversal import (
    alpha_rename,
    bound_name,
    children,
    fresh_name,
    map_args,
    receives_subs,
    reinterpret,
    substitute,
)

__all__ = [
    "Approximate", "Funsor", "FunsorMeta", "Variable", "Number", "Unary", "Binary", "Reduce",
    "Subs", "Align",
    "to_funsor", "is_atom", "merge_inputs", "merge_all_inputs", "DomainError", "Lambda",
    "Independent", "Stack", "Cat", "Slice", "Function", "children", "map_args", "reinterpret",
    "substitute", "fresh_name", "alpha_rename", "bound_name", "receives_subs", "quote",
    "pretty", "short_repr", "symbolic"
]
