"""The moment-matching steps of ``windowed_filter`` run on arrays.

A step of the filter is ``Contraction(logaddexp, add, V, (message terms, step atoms))``. Where
the active interpretation hands such a term straight to a rule that computes
``collapse_mixture`` of it (the moment-matching rule, which registers how as its ``"collapse"``
array program; the fast path's guard, ``engine.fast_path.fast_path``, shows that no hook, log
or other rule runs first), every step of the same structure runs the same array program: align
the message and the step's atoms into the collapse's layout, integrate, collapse
(``funsor_core.atoms.gaussian.moments``). ``FusedCollapses`` runs those steps on the arrays,
with the step atoms aligned once for all steps (their time axis kept in front), and builds the
message term only where the structure changes and at the end. Where the collapse can run by
normal equations (``normal_equations``), the atoms' part of the Gram matrix is formed once for
all steps too, and a step forms only the message's part and adds it (the system itself is built
only where the QR path runs). The numbers are those of the term-by-term fold, to roundoff (the
log weights are added in another order).

A rule registered ahead of the built-in one, a hook, a wrapping interpretation or the debug
log make ``fast_path`` answer None: then every step is built as a term, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.algorithms.filter.fused_scan import scan_steps
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.moments import (
    align_system,
    align_weights,
    collapse_layout,
    collapse_planned,
    collapse_planned_gram,
    collapse_result,
    place_system,
)
from funsor_core.atoms.gaussian.normal_equations import system_rows
from funsor_core.atoms.gaussian.small_linalg import matmul
from funsor_core.atoms.tensor import Tensor
from funsor_core.engine.backend import backend_of
from funsor_core.engine.fast_path import fast_path
from funsor_core.engine.patterns import type_key
from funsor_core.terms.base import Funsor
from funsor_core.terms.contraction import Contraction

__all__ = ["FusedCollapses"]


class _State(NamedTuple):
    """A message ``Gaussian(white_vec, prec_sqrt) + Tensor(log_const)`` as arrays."""

    g_ikey: tuple
    t_ikey: tuple | None
    white_vec: Any
    prec_sqrt: Any
    log_const: Any

    @property
    def structure(self) -> tuple:
        return self.g_ikey, self.prec_sqrt.shape[-1], self.t_ikey


class _Step(NamedTuple):
    """One step structure: the plan, where the message goes in it, the aligned atoms."""

    plan: Any
    gaussians: tuple  # per Gaussian of the collapse: None (the message) or (wv, ps, timed)
    msg_weights: Any  # the message Tensor's entry of plan.dense, or None
    timed_weights: Any  # the atoms' log weights with time in front, summed (or None)
    static_weights: Any  # those without time, summed (or None)
    # The atoms' part of M M' (``normal_equations.system_rows``; a Gram matrix is a sum over
    # column blocks), batch unflattened: (array, timed), or None where the fast path cannot run.
    gram: Any = None

    state_type = _State

    def __call__(self, state: _State, t: int) -> _State:
        plan = self.plan
        logits = self._logits(state, t)
        if self.gram is None:
            out = collapse_planned(plan, logits, *self._system(state, t))
        else:
            out = collapse_planned_gram(plan, logits, self._gram(state, t),
                                        lambda: self._system(state, t))
        log_const, white_vec, prec_sqrt = out
        return _State(plan.g_ikey, plan.t_ikey, white_vec, prec_sqrt, log_const)

    def _system(self, state: _State, t: int):
        """The collapse's ``(white_vec, prec_sqrt)``: the Gaussians' systems side by side."""
        plan = self.plan
        ws, ss = [], []
        for part in self.gaussians:
            if part is None:
                p = plan.gaussians[len(ws)]
                w, s = align_system(state.white_vec, state.prec_sqrt, p, plan)
            else:
                w, s, timed = part
                if timed:
                    w, s = w[t], s[t]
            ws.append(w)
            ss.append(s)
        return (ws[0], ss[0]) if len(ws) == 1 else (ops.cat(ws, -1), ops.cat(ss, -1))

    def _gram(self, state: _State, t: int):
        """``M M'`` of the collapse's system: the message's, unexpanded, plus the atoms'."""
        plan = self.plan
        p = plan.gaussians[self.gaussians.index(None)]
        _, m = system_rows(*place_system(state.white_vec, state.prec_sqrt, p, plan),
                           plan.index)
        atoms, timed = self.gram
        mm = matmul(m, m.swapaxes(-1, -2)) + (atoms[t] if timed else atoms)
        full = plan.gaussians[0][2]
        if tuple(mm.shape[:-2]) != full:  # a batch input that only the log weights have
            mm = ops.expand(mm, full + tuple(mm.shape[-2:]))
        return mm.reshape(plan.kshape + (plan.n,) + tuple(mm.shape[-2:]))

    def _logits(self, state: _State, t: int):
        plan = self.plan
        total = None
        if self.msg_weights is not None:
            total = align_weights(state.log_const, self.msg_weights)
        for extra in (None if self.timed_weights is None else self.timed_weights[t],
                      self.static_weights):
            if extra is not None:
                total = extra if total is None else ops.add(total, extra)
        if total is None:
            return ops.new_zeros(state.prec_sqrt, plan.kshape + (plan.n,))
        if tuple(total.shape) != plan.dense_full:
            total = ops.expand(total, plan.dense_full)
        return ops.reshape(total, plan.kshape + (plan.n,))


def _message_state(msg: Funsor) -> _State | None:
    """The arrays of a message ``g + t`` (a Gaussian, plus at most one Tensor), or None."""
    terms = (msg.terms if isinstance(msg, Contraction) and msg.red_op is None
             and msg.bin_op is ops.add else (msg,))
    gs = [x for x in terms if isinstance(x, Gaussian)]
    ts = [x for x in terms if isinstance(x, Tensor)]
    if len(gs) != 1 or len(ts) + 1 != len(terms) or len(ts) > 1:
        return None
    t = ts[0] if ts else None
    if t is not None and (t.dtype != "real" or t.output.shape):
        return None
    return _State(gs[0]._ikey, None if t is None else t._ikey, gs[0].white_vec,
                  gs[0].prec_sqrt, None if t is None else t.data)


def _summed(parts: list):
    total = None
    for part in parts:
        total = part if total is None else ops.add(total, part)
    return total


class FusedCollapses:
    """Runs steps of ``windowed_filter`` on arrays where each is a moment-matching collapse
    (see the module docstring).

    Args:
        factors: the filter's ``_StepFactors`` (its ``atoms``, the step factor's atoms with
            time in front, must be known: after its step 0).
        reduced_names: ``reduced_names(t, terms)``, the names step ``t`` sums.
        tries: how many times ``run`` may find no fusable step before it stops trying.

    Example:
        >>> fused = FusedCollapses(None, lambda t, terms: frozenset(), tries=0)
        >>> fused.exhausted  # windowed_filter stops asking it
        True
    """

    def __init__(self, factors, reduced_names: Callable, tries: int = 4):
        self.factors, self.reduced_names, self.tries = factors, reduced_names, tries
        self.steps = {}
        self.after = {}  # step key -> the structure of the message it makes
        self.compiled = True  # on jax, repeating steps may run as one lax.scan

    def run(self, msg: Funsor, t: int, size: int) -> tuple[Funsor, int]:
        """``(message, t')``: steps ``t .. t' - 1`` run on arrays (``t' == t`` where step
        ``t`` is not a collapse this can repeat; the caller builds it as a term)."""
        state = _message_state(msg) if self.factors.atoms is not None else None
        step = None
        while state is not None and t < size:
            key = (t % len(self.factors.renames), state.structure)
            found = self.steps.get(key)
            if found is None:
                if step is not None:
                    msg = collapse_result(step.plan, state.log_const, state.white_vec,
                                          state.prec_sqrt)
                found = self._plan_step(msg, t)
                if found is None:
                    break
                self.steps[key] = found
            step = found
            scanned = self._scan(state, t, size, step) if self.compiled else None
            if scanned is not None:
                state, t, step = scanned
                continue
            state = step(state, t)
            self.after[key] = state.structure
            t += 1
        else:
            if step is not None:
                return collapse_result(step.plan, state.log_const, state.white_vec,
                                       state.prec_sqrt), t
        self.tries -= step is None
        return msg, t

    def _scan(self, state: _State, t: int, size: int, step: _Step):
        """``(state, t', last step)`` after steps from ``t`` run compiled (``fused_scan``) on a
        backend that compiles whole programs (jax): those that repeat with the filter's period
        as one backend ``scan``, or, until a full period is known, step ``t`` alone. None on a
        backend that runs eagerly, or
        where an eager result is not finite (the Python loop redoes those steps then, and
        raises where a component has no moments)."""
        if not backend_of(state.white_vec).COMPILES or state.log_const is None:
            return None  # (a message without log weights: its first step runs in Python)
        period = len(self.factors.renames)
        cycle, structure = [], state.structure
        for k in range(period):
            key = ((t + k) % period, structure)
            if key not in self.after:
                break
            cycle.append(self.steps[key])
            structure = self.after[key]
        blocks = (size - t) // period
        if len(cycle) < period or structure != state.structure or blocks < 2:
            cycle, blocks = [step], 1
        white_vec, prec_sqrt, log_const = scan_steps(state, t, blocks, tuple(cycle))
        if ops.is_concrete(log_const) and not bool(ops.to_numpy(ops.all(
                ops.isfinite(log_const)))):
            self.compiled = False
            return None
        last = cycle[-1]
        new = _State(last.plan.g_ikey, last.plan.t_ikey, white_vec, prec_sqrt, log_const)
        if blocks == 1 and len(cycle) == 1:
            self.after[(t % period, state.structure)] = new.structure
        return new, t + blocks * len(cycle), last

    @property
    def exhausted(self) -> bool:
        return self.tries <= 0

    def _plan_step(self, msg: Funsor, t: int) -> _Step | None:
        flat = (msg.terms if isinstance(msg, Contraction) and msg.red_op is None
                and msg.bin_op is ops.add else (msg,))
        atoms = self.factors(t)
        terms = (*flat, *atoms)
        reduced = self.reduced_names(t, terms)
        if not reduced:
            return None
        # The arguments as building the term would hand them to the rules (terms sorted).
        args = Contraction._prepare(ops.logaddexp, ops.add, reduced, terms)
        request = fast_path(type_key(Contraction, args), "collapse")
        found = request(args[2], args[3]) if request is not None else None
        if found is None:
            return None
        gs, ds, names, integrate = found
        plan = collapse_layout(gs, ds, names, integrate)
        if plan is None or plan.dense_axes:
            return None
        source = {id(x): j for j, x in enumerate(atoms)}
        gaussians, msg_weights, timed, static, systems = [], None, [], [], []
        for i, g in enumerate(gs):
            if any(g is x for x in flat):
                gaussians.append(None)
                continue
            j = source.get(id(g))
            if j is None:
                return None
            _, (wv, ps, has_time), _ = self.factors.atoms[j]
            lead = 1 if has_time else 0
            gaussians.append((*align_system(wv, ps, plan.gaussians[i], plan, lead), has_time))
            systems.append((plan.gaussians[i], wv, ps, has_time))
        for i, d in enumerate(ds):
            if plan.dense[i] is None:
                return None  # a Number: its value may change from step to step
            if any(d is x for x in flat):
                msg_weights = plan.dense[i]
                continue
            j = source.get(id(d))
            if j is None:
                return None
            _, (data, has_time), _ = self.factors.atoms[j]
            (timed if has_time else static).append(
                align_weights(data, plan.dense[i], 1 if has_time else 0))
        if sum(x is None for x in gaussians) != 1:
            return None
        return _Step(plan, tuple(gaussians), msg_weights, _summed(timed), _summed(static),
                     _atoms_gram(plan, systems))


def _atoms_gram(plan, systems: list):
    """``_Step.gram``: the atoms' ``M M'`` once for all steps (``systems``: their entries of
    ``plan.gaussians`` and arrays), or None where the fast path cannot run."""
    if plan.rank < plan.dim or any(ps.dtype.itemsize != 8 for _, _, ps, _ in systems):
        return None
    total, timed = None, False
    for p, wv, ps, has_time in systems:
        _, m = system_rows(*place_system(wv, ps, p, plan, 1 if has_time else 0), plan.index)
        mm = m @ m.swapaxes(-1, -2)
        total = mm if total is None else total + mm  # broadcasts the static over time
        timed = timed or has_time
    return None if total is None else (total, timed)
