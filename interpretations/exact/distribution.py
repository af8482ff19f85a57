"""Exact rules for distribution funsors (``funsor_core.distribution``).

- A family whose arguments are all Tensors is its log density: a Tensor over the union of
  their inputs. Anything lazy keeps the term (no rule fires).
- Normal, MultivariateNormal and LowRankMultivariateNormal with ``loc`` and ``value`` affine
  in real variables and Tensor scales become a Gaussian plus a Tensor normalizer (exact).
- Delta with a Variable on one side becomes the Delta atom; a Categorical of Tensor
  parameters with a Variable value becomes its table (a Tensor over the value).
- A distribution integrates to one over its value: reducing it with ``logaddexp`` over a
  Variable value (that no other factor mentions) drops it.

Example:
    >>> from funsor_core.distribution import Normal
    >>> loc = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
    >>> type(Normal(loc, 1.0, value=0.5)).__name__, type(Normal(loc, 1.0)).__name__
    ('Tensor', 'Contraction')
"""

from __future__ import annotations

import functools
import math

from funsor_core import ops
from funsor_core.analysis.affine import is_affine
from funsor_core.atoms.delta import Delta as DeltaAtom
from funsor_core.atoms.tensor import Tensor, align_tensors
from funsor_core.atoms.tensor_facts import mark_normalized
from funsor_core.distribution.array_math import (
    distinct_rows,
    nan_invalid,
    normalizer,
    with_arrays,
)
from funsor_core.distribution.base import Distribution, on_family
from funsor_core.distribution.continuous import MultivariateNormal, Normal
from funsor_core.distribution.discrete import Categorical, CategoricalLogits, Delta
from funsor_core.distribution.gaussian import mvn_to_gaussian, normal_to_gaussian
from funsor_core.distribution.relaxed import LowRankMultivariateNormal, low_rank_scale_tril
from funsor_core.domains import Reals
from funsor_core.engine.backend import backend_of
from funsor_core.engine.fast_path import array_program
from funsor_core.engine.interpreter import Tuple, interpret
from funsor_core.terms.base import Funsor, Number, Reduce, Variable
from funsor_core.terms.contraction import Contraction
from interpretations.exact import exact


# cls(Tensor, ..., Tensor) = its log density, a Tensor.
def exact_distribution_tensors(cls, *args):
    return cls.eager_log_density(*args)


# cls(..., Number, ...) = cls(..., Tensor, ...): Python numbers stay backend-free Numbers in
# a term until a number is demanded; then they follow the other arrays (or the backend).
# All Tensors then: the log density at once. Else the term with them, under the active
# interpretation; its arguments were checked when the Numbers were (same values, domains).
def exact_distribution_numbers(cls, *args):
    tensors = with_arrays(args)
    if tensors is args:
        return None
    if all(isinstance(t, Tensor) for t in tensors):
        return cls.eager_log_density(*tensors)
    return interpret(cls, tensors)


def _register_family(cls) -> None:
    rule = functools.partial(exact_distribution_tensors, cls)
    functools.update_wrapper(rule, exact_distribution_tensors)
    exact.register(cls, *(Tensor,) * len(cls.fields))(rule)
    rule = functools.partial(exact_distribution_numbers, cls)
    functools.update_wrapper(rule, exact_distribution_numbers)
    exact.register(cls, *(Funsor,) * len(cls.fields))(rule)


on_family(_register_family)


# Normal(loc, scale, value) with affine loc and value = Gaussian(value - loc) + normalizer.
def _affine_reals(*terms) -> bool:
    if not all(t.output.dtype == "real" and is_affine(t) for t in terms):
        return False
    return any(d.dtype == "real" for t in terms for d in t.inputs.values())


# The array program is what funsor_core.distribution.fast_normal calls for the common Normals
# whose arguments are affine by their kinds (a real Variable value, a Variable or constant loc).
@exact.register(Normal, Funsor, Tensor, Funsor)
@array_program("normal_build", normal_to_gaussian)
def exact_normal_affine(loc, scale, value):
    if not _affine_reals(loc, value):
        return None
    return normal_to_gaussian(loc, scale, value)


@exact.register(Normal, Funsor, Number, Funsor)
@array_program("normal_build", normal_to_gaussian)
def exact_normal_affine_number_scale(loc, scale, value):
    if not _affine_reals(loc, value):
        return None
    return normal_to_gaussian(loc, scale, value)  # a constant scale: host arrays where it can


@exact.register(MultivariateNormal, Funsor, Tensor, Funsor)
def exact_mvn_affine(loc, scale_tril, value):
    if not _affine_reals(loc, value):
        return None
    return mvn_to_gaussian(loc, scale_tril, value)


# LowRankMultivariateNormal(loc, W, D, value) = MultivariateNormal(loc, chol(W W^T + diag D)).
@exact.register(LowRankMultivariateNormal, Funsor, Tensor, Tensor, Funsor)
def exact_lowrank_mvn_affine(loc, cov_factor, cov_diag, value):
    if not _affine_reals(loc, value):
        return None
    inputs, (w, d) = align_tensors(cov_factor, cov_diag, expand=True)
    batch_w, batch_d = cov_factor.shape[:-2], cov_diag.shape[:-1]
    k = len(inputs)
    # Pad the shorter output batch with ones after the input dims, so they broadcast.
    w = ops.reshape(w, w.shape[:k] + (1,) * (len(batch_d) - len(batch_w)) + w.shape[k:])
    d = ops.reshape(d, d.shape[:k] + (1,) * (len(batch_w) - len(batch_d)) + d.shape[k:])
    tril = low_rank_scale_tril(w, d)
    return mvn_to_gaussian(loc, Tensor(tril, inputs, Reals[tuple(tril.shape[k:])]), value)


# Categorical(Tensor, Variable v) = its table over v (a Bint value takes finitely many values):
# the family's log table with the event dim made the input v. Every k in 0..n-1 is in the
# support, so no gather of each value and no support mask (Pyro's enumerated sites: two
# passes over K^2 T numbers fewer, forward and backward). A traced invalid parameter is NaN.
# A parameter broadcast over batch dims in memory (Pyro expands each site's K x K probs over
# its T steps) gets its table once per distinct row (K^2 logs, not K^2 T), broadcast back
# into memory of its own (with a stride-0 table, torch's bmm backward made 2T copies a step).
# The table is recorded normalized along v: Pyro's renormalization t - t.reduce(logaddexp, v)
# is then t, with no pass over it (atoms/tensor_facts.py says why derivatives agree).
def _table_over(cls, param: Tensor, value: Variable):
    if value.name in param.inputs:  # the parameter's own input: the table's diagonal
        fresh = Variable(f"{value.name}__value", value.output)
        if fresh.name in param.inputs:
            return None
        table = _table_over(cls, param, fresh)
        return None if table is None else table(**{fresh.name: value})
    if len(param.output.shape) != 1 or not ops.is_floating(param.data):
        return cls(param, param.new_arange(value.name, value.output.size))
    name = next(iter(cls.params))
    data = nan_invalid(cls, {name: param.data})[name]
    rows = distinct_rows(data)
    table = cls.log_table(rows)
    if rows is not data:
        table = backend_of(data).expand_dense(table, tuple(data.shape))
    # Recorded normalized only where every probability is positive: at a zero one the
    # masked log's zero derivative makes the explicit renormalization's derivative with
    # respect to that zero entry differ (0 there; the table's own is -1 / sum p).
    if cls is Categorical and ops.known_true(rows, lambda a: ops.amin(a) > 0):
        mark_normalized(table, len(param.inputs))
    return Tensor.make(table, {**param.inputs, value.name: value.output})


@exact.register(Categorical, Tensor, Variable)
def exact_categorical_tensor_variable(probs, value):
    return _table_over(Categorical, probs, value)


@exact.register(CategoricalLogits, Tensor, Variable)
def exact_categorical_logits_tensor_variable(logits, value):
    return _table_over(CategoricalLogits, logits, value)


# Delta(v, ld, Variable x) = the point mass at v in x; Delta(Variable v, ld, value) is the
# point mass at value in v (funsor's rules); two Variables stay lazy.
@exact.register(Delta, Funsor, Funsor, Variable)
def exact_delta_funsor_variable(v, log_density, value):
    if isinstance(v, Variable) or value.name in v.inputs or value.name in log_density.inputs:
        return None
    return DeltaAtom(value.name, v, log_density)


@exact.register(Delta, Variable, Funsor, Funsor)
def exact_delta_variable_funsor(v, log_density, value):
    if isinstance(value, Variable) or v.name in value.inputs or v.name in log_density.inputs:
        return None
    return DeltaAtom(v.name, value, log_density)


# logaddexp over the value of a normalized density: log 1 = 0 (NaN where a traced parameter
# is invalid); other reduced Bint inputs of the parameters add log of their size.
@exact.register(Reduce, ops.LogaddexpOp, Distribution, frozenset)
def exact_reduce_logaddexp_distribution(op, arg, reduced_vars):
    name = _normalized_value(arg, ())
    if name is None or name not in reduced_vars:
        return None
    return _drop(op, arg, reduced_vars - {name}, ())


@exact.register(Contraction, ops.LogaddexpOp, (ops.AddOp, type(None)), frozenset,
                Tuple[Funsor, ...])
def exact_contraction_logaddexp_distribution(red_op, bin_op, reduced_vars, terms):
    counts: dict | None = None  # how many terms mention each name, counted once if needed
    for k, t in enumerate(terms):
        value = t.value if isinstance(t, Distribution) else None
        if not isinstance(value, Variable) or value.name not in reduced_vars:
            continue
        if counts is None:
            counts = {}
            for u in terms:
                for name in u.inputs:
                    counts[name] = counts.get(name, 0) + 1
        if counts[value.name] == 1 and _normalized_value(t, ()) is not None:
            return _drop(red_op, t, reduced_vars - {value.name}, terms[:k] + terms[k + 1:])
    return None


def _normalized_value(d: Distribution, others: tuple) -> str | None:
    """The name of ``d``'s value if it is a Variable that no parameter (nor other factor)
    mentions, so that ``d`` integrates to one over it."""
    value = d.value
    if not isinstance(value, Variable):
        return None
    if any(value.name in t.inputs for t in d._args[:-1] + others):
        return None
    return value.name


def _drop(op, d: Distribution, rest: frozenset, others: tuple):
    # Names bound by the reduction that only d's parameters mention disappear with d: a
    # logaddexp over a Bint input of which nothing depends is + log(its size).
    mentioned = set().union(*(t.inputs for t in others)) if others else set()
    norm = normalizer(type(d), d._args[:-1])
    mentioned |= norm.inputs.keys()
    gone = [n for n in rest if n not in mentioned]
    if any(d.inputs[n].dtype == "real" for n in gone):
        return None  # an integral of a constant over the reals: not a number
    terms = others + (norm,)
    kept = frozenset(rest) - frozenset(gone)
    result = Contraction(op, ops.add if len(terms) > 1 else None, kept, terms)
    extra = sum(math.log(d.inputs[n].size) for n in gone)
    return result + extra if extra else result
