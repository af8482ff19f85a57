"""The steps of an ``ArrayProgram`` resolved once per array type: the arithmetic of the
registered implementations, without their per-call dispatch.

An ``ArrayProgram`` (``algorithms.contract.replay``) calls, per step, the implementation the
step's rule registered: ``reduce_array`` looks its op up and the op looks up its kernel;
``contract_planned_arrays`` goes through ``ContractionPlan.run_arrays``, which picks its route
from the plan's structure, then ``log_pair_run`` and ``log_sum``. On small arrays those
lookups cost about as much as the kernels (a plated model's four steps make seven torch calls
of 1-11 us each). Everything they decide depends on the step's structure and the arrays' type
only, so ``fuse_steps`` decides it once per (program, array type, kernel generation) and
returns one closure per step that calls the same kernels on the same operands in the same
order. Two spellings differ, neither in value: a size-1 dim is inserted by ``reshape`` to the
planned shape instead of indexing with ``None`` (the same view; torch adds a reshaped view
faster), and a reduction over one axis passes that axis as an int (the same reduction; torch
parses an int faster than a tuple). The results are the same arrays, bit for bit; nothing here
reads a value, so under ``jax.jit`` the closures trace the same arithmetic.

What stays per call, because it is not structure: the memory budget of ``fc.memory_budget``
(a step checks it when one is set, as ``run_arrays`` does), and for backends whose
``logsumexp`` differentiates to NaN on a slice of ``-inf`` (torch), whether the broadcast
tracks gradients (then ``log_sum``'s guarded form runs, as before).

Example:
    >>> from funsor_core.algorithms.contract.replay import REDUCE, compile_elimination
    >>> i, j = ("i", fc.Bint[2]), ("j", fc.Bint[3])
    >>> program = compile_elimination(ops.add, ops.mul, (((i, j), fc.Real),),
    ...                               [(REDUCE, (0,), frozenset("j"))], (1,))
    >>> [fn(np.full((2, 3), 2.0)) for fn in fuse_steps(program.steps, np.ones(1))]
    [array([8., 8.])]
"""

from __future__ import annotations

from collections.abc import Callable

from funsor_core import ops
from funsor_core.algorithms.compiled.cost import BUDGETS
from funsor_core.algorithms.contract.kernels import log_sum
from funsor_core.engine.backend import backend_of

__all__ = ["fuse_steps", "fused_reduce", "fused_log_pair", "straight_line"]


def fused_reduce(op, axes: tuple, sample) -> Callable | None:
    """``reduce_array(op, axes, x)`` for arrays of the type of ``sample`` as one closure, or
    None where the reduction's kernel is not a plain one.

    Example:
        >>> fused_reduce(ops.add, (1,), np.ones(1))(np.ones((2, 3)))
        array([3., 3.])
    """
    kernel = ops.REDUCE_OPS[op].array_kernel(type(sample))
    if kernel is None:
        return None
    # A reduction of one array: its exps are worth keeping for the derivative (log_sum's
    # ``shared``), where the backend has that kernel and its derivative is finite on -inf.
    backend = backend_of(sample, None)
    if (op is ops.logaddexp and backend is not None and backend.LOGSUMEXP_GRAD_FINITE
            and getattr(backend, "logsumexp_shared", None) is not None):
        kernel = backend.logsumexp_shared
    axes = _one_int(axes)
    kernel = _by_int_axis(kernel, axes)

    def reduce_step(x):
        return kernel(x, axes)

    return reduce_step


def _by_int_axis(kernel: Callable, axes) -> Callable:
    # A backend whose reduction kernel of one int axis is a library call by position says so
    # (``kernel.int_axis``, torch's): that call, without the kernel's own frame.
    if type(axes) is int:
        return getattr(kernel, "int_axis", None) or kernel
    return kernel


def fused_log_pair(plan, sample) -> Callable | None:
    """``contract_planned_arrays(ops.logaddexp, ops.add, plan, x, y)`` for arrays of the type
    of ``sample`` as one closure, where ``plan`` is one step that ``run_arrays`` computes by
    ``log_pair_run`` (``ContractionPlan.pair_log_spec``); None otherwise.

    Example:
        >>> from funsor_core.algorithms.contract.plan import plan_contraction
        >>> plan = plan_contraction((("a",), ("a", "b")), {"a": 2, "b": 3}, ("b",))
        >>> fused_log_pair(plan, np.ones(1))(np.zeros(2), np.zeros((2, 3))).round(4)
        array([0.6931, 0.6931, 0.6931])
    """
    found = plan.pair_log_spec()
    if found is None:
        return None
    ((px, ix), (py, iy), axes, final, shared), (sx, sy) = found
    typ = type(sample)
    permute = ops.permute.array_kernel(typ)
    reshape = ops.reshape.array_kernel(typ)
    lse = ops.logsumexp.array_kernel(typ)
    backend = backend_of(sample, None)
    if permute is None or reshape is None or lse is None or backend is None:
        return None
    if shared and getattr(backend, "logsumexp_shared", None) is not None:
        lse = backend.logsumexp_shared
    lse_axes = _one_int(axes)
    lse = _by_int_axis(lse, lse_axes)
    # log_sum's choice, made once: the plain kernel where the backend's derivative is finite
    # on a slice of -inf; else per call, by whether the broadcast tracks gradients.
    guarded = not backend.LOGSUMEXP_GRAD_FINITE
    tracks = backend.tracks_gradients

    def log_pair_step(x, y):
        if BUDGETS:
            plan.check_memory(getattr(getattr(x, "dtype", None), "itemsize", 8))
        if px is not None:
            x = permute(x, px)
        if sx is not None:
            x = reshape(x, sx)
        if py is not None:
            y = permute(y, py)
        if sy is not None:
            y = reshape(y, sy)
        z = x + y
        z = log_sum(z, axes, shared) if guarded and tracks(z) else lse(z, lse_axes)
        return z if final is None else permute(z, final)

    return log_pair_step


def _one_int(axes: tuple):
    # A reduction over one axis by that axis alone: every backend's kernel reads an int axis
    # as the same reduction (torch parses it faster than a tuple).
    return axes[0] if len(axes) == 1 else axes


def fuse_steps(steps: tuple, sample) -> list | None:
    """One closure per step of an ``ArrayProgram`` (``steps``: ``(check, static, positions)``
    whose implementations are the built-in ``contract_planned_arrays`` and ``reduce_array``)
    for arrays of the type of ``sample`` (one of the program's arrays; not read); a step with
    no closure of its own calls its implementation. None where no step gains anything.

    Example:
        >>> from funsor_core.algorithms.contract.replay import REDUCE, compile_elimination
        >>> i = ("i", fc.Bint[2])
        >>> program = compile_elimination(ops.add, ops.mul, (((i,), fc.Real),),
        ...                               [(REDUCE, (0,), frozenset("i"))], (1,))
        >>> float(fuse_steps(program.steps, np.ones(1))[0](np.full(2, 3.0)))  # 3 * 3
        9.0
    """
    fns, gained = [], False
    for _, static, _ in steps:
        if len(static) == 2:  # (op, axes): a "reduce" step
            fn = fused_reduce(static[0], static[1], sample)
        elif static[0] is ops.logaddexp and static[1] is ops.add:
            fn = fused_log_pair(static[2], sample)
        else:
            fn = None
        gained = gained or fn is not None
        fns.append(fn)
    return fns if gained else None


# Programs up to this many values run as one generated function; longer ones (a tree of
# thousands of factors) keep the loop, whose per-step cost is small beside theirs.
_MAX_STRAIGHT = 64


def straight_line(steps: list, n_inputs: int, outputs: tuple) -> Callable | None:
    """The steps ``[(fn, operand positions), ...]`` of a program on ``n_inputs`` arrays as
    one function of those arrays that returns the arrays at ``outputs``: each step a line
    ``v<n> = f<k>(v<a>, v<b>)`` on local names, instead of a loop that indexes a list, reads
    each step's tuple and dispatches on its arity (about 0.3 us a step, a quarter of a small
    plated model's overhead around its kernels). None past ``_MAX_STRAIGHT`` values.

    Example:
        >>> run = straight_line([(np.negative, (0,)), (np.add, (1, 2))], 2, (3,))
        >>> run(np.ones(2), np.full(2, 3.0))  # [(3 + -1)]
        [array([2., 2.])]
    """
    if n_inputs + len(steps) > _MAX_STRAIGHT:
        return None
    fns = [f"f{k}" for k in range(len(steps))]
    lines = [f"def make({', '.join(fns)}):",
             f"    def run({', '.join(f'v{i}' for i in range(n_inputs))}):"]
    for k, (_, pos) in enumerate(steps):
        lines.append(f"        v{n_inputs + k} = f{k}({', '.join(f'v{p}' for p in pos)})")
    lines.append(f"        return [{', '.join(f'v{o}' for o in outputs)}]")
    lines.append("    return run")
    # Only integers and fixed names enter the text; the functions are bound as closure cells.
    namespace: dict = {}
    exec("\n".join(lines), namespace)  # noqa: S102
    return namespace["make"](*(fn for fn, _ in steps))
