"""The Delta atom: a point mass ``Delta(name, point, log_density=0)``.

As a log density over the new input ``name`` it is ``log_density`` where ``name == point`` and
``-inf`` elsewhere. Several independent point masses share one atom via funsor's ``terms``
form ``Delta(((name, (point, log_density)), ...))``. Rules: ``interpretations/exact/delta.py``.

Where we differ from funsor 0.4.8: reducing a Delta with ``logaddexp`` over its names gives
its ``log_density`` (the mass of the point), where funsor drops it and gives 0.

Example:
    >>> d = fc.Delta("x", fc.Number(1.5), 0.25)
    >>> d.inputs, d(x=1.5).data
    ({'x': Real}, 0.25)
"""

from __future__ import annotations

from funsor_core.domains import Real
from funsor_core.terms import DomainError, Funsor, merge_inputs, to_funsor

__all__ = ["Delta"]


class Delta(Funsor):
    """Point masses: ``Delta(name, point, log_density=0)`` or ``Delta(((name, (point,
    log_density)), ...))``.

    Args:
        name: the new input, whose domain is ``point.output``.
        point: a funsor (arrays and numbers are converted with ``to_funsor``).
        log_density: a real scalar funsor (or number), the log mass at the point.

    Example:
        >>> p = fc.Tensor(np.array([0.0, 1.0]), {"i": fc.Bint[2]})
        >>> fc.Delta("x", p).inputs
        {'x': Real, 'i': Bint[2]}
    """

    __slots__ = ("terms", "fresh")
    _fields = ("terms",)
    _atom = True

    @classmethod
    def _prepare(cls, name, point=None, log_density=0.0):
        if isinstance(name, str):
            if point is None:
                raise TypeError(f"Delta('{name}', point) needs a point")
            terms = ((name, (point, log_density)),)
        else:
            if point is not None:
                raise TypeError("Delta(terms) takes a tuple of (name, (point, log_density))")
            terms = tuple(name)
        result = []
        names = set()
        for item in terms:
            name, value = item
            if isinstance(value, tuple):
                point, log_density = value
            else:
                point, log_density = value, 0.0
            if not isinstance(name, str):
                raise TypeError(f"a Delta's name must be a str, got {name!r}")
            if name in names:
                raise DomainError(f"Delta names '{name}' twice")
            names.add(name)
            point = to_funsor(point)
            log_density = to_funsor(log_density)
            if log_density.output.dtype != "real" or log_density.output.shape:
                raise DomainError(f"the log_density of Delta '{name}' must be a real scalar, "
                                  f"got output {log_density.output}")
            if name in point.inputs or name in log_density.inputs:
                raise DomainError(f"the point of Delta '{name}' cannot depend on '{name}'")
            result.append((name, (point, log_density)))
        if not result:
            raise ValueError("Delta needs at least one (name, (point, log_density))")
        return (tuple(result),)

    def _init(self, terms):
        self._args = (terms,)
        self.terms = terms
        self.fresh = frozenset(name for name, _ in terms)
        inputs: dict = {name: point.output for name, (point, _) in terms}
        for _, (point, log_density) in terms:
            inputs = merge_inputs(inputs, point.inputs, "Delta")
            inputs = merge_inputs(inputs, log_density.inputs, "Delta")
        self.inputs = inputs
        self.output = Real
