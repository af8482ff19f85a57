"""funsor's ``compile_funsor``: a funsor expression as a straight-line program of ops.

Each node of the expression (in post-order, shared nodes once) becomes one op applied to
earlier values: constants (Numbers, Tensors), the expression's free inputs (by name), then
``Unary``, ``Binary``, products (``Contraction`` without reduction) and ``Tuple``. Unlike
funsor 0.4.8, whose ``compile_funsor`` raises on any reduction, a sum-product ``Contraction``
with reduced names is one step running a compiled elimination (``compiled.compile``).

Example:
    >>> x = fc.Variable("x", fc.Reals[3])
    >>> program = compile_funsor(1 + x * x)
    >>> program(x=np.array([1.0, 2.0, 3.0]))
    array([ 2.,  5., 10.])
"""

from __future__ import annotations

from funsor_core.algorithms.compiled.expression import compile as compile_elimination
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Binary, Funsor, Number, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.product import Tuple

__all__ = ["OpProgram", "compile_funsor", "make_tuple"]


def make_tuple(*args) -> tuple:
    """The op of a ``Tuple`` node: its values as a Python tuple.

    Example:
        >>> make_tuple(1, "a", None)
        (1, 'a', None)
    """
    return tuple(args)


class _Eliminate:
    # One compiled elimination as a step: takes its parameters' arrays in order.
    def __init__(self, program) -> None:
        self.program = program
        self.name = "compiled_elimination"

    def __call__(self, *arrays):
        return self.program(**dict(zip(self.program.inputs, arrays)))


class OpProgram:
    """A program of ops on backend values (funsor's ``funsor.ops.program.OpProgram``).

    Args:
        constants: leaf values.
        inputs: names of the arguments, in order.
        operations: ``(op, arg_ids)`` per step; ids count constants, inputs, then steps.
        domains: the inputs' domains (``compile_funsor`` gives them): a value must end in
            its domain's shape (leading dims are a batch), else ``ValueError`` names it.

    Example:
        ``2 * x + x``: constant 0 is 2, input 1 is ``x``, step 2 is ``2 * x``, step 3 the sum.

        >>> from funsor_core import ops
        >>> prog = OpProgram([np.array(2.0)], ["x"], [(ops.mul, (0, 1)), (ops.add, (2, 1))])
        >>> prog(x=np.array([1.0, 3.0]))
        array([3., 9.])
    """

    def __init__(self, constants, inputs, operations, domains=None) -> None:
        self.constants = tuple(constants)
        self.inputs = tuple(inputs)
        self.operations = tuple(operations)
        self.domains = None if domains is None else dict(domains)

    def __call__(self, **kwargs):
        env = list(self.constants)
        for name in self.inputs:
            if name not in kwargs:
                raise ValueError(f"Missing kwarg: {name!r}")
            value = kwargs.pop(name)
            if self.domains is not None:
                _check_value(name, self.domains[name], value)
            env.append(value)
        if kwargs:
            raise ValueError(f"Unrecognized kwargs: {set(kwargs)}")
        for op, arg_ids in self.operations:
            env.append(op(*(env[i] for i in arg_ids)))
        return env[-1]

    def as_code(self, name: str = "program") -> str:
        """Python source of a function equivalent to this program (numpy constants)."""
        lines = [f"def {name}({', '.join(self.inputs)}):",
                 "    import numpy as np",
                 "    from funsor_core import ops"]
        values = []
        for c in self.constants:
            values.append(_constant_code(c))
        values.extend(self.inputs)
        for op, arg_ids in self.operations:
            args = ", ".join(f"v{i}" for i in arg_ids)
            if op is make_tuple:
                values.append(f"({args},)")
            elif op is _identity:
                values.append(args)
            elif isinstance(op, _Eliminate):
                raise NotImplementedError("as_code(): a compiled elimination step has no "
                                          "source form yet (issue 30); call the program.")
            else:
                values.append(f"{op!r}({args})")
        lines += [f"    v{i} = {body}" for i, body in enumerate(values)]
        lines.append(f"    return v{len(values) - 1}")
        return "\n".join(lines) + "\n"


def _check_value(name: str, domain, value) -> None:
    shape = tuple(getattr(value, "shape", ()))
    want = tuple(domain.shape)
    if want and shape[len(shape) - len(want):] != want:
        raise ValueError(f"input {name!r} is {domain}: its value must end in shape {want} "
                         f"(leading dims are a batch), got shape {shape}")


def _constant_code(c) -> str:
    if isinstance(c, (int, float, bool)):
        return repr(c)
    import numpy as np

    if isinstance(c, np.ndarray):
        return f"np.array({c.tolist()!r}, dtype={str(c.dtype)!r})"
    raise NotImplementedError(f"as_code(): no source form for the constant {type(c).__name__}")


def _children(f: Funsor) -> tuple:
    if isinstance(f, Unary):
        return (f.arg,)
    if isinstance(f, Binary):
        return (f.lhs, f.rhs)
    if isinstance(f, Tuple):
        return tuple(f.args)
    if isinstance(f, Contraction) and not f.reduced_vars:
        return tuple(f.terms)
    return ()


def _postorder(expr: Funsor) -> list:
    seen, out, stack = set(), [], [(expr, False)]
    while stack:
        f, done = stack.pop()
        if done:
            out.append(f)
            continue
        if id(f) in seen:
            continue
        seen.add(id(f))
        stack.append((f, True))
        stack.extend((c, False) for c in reversed(_children(f)))
    return out


def compile_funsor(expr: Funsor) -> OpProgram:
    """Compile a funsor expression to an ``OpProgram`` run on backend values.

    Example:
        >>> x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
        >>> compile_funsor(fc.Tuple((x, x * y)))(x=2.0, y=3.0)
        (2.0, 6.0)
    """
    if not isinstance(expr, Funsor):
        raise TypeError(f"compile_funsor(): expected a Funsor, got {type(expr).__name__}")
    nodes = _postorder(expr)
    ids, constants = {}, []
    for f in nodes:
        if isinstance(f, Number) or (isinstance(f, Tensor) and not f.inputs):
            ids[id(f)] = len(ids)
            constants.append(f.data)
    inputs = list(expr.inputs)
    by_name = {}
    for name in inputs:
        by_name[name] = len(ids) + len(by_name)
    start = len(ids) + len(by_name)
    operations = []
    for f in nodes:
        if id(f) in ids:
            continue
        if isinstance(f, Variable):
            ids[id(f)] = by_name[f.name]
            continue
        for step in _steps(f, ids, by_name, start + len(operations)):
            operations.append(step)
        ids[id(f)] = start + len(operations) - 1
    if ids[id(expr)] != start + len(operations) - 1 or not operations:
        operations.append((_identity, (ids[id(expr)],)))  # the result must come last
    return OpProgram(constants, inputs, operations, expr.inputs)


def _identity(x):
    return x


def _steps(f: Funsor, ids: dict, by_name: dict, first: int) -> list:
    # The steps computing f; step k of them gets id first + k, the last one is f's value.
    if isinstance(f, Unary):
        return [(f.op, (ids[id(f.arg)],))]
    if isinstance(f, Binary):
        return [(f.op, (ids[id(f.lhs)], ids[id(f.rhs)]))]
    if isinstance(f, Tuple):
        return [(make_tuple, tuple(ids[id(a)] for a in f.args))]
    if isinstance(f, Contraction) and not f.reduced_vars:
        args = [ids[id(t)] for t in f.terms]  # a product: fold bin_op left to right
        steps, acc = [], args[0]
        for k, arg in enumerate(args[1:]):
            steps.append((f.bin_op, (acc, arg)))
            acc = first + k
        return steps or [(_identity, (acc,))]
    program = compile_elimination(f)
    return [(_Eliminate(program), tuple(by_name[n] for n in program.inputs))]
