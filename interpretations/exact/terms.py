"""Exact rules for generic terms over numbers."""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.gaussian.normalized import subtract_log_mass
from funsor_core.atoms.tensor import Tensor, get_default_prototype
from funsor_core.domains import Bint
from funsor_core.engine.backend import backend_module
from funsor_core.engine.interpreter import Tuple
from funsor_core.ops import BinaryOp, Op, UnaryOp
from funsor_core.terms.backend_check import deep_array_backend
from funsor_core.terms.base import Binary, Funsor, Number, Reduce, Unary, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.reshaping import Independent, Stack
from interpretations.exact import exact


# op(Number) and op(Number, Number) evaluate on the Python values.
@exact.register(Unary, UnaryOp, Number)
def exact_unary_number(op, arg):
    if op.base is ops.getitem:
        return None
    if type(arg.data) not in op.base.kernels:
        # An op with no Python-number kernel (reshape, expand, permute, flip, ...): apply it
        # to the number as a 0-d array of the active backend.
        return Unary(op, Tensor(ops.new_array(get_default_prototype(), arg.data), {},
                                arg.dtype))
    out = ops.infer_domain(op, arg.output)
    return Number(op(arg.data), out.dtype)


@exact.register(Binary, BinaryOp, Number, Number)
def exact_binary_number_number(op, lhs, rhs):
    out = ops.infer_domain(op, lhs.output, rhs.output)
    value = op(lhs.data, rhs.data)
    if out.dtype != "real":
        value = int(value)
    return Number(value, out.dtype)


# A sampling reduction evaluates as the marginalization it estimates: exact draws no sample.
# (Interpretations that sample, e.g. Monte Carlo, match ops.sample before exact does.)
@exact.register(Reduce, type(ops.sample), Funsor, frozenset)
def exact_reduce_sample_funsor(op, arg, reduced_vars):
    return Reduce(ops.logaddexp, arg, reduced_vars)


@exact.register(Contraction, type(ops.sample), object, frozenset, tuple)
def exact_contraction_sample(red_op, bin_op, reduced_vars, terms):
    return Contraction(ops.logaddexp, bin_op, reduced_vars, terms)


# An op-reduction over variables the argument does not depend on: idempotent ops ignore
# them; other reductions are left to the atoms' rules.
@exact.register(Reduce, Op, Funsor, frozenset)
def exact_reduce_funsor(op, arg, reduced_vars):
    if not reduced_vars.isdisjoint(arg.inputs):
        return _reduce_table(op, arg, reduced_vars)
    return arg if op in ops.IDEMPOTENT_OPS else None


# A lazy function of finitely many Bint values (a Contraction of Variables, say) equals its
# table: substitute an arange for each input, and reduce the table once it is a Tensor. The
# sizes are static, so this decides structurally under jax.jit too. Bounded, so that a term
# over many large Bint inputs stays lazy instead of filling memory.
_MAX_TABLE = 1 << 20


def _reduce_table(op, arg, reduced_vars):
    if isinstance(arg, (Tensor, Number)):
        return None
    domains = arg.inputs.values()
    if any(d.dtype == "real" or d.shape for d in domains):
        return None
    if math.prod(d.size for d in domains) * arg.output.num_elements > _MAX_TABLE:
        return None
    # The aranges on the backend of the arrays inside ``arg`` (jax Tensors while numpy is
    # the default backend would otherwise meet numpy aranges and raise).
    name = deep_array_backend(arg)
    proto = get_default_prototype() if name is None else backend_module(name).asarray([], "real")
    table = Tensor(proto).materialize(arg)
    if not isinstance(table, (Tensor, Number)):
        return None
    return Reduce(op, table, reduced_vars)


# The same for a reduced Contraction whose terms are lazy functions of Bint inputs only.
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_bint_table(red_op, bin_op, reduced_vars, terms):
    if red_op is None or not reduced_vars or all(isinstance(t, (Tensor, Number)) for t in terms):
        return None
    if any(d.dtype == "real" or d.shape for t in terms for d in t.inputs.values()):
        return None
    body = terms[0] if bin_op is None else Contraction(None, bin_op, frozenset(), terms)
    return _reduce_table(red_op, body, reduced_vars)


# Independent over a function of no real coordinate is a plain product over the plate.
@exact.register(Independent, Funsor, str, str, str)
def exact_independent_funsor(fn, reals_var, bint_var, diag_var):
    if diag_var in fn.inputs:
        return None
    return fn.reduce(ops.add, bint_var)


# Independent(fn, value, i, x_i) once a value was substituted for the real input x:
# sum_i fn(x_i = value[i]), funsor's definition of the term. (A Variable is the input itself,
# or a renaming of it, and stays an Independent.)
@exact.register(Independent, Funsor, Funsor, str, str)
def exact_independent_funsor_value(fn, reals, bint_var, diag_var):
    if isinstance(reals, Variable):
        return None
    size = reals.output.shape[0]
    if isinstance(reals, Tensor):
        # The leading output dim follows the batch dims: naming it makes it an input.
        row = Tensor(reals.data, {**reals.inputs, bint_var: Bint[size]}, reals.dtype)
    else:
        row = Stack(bint_var, tuple(reals[k] for k in range(size)))
    return fn(**{diag_var: row}).reduce(ops.add, bint_var)


# f - c = f + (-c) for a real f that no rule subtracts from directly (a Delta, a sum with one):
# the sum joins the normal form, where Deltas and Gaussians have rules.
@exact.register(Binary, type(ops.sub), Funsor, (Tensor, Number))
def exact_binary_sub_funsor_tensor(op, lhs, rhs):
    if isinstance(lhs, (Tensor, Number)) or lhs.dtype != "real" or rhs.dtype != "real":
        return None
    normalized = subtract_log_mass(lhs, rhs)  # a Gaussian sum minus its own log mass
    return lhs + (-rhs) if normalized is None else normalized
