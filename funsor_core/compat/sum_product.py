"""funsor's private ``funsor.sum_product._partition``, which funsor 0.4.8's tests import.

Example:
    >>> from funsor_core.sum_product import _partition
    >>> a = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
    >>> b = fc.Tensor(np.zeros((2, 3)), {"a": fc.Bint[2], "b": fc.Bint[3]})
    >>> [(len(terms), sorted(names)) for terms, names in _partition([a, b], {"a"})]
    [(2, ['a'])]
"""

from __future__ import annotations

from funsor_core.algorithms.plates import _components

__all__ = ["_partition"]


def _partition(terms, sum_vars) -> list:
    """The connected components of ``terms`` linked by shared names of ``sum_vars``, as
    ``(tuple of terms, frozenset of those names)`` pairs (a term sharing none is alone).

    Example:
        >>> x = fc.Tensor(np.zeros(2), {"a": fc.Bint[2]})
        >>> len(_partition([x, x(a="b")], set()))
        2
    """
    sum_vars = frozenset(sum_vars)
    return [(tuple(group), frozenset(names)) for group, names in _components(terms, sum_vars)]
