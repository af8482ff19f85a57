"""Array kernels of discrete Markov products: a chain of transition matrices in a semiring.

A discrete chain is pre-aligned once into arrays; the kernels below touch only arrays (no
terms per step). A step's transition matrix may be given as several *factors* whose
``prod_op``-product it is, each of shape ``(T or 1, *batch or 1s, P or 1, C or 1)``: a
matrix shared by all steps, an observation vector per step over the curr states, a constant
per step. Kept apart, a step of a filter costs ``O(K^2)`` plain arithmetic on the shared
matrix instead of building ``T`` matrices first.

``chain_product`` multiplies the ``T`` step matrices in the semiring ``(sum_op, prod_op)``,
optionally with a boundary vector on either side (``left`` over the first prev states,
``right`` over the last curr states) whose states are summed out:

- neither boundary: the ``(*batch, P, C)`` product of the matrices;
- ``left``: the ``(*batch, C)`` forward message (an HMM filter);
- ``right``: the ``(*batch, P)`` backward message;
- both: the ``(*batch,)`` total (an HMM likelihood).

``"sequential"`` folds the steps one by one: with a boundary the carry is a vector (``O(T
K^2)``), ``lax.scan`` under jax. ``"parallel"`` contracts adjacent pairs in ``ceil(log2 T)``
batched rounds (``O(T K^3)``, ``scan_tree``; eagerly, a log-space chain runs its rounds as
plain matrix products in linear space, checked for lost digits, and a summed boundary goes
through the last few matrices as a vector). A chain that is the same at every step (``power``
steps of one matrix) is a matrix power, by repeated squaring either way.

Compiled (jax), a log-space filter step runs in probability space: a normalized carry times
``exp`` of the (once) shifted matrix, ``K`` instead of ``K^2`` transcendental calls per step.
When every entry of the shifted matrix is above ``2 tiny / eps`` (checked once, on the inputs)
no step can lose digits and the loop is as lean as a hand-written one; otherwise the loop
tracks its smallest sum, and a step whose sums fall below ``tiny / eps`` (digits lost to
underflow, or a true zero) sends the whole chain to the exact log-space recursion
(``lax.cond``), so the fast path never returns a lost digit. A carry of a few numbers with a
transition matrix shared by all steps (an HMM with a few states) gets its values from
``scan_log_filter`` instead: ``K`` exps per step, the last step in log form, one conditional.
Eagerly (numpy, torch) the same filter runs as a Python loop of four array calls per step when
the values show it cannot lose digits, and the log-space loop runs otherwise.

Everything goes through ``funsor_core.ops`` (numpy, torch, jax; autograd and ``jax.jit``).
Eager jax runs the whole chain as one compiled kernel, cached by its static structure.

Example:
    >>> mats = np.ones((5, 2, 2))
    >>> chain_product(ops.add, ops.mul, (mats,), "parallel").tolist()
    [[16.0, 16.0], [16.0, 16.0]]
    >>> float(chain_product(ops.add, ops.mul, (mats,), "sequential", np.ones(2), np.ones(2)))
    64.0
"""

from __future__ import annotations

import functools
import math

import numpy as np

from funsor_core import ops
from funsor_core.algorithms.chains import discrete_filter as scan_log_filter
from funsor_core.algorithms.chains.cost_model import (
    RECOMPUTE_ELEMENTS,
    ChainChoice,
    choose_discrete_kernel,
    record_choice,
)
from funsor_core.algorithms.chains.discrete_eager import (
    eager_log_filter,
    full_batch,
    kept,
    python_loop,
    rounded_away,
    vecmat,
)
from funsor_core.algorithms.chains.discrete_padding import masked_padding, padded_chain
from funsor_core.algorithms.chains.discrete_precision import (
    float_max,
    preshifted,
    shift_period,
    shifted_loop,
)
from funsor_core.algorithms.chains.discrete_tree import (
    FUNSOR_ROUNDING,
    UNIT,
    _dot,
    _reduce,
    parallel_chain,
    semiring_mm,
    semiring_mv,
    semiring_vm,
    single_precision,
    with_units,
)
from funsor_core.algorithms.chains.power import repeated_squaring
from funsor_core.algorithms.contract.linear_space import log_limits
from funsor_core.engine.backend import backend_of
from funsor_core.engine.cache import Cache, cached

__all__ = ["chain_product", "semiring_mm", "semiring_vm", "semiring_mv"]

# -- the factors of a step -----------------------------------------------------------------------
class _Step:
    """The factors of a step matrix, sorted by kind (static), with their arrays.

    ``kinds[i]``: ``"m"`` a matrix, ``"p"`` a vector over the prev states, ``"c"`` over the
    curr states, ``"s"`` a constant; ``timed[i]``: whether factor i varies with time.
    """

    def __init__(self, sum_op, prod_op, factors, states: int):
        self.sum_op, self.prod_op, self.states = sum_op, prod_op, states
        self.kinds = tuple(_kind(f, states) for f in factors)
        self.timed = tuple(f.shape[0] > 1 for f in factors)

    def at(self, factors, t: int):
        """The groups of the step at time ``t`` (see ``groups``)."""
        return self.groups(tuple(f[t] if timed else f[0]
                                 for f, timed in zip(factors, self.timed)))

    def groups(self, slices):
        # The factors of one step (their time axis gone) by kind, with the vectors squeezed
        # to (..., K) and the constants to (..., 1).
        groups = {"m": [], "p": [], "c": [], "s": []}
        for f, kind in zip(slices, self.kinds):
            if kind == "p":
                f = f[..., :, 0]
            elif kind in ("c", "s"):
                f = f[..., 0, :]
            groups[kind].append(f)
        return groups

    def fold(self, arrays):
        result = arrays[0]
        for x in arrays[1:]:
            result = self.prod_op(result, x)
        return result

    def matrix(self, groups):
        # The full step matrix (..., P, C).
        parts = list(groups["m"])
        parts += [p[..., :, None] for p in groups["p"]]
        parts += [c[..., None, :] for c in groups["c"]]
        parts += [s[..., None] for s in groups["s"]]
        m = self.fold(parts)
        k = self.states
        if tuple(m.shape[-2:]) != (k, k):
            m = ops.expand(m, tuple(m.shape[:-2]) + (k, k))
        return m

    def forward(self, v, groups):
        # v (..., P) times the step matrix: prev vectors fold into v, curr vectors and
        # constants multiply the result.
        if groups["p"]:
            v = self.fold([v] + groups["p"])
        if groups["m"]:
            v = semiring_vm(self.sum_op, self.prod_op, v, self.fold(groups["m"]))
        else:
            v = _reduce(self.sum_op, v, -1)[..., None]
        after = groups["c"] + groups["s"]
        return self.fold([v] + after) if after else _full(v, self.states)

    def backward(self, w, groups):
        # The step matrix times w (..., C).
        before = groups["c"] + groups["s"]
        if before:
            w = self.fold([w] + before)
        if groups["m"]:
            w = semiring_mv(self.sum_op, self.prod_op, self.fold(groups["m"]), w)
        else:
            w = _reduce(self.sum_op, w, -1)[..., None]
        return self.fold([w] + groups["p"]) if groups["p"] else _full(w, self.states)


def _full(v, k: int):
    return v if v.shape[-1] == k else ops.expand(v, tuple(v.shape[:-1]) + (k,))


def _kind(f, k: int) -> str:
    p, c = f.shape[-2], f.shape[-1]
    if k == 1 or (p == k and c == k):
        return "m"
    if c == 1 and p == k:
        return "p"
    if p == 1 and c == k:
        return "c"
    return "s"


def _materialize(step: _Step, factors, duration: int):
    # All T step matrices (T, *batch, P, C) at once: the parallel strategy needs them. The
    # product of the factors already has the broadcast batch dims; only a time or state dim
    # that no factor spans is expanded.
    m = step.fold(list(factors))
    k = step.states
    if m.shape[0] != duration or tuple(m.shape[-2:]) != (k, k):
        m = ops.expand(m, (duration,) + tuple(m.shape[1:-2]) + (k, k))
    return m


# -- the strategies ------------------------------------------------------------------------------
def _loop(fn, carry, step: _Step, factors, duration: int, reverse: bool, scan, mask=None,
          every: int = 1, renorm=None):
    # carry <- fn(carry, groups of step t) for t in order: a lax.scan under jax (one
    # compiled loop; the shared factors are constants of its body), a Python loop elsewhere
    # (there, carry <- renorm(carry) after every ``every`` steps, given a ``renorm``).
    # With ``mask`` (T, *batch) the carry is kept where a step does not count.
    if mask is not None:
        inner = fn

        def fn(c, g):  # (a shifted carry's shift, a column or a pair's, is kept with it)
            return kept(g["keep"], inner(c, g), c)

    if scan is None:
        return python_loop(fn, carry, step.kinds, step.timed, factors, duration,
                           reverse, mask, every, renorm)
    if duration == 1:
        g = step.at(factors, 0)
        if mask is not None:
            g["keep"] = mask[0]
        return fn(carry, g)
    timed = tuple(f for f, t in zip(factors, step.timed) if t)

    def body(c, xs):
        it = iter(xs[0])
        slices = tuple(next(it) if t else f[0] for f, t in zip(factors, step.timed))
        g = step.groups(slices)
        if mask is not None:
            g["keep"] = xs[1]
        return fn(c, g), None

    return scan(body, carry, (timed, mask), reverse=reverse)[0]


def _sequential(step: _Step, factors, duration, left, right, scan, mask=None):
    sum_op, prod_op = step.sum_op, step.prod_op
    # (single precision only: double's 53 bits keep 1e-8 of a carry near -1e8; compiled,
    # the carry is shifted every step, and eagerly the steps once and the carry every few
    # steps, ``discrete_precision.shift_period``; compiled, that pass over the steps would
    # cost 6-22% of ``mpsp`` under jit, its value and gradient, K = 4..16)
    log_like = (prod_op is ops.add and sum_op in (ops.logaddexp, ops.max)
                and single_precision(factors[0].dtype))
    every, offset = 1, None
    if log_like:
        dtype = factors[0].dtype
        big = float_max(dtype) / ((len(factors) + 1) * duration + 2)  # no sum of shifts overflows
        if scan is None:  # eagerly: steps shifted at once, the carry every few steps
            factors, offset, spread = preshifted(factors, step.timed, mask, duration, big)
            rise = math.log(step.states) if sum_op is ops.logaddexp else 0.0
            every = shift_period(dtype, spread + rise)
    if left is not None or right is not None:
        fn, start = (step.forward, left) if left is not None else (step.backward, right)
        start = full_batch(start, mask)
        if not log_like:
            carry = _loop(fn, start, step, factors, duration, left is None, scan, mask)
            return carry if left is None or right is None else _dot(sum_op, prod_op, carry, right)
        v, shift = shifted_loop(lambda f, c, k, r: _loop(f, c, step, factors, duration,
                                                          left is None, scan, mask, k, r),
                                fn, start, (-1,), big, every, scan is not None)
        # the shifts added after the last sum: they hold the magnitude, not the digits
        shift = shift if offset is None else shift + offset[..., 0]
        if left is None or right is None:
            return v + shift
        return _dot(sum_op, prod_op, v, right) + shift[..., 0]
    first = step.matrix(step.at(factors, 0))
    if mask is not None:  # the identity where step 0 does not count
        first = kept(mask[0], first, _identity(step, first))
    if duration == 1:
        return first if offset is None else first + offset
    rest = tuple(f[1:] if t else f for f, t in zip(factors, step.timed))
    fn = lambda acc, g: semiring_mm(sum_op, prod_op, acc, step.matrix(g))  # noqa: E731
    rest_mask = None if mask is None else mask[1:]
    if not log_like:
        return _loop(fn, first, step, rest, duration - 1, False, scan, rest_mask)
    acc, shift = shifted_loop(lambda f, c, k, r: _loop(f, c, step, rest, duration - 1, False,
                                                       scan, rest_mask, k, r),
                              fn, first, (-2, -1), big, every, scan is not None)
    return acc + (shift if offset is None else shift + offset)


def _identity(step: _Step, proto):
    # The identity (K, K): prod's unit on the diagonal; (max, mul) 0 off it (0 * -inf: NaN)
    k = step.states
    eye = ops.new_eye(proto, k) > 0.5
    zeros = ops.new_zeros(proto, (k, k))
    off = 0.0 if (step.sum_op, step.prod_op) == (ops.max, ops.mul) else ops.UNITS[step.sum_op]
    return ops.where(eye, ops.add(zeros, ops.UNITS[step.prod_op]), ops.add(zeros, off))


def _vector_size(step: _Step, factors, left) -> int:
    # The size of a filter's carry: every batch dim of the boundary and the factors, times K.
    batch = np.broadcast_shapes(tuple(left.shape[:-1]),
                                *(tuple(f.shape[1:-2]) for f in factors))
    return math.prod(batch) * step.states


def _fast_log_filter(step: _Step, factors, duration, left, right, scan, cond, checkpoint,
                     inloop: bool = False, mask=None):
    # The log-space forward filter in probability space (see the module docstring), for a
    # step of one matrix factor ``a`` and vectors over the curr states and constants ``w``:
    # the carry is ``(p, lz)`` with ``v = log p + lz``, ``p`` summing to 1. With the column
    # shift ``a_max`` of ``a`` moved into ``w``, a step is ``s = p @ exp(a - a_max)``,
    # ``q = s * exp(w - m)`` (m: the max of ``w`` over states), ``p = q / sum q`` and
    # ``lz += log sum q + m``: one matrix product and ``K`` exps, as dynamax's filter. The
    # matrix is exponentiated once, before the loop; the vectors of all steps too, or (with
    # ``inloop``) each step's own inside it.
    (mi,) = [i for i, k in enumerate(step.kinds) if k == "m"]
    a = factors[mi]
    a_max = ops.amax(a, axis=-2, keepdims=True)  # (T or 1, *batch, 1, C)
    a_max = ops.where(ops.isfinite(a_max), a_max, ops.full_like(a_max, 0.0))
    e = ops.exp(a - a_max)
    timed_e = step.timed[mi]
    # The vectors and constants of a step: the ones fixed in time (and the column shift of a
    # fixed matrix) are folded once into ``w0``; the timed ones are the scan's inputs.
    fixed = [f[0] for f, k, t in zip(factors, step.kinds, step.timed) if k in ("c", "s") and not t]
    timed = [f for f, k, t in zip(factors, step.kinds, step.timed) if k in ("c", "s") and t]
    w0 = step.fold(fixed + ([] if timed_e else [a_max[0]])) if fixed or not timed_e else None
    k = step.states
    floor = math.exp(log_limits(left.dtype)[0])  # tiny / eps

    # exp(w - m) and m for every step, m the max of w over the states (0 where -inf: a step
    # where every state has weight zero makes the chain's total zero: q = 0, z := 1 below,
    # and p = 0 from there on, whose log is -inf, as it should be).
    # With ``inloop`` the timed parts are the scan's inputs and each step exponentiates its
    # own: the same arithmetic, and no (T, *batch, K) pass before the loop, whose cost XLA:CPU
    # pays as a fixed ~30 us at T = 100 (the program leaves the calling thread); the loop
    # without it differentiates worse, so ``inloop`` runs only for values (``_run``).
    parts = timed + ([a_max] if timed_e else [])

    def weights(parts):  # exp(w - m) and m, m the max over states (0 where -inf)
        w = step.fold(([] if w0 is None else [w0 if inloop else w0[None]]) + list(parts))
        w = w[..., 0, :]
        if w.shape[-1] != k:
            w = ops.expand(w, tuple(w.shape[:-1]) + (k,))
        m = ops.amax(ops.detach(w), axis=-1, keepdims=True)
        m = ops.where(ops.isfinite(m), m, ops.full_like(m, 0.0))
        return ops.exp(w - m), m

    timed_w = bool(parts)
    inloop = inloop and timed_w
    ew_all, m_all = (None, None) if inloop else weights(parts)

    def body(carry, xs):
        p, lz, low = carry
        et, ws, keep = xs
        et = et if timed_e else e[0]
        if inloop:
            ew, m = weights(ws)
        else:
            ew, m = ws if timed_w else (ew_all[0], m_all[0])
        s = vecmat(p, et)
        if low is not None:  # NaN propagates: a carry of all -inf makes NaN
            low = ops.min(low, ops.detach(s))
        q = s * ew
        z = ops.sum(q, axis=-1, keepdims=True)
        # Where z = 0 the total is zero (or, tracked, the chain is recomputed exactly); 1
        # there keeps gradients finite.
        z = ops.where(z > 0, z, ops.full_like(z, 1.0))
        if keep is None:
            return (q / z, lz + ops.log(z) + m, low), None
        # A step that does not count (past a sequence's length) carries (p, lz) unchanged.
        return (kept(keep, q / z, p), kept(keep, lz + ops.log(z) + m, lz), low), None

    left = full_batch(left, mask)
    lmax = ops.amax(left, axis=-1, keepdims=True)
    p0 = ops.exp(left - lmax)
    z0 = ops.sum(p0, axis=-1, keepdims=True)
    dummy = ops.new_zeros(left, (duration,))
    xs = (e if timed_e else dummy,
          tuple(parts) if inloop else (ew_all, m_all) if timed_w else dummy, mask)

    # Beyond the smallest chains the body is checkpointed: in reverse mode it keeps only its
    # carry per step and recomputes the rest (a matrix product and a few elementwise ops) in
    # the backward pass, which costs less than storing and reloading its residuals (6x less
    # at K = 32, batch 16); for a carry of a few numbers, storing them is cheaper (1.5x at
    # K = 4, batch 1). The flag follows a detached ``s``: it only picks a branch.
    recompute = math.prod(left.shape[:-1]) * k * k > RECOMPUTE_ELEMENTS
    def filtered(tracked):
        low0 = ops.full_like(left, math.inf) if tracked else None
        carry = (p0 / z0, lmax + ops.log(z0), low0)
        (p, lz, low), _ = scan(checkpoint(body, prevent_cse=False) if recompute else body,
                               carry, xs)
        # log p with p = 0 -> -inf, and a zero gradient there (never 0 * inf).
        positive = p > 0
        v = ops.where(positive, ops.log(ops.where(positive, p, ops.full_like(p, 1.0))),
                      ops.full_like(p, -math.inf))
        # lz joins after the last sum: in float32 near -1e7 it would round log p to units,
        # and the softmax of the last step (its derivative) with it
        result = (v + lz if right is None
                  else _dot(step.sum_op, step.prod_op, v, right) + lz[..., 0])
        r = ops.detach(result)
        bad = ops.any(r != r)  # NaN: e.g. an infinite weight, for the exact path to judge
        bad = bad | rounded_away(ops.detach(p), right, floor)
        if tracked:
            bad = bad | ops.any(ops.invert(low >= floor))
        return result, bad

    # Since p sums to 1, s_j = sum_i p_i e_ij >= min_i e_ij: when every entry of e is at
    # least twice the floor ``tiny / eps`` (and at most 1, so neither NaN nor infinite) and
    # the first message is finite somewhere, no step can lose digits to underflow, and the
    # filter runs without tracking the smallest s (a carry and a reduction per step, a third
    # of a small step). Otherwise it tracks it, and a step whose s falls below the floor
    # (lost digits, or a true zero) sends the whole chain to the exact log-space recursion.
    safe = ops.all((e >= 2 * floor) & (e <= 1.0)) & ops.all(ops.isfinite(lmax))
    result, bad = cond(safe, lambda _: filtered(False), lambda _: filtered(True), None)

    # Reverse mode differentiates both branches of the cond and, in the branch not taken,
    # fills the other's residuals with zeros of their full size, every call: the exact
    # scan's would be (T, *batch, K, K) (~130 MB at K = 32, T = 1000, batch 16, several
    # times the fast path's own time). So the exact branch keeps only its inputs (it is
    # recomputed in the backward pass, only when taken), and its scan body only its carries.
    def light_scan(fn, carry, xs, reverse=False):
        return scan(checkpoint(fn, prevent_cse=False), carry, xs, reverse=reverse)

    @checkpoint
    def exact_of(f, lt, rt, mk):
        return _sequential(step, f, duration, lt, rt, light_scan, mk)

    def exact(_):
        return exact_of(factors, left, right, mask)

    return cond(bad, exact, lambda _: result, None)


def _run(sum_op, prod_op, kernel, derivative, power, has_left, has_right, backend,
         factors, left, right, mask=None, pad=None):
    # The whole chain on arrays, by the kernel the cost model chose (``chain_product``).
    # Pure in the arrays: a compiling backend compiles it once per structure. A UNIT
    # boundary (states summed with no factor) is an array of units, except on the eager
    # log-space tree, which sums such states without one.
    left = UNIT if has_left is UNIT else left if has_left else None
    right = UNIT if has_right is UNIT else right if has_right else None
    states = max(max(f.shape[-2], f.shape[-1]) for f in factors)
    step = _Step(sum_op, prod_op, factors, states)
    eager_log = not backend.COMPILES and sum_op is ops.logaddexp and prod_op is ops.add
    if UNIT in (has_left, has_right) and (not eager_log or kernel != "tree"):
        batch = np.broadcast_shapes(*(tuple(f.shape[1:-2]) for f in factors))
        left, right = with_units(prod_op, left, right, factors[0], batch + (states,))
    # Eagerly the steps are a Python loop over views (``_loop``), not the backend's scan.
    scan = backend.scan if backend.COMPILES else None
    if power is not None:
        mats = repeated_squaring(functools.partial(semiring_mm, sum_op, prod_op),
                                 step.matrix(step.at(factors, 0)), power)
        factors = (mats[None],)
        step = _Step(sum_op, prod_op, factors, states)
    duration = max(f.shape[0] for f in factors)
    if mask is not None and kernel != "scan_log_filter":
        return _run_masked(step, kernel, backend, eager_log, scan, factors, duration, left,
                           right, mask)
    if kernel == "tree":  # (``pad``: the padded steps of eager jax, ``discrete_padding``)
        return parallel_chain(sum_op, prod_op, _materialize(step, factors, duration), left,
                              right, eager_log, backend if backend.COMPILES else None, pad)
    args = (factors, left, right)

    def exact(f, lt, rt, mk=None):
        return _sequential(step, f, duration, lt, rt, scan, mk)

    def fast(f, lt, rt, inloop=False, mk=None):
        return _fast_log_filter(step, f, duration, lt, rt, scan, backend.cond,
                                backend.checkpoint, inloop, mk)

    def tree(f, lt, rt):
        return parallel_chain(sum_op, prod_op, _materialize(step, f, duration), lt, rt,
                              eager_log)

    if kernel == "eager_log_filter":
        result = eager_log_filter(step, factors, duration, left, right)
        return exact(*args) if result is None else result
    if kernel == "scan_log_filter":  # (a mask, an argument: eager jax's padding in front)
        def values(f, lt, rt, mk):
            return scan_log_filter.scaled_log_filter(
                step, f, lt, rt, scan, backend.cond, lambda *a: exact(*a, mk), mk)

        def reference(f, lt, rt, mk):
            return exact(f, lt, rt, mk) if derivative == "sequential" else fast(f, lt, rt, mk=mk)
        return backend.differentiate_as(values, reference, args + (mask,))
    if kernel == "fast_log_filter_inloop":
        return backend.differentiate_as(lambda f, lt, rt: fast(f, lt, rt, True), fast, args)
    if kernel == "fast_log_filter":
        if derivative == "tree":
            return backend.differentiate_as(fast, tree, args)
        return fast(*args)
    return exact(*args)


def _run_masked(step: _Step, kernel, backend, eager_log, scan, factors, duration, left, right,
                mask):
    # A ragged chain: the step's factors as they are (a shared matrix stays one matrix) and
    # the carry selected past each masked step. The tree has no carry: its steps are
    # materialized with identity matrices where masked, as ``chains.masks`` builds them.
    if kernel == "tree":
        mats = _materialize(step, factors, duration)
        mats = kept(mask, mats, _identity(step, mats))
        return parallel_chain(step.sum_op, step.prod_op, mats, left, right, eager_log,
                              backend if backend.COMPILES else None)
    if kernel == "eager_log_filter":
        result = eager_log_filter(step, factors, duration, left, right, mask)
        if result is not None:
            return result
    elif kernel != "sequential":  # the compiled filters, their derivative their own
        return _fast_log_filter(step, factors, duration, left, right, scan, backend.cond,
                                backend.checkpoint, kernel == "fast_log_filter_inloop", mask)
    return _sequential(step, factors, duration, left, right, scan, mask)


@cached("chains.discrete.programs", maxsize=256)
def _compiled(sum_op, prod_op, kernel, derivative, power, has_left, has_right, backend):
    # One compiled program per structure: the backend caches its traces per shape beneath.
    fn = functools.partial(_run, sum_op, prod_op, kernel, derivative, power, has_left,
                           has_right, backend)
    return backend.jit(fn)


# The kernel of each chain structure (semiring, strategy, shapes): read once per structure,
# since deciding costs a few microseconds of a ~100 us eager chain.
_CHOICES = Cache("chains.discrete.choices", maxsize=1024)


def _choice(sum_op, prod_op, factors, strategy: str, duration: int, left, compiles: bool,
            masked: bool = False):
    # The cost model's kernel for this chain, from static facts only (shapes, structure).
    key = (sum_op, prod_op, strategy, duration, compiles, factors[0].dtype,
           left if left is None or left is UNIT else left.shape, masked,
           *[f.shape for f in factors])
    choice = _CHOICES.get(key)
    if choice is None:
        choice = _CHOICES[key] = _decide(sum_op, prod_op, factors, strategy, duration, left,
                                         compiles, masked)
    return choice


def _decide(sum_op, prod_op, factors, strategy, duration, left, compiles, masked=False):
    if (duration == 2 and left is None and sum_op is ops.logaddexp and prod_op is ops.add
            and single_precision(factors[0].dtype)):
        # One pair in float32, rounded as funsor's pairs and the longer float32 chains are.
        return ChainChoice(strategy, "tree", "T = 2 in float32: one pair, as funsor rounds it")
    states = max(max(f.shape[-2], f.shape[-1]) for f in factors)
    kinds = tuple(_kind(f, states) for f in factors)
    filter_form = bool(left is not None and sum_op is ops.logaddexp and prod_op is ops.add
                       and kinds.count("m") == 1 and "p" not in kinds and states > 1
                       and duration > 1 and strategy == "sequential")
    carry = vector = 0
    shared = False
    if filter_form:
        batch = np.broadcast_shapes(*(tuple(f.shape[1:-2]) for f in factors))
        lshape = batch + (states,) if left is UNIT else tuple(left.shape)
        carry = math.prod(lshape)
        if compiles:
            vector = math.prod(np.broadcast_shapes(lshape[:-1], batch)) * states
            step = _Step(sum_op, prod_op, factors, states)
            # (a ragged batch is no single sequence: its carry is selected per entry)
            shared = (not masked and vector == states
                      and scan_log_filter.applies(step, lshape))
    return choose_discrete_kernel(strategy, compiles, filter_form, duration, carry, vector,
                                  states, shared)


def chain_product(sum_op, prod_op, factors: tuple, strategy: str, left=None, right=None,
                  power: int | None = None, mask=None):
    """The semiring product along ``T`` of the step matrices whose factors are ``factors``,
    with optional boundary vectors summed out (see the module docstring).

    Args:
        sum_op, prod_op: the semiring.
        factors: arrays ``(T or 1, *batch, P or 1, C or 1)`` (batch dims broadcast); the
            step matrix at ``t`` is their ``prod_op``-product.
        strategy: ``"parallel"`` or ``"sequential"``.
        left: ``(*batch, P)``, None, or ``scan_tree.UNIT`` (the first prev states summed
            with no factor). right: ``(*batch, C)``, None or ``UNIT``.
        power: the number of steps of a chain whose matrix is the same at every step (then
            no factor varies with time).
        mask: a boolean array ``(T, *batch)`` (batch dims as the factors'), or None: where
            False, step ``t`` is the identity transition (the carry is kept: a ragged
            batch past each sequence's length).

    Example:
        >>> m = np.array([[[0.5, 0.5], [0.0, 1.0]]])
        >>> chain_product(ops.add, ops.mul, (m,), "parallel", power=3).tolist()
        [[0.125, 0.875], [0.0, 1.0]]
    """
    factors = tuple(factors)
    duration = max(f.shape[0] for f in factors) if power is None else 1
    has_left = UNIT if left is UNIT else left is not None
    has_right = UNIT if right is UNIT else right is not None
    backend = backend_of(factors[0])
    padded = padded_chain(backend, sum_op, prod_op, factors, strategy, FUNSOR_ROUNDING) if (
        backend.COMPILES and power is None and mask is None and left is right is None) else None
    if padded is not None:  # eager jax: one program for every T up to a power of two
        factors, duration = padded[0], max(f.shape[0] for f in padded[0])
    ragged, pair = mask is not None, (sum_op, prod_op)
    if padded is None and backend.COMPILES and power is None:  # the others, as masked chains
        masked = masked_padding(backend, factors, mask, (left, right), FUNSOR_ROUNDING, pair)
        if masked is not None:
            (factors, mask), duration = masked, masked[1].shape[0]
    choice = record_choice(_choice(sum_op, prod_op, factors, strategy, duration, left,
                                   backend.COMPILES, ragged))
    if backend.COMPILES:
        fn = _compiled(sum_op, prod_op, choice.kernel, choice.derivative, power, has_left,
                       has_right, backend)
        return fn(factors, None if left is UNIT else left, None if right is UNIT else right,
                  mask, None if padded is None else padded[1])
    return _run(sum_op, prod_op, choice.kernel, choice.derivative, power, has_left, has_right,
                backend, factors, left, right, mask)
