"""Control flow and platform facts of the torch backend: what algorithms that loop over
arrays ask of a backend (``scan``, ``cond``, ``jit``, ``checkpoint``, ``differentiate_as``,
``is_traced``, ``COMPILES``...) instead of asking its name. ``backends.torch`` re-exports them.

Torch runs op by op from Python (eager autograd): its loops are Python loops, compiling and
checkpointing are the identity, and a function's derivative is that of the program that
computes its values (``backends.eager_control``).

Example:
    >>> COMPILES, float(scan(lambda c, x: (c + x, None), 0.0, torch.ones(3))[0])
    (False, 3.0)
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

from backends.eager_control import loop_scan

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
    return loop_scan(fn, init, xs, reverse, stack=torch.stack)


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
    try:
        if a.ndim == 2 and b.ndim == 2:
            return torch.mm(a, b)
        if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
            return torch.bmm(a, b)
        return torch.matmul(a, b)
    except RuntimeError:
        if a.dtype == b.dtype:
            raise
    # float32 with float64 promotes as numpy and jax do; only a failed product pays
    dtype = torch.promote_types(a.dtype, b.dtype)
    return _loop_matmul(a.to(dtype), b.to(dtype))


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
def differentiate_as(fn, reference, args, wrt=None):
    """``fn(*args)``, whose derivatives are ``reference``'s where they involve the arguments
    ``wrt`` (indices into ``args``; without it autograd differentiates ``fn``, which computes
    the same function as ``reference``). When one of those requires grad (and autograd is
    on), ``fn`` runs without a graph and ``reference`` with one, joined by a term that is 0
    in value: the value is ``fn``'s bit for bit and derivatives of every order
    (``create_graph``) are ``reference``'s. Otherwise ``fn`` alone runs.

    Example:
        >>> a, b = torch.tensor(2.0, requires_grad=True), torch.tensor(1.0, requires_grad=True)
        >>> out = differentiate_as(lambda a, b: a * b, lambda a, b: a * b * b, (a, b), wrt=(1,))
        >>> [float(d) for d in torch.autograd.grad(out, (a, b))]  # b at 1: a*b = a*b*b
        [1.0, 4.0]
    """
    if wrt is None or not torch.is_grad_enabled() or not any(
            getattr(args[i], "requires_grad", False) for i in wrt):
        return fn(*args)
    with torch.no_grad():
        value = fn(*args)
    p = reference(*args)
    q = p.detach()
    # p - q is 0 where p is finite; -inf (a log-space zero) minus itself is NaN in value.
    return value + torch.where(torch.isfinite(q), p - q, p.new_zeros(()))


def value_and_vjp(fn, x, keep_graph: bool = False):
    """``(fn(x), d sum(fn(x)) / dx)`` by torch autograd, on a detached copy of ``x``.

    With ``keep_graph`` (the caller's arrays that ``fn`` closes over require grad, and grad
    mode is on) both results stay in the caller's graph: the value is differentiable in
    those arrays, and so is the derivative (``create_graph``: a second derivative, as
    ``jax.vjp`` gives on jax). Without it both are values.

    Example:
        >>> v, g = value_and_vjp(lambda x: (x * x).sum(-1), torch.ones(2, 3))
        >>> g.tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    keep_graph = keep_graph and torch.is_grad_enabled()
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        value = fn(x)
        # The gradient of the sum, not grad_outputs=ones: torch 2.x checks explicit
        # grad_outputs with symbolic shapes, whose first use imports sympy (~1 s).
        (grad,) = torch.autograd.grad(value.sum(), (x,), create_graph=keep_graph)
    if keep_graph:
        return value, grad
    return value.detach(), grad
