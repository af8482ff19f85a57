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

Every strategy threshold of the chains lives here, as a named constant citing the row of
``benchmarks/README.md`` that justifies it; a decision is a ``ChainChoice`` record (strategy,
array kernel, reason) that a caller reads with ``recorded_choices``.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass

from funsor_core.engine.backend import backend_module, backend_of
from funsor_core.engine.cache import cached
from funsor_core.terms.markov import STRATEGIES

__all__ = ["markov_strategy", "set_markov_strategy", "get_markov_strategy", "parallel_rounds",
           "ChainProblem", "ChainChoice", "chain_problem", "choose_strategy", "choose_chain",
           "resolve_strategy", "device_of", "recorded_choices", "record_choice"]

_STRATEGY: contextvars.ContextVar = contextvars.ContextVar("funsor_core_markov_strategy")
_DEFAULT = ["auto"]
# The log of ``recorded_choices`` in force (None: nobody is listening).
_CHOICES: contextvars.ContextVar = contextvars.ContextVar("funsor_core_chain_choices",
                                                          default=None)


@dataclass(frozen=True)
class ChainChoice:
    """One decision about a chain: its ``strategy`` (``"parallel"`` or ``"sequential"``), the
    array ``kernel`` that runs it (None for a decision of the strategy alone), the kernel
    whose ``derivative`` it takes where that differs (None: its own), and why.

    Example:
        >>> ChainChoice("sequential", None, "forced").strategy
        'sequential'
    """

    strategy: str
    kernel: str | None
    reason: str
    derivative: str | None = None


@contextlib.contextmanager
def recorded_choices():
    """Collect every ``ChainChoice`` made in the block (in this thread or task), in order: a
    chain's strategy (``kernel`` None), then, for a discrete chain on arrays, its kernel.

    Example:
        >>> t = fc.Tensor(np.ones((5, 2, 2)), {"t": fc.Bint[5], "x": fc.Bint[2],
        ...                                    "y": fc.Bint[2]})
        >>> with recorded_choices() as log:
        ...     _ = fc.MarkovProduct(ops.add, ops.mul, t, "t", {"x": "y"}, strategy="parallel")
        >>> log[0].strategy, log[0].reason
        ('parallel', 'forced')
    """
    log: list = []
    token = _CHOICES.set(log)
    try:
        yield log
    finally:
        _CHOICES.reset(token)


def record_choice(choice: ChainChoice) -> ChainChoice:
    """Append ``choice`` to the log of the enclosing ``recorded_choices`` (if any).

    Example:
        >>> record_choice(ChainChoice("parallel", "tree", "forced")).kernel
        'tree'
    """
    log = _CHOICES.get()
    if log is not None:
        log.append(choice)
    return choice


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
        backend: the backend's name (its module's ``NAME``), to read its call cost.
        compiled: whether it runs compiled (the backend's ``COMPILES``: eager jax too runs
            a chain as one compiled kernel) rather than op by op from Python.
        device: ``device_of`` an array of the chain.
        state: the size of the state (``K`` for a discrete chain; the real dimension of the
            state for a Gaussian chain).
        batch: the number of independent chains (product of the batch sizes).
        duration: ``T``.
        vector: whether a boundary is summed, so the sequential carry is a vector.
        gaussian: a Gaussian chain (each step is a small QR instead of a matrix product).

    Example:
        1,000 steps op by op from Python: the log-depth tree wins.

        >>> p = ChainProblem("numpy", False, "cpu", state=4, batch=1, duration=1000)
        >>> choose_strategy(p)[0]
        'parallel'
    """

    backend: str
    compiled: bool
    device: str
    state: int
    batch: int
    duration: int
    vector: bool = False
    gaussian: bool = False


def chain_problem(array, state: int, batch: int, duration: int, vector: bool = False,
                  gaussian: bool = False) -> ChainProblem:
    """The ``ChainProblem`` of a chain one of whose arrays is ``array``: its backend, whether
    that compiles, and its device, read off the array.

    Example:
        >>> p = chain_problem(np.zeros(2), 4, 1, 100)
        >>> p.backend, p.compiled, p.device
        ('numpy', False, 'cpu')
    """
    backend = backend_of(array)
    return ChainProblem(backend.NAME, backend.COMPILES, device_of(array), state, batch,
                        duration, vector, gaussian)


# -- the strategy: parallel against sequential ---------------------------------------------------
# Seconds per backend call from Python, measured on one core: the fixed cost of one array op
# (the backend's ``CALL_SECONDS``; this default for a backend that does not say), and of one
# loop iteration and one op of a compiled scan. Fitted to benchmarks/README.md, "Markov
# products", the table "Rounds against T" (torch eager: the tree from T = 10, 0.194 against
# 0.301 ms) and the `jax.jit` grid (compiled: sequential in every row, e.g. K = 4, T = 1000,
# B = 1 fwd 0.0826 ms).
_DEFAULT_CALL = 5e-6
_COMPILED_ITERATION = 0.4e-6
_COMPILED_OP = 0.1e-6
# Seconds per element of a broadcast semiring contraction on one CPU core (an exp and a log
# per element for logaddexp dominate), and its speedup on a GPU (a guess: README, "Markov
# products": "No GPU was lent to this task: the GPU crossover ... is not measured").
_ELEMENT = 4e-9
_GPU_SPEEDUP = 100.0
# Array calls per sequential step and per parallel round (slices, the contraction,
# bookkeeping), refitted after the eager discrete kernels moved to probability space (a
# filter step is four calls; a round of the tree a matrix product and its rescaling, an odd
# round no longer adding a tail product: README, "Markov products", "Rounds against T",
# rerun after the refit). The Gaussian ones: README, "Markov products", the Kalman table
# (numpy and torch eager pick the tree, 0.62x and 0.97x the hand-written filter at T = 100;
# `jax.jit` the filter).
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
        call = getattr(backend_module(p.backend), "CALL_SECONDS", _DEFAULT_CALL)
        seq_fixed = t * seq_ops * call
        # A Gaussian tree's odd rounds add a tail contraction; a discrete one's concatenate.
        par_fixed = (2 * rounds if p.gaussian else rounds) * par_ops * call
    # The parallel strategy composes transition matrices at every round, about 2x the work of
    # one pass (a geometric series over the rounds). A discrete chain without a boundary
    # carries a matrix either way: both compose T - 1 matrices (funsor's
    # sequential_sum_product, benchmarks/idioms.py: K = 32, batch 16 on torch, the fold
    # 3.4 s against the tree's 0.8 s).
    par_factor = 1 if not (p.vector or p.gaussian) else 2
    return seq_fixed + seq_work * element, par_fixed + par_factor * par_work * element


# A compiled discrete chain of two states on a CPU folds sequentially up to this many steps
# (batch 1, or a filter's carry of at most ``TWO_STATE_FILTER_CARRY`` steps x batch): a step
# of XLA:CPU's fold costs ~0.1 us forward and ~0.15 us with its derivative there, the tree
# ~8 us to set up and 1-2 us a round, which ``_costs`` (fitted forward-only on larger chains)
# does not see. From three states, or a batch in a matrix carry, the fold's reverse pass
# costs 5-8x its forward one and the tree is as fast or faster with gradients (README,
# "Two-state chains under jax.jit fold": K = 2, T = 10, batch 1, value and gradient 14-24 ->
# 10 us, forward 18 -> 8 us).
TWO_STATE_FOLD_STEPS = 100
TWO_STATE_FILTER_CARRY = 120


def _two_state_fold(p: ChainProblem) -> bool:
    if not p.compiled or p.gaussian or p.device != "cpu" or p.state != 2:
        return False
    if p.duration <= TWO_STATE_FOLD_STEPS and p.batch <= 1:
        return True
    return p.vector and p.duration * p.batch <= TWO_STATE_FILTER_CARRY


@cached("chains.cost_model.strategies", maxsize=1024)
def choose_strategy(problem: ChainProblem) -> tuple[str, str]:
    """The cheaper strategy for ``problem`` under the cost model, and why.

    Example:
        >>> choose_strategy(chain_problem(np.zeros(1), 4, 1, 1000))[0]
        'parallel'
        >>> choose_strategy(chain_problem(np.zeros(1), 32, 16, 1000, vector=True))[0]
        'sequential'
    """
    if _two_state_fold(problem):
        return "sequential", (f"{problem.backend} compiled on {problem.device}, two states, "
                              f"batch={problem.batch}, T={problem.duration}"
                              f"{', filter' if problem.vector else ''}: a short fold")
    seq, par = _costs(problem)
    strategy = "parallel" if par < seq else "sequential"
    reason = (f"{problem.backend}{' compiled' if problem.compiled else ''} on "
              f"{problem.device}, K={problem.state}, batch={problem.batch}, "
              f"T={problem.duration}{', filter' if problem.vector else ''}: estimated "
              f"sequential {seq * 1e3:.3g} ms, parallel {par * 1e3:.3g} ms")
    return strategy, reason


def choose_chain(requested: str | None, problem: ChainProblem) -> ChainChoice:
    """The strategy to run, as a ``ChainChoice``: the term's own, else the block's setting,
    with ``"auto"`` decided by ``choose_strategy``. Recorded for ``recorded_choices``.

    Example:
        >>> choose_chain("sequential", chain_problem(np.zeros(1), 2, 1, 8))
        ChainChoice(strategy='sequential', kernel=None, reason='forced', derivative=None)
    """
    name = requested or get_markov_strategy()
    if name != "auto":
        return record_choice(ChainChoice(name, None, "forced"))
    if problem.duration <= 2:
        return record_choice(ChainChoice("sequential", None,
                                         "T <= 2: one contraction either way"))
    name, reason = choose_strategy(problem)
    return record_choice(ChainChoice(name, None, reason))


def resolve_strategy(requested: str | None, problem: ChainProblem) -> str:
    """The strategy of ``choose_chain``, by name.

    Example:
        >>> resolve_strategy("sequential", chain_problem(np.zeros(1), 2, 1, 8))
        'sequential'
    """
    return choose_chain(requested, problem).strategy


# -- the array kernel of a discrete chain --------------------------------------------------------
# A filter (summed first boundary, log semiring, one matrix factor) of at most this many
# numbers in all (T x batch x K) stays in the log-space scan when compiled: there the exps
# saved are few and the exact scan is leaner, forward and 3x in reverse mode (README, "Markov
# products", what changed: "tiny chains (T x batch x K <= 512) stay in the log-space scan").
TINY_FILTER_ELEMENTS = 512
# The longest compiled chain of a few states whose values come from a loop with the exps of
# each step inside it (``scan_log_filter`` or the in-loop filter); longer ones exponentiate
# all steps first (README, "Evening of 2026-11-27": at T = 10,000 the pass first was faster,
# 0.80 against 1.35 ms; the in-loop rows "K x B <= 16, T <= 2,048").
SHORT_CHAIN_STEPS = 2048
# The largest carry (batch x K) of one sequence that ``scan_log_filter`` takes (README,
# "Evening of 2026-11-27": "a carry of at most 16 numbers"; K = 4, T = 100 fwd 32 -> 25 us).
FEW_STATES = 16
# The largest carry (batch x K) whose compiled values come from the in-loop filter (README,
# 2026-11-27: "K x B <= 16, T <= 2,048", K = 4, T = 1,000 fwd 135-156 -> 87-100 us; 1.5x
# slower at K = 32 with a batch of 16).
INLOOP_CARRY = 16
# From this many steps, a compiled filter of a few states (batch x K^2 at most
# ``TREE_DERIVATIVE_STATES``) takes its derivatives from the log-depth tree (README, "The
# same session, jax.jit": K = 4, T = 10,000 fwd+bwd 6.4-6.5 -> 4.9-5.0 ms; the two cross near
# T = 4,000).
TREE_DERIVATIVE_STEPS = 4096
TREE_DERIVATIVE_STATES = 16


@cached("chains.cost_model.discrete_kernels", maxsize=1024)
def choose_discrete_kernel(strategy: str, compiles: bool, filter_form: bool, duration: int,
                           carry: int, vector: int, states: int,
                           shared: bool) -> ChainChoice:
    """The array kernel of a discrete chain (``chains.discrete._run`` runs it).

    Args:
        strategy: ``"parallel"`` or ``"sequential"``.
        compiles: the backend's ``COMPILES``.
        filter_form: a log-space filter (first boundary summed, one matrix factor, no
            vector over the prev states, ``K > 1``, ``T > 1``) that the filters can take.
        duration: ``T`` (1 for a power of one matrix).
        carry: the size of the first boundary (batch x K).
        vector: the size of the filter's carry with the factors' batch dims (batch x K).
        states: ``K``.
        shared: one transition matrix for all steps and a carry of a few numbers
            (``discrete_filter.applies``).

    Example:
        >>> choose_discrete_kernel("parallel", False, False, 100, 4, 4, 4, True).kernel
        'tree'
        >>> c = choose_discrete_kernel("sequential", True, True, 1000, 4, 4, 4, True)
        >>> c.kernel, c.derivative
        ('scan_log_filter', 'fast_log_filter')
    """
    if strategy != "sequential" and duration > 1:
        return ChainChoice(strategy, "tree", "parallel strategy: log-depth tree")
    if not filter_form:
        return ChainChoice(strategy, "sequential", "not a log-space filter: the exact fold")
    tiny = duration * carry <= TINY_FILTER_ELEMENTS
    if not compiles:
        return ChainChoice(strategy, "eager_log_filter", "eager filter: probability space "
                           "where the values show no digit is lost, else the exact fold")
    if duration <= SHORT_CHAIN_STEPS and vector == states <= FEW_STATES and shared:
        return ChainChoice(strategy, "scan_log_filter", "one short sequence of a few states",
                           "sequential" if tiny else "fast_log_filter")
    if tiny:
        return ChainChoice(strategy, "sequential", "tiny filter: the log-space scan")
    if carry <= INLOOP_CARRY and duration <= SHORT_CHAIN_STEPS:
        return ChainChoice(strategy, "fast_log_filter_inloop", "a few states, a short chain",
                           "fast_log_filter")
    if duration >= TREE_DERIVATIVE_STEPS and vector * states <= TREE_DERIVATIVE_STATES:
        return ChainChoice(strategy, "fast_log_filter", "a long chain of a few states", "tree")
    return ChainChoice(strategy, "fast_log_filter", "compiled filter in probability space")


# -- the tuning inside the compiled filters ------------------------------------------------------
# A small vector-matrix product of at most this many elements is a broadcast multiply and a
# sum (fused by XLA) rather than a matrix-product call (README, "Markov products", what
# changed: "A small step's vector-matrix product is a broadcast multiply and a sum").
VECMAT_BROADCAST = 512
# A compiled filter's scan body is checkpointed beyond a step of this many elements (batch x
# K^2): recomputing it costs less than its residuals (6x at K = 32, batch 16; storing them
# is 1.5x cheaper at K = 4, batch 1; README, what changed: "a small carry's residuals are
# stored rather than recomputed in reverse mode").
RECOMPUTE_ELEMENTS = 64
