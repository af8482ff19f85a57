"""Compiled control flow on jax for algorithms that loop over arrays (Markov product scans,
the fused filters): ``scan``, ``jit``, ``checkpoint``, ``cond``, and two differentiation
helpers. ``backends.jax`` re-exports them, so ``backend_module("jax").scan`` finds them.

Example:
    >>> float(cond(jnp.array(False), lambda x: x + 1, lambda x: x, jnp.zeros(())))
    0.0
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from funsor_core import ops

# -- control flow and platform facts --
# The core never imports jax and never asks a backend's name: it finds these on the backend
# module. Jax traces whole programs and compiles them (eager jax too runs a chain as one
# compiled kernel), so values inside them cannot be read; it differentiates any program.
# Seconds of one array call from Python on one core, for the chains' cost model (fitted to
# benchmarks/markov.py's rounds against T).
CALL_SECONDS = 8e-6
COMPILES = True
DIFFERENTIABLE = True


def is_traced(x) -> bool:
    """Whether ``x`` is a placeholder of a program being traced (under ``jax.jit``), whose
    value cannot be read.

    Example:
        >>> is_traced(jnp.zeros(2)), jit(lambda x: is_traced(x))(jnp.zeros(2)).item()
        (False, True)
    """
    return isinstance(x, jax.core.Tracer)


def value_known(x) -> bool:
    """Whether ``x`` carries its value: an array, or a tracer of an eager ``jax.grad`` (not a
    placeholder of ``jax.jit`` or ``vmap``). An op on it runs now, and XLA compiles each
    primitive once per new shape.

    Example:
        >>> value_known(jnp.zeros(2)), jax.jit(lambda x: jnp.array(value_known(x)))(1.0).item()
        (True, False)
    """
    return not isinstance(x, jax.core.Tracer) or x.to_concrete_value() is not None


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
    """``jax.lax.cond`` on a boolean traced under ``jax.jit`` (or ``vmap``); a Python branch on
    one whose value is known: an array, or a tracer of eager ``jax.grad``, which carries it.

    Example:
        >>> float(cond(jnp.array(True), lambda x: x + 1, lambda x: x, jnp.zeros(())))
        1.0
    """
    # Eagerly lax.cond traces both branches and compiles them as a new program on every call
    # (the branches are fresh closures, so jax's cache never hits): 0.3-0.5 s per call under
    # an eager jax.grad. The taken branch alone gives the same value and derivative, as jax
    # itself does under disable_jit.
    known = pred.to_concrete_value() if isinstance(pred, jax.core.Tracer) else pred
    if known is not None:
        return true_fn(operand) if bool(known) else false_fn(operand)
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
    # ``safe`` goes in as arguments, never closed over: a custom_jvp rule that closes over
    # tracers of an enclosing trace leaks them into the jaxpr as constants under jax.grad
    # ("No constant handler for type: DynamicJaxprTracer", issue 27 item 16).
    n = len(args)

    @jax.custom_jvp
    def run(*xs):
        return fn(*xs[:n])

    @run.defjvp
    def run_jvp(primals, tangents):
        xs, safe_xs, tangents = primals[:n], primals[n:], tangents[:n]
        out, ok = fn(*xs)
        xs = [jnp.where(ok, x, s) for x, s in zip(xs, safe_xs)]
        dxs = [jnp.where(ok, t, jnp.zeros_like(t)) for t in tangents]
        _, d_out = jax.jvp(lambda *a: fn(*a)[0], xs, dxs)
        d_out = jax.tree_util.tree_map(lambda t: jnp.where(ok, t, jnp.zeros_like(t)), d_out)
        return (out, ok), (d_out, np.zeros(jnp.shape(ok), jax.dtypes.float0))

    return run(*args, *safe)


def differentiate_as(fn, reference, args, wrt=None):
    """``fn(*args)``, differentiated as ``reference(*args)``: two programs for the same
    function, one leaner to run, the other leaner to differentiate (forward or reverse mode
    both go through ``reference``'s derivative; higher orders too).

    With ``wrt`` (indices into ``args``), only derivatives that involve those arguments go
    through ``reference``; the others through ``fn``, and a call whose ``wrt`` arguments
    carry no derivative (not differentiated, or ``stop_gradient``) never runs ``reference``.
    ``fn`` and ``reference`` need agree only in value and in derivatives of every order
    with respect to the other arguments, with the ``wrt`` ones held at ``args`` (a compiled
    program exact only at 0/1 tables, beside the elimination that is exact everywhere). The
    value is ``fn``'s, differentiated or not; derivatives of every order are
    ``reference``'s where they involve a ``wrt`` argument (also reverse mode in the others
    first, then in a ``wrt`` one; NaN there if a ``jit`` inside the outer derivative hides it).

    Example:
        >>> f = lambda x: differentiate_as(jnp.sin, lambda y: jnp.sin(y), (x,))
        >>> float(jax.grad(f)(0.0))
        1.0
        >>> g = lambda a, b: differentiate_as(lambda a, b: a * b, lambda a, b: a * b * b,
        ...                                   (a, b), wrt=(1,))
        >>> [float(d) for d in jax.grad(g, argnums=(0, 1))(2.0, 1.0)]  # b at 1: a*b = a*b*b
        [1.0, 4.0]
    """
    if wrt is not None:
        return _routed(fn, reference, tuple(wrt))(*args)

    @jax.custom_jvp
    def run(*xs):
        return fn(*xs)

    @run.defjvp
    def run_jvp(primals, tangents):
        return jax.jvp(reference, primals, tangents)

    return run(*args)


def _routed(fn, reference, wrt: tuple):
    # ``fn`` in value. A derivative with respect to a ``wrt`` argument is ``reference``'s;
    # one with respect to the others only is ``fn``'s, computed by the same construction one
    # order up (the tangent of ``fn`` beside that of ``reference``, the ``wrt`` arguments'
    # tangents joining ``wrt``), so a later derivative with respect to a ``wrt`` argument
    # (a mixed second derivative) is again ``reference``'s. Symbolic zeros tell which
    # arguments carry a derivative, also under ``jit`` where every argument is traced.
    # Reverse mode linearizes the rule and inlines a custom_jvp call whose inputs include
    # tangents (jax keeps no rule there), so a mixed derivative taken as reverse mode in the
    # other arguments, then in a ``wrt`` argument, meets ``fn_tangent`` as plain operations.
    # There the ``wrt`` arguments are stopped in ``fn``'s tangent and, when an outer trace
    # differentiates them (``_outer_derivative``), the term J_ref(x) t - J_ref(sg x) t joins:
    # 0 in value (two equal computations), its derivatives in the ``wrt`` arguments, of every
    # order, ``reference``'s. No outer derivative seen (one hidden behind a ``jit`` boundary
    # inside it): a factor 1 whose derivative is NaN instead, never a wrong number.
    @jax.custom_jvp
    def run(*xs):
        return fn(*xs)

    def run_jvp(primals, tangents):
        n = len(primals)
        ts = tuple(_instantiate(t) for t in tangents)
        if all(isinstance(tangents[i], SymbolicZero) for i in wrt):
            def fn_tangent(*a):
                stopped = tuple(jax.lax.stop_gradient(x) if i in wrt else x
                                for i, x in enumerate(a[:n]))
                out = jax.jvp(fn, stopped, a[n:])[1]
                if _outer_derivative([a[i] for i in wrt]):
                    exact = jax.jvp(reference, a[:n], a[n:])[1]
                    held = jax.jvp(reference, stopped, a[n:])[1]
                    return jax.tree_util.tree_map(lambda o, e, h: o + (e - h), out, exact, held)
                # a factor (not a term: reverse mode's transpose drops constant terms)
                one = 1.0 + sum(_nan_derivative(a[i]) for i in wrt)
                return jax.tree_util.tree_map(lambda t: t * one.astype(t.dtype), out)

            def reference_tangent(*a):
                return jax.jvp(reference, a[:n], a[n:])[1]

            up = wrt + tuple(n + i for i in wrt)
            out_tangent = _routed(fn_tangent, reference_tangent, up)(*primals, *ts)
        else:
            out_tangent = jax.jvp(reference, primals, ts)[1]
        return run(*primals), out_tangent

    run.defjvp(run_jvp, symbolic_zeros=True)
    return run


def _outer_derivative(xs) -> bool:
    # Whether a trace around this one differentiates any of ``xs``: a custom_jvp of ``xs``
    # alone passes through the inner linearization (its inputs are all known there) to the
    # outer traces, and a JVP or linearize trace runs its rule at once when a tangent is
    # nonzero. Decided at trace time from the traces, never from values (right under jit).
    seen = []

    @jax.custom_jvp
    def probe(*a):
        return jnp.zeros(())

    @probe.defjvp
    def probe_jvp(primals, tangents):
        seen.append(True)
        return jnp.zeros(()), jnp.zeros(())

    probe(*xs)
    return bool(seen)


def _nan_derivative(x):
    # 0 in value; its derivative in ``x`` is NaN (0 * sqrt'(0)). Entries that are not finite
    # (-inf of a log table) enter as 0: x - x there is NaN in value.
    stopped = jax.lax.stop_gradient(x)
    return 0.0 * jnp.sum(jnp.sqrt(jnp.where(jnp.isfinite(stopped), x - stopped, 0.0)))


def _instantiate(t):
    # A symbolic zero tangent as an array of zeros (float0 for an integer argument).
    if not isinstance(t, SymbolicZero):
        return t
    if t.aval.dtype == jax.dtypes.float0:
        return np.zeros(t.aval.shape, jax.dtypes.float0)
    return jnp.zeros(t.aval.shape, t.aval.dtype)


def value_and_vjp(fn, x, keep_graph: bool = False):
    """``(fn(x), d sum(fn(x)) / dx)`` by ``jax.vjp``; traceable under ``jax.jit``, and
    differentiable in what ``fn`` closes over (``keep_graph`` is torch's concern).

    Example:
        >>> v, g = value_and_vjp(lambda x: (x * x).sum(-1), jnp.ones((2, 3)))
        >>> g.tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    value, vjp = jax.vjp(fn, x)
    return value, vjp(jnp.ones_like(value))[0]


# The raw array calls of a hot eager loop on the other backends (a round of a linear-space
# chain tree); never reached on jax today (its chains run compiled), so ``ops`` serves.
LOOP_FNS = SimpleNamespace(
    matmul=ops.matmul, exp=ops.exp, log=ops.log, cat=lambda xs: ops.cat(xs, 0),
    unbind=lambda x: [x[i] for i in range(x.shape[0])],
    total=lambda x: ops.sum(x, axis=0),
    max2=lambda x: ops.amax(ops.detach(x), axis=(-2, -1), keepdims=True),
    max1=lambda x: ops.amax(ops.detach(x), axis=-1, keepdims=True),
    sum=lambda x, axis, keep: ops.sum(x, axis=axis, keepdims=keep),
    smallest=lambda x: float(ops.amin(ops.detach(x))))
