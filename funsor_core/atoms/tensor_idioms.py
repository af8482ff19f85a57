"""Output-dim idioms of funsor's ``funsor.tensor``: indexing an output by funsors, ``Einsum``,
``tensordot``, ``ops.stack``/``ops.cat`` of funsors, and numeric helpers.

``Getitem(arg, index, offset)`` is ``arg[..., index, ...]`` with ``index`` at output dim
``offset``: a funsor with a ``Bint[n]`` output indexes an output dim of size ``n``, and its inputs
join the result's. ``f["i"]`` is ``Getitem(f, Variable("i", Bint[n]), 0)``: the leading output dim
becomes the input ``i``. ``Einsum(equation, *operands)`` contracts output dims, batched over
inputs. Both are terms: under ``lazy`` or on lazy operands they stay terms with the right
``inputs`` and ``output``; ``exact`` evaluates them on Tensors
(``interpretations/exact/tensor_getitem.py``).

Example:
    >>> f = fc.Tensor(np.arange(6.0).reshape(2, 3))["i", "j"]
    >>> f.inputs, f(i=1, j=2).item()
    ({'i': Bint[2], 'j': Bint[3]}, 5.0)
"""

from __future__ import annotations

import numbers

from funsor_core import ops
from funsor_core.domains import Bint, Domain, Real, Reals
from funsor_core.engine.backend import backend_module
from funsor_core.terms.base import (
    DomainError,
    Funsor,
    Number,
    Variable,
    merge_inputs,
    register_term_hook,
    to_funsor,
)
from funsor_core.terms.reshaping import Cat, Lambda, Stack
from funsor_core.terms.traversal import bound_name

__all__ = ["Getitem", "Finitary", "Einsum", "tensordot", "numeric_array", "get_default_prototype",
           "REDUCE_OP_TO_NUMERIC", "getitem_funsor", "fold_axes"]

# The array reduction applied by ``Reduce(op, ...)`` for each associative op, named as in funsor.
REDUCE_OP_TO_NUMERIC = dict(ops.REDUCE_OPS)


def numeric_array(x, dtype=None, device=None):
    """An array of the active backend holding ``x`` (numbers or nested lists).

    ``dtype`` is ``"real"``, ``"int"``, ``"bool"`` or a numpy-style name (``"float32"`` reads
    as real, ``"int64"``/``"uint8"`` as int); ``device`` is accepted for funsor compatibility
    and ignored: arrays are made where the backend makes them.

    Example:
        >>> numeric_array([2, 3])
        array([2, 3])
    """
    module = backend_module()
    if dtype is None or dtype in ("real", "int"):
        return module.asarray(x, dtype)
    name = str(dtype).rsplit(".", 1)[-1]
    if name.startswith("float"):
        return module.asarray(x, "real")
    if name.startswith(("int", "uint")):
        return module.asarray(x, "int")
    return ops.astype(module.asarray(x), "bool" if name == "bool" else name)


def get_default_prototype():
    """An empty real array of the active backend, for ``ops.new_*`` calls.

    Example:
        >>> get_default_prototype().shape
        (0,)
    """
    return backend_module().asarray([], "real")


# ---------------------------------------------------------------------------------------------
# Indexing an output dim by a funsor.
_GETITEM_DOMAIN = (
    "cannot index output dim {offset} of size {size} (output {output}) by {index!r}, whose "
    "output is {got}: an index must be a funsor with output Bint[{size}], e.g. "
    "Variable('k', Bint[{size}]), a Bint-valued Tensor, or a name 'k'."
)

_GETITEM_REAL = (
    "cannot index output dim {offset} of a funsor with output {output} by a real-valued funsor "
    "(output {got}): an index is Bint-valued, Bint[{size}] here; to index by a funsor, "
    "substitute it into a Bint input, or give it a Bint[{size}] output."
)


class Getitem(Funsor):
    """``arg[..., index, ...]``: output dim ``offset`` of ``arg`` selected by the ``Bint``-valued
    funsor ``index``, whose inputs join the result's (a gather, broadcast by name).

    ``f[i]`` with a Variable ``i`` whose name is new turns the output dim into the input ``i``.

    Example:
        >>> x = fc.Variable("x", fc.Reals[3, 4])
        >>> y = Getitem(x, fc.Variable("j", fc.Bint[4]), 1)
        >>> y.inputs, y.output
        ({'x': Reals[3, 4], 'j': Bint[4]}, Reals[3])
    """

    fields = ("arg", "index", "offset")

    @classmethod
    def _prepare(cls, arg, index, offset=0):
        shape = arg.output.shape
        if not isinstance(offset, int) or not 0 <= offset < len(shape):
            raise ValueError(f"cannot index output dim {offset} of a funsor with output "
                             f"{arg.output}: it has {len(shape)} output dims")
        size = shape[offset]
        index = to_funsor(index, Bint[size]) if not isinstance(index, Funsor) else index
        if index.output.dtype == "real":
            raise TypeError(_GETITEM_REAL.format(offset=offset, output=arg.output,
                                                 got=index.output, size=size))
        if index.output is not Bint[size]:
            raise DomainError(_GETITEM_DOMAIN.format(offset=offset, size=size, output=arg.output,
                                                     index=index, got=index.output))
        merge_inputs(arg.inputs, index.inputs, "index")
        return arg, index, offset

    def _setup(self):
        arg, index, offset = self._args
        self.inputs = merge_inputs(arg.inputs, index.inputs, "index")
        shape = arg.output.shape
        self.output = Domain(arg.output.dtype, shape[:offset] + shape[offset + 1:])

    def _quote_pieces(self) -> tuple:
        # Quoted as the indexing that builds it, ``arg[:, index]``, as funsor's text reads.
        arg, index, offset = self._args
        return (arg, "[" + ":, " * offset, index, "]")


def _is_basic(part) -> bool:
    return (part is None or part is Ellipsis or isinstance(part, slice)
            or (isinstance(part, numbers.Integral) and not isinstance(part, Funsor)))


def getitem_funsor(x: Funsor, index: tuple) -> Funsor:
    """``x[index]`` where some parts of ``index`` are names or funsors (``Funsor.__getitem__``
    calls this). Ints, slices, ``None`` and ``...`` are applied first, then each funsor part,
    left to right, at the output dim it stands for; unlike numpy, two funsor parts never
    broadcast positionally: they broadcast by the names of their inputs.

    Example:
        >>> x = fc.Tensor(np.arange(24.0).reshape(2, 3, 4))
        >>> y = getitem_funsor(x, (None, 1, "k"))
        >>> y.inputs, y.output, y(k=2).data.tolist()
        ({'k': Bint[3]}, Reals[1, 4], [[20.0, 21.0, 22.0, 23.0]])
    """
    ndim = len(x.output.shape)
    parts = list(index)
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"too many indices for a funsor with output {x.output}: {index!r}")
    ellipses = [i for i, p in enumerate(parts) if p is Ellipsis]  # `is`: funsors overload ==
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = ellipses[0]
        parts[at:at + 1] = [slice(None)] * (ndim - consumed)
    # Apply the basic parts with the funsor parts held open as full slices, recording the
    # output dim (after basic indexing) that each funsor part then selects.
    basic, picks, pos = [], [], 0
    for p in parts:
        if _is_basic(p):
            basic.append(p)
            pos += 0 if isinstance(p, numbers.Integral) else 1
        else:
            basic.append(slice(None))
            picks.append((pos, p))
            pos += 1
    if any(not (isinstance(p, slice) and p == slice(None)) for p in basic):
        x = x[tuple(basic)]
    for removed, (pos, part) in enumerate(picks):
        offset = pos - removed  # each funsor part before this one removed one output dim
        size = x.output.shape[offset]
        x = Getitem(x, _as_index(part, size), offset)
    return x


def _as_index(part, size: int) -> Funsor:
    if isinstance(part, str):
        return Variable(part, Bint[size])
    if isinstance(part, Funsor):
        return part
    if getattr(part, "shape", None) == () and hasattr(part, "dtype"):
        if ops.is_floating(part):  # int(1.5) would silently pick entry 1
            raise TypeError(f"a funsor's output is indexed by integers, got a 0-d array of "
                            f"dtype {part.dtype}; cast it first, e.g. x[int(i)]")
        if not ops.is_concrete(part):  # traced (jax.jit): a Bint-valued Tensor, whose
            return to_funsor(part, Bint[size])  # out-of-range values give NaN, not a clamp
        return Number(int(part), size)  # a 0-d integer array
    raise TypeError(f"a funsor's output is indexed by ints, slices, None, ..., names and "
                    f"Bint-valued funsors, got {type(part).__name__}; to index by an array, "
                    f"wrap it first, e.g. Tensor(idx, {{'k': Bint[len(idx)]}}, {size})")


register_term_hook("getitem", getitem_funsor)


# ---------------------------------------------------------------------------------------------
# Einsum over output dims, batched over inputs.
class Finitary(Funsor):
    """Base of the terms that apply one op to a tuple of funsors (funsor's ``Finitary``):
    ``Einsum`` here. Not built directly: a term of this kind is one of its subclasses.

    Example:
        >>> x = fc.Variable("x", fc.Reals[2, 3])  # lazy: a Tensor operand would evaluate it
        >>> isinstance(Einsum("ab->a", x), Finitary)
        True
    """

    @classmethod
    def _prepare(cls, *args):
        raise NotImplementedError(
            "Finitary is the base of n-ary terms such as Einsum; build one of those (or use "
            "the op on funsors directly, e.g. ops.einsum(eq, *funsors))")


class Einsum(Finitary):
    """``Einsum(equation, *operands)``: ``np.einsum`` on the operands' output dims, broadcast
    over their inputs by name (funsor's ``funsor.tensor.Einsum``). Sums only; for named
    sum-product contractions use ``fc.einsum.einsum`` or ``+`` and ``.reduce``.

    Example:
        >>> a = fc.Tensor(np.ones((2, 3)))
        >>> b = fc.Tensor(np.ones((5, 3)), {"i": fc.Bint[5]})
        >>> y = Einsum("ab,b->a", a, b)
        >>> y.inputs, y.data.tolist()[0]
        ({'i': Bint[5]}, [3.0, 3.0])
    """

    fields = ("equation", "operands")

    @classmethod
    def _prepare(cls, equation, *operands):
        # funsor's signature is variadic; the term stores the operands as one tuple (which is
        # how it is rebuilt by substitution and pickling: a funsor is never a tuple).
        if len(operands) == 1 and isinstance(operands[0], tuple):
            operands = operands[0]
        operands = tuple(to_funsor(x) for x in operands)
        equation = equation.replace(" ", "")
        ins, out = equation.split("->") if "->" in equation else (equation, None)
        ins = ins.split(",")
        if "." in equation or len(ins) != len(operands):
            raise ValueError(f"Einsum({equation!r}) needs one term per operand ({len(operands)} "
                             "given) and no '...': inputs broadcast by name already")
        sizes: dict = {}
        for letters, x in zip(ins, operands):
            if len(letters) != len(x.output.shape):
                raise ValueError(f"Einsum({equation!r}): operand {letters!r} has output "
                                 f"{x.output}")
            for c, n in zip(letters, x.output.shape):
                if sizes.setdefault(c, n) != n:
                    raise ValueError(f"Einsum({equation!r}): dim {c!r} is both {sizes[c]} "
                                     f"and {n}")
        if out is None:  # numpy's implicit output: the letters used once, sorted
            out = "".join(sorted(c for c in sizes if "".join(ins).count(c) == 1))
            equation = equation + "->" + out
        inputs: dict = {}
        for x in operands:
            inputs = merge_inputs(inputs, x.inputs, "einsum")
        return equation, operands

    def _setup(self):
        equation, operands = self._args
        inputs: dict = {}
        sizes: dict = {}
        ins, out = equation.split("->")
        for letters, x in zip(ins.split(","), operands):
            inputs = merge_inputs(inputs, x.inputs, "einsum")
            sizes.update(zip(letters, x.output.shape))
        self.inputs = inputs
        self.output = Reals[tuple(sizes[c] for c in out)] if out else Real



def tensordot(x: Funsor, y: Funsor, dims: int) -> Funsor:
    """``np.tensordot(x, y, dims)`` on output dims: contract the last ``dims`` output dims of
    ``x`` with the first ``dims`` of ``y``, broadcasting inputs by name.

    Example:
        >>> x = fc.Tensor(np.ones((2, 3)))
        >>> tensordot(x, fc.Tensor(np.ones((3, 4))), 1).data.shape
        (2, 4)
    """
    nx, ny = len(x.output.shape), len(y.output.shape)
    if not 0 <= dims <= min(nx, ny) or x.output.shape[nx - dims:] != y.output.shape[:dims]:
        raise ValueError(f"tensordot over {dims} dims needs x's last {dims} output dims to "
                         f"equal y's first, got {x.output} and {y.output}")
    symbols = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    xs = symbols[:nx]
    ys = symbols[nx - dims:nx - dims + ny]
    return Einsum(f"{xs},{ys}->{xs[:nx - dims]}{ys[dims:]}", x, y)


def _build_einsum(op, *args, **kwargs):
    # ours: ops.einsum(equation, *operands); funsor's: ops.einsum(operands, equation).
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
    else:
        operands, equation = args[0], kwargs.pop("equation", None) or args[1]
    return Einsum(equation, *operands)


# ---------------------------------------------------------------------------------------------
# ops.stack / ops.cat of funsors act on output dims: named-dim terms wrapped in Lambdas.
def _build_stack(op, parts, axis=0, dim=None):
    parts = tuple(to_funsor(p) for p in parts)
    axis = dim if dim is not None else axis
    nd = len(parts[0].output.shape)
    if not -nd - 1 <= axis <= nd:
        raise ValueError(f"ops.stack axis {axis} is out of range for parts of output "
                         f"{parts[0].output}")
    axis = axis % (nd + 1)
    # Name the output dims left of `axis`, stack along a new input, then turn the names back
    # into output dims: Lambda prepends, so wrap innermost first.
    names = [bound_name("_stack") for _ in range(axis + 1)]
    parts = tuple(_name_leading(p, names[:axis]) for p in parts)
    out = Stack(names[axis], parts)
    for name in reversed(names):
        out = Lambda(Variable(name, out.inputs[name]), out)
    return out


def _build_cat(op, parts, axis=0, dim=None):
    parts = tuple(to_funsor(p) for p in parts)
    axis = dim if dim is not None else axis
    nd = len(parts[0].output.shape)
    if not -nd <= axis < nd:
        raise ValueError(f"ops.cat axis {axis} is out of range for parts of output "
                         f"{parts[0].output}")
    axis = axis % nd
    names = [bound_name("_cat") for _ in range(axis + 1)]
    part_name = bound_name("_part")
    named = []
    for p in parts:
        p = _name_leading(p, names[:axis])
        named.append(Getitem(p, Variable(part_name, Bint[p.output.shape[0]]), 0))
    out = Cat(names[axis], tuple(named), part_name)
    for name in reversed(names):
        out = Lambda(Variable(name, out.inputs[name]), out)
    return out


def _name_leading(x: Funsor, names: list) -> Funsor:
    for name in names:
        x = Getitem(x, Variable(name, Bint[x.output.shape[0]]), 0)
    return x


def _register_builders():
    from funsor_core.ops.op import CatOp, EinsumOp, StackOp, register_funsor_builder

    register_funsor_builder(StackOp, _build_stack, Funsor)
    register_funsor_builder(CatOp, _build_cat, Funsor)
    register_funsor_builder(EinsumOp, _build_einsum, Funsor)


_register_builders()


def fold_axes(op, data, axes: tuple):
    """Reduce ``data`` over ``axes`` by the elementwise binary ``op``, folding each axis in
    halves (log depth, basic slicing only, so every backend and ``jit`` can run it): for ops
    such as bitwise ``or_`` that have no array reduction of their own.

    Example:
        >>> int(fold_axes(ops.or_, np.array([[1, 2], [4, 1]]), (0, 1)))
        7
    """
    for axis in sorted(axes, reverse=True):
        lead = (slice(None),) * axis
        while data.shape[axis] > 1:
            n = data.shape[axis]
            half = n // 2
            folded = op(data[lead + (slice(0, 2 * half, 2),)],
                        data[lead + (slice(1, 2 * half, 2),)])
            if n % 2:
                folded = ops.cat([folded, data[lead + (slice(n - 1, n),)]], axis)
            data = folded
        data = data[lead + (0,)]
    return data
