"""The term language's core, at its historical path: the ``Funsor`` base class
(``terms/funsor.py``), the leaves ``Variable`` and ``Number`` (``terms/leaves.py``), the generic
terms ``Unary``, ``Binary``, ``Reduce``, ``Subs``, ``Align`` (``terms/generic.py``),
``to_funsor`` (``terms/conversion.py``) and the input bookkeeping (``terms/inputs.py``).

Importing this module installs the term-building methods of ``Funsor`` (``terms/methods.py``).

Example:
    >>> from funsor_core.terms.base import Funsor, Variable
    >>> isinstance(Variable("x", fc.Real) + 1, Funsor)
    True
"""

from funsor_core.engine.protocol import (  # noqa: F401  (re-exported)
    TERM_HOOKS,
    FunsorMeta,
    Term,
    TypeHints,
    pending_setup,
    pending_slot,
    register_term_hook,
)
from funsor_core.terms import methods  # noqa: F401  (installs Funsor's term-building methods)
from funsor_core.terms.conversion import to_funsor
from funsor_core.terms.funsor import Funsor, is_atom
from funsor_core.terms.generic import (
    Align,
    Binary,
    Reduce,
    Subs,
    Unary,
    binary_domains,
    unary_domain,
)
from funsor_core.terms.inputs import (  # noqa: F401  (re-exported)
    DomainError,
    check_substitution,
    index_to_python,
    merge_all_inputs,
    merge_inputs,
    python_number,
    reduce_constant,
    reduce_domain,
    reduce_moment,
    split_reduced_vars,
)
from funsor_core.terms.leaves import Number, Variable

__all__ = [
    "Funsor", "FunsorMeta", "Variable", "Number", "Unary", "Binary", "Reduce", "Subs",
    "Align", "to_funsor", "is_atom",
    "merge_inputs", "merge_all_inputs", "DomainError",
    "binary_domains", "unary_domain",
]
