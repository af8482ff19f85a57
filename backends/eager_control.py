"""Control flow of the backends that run op by op from Python (numpy, eager torch): loops are
Python loops, branches read the concrete predicate, compiling and checkpointing are the
identity, and a function is differentiated through the program that computes its values.
``backends.numpy_control`` and ``backends.torch_control`` take these and add their stacking
and platform facts.

Example:
    >>> loop_scan(lambda c, x: (c + x, c), 0, range(1, 4), stack=list)
    (6, [0, 1, 3])
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["loop_scan", "cond", "jit", "checkpoint", "differentiate_as", "is_traced"]


def loop_scan(fn, init, xs, reverse: bool = False, *, stack: Callable):
    """``carry, y = fn(carry, x)`` over the first axis of ``xs`` (an array or a tuple of
    them), as a Python loop; returns the last carry and the ``y`` joined by ``stack`` (None
    where ``fn`` emits None).

    Example:
        >>> loop_scan(lambda c, x: (c * x, None), 1, range(2, 4), reverse=True, stack=list)
        (6, None)
    """
    several = isinstance(xs, (tuple, list))
    leaves = xs if several else (xs,)
    times = range(len(leaves[0]))
    ys = []
    for t in (reversed(times) if reverse else times):
        init, y = fn(init, tuple(leaf[t] for leaf in leaves) if several else xs[t])
        ys.append(y)
    if reverse:
        ys.reverse()
    return init, (None if not ys or ys[0] is None else stack(ys))


def cond(pred, true_fn, false_fn, operand):
    """``true_fn(operand)`` if ``pred`` else ``false_fn(operand)``: the value is concrete.

    Example:
        >>> cond(False, lambda x: x + 1, lambda x: x, 0)
        0
    """
    return true_fn(operand) if bool(pred) else false_fn(operand)


def jit(fn):
    """The identity: an eager backend runs op by op.

    Example:
        >>> jit(abs)(-2)
        2
    """
    return fn


def checkpoint(fn, prevent_cse: bool = True):
    """The identity: nothing to recompute where no residuals are kept apart.

    Example:
        >>> checkpoint(abs)(-2)
        2
    """
    return fn


def differentiate_as(fn, reference, args, wrt=None):
    """``fn(*args)``: eager autodiff (if any) differentiates ``fn`` itself, which computes the
    same function as ``reference`` (``wrt``, the arguments whose derivatives must be
    ``reference``'s, matters only to a backend that differentiates: numpy has none).

    Example:
        >>> differentiate_as(abs, abs, (-3,))
        3
    """
    return fn(*args)


def is_traced(x) -> bool:
    """Whether ``x`` is a placeholder of a traced program: never, eagerly.

    Example:
        >>> is_traced(1.0)
        False
    """
    return False
