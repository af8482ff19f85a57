"""The declared families, by name, and the hooks called for each (a family declared later,
by a user, gets the same rules and conversions as the built-in ones).

Example:
    >>> seen = []
    >>> on_family(seen.append)
    >>> "Normal" in {c.__name__ for c in seen}
    True
    >>> _FAMILY_HOOKS.remove(seen.append)
"""

from __future__ import annotations

__all__ = ["FAMILIES", "on_family", "announce_family"]

FAMILIES: dict[str, type] = {}  # every declared family, by name
_FAMILY_HOOKS: list = []


def announce_family(cls: type) -> None:
    """Record a family (the base class calls this when one is declared) and run the hooks.

    Example:
        >>> FAMILIES["Normal"].__name__
        'Normal'
    """
    FAMILIES.setdefault(cls.__name__, cls)
    for hook in _FAMILY_HOOKS:
        hook(cls)


def on_family(hook) -> None:
    """Call ``hook(cls)`` for every family, now and as new ones are declared (the exact rules
    register themselves for each family this way).

    Example:
        >>> names = []
        >>> on_family(lambda cls: names.append(cls.__name__))
        >>> "Normal" in names and "Categorical" in names
        True
        >>> del _FAMILY_HOOKS[-1]
    """
    _FAMILY_HOOKS.append(hook)
    for cls in list(FAMILIES.values()):
        hook(cls)
