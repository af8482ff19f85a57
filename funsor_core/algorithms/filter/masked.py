"""Filtering ragged batches: ``windowed_filter(..., lengths=, mask=)``.

A discrete chain (Tensor steps) is masked by identity transitions (``chains.masks``), which
handles any mask. A Gaussian or switching chain has no identity transition (a point mass
``x_curr = x_prev`` is no density), so with ``lengths`` the filter keeps the message of
each sequence after its last valid step instead: the message after step ``t`` depends on
steps ``0..t`` only, so for entry ``b`` the result is the message after step
``lengths[b] - 1``, selected entry by entry as the steps run::

    carry_{t+1}[b] = message_t[b]   if t < lengths[b]   else   carry_t[b]

(``carry_0`` is ``init`` under the curr names, the result of a chain of no steps). The
selection is ``ops.where`` on the arrays of the messages (a Gaussian's square-root systems
padded to a common rank with zero columns, which add nothing to ``||x S - w||^2``), decided
by no Python branch, so traced lengths work under ``jax.jit``.

Example:
    >>> t = fc.Tensor(np.log(np.full((3, 2, 2), 0.5)),
    ...               {"t": fc.Bint[3], "s": fc.Bint[2], "s2": fc.Bint[2]})
    >>> n = fc.Tensor(np.array([0, 3]), {"b": fc.Bint[2]})
    >>> m = fc.windowed_filter(ops.logaddexp, ops.add, t, "t", {"s": "s2"}, fc.Number(0.0),
    ...                        lengths=n)
    >>> np.exp(m.reduce(ops.logaddexp, "s2").data).tolist()  # 2 states, no steps for b = 0
    [2.0, 2.0]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_plan import tensor_factors
from funsor_core.algorithms.chains.masks import masked_steps, step_mask
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian, merge_gaussian_inputs
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Binary, Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction

__all__ = ["masked_filter"]

_NO_MASK = (
    "windowed_filter: a Gaussian or switching chain takes lengths= (the message after each "
    "sequence's last step is kept), not an arbitrary mask=: a masked step in the middle would "
    "need an identity transition, which is no Gaussian density. Give lengths, or mask only "
    "Tensor chains.")

_NOT_SELECTABLE = (
    "windowed_filter(lengths=...): the filtering message is {kind}, which cannot be selected "
    "entry by entry; lengths work for messages that are Tensors, Gaussians or their sums")


def masked_filter(sum_op, prod_op, trans: Funsor, time, step: dict, init: Funsor, window,
                  lengths, mask, filter_fn) -> Funsor:
    """``windowed_filter`` of a ragged batch (see the module docstring); ``filter_fn`` is
    ``windowed_filter`` (passed in by it, so that this module does not import it back).
    """
    name = time.name if isinstance(time, Variable) else time
    if tensor_factors(trans, prod_op) is not None:
        trans = masked_steps(sum_op, prod_op, trans, time, step, lengths, mask,
                             "windowed_filter")
        return filter_fn(sum_op, prod_op, trans, name, step, init, window)
    if mask is not None:
        raise NotImplementedError(_NO_MASK)
    if name not in trans.inputs:
        raise ValueError(f"windowed_filter: '{name}' is not an input of the transition "
                         f"factor, whose inputs are {list(trans.inputs)}")
    pairs = tuple(sorted(dict(step).items()))
    domain = trans.inputs[name]
    bints = {k: d for k, d in trans.inputs.items() if d.dtype != "real"}
    keep = step_mask(bints, Variable(name, domain), pairs, lengths, None, "windowed_filter")
    keep_inputs = {k: d for k, d in bints.items()
                   if k != name and k not in {n for p in pairs for n in p}}
    state = {"carry": init(**{p: c for p, c in dict(step).items() if p in init.inputs})}

    def each_step(t, msg):
        state["carry"] = select(keep[t], keep_inputs, msg, state["carry"])

    filter_fn(sum_op, prod_op, trans, name, step, init, window, each_step=each_step)
    return state["carry"]


def _parts(f: Funsor) -> tuple[list, list]:
    # The Gaussians and the Tensors/Numbers of a sum (eager or lazy); others are refused.
    todo, gaussians, dense = [f], [], []
    while todo:
        term = todo.pop()
        if isinstance(term, Binary) and term.op is ops.add:
            todo += [term.rhs, term.lhs]
        elif (isinstance(term, Contraction) and term.red_op is None
              and term.bin_op is ops.add and not term.reduced_vars):
            todo += list(term.terms)
        elif isinstance(term, Gaussian):
            gaussians.append(term)
        elif isinstance(term, (Tensor, Number)):
            dense.append(term)
        else:
            raise NotImplementedError(_NOT_SELECTABLE.format(kind=type(term).__name__))
    if len(gaussians) > 1:
        raise NotImplementedError(_NOT_SELECTABLE.format(kind="a sum of Gaussians"))
    return gaussians, dense


def select(keep, keep_inputs: dict, new: Funsor, old: Funsor) -> Funsor:
    """``new`` where the boolean array ``keep`` (over ``keep_inputs``) is True, else ``old``,
    entry by entry of the batch inputs; each side a Tensor, a Gaussian or their sum (in
    ``(logaddexp, add)`` form: a Gaussian plus Tensors of log weights).

    Example:
        >>> a = fc.Tensor(np.zeros(2), {"x": fc.Bint[2]})
        >>> b = fc.Tensor(np.ones((3, 2)), {"b": fc.Bint[3], "x": fc.Bint[2]})
        >>> keep = np.array([True, False, True])
        >>> select(keep, {"b": fc.Bint[3]}, a, b).data[:, 0].tolist()
        [0.0, 1.0, 0.0]
    """
    g_new, d_new = _parts(new)
    g_old, d_old = _parts(old)
    proto = next(f.white_vec if isinstance(f, Gaussian) else f.data
                 for f in (*g_new, *g_old, *d_new, *d_old) if not isinstance(f, Number))
    zeros = ops.new_zeros(proto, tuple(keep.shape))
    keep_t = Tensor(ops.where(keep, ops.full_like(zeros, 1.0), zeros), keep_inputs)
    dense = _select_dense(keep_t, d_new, d_old, proto)
    if not g_new and not g_old:
        return dense
    return _select_gaussian(keep_t, g_new, g_old) + dense


def _summed(parts: list, inputs: dict, proto):
    total = ops.new_zeros(proto, tuple(d.size for d in inputs.values()))
    for f in parts:
        total = ops.add(total, align_tensor(inputs, f) if isinstance(f, Tensor) else f.data)
    return total


def _select_dense(keep_t: Tensor, new: list, old: list, proto) -> Tensor:
    inputs: dict = dict(keep_t.inputs)
    for f in (*new, *old):
        inputs.update((k, d) for k, d in f.inputs.items())
    keep = align_tensor(inputs, keep_t, expand=True) > 0.5
    return Tensor(ops.where(keep, _summed(new, inputs, proto), _summed(old, inputs, proto)),
                  inputs)


def _select_gaussian(keep_t: Tensor, new: list, old: list) -> Funsor:
    inputs = merge_gaussian_inputs(keep_t, *new, *old)
    batch = {k: d for k, d in inputs.items() if d.dtype != "real"}
    shape = tuple(d.size for d in batch.values())
    systems = []
    for g in (new[0] if new else None, old[0] if old else None):
        if g is None:  # no Gaussian on this side: a system of rank 0 (the constant 0)
            systems.append(None)
            continue
        w, s = align_gaussian(inputs, g, expand=True)
        systems.append((ops.expand(w, shape + tuple(w.shape[-1:])),
                        ops.expand(s, shape + tuple(s.shape[-2:]))))
    rank = max(s.shape[-1] for w, s in (x for x in systems if x is not None))
    dim = next(s.shape[-2] for _, s in (x for x in systems if x is not None))
    proto = next(s for _, s in (x for x in systems if x is not None))
    padded = []
    for x in systems:
        w, s = x if x is not None else (ops.new_zeros(proto, shape + (0,)),
                                        ops.new_zeros(proto, shape + (dim, 0)))
        extra = rank - s.shape[-1]
        if extra:  # zero columns: no information, the same density
            w = ops.cat([w, ops.new_zeros(proto, shape + (extra,))], -1)
            s = ops.cat([s, ops.new_zeros(proto, shape + (dim, extra))], -1)
        padded.append((w, s))
    keep = align_tensor(batch, keep_t, expand=True) > 0.5
    white_vec = ops.where(keep[..., None], padded[0][0], padded[1][0])
    prec_sqrt = ops.where(keep[..., None, None], padded[0][1], padded[1][1])
    return Gaussian(white_vec=white_vec, prec_sqrt=prec_sqrt, inputs=inputs)
