"""Gaussian algebra on funsors: sums, marginals, plates, scaling and substitution.

These are the pure functions that ``interpretations/exact/gaussian.py`` calls once a rule has
decided that a rewrite applies. Each takes and returns funsors (Gaussians, Tensors, Numbers
and sums of them) and does the array work with ``arrays``. A Gaussian plus a Tensor is
kept as the sum ``Contraction(None, ops.add, {}, (g, t))``, as in funsor 0.4.8.

A function that cannot be evaluated exactly returns ``None`` (the rule then declines). In
particular nothing here reads a traced value under ``jax.jit`` to decide what to do: a
condition that needs a concrete number (a scale's sign) is decided structurally or declined.

Example:
    >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
    >>> t = fc.Tensor(np.array(1.0))
    >>> gaussians, dense = split_gaussian_sum(gaussian_sum(g, t))
    >>> len(gaussians), float(dense[0].data)
    (1, 1.0)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.analysis.affine import extract_affine_flat
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian import sqrt_info as gm
from funsor_core.atoms.gaussian.atom import (
    Gaussian,
    align_gaussian,
    evaluate_unbatched,
    gaussian_batch_inputs,
    gaussian_layout,
    merge_gaussian_inputs,
    real_offsets,
)
from funsor_core.atoms.gaussian.host import host_add, host_copies, to_backend, widest
from funsor_core.atoms.gaussian.normalized import record_log_mass
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import broadcast_shape
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Funsor, Number, Variable, merge_inputs
from funsor_core.terms.contraction import Contraction

__all__ = ["CHECK_RANK", "add_gaussians", "maximize_gaussian", "affine_subs_gaussian",
           "condition_gaussian", "contract_gaussians", "dense_sum", "gaussian_from_arrays",
           "gaussian_sum", "is_gaussian_sum", "marginalize_gaussian", "plate_gaussian",
           "reduce_gaussian_sum", "rename_gaussian", "scale_gaussian_sum",
           "split_gaussian_sum", "subs_gaussian_batch"]

# Check the rank of a block before marginalizing it (a QR and one host read per call), so
# that too little information raises a ValueError naming the variable instead of giving inf.
CHECK_RANK = [True]

# ---------------------------------------------------------------------------------------------
# Sums of Gaussians, Tensors and Numbers.
def dense_sum(terms) -> Funsor | None:
    """``terms[0] + terms[1] + ...``, or None for no terms.

    Example:
        >>> dense_sum([fc.Number(1.0), fc.Number(2.0)]).data
        3.0
    """
    result = None
    for t in terms:
        if result is None:
            result = t
        else:
            added = host_add(result, t)
            result = result + t if added is None else added
    return result


def is_gaussian_sum(term) -> bool:
    """Whether ``term`` is ``Contraction(None, add, {}, terms)`` of Gaussians, Tensors and
    Numbers with at least one Gaussian.

    Example:
        >>> is_gaussian_sum(fc.Number(1.0))
        False
    """
    return (isinstance(term, Contraction) and term.red_op is None and term.bin_op is ops.add
            and (Gaussian in (k := {*map(type, term.terms)}) and k <= {Gaussian, Tensor, Number}
                 or any(isinstance(t, Gaussian) for t in term.terms)
                 and all(isinstance(t, (Gaussian, Tensor, Number)) for t in term.terms)))


def split_gaussian_sum(term) -> tuple[list, list]:
    """``(gaussians, dense)``: the Gaussian and Tensor/Number terms of a Gaussian, a Tensor, a
    Number or a sum of them (see ``is_gaussian_sum``).

    Example:
        >>> gaussians, dense = split_gaussian_sum(fc.Number(1.0))
        >>> gaussians, dense[0].data
        ([], 1.0)
    """
    terms = term.terms if (isinstance(term, Contraction) and term.red_op is None
                           and term.bin_op is ops.add) else (term,)
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    dense = [t for t in terms if isinstance(t, (Tensor, Number))]
    assert len(gaussians) + len(dense) == len(terms), term
    return gaussians, dense


def gaussian_from_arrays(white_vec, prec_sqrt, ikey: tuple) -> Funsor | None:
    """What a Gaussian of these arrays evaluates to when it is not itself, else None.

    With no real input it is the Tensor of its constant ``-0.5 ||white_vec||^2``. With rank
    above ``Gaussian.compression_threshold * dim`` it is compressed (QR), the constant split
    off as a Tensor: ``Gaussian + Tensor``.

    Example:
        >>> float(gaussian_from_arrays(np.array([2.0]), np.zeros((0, 1)), ()).data)
        -2.0
    """
    dim, rank = prec_sqrt.shape[-2:]
    if dim == 0:
        batch = dict(gaussian_layout(ikey)[0])
        return Tensor.make(ops.mul(-0.5, ops.sum(ops.mul(white_vec, white_vec), -1)), batch)
    if rank > Gaussian.compression_threshold * dim:
        batch = dict(gaussian_layout(ikey)[0])
        white_vec, prec_sqrt, shift = gm.compress(white_vec, prec_sqrt)
        return gaussian_sum(Gaussian.make(white_vec, prec_sqrt, ikey=ikey),
                            Tensor.make(shift, batch))
    return None


def _result(white_vec, prec_sqrt, ikey: tuple) -> Funsor:
    """A Gaussian of arrays of the full batch shape, evaluated as its constructor would be."""
    result = gaussian_from_arrays(white_vec, prec_sqrt, ikey)
    return Gaussian.make(white_vec, prec_sqrt, ikey=ikey) if result is None else result


def add_gaussians(gaussians) -> Funsor:
    """The sum of Gaussians: real inputs aligned by name, information (ranks) concatenated.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> add_gaussians([g, g]).precision
        array([[2.]])
    """
    first = gaussians[0]
    if len(gaussians) == 1:
        return first
    host = host_copies(*(a for g in gaussians for a in (g.white_vec, g.prec_sqrt)))
    pairs = ([(g.white_vec, g.prec_sqrt) for g in gaussians] if host is None
             else list(zip(host[::2], host[1::2])))  # small eager arrays: atoms.gaussian.host
    if all(g._ikey == first._ikey for g in gaussians):
        # Same inputs in the same order, hence the same (expanded) batch shape: no alignment.
        white_vec = ops.cat([w for w, _ in pairs], -1)
        prec_sqrt = ops.cat([s for _, s in pairs], -1)
        ikey = first._ikey
    else:
        inputs = merge_gaussian_inputs(*gaussians)
        white_vec, prec_sqrt = align_gaussian(inputs, first, arrays=pairs[0])
        for g, pair in zip(gaussians[1:], pairs[1:]):
            w, s = align_gaussian(inputs, g, arrays=pair)
            white_vec, prec_sqrt = gm.concat(white_vec, prec_sqrt, w, s)
        ikey = tuple(inputs.items())
    if host is not None:
        white_vec, prec_sqrt = to_backend(widest(*(g.white_vec for g in gaussians)),
                                          (white_vec, prec_sqrt))
    return _result(white_vec, prec_sqrt, ikey)


def gaussian_sum(*parts) -> Funsor | None:
    """The sum of Gaussians, Tensors, Numbers and sums of them (None parts are skipped), in
    the normal form ``Contraction(None, add, {}, (g, t))``: at most one Gaussian and one
    dense term.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> type(gaussian_sum(g, None)).__name__
        'Gaussian'
    """
    gaussians, dense = [], []
    for part in parts:
        if part is not None:
            more_g, more_d = split_gaussian_sum(part)
            gaussians += more_g
            dense += more_d
    if len(gaussians) > 1:
        return gaussian_sum(add_gaussians(gaussians), *dense)
    t = dense_sum(dense)
    if not gaussians:
        return t
    if t is None:
        return gaussians[0]
    # g + t with one Gaussian and one dense term is already the normal form, and every exact
    # rule declines it; building it under reflect skips those declines (a Kalman step makes
    # several such sums).
    with reflect:
        return Contraction(None, ops.add, frozenset(), (gaussians[0], t))


def contract_gaussians(red_op, bin_op, reduced_vars, terms) -> Funsor | None:
    """Evaluate ``Contraction(red_op, bin_op, reduced_vars, terms)`` whose terms include
    Gaussians, for ``bin_op`` add (or None): the Gaussians are added into one, then the sum
    is reduced (``reduce_gaussian_sum``). None when nothing changes.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> contract_gaussians(None, ops.add, frozenset(), (g, g)).precision
        array([[2.]])
    """
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    if not gaussians or (bin_op is not ops.add and bin_op is not None):
        return None
    dense = [t for t in terms if isinstance(t, (Tensor, Number))]
    others = [t for t in terms if not isinstance(t, (Gaussian, Tensor, Number))]
    if others:
        if len(gaussians) < 2:
            return None
        return Contraction(red_op, bin_op, reduced_vars,
                           tuple(others) + (add_gaussians(gaussians),) + tuple(dense))
    if red_op is None:
        if len(gaussians) < 2 and len(dense) < 2:
            return None
        return gaussian_sum(add_gaussians(gaussians), *dense)
    return reduce_gaussian_sum(red_op, gaussians, dense, reduced_vars)


# ---------------------------------------------------------------------------------------------
# Reductions: logaddexp over reals marginalizes, add over Bint plates multiplies densities.
def reduce_gaussian_sum(op, gaussians, dense, reduced_vars) -> Funsor | None:
    """Reduce ``sum(gaussians) + sum(dense)`` by ``op`` over ``reduced_vars``, or None.

    ``logaddexp`` over real inputs marginalizes them (a Gaussian plus a Tensor normalizer);
    over Bint inputs of the dense part only it reduces that part (a mixture over a Gaussian's
    own Bint input stays lazy). ``add`` over Bint inputs is a plate: a product of densities.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> round(float(reduce_gaussian_sum(ops.logaddexp, [g], [], frozenset("x")).data), 6)
        0.918939
    """
    g = add_gaussians(gaussians) if gaussians else None
    if g is not None and not isinstance(g, Gaussian):
        more_g, more_d = split_gaussian_sum(g)
        g, dense = (more_g[0] if more_g else None), dense + more_d
    t = dense_sum(dense)
    g_inputs = g.inputs if g is not None else {}
    real = frozenset(v for v in reduced_vars if v in g_inputs and g_inputs[v].dtype == "real")
    bint = reduced_vars - real
    sizes = {v: _size_of(v, gaussians, dense) for v in bint}
    if op is ops.logaddexp:
        changed = len(gaussians) > 1 or len(dense) > 1
        if real:
            parts_g, parts_d = split_gaussian_sum(marginalize_gaussian(g, real))
            g = parts_g[0] if parts_g else None
            t, changed = dense_sum(parts_d + ([t] if t is not None else [])), True
            if g is None and not bint and len(gaussians) == len(dense) == 1:  # t = L_g + t_f
                record_log_mass(t, gaussians[0], dense[0], parts_d[0])  # see normalized.py
        local = frozenset(v for v in bint if g is None or v not in g.inputs)
        if local and t is not None:
            t, changed = _reduce_dense(op, t, local, sizes), True
        elif local:
            t, changed = Number(sum(math.log(sizes[v]) for v in local)), True
        if not changed:
            return None
        rest = bint - local
        result = gaussian_sum(g, t)
        return result.reduce(op, rest) if rest else result
    if op is ops.max:
        return _max_gaussian_sum(g, t, real, bint, sizes, len(gaussians) > 1 or len(dense) > 1)
    if op is ops.add and not real:  # a sum over a real variable is no integral
        parts = [plate_gaussian(g, bint, sizes)] if g is not None else []
        if t is not None:
            parts.append(_reduce_dense(op, t, bint, sizes))
        return dense_sum(parts)
    return None


def _max_gaussian_sum(g, t, real, bint, sizes, changed) -> Funsor | None:
    # max over reals maximizes the quadratic; over Bint names of the dense part only it
    # maximizes that part; a max over a Gaussian's own Bint input stays lazy (no Gaussian).
    if real:
        parts_g, parts_d = split_gaussian_sum(maximize_gaussian(g, real))
        g = parts_g[0] if parts_g else None
        t, changed = dense_sum(parts_d + ([t] if t is not None else [])), True
    local = frozenset(v for v in bint if g is None or v not in g.inputs)
    if local and t is not None:
        t, changed = _reduce_dense(ops.max, t, local, sizes), True
    elif local:
        t, changed = Number(0.0), True
    if not changed:
        return None
    rest = bint - local
    result = gaussian_sum(g, t)
    return result.reduce(ops.max, rest) if rest else result


def maximize_gaussian(g: Gaussian, names) -> Funsor:
    """``max_{x_names} g``: the remaining Gaussian plus a Tensor of the maxima. It is the
    marginal less the Gaussian integral's volume, ``log ∫ exp g = max g + 0.5 d log 2π -
    log |R|`` with ``R' R`` the precision block of the maximized names (one QR of their rows
    of the square root). Raises ``ValueError`` as ``marginalize_gaussian`` does when the
    maximum is not attained at a unique point.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2) * 4, inputs={"x": fc.Reals[2]})
        >>> float(maximize_gaussian(g, {"x"}).data)  # a Gaussian is 0 at its mean
        0.0
    """
    batch_items, offsets, _ = gaussian_layout(g._ikey)
    index = [i for name, domain in g._ikey if name in names
             for i in range(offsets[name], offsets[name] + domain.num_elements)]
    marginal = marginalize_gaussian(g, names)
    r_upper = ops.qr_r(ops.transpose(gm.rows(g.prec_sqrt, index), -1, -2))
    log_det = ops.sum(ops.log(ops.abs(ops.diagonal(r_upper))), -1)
    volume = ops.sub(0.5 * len(index) * math.log(2 * math.pi), log_det)
    return marginal - Tensor.make(volume, dict(batch_items), ikey=batch_items)


def _size_of(name, gaussians, dense) -> int:
    for t in list(gaussians) + list(dense):
        if name in t.inputs:
            return t.inputs[name].size
    raise AssertionError(name)


def _reduce_dense(op, t, names, sizes):
    """Reduce a Tensor or Number over Bint names, counting names it lacks (``n * t`` for
    add, ``t + log n`` for logaddexp)."""
    own = frozenset(n for n in names if n in t.inputs)
    result = t.reduce(op, own) if own else t
    missing = [n for n in names if n not in t.inputs]
    if missing:
        count = math.prod(sizes[n] for n in missing)
        result = result * float(count) if op is ops.add else result + math.log(count)
    return result


def plate_gaussian(g: Gaussian, names, sizes: dict) -> Funsor:
    """``sum_i g_i(x)`` over the Bint ``names``: each plate dim of ``g`` moves into the rank
    (the densities multiply); a plate ``g`` lacks scales it by ``sizes[name]``.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> plate_gaussian(g, {"i"}, {"i": 3}).precision
        array([[3.]])
    """
    batch = g.batch_inputs
    own = [n for n in batch if n in names]
    white_vec, prec_sqrt = g.white_vec, g.prec_sqrt
    if own:
        keep = [n for n in batch if n not in names]
        kb = len(keep)
        perm = [list(batch).index(n) for n in keep + own]
        white_vec = ops.permute(white_vec, tuple(perm[:kb]) + (len(batch),) + tuple(perm[kb:]))
        prec_sqrt = ops.permute(prec_sqrt, tuple(perm[:kb]) + (len(batch), len(batch) + 1)
                                + tuple(perm[kb:]))
        n = math.prod(batch[name].size for name in own)
        kshape = tuple(batch[k].size for k in keep)
        white_vec = ops.reshape(white_vec, kshape + (g.rank * n,))
        prec_sqrt = ops.reshape(prec_sqrt, kshape + (g.dim, g.rank * n))
        batch = {k: batch[k] for k in keep}
    missing = [n for n in names if n not in g.inputs]
    if missing:
        # n copies of the same density: ||x S - w||^2 n = ||x (√n S) - √n w||^2.
        scale = math.sqrt(math.prod(sizes[n] for n in missing))
        white_vec, prec_sqrt = ops.mul(white_vec, scale), ops.mul(prec_sqrt, scale)
    inputs = {**batch, **g.real_inputs}
    return Gaussian(white_vec, prec_sqrt, tuple(inputs.items()))


def marginalize_gaussian(g: Gaussian, names) -> Funsor:
    """``log ∫ exp g dx_names``: the remaining Gaussian plus a Tensor normalizer (or just the
    Tensor when every real input is integrated). Raises ``ValueError`` naming the variable
    when ``g`` has too little information about it (see ``CHECK_RANK``).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(2), covariance=np.eye(2), inputs={"x": fc.Reals[2]})
        >>> round(float(marginalize_gaussian(g, {"x"}).data), 6)  # log(2 pi)
        1.837877
    """
    batch_items, offsets, dim = gaussian_layout(g._ikey)
    index = []
    for name, domain in g._ikey:
        if name in names:
            index.extend(range(offsets[name], offsets[name] + domain.num_elements))

    def labels():
        return [name if d.num_elements == 1 else f"{name}[{k}]"
                for name, d in g._ikey if name in names for k in range(d.num_elements)]

    # A triangular factor integrated whole: its determinant is its diagonal's, no QR.
    triangular = getattr(g, "_triangular", None) == "upper" and len(index) == dim
    white_vec, prec_sqrt, norm = gm.marginalize(g.white_vec, g.prec_sqrt, index,
                                                check=CHECK_RANK[0], names=labels,
                                                triangular=triangular)
    norm = Tensor.make(norm, dict(batch_items), ikey=batch_items)
    if len(index) == dim:
        return norm
    rest = tuple((k, d) for k, d in g._ikey if k not in names)
    return gaussian_sum(Gaussian.make(white_vec, prec_sqrt, ikey=rest), norm)


# ---------------------------------------------------------------------------------------------
# Scaling: c * g for a constant c >= 0 is a Gaussian, c ||x S - w||^2 = ||x (√c S) - √c w||^2.
def scale_gaussian_sum(base, scale) -> Funsor | None:
    """``scale * base`` for a Gaussian (or Gaussian sum) ``base`` and a real scalar Tensor or
    Number ``scale``; None unless the scale is known to be nonnegative.

    A negative scale makes the density convex, which no Gaussian is. The sign must be known
    without reading traced values: a Tensor whose data is traced (``jax.jit``) is declined,
    since its sign is decided only when the compiled function runs.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> scale_gaussian_sum(g, fc.Number(4.0)).precision
        array([[4.]])
        >>> scale_gaussian_sum(g, fc.Number(-1.0)) is None
        True
    """
    if scale.dtype != "real" or scale.output.shape or not _nonnegative(scale):
        return None
    gaussians, dense = split_gaussian_sum(base)
    return dense_sum([_scale(g, scale) for g in gaussians] + [t * scale for t in dense])


def _nonnegative(scale) -> bool:
    if isinstance(scale, Number):
        return float(scale.data) >= 0
    try:
        host = ops.to_numpy(scale.data)
    except Exception:  # a traced value (jax.jit): its sign is unknown until run time
        return False
    return bool((host >= 0).all())


def _scale(g: Gaussian, scale) -> Gaussian:
    if isinstance(scale, Number):
        root = math.sqrt(float(scale.data))
        return Gaussian.make(ops.mul(g.white_vec, root), ops.mul(g.prec_sqrt, root), ikey=g._ikey)
    inputs = merge_gaussian_inputs(g, scale)
    batch = gaussian_batch_inputs(inputs)
    white_vec, prec_sqrt = align_gaussian(inputs, g, expand=True)
    root = align_tensor(batch, Tensor.make(ops.sqrt(scale.data), scale.inputs), expand=True)
    return Gaussian.make(ops.mul(white_vec, ops.getitem(root, (Ellipsis, None))),
                         ops.mul(prec_sqrt, ops.getitem(root, (Ellipsis, None, None))), inputs)


# ---------------------------------------------------------------------------------------------
# Substitution: Bint values index the batch, real constants condition, Variables rename,
# affine functions of other real inputs change variables.
def subs_gaussian_batch(g: Gaussian, subs: tuple) -> Gaussian | None:
    """Substitute into the Bint inputs of ``g`` (as into a Tensor's), or None when a value is
    not a Tensor, Number, Variable or Slice (or the result stays lazy).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros((2, 1)), covariance=np.ones((2, 1, 1)),
        ...                 inputs={"i": fc.Bint[2], "x": fc.Real})
        >>> subs_gaussian_batch(g, (("i", fc.Number(1, 2)),)).inputs
        {'x': Real}
    """
    if not all(isinstance(v, (Tensor, Number, Variable)) or type(v).__name__ == "Slice"
               for _, v in subs):
        return None
    batch = g.batch_inputs
    w = Tensor.make(g.white_vec, batch)(**dict(subs))
    s = Tensor.make(g.prec_sqrt, batch)(**dict(subs))
    if not (isinstance(w, Tensor) and isinstance(s, Tensor)):
        return None
    new_batch = dict(w.inputs)
    prec_sqrt = align_tensor(new_batch, s) if list(s.inputs) != list(new_batch) else s.data
    inputs = {**new_batch, **g.real_inputs}
    return Gaussian(w.data, prec_sqrt, tuple(inputs.items()))


def rename_gaussian(g: Gaussian, mapping: dict) -> Gaussian | None:
    """Rename inputs (real or Bint) by ``mapping`` (old -> new name), or None when two names would
    merge (a diagonal substitution, which is an affine change of variables instead).

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> rename_gaussian(g, {"x": "y"}).inputs
        {'y': Real}
    """
    others = set(g.inputs) - set(mapping)
    if len(set(mapping.values())) != len(mapping) or others & set(mapping.values()):
        return None
    inputs = tuple((mapping.get(k, k), d) for k, d in g._ikey)
    return Gaussian.make(g.white_vec, g.prec_sqrt, ikey=inputs)


def _value_block(value, batch: dict, proto):
    """A real constant's array, flattened and aligned to ``batch`` (size-1 dims)."""
    if isinstance(value, Number):
        return ops.new_full(proto, (1,) * len(batch) + (1,), float(value.data))
    data = align_tensor(batch, value) if value.inputs else value.data
    nb = len(batch) if value.inputs else 0
    shape = tuple(data.shape[:nb]) + (value.output.num_elements,)
    data = ops.reshape(data, shape)
    if nb < len(batch):
        data = ops.reshape(data, (1,) * (len(batch) - nb) + shape)
    return data


def condition_gaussian(g: Gaussian, values: dict) -> Funsor:
    """``g(**values)`` for real constants (Tensors or Numbers): the Gaussian over the other
    real inputs, or a Tensor when none is left.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> float(condition_gaussian(g, {"x": fc.Number(2.0)}).data)
        -2.0
    """
    unbatched = evaluate_unbatched(g, values)
    if unbatched is not None:
        return unbatched
    inputs = merge_gaussian_inputs(g, *values.values())
    batch = gaussian_batch_inputs(inputs)
    white_vec, prec_sqrt = align_gaussian(inputs, g)
    offsets, _ = real_offsets(g.inputs)
    index, blocks = [], []
    for name, domain in g.inputs.items():
        if name in values:
            index.extend(range(offsets[name], offsets[name] + domain.num_elements))
            blocks.append(_value_block(values[name], batch, g.white_vec))
    if len(blocks) > 1:
        shape = broadcast_shape(*(tuple(b.shape[:-1]) for b in blocks))
        blocks = [ops.expand(b, shape + tuple(b.shape[-1:])) for b in blocks]
    value_b = blocks[0] if len(blocks) == 1 else ops.cat(blocks, -1)
    full = tuple(d.size for d in batch.values())
    if len(index) == prec_sqrt.shape[-2]:  # every real input given: f(x) itself, a Tensor
        diff = ops.sub(white_vec, la.vm_values(value_b, prec_sqrt)[0])  # as in gm.condition
        data = ops.mul(-0.5, ops.sum(ops.mul(diff, diff), -1))
        if tuple(data.shape) != full:
            data = ops.expand(data, full)
        return Tensor.make(data, batch)
    white_vec, prec_sqrt, const = gm.condition(white_vec, prec_sqrt, index, value_b,
                                               with_constant=True)  # const: a value is inf
    rest = tuple((k, d) for k, d in inputs.items() if k not in values)
    if tuple(white_vec.shape[:-1]) != full:
        white_vec = ops.expand(white_vec, full + tuple(white_vec.shape[-1:]))
    if tuple(prec_sqrt.shape[:-2]) != full:
        prec_sqrt = ops.expand(prec_sqrt, full + tuple(prec_sqrt.shape[-2:]))
    result = _result(white_vec, prec_sqrt, rest)
    return result if const is None else result + Tensor.make(ops.expand(const, full), batch)


def affine_subs_gaussian(g: Gaussian, values: dict) -> Gaussian | None:
    """``g(**values)`` where each value is an affine function of real inputs (see
    ``funsor_core.analysis.affine``), or None when one is not affine.

    With ``x_old = z @ M + c`` for the vector ``z`` of new real inputs,
    ``||x_old S - w||^2 = ||z (M S) - (w - c S)||^2``: ``prec_sqrt' = M S``,
    ``white_vec' = w - c S``.

    Example:
        >>> g = fc.Gaussian(mean=np.zeros(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> y = fc.Variable("y", fc.Real)
        >>> affine_subs_gaussian(g, {"x": 2.0 * y + 1.0}).precision
        array([[4.]])
    """
    affine = {}
    for name, value in values.items():
        affine[name] = extract_affine_flat(value, proto=g.white_vec)
        if affine[name] is None:
            return None
    inputs = dict(g.batch_inputs)
    inputs.update((k, d) for k, d in g.inputs.items() if k not in values)
    for value in values.values():
        inputs = merge_inputs(inputs, value.inputs, "substitute")
    inputs = {**gaussian_batch_inputs(inputs),
              **{k: d for k, d in inputs.items() if d.dtype == "real"}}
    batch = gaussian_batch_inputs(inputs)
    full = tuple(d.size for d in batch.values())
    proto = g.white_vec
    new_real = {k: d for k, d in inputs.items() if d.dtype == "real"}

    def expand(t: Tensor, event: tuple):
        data = align_tensor(batch, t) if t.inputs else ops.reshape(
            t.data, (1,) * len(full) + tuple(t.data.shape))
        return ops.expand(ops.reshape(data, tuple(data.shape[: len(full)]) + event), full + event)

    columns, consts = [], []
    for name, domain in g.real_inputs.items():
        n = domain.num_elements
        rows = []
        for new_name, new_domain in new_real.items():
            m = new_domain.num_elements
            block = affine[name][1].get(new_name) if name in values else None
            if block is not None:
                rows.append(expand(block, (m, n)))
            elif name not in values and new_name == name:
                rows.append(ops.expand(ops.new_eye(proto, n), full + (n, n)))
            else:
                rows.append(ops.new_zeros(proto, full + (m, n)))
        columns.append(ops.cat(rows, -2) if rows else ops.new_zeros(proto, full + (0, n)))
        consts.append(expand(affine[name][0], (n,)) if name in values
                      else ops.new_zeros(proto, full + (n,)))
    m_mat = ops.cat(columns, -1)
    c = ops.cat(consts, -1)
    white_vec, prec_sqrt = align_gaussian({**batch, **g.real_inputs}, g, expand=True)
    new_prec_sqrt = ops.matmul(m_mat, prec_sqrt)
    c_s = ops.getitem(ops.matmul(ops.getitem(c, (Ellipsis, None, slice(None))), prec_sqrt),
                      (Ellipsis, 0, slice(None)))
    return Gaussian(ops.sub(white_vec, c_s), new_prec_sqrt, tuple(inputs.items()))
