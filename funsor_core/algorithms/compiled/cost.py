"""Costs before running: the memory budget of compiled eliminations.

A plan knows, before any array is allocated, the bytes its messages need at their peak
(``stats()["peak_bytes"]``). A plan above the budget raises ``MemoryBudgetError`` naming its
largest cluster. The budget is, in order: the ``memory_budget=`` argument, the innermost
``memory_budget(...)`` context, the machine's available memory.

Example:
    >>> with memory_budget(1024):
    ...     get_memory_budget()
    1024
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["MemoryBudgetError", "memory_budget", "get_memory_budget", "check_budget"]

_BUDGET: list[int] = []


class MemoryBudgetError(MemoryError):
    """A plan needs more memory than the budget allows; raised before allocating."""


def _available_bytes() -> int:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf: do not limit
        return 2 ** 62


def get_memory_budget() -> int:
    """The active budget in bytes: the innermost ``memory_budget`` context, else the memory
    available now."""
    return _BUDGET[-1] if _BUDGET else _available_bytes()


@contextlib.contextmanager
def memory_budget(nbytes: int) -> Iterator[None]:
    """Limit compiled eliminations inside the block to ``nbytes`` of messages at a time.

    Example:
        >>> with memory_budget(2 ** 20):
        ...     get_memory_budget() == 2 ** 20
        True
    """
    if int(nbytes) <= 0:
        raise ValueError(f"memory_budget({nbytes!r}): give a positive number of bytes")
    _BUDGET.append(int(nbytes))
    try:
        yield
    finally:
        _BUDGET.pop()


def _human(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if nbytes < 1024 or unit == "EiB":
            return f"{nbytes:.1f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.1f}"


def check_budget(stats: dict, budget: int | None = None) -> None:
    """Raise ``MemoryBudgetError`` when ``stats["peak_bytes"]`` exceeds the budget.

    Example:
        >>> check_budget({"peak_bytes": 10, "largest_cluster": {"i": 2},
        ...               "max_binary_rank": 1.0}, budget=5)
        Traceback (most recent call last):
        ...
        funsor_core.algorithms.compiled.cost.MemoryBudgetError: this elimination needs 10.0 B ...
    """
    budget = get_memory_budget() if budget is None else int(budget)
    need = stats["peak_bytes"]
    if need <= budget:
        return
    cluster = stats["largest_cluster"]
    names = ", ".join(f"{n}: Bint[{s}]" for n, s in cluster.items())
    raise MemoryBudgetError(
        f"this elimination needs {_human(need)} of messages at its peak, over the memory "
        f"budget of {_human(budget)}. Its largest cluster has {len(cluster)} names "
        f"(binary rank {stats['max_binary_rank']:.1f}): {{{names}}}. Nothing was allocated. "
        "Declare deterministic factors with fc.functional(...) so the jointree planner can "
        "shrink clusters, try plan(..., method='jointree'), or raise the budget with "
        "memory_budget=... or `with fc.memory_budget(nbytes):`.")
