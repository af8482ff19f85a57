"""The steps of the IMM filter (``filter.imm``) run on arrays.

A step of ``imm_filter`` builds two terms: the mixing collapse ``collapse_{s_prev}(message +
switch)`` and the exact integral ``logaddexp_{x_prev}(mixed + model)``. Where building them
would only call the rules of the active interpretation in order with the moment-matching rule
first (``engine.fast_path``: no hook, tape, debug log or user rule ahead of it), the steps after
the first are the same array program every time, and ``ImmSteps`` runs them on arrays:

- mixing: the message's components over ``s_prev`` weighted by ``w_i + switch_t(i, j)``,
  collapsed per ``s_curr = j`` (``moments.collapse_system``, as the moment-matching rule);
- predict and update: the mixed Gaussian's system over ``x_prev`` placed beside the model's
  over ``(x_prev, x_curr)`` (their sum), and ``x_prev`` integrated: by the normal equations
  (``normal_equations.marginal_gram``; the model's Gram matrices formed once for all steps)
  where their check shows they lose nothing, else compressed where ``add_gaussians`` would
  compress it and integrated by ``sqrt_info.marginalize``, as ``marginalize_gaussian`` does.

The step atoms are aligned once, their time axis in front; the message is a term only before
the first array step and after the last. The numbers are those of the term-by-term fold to
roundoff (the Gaussians' columns and the log weights are added in another order). Any other
structure (batch inputs, several switch states, a message that is not one Gaussian plus one
Tensor over the switch and real states) keeps the term fold.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from funsor_core import ops
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.algebra import CHECK_RANK, gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian
from funsor_core.atoms.gaussian.moments import collapse_system
from funsor_core.atoms.gaussian.normal_equations import marginal_gram, system_rows
from funsor_core.atoms.gaussian.small_linalg import matmul
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Bint
from funsor_core.engine.fast_path import fast_path
from funsor_core.engine.patterns import type_key
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.contraction import Contraction

__all__ = ["ImmSteps"]


class _Layout(NamedTuple):
    """The names of one version of the step (0: prev -> curr; 1: swapped)."""

    s_from: str  # the switch name the message has before the step
    s_to: str
    x_from: tuple  # the real names the message has before the step, in order
    x_to: tuple


class ImmSteps:
    """Runs the steps of ``imm_filter`` after a first step built as terms on arrays (see the
    module docstring), or declines.

    Args:
        switch, model: the summands of version 0 of the step factor (``imm._split_factor``):
            Tensors and Numbers over ``time``, ``s_prev``, ``s_curr``; Gaussians over
            ``time``, ``s_curr`` and the real prev and curr names.
        time: the time name; step: the prev -> curr names.

    Example:
        >>> steps = ImmSteps((), (), "time", {"x_prev": "x_curr"})  # no switch state
        >>> steps.ok
        False
    """

    def __init__(self, switch: tuple, model: tuple, time: str, step: dict):
        self.ok = False
        discrete = [p for p in step if _domain(p, switch + model) is not None
                    and _domain(p, switch + model).dtype != "real"]
        reals = tuple(p for p in step if p not in discrete)
        if len(discrete) != 1 or not reals or not model:
            return
        s_prev = discrete[0]
        s_curr = step[s_prev]
        k_dom = _domain(s_prev, switch) or _domain(s_curr, model + switch)
        x_doms = {p: _domain(p, model) or _domain(step[p], model) for p in reals}
        if k_dom is None or any(d is None for d in x_doms.values()):
            return
        self.k, self.dim = k_dom.size, sum(d.num_elements for d in x_doms.values())
        self.x_doms = x_doms
        self.layouts = (_Layout(s_prev, s_curr, reals, tuple(step[p] for p in reals)),
                        _Layout(s_curr, s_prev, tuple(step[p] for p in reals), reals))
        self.switch = _switch_arrays(switch, time, s_prev, s_curr, k_dom)
        self.model = _model_arrays(model, time, s_curr, k_dom, reals, step, x_doms)
        self.ok = self.switch is not None and self.model is not None
        self.gram = _model_gram(self.model) if self.ok else None

    def accepts(self, mix_args: tuple, integrate_args: tuple) -> bool:
        """Whether the two Contractions of a step (their prepared arguments) would be built
        by calling the rules in order with the moment-matching rule first (the fast path's
        guard, ``engine.fast_path``)."""
        return all(fast_path(type_key(Contraction, args), "collapse") is not None
                   for args in (mix_args, integrate_args))

    def run(self, msg: Funsor, t: int, size: int) -> Funsor | None:
        """The message after steps ``t .. size - 1`` (step ``t`` uses version ``t % 2``), or
        None where ``msg`` is not a message this runs (the caller goes on with terms)."""
        lay = self.layouts[t % 2]
        state = self._state(msg, lay)
        if state is None:
            return None
        white_vec, prec_sqrt, log_const = state
        for u in range(t, size):
            lay = self.layouts[u % 2]
            white_vec, prec_sqrt, log_const = self._step(white_vec, prec_sqrt, log_const, u, lay)
        return self._term(white_vec, prec_sqrt, log_const, lay)

    # -- the arrays ----------------------------------------------------------------------------
    def _state(self, msg: Funsor, lay: _Layout):
        terms = (msg.terms if isinstance(msg, Contraction) and msg.red_op is None
                 and msg.bin_op is ops.add else (msg,))
        gs = [x for x in terms if isinstance(x, Gaussian)]
        ts = [x for x in terms if isinstance(x, Tensor)]
        if len(gs) != 1 or len(gs) + len(ts) != len(terms):
            return None
        inputs = {lay.s_from: Bint[self.k], **{x: self.x_doms[p] for x, p in
                                                zip(lay.x_from, self.layouts[0].x_from)}}
        if msg.inputs.keys() != inputs.keys() or any(msg.inputs[k] != d
                                                     for k, d in inputs.items()):
            return None
        if any(t.dtype != "real" or t.output.shape for t in ts):
            return None
        white_vec, prec_sqrt = align_gaussian(inputs, gs[0], expand=True)
        log_const = ops.new_zeros(white_vec, (self.k,))
        for x in ts:
            log_const = log_const + align_tensor({lay.s_from: Bint[self.k]}, x, expand=True)
        return white_vec, prec_sqrt, log_const

    def _step(self, white_vec, prec_sqrt, log_const, t: int, lay: _Layout):
        k, dim, rank = self.k, self.dim, prec_sqrt.shape[-1]
        # Mix: component i of next mode j has weight w_i + switch(i, j); one Gaussian per j.
        sw, timed = self.switch
        logits = ops.permute(ops.add(log_const[:, None], sw[t] if timed else sw), (1, 0))
        log_const, white_vec, prec_sqrt = collapse_system(
            logits, ops.expand(white_vec[None], (k, k, rank)),
            ops.expand(prec_sqrt[None], (k, k, dim, rank)), None, None,
            lambda: _labels(lay.x_from, self.x_doms, self.layouts[0].x_from))
        # Predict and update: the sum with the model over (x_from, x_to), x_from integrated.
        mw, ms, timed, compress = self.model
        white_vec, prec_sqrt = gm.pad_dims(white_vec, prec_sqrt, 0, dim)
        if self.gram is not None:  # by normal equations where they lose nothing
            _, m = system_rows(white_vec, prec_sqrt, None)
            out = marginal_gram(matmul(m, m.swapaxes(-1, -2)) + self.gram[t if timed else 0],
                                dim, dim + int(ms.shape[-1]))
            if out is not None:
                white_vec, prec_sqrt, norm = out
                return white_vec, prec_sqrt, ops.add(log_const, norm)
        white_vec = ops.cat([white_vec, mw[t] if timed else mw], -1)
        prec_sqrt = ops.cat([prec_sqrt, ms[t] if timed else ms], -1)
        if compress:
            white_vec, prec_sqrt, shift = gm.compress(white_vec, prec_sqrt)
            log_const = ops.add(log_const, shift)
        white_vec, prec_sqrt, norm = gm.marginalize(
            white_vec, prec_sqrt, tuple(range(dim)), check=CHECK_RANK[0],
            names=lambda: _labels(lay.x_from, self.x_doms, self.layouts[0].x_from))
        return white_vec, prec_sqrt, ops.add(log_const, norm)

    def _term(self, white_vec, prec_sqrt, log_const, lay: _Layout) -> Funsor:
        """The message over the names after the last step's version (``lay.*_to``)."""
        batch = ((lay.s_to, Bint[self.k]),)
        reals = tuple((x, self.x_doms[p]) for x, p in zip(lay.x_to, self.layouts[0].x_from))
        return gaussian_sum(Gaussian.make(white_vec, prec_sqrt, ikey=batch + reals),
                            Tensor.make(log_const, dict(batch), ikey=batch))


def _model_gram(model: tuple) -> Any:
    """The model's part of ``M M'`` (``normal_equations.system_rows``: a Gram matrix of a
    system of column blocks is the sum of theirs), time in front (one entry when static), or
    None where the normal equations cannot run (not float64, or traced)."""
    mw, ms, timed, _ = model
    if ms.dtype.itemsize != 8 or not ops.is_concrete(ms):
        return None
    _, m = system_rows(mw, ms, None)
    gram = matmul(m, m.swapaxes(-1, -2))
    return gram if timed else gram[None]


def _domain(name: str, terms: tuple):
    for x in terms:
        if name in x.inputs:
            return x.inputs[name]
    return None


def _labels(names: tuple, doms: dict, keys: tuple) -> list:
    return [n if doms[p].num_elements == 1 else f"{n}[{j}]"
            for n, p in zip(names, keys) for j in range(doms[p].num_elements)]


def _switch_arrays(switch: tuple, time: str, s_prev: str, s_curr: str, k_dom) -> Any:
    """``(array, timed)``: the summed switch log weights over ``(time,) s_prev, s_curr``, or
    None for a summand over other inputs."""
    total, timed, const = None, False, 0.0
    for x in switch:
        if isinstance(x, Number):
            const += float(x.data)
            continue
        if not isinstance(x, Tensor) or x.dtype != "real" or x.output.shape or not set(
                x.inputs) <= {time, s_prev, s_curr}:
            return None
        has_time = time in x.inputs
        order = ({time: x.inputs[time]} if has_time else {}) | {s_prev: k_dom, s_curr: k_dom}
        data = align_tensor(order, x, expand=True)
        if timed and not has_time:
            data = data[None]
        elif has_time and total is not None and not timed:
            total = total[None]
        total = data if total is None else ops.add(total, data)
        timed = timed or has_time
    if total is None:
        return None
    return (ops.add(total, const) if const else total), timed


def _model_arrays(model: tuple, time: str, s_curr: str, k_dom, reals: tuple, step: dict,
                  x_doms: dict) -> Any:
    """``(white_vec, prec_sqrt, timed, compress)``: the model Gaussians' systems over
    ``(time,) s_curr`` and the coordinates ``(x_prev..., x_curr...)``, side by side; or None
    for a summand that is no Gaussian over those inputs."""
    coords = {p: x_doms[p] for p in reals} | {step[p]: x_doms[p] for p in reals}
    allowed = {time, s_curr, *coords}
    timed = any(time in g.inputs for g in model)
    ws, ss = [], []
    for g in model:
        if not isinstance(g, Gaussian) or not set(g.inputs) <= allowed:
            return None
        order = ({time: g.inputs[time]} if timed and time in g.inputs else {}) | {
            s_curr: k_dom} | coords
        w, s = align_gaussian(order, g, expand=True)
        if timed and time not in g.inputs:
            size = next(x.inputs[time].size for x in model if time in x.inputs)
            w = ops.expand(w[None], (size,) + tuple(w.shape))
            s = ops.expand(s[None], (size,) + tuple(s.shape))
        ws.append(w)
        ss.append(s)
    dim = sum(d.num_elements for d in x_doms.values())
    rank = dim + sum(int(s.shape[-1]) for s in ss)
    # add_gaussians compresses a sum whose rank passes the threshold (gaussian_from_arrays).
    compress = rank > Gaussian.compression_threshold * 2 * dim
    return ops.cat(ws, -1), ops.cat(ss, -1), timed, compress
