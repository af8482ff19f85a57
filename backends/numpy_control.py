"""Control flow and platform facts of the numpy backend: what algorithms that loop over
arrays ask of a backend (``scan``, ``cond``, ``jit``, ``checkpoint``, ``differentiate_as``,
``is_traced``, ``COMPILES``...) instead of asking its name. ``backends.numpy`` re-exports them.

Example:
    >>> COMPILES, float(scan(lambda c, x: (c + x, None), 0.0, np.ones(3))[0])
    (False, 3.0)
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from backends.eager_control import loop_scan

# What algorithms ask of a backend instead of its name: numpy runs op by op from Python, so
# its loops are Python loops and compiling, checkpointing and custom derivatives are the
# identity (numpy has no autodiff to steer).
# Seconds of one array call from Python on one core, for the chains' cost model (fitted to
# benchmarks/markov.py's rounds against T).
CALL_SECONDS = 2e-6
COMPILES = False  # whole programs are not traced and compiled: values can be read anywhere
DIFFERENTIABLE = False  # no autodiff: algorithms that read derivatives refuse numpy arrays


def scan(fn, init, xs, reverse: bool = False):
    """``carry, y = fn(carry, x)`` over the first axis of ``xs`` (an array or a tuple of
    them), as a Python loop; returns the last carry and the ``y`` stacked (None if None).

    Example:
        >>> scan(lambda c, x: (c + x, None), 0.0, np.arange(4.0))[0]
        np.float64(6.0)
    """
    return loop_scan(fn, init, xs, reverse, stack=np.stack)


def platform() -> str:
    """Where numpy computes: ``"cpu"``.

    Example:
        >>> platform()
        'cpu'
    """
    return "cpu"


# ``np.maximum.reduce`` is what ``np.amax`` calls after its Python wrapper (~6 against ~1 us on
# a (1, 4) array); NaN propagates the same way.
def _np_amax2(x):
    return np.maximum.reduce(x, axis=(-2, -1), keepdims=True)


# The few raw array calls of a hot eager loop (a round of a linear-space chain tree), bound
# once: going through ``ops`` dispatch was a quarter of a small chain's time (K = 4, T = 100).
LOOP_FNS = SimpleNamespace(
    matmul=np.matmul, exp=np.exp, log=np.log, cat=lambda xs: np.concatenate(xs, 0),
    unbind=list, total=lambda x: np.sum(x, axis=0), max2=_np_amax2,
    max1=lambda x: np.maximum.reduce(x, axis=-1, keepdims=True),
    sum=lambda x, axis, keep: np.sum(x, axis=axis, keepdims=keep),
    smallest=lambda x: float(np.minimum.reduce(x, axis=None)))
