"""``sequential`` and ``eager_or_die``: two variants of ``exact`` named as in funsor.

- ``sequential``: ``exact``, under its own name. funsor uses it to run ops that have no
  vectorized implementation one value at a time; every exact rule here is vectorized
  already, so it adds no rules of its own.
- ``eager_or_die``: ``exact``, except that a ``Unary``, ``Binary``, ``Reduce`` or ``Subs``
  that no rule can evaluate raises ``NotImplementedError`` (naming the term) instead of being
  built lazily. Use it to check that a computation is fully evaluated.

Example:
    >>> from interpretations import eager_or_die
    >>> with eager_or_die:
    ...     float((fc.Number(1.0) + 2).data)
    3.0
    >>> with eager_or_die:
    ...     fc.Variable("x", fc.Real).exp()
    Traceback (most recent call last):
    ...
    NotImplementedError: eager_or_die: no rule evaluates Unary(ops.exp, Variable('x', Real))
    It would be built lazily...
"""

from __future__ import annotations

from funsor_core.engine.interpreter import Interpretation, reflect
from funsor_core.terms.base import Binary, Funsor, Reduce, Subs, Unary
from interpretations.exact import exact
from interpretations.lazy import lazy

__all__ = ["sequential", "SEQUENTIAL", "eager_or_die", "die"]

sequential = Interpretation("sequential", fallback=exact, doc=__doc__)
SEQUENTIAL = sequential

_DIE = ("eager_or_die: no rule evaluates {term}\n"
        "It would be built lazily. Its arguments are not all numbers (a free variable, or a "
        "term no exact rule covers); substitute values first, or use `exact` to keep it lazy.")

die = Interpretation("die", fallback=reflect, doc="""The rules that raise, behind ``eager_or_die``.

Tried after every rule of ``exact``'s chain has declined; use ``eager_or_die``, which enters it.

Example:
    >>> from interpretations import die, eager_or_die
    >>> die.name, eager_or_die.chain()[-2:]
    ('die', ['die', 'reflect'])
""")


def _die(cls, *args):
    with reflect:
        term = cls(*args)
    raise NotImplementedError(_DIE.format(term=term))


# A term of these kinds reaching the end of exact's chain is lazy: raise.
@die.register(Unary, object, Funsor)
def die_unary_funsor(op, arg):
    _die(Unary, op, arg)


@die.register(Binary, object, Funsor, Funsor)
def die_binary_funsor_funsor(op, lhs, rhs):
    _die(Binary, op, lhs, rhs)


@die.register(Reduce, object, Funsor, frozenset)
def die_reduce_funsor(op, arg, reduced_vars):
    _die(Reduce, op, arg, reduced_vars)


@die.register(Subs, Funsor, tuple)
def die_subs_funsor(arg, subs):
    _die(Subs, arg, subs)


class _ThenDie(Interpretation):
    """``eager_or_die``: ``exact``'s rules, then ``lazy``'s (substitution), then ``die``.

    A term that no rule evaluates raises instead of being built lazily.

    Example:
        >>> import funsor_core as fc
        >>> from interpretations import eager_or_die
        >>> with eager_or_die:
        ...     fc.Variable("x", fc.Real).exp()
        Traceback (most recent call last):
        ...
        NotImplementedError: eager_or_die: no rule evaluates Unary(ops.exp, Variable('x', Real))
        It would be built lazily...
    """

    def _resolve(self, key: tuple) -> tuple:
        entry = self._cache.get(key)
        if entry is None:
            # As in funsor, normalize's rules are left out: they would turn a term that no
            # exact rule evaluates into a lazy normal form instead of reporting it.
            rules = exact.bound_rules(key) + lazy.rules(key) + die.rules(key)
            entry = self._cache_box.put(key, (rules, None, ()))
        return entry

    def chain(self) -> list[str]:
        return [self.name, "exact", "lazy", "die", "reflect"]


eager_or_die = _ThenDie("eager_or_die", fallback=reflect)
