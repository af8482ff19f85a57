"""Costs before running: the memory budget of compiled eliminations.

A plan knows, before any array is allocated, the bytes its messages need at their peak
(``stats()["peak_bytes"]``). A plan above the budget raises ``MemoryBudgetError`` naming its
largest cluster. The budget is, in order: the ``memory_budget=`` argument, the innermost
``memory_budget(...)`` context, the machine's available memory. Ordinary contraction plans
(``algorithms.contract.plan``) check their largest intermediate the same way
(``check_intermediate``) before contracting.

Example:
    >>> with memory_budget(1024):
    ...     get_memory_budget()
    1024
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
from collections.abc import Iterator

__all__ = ["MemoryBudgetError", "memory_budget", "get_memory_budget", "check_budget",
           "check_intermediate", "BUDGETS"]

# The active ``memory_budget`` contexts, innermost last (a hot path reads its truth value).
BUDGETS: list[int] = []
_BUDGET = BUDGETS


class MemoryBudgetError(MemoryError):
    """A plan needs more memory than the budget allows; raised before allocating.

    Example:
        >>> issubclass(MemoryBudgetError, MemoryError)  # see check_budget for one raised
        True
    """


def _available_bytes() -> int:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # no sysconf: do not limit
        return 2 ** 62


def get_memory_budget() -> int:
    """The active budget in bytes: the innermost ``memory_budget`` context, else the memory
    available now.

    Example:
        >>> with memory_budget(4096):
        ...     with memory_budget(1024):
        ...         inner = get_memory_budget()
        ...     outer = get_memory_budget()
        >>> inner, outer, get_memory_budget() > 0
        (1024, 4096, True)
    """
    return _BUDGET[-1] if _BUDGET else _available_bytes()


@contextlib.contextmanager
def memory_budget(nbytes: int) -> Iterator[None]:
    """Limit eliminations inside the block: compiled ones to ``nbytes`` of messages at a
    time, ordinary contractions (``fc.sum_product``, ``fc.einsum``) to ``nbytes`` for their
    largest intermediate; either raises ``MemoryBudgetError`` before allocating.

    Example:
        >>> with memory_budget(2 ** 20):
        ...     get_memory_budget() == 2 ** 20
        True
    """
    nbytes = _positive_bytes(nbytes, f"memory_budget({nbytes!r})")
    _BUDGET.append(nbytes)
    try:
        yield
    finally:
        _BUDGET.pop()


def _positive_bytes(nbytes, what: str) -> int:
    # A number of bytes: an int or a whole float (2 ** 30, 1e9); "1GB" is refused here rather
    # than by int() ("invalid literal for int() with base 10").
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Real):
        raise TypeError(f"{what}: give a positive number of bytes, e.g. 2 ** 30 for 1 GiB; "
                        f"got {type(nbytes).__name__}")
    if not nbytes >= 1:
        raise ValueError(f"{what}: give a positive number of bytes, e.g. 2 ** 30 for 1 GiB")
    return int(min(nbytes, 2 ** 62))  # math.inf: no budget


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
    budget = get_memory_budget() if budget is None else _positive_bytes(
        budget, f"memory_budget={budget!r}")
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


# Below this many bytes an intermediate is not checked against the machine's free memory (a
# system call) unless a ``memory_budget`` context is active: small contractions pay nothing.
_UNCHECKED_BYTES = 1 << 28


def check_intermediate(entries: int, cluster: dict, itemsize: int = 8) -> None:
    """Raise ``MemoryBudgetError`` before contracting when the largest intermediate
    (``entries`` numbers, of the step whose names and sizes are ``cluster``) is over the
    budget: the ``memory_budget`` context, else (from 256 MiB) the free memory.

    Example:
        >>> with memory_budget(1024):
        ...     check_intermediate(2 ** 10, {"i": 32, "j": 32})
        Traceback (most recent call last):
        ...
        funsor_core.algorithms.compiled.cost.MemoryBudgetError: this elimination needs 8.0 KiB ...
    """
    need = entries * itemsize
    if _BUDGET:
        if need <= _BUDGET[-1]:
            return
    elif need <= _UNCHECKED_BYTES:
        return
    rank = math.log2(max(math.prod(cluster.values()), 1))
    check_budget({"peak_bytes": need, "largest_cluster": cluster, "max_binary_rank": rank})
