"""``StatefulInterpretation``: funsor 0.4.8's base class for user interpretations with state.

A subclass is an interpretation kind whose rules receive the instance first
(``rule(interp, *args)``) and which falls back to the interpretation that was active when it
was entered: our ``Interpretation`` subclass with ``stateful = True`` and an ``ENTERED``
fallback, under funsor's name and constructor (``super().__init__(name)``).

Example:
    >>> class Shift(StatefulInterpretation):
    ...     def __init__(self, by):
    ...         super().__init__("shift")
    ...         self.by = by
    >>> @Shift.register(fc.Unary, type(ops.exp), fc.Number)
    ... def shift_unary_exp_number(interp, op, x):
    ...     return fc.Number(x.data + interp.by)
    >>> with Shift(10.0):
    ...     y = fc.Number(1.0).exp()
    >>> y.data
    11.0
"""

from __future__ import annotations

import warnings

from funsor_core.engine.interpreter import ENTERED, Interpretation

__all__ = ["StatefulInterpretation", "interpretation"]


class StatefulInterpretation(Interpretation):
    """A kind of interpretation with per-instance state (see the module docstring).

    A subclass whose ``__init__`` only sets its state, without ``super().__init__()`` (as
    funsor's own docstring shows), still works: each instance starts initialized as
    ``"stateful"``.

    Example:
        >>> class Probe(StatefulInterpretation):
        ...     def __init__(self, k):
        ...         self.k = k
        >>> Probe(3).name, Probe(3).stateful, Probe(3).k
        ('stateful', True, 3)
    """

    stateful = True

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        Interpretation.__init__(self, "stateful", fallback=ENTERED)
        return self

    def __init__(self, name: str = "stateful") -> None:
        super().__init__(name, fallback=ENTERED)


def interpretation(new: Interpretation) -> Interpretation:
    """funsor's older spelling ``with interpretation(lazy):``; it is ``with lazy:`` (returns
    ``new`` itself, with a ``DeprecationWarning`` as funsor 0.4.8 gives).

    Example:
        >>> import warnings
        >>> from interpretations import lazy
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with interpretation(lazy):
        ...         x = fc.Variable("x", fc.Real) + 1
        >>> type(x).__name__
        'Binary'
    """
    warnings.warn("'with interpretation(x)' is the older spelling of 'with x'",
                  DeprecationWarning, stacklevel=2)
    return new
