"""Exact rules for the output-dim terms of ``funsor_core.atoms.tensor_idioms`` on Tensors:
``Getitem`` (an output dim indexed by a funsor) and ``Einsum`` (a contraction of output dims)."""

from __future__ import annotations

import opt_einsum

from funsor_core import ops
from funsor_core.atoms.tensor import (
    Einsum,
    Getitem,
    Tensor,
    getitem_tensor,
    name_output_dim,
)
from funsor_core.domains import Bint
from funsor_core.terms.backend_check import check_backends
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.reshaping import Lambda, Slice
from interpretations.exact import exact


# t[..., "i", ...]: a Variable with a new name turns the output dim into the input; one that
# is already an input selects the diagonal (the arange gather below).
@exact.register(Getitem, Tensor, Variable, int)
def exact_getitem_tensor_variable(arg, index, offset):
    if index.name not in arg.inputs:
        return name_output_dim(arg, index.name, offset)
    size = index.output.size
    arange = Tensor.make(ops.new_arange(arg.data, size), {index.name: Bint[size]}, size)
    return getitem_tensor(arg, arange, offset)


# t[..., idx, ...] for a Bint-valued Tensor idx: a gather, broadcasting inputs by name.
@exact.register(Getitem, Tensor, Tensor, int)
def exact_getitem_tensor_tensor(arg, index, offset):
    if type(arg.data) is not type(index.data):
        check_backends("index", (arg, index), ("the Tensor", "its index"))
    return getitem_tensor(arg, index, offset)


# t[..., n, ...] for a Bint Number: basic indexing of the output dim.
@exact.register(Getitem, Tensor, Number, int)
def exact_getitem_tensor_number(arg, index, offset):
    at = (slice(None),) * (len(arg.inputs) + offset) + (index.data,)
    return Tensor.make(arg.data[at], arg.inputs, arg.dtype)


# t[..., Slice("k", start, stop, step), ...]: the gather at start + step * arange.
@exact.register(Getitem, Tensor, Slice, int)
def exact_getitem_tensor_slice(arg, index, offset):
    start, _, step = index.slice_args
    size = index.inputs[index.name].size
    data = ops.new_arange(arg.data, size)
    if start or step != 1:
        data = data * step + start
    return getitem_tensor(arg, Tensor.make(data, {index.name: Bint[size]}, index.dtype), offset)


# Lambda(i, body)[idx] = body(i=idx): indexing undoes the Lambda, lazy bodies included.
@exact.register(Getitem, Lambda, Funsor, int)
def exact_getitem_lambda(arg, index, offset):
    if offset != 0:
        # Lambda(j, body)[:, idx] = Lambda(j, body[idx]): a later output dim is one of the
        # body's, indexed for every j alike; unless idx depends on j, which the Lambda binds.
        if arg.var.name in index.inputs:
            return None
        return Lambda(arg.var, Getitem(arg.expr, index, offset - 1))
    return arg.expr(**{arg.var.name: index})


# Einsum on the output dims of Tensors: give each input a letter of its own, so that einsum
# broadcasts the batch dims by name, and keep them all in the output, leftmost.
@exact.register(Einsum, str, tuple)
def exact_einsum_tensors(equation, operands):
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors or not all(isinstance(x, (Tensor, Number)) for x in operands):
        return None
    if any(type(x.data) is not type(tensors[0].data) for x in tensors[1:]):
        check_backends("einsum", operands)
    inputs: dict = {}
    for x in tensors:
        inputs.update(x.inputs)
    used = set(equation)
    letters = (opt_einsum.get_symbol(i) for i in range(10 ** 6))
    symbol = {k: next(c for c in letters if c not in used) for k in inputs}
    ins, out = equation.split("->")
    terms, datas = [], []
    for x, dims in zip(operands, ins.split(",")):
        if isinstance(x, Tensor):
            terms.append("".join(symbol[k] for k in x.inputs) + dims)
            datas.append(x.data)
        else:
            terms.append(dims)
            datas.append(ops.new_full(tensors[0].data, (), x.data))
    eq = ",".join(terms) + "->" + "".join(symbol[k] for k in inputs) + out
    return Tensor.make(ops.einsum(eq, *datas), inputs, "real")
