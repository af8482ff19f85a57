"""Ragged chains: masks and lengths over the steps of a discrete Markov chain.

A batch of sequences of different lengths, padded to a common ``T``, is a chain whose steps
past each sequence's length must not count. ``masked_steps`` replaces every masked step by
the semiring's identity transition (the product's unit on the diagonal ``prev == curr``,
the sum's unit elsewhere: ``0`` and ``-inf`` in ``(logaddexp, add)`` and ``(max, add)``), so
a masked step carries the state unchanged and adds nothing to the total::

    step'[t, b, prev, curr] = step[t, b, prev, curr]   if mask[t, b]
                            = 1[prev == curr]           otherwise (in the semiring)

With ``lengths[b]``, ``mask[t, b] = t < lengths[b]``: the chain of sequence ``b`` ends after
its step ``lengths[b] - 1``, so the last curr names of a Markov product are its state at
time ``lengths[b]`` (0 gives the identity). The mask is data (``ops.where`` on arrays), read
by no Python branch, so traced lengths work under ``jax.jit``; the values are checked
(``0 <= lengths <= T``, a mask of 0/1) where they are concrete.

Example:
    >>> t = fc.Tensor(np.zeros((3, 2, 2)), {"t": fc.Bint[3], "x": fc.Bint[2], "y": fc.Bint[2]})
    >>> n = fc.Tensor(np.array([1, 3]), {"b": fc.Bint[2]}, dtype=4)
    >>> m = masked_steps(ops.logaddexp, ops.add, t, "t", {"x": "y"}, lengths=n)
    >>> m.data[2, 0].tolist(), m.data[2, 1].tolist()  # sequence 0 ended after step 0
    ([[0.0, -inf], [-inf, 0.0]], [[0.0, 0.0], [0.0, 0.0]])
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.algorithms.chains.discrete_masked import MaskedSteps
from funsor_core.algorithms.chains.discrete_padding import has_identity
from funsor_core.algorithms.chains.discrete_plan import tensor_factors, tensor_layout
from funsor_core.algorithms.chains.select import select
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.terms.base import Funsor, Variable
from funsor_core.terms.markov import MarkovProduct, _free_names, _pairs, time_variable

__all__ = ["masked_steps", "markov_product", "step_mask", "traced_invalid"]

_NOT_TENSOR = (
    "{what}: masking replaces a masked step by the identity transition, which needs the steps "
    "as Tensors (or a lazily built sum of Tensors), got {kind}. For Gaussian or switching "
    "chains filter with windowed_filter(..., lengths=...), which selects the carried message.")


_NO_IDENTITY = (
    "{what}: ({sum}, {prod}) has no identity transition over these steps (it is no "
    "semiring, or (max|min, mul) over factors that may be negative, or traced under "
    "jax.jit), so a masked step cannot be made to carry the state unchanged. Mask a "
    "semiring chain, e.g. (logaddexp, add), or use markov_product(..., lengths=...), which "
    "keeps each sequence's own partial product step by step.")


def _has_identity(sum_op, prod_op, pieces) -> bool:
    # (max, mul) takes 0 off the diagonal (nonnegative factors), not max's unit -inf
    return has_identity(sum_op, prod_op, tuple(f.data for f in pieces))


def _batch_names(inputs: dict, time: str, pairs: tuple) -> list:
    return tensor_layout(inputs, time, pairs)[1]


def _check_names(arg: str, f, allowed: list, time: str, pairs: tuple, what: str) -> None:
    if not isinstance(f, Tensor):
        raise TypeError(f"{what}: {arg} must be a Tensor over batch names (the chain's "
                        f"{allowed}, or new ones that every sequence's steps share), got "
                        f"{type(f).__module__}.{type(f).__qualname__}")
    steps = sorted(n for pair in pairs for n in pair if n in f.inputs)
    if steps:
        raise ValueError(f"{what}: {arg} has the step names {steps} as inputs; it may depend "
                         f"on the batch inputs {allowed} only")
    extra = [n for n in f.inputs if n not in allowed]
    if extra:
        raise ValueError(f"{what}: {arg} has inputs {extra}; it may depend on the batch "
                         f"inputs {allowed} only")
    if f.output.shape:
        raise ValueError(f"{what}: {arg} must hold one number per batch entry, got output "
                         f"{f.output}")


def _check_values(arg: str, data, low: int, high: int, what: str, time: str) -> None:
    # Read only where the values are concrete: a traced array decides nothing here.
    if not ops.is_concrete(data):
        return
    values = ops.to_numpy(data)
    if values.size == 0:
        return
    if arg == "mask":
        ok = ((values == 0) | (values == 1)).all()
        if not ok:
            raise ValueError(f"{what}: mask must hold 0/1 (or booleans) per step of '{time}' "
                             f"and batch entry, got values {sorted(set(values.ravel()))[:5]}")
        return
    bad = (values < low) | (values > high) | (values != values.round())
    if bad.any():
        raise ValueError(f"{what}: lengths must be integers in 0..{high} (the number of "
                         f"steps of '{time}': Bint[{high}]), got {values[bad].ravel()[:5]}")


def _check_domains(arg: str, f: Tensor, known: dict, what: str) -> None:
    # A shared name must have the chain's domain: broadcasting Bint[2] against Bint[3]
    # would fail deep in a reshape, or index the wrong steps.
    for n, d in f.inputs.items():
        if n in known and known[n] != d:
            raise ValueError(f"{what}: {arg} has input '{n}' as {d}, but the chain has "
                             f"'{n}' as {known[n]}; a name must have one domain")


def step_mask(inputs: dict, time: Variable, pairs: tuple, lengths=None, mask=None,
              what: str = "masked_steps"):
    """A boolean array over ``(T, *batch)`` (the batch names of ``inputs`` in order): True
    where a step counts. ``lengths`` (a Tensor over batch names) keeps ``t < lengths``;
    ``mask`` (a 0/1 Tensor over ``time`` and batch names) keeps its ones; both: both.

    Example:
        >>> n = fc.Tensor(np.array([0, 2]), {"b": fc.Bint[2]})
        >>> step_mask({"b": fc.Bint[2]}, fc.Variable("t", fc.Bint[3]), (), lengths=n).tolist()
        [[False, True], [False, True], [False, False]]
    """
    name, duration = time.name, time.output.size
    batch = _batch_names(inputs, name, pairs)
    layout = {name: time.output, **{n: inputs[n] for n in batch}}
    shape = tuple(d.size for d in layout.values())
    keep = None
    if lengths is not None:
        _check_names("lengths", lengths, batch, name, pairs, what)  # not over time
        _check_domains("lengths", lengths, layout, what)
        _check_values("lengths", lengths.data, 0, duration, what, name)
        n = align_tensor(layout, lengths)  # (1, *batch) with size-1 dims
        index = ops.new_arange(lengths.data, 0, duration, 1)
        index = ops.reshape(index, (duration,) + (1,) * len(batch))
        keep = index < n
    if mask is not None:
        _check_names("mask", mask, [name] + batch, name, pairs, what)
        _check_domains("mask", mask, layout, what)
        _check_values("mask", mask.data, 0, 1, what, name)
        kept = align_tensor(layout, mask) != 0
        keep = kept if keep is None else keep & kept
    if keep is None:
        raise ValueError(f"{what}: give lengths= or mask=")
    return ops.expand(keep, shape)


def _identity(proto, sizes: list, unit_prod, unit_sum):
    # The identity transition over (*prevs, *currs), small (it broadcasts against the
    # steps): unit_prod where every prev equals its curr, unit_sum elsewhere.
    npairs = len(sizes)
    eye = None
    for i, k in enumerate(sizes):
        shape = [1] * (2 * npairs)
        shape[i] = shape[npairs + i] = k
        e = ops.reshape(ops.new_eye(proto, k), tuple(shape)) > 0.5
        eye = e if eye is None else eye & e
    zeros = ops.new_zeros(proto, tuple(sizes) * 2)
    return ops.where(eye, ops.add(zeros, unit_prod), ops.add(zeros, unit_sum))


def masked_steps(sum_op, prod_op, trans: Funsor, time, step: dict, lengths=None,
                 mask=None, what: str = "masked_steps") -> Tensor:
    """The steps of a discrete chain with the masked ones replaced by the identity
    transition (see the module docstring): one Tensor over ``time``, the batch names, the
    prev and the curr names, for ``MarkovProduct``, ``markov_marginals``, ``markov_map``
    or ``windowed_filter``.

    Args:
        sum_op, prod_op: the semiring (its units make the identity).
        trans: a Tensor, or a lazily built sum of Tensors (a shared transition plus
            observations per step), with the inputs ``time`` (optional), the names of
            ``step`` and batch names.
        time, step: as in ``MarkovProduct``.
        lengths: a Tensor over (some of) the batch names: step ``t`` of entry ``b`` counts
            iff ``t < lengths[b]`` (``0 <= lengths <= T``).
        mask: a 0/1 Tensor over ``time`` and (some of) the batch names: the steps that
            count. With ``lengths``, a step counts where both say so.

    Raises:
        TypeError: ``trans`` is not made of Tensors, or ``lengths``/``mask`` is no Tensor.
        ValueError: ``lengths`` or ``mask`` has inputs the chain lacks, or (concrete values)
            a length outside ``0..T`` or a mask value other than 0/1.

    Example:
        >>> t = fc.Tensor(np.arange(8.0).reshape(2, 2, 2),
        ...               {"t": fc.Bint[2], "x": fc.Bint[2], "y": fc.Bint[2]})
        >>> mask = fc.Tensor(np.array([1, 0]), {"t": fc.Bint[2]})
        >>> masked_steps(ops.add, ops.mul, t, "t", {"x": "y"}, mask=mask).data[1].tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    pieces = tensor_factors(trans, prod_op)
    if pieces is None:
        raise TypeError(_NOT_TENSOR.format(what=what, kind=type(trans).__name__))
    if not _has_identity(sum_op, prod_op, pieces):
        raise ValueError(_NO_IDENTITY.format(what=what, sum=sum_op.name, prod=prod_op.name))
    time = time_variable(trans, time, what)
    pairs = _pairs(step)
    inputs: dict = {}
    for f in pieces:
        inputs.update(f.inputs)
    _add_mask_batch(inputs, pairs, time, lengths, mask, what)
    order, batch, prevs, currs = tensor_layout({**inputs, time.name: time.output},
                                               time.name, pairs)
    layout = {n: (time.output if n == time.name else inputs[n]) for n in order}
    shape = tuple(d.size for d in layout.values())
    data = None
    for f in pieces:
        part = align_tensor(layout, f) if isinstance(f, Tensor) else f.data
        data = part if data is None else prod_op(data, part)
    proto = next(f.data for f in pieces if isinstance(f, Tensor))
    keep = step_mask(layout, time, pairs, lengths, mask, what)
    ident = _identity(proto, [layout[p].size for p in prevs], ops.UNITS[prod_op],
                      0.0 if (sum_op, prod_op) == (ops.max, ops.mul) else ops.UNITS[sum_op])
    keep = ops.reshape(keep, tuple(keep.shape) + (1,) * (2 * len(prevs)))
    # One pass over the (T, *batch, *prevs, *currs) result: the where broadcasts its
    # operands (the steps' pieces summed as they are aligned, the small identity).
    out = ops.where(keep, data, ident)
    for bad in traced_invalid(lengths, mask, time.output.size):
        out = ops.where(align_tensor(layout, bad), math.nan, out)
    if tuple(out.shape) != shape:  # a chain of no prev/curr-free pieces: fill the rest
        out = ops.expand(out, shape)
    return Tensor(out, layout)


def markov_product(sum_op, prod_op, trans: Funsor, time, step, step_names=None,
                   strategy=None, *, lengths=None, mask=None) -> Funsor:
    """``MarkovProduct`` of a batch of ragged chains: the steps past ``lengths`` (or where
    ``mask`` is 0) are identity transitions (``masked_steps``), so for each batch entry
    ``b`` the result is its chain of ``lengths[b]`` steps, a function of its first prev
    state and its state after step ``lengths[b] - 1`` (exposed under the curr names).
    Without ``lengths`` and ``mask`` it is ``MarkovProduct``. The steps are a
    ``MaskedSteps`` term: built under ``lazy`` and then reduced with an initial factor (a
    filter), the chain kernels keep the step's factors apart (a shared transition matrix)
    and select the carried state past each length (``chains.discrete_masked``).

    Args: as in ``MarkovProduct`` and ``masked_steps``. Discrete chains (Tensors) in any
        semiring take ``lengths`` and ``mask``. Chains with no identity transition (Gaussian
        steps) take ``lengths >= 1`` (a ``ValueError`` eagerly; under ``jax.jit`` an entry
        of traced length 0 gives NaN): the partial products are built one step at a time
        (``T`` term operations) and each entry keeps its own (``chains.select``); to filter
        such a chain, ``windowed_filter(..., lengths=...)`` carries a message instead.

    Example:
        >>> a = fc.Tensor(np.log(np.array([[0.9, 0.1], [0.2, 0.8]])),
        ...               {"x": fc.Bint[2], "y": fc.Bint[2]})
        >>> n = fc.Tensor(np.array([1, 4]), {"b": fc.Bint[2]})
        >>> mp = markov_product(ops.logaddexp, ops.add, a, fc.Variable("t", fc.Bint[4]),
        ...                     {"x": "y"}, lengths=n)
        >>> np.allclose(np.exp(mp.data[0]), np.exp(a.data))  # one step for b = 0
        True
    """
    if (lengths is not None or mask is not None) and (
            tensor_factors(trans, prod_op) is None
            or not _has_identity(sum_op, prod_op, tensor_factors(trans, prod_op))):
        return _carried_product(sum_op, prod_op, trans, time, step, step_names, lengths, mask)
    if lengths is not None or mask is not None:
        trans, time = _masked_term(sum_op, prod_op, trans, time, step, lengths, mask)
    return MarkovProduct(sum_op, prod_op, trans, time, step, step_names, strategy=strategy)


def traced_invalid(lengths, mask, duration: int) -> list:
    """Traced ``lengths``/``mask`` values cannot be checked when a chain is built, and the
    mask would silently clamp a length outside ``0..T`` (or read a mask value 2 as 1): the
    bad entries as boolean Tensors over the batch (and time), for the caller to make NaN.
    Concrete arguments give nothing (``step_mask`` raises on them).

    Example:
        >>> traced_invalid(fc.Tensor(np.array([1, 9]), {"b": fc.Bint[2]}), None, 3)
        []
    """
    out = []
    for arg in (lengths, mask):
        if arg is None or ops.is_concrete(arg.data):
            continue
        x = arg.data
        if arg is mask:
            bad = (x != 0) & (x != 1)
        else:
            bad = (x < 0) | (x > duration) | (x != ops.floordiv(x, 1))
        out.append(Tensor(bad, dict(arg.inputs), 2))
    return out


def _masked_term(sum_op, prod_op, trans, time, step, lengths, mask):
    # The steps as a MaskedSteps term: exact makes it the dense masked steps at once; kept
    # lazily it lets the chain kernels select the carried state past each masked step
    # instead (the steps' factors stay apart: a shared matrix, the probability-space filter).
    what = "markov_product"
    time = time_variable(trans, time, what)
    pairs = _pairs(step)
    inputs = dict(trans.inputs)
    _add_mask_batch(inputs, pairs, time, lengths, mask, what)
    keep = step_mask(inputs, time, pairs, lengths, mask, what)
    batch = {n: inputs[n] for n in _batch_names(inputs, time.name, pairs)}
    for bad in traced_invalid(lengths, mask, time.output.size):
        # every step of a bad entry counts, and is NaN (one more factor over the batch)
        keep = keep | align_tensor({time.name: time.output, **batch}, bad)
        zeros = ops.new_zeros(bad.data, tuple(bad.data.shape)) + 0.0
        poison = ops.where(bad.data, zeros + math.nan, zeros + ops.UNITS[prod_op])
        trans = prod_op(trans, Tensor(poison, dict(bad.inputs)))
    proto = next(f.data for f in tensor_factors(trans, prod_op) if isinstance(f, Tensor))
    zeros = ops.new_zeros(proto, tuple(keep.shape))
    keep_t = Tensor(ops.where(keep, ops.add(zeros, 1.0), zeros), {time.name: time.output, **batch})
    step_vars = tuple((Variable(p, inputs[p]), Variable(c, inputs[c])) for p, c in pairs)
    return MaskedSteps(sum_op, prod_op, trans, keep_t, time, step_vars), time.name


_NO_EMPTY = (
    "markov_product: a Gaussian chain of 0 steps is the identity x_curr = x_prev, which is no "
    "density; lengths must be >= 1 for a Gaussian chain, got {bad}")


_UNEVALUATED = (
    "markov_product(lengths=...) of steps with no identity transition (Gaussian steps) "
    "keeps each batch entry's partial product, step by step, and needs those products "
    "evaluated; the active interpretation left one as a lazy {kind} (under `lazy`?). Call "
    "it where the chain evaluates (outside `with lazy:`), or filter the ragged chain with "
    "windowed_filter(..., lengths=...)")


def _carried_product(sum_op, prod_op, trans, time, step, step_names, lengths, mask):
    # A chain with no identity transition (Gaussian steps): the partial products of steps
    # 0..t, one step at a time, each entry keeping its product after its last valid step.
    # T term operations (unrolled under jax.jit): for moderate T.
    what = "markov_product"
    if mask is not None:
        raise NotImplementedError(_NOT_TENSOR.format(what=what, kind=type(trans).__name__)
                                  + " markov_product of such steps takes lengths=, not mask=.")
    time = time_variable(trans, time, what)
    pairs = _pairs(step)
    bints = {k: d for k, d in trans.inputs.items() if d.dtype != "real"}
    bints.setdefault(time.name, time.output)
    keep = step_mask(bints, time, pairs, lengths, None, what)
    if ops.is_concrete(lengths.data):
        low = ops.to_numpy(lengths.data)
        if (low < 1).any():
            raise ValueError(_NO_EMPTY.format(bad=sorted(set(low[low < 1].tolist()))))
    names = {n for pair in pairs for n in pair}
    keep_inputs = {k: d for k, d in bints.items() if k != time.name and k not in names}
    mids = {c: _fresh(c, set(trans.inputs)) for _, c in pairs}
    at = (lambda t: trans(**{time.name: t})) if time.name in trans.inputs else (lambda t: trans)
    product = at(0)
    for t in range(1, time.output.size):
        head = product(**mids)
        tail = at(t)(**{p: mids[c] for p, c in pairs})
        new = prod_op(head, tail).reduce(sum_op, frozenset(mids.values()))
        try:
            product = select(keep[t], keep_inputs, new, product)
        except NotImplementedError as e:  # under lazy: the partial products are terms
            raise NotImplementedError(_UNEVALUATED.format(kind=type(new).__name__)) from e
    if not ops.is_concrete(lengths.data):
        # Traced lengths cannot be checked: an empty Gaussian chain gives NaN, not the one
        # step that the partial products start from.
        zero = ops.new_zeros(lengths.data, ())
        product = product + Tensor(ops.where(lengths.data < 1, zero + float("nan"), zero),
                                   dict(lengths.inputs))
    rename = {}
    for (p, c), (fp, fc_) in zip(pairs, _free_names(pairs, step_names)):
        rename.update({p: fp, c: fc_})
    rename = {k: v for k, v in rename.items() if k != v}
    return product(**rename) if rename else product


def _fresh(name: str, taken: set) -> str:
    new = f"{name}__mid"
    while new in taken:
        new += "_"
    taken.add(new)
    return new


def _add_mask_batch(inputs: dict, pairs, time, lengths, mask, what: str) -> None:
    # lengths or mask over a batch name the steps lack give the masked steps that batch
    # input when the steps have no batch input (a transition shared by every sequence);
    # steps batched already by other names make a new name a typo, not a new batch.
    own = _batch_names(inputs, time.name, pairs) if all(
        n in inputs for pair in pairs for n in pair) else []
    for arg, label in ((lengths, "lengths"), (mask, "mask")):
        if isinstance(arg, Tensor):
            new = [n for n, d in arg.inputs.items()
                   if n != time.name and n not in inputs and d.dtype != "real"]
            if new and own:
                raise ValueError(f"{what}: {label} has the batch inputs {new}, which the "
                                 f"chain lacks; the chain's inputs are {list(inputs)} (batch "
                                 f"{own}). Rename them to the chain's batch names.")
            inputs.update((n, arg.inputs[n]) for n in new)
    missing = [n for pair in pairs for n in pair if n not in inputs]
    if missing:
        raise ValueError(f"{what}: step names {missing} are not inputs of the chain, whose "
                         f"inputs are {list(inputs)}")

