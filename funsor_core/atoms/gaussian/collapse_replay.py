"""The moment-matching collapse of a sum of Gaussians replayed per structure, on numpy.

A filter written as a loop (``msg = (msg + switch + dyn + obs).reduce(logaddexp, {s, x})``
under ``moment_matching``) collapses a sum of the same structure at every step: the same
classes of summands, input names and domains, ranks and dtypes, only new numbers. The first
time a structure is met, ``collapse_sum`` runs its general path; the second time,
``replay_collapse`` records what that path decides for the structure (the mixture names,
that nothing is compressed, the layout of the collapse, that the Gram path applies, the
tolerance of the rank margin), and from then on a sum of the structure runs straight to the
array work: the log weights aligned (``moments._logits``), the joint Gram matrix
(``moments._block_gram_host``), and ``normal_equations._eager_host`` (the augmented Cholesky,
the conditioning check and rank margin, the components' and the mixture's moments, the
second Cholesky and its check), then the result terms. The same functions as the general
path on the same arrays: the values are identical, not only equal to rounding.

Where a check fails, a mixture has no mass, or an array is not a float64 numpy array, the
program answers None and ``collapse_sum`` runs its general path, which decides again (the QR
fallback included; torch, jax and float32 always take it). The program runs inside the
moment-matching rules, after the interpreter chose them, and builds its result as the
general path does, so a user rule registered ahead of them, ``lazy``, a tape or the debug
log see exactly what they saw before: no separate guard is needed.

Example:
    >>> g = fc.Gaussian(mean=np.array([[-1.0], [1.0]]), covariance=np.ones((2, 1, 1)),
    ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
    >>> h = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> from funsor_core.atoms.gaussian.mixture import gram_collapse_plan
    >>> replay_collapse(frozenset("i"), (g, h), gram_collapse_plan) is None  # first sight
    True
    >>> gg, t = replay_collapse(frozenset("i"), (g, h), gram_collapse_plan).terms  # replayed
    >>> float(gg.covariance[0, 0])  # two N(+-1, 1) times N(0, 1): N(+-0.5, 0.5), collapsed
    0.75
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.collapse_fused import fused_program
from funsor_core.atoms.gaussian.moments import _block_gram_host, _logits, collapse_result
from funsor_core.atoms.gaussian.normal_equations import (
    FAST_NORMAL_EQUATIONS,
    _eager_host,
    _last_unit,
    _tolerance,
)
from funsor_core.atoms.tensor import Tensor
from funsor_core.domains import Real
from funsor_core.engine.cache import FastCache
from funsor_core.terms.base import Funsor, Number

__all__ = ["FUSED_COLLAPSE", "REPLAY_COLLAPSE", "replay_collapse"]

# Switch: False sends every collapse through the general path (tests compare the two).
REPLAY_COLLAPSE = [True]
# Switch: False replays by the general path's array functions, not ``collapse_fused``
# (read when a structure is recorded).
FUSED_COLLAPSE = [True]

_ndarray = np.ndarray
# structure key -> _Program, or False where the structure is not replayed (seen once: None).
_PROGRAMS = FastCache("gaussian.collapse_replay.programs", 256)
_SEEN = FastCache("gaussian.collapse_replay.seen", 256)


def replay_collapse(reduced_vars: frozenset, terms: tuple, record: Callable) -> Funsor | None:
    """``collapse_sum(reduced_vars, terms)`` by the recorded program of the terms' structure,
    or None: the structure is new (seen for the first time: recorded on its second sight, so
    a one-off sum pays nothing), not replayed (one Gaussian, a compressed sum, not the Gram
    path), the arrays are not float64 numpy arrays, or a check fails (the caller runs the
    general path, which decides again). ``record(reduced_vars, terms)`` gives the general
    path's decisions for a structure, ``(plan, gaussians)`` (the layout of the collapse and
    its Gaussians), or None where it does not reach the Gram path.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> from funsor_core.atoms.gaussian.mixture import gram_collapse_plan
        >>> replay_collapse(frozenset("i"), (g,), gram_collapse_plan) is None  # one Gaussian
        True
        >>> replay_collapse(frozenset("i"), (g,), gram_collapse_plan) is None  # never replayed
        True
    """
    if not REPLAY_COLLAPSE[0] or not FAST_NORMAL_EQUATIONS[0]:
        return None
    # (One comprehension: a frame for the terms, not a call per append.)
    key = (reduced_vars, Gaussian.compression_threshold,
           *[(cls, t._ikey, type(t.prec_sqrt), t.prec_sqrt.shape[-1]) if cls is Gaussian
             else (cls, t._ikey) if cls is Tensor else cls if cls is Number else None
             for t in terms if (cls := type(t))])
    if None in key:
        return None  # a summand of another class
    program = _PROGRAMS.data.get(key)
    if program is None:
        if key not in _SEEN.data:
            _SEEN.put(key, True)
            return None
        host = all(type(t.prec_sqrt) is _ndarray for t in terms if type(t) is Gaussian)
        recorded = record(reduced_vars, terms) if host else None  # numpy's program only
        program = _PROGRAMS.put(key, False if recorded is None else _Program(terms, *recorded))
    return program(terms) if program else None


class _Program:
    """The collapse of one structure: the plan of the general path and the constants of
    ``normal_equations._eager_host``, which the general path reaches for it."""

    __slots__ = ("plan", "is_gaussian", "unit", "host_plan", "weights_shape", "fused")

    def __init__(self, terms: tuple, plan, gs: tuple):
        self.plan, self.is_gaussian = plan, tuple(type(t) is Gaussian for t in terms)
        self.fused = fused_program(plan, terms) if FUSED_COLLAPSE[0] else None
        d_b = 0 if plan.index is None else len(plan.index)
        self.unit = _last_unit(plan.dim + 1)
        self.host_plan = (d_b, plan.dim, _tolerance(plan.dim, plan.rank))
        self.weights_shape = plan.kshape + (plan.n,)

    def __call__(self, terms: tuple) -> Funsor | None:
        if self.fused is not None:
            out = self.fused(terms)
            return None if out is None else collapse_result(self.plan, *out)
        gs, ds = [], []
        for t, is_g in zip(terms, self.is_gaussian):
            if is_g:
                w, s = t.white_vec, t.prec_sqrt
                if type(w) is not _ndarray or type(s) is not _ndarray or \
                        w.dtype.char != "d" or s.dtype.char != "d":
                    return None
                gs.append(t)
            else:
                if type(t) is Tensor and (type(t.data) is not _ndarray or t.output is not Real
                                          or t.dtype != "real"):
                    return None
                ds.append(t)
        plan = self.plan
        log_weights = _logits(tuple(ds), plan, gs[0].white_vec)
        if type(log_weights) is not _ndarray or log_weights.shape != self.weights_shape:
            return None
        # ``collapse_mixture`` -> ``collapse_planned_gram`` -> ``collapse_gram`` on numpy
        # arrays, without the decisions already made for this structure.
        out = _eager_host(log_weights, _block_gram_host(gs, plan) + self.unit, self.host_plan)
        return None if out is None else collapse_result(plan, *out)
