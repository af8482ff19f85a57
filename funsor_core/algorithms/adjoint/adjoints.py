"""The result of a backward pass: ``Adjoints``, a dict from funsors to their adjoints, and the
key by which the tape knows a funsor (``canonical_key``).

A term is found under any form the tape recorded it by: the value it evaluated to, the lazy
form of a recorded term, or the term as the user wrote it (a distribution that evaluated
into recorded Gaussian algebra, a chain's step built from such distributions). A lazy term
of the expression that the tape recorded under no form raises ``NotOnTapeError`` rather
than giving the unit of ``sum_op``; a funsor outside the expression maps to that unit (its
adjoint is zero), as in funsor's ``defaultdict``.

Example:
    >>> adj = Adjoints(fc.Number(float("-inf")))
    >>> adj[fc.Variable("x", fc.Real)]  # nothing recorded: the unit of logaddexp
    Number(-inf, 'real')
"""

from __future__ import annotations

from typing import Any

from funsor_core.algorithms.adjoint.kinds import NotOnTapeError, unrecorded
from funsor_core.engine.protocol import children
from funsor_core.terms.base import Funsor, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["Adjoints", "canonical_key"]


def canonical_key(x: Funsor) -> Any:
    """What identifies a funsor for the tape: an atom by its cons-hashing key (a Tensor that a
    rule built with ``Tensor.make`` and the equal one rebuilt by ``reinterpret`` are one
    leaf), any other term by identity (terms are cons-hashed).

    Example:
        >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> canonical_key(t) == canonical_key(fc.reinterpret(t))
        True
    """
    if type(x) is Contraction:
        if all(type(t)._atom for t in x.terms):
            # A value that is a sum (or product) of atoms, as Gaussian + Tensor: the same sum
            # of equal atoms rebuilt by ``reinterpret`` is the same funsor.
            return (Contraction, x.red_op, x.bin_op, x.reduced_vars,
                    tuple(canonical_key(t) for t in x.terms))
        return id(x)
    cons = type(x)._cons_key
    if cons is not None:
        return (type(x), cons(x._args))
    return id(x)


class Adjoints(dict):
    """The result of a backward pass: a dict from funsors to their adjoints, looked up by
    ``canonical_key`` (an equal atom finds the same entry); a funsor that received nothing
    maps to the unit of ``sum_op``, as funsor's ``defaultdict`` does, but a lazy term of the
    expression that the tape recorded under no form raises ``NotOnTapeError``.

    Example:
        >>> Adjoints(fc.Number(0.0))[fc.Variable("x", fc.Real)]
        Number(0.0, 'real')
    """

    def __init__(self, zero) -> None:
        super().__init__()
        self._zero, self._unrecorded = zero, ""  # the class of an expression given evaluated
        self._index: dict = {}
        self._blocked: dict = {}  # canonical key -> why its adjoint is unknown
        self._tape, self._expr = None, None  # for a lookup that finds nothing (_unknown)
        self._forms: dict = {}  # canonical key of a term as written -> that of its leaf value
        self._shared: set = set()  # canonical keys of forms that several recorded terms share

    def block(self, key, blocked: str, ring) -> None:
        """Mark the adjoint of the funsor of canonical key ``key`` as unknown: it passes
        through ``blocked``, a term without a backward rule; reading it raises
        ``NotImplementedError``."""
        self._blocked[key] = _blocked_message(blocked, ring)

    def __getitem__(self, key):
        if (self._blocked or self._shared) and isinstance(key, Funsor):
            canon = canonical_key(key)
            message = self._blocked.get(canon)
            if message is not None:
                raise NotImplementedError(message)
            if canon in self._shared and not isinstance(key, Variable):
                raise NotOnTapeError(
                    f"the adjoint of {key!r:.80} is unknown: the expression computed its value "
                    "in two places, and the tape cannot tell which of the two is asked for; "
                    "ask for the adjoint of the term that uses both")
        return dict.__getitem__(self, key)

    def add(self, key: Funsor, value, sum_op) -> None:
        canon = canonical_key(key)
        old_key = self._index.get(canon)
        if old_key is None:
            self._index[canon] = key
            dict.__setitem__(self, key, value)
        else:
            dict.__setitem__(self, old_key, sum_op(dict.__getitem__(self, old_key), value))

    def __missing__(self, key):
        canon = canonical_key(key) if isinstance(key, Funsor) else None
        found = self._index.get(self._forms.get(canon, canon))
        if found is None and self._unrecorded and not isinstance(key, Variable):
            raise unrecorded(self._unrecorded, key)  # a factor of an evaluated expression
        if found is None and self._unknown(key):
            raise NotOnTapeError(
                f"the adjoint of {key!r:.80} is unknown: it is a term of the expression, but "
                "the tape recorded it under no form it can name (it evaluated to a value that "
                "another term gave, or to a constant); ask for the adjoint of its arguments")
        return self._zero if found is None else dict.__getitem__(self, found)

    def __contains__(self, key) -> bool:
        if not isinstance(key, Funsor):
            return False
        canon = canonical_key(key)
        return canon in self._index or self._forms.get(canon) in self._index

    def _unknown(self, key) -> bool:
        # A lazy term of the expression that the tape recorded under no form: the unit of
        # sum_op would be a silent wrong answer. A funsor outside the expression, or one
        # recorded that received nothing, has adjoint zero (funsor's defaultdict).
        if self._expr is None or not isinstance(key, Funsor) or type(key)._atom:
            return False
        canon = canonical_key(key)
        recorded = {canonical_key(k) for node in self._tape.tape
                    for k in (node.lazy, node.output, *node.aliases)}
        if canon in recorded or canon in self._forms:
            return False
        seen, todo = set(), [self._expr]
        while todo:
            term = todo.pop()
            if id(term) not in seen:
                seen.add(id(term))
                if canonical_key(term) == canon:
                    return True
                todo.extend(children(term))
        return False

    def get(self, key, default=None):
        return self[key] if key in self else default


def _blocked_message(blocked: str, ring) -> str:
    return (f"this adjoint passes through a {blocked}, which has no backward rule in the "
            f"semiring ({ring.sum_op}, {ring.prod_op}); the forward computation may use sum_op "
            "and prod_op (and their reductions), substitution, Cat, Scatter, Align and "
            "Markov products")
