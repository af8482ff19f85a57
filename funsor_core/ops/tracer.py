"""Record the ops a function applies to its arrays, and replay them on new arrays.

``trace_function(fn, data)`` runs ``fn(**data)`` once with each array of ``data`` replaced by
its backend's *traced* array: an array of the same class family and values that also names
where it came from. Every op's kernel for a traced array (made by a factory, so the eager hot
path and the kernel tables are untouched) computes on the plain arrays and, while a trace is
recording, appends ``(op, arguments)`` to the tape and returns traced results. The tape, cut
back to what the output needs, is an ``OpProgram``: calling it with new arrays of the same
names runs those op calls again, with no funsor terms, rules or checks in between.

What a function computes outside ops (a direct numpy call, ``x.reshape`` on the array) cannot
be replayed: the backend's traced type marks such results *untracked*, and a program whose
output needs one raises ``ValueError`` naming the op that consumed it, never a replay that
silently returns the traced run's numbers. Arrays that no input produced are constants; as in
funsor 0.4.8 they raise unless ``allow_constants=True`` (then they are replayed as they are).
Values that leave the arrays (``bool(x > 0)`` steering a branch) are fixed at trace time.

Example:
    >>> import numpy as np
    >>> from funsor_core import ops
    >>> prog = trace_function(lambda x, y: ops.add(ops.mul(x, x), y),
    ...                       {"x": np.ones(2), "y": np.zeros(2)})
    >>> prog(x=np.array([2.0, 3.0]), y=np.array([1.0, 1.0]))
    array([ 5., 10.])
    >>> len(prog.operations)
    2
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from funsor_core.ops.op import Op, is_array_type, register_kernel_factory

__all__ = ["OpProgram", "trace_function", "register_traced_type", "is_traced_array"]

# plain array type -> its backend's traced type (backends register theirs).
_TRACED_TYPES: dict[type, type] = {}
_TAPES: list[_Tape] = []  # the recording traces, innermost last


def register_traced_type(array_type: type, traced_type: type) -> None:
    """Declare ``traced_type`` the traced stand-in for arrays of ``array_type`` (a backend
    calls this). A traced type offers ``traced_type.trace_wrap(plain, node)``,
    ``x.trace_plain()``, the attribute ``x.trace_node`` (None: untracked) and
    ``traced_type.trace_is_view(plain)``; the results of any computation on it that is not an
    op must be untracked traced arrays, or plain views that ``trace_is_view`` recognises.

    Example:
        >>> import numpy as np
        >>> from backends.numpy_trace import TracedNdarray
        >>> register_traced_type(np.ndarray, TracedNdarray)
        >>> is_traced_array(TracedNdarray.trace_wrap(np.zeros(2), None))
        True
    """
    _TRACED_TYPES[array_type] = traced_type


def is_traced_array(x: Any) -> bool:
    """Whether ``x`` is a backend's traced array (``trace_function``'s stand-in).

    Example:
        >>> import numpy as np
        >>> is_traced_array(np.zeros(2))
        False
    """
    return type(x) in _TRACED_TYPES.values()


class _Slot:
    """A value of the program: input or op result ``index`` (item ``item`` of a tuple)."""

    __slots__ = ("tape", "index", "item")

    def __init__(self, tape: _Tape | None, index: int, item: int | None = None) -> None:
        self.tape, self.index, self.item = tape, index, item

    def __repr__(self) -> str:
        return f"%{self.index}" + ("" if self.item is None else f"[{self.item}]")


class _Constant:
    """An array that no input produced (a leaf of the program)."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value


class _Untracked:
    """An array computed from traced arrays outside ops: it cannot be replayed."""

    __slots__ = ()


_UNTRACKED = _Untracked()


class _Tape:
    def __init__(self) -> None:
        self.calls: list[tuple[Op, tuple, dict]] = []  # (op, template args, template kwargs)
        self.num_inputs = 0
        self.stand_in_types: set[type] = set()  # array types traced through numpy copies

    def template(self, x: Any) -> Any:
        """``x`` with each array replaced by what the program reads there."""
        if type(x) in (tuple, list):
            return type(x)(self.template(v) for v in x)
        if type(x) is dict:
            return {k: self.template(v) for k, v in x.items()}
        if is_traced_array(x):
            node = x.trace_node
            if node is None:
                return _UNTRACKED
            if node.tape is self:
                return node
            return _Constant(x.trace_plain())  # a value of another (outer) trace
        if is_array_type(type(x)):
            traced = _TRACED_TYPES.get(type(x))
            if traced is not None and traced.trace_is_view(x):
                return _UNTRACKED  # np.asarray(t) of a traced t: computed outside ops
            return _Constant(x)
        return x


def _plain(x: Any) -> Any:
    if type(x) in (tuple, list):
        return type(x)(_plain(v) for v in x)
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    if is_traced_array(x):
        return x.trace_plain()
    return x


def _wrap(x: Any, tape: _Tape, index: int, item: int | None = None) -> Any:
    traced = _TRACED_TYPES.get(type(x))
    if traced is not None:
        return traced.trace_wrap(x, _Slot(tape, index, item))
    if item is None and type(x) in (tuple, list):
        return type(x)(_wrap(v, tape, index, i) for i, v in enumerate(x))
    for traced in _TRACED_TYPES.values():
        # a backend scalar (numpy's float64) is a value of the program as well
        scalar = getattr(traced, "trace_scalar_types", ())
        if isinstance(x, scalar):
            return traced.trace_wrap(x, _Slot(tape, index, item))
    return x


def _tracing_kernel(op: Op) -> Callable:
    base = op.base

    def tracing_kernel(*args, **kwargs):
        # kwargs already hold a bound op's parameters (Op.__call__ merged them).
        result = base(*_plain(args), **_plain(kwargs))
        if not _TAPES:  # called from outside the trace (a fast path kept this kernel)
            return result
        tape = _TAPES[-1]
        tape.calls.append((base, tape.template(args), tape.template(kwargs)))
        return _wrap(result, tape, tape.num_inputs + len(tape.calls) - 1)

    tracing_kernel.__name__ = f"tracing_{op.name}"
    return tracing_kernel


def _map_slots(template: Any, slot: Callable, constant: Callable) -> Any:
    # The template (nested tuples, lists and dicts) with each _Slot and _Constant mapped.
    if type(template) in (tuple, list):
        return type(template)(_map_slots(v, slot, constant) for v in template)
    if type(template) is dict:
        return {k: _map_slots(v, slot, constant) for k, v in template.items()}
    if type(template) is _Slot:
        return slot(template)
    if type(template) is _Constant:
        return constant(template)
    return template


def _read(template: Any, values: list) -> Any:
    def slot(s):
        return values[s.index] if s.item is None else values[s.index][s.item]

    return _map_slots(template, slot, lambda c: c.value)


def _leaves(template: Any):
    if type(template) in (tuple, list):
        for v in template:
            yield from _leaves(v)
    elif type(template) is dict:
        for v in template.values():
            yield from _leaves(v)
    elif type(template) in (_Slot, _Constant, _Untracked):
        yield template


class OpProgram:
    """A straight-line program of op calls, made by ``trace_function``: call it with arrays
    named as the traced function's arguments.

    ``operations`` lists ``(op, args, kwargs)`` with ``%k`` naming input or result ``k``.

    Example:
        >>> import numpy as np
        >>> from funsor_core import ops
        >>> prog = trace_function(lambda x: ops.exp(x), {"x": np.zeros(1)})
        >>> prog(x=np.ones(1)), prog.operations
        (array([2.71828183]), [(ops.exp, (%0,), {})])
    """

    def __init__(self, inputs: tuple[str, ...], operations: list, output: Any) -> None:
        self.inputs = inputs
        self.operations = operations
        self._output = output

    def __call__(self, **kwargs) -> Any:
        if set(kwargs) != set(self.inputs):
            raise TypeError(f"this program takes the arrays {list(self.inputs)}, "
                            f"got {sorted(kwargs)}")
        values = [kwargs[name] for name in self.inputs]
        for op, args, kw in self.operations:
            values.append(op(*_read(args, values), **_read(kw, values)))
        return _read(self._output, values)

    def __repr__(self) -> str:
        return f"OpProgram(inputs={list(self.inputs)}, {len(self.operations)} operations)"


_UNTRACKED_MSG = ("trace_function: {what} an array computed from the inputs outside funsor's "
                  "ops (a direct backend call, or an array method such as x.reshape), which a "
                  "program of op calls cannot replay. Compute it with ops instead (ops.reshape, "
                  "ops.einsum, ...).")


def trace_function(fn: Callable, kwargs: dict, *, allow_constants: bool = False) -> OpProgram:
    """Run ``fn(**kwargs)`` once on traced arrays and return the ``OpProgram`` of the op calls
    its output needs (funsor's ``funsor.ops.tracer.trace_function``).

    The output may be an array or a tuple or list of arrays. An array that no input produced
    raises ``ValueError`` unless ``allow_constants`` (then it is replayed as it is).

    Example:
        >>> import numpy as np
        >>> from funsor_core import ops
        >>> prog = trace_function(lambda a, b: ops.matmul(a, b), {"a": np.eye(2), "b": np.ones(2)})
        >>> prog(a=2 * np.eye(2), b=np.array([1.0, 2.0]))
        array([2., 4.])
    """
    if not isinstance(kwargs, dict):
        raise TypeError(f"trace_function(fn, kwargs): kwargs is a dict of arrays by argument "
                        f"name, got {type(kwargs).__name__}")
    names = tuple(kwargs)
    if len({id(v) for v in kwargs.values()}) != len(names):
        raise ValueError(f"trace_function: one array is passed as several of {list(names)}; "
                         f"pass a copy for each, so that the program can tell them apart")
    tape = _Tape()
    traced = {}
    for k, (name, value) in enumerate(kwargs.items()):
        kind = _TRACED_TYPES.get(type(value))
        if kind is None and not is_traced_array(value):  # a numpy scalar is an input too
            kind = next((t for t in _TRACED_TYPES.values()
                         if isinstance(value, getattr(t, "trace_scalar_types", ()))), None)
        if kind is None:
            kind, value = _stand_in(name, value, tape)
        traced[name] = kind.trace_wrap(value, _Slot(tape, k))
    tape.num_inputs = len(names)
    if not _TAPES:  # the kernels for traced arrays exist only while a trace records
        for kind in _TRACED_TYPES.values():
            register_kernel_factory(kind, _tracing_kernel)
    _TAPES.append(tape)
    try:
        result = fn(**traced)
    except TypeError as e:
        if not tape.stand_in_types:
            raise
        kinds = ", ".join(sorted(t.__name__ for t in tape.stand_in_types))
        raise TypeError(f"trace_function: the {kinds} inputs are traced through numpy copies "
                        f"of their values, and the function failed on one: {e}. A direct "
                        f"backend call (torch.exp(x)) cannot be traced; use ops (ops.exp(x))"
                        ) from e
    finally:
        _TAPES.pop()
        if not _TAPES:
            for kind in _TRACED_TYPES.values():
                register_kernel_factory(kind, None)
    calls, output = _live_calls(tape, tape.template(result), allow_constants)
    return OpProgram(names, calls, output)


def _stand_in(name: str, value: Any, tape: _Tape) -> tuple[type, Any]:
    # An array of a backend with no traced type of its own (torch; jax, whose arrays cannot
    # be subclassed) is traced through a numpy copy of its values: the program is a list of
    # op calls, so it replays on that backend's arrays; only the trace's own values are numpy's.
    stand_in = _TRACED_TYPES.get(np.ndarray)
    if stand_in is None or not is_array_type(type(value)):
        raise TypeError(f"trace_function: input {name!r} is a {type(value).__name__}, "
                        f"not an array of a backend that can be traced "
                        f"({', '.join(t.__name__ for t in _TRACED_TYPES) or 'none loaded'})")
    from funsor_core.ops.builtin import is_concrete, to_numpy

    if not is_concrete(value):
        raise TypeError(f"trace_function: input {name!r} is a traced {type(value).__name__} "
                        "(inside jax.jit, vmap or grad), whose values cannot be read: trace "
                        "outside the transformation, then call the program inside it")
    tape.stand_in_types.add(type(value))
    return stand_in, np.asarray(to_numpy(value))


def _live_calls(tape: _Tape, output: Any, allow_constants: bool) -> tuple[list, Any]:
    """The calls the output needs, in order, and the output, with slots renumbered to the
    kept values (inputs first)."""
    n = tape.num_inputs
    live = set()

    def need(template, what):
        for leaf in _leaves(template):
            if leaf is _UNTRACKED:
                raise ValueError(_UNTRACKED_MSG.format(what=what))
            if type(leaf) is _Constant and type(leaf.value) in tape.stand_in_types:
                raise ValueError(
                    f"trace_function: {what} a {type(leaf.value).__name__} that no op "
                    f"produced. The inputs of that type were traced through numpy copies of "
                    f"their values, so an array computed from them by a direct backend call "
                    f"(jnp.exp(x), torch.exp(x)) cannot be told from a constant: compute it "
                    f"with ops (ops.exp(x)), or pass a constant as an input")
            if type(leaf) is _Constant and not allow_constants:
                raise ValueError(f"trace_function: {what} an array that no op on the inputs "
                                 f"produced: {leaf.value!r}. If it is a constant, pass it as "
                                 f"an input, or allow_constants=True to replay it as it is; "
                                 f"if it was computed from the inputs outside ops, compute "
                                 f"it with ops")
            if type(leaf) is _Slot and leaf.index >= n:
                live.add(leaf.index)

    need(output, "the output is")
    for index in range(n + len(tape.calls) - 1, n - 1, -1):
        if index in live:
            op, args, kw = tape.calls[index - n]
            need((args, kw), f"ops.{op.name} reads")
    renumber = {k: k for k in range(n)}
    for index in sorted(live):
        renumber[index] = len(renumber)
    calls = [(op, *_renumbered((args, kw), renumber))
             for index in sorted(live) for op, args, kw in [tape.calls[index - n]]]
    return calls, _renumbered(output, renumber)


def _renumbered(template: Any, renumber: dict) -> Any:
    # ``renumber`` maps tape indices to program indices; a new _Slot frees the tape.
    return _map_slots(template, lambda t: _Slot(None, renumber[t.index], t.item), lambda c: c)
