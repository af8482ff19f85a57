"""How a Markov product is evaluated: the strategy setting, the cost model and the schedule.

Two strategies compute the same product of ``T`` steps:

- **parallel**: contract adjacent pairs of steps at once, halving the time axis each round
  (``ceil(log2 T)`` rounds of batched contractions; Appendix A, Algorithm 1 of "Functional
  Tensors for Probabilistic Programming"). Depth ``log T``, but each contraction composes two
  full transition matrices: ``O(T K^3)`` work for ``K`` states.
- **sequential**: fold the steps one after the other. Depth ``T``, and when a boundary of
  the chain is summed out (a filter: an HMM's forward algorithm, a Kalman filter) the carry
  is a vector, ``O(T K^2)`` work.

On a CPU the work decides once the per-call overhead is paid, on a GPU the depth decides.
``choose_strategy`` is the cost model ``"auto"`` uses; a user forces a strategy per term
(``MarkovProduct(..., strategy="sequential")``) or for a block (``markov_strategy``).

Example:
    >>> with markov_strategy("sequential"):
    ...     get_markov_strategy()
    'sequential'
    >>> get_markov_strategy()
    'auto'
    >>> parallel_rounds(1000)
    10
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from dataclasses import dataclass

from funsor_core.terms.markov import STRATEGIES

__all__ = ["markov_strategy", "set_markov_strategy", "get_markov_strategy", "parallel_rounds",
           "ChainProblem", "choose_strategy", "resolve_strategy", "device_of", "LAST_CHOICE"]

_STRATEGY: contextvars.ContextVar = contextvars.ContextVar("funsor_core_markov_strategy")
_DEFAULT = ["auto"]

# The last decision of resolve_strategy, (strategy, reason): benchmarks print it.
LAST_CHOICE: list = [None]


def _checked(name: str) -> str:
    if name not in STRATEGIES:
        raise ValueError(f"unknown Markov product strategy {name!r}; choose one of {STRATEGIES}")
    return name


def set_markov_strategy(name: str) -> None:
    """Set the strategy of Markov products whose term names none, in this thread or task.

    Example:
        >>> set_markov_strategy("auto")
    """
    _STRATEGY.set(_checked(name))


def get_markov_strategy() -> str:
    """The strategy in force: ``"auto"``, ``"parallel"`` or ``"sequential"``.

    Example:
        >>> get_markov_strategy()
        'auto'
    """
    return _STRATEGY.get(_DEFAULT[0])


@contextlib.contextmanager
def markov_strategy(name: str):
    """Evaluate the Markov products of a block with strategy ``name``.

    Example:
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"t": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> with markov_strategy("sequential"):
        ...     r = fc.MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"})
        >>> r.data.tolist()
        [[16.0, 16.0], [16.0, 16.0]]
    """
    token = _STRATEGY.set(_checked(name))
    try:
        yield
    finally:
        _STRATEGY.reset(token)


def parallel_rounds(duration: int) -> int:
    """Sequential rounds of the parallel strategy for ``duration`` steps: ``ceil(log2 T)``.

    Example:
        >>> [parallel_rounds(t) for t in (1, 2, 3, 4, 5, 100000)]
        [0, 1, 2, 2, 3, 17]
    """
    return max(0, math.ceil(math.log2(duration))) if duration > 1 else 0


def device_of(array) -> str:
    """``"cpu"``, ``"cuda"``, ``"gpu"``, ``"tpu"``...: where an array lives (duck-typed, so the
    core imports no array library); ``"cpu"`` when it cannot tell (a traced jax value).

    Example:
        >>> device_of(np.zeros(2))
        'cpu'
    """
    try:
        dev = getattr(array, "device", None)
        if callable(dev):
            dev = dev()
        if dev is None and hasattr(array, "devices"):
            dev = next(iter(array.devices()))
        kind = getattr(dev, "type", None) or getattr(dev, "platform", None)
    except Exception:  # a tracer has no device
        kind = None
    return str(kind) if kind else "cpu"


@dataclass(frozen=True)
class ChainProblem:
    """What the cost model knows about a chain: all static (shapes, backend, mode).

    Attributes:
        backend: ``"numpy"``, ``"torch"`` or ``"jax"``.
        compiled: whether it runs compiled (under ``jax.jit``, or eager jax, which runs as
            one compiled kernel) rather than op by op from Python.
        device: ``device_of`` an array of the chain.
        state: the size of the state (``K`` for a discrete chain; the real dimension of the
            state for a Gaussian chain).
        batch: the number of independent chains (product of the batch sizes).
        duration: ``T``.
        vector: whether a boundary is summed, so the sequential carry is a vector.
        gaussian: a Gaussian chain (each step is a small QR instead of a matrix product).
    """

    backend: str
    compiled: bool
    device: str
    state: int
    batch: int
    duration: int
    vector: bool = False
    gaussian: bool = False


# Seconds per backend call from Python, measured on one core (benchmarks/markov.py prints
# the figures this was fitted to): the fixed cost of one array op, and of one loop iteration
# of a compiled scan.
_CALL = {"numpy": 2e-6, "torch": 5e-6, "jax": 8e-6}
_COMPILED_ITERATION = 0.4e-6
_COMPILED_OP = 0.1e-6
# Seconds per element of a broadcast semiring contraction on one CPU core (an exp and a log
# per element for logaddexp dominate), and its speedup on a GPU.
_ELEMENT = 4e-9
_GPU_SPEEDUP = 100.0
# Array calls per sequential step and per parallel round (slices, the contraction,
# bookkeeping), refitted after the eager discrete kernels moved to probability space (a
# filter step is four calls; a round of the tree a matrix product and its rescaling, an odd
# round no longer adding a tail product: benchmarks/markov.py, 2026-11-23).
_SEQ_OPS, _PAR_OPS = 4, 3
_GAUSS_SEQ_OPS, _GAUSS_PAR_OPS = 14, 18


def _costs(p: ChainProblem) -> tuple[float, float]:
    k, b, t = max(p.state, 1), max(p.batch, 1), max(p.duration, 1)
    rounds = parallel_rounds(t)
    if p.gaussian:
        # Combining two steps is a QR of a (3k x 3k) system; the filter's carry is k wide.
        par_work = t * b * (3 * k) ** 3
        seq_work = t * b * ((2 * k) ** 3 if p.vector else (3 * k) ** 3)
        seq_ops, par_ops = _GAUSS_SEQ_OPS, _GAUSS_PAR_OPS
    else:
        par_work = t * b * k ** 3
        seq_work = t * b * (k ** 2 if p.vector else k ** 3)
        seq_ops, par_ops = _SEQ_OPS, _PAR_OPS
    element = _ELEMENT / (_GPU_SPEEDUP if p.device not in ("cpu",) else 1.0)
    if p.compiled:
        seq_fixed = t * _COMPILED_ITERATION
        # A loop iteration on a GPU launches kernels: far dearer than on a CPU.
        if p.device != "cpu":
            seq_fixed *= 20
        par_fixed = rounds * par_ops * _COMPILED_OP
    else:
        call = _CALL.get(p.backend, 5e-6)
        seq_fixed = t * seq_ops * call
        # A Gaussian tree's odd rounds add a tail contraction; a discrete one's concatenate.
        par_fixed = (2 * rounds if p.gaussian else rounds) * par_ops * call
    # The parallel strategy composes transition matrices at every round, about 2x the work of
    # one pass (a geometric series over the rounds).
    return seq_fixed + seq_work * element, par_fixed + 2 * par_work * element


@functools.lru_cache(maxsize=1024)
def choose_strategy(problem: ChainProblem) -> tuple[str, str]:
    """The cheaper strategy for ``problem`` under the cost model, and why.

    Example:
        >>> choose_strategy(ChainProblem("torch", False, "cpu", 4, 1, 1000))[0]
        'parallel'
        >>> choose_strategy(ChainProblem("torch", False, "cpu", 32, 16, 1000, vector=True))[0]
        'sequential'
    """
    seq, par = _costs(problem)
    strategy = "parallel" if par < seq else "sequential"
    reason = (f"{problem.backend}{' compiled' if problem.compiled else ''} on "
              f"{problem.device}, K={problem.state}, batch={problem.batch}, "
              f"T={problem.duration}{', filter' if problem.vector else ''}: estimated "
              f"sequential {seq * 1e3:.3g} ms, parallel {par * 1e3:.3g} ms")
    return strategy, reason


def resolve_strategy(requested: str | None, problem: ChainProblem) -> str:
    """The strategy to run: the term's own, else the block's setting, with ``"auto"`` decided
    by ``choose_strategy``. Records the decision in ``LAST_CHOICE``.

    Example:
        >>> resolve_strategy("sequential", ChainProblem("numpy", False, "cpu", 2, 1, 8))
        'sequential'
        >>> LAST_CHOICE[0][1]
        'forced'
    """
    name = requested or get_markov_strategy()
    if name != "auto":
        LAST_CHOICE[0] = (name, "forced")
        return name
    if problem.duration <= 2:
        LAST_CHOICE[0] = ("sequential", "T <= 2: one contraction either way")
        return "sequential"
    name, reason = choose_strategy(problem)
    LAST_CHOICE[0] = (name, reason)
    return name
