"""Control flow and platform facts of the torch backend: what algorithms that loop over
arrays ask of a backend (``scan``, ``cond``, ``jit``, ``checkpoint``, ``differentiate_as``,
``is_traced``, ``COMPILES``...) instead of asking its name. ``backends.torch`` re-exports them.

Torch runs op by op from Python (eager autograd): its loops are Python loops, compiling and
checkpointing are the identity, and a function's derivative is that of the program that
computes its values.

Example:
    >>> COMPILES, cond(torch.tensor(True), lambda x: x + 1, lambda x: x, 0)
    (False, 1)
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

# Seconds of one array call from Python on one core, for the chains' cost model (fitted to
# benchmarks/markov.py's rounds against T).
CALL_SECONDS = 5e-6
COMPILES = False  # whole programs are not traced and compiled: values can be read anywhere
DIFFERENTIABLE = True  # autograd: algorithms may read derivatives (posterior marginals)


def scan(fn, init, xs, reverse: bool = False):
    """``carry, y = fn(carry, x)`` over the first axis of ``xs`` (a tensor or a tuple of
    them), as a Python loop; returns the last carry and the ``y`` stacked (None if None).

    Example:
        >>> float(scan(lambda c, x: (c + x, None), 0.0, torch.arange(4.0))[0])
        6.0
    """
    leaves = xs if isinstance(xs, (tuple, list)) else (xs,)
    times = range(leaves[0].shape[0])
    ys = []
    for t in (reversed(times) if reverse else times):
        x = tuple(leaf[t] for leaf in leaves) if isinstance(xs, (tuple, list)) else xs[t]
        init, y = fn(init, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    return init, (None if not ys or ys[0] is None else torch.stack(ys))


def cond(pred, true_fn, false_fn, operand):
    """``true_fn(operand)`` if ``pred`` else ``false_fn(operand)``: the value is concrete.

    Example:
        >>> cond(torch.tensor(False), lambda x: x + 1, lambda x: x, 0)
        0
    """
    return true_fn(operand) if bool(pred) else false_fn(operand)


def jit(fn):
    """The identity: eager torch runs op by op.

    Example:
        >>> jit(abs)(-2)
        2
    """
    return fn


def checkpoint(fn, prevent_cse: bool = True):
    """The identity: autograd keeps the residuals of ``fn``.

    Example:
        >>> checkpoint(abs)(-2)
        2
    """
    return fn


def differentiate_as(fn, reference, args):
    """``fn(*args)``, differentiated by autograd through ``fn`` itself (the same function as
    ``reference``: the derivatives agree).

    Example:
        >>> float(differentiate_as(torch.sin, torch.sin, (torch.zeros(()),)))
        0.0
    """
    return fn(*args)


def is_traced(x) -> bool:
    """Whether ``x`` is a placeholder of a traced program (never, eagerly).

    Example:
        >>> is_traced(torch.zeros(2))
        False
    """
    return False


def platform() -> str:
    """Where torch computes by default: ``"cuda"`` when a GPU is visible, else ``"cpu"``.

    Example:
        >>> platform() in ("cpu", "cuda")
        True
    """
    return "cuda" if torch.cuda.is_available() else "cpu"


def _loop_matmul(a, b):
    # bmm and mm skip matmul's broadcasting logic: (50, 4, 4) 12 -> 10 us, (4, 4) 4.5 ->
    # 1.6 us.
    if a.ndim == 2 and b.ndim == 2:
        return torch.mm(a, b)
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
        return torch.bmm(a, b)
    return torch.matmul(a, b)


# The few raw array calls of a hot eager loop (a round of a linear-space chain tree), bound
# once: going through ``ops`` dispatch was a quarter of a small chain's time (K = 4, T = 100:
# 365 -> 276 us).
LOOP_FNS = SimpleNamespace(
    matmul=_loop_matmul, exp=torch.exp, log=torch.log, cat=lambda xs: torch.cat(xs, 0),
    unbind=lambda x: list(torch.unbind(x, 0)),
    total=lambda x: torch.sum(x, dim=0),
    max2=lambda x: torch.amax(x.detach(), dim=(-2, -1), keepdim=True),
    max1=lambda x: torch.amax(x.detach(), dim=-1, keepdim=True),
    sum=lambda x, axis, keep: torch.sum(x, dim=axis, keepdim=keep),
    smallest=lambda x: float(torch.amin(x.detach())))


# --- autograd glue, for algorithms that read derivatives (posterior marginals of a chain) ---
def value_and_vjp(fn, x):
    """``(fn(x), d sum(fn(x)) / dx)`` by torch autograd, on a detached copy of ``x`` (so the
    derivative is a value, not part of the caller's graph).

    Example:
        >>> v, g = value_and_vjp(lambda x: (x * x).sum(-1), torch.ones(2, 3))
        >>> g.tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        value = fn(x)
        (grad,) = torch.autograd.grad(value, (x,), grad_outputs=torch.ones_like(value))
    return value.detach(), grad
