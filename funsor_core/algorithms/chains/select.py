"""Entry-by-entry selection between two messages: ``select(keep, inputs, new, old)``.

A ragged chain keeps, for each batch entry, the message (or partial product) of its last
valid step. ``select`` builds ``new`` where ``keep`` is True and ``old`` elsewhere, for
Tensors, Gaussians and their sums (a Gaussian plus Tensors of log weights): dense parts by
``ops.where`` on aligned data; Gaussian parts on their square-root systems, padded to a
common rank with zero columns (which add nothing to ``||x S - w||^2``: the same density). No
Python branch reads ``keep``, so it may be traced under ``jax.jit``.

Example:
    >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> h = fc.Gaussian(mean=np.ones((2, 1)), covariance=np.ones((2, 1, 1)),
    ...                 inputs={"b": fc.Bint[2], "x": fc.Real})
    >>> s = select(np.array([True, False]), {"b": fc.Bint[2]}, g, h)
    >>> s(x=1.0).data.tolist()  # g at 1 for b = 0, h at its mean for b = 1
    [-0.5, 0.0]
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian, merge_gaussian_inputs
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Funsor, Number, is_atom
from funsor_core.terms.contraction import sum_addends

__all__ = ["select"]

_NOT_SELECTABLE = (
    "lengths=: the carried message is {kind}, which cannot be selected entry by entry; "
    "lengths work for messages that are Tensors, Gaussians or their sums")
# A lazy message (a step built under ``with lazy:``): the carried product is computed when
# markov_product (or the filter) is called, so it must be called where the steps evaluate.
_STILL_LAZY = (
    ". This {kind} is still lazy: Gaussian chains with lengths= multiply their steps out "
    "when called, so call markov_product(..., lengths=) or windowed_filter outside `with "
    "lazy:` (only Tensor chains with lengths= stay lazy)")


def _parts(f: Funsor) -> tuple[list, list]:
    # The Gaussians and the Tensors/Numbers of a sum (eager or lazy); others are refused.
    gaussians, dense = [], []
    for term in sum_addends(f):
        if isinstance(term, Gaussian):
            gaussians.append(term)
        elif isinstance(term, (Tensor, Number)):
            dense.append(term)
        else:
            kind = type(term).__name__
            hint = "" if is_atom(term) else _STILL_LAZY.format(kind=kind)
            raise NotImplementedError(_NOT_SELECTABLE.format(kind=kind) + hint)
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
