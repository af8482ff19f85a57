"""``Constant(const_inputs, arg)``: the funsor ``arg``, constant along the extra inputs
``const_inputs``.

Its inputs are ``const_inputs`` followed by ``arg``'s inputs (the two are disjoint); its
value at any assignment is ``arg``'s value, whatever the constant inputs are. funsor uses it
for provenance tracking and for factors that do not depend on some variable.

The rules (``interpretations/constant.py``) keep the term small: substituting a constant
input drops it (or renames it), elementwise ops act on ``arg`` alone, and reducing over a
``Bint`` constant input of size ``n`` is closed form (``add``: times ``n``, ``mul``: to the
power ``n``, ``logaddexp``: plus ``log n``, idempotent ops: unchanged).

Example:
    >>> from funsor_core.terms.constant import Constant
    >>> c = Constant({"x": fc.Bint[3]}, fc.Number(2.0))
    >>> c.inputs, float(c.reduce(ops.add, "x").data)
    ({'x': Bint[3]}, 6.0)
"""

from __future__ import annotations

from funsor_core.domains import Domain
from funsor_core.terms.base import Funsor, Variable, merge_inputs

__all__ = ["Constant"]


class Constant(Funsor):
    """The funsor ``arg``, constant along the inputs ``const_inputs`` (a dict or a tuple of
    ``(name, domain)`` pairs, disjoint from ``arg.inputs``).

    Example:
        >>> from funsor_core.terms.constant import Constant
        >>> c = Constant({"y": fc.Real}, fc.Tensor(np.arange(2.0), {"i": fc.Bint[2]}))
        >>> c.inputs, c(y=1.5) is c.arg
        ({'y': Real, 'i': Bint[2]}, True)
    """

    fields = ("const_inputs", "arg")
    _atom = True  # substitution is a rule of its own (interpretations/constant.py)

    @classmethod
    def _prepare(cls, const_inputs, arg):
        if isinstance(const_inputs, dict):
            const_inputs = tuple(const_inputs.items())
        const_inputs = tuple((name, domain) for name, domain in const_inputs)
        if not isinstance(arg, Funsor):
            raise TypeError(f"Constant(const_inputs, arg) needs a funsor arg, got {arg!r}")
        for name, domain in const_inputs:
            if not isinstance(name, str) or not isinstance(domain, Domain):
                raise TypeError(f"Constant's const_inputs are (name, domain) pairs, got "
                                f"({name!r}, {domain!r})")
            if name in arg.inputs:
                raise ValueError(
                    f"Constant: input '{name}' is both constant ({domain}) and an input of "
                    f"arg ({arg.inputs[name]}); the constant inputs must be new names")
        return const_inputs, arg

    def _setup(self):
        inputs = dict(self._args[0])
        self.inputs = merge_inputs(inputs, self.arg.inputs, "make a Constant")
        self.output = self.arg.output

    @property
    def const_inputs(self) -> dict:
        """The constant inputs, as a dict of names to domains."""
        return dict(self._args[0])

    @property
    def const_vars(self) -> frozenset:
        """The constant inputs, as a frozenset of Variables (as in funsor)."""
        return frozenset(Variable(k, d) for k, d in self._args[0])
