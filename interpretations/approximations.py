"""Interpretations that approximate ``Approximate`` terms (funsor's
``funsor.approximations``), and the rules of the backward-pass kinds ``PosteriorSample`` and
``Precondition``.

- ``argmax_approximate``: a point mass at the guide's argmax (joint over the approximated
  names). In a backward pass: the MAP assignment (Viterbi on chains).
- ``mean_approximate``: a point mass at the guide's mean (real names).
- ``laplace_approximate``: the model's Gaussian (Laplace) approximation at the guide's mode.
  A model that is already quadratic in the names (Gaussians, plus terms free of them) is its
  own Laplace approximation; other models raise ``NotImplementedError``.
- ``PosteriorSample(rng_key, **sample_inputs)``: a point mass at a draw from the guide.

Each falls back to the interpretation it was entered in. Points that a Delta of the guide
already fixes are kept, not drawn again. The interpretations are declared in
``funsor_core.algorithms.adjoint.kinds`` (so that algorithms can enter them); this module
holds their rules.

Example:
    >>> from interpretations.approximations import argmax_approximate
    >>> t = fc.Tensor(np.array([0.0, 2.0, 1.0]), {"i": fc.Bint[3]})
    >>> with argmax_approximate:
    ...     q = fc.Approximate(ops.max, fc.Number(0.0), t, "i")
    >>> int(fc.extract_samples(q)["i"].data)
    1
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.kinds import (
    PosteriorSample,
    Precondition,
    argmax_approximate,
    laplace_approximate,
    mean_approximate,
)
from funsor_core.algorithms.adjoint.points import (
    compute_argmax,
    compute_mean,
    draw,
    names_of,
    split_guide,
)
from funsor_core.algorithms.adjoint.precondition import precondition_points
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.approximate import Approximate
from funsor_core.terms.base import Binary, Funsor, Number, Unary
from funsor_core.terms.contraction import Contraction

__all__ = ["argmax_approximate", "compute_argmax", "laplace_approximate", "mean_approximate",
           "PosteriorSample", "Precondition"]

MaxOp, LogaddexpOp, SampleOp = type(ops.max), type(ops.logaddexp), type(ops.sample)


def _free_names(guide: Funsor, approx_vars) -> frozenset:
    # The names to place: those of approx_vars the guide has, less those its Deltas fix.
    names = names_of(approx_vars) & guide.inputs.keys()
    if not names:
        return names
    fixed, _ = split_guide(guide, names)
    return names - fixed.keys()


def _with_points(model: Funsor, points: dict) -> Funsor:
    if not points:
        return model
    return model + Delta(tuple((k, (v, Number(0.0))) for k, v in points.items()))


# Approximate(op, m, g, V) = m + Delta(V = argmax_V g), under max, logaddexp or sample.
@argmax_approximate.register(Approximate, (MaxOp, LogaddexpOp, SampleOp), Funsor, Funsor,
                             frozenset)
def argmax_approximate_approximate(op, model, guide, approx_vars):
    names = _free_names(guide, approx_vars)
    return _with_points(model, compute_argmax(guide, names) if names else {})


# Approximate(logaddexp, m, g, V) = m + Delta(V = E_g[V]) for real names V.
@mean_approximate.register(Approximate, LogaddexpOp, Funsor, Funsor, frozenset)
def mean_approximate_approximate(op, model, guide, approx_vars):
    names = _free_names(guide, approx_vars)
    return _with_points(model, compute_mean(guide, names) if names else {})


# Approximate(logaddexp, m, g, V) = m when m is quadratic in the real names V (its own
# Laplace approximation, whatever the mode of g).
@laplace_approximate.register(Approximate, LogaddexpOp, Funsor, Funsor, frozenset)
def laplace_approximate_approximate(op, model, guide, approx_vars):
    names = names_of(approx_vars) & model.inputs.keys()
    bad = sorted(k for k in names if model.inputs[k].dtype != "real")
    if bad:
        raise NotImplementedError(f"laplace_approximate: {bad} are discrete; a Laplace "
                                  "approximation is over real variables")
    if not names or _quadratic(model, names):
        return model
    raise NotImplementedError(
        f"laplace_approximate of a {type(model).__name__} in {sorted(names)}: only models "
        "quadratic in the approximated variables (Gaussians plus terms free of them) are "
        "supported; their Laplace approximation is exact")


def _quadratic(term: Funsor, names: frozenset) -> bool:
    # Structurally at most quadratic in the real names (a sufficient test).
    if names.isdisjoint(term.inputs):
        return True
    if isinstance(term, Gaussian):
        return True
    if isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.add:
        return all(_quadratic(t, names) for t in term.terms)
    if isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.mul:
        # a product is quadratic when one factor is and the others are free of the names
        dependent = [t for t in term.terms if not names.isdisjoint(t.inputs)]
        return len(dependent) == 1 and _quadratic(dependent[0], names)
    if isinstance(term, Binary):
        if term.op in (ops.add, ops.sub):
            return _quadratic(term.lhs, names) and _quadratic(term.rhs, names)
        if term.op is ops.mul:
            lhs, rhs = term.lhs, term.rhs
            return ((names.isdisjoint(lhs.inputs) and _quadratic(rhs, names))
                    or (names.isdisjoint(rhs.inputs) and _quadratic(lhs, names)))
    if isinstance(term, Unary) and term.op is ops.neg:
        return _quadratic(term.arg, names)
    return isinstance(term, (Tensor, Number))


# PosteriorSample: Approximate(logaddexp | sample, m, g, V) = m + Delta(V ~ g).
@PosteriorSample.register(Approximate, (LogaddexpOp, SampleOp), Funsor, Funsor, frozenset)
def posterior_sample_approximate(state, op, model, guide, approx_vars):
    names = _free_names(guide, approx_vars)
    if not names:
        return model
    points, _ = draw(guide, names, state.sample_inputs, state.keys)
    return _with_points(model, points)


# Precondition: Approximate(logaddexp, m, g, V) = m + Delta(V = affine(white noise)), a
# Gaussian guide's sample written as a function of new noise inputs.
@Precondition.register(Approximate, LogaddexpOp, Funsor, Funsor, frozenset)
def precondition_approximate(state, op, model, guide, approx_vars):
    names = _free_names(guide, approx_vars)
    if not names:
        return model
    return _with_points(model, precondition_points(state, guide, names))
