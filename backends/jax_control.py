"""Compiled control flow on jax for algorithms that loop over arrays (Markov product scans,
the fused filters): ``scan``, ``jit``, ``checkpoint``, ``cond``, and two differentiation
helpers. ``backends.jax`` re-exports them, so ``backend_module("jax").scan`` finds them.

Example:
    >>> float(cond(jnp.array(False), lambda x: x + 1, lambda x: x, jnp.zeros(())))
    0.0
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


# The core never imports jax: it finds these on the backend module.
def scan(fn, init, xs, reverse: bool = False):
    """``jax.lax.scan``: one compiled loop ``carry, y = fn(carry, x)`` over ``xs``'s first axis.

    Example:
        >>> float(scan(lambda c, x: (c + x, None), 0.0, jnp.arange(4.0))[0])
        6.0
    """
    return jax.lax.scan(fn, init, xs, reverse=reverse)


def jit(fn):
    """``jax.jit(fn)``: compiled once per structure and shape, then cached by jax.

    Example:
        >>> float(jit(lambda x: x * 2)(jnp.ones(())))
        2.0
    """
    return jax.jit(fn)


def checkpoint(fn, prevent_cse: bool = True):
    """``jax.checkpoint(fn)``: under reverse mode, ``fn`` keeps only its inputs as residuals
    and is recomputed in the backward pass (``prevent_cse=False`` inside a scan's body).

    Example:
        >>> float(jax.grad(checkpoint(lambda x: jnp.sin(x) * x))(0.0))
        0.0
    """
    return jax.checkpoint(fn, prevent_cse=prevent_cse)


def platform() -> str:
    """The platform jax computes on by default: ``"cpu"``, ``"gpu"`` or ``"tpu"``.

    Example:
        >>> platform() in ("cpu", "gpu", "tpu")
        True
    """
    return jax.default_backend()


def cond(pred, true_fn, false_fn, operand):
    """``jax.lax.cond``: run one of two compiled branches on a traced boolean.

    Example:
        >>> float(cond(jnp.array(True), lambda x: x + 1, lambda x: x, jnp.zeros(())))
        1.0
    """
    return jax.lax.cond(pred, true_fn, false_fn, operand)


def guarded(fn, args, safe):
    """``fn(*args)``, which returns ``(out, ok)`` with ``ok`` a scalar bool, whose derivative is
    zero where ``ok`` is false, and taken at the inputs ``safe`` there: NaN or inf of a failed
    ``fn`` (a fast path that a ``cond`` then replaces) never reaches a gradient.

    Example:
        >>> f = lambda x: (jnp.sqrt(x), x > 0)
        >>> float(jax.grad(lambda x: guarded(f, (x,), (jnp.ones(()),))[0])(0.0))
        0.0
    """
    @jax.custom_jvp
    def run(*xs):
        return fn(*xs)

    @run.defjvp
    def run_jvp(primals, tangents):
        out, ok = fn(*primals)
        xs = [jnp.where(ok, x, s) for x, s in zip(primals, safe)]
        dxs = [jnp.where(ok, t, jnp.zeros_like(t)) for t in tangents]
        _, d_out = jax.jvp(lambda *a: fn(*a)[0], xs, dxs)
        d_out = jax.tree_util.tree_map(lambda t: jnp.where(ok, t, jnp.zeros_like(t)), d_out)
        return (out, ok), (d_out, np.zeros(jnp.shape(ok), jax.dtypes.float0))

    return run(*args)


def differentiate_as(fn, reference, args):
    """``fn(*args)``, differentiated as ``reference(*args)``: two programs for the same
    function, one leaner to run, the other leaner to differentiate (forward or reverse mode
    both go through ``reference``'s derivative; higher orders too).

    Example:
        >>> f = lambda x: differentiate_as(jnp.sin, lambda y: jnp.sin(y), (x,))
        >>> float(jax.grad(f)(0.0))
        1.0
    """
    @jax.custom_jvp
    def run(*xs):
        return fn(*xs)

    @run.defjvp
    def run_jvp(primals, tangents):
        return jax.jvp(reference, primals, tangents)

    return run(*args)


def value_and_vjp(fn, x):
    """``(fn(x), d sum(fn(x)) / dx)`` by ``jax.vjp``; traceable under ``jax.jit``.

    Example:
        >>> v, g = value_and_vjp(lambda x: (x * x).sum(-1), jnp.ones((2, 3)))
        >>> g.tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    value, vjp = jax.vjp(fn, x)
    return value, vjp(jnp.ones_like(value))[0]
