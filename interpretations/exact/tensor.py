"""Exact rules for the Tensor atom: broadcasting by name, reductions, substitution (indexing),
stacking, concatenation, Lambda and lifted functions."""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.contract.replay import reduce_array
from funsor_core.atoms.int_range import (
    _CAST_FIRST,
    FLOAT_DTYPES,
    SAFE_BOUND,
    _int_max,
    check_int_range,
    is_float_dtype,
    real_reduce,
    real_result,
    widen_int_result,
)
from funsor_core.atoms.tensor import (
    INDEX_TYPES,
    Tensor,
    align_binary,
    align_tensor,
    align_tensors,
    fold_axes,
    index_tensor,
    index_tensor_number,
    index_tensor_numbers,
)
from funsor_core.atoms.tensor_facts import is_zero, logaddexp_of_normalized
from funsor_core.atoms.tensor_fast_ops import (
    binary_tensor_tensor,
    reduce_tensor_name,
    subs_tensor_int,
)
from funsor_core.domains import Bint, Real
from funsor_core.engine.cache import FastCache
from funsor_core.engine.fast_path import array_program
from funsor_core.ops import BinaryOp, Op, ReductionOp, UnaryOp
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import (
    Align,
    Binary,
    Number,
    Reduce,
    Subs,
    Unary,
    Variable,
    index_to_python,
    unary_domain,
)
from funsor_core.terms.inputs import reduce_domain
from funsor_core.terms.reshaping import Cat, Function, Lambda, Stack
from interpretations.exact import exact


# op(t): elementwise ops map the data; ops on the output dims act on the rightmost dims,
# with axes counted from the right so that batch dims are untouched.
@exact.register(Unary, UnaryOp, Tensor)
def exact_unary_tensor(op, arg):
    out = unary_domain(op, arg.output)
    base = op.base
    data = arg.data
    if isinstance(base, ReductionOp):
        kw = op.kwargs
        nd = len(arg.output.shape)
        axis = kw.get("axis")
        if axis is None:
            axis = tuple(range(-nd, 0))
            if base in (ops.argmax, ops.argmin):
                raise ValueError(f"ops.{base.name} of a funsor needs one axis")
        if out.dtype == "real" and data.dtype not in FLOAT_DTYPES and not is_float_dtype(data):
            data = ops.astype(data, "real")  # int data reduced as floats: x - max of uint8 wraps
        data = base(data, axis=axis, keepdims=kw.get("keepdims", False))
        if out.dtype != "real" and out.dtype != arg.dtype:  # a sum or product: widened bound
            data = _int_reduction(base, arg, axis, kw, data, out)
    elif base is ops.transpose:
        nd = len(arg.output.shape)
        dims = [d - nd if d >= 0 else d for d in (op.kwargs.get("dim0", -2),
                                                   op.kwargs.get("dim1", -1))]
        data = base(data, dims[0], dims[1])
    elif base is ops.permute or base is ops.expand:
        # The bound axes / shape describe the output; the batch dims go first, unmoved.
        nb = len(arg.inputs)
        if base is ops.permute:
            data = base(data, tuple(range(nb)) + tuple(nb + a for a in op.kwargs["axes"]))
        else:  # new output dims are inserted between the batch dims and the old output
            shape, batch = tuple(op.kwargs["shape"]), tuple(data.shape[:nb])
            new = len(shape) - len(arg.output.shape)
            if new and nb:
                data = ops.reshape(data, batch + (1,) * new + tuple(arg.output.shape))
            data = base(data, batch + shape)
    elif out.dtype == "real" and arg.dtype != "real":  # -t of a Bint t: see _real_op
        data = _real_op(op, (data,), 0)
    elif out.dtype == "real" and data.dtype not in FLOAT_DTYPES and (
            base is not ops.astype and base is not ops.invert and not is_float_dtype(data)):
        # A real t of int/bool data is cast first: numpy's exp of int8 is float16 (exp(100)
        # is inf), -t of bool raises, torch has no abs of bool. (``~`` keeps its integers.)
        data = op(ops.astype(data, "real"))
    else:
        data = op(data)
    return Tensor.make(data, arg.inputs, out.dtype, arg._ikey)


def _int_reduction(base, arg, axis, kw, data, out):
    # A Bint sum or product in a dtype that holds its widened bound: the backend's default int
    # where the result's dtype is narrower (by dtype and bound: the same under jax.jit).
    if (fits := _int_max(data.dtype)) is not None and fits < out.dtype - 1:
        data = base(ops.astype(arg.data, "int"), axis=axis, keepdims=kw.get("keepdims", False))
        check_int_range(data, out, f"apply ops.{base.name} to the output of a Tensor",
                        lambda: f"The Tensor has inputs {dict(arg.inputs)} and output {arg.output}")
    return data


# t[index] indexes the output dims, to the right of the batch dims.
@exact.register(Unary, type(ops.getitem), Tensor)
def exact_unary_getitem_tensor(op, arg):
    index = (slice(None),) * len(arg._ikey) + index_to_python(op.kwargs["index"])
    out = unary_domain(op, arg.output)
    return Tensor.make(arg.data[index], arg.inputs, out.dtype, arg._ikey)


# op(lhs, rhs) of two tensors: align shared inputs by name, then broadcast.
@exact.register(Binary, BinaryOp, Tensor, Tensor)
@array_program("eager_binary", binary_tensor_tensor)  # same inputs: in one frame
def exact_binary_tensor_tensor(op, lhs, rhs):
    if type(lhs.data) is not type(rhs.data):
        # Two backends raise; a Tensor of a numpy scalar meeting another backend's array is
        # a number (terms/backend_check.py), so no kernel sees the two together.
        new = check_backends(op.name, (lhs, rhs), ("the left Tensor", "the right Tensor"))
        if new[0] is not lhs or new[1] is not rhs:
            return Binary(op, *new)
    if op.base is ops.matmul:
        return _matmul(op, lhs, rhs)
    if op is ops.sub and is_zero(rhs.data) and _subtracts_nothing(lhs, rhs):
        return lhs
    out = ops.infer_domain(op, lhs.output, rhs.output)
    ikey = lhs._ikey
    if (ikey is rhs._ikey or ikey == rhs._ikey) and len(lhs.output.shape) == len(
            rhs.output.shape):
        # The same inputs in the same order and outputs of one rank: the arrays broadcast
        # as they are, and the result shares the left's inputs (terms are immutable). (The
        # ranks from the domains: a torch .shape is an object built per access.)
        ld, rd, inputs = lhs.data, rhs.data, lhs.inputs
    else:
        inputs, ikey, ld, rd = align_binary(lhs, rhs)
    data = op(ld, rd)
    if out.dtype != "real":  # Bint[256] + Bint[256] of uint8 arrays: no wrap-around
        data = widen_int_result(op, ld, rd, data, out.dtype, op is ops.sub)
        if out.dtype > SAFE_BOUND:  # past the widest int: an error, not wrapped numbers
            check_int_range(data, out, f"apply ops.{op.name}", lambda: _operands(lhs, rhs))
    elif not is_float_dtype(data):  # a real Tensor of int/bool data: float data
        data = real_result(op, (ld, rd), data)
    return Tensor.make(data, inputs, out.dtype, ikey, out)


@exact.register(Binary, BinaryOp, Tensor, Number)
def exact_binary_tensor_number(op, lhs, rhs):
    if op.base is ops.matmul:
        return None
    return _with_number(op, lhs, rhs, 0, ops.infer_domain_by_divisor(
        op, lhs.output, rhs.output, rhs.data))


@exact.register(Binary, BinaryOp, Number, Tensor)
def exact_binary_number_tensor(op, lhs, rhs):
    if op.base is ops.matmul:
        return None
    return _with_number(op, lhs, rhs, 1, ops.infer_domain(op, lhs.output, rhs.output))


def _with_number(op, lhs, rhs, side: int, out):
    # ``op(lhs, rhs)`` where operand ``side`` is the Tensor and the other a Number.
    tensor, number = (lhs, rhs) if side == 0 else (rhs, lhs)
    if out.dtype == "real" and (tensor.dtype != "real" or _int_data(number.data, tensor.data)):
        return Tensor.make(_real_op(op, (lhs.data, rhs.data), side), tensor.inputs, "real",
                           tensor._ikey, out)
    data = op(lhs.data, rhs.data)
    if out.dtype != "real":  # no wrap-around of a narrow int dtype
        data = widen_int_result(op, lhs.data, rhs.data, data, out.dtype, op is ops.sub)
        if out.dtype > SAFE_BOUND:
            check_int_range(data, out, f"apply ops.{op.name}", lambda: _operands(lhs, rhs))
    return Tensor.make(data, tensor.inputs, out.dtype, tensor._ikey, out)


def _operands(lhs, rhs) -> str:
    # The two sides for IntRangeError's message: their inputs and output domains.
    return " and ".join(f"{side} is {_described(t)}"
                        for side, t in (("The left", lhs), ("the right", rhs)))


def _described(t) -> str:
    if type(t) is Number:
        return f"Number({t.data!r}, {t.output})"
    return f"a Tensor with inputs {dict(t.inputs)} and output {t.output}"


# A Bint Tensor with a real Number (t + 1: Python's 1 is Number(1) of Real) is Real, as in
# funsor, with float data: the integer array is cast first, so that t + 100 of uint8 data
# is 300, not 44 (the integer op wrapped around), and the result is no int array labelled
# Real. Ops that need integers (<<, &) run on them and are cast after. By dtype only, so
# it holds for traced arrays too. (_CAST_FIRST: atoms/int_range.py, shared with real_result.)


def _int_data(number, data) -> bool:
    # A real Tensor of integer or bool data with a Python int: funsor's real Number is a
    # float, so t + 1 has float data there; here the int would keep the array integer (an
    # int array labelled Real). Only the int case asks for the array's dtype (structural).
    return type(number) is int and not is_float_dtype(data)  # (a dict lookup: see int_range)


def _real_op(op, args: tuple, pos: int):
    # op(*args) as a real array, where args[pos] is the Bint Tensor's integer data.
    if op.base in _CAST_FIRST:
        args = args[:pos] + (ops.astype(args[pos], "real"),) + args[pos + 1:]
    data = op(*args)
    return data if ops.is_floating(data) else ops.astype(data, "real")


def _matmul(op, lhs, rhs):
    # Promote vectors to matrices so that numpy's batched matmul sees matching batch dims,
    # then drop the promoted dims again.
    lo, ro = len(lhs.output.shape), len(rhs.output.shape)
    if lo == 1 and ro == 1 and op is ops.matmul:
        return _dot(lhs, rhs)
    ld, rd = lhs.data, rhs.data
    if lo == 1:
        ld = ops.reshape(ld, tuple(ld.shape[:-1]) + (1, ld.shape[-1]))
    if ro == 1:
        rd = ops.reshape(rd, tuple(rd.shape) + (1,))
    inputs, ikey, ld, rd = align_binary(Tensor.make(ld, lhs.inputs), Tensor.make(rd, rhs.inputs))
    data = op(ld, rd)
    if ro == 1:
        data = data[..., 0]
    if lo == 1:
        data = data[..., 0, :] if ro != 1 else data[..., 0]
    return Tensor.make(data, inputs, "real")


def _dot(lhs, rhs):
    # Vector . vector: one batched matrix product over the shared inputs, of (lhs-only
    # inputs x n) by (n x rhs-only inputs), instead of a matmul per pair of batch entries
    # (a Monte Carlo estimate dots each particle with each data point: a GEMM).
    shared = {k: d for k, d in lhs.inputs.items() if k in rhs.inputs}
    left = {k: d for k, d in lhs.inputs.items() if k not in shared}
    right = {k: d for k, d in rhs.inputs.items() if k not in shared}
    n = lhs.output.shape[0]
    size = lambda inputs: math.prod(d.size for d in inputs.values())  # noqa: E731
    a = align_tensor({**shared, **left}, lhs, expand=True) if lhs.inputs else lhs.data
    b = align_tensor({**shared, **right}, rhs, expand=True) if rhs.inputs else rhs.data
    a = ops.reshape(a, (size(shared), size(left), n))
    b = ops.reshape(b, (size(shared), size(right), n))
    data = ops.matmul(a, ops.transpose(b, -1, -2))
    inputs = {**shared, **left, **right}
    return Tensor.make(ops.reshape(data, tuple(d.size for d in inputs.values())), inputs, "real")


def _subtracts_nothing(lhs: Tensor, rhs: Tensor) -> bool:
    # lhs - zeros is lhs when it broadcasts to lhs unchanged: the zeros' inputs are some of
    # lhs's (same domains), both are real scalars of one array type and dtype (Pyro's
    # t - t.reduce(logaddexp, v) of a normalized table; atoms/tensor_facts.py).
    li, ri = lhs.inputs, rhs.inputs
    return (lhs.output == rhs.output == Real and type(lhs.data) is type(rhs.data)
            and lhs.data.dtype == rhs.data.dtype
            and all(li.get(k) == d for k, d in ri.items()))


# Reduce(op, t, vars) reduces the named batch dims with op's array reduction (a recorded
# plated elimination may make that call directly: algorithms.contract.replay).
@exact.register(Reduce, Op, Tensor, frozenset)
@array_program("reduce", reduce_array)
@array_program("eager_reduce_name", reduce_tensor_name)  # one name: in one frame
def exact_reduce_tensor(op, arg, reduced_vars):
    ikey = arg._ikey
    recipe = _REDUCE_RECIPES.get((ikey, reduced_vars))
    if recipe is None:
        recipe = _REDUCE_CACHE.put((ikey, reduced_vars), _reduce_recipe(ikey, reduced_vars))
    axes, inputs, new_ikey, count = recipe
    if not axes:
        return arg
    out, data = arg.output, arg.data
    if out.dtype != "real":
        out = reduce_domain(op, out, count)  # integer sums and products widen the bound
        if out.dtype != "real":  # (logaddexp, mean of a Bint are Real: below)
            if ((op is ops.or_ or op is ops.and_) and out.dtype != 2
                    and all(data.shape[a] for a in axes)):
                data = fold_axes(op, data, axes)  # bitwise on integers, not a truth test
            else:  # numpy, torch and jax sum and multiply small ints in their default int
                data = ops.REDUCE_OPS[op](data, axis=axes)
                if out.dtype > SAFE_BOUND:  # (k - 1)^n past the widest int: an error
                    check_int_range(data, out, _reduced_what(op, arg, reduced_vars),
                                    lambda: f"The reduced is {_described(arg)}")
            return Tensor.make(data, inputs, out.dtype, new_ikey, out)
    if data.dtype not in FLOAT_DTYPES and not is_float_dtype(data):  # int8 sums would wrap
        return Tensor.make(real_reduce(op, data, axes), inputs, "real", new_ikey, out)
    if op is ops.logaddexp and len(axes) == 1:  # a normalized log table: zeros
        result = logaddexp_of_normalized(data, axes[0])
        if result is not None:
            return Tensor.make(result, inputs, "real", new_ikey, out)
    return Tensor.make(ops.REDUCE_OPS[op](data, axis=axes), inputs, "real", new_ikey, out)


def _reduced_what(op, arg, reduced_vars) -> str:
    names = ", ".join(f"{n!r}: {d}" for n, d in arg.inputs.items() if n in reduced_vars)
    return f"reduce input {names} with ops.{op.name}"


# (input signature, reduced names) -> (axes, kept inputs, their ikey, number of reduced
# values). Bounded: fresh names make fresh keys. The inputs dict is shared by the results.
_REDUCE_CACHE = FastCache("exact.reduce_tensor", 4096)
_REDUCE_RECIPES = _REDUCE_CACHE.data  # read directly on the hot path


def _reduce_recipe(ikey: tuple, reduced_vars: frozenset) -> tuple:
    axes = tuple(i for i, (n, _) in enumerate(ikey) if n in reduced_vars)
    new_ikey = tuple((n, d) for n, d in ikey if n not in reduced_vars)
    count = math.prod(d.size for n, d in ikey if n in reduced_vars)
    return axes, dict(new_ikey), new_ikey, count


# Substituting into a tensor is indexing: numbers select, variables rename, slices slice,
# and Bint-valued tensors index by advanced indexing (broadcasting by name).
@exact.register(Subs, Tensor, tuple)
@array_program("eager_subs_int", subs_tensor_int)  # f(i=0): in one frame
def exact_subs_tensor(arg, subs):
    if len(subs) == 1:
        name, value = subs[0]
        if type(value) is Number:  # f(i=0): one index on the known axis
            return index_tensor_number(arg, name, value.data)
    values = dict(subs)
    if not all(isinstance(v, INDEX_TYPES) for v in values.values()):
        values = {k: _materialized(arg, v) for k, v in values.items()}
        if not all(isinstance(v, INDEX_TYPES) for v in values.values()):
            return None
    if all(type(v) is Number for v in values.values()):
        return index_tensor_numbers(arg, values)
    return index_tensor(arg, values)


def _materialized(arg, value):
    # A lazy Bint-valued function of Bint variables only (``2 * c + d``) is a finite table:
    # evaluating it on aranges gives a Tensor index, so the substitution can index (as funsor).
    if isinstance(value, INDEX_TYPES) or value.dtype == "real":
        return value
    if any(d.dtype == "real" for d in value.inputs.values()):
        return value
    return arg.materialize(value)


# Align(t, names) permutes the batch dims.
@exact.register(Align, Tensor, tuple)
def exact_align_tensor(arg, names):
    inputs = {n: arg.inputs[n] for n in names}
    inputs.update(arg.inputs)
    return Tensor.make(align_tensor(inputs, arg), inputs, arg.dtype)


# Lambda(i, t) moves input i to the leftmost output dim.
@exact.register(Lambda, Variable, Tensor)
def exact_lambda_tensor(var, expr):
    name = var.name
    if name not in expr.inputs:
        size = var.output.size
        nb = len(expr.inputs)
        data = expr.data
        shape = tuple(data.shape[:nb]) + (1,) + tuple(data.shape[nb:])
        full = tuple(data.shape[:nb]) + (size,) + tuple(data.shape[nb:])
        return Tensor.make(ops.expand(ops.reshape(data, shape), full), dict(expr.inputs),
                           expr.dtype)
    inputs = {n: d for n, d in expr.inputs.items() if n != name}
    if list(expr.inputs)[-1] == name:  # nothing moves: share the data, cons-hashed
        return Tensor(expr.data, inputs, expr.dtype)
    order = dict(inputs)
    order[name] = var.output
    return Tensor.make(align_tensor(order, expr), inputs, expr.dtype)


# Stack(name, parts) stacks the aligned parts along a new leftmost input.
@exact.register(Stack, str, tuple)
def exact_stack(name, parts):
    # A Stack of Numbers only stays a Stack (see number_stack.py).
    if not all(isinstance(p, (Tensor, Number)) for p in parts) or not any(
            isinstance(p, Tensor) for p in parts):
        return None
    inputs, datas = _aligned_parts(parts)
    data = ops.stack(datas, 0)
    return Tensor.make(data, {name: Bint[len(parts)], **inputs}, parts[0].dtype)


def _aligned_parts(parts):
    tensors = [p for p in parts if isinstance(p, Tensor)]
    proto = tensors[0].data if tensors else None
    inputs, _ = align_tensors(*tensors) if tensors else ({}, [])
    batch = tuple(d.dtype for d in inputs.values())
    datas = []
    for p in parts:
        if isinstance(p, Tensor):
            datas.append(ops.expand(align_tensor(inputs, p), batch + p.shape))
        elif proto is not None:
            datas.append(ops.new_full(proto, batch + p.shape, p.data))
        else:
            from funsor_core.engine.backend import backend_module

            datas.append(backend_module().asarray(p.data, "real" if p.dtype == "real" else "int"))
    return inputs, datas


# Cat(name, parts, part_name) concatenates the parts along their input part_name.
@exact.register(Cat, str, tuple, str)
def exact_cat(name, parts, part_name):
    if not all(isinstance(p, Tensor) for p in parts):
        return None
    if len(parts) == 1 and part_name == name:  # one part is the whole: nothing to copy
        return parts[0]
    others: dict = {}
    for p in parts:
        for k, d in p.inputs.items():
            if k != part_name:
                others.setdefault(k, d)
    batch = tuple(d.dtype for d in others.values())
    datas = []
    for p in parts:
        order = {part_name: p.inputs[part_name], **others}
        shape = (p.inputs[part_name].size,) + batch + p.shape
        datas.append(ops.expand(align_tensor(order, p), shape))
    size = sum(p.inputs[part_name].size for p in parts)
    return Tensor.make(ops.cat(datas, 0), {name: Bint[size], **others}, parts[0].dtype)


# A lifted function of tensors: align batch dims, call it on the arrays.
@exact.register(Function, object, object, tuple)
def exact_function(fn, output, args):
    if not all(isinstance(a, (Tensor, Number)) for a in args):
        return None
    inputs, datas = align_tensors(*args)
    nb = len(inputs)
    datas = [_pad_batch(d, nb, a) for d, a in zip(datas, args)]
    data = fn(*datas)
    expected = tuple(d.dtype for d in inputs.values()) + output.shape
    if tuple(data.shape) != expected:
        data = _broadcast_result(fn, data, expected, output, inputs)
    return Tensor.make(data, inputs, output.dtype)


def _broadcast_result(fn, data, expected: tuple, output, inputs: dict):
    # The batch dims of fn's result may broadcast (fn ignored an argument's batch); its
    # trailing dims are the declared output's: a scalar result for an output Reals[2] would
    # otherwise be copied into both entries.
    shape, k = tuple(getattr(data, "shape", ())), len(output.shape)
    if len(shape) > len(expected) or len(shape) < k or shape[len(shape) - k:] != output.shape:
        raise ValueError(_FUNCTION_SHAPE.format(name=getattr(fn, "__name__", "fn"),
                                                shape=shape, output=output, inputs=inputs,
                                                expected=expected))
    try:
        return ops.expand(data, expected)
    except (ValueError, RuntimeError, TypeError) as e:
        raise ValueError(_FUNCTION_SHAPE.format(name=getattr(fn, "__name__", "fn"), shape=shape,
                                                output=output, inputs=inputs,
                                                expected=expected)) from e


_FUNCTION_SHAPE = (
    "@function {name}() returned an array of shape {shape}, but its declared output {output} "
    "over the batch inputs {inputs} needs shape {expected} (the batch dims on the left, which "
    "may be 1 to broadcast; the output's dims on the right, as declared)"
)


def _pad_batch(data, nb, arg):
    if isinstance(arg, Tensor) and len(arg.inputs) == nb:
        return data
    if isinstance(arg, Number):
        return data
    shape = tuple(data.shape)
    if len(shape) - len(arg.shape) < nb:
        shape = (1,) * (nb - (len(shape) - len(arg.shape))) + shape
        data = ops.reshape(data, shape)
    return data


# The rules for output-dim terms (Getitem, Einsum) live beside these.
from interpretations.exact import tensor_getitem  # noqa: E402,F401
