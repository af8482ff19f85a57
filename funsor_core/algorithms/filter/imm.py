"""The interacting multiple model (IMM) filter: ``windowed_filter(..., method="imm")``.

A switching linear dynamical system has a switch state ``s`` (Bint) and a real state ``x``;
its step factor is ``switch(s_prev, s_curr) + model(s_curr, x_prev, x_curr)`` (the dynamics
and observation of the new mode: the real part of the factor does not depend on
``s_prev``). Both filters below keep one Gaussian per switch value; they collapse at
different points of the step, so their numbers differ:

- GPB2 (``windowed_filter(window=1)``, the default): predict and update each of the ``K x K``
  (previous, next) mode pairs, then collapse over the previous mode by matching moments.
  ``K^2`` Kalman updates per step.
- IMM (Blom and Bar-Shalom, 1988): first mix, for each next mode ``j``, the previous modes'
  posteriors with weights ``w_i p(j | i)`` (moment-matched over ``i``), then predict and update
  each mixed Gaussian with the model of ``j``. ``K`` Kalman updates per step.

In terms: ``mixed = collapse_{s_prev}(message + switch)`` (a mixture over ``s_prev``
collapsed to one Gaussian per ``s_curr``), then ``message' = logaddexp_{x_prev}(mixed +
model)`` (exact Gaussian integration). Both sums only build terms, so the filter runs on
every backend and under ``jax.jit``; the collapse reads no values.

Example:
    >>> t = fc.Tensor(np.log(np.full((3, 2, 2), 0.5)),
    ...               {"time": fc.Bint[3], "s_prev": fc.Bint[2], "s_curr": fc.Bint[2]})
    >>> init = fc.Tensor(np.log(np.array([0.5, 0.5])), {"s_prev": fc.Bint[2]})
    >>> m = imm_filter(t, "time", {"s_prev": "s_curr"}, init)
    >>> m.inputs, float(m.reduce(ops.logaddexp).data)
    ({'s_curr': Bint[2]}, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable

from funsor_core import ops
from funsor_core.algorithms.filter.imm_fused import ImmSteps
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.mixture import collapse_sum, mixture_vars
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["imm_filter"]

_S_PREV_IN_MODEL = (
    "windowed_filter(method='imm'): the factor {term} has real inputs and the previous "
    "switch state(s) {names}. IMM mixes the previous modes before the predict step, so the "
    "real part of the step factor may depend on the new switch state only, e.g. "
    "switch(s_prev, s_curr) + dynamics(s_curr, x_prev, x_curr) + obs(x_curr). "
    "Use method='gpb2' (the default) for a factor coupling s_prev with the real states.")

_NO_MOMENTS = (
    "windowed_filter(method='imm'): mixing the switch state(s) {names} out of the message "
    "leaves a mixture of Gaussians with no moments to match (a component has no information "
    "on some direction of the real states {reals}). Give the first state a proper prior.")


def _terms(term: Funsor) -> tuple:
    """The summands of a sum of terms (``Contraction(None, add, {}, terms)``), or the term."""
    if isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.add:
        return term.terms
    return (term,)


def _has_real(term: Funsor) -> bool:
    return any(d.dtype == "real" for d in term.inputs.values())


def _split_factor(trans: Funsor, discrete_prev: frozenset) -> tuple[tuple, tuple]:
    """``(switch, model)``: the summands of ``trans`` without real inputs (the mode
    transition, mixed before the predict step) and those with (the dynamics and
    observations of the new mode)."""
    terms = _terms(trans)
    switch = tuple(t for t in terms if not _has_real(t))
    model = tuple(t for t in terms if _has_real(t))
    for t in model:
        coupled = sorted(discrete_prev & t.inputs.keys())
        if coupled:
            raise ValueError(_S_PREV_IN_MODEL.format(term=type(t).__name__, names=coupled))
    return switch, model


def _collapsed(reduced: frozenset, terms: tuple) -> Funsor:
    """``logaddexp_reduced(sum(terms))`` with the mixture over ``reduced`` collapsed to one
    Gaussian per assignment of the other Bint inputs (whatever the interpretation)."""
    if not reduced:
        return Contraction(None, ops.add, frozenset(), terms)
    msg = Contraction(ops.logaddexp, ops.add, reduced, terms)
    if not (isinstance(msg, Contraction) and msg.red_op is ops.logaddexp
            and all(isinstance(x, (Gaussian, Tensor, Number)) for x in msg.terms)
            and mixture_vars(msg.reduced_vars, msg.terms)):
        return msg  # moment_matching collapsed it already, or nothing to collapse
    result = collapse_sum(msg.reduced_vars, msg.terms)
    if result is None:
        reals = sorted({k for x in msg.terms for k, d in x.inputs.items() if d.dtype == "real"})
        raise ValueError(_NO_MOMENTS.format(names=sorted(reduced), reals=reals))
    return result


def _slicer(term: Funsor, time: str, size: int) -> Callable[[int], Funsor]:
    """``at(t) = term(time=t)``. An atom's time axis is moved to the front once and a step's
    atom is built from ``array[t]`` (what substituting a constant into its Bint input
    computes); other terms are substituted."""
    if time not in term.inputs:
        return lambda t: term
    rest = tuple((k, d) for k, d in term._ikey if k != time) if hasattr(term, "_ikey") else ()
    order = {time: term.inputs[time], **dict(rest)}
    if isinstance(term, Gaussian):
        white_vec, prec_sqrt = align_gaussian(order, term, expand=True)
        return lambda t: Gaussian.make(white_vec[t], prec_sqrt[t], ikey=rest)
    if isinstance(term, Tensor) and term.dtype == "real":
        data = align_tensor(order, term)
        return lambda t: Tensor.make(data[t], dict(rest), ikey=rest)
    return lambda t: term(**{time: Number(t, size)})


def imm_filter(trans: Funsor, time: str, step: dict, init: Funsor, each_step=None) -> Funsor:
    """The IMM forward message of a switching chain after its last step (module docstring).

    ``windowed_filter(ops.logaddexp, ops.add, trans, time, step, init, 1, method="imm")``
    calls it (after checking the names); the arguments are those of ``windowed_filter``.

    Raises:
        ValueError: a summand of ``trans`` with real inputs depends on a discrete prev name,
            or a component has no moments to mix.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 2)), covariance=np.eye(2),
        ...                 inputs={"time": fc.Bint[2], "x_prev": fc.Real, "x_curr": fc.Real})
        >>> prior = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1),
        ...                     inputs={"x_prev": fc.Real})
        >>> imm_filter(g, "time", {"x_prev": "x_curr"}, prior).inputs
        {'x_curr': Real}
    """
    size = trans.inputs[time].size
    # Step t uses version t % 2 of the factor: version 1 swaps the prev and curr names, so
    # the message alternates between them and is never renamed (one renaming of the factor).
    swap = {**{p: Variable(c, trans.inputs[c]) for p, c in step.items()},
            **{c: Variable(p, trans.inputs[p]) for p, c in step.items()}}
    mixed = frozenset(p for p in step if trans.inputs[p].dtype != "real")
    switch, model = _split_factor(trans, mixed)
    # After the first step, the steps may run on arrays (filter.imm_fused).
    fused = ImmSteps(switch, model, time, step) if each_step is None and size > 1 else None
    versions = []
    for v in range(2 if size > 1 else 1):
        # Each summand renamed alone, so that a lazy renaming keeps the split.
        if v:
            switch, model = ([x(**{k: u for k, u in swap.items() if k in x.inputs}) for x in xs]
                             for xs in (switch, model))
        prev = frozenset(step) if v == 0 else frozenset(step.values())
        names = mixed if v == 0 else frozenset(step[p] for p in mixed)
        versions.append(([_slicer(x, time, size) for x in switch],
                         [_slicer(x, time, size) for x in model], names, prev - names))
    msg = init
    for t in range(size):
        switch, model, mixed_names, real_names = versions[t % 2]
        terms = (*_terms(msg), *(at(t) for at in switch))
        present = frozenset().union(*(x.inputs.keys() for x in terms))
        mixing = mixed_names & present
        mixed = _collapsed(mixing, terms)  # mix before predicting
        model_terms = (*_terms(mixed), *(at(t) for at in model))
        present = frozenset().union(*(x.inputs.keys() for x in model_terms))
        reduced = real_names & present
        msg = Contraction(ops.logaddexp if reduced else None, ops.add, reduced, model_terms)
        if each_step is not None:
            each_step(t, msg if t % 2 == 0 else _renamed(msg, swap))
        if fused is not None:
            rest = _fused_rest(fused, msg, t, size, mixing, terms, reduced, model_terms)
            fused = None
            if rest is not None:
                msg = rest
                break
    return msg if (size - 1) % 2 == 0 else _renamed(msg, swap)


def _fused_rest(fused: ImmSteps, msg: Funsor, t: int, size: int, mixing: frozenset,
                terms: tuple, reduced: frozenset, model_terms: tuple) -> Funsor | None:
    """The message after the last step, steps ``t + 1 ..`` run on arrays where step ``t``
    (built as terms) shows that they may (``ImmSteps.accepts``), else None."""
    if not (fused.ok and mixing and reduced and t + 1 < size):
        return None
    args = (Contraction._prepare(ops.logaddexp, ops.add, mixing, terms),
            Contraction._prepare(ops.logaddexp, ops.add, reduced, model_terms))
    return fused.run(msg, t + 1, size) if fused.accepts(*args) else None


def _renamed(msg: Funsor, swap: dict) -> Funsor:
    """A message over the prev names, renamed to the curr names (after an odd step)."""
    return msg(**{k: v for k, v in swap.items() if k in msg.inputs})
