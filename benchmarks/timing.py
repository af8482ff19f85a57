"""Shared timing and table helpers for the benchmark scripts (run as ``python benchmarks/X.py``,
which puts this folder on ``sys.path``)."""

from __future__ import annotations

import math
import time
import timeit


def best_us(fn, number: int = 2000, repeat: int = 5) -> float:
    """Best-of-``repeat`` mean time of ``fn()`` in microseconds, after one warm-up call."""
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def best_ms(fn, repeats: int = 5, clock=time.perf_counter) -> float:
    """Best time of one ``fn()`` call in milliseconds over ``repeats`` calls, after a warm-up
    call (for calls long enough that one is a measurement); ``clock=time.process_time``
    counts this process's CPU time only (one thread: what a loaded machine disturbs least)."""
    fn()
    best = math.inf
    for _ in range(repeats):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best * 1e3


def peer_columns(peer: float | None, base: float) -> str:
    """The "peer time, peer / base ratio" columns of a row, or dashes when the peer is absent."""
    if peer is None:
        return f"{'-':>13} {'-':>6}"
    return f"{peer:13.1f} {peer / base:6.1f}"
