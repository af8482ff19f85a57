"""The jax kernel of ``ops.logsumexp``: jax's value, a derivative that is finite on slices
that are all ``-inf``, and one compiled program per shape and axes when run eagerly.

Example:
    >>> float(logsumexp(jnp.array([0.0, -jnp.inf]), axis=0))
    0.0
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from backends.jax_control import value_known


# logsumexp is about a dozen primitives, and eager jax compiles each once per new shape (under
# an eager jax.grad too: the jvp rule below runs on concrete primals): so its value and its
# softmax weights are jitted whole, one compilation per shape and axes instead of a dozen.
# Under an outer jit they inline.
@functools.partial(jax.jit, static_argnums=(1, 2))
def _lse_value(x, axis, keepdims):
    return jax.nn.logsumexp(x, axis=axis, keepdims=keepdims)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _lse_value_and_weights(x, axis, keepdims):
    # d logsumexp(x) = sum(softmax(x) * dx). A slice that is all -inf (log 0: a state no
    # path reaches) has no softmax; its derivative is taken as 0 rather than jax's
    # exp(-inf + inf) = NaN, which would turn even a zero cotangent into NaN rows. Shifting
    # such slices by 0 makes their weights exp(-inf) = 0 exactly; other slices are as jax.
    # The weights are an exp of their own, which XLA fuses into the cotangent's product: where
    # x is a broadcast (a + b of a semiring product) it is never stored.
    # The dead slices are replaced by zeros before the log-sum-exp that shifts the weights:
    # a shift taken as where(out == -inf, 0, out) sends a zero cotangent into out's own
    # derivative, jax's softmax exp(-inf + inf) = NaN there, and 0 * NaN made the second
    # derivative NaN (a loss on markov_marginals' pairs of a chain with -inf entries).
    dead = jnp.max(x, axis=axis, keepdims=True) == -jnp.inf
    kept = jax.nn.logsumexp(jnp.where(dead, jnp.zeros_like(x), x), axis=axis, keepdims=True)
    out = jnp.where(dead, jnp.full_like(kept, -jnp.inf), kept)
    return (out if keepdims else jnp.squeeze(out, axis)), jnp.exp(x - kept)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _lse(x, axis, keepdims):
    return _lse_value(x, axis, keepdims)


@_lse.defjvp
def _lse_jvp(axis, keepdims, primals, tangents):
    (x,), (dx,) = primals, tangents
    out, w = _lse_value_and_weights(x, axis, keepdims)
    return out, jnp.sum(w * dx, axis=axis, keepdims=keepdims)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _lse_shared_parts(x, axis, keepdims):
    # With m the slice's max (0 where it is not finite, as jax takes it), e = exp(x - m) and
    # s = sum(e): the value is log(s) + m, jax's own arithmetic, and the derivative
    # sum(e * dx) / s, so one exp serves both, and the division is by the reduced s. A slice
    # that is all -inf has e = 0 and s = 0; it divides by 1, so its derivative is 0, not NaN.
    m = jnp.max(x, axis=axis, keepdims=True)
    m = jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, jnp.zeros_like(m)))
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=axis, keepdims=True)
    return jnp.log(s) + m, e, jnp.where(s == 0, jnp.ones_like(s), s)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
def _lse_shared(x, axis, keepdims):
    return _lse_value(x, axis, keepdims)


@_lse_shared.defjvp
def _lse_shared_jvp(axis, keepdims, primals, tangents):
    (x,), (dx,) = primals, tangents
    out, e, s = _lse_shared_parts(x, axis, keepdims)
    dout = jnp.sum(e * dx, axis=axis, keepdims=True) / s
    if not keepdims:
        out, dout = jnp.squeeze(out, axis), jnp.squeeze(dout, axis)
    return out, dout


@functools.partial(jax.jit, static_argnums=(1, 2))
def _lse_primitives(x, axis, keepdims):
    # jax's own logsumexp arithmetic, differentiated by jax as it runs (the exp's value is its
    # own derivative), with a slice that is all -inf shifted by 0 (its exps are exactly 0)
    # and its log taken of a stand-in 1, its value -inf by a select: derivative 0 there.
    top = jax.lax.stop_gradient(jnp.max(x, axis=axis, keepdims=True, initial=-jnp.inf))
    top = jnp.where(jnp.isfinite(top), top, jnp.zeros_like(top))
    total = jnp.sum(jnp.exp(x - top), axis=axis, keepdims=True)
    dead = total == 0  # (a NaN is not: it stays NaN)
    out = jnp.where(dead, jnp.full_like(total, -jnp.inf),
                    jnp.log(jnp.where(dead, jnp.ones_like(total), total))) + top
    return out if keepdims else jnp.squeeze(out, axis)


# The largest input (entries) whose logsumexp jax differentiates from its primitives under
# ``jax.jit`` (or ``vmap``): there the custom jvp's nested programs cost a fixed ~5-10 us a
# call, which the exact log-space tree of a small chain pays every round (jitted value and
# gradient, float32, K = 2, T = 1,000: 168 against 86 us; K = 4, T = 100: 100 against 47).
# Past it the custom jvp's recomputed weights, fused into the cotangent and never stored,
# are cheaper: the primitives' derivative keeps the exps, and a large broadcast (the exact
# fallback of a wide chain, even untaken: its scratch) made K = 16, T = 100, batch 16
# 3.6 -> 7.9 ms.
PRIMITIVE_DERIVATIVE_UP_TO = 1 << 15


def logsumexp_shared(x, axis=None, keepdims: bool = False):
    """``logsumexp`` whose derivative keeps the value's ``exp(x - max)`` (one exp per entry,
    stored) instead of taking an exp of its own (fused, never stored): half the exps for an
    ``x`` that is an array already (a factor, or a sum no larger than one), a store of the
    whole broadcast for an ``x`` that is a large broadcast (``logsumexp`` is cheaper there).
    Values and derivatives as ``logsumexp``.

    Example:
        >>> float(jax.grad(lambda x: logsumexp_shared(x, axis=0))(jnp.zeros(2))[0])
        0.5
    """
    return _reduced(_lse_shared, x, axis, keepdims)


def logsumexp(x, axis=None, keepdims: bool = False):
    """``log(sum(exp(x)))`` over ``axis`` (an int, a tuple, or None for all): jax's value,
    with a derivative that is finite (0) on all ``-inf`` slices (``LOGSUMEXP_GRAD_FINITE``
    in ``jax_facts``).

    Example:
        >>> float(logsumexp(jnp.zeros((2, 3)), axis=(0, -1)))  # log(6)
        1.7917...
    """
    return _reduced(_lse, x, axis, keepdims)


def logsumexp_primitives(x, axis=None, keepdims: bool = False):
    """``logsumexp`` for the rounds of a chain's exact log-space tree: under ``jax.jit`` (or
    ``vmap``) an input of at most ``PRIMITIVE_DERIVATIVE_UP_TO`` entries is differentiated
    from its primitives (no custom jvp's nested programs: the exact tree of a small jitted
    chain 1.4-3.7x faster); eagerly, under an eager ``jax.grad`` (one compiled program per
    shape, not two) and past the size, as ``logsumexp``. Not for loop bodies: inside a
    ``scan`` the primitives' stored exps made a filter's derivative 1.4x slower. Values and
    derivatives as ``logsumexp``.

    Example:
        >>> float(jax.grad(lambda x: logsumexp_primitives(x, axis=0))(jnp.zeros(2))[0])
        0.5
    """
    primitives = x.size <= PRIMITIVE_DERIVATIVE_UP_TO and not value_known(x)
    return _reduced(_lse_primitives if primitives else _lse, x, axis, keepdims)



def _reduced(fn, x, axis, keepdims: bool):
    # ``fn(x, axes, keepdims)`` over ``axis`` (an int, a tuple, or None for all), normalized.
    if axis == ():
        return x
    axes = tuple(range(x.ndim)) if axis is None else (
        tuple(a % x.ndim for a in axis) if isinstance(axis, (tuple, list)) else (axis % x.ndim,))
    return reduce_merged(fn, x, axes, bool(keepdims))


def reduce_merged(fn, x, axes: tuple, keepdims: bool):
    """``fn(x, axes, keepdims)``, with a run of adjacent axes merged into one first: XLA adds
    over several axes in another order than over their flattened run, and numpy, torch and
    funsor (which reduces a reshaped ``batch + (-1,)``) add over the run in memory order, so
    merging gives their sums to the last bit. A reduction over every axis is left as it is (it
    is XLA's sum of the whole array, as ``jnp.sum(x)``). The shapes are static: decided under
    ``jax.jit`` too.

    Example:
        >>> x, add = jnp.arange(24.0).reshape(2, 3, 4), lambda y, a, k: y.sum(a, keepdims=k)
        >>> bool((reduce_merged(add, x, (1, 2), False) == x.reshape(2, -1).sum(-1)).all())
        True
    """
    run = tuple(sorted(a % x.ndim for a in axes)) if x.ndim else ()
    if len(run) < 2 or len(run) == x.ndim or run != tuple(range(run[0], run[0] + len(run))):
        return fn(x, axes, keepdims)
    lo, hi, shape = run[0], run[-1] + 1, x.shape
    size = 1
    for n in shape[lo:hi]:
        size *= n
    out = fn(jnp.reshape(x, shape[:lo] + (size,) + shape[hi:]), (lo,), False)
    return jnp.reshape(out, shape[:lo] + (1,) * (hi - lo) + shape[hi:]) if keepdims else out
