"""Exact rules for the Gaussian atom: sums, reductions (marginalize, plates), substitution
(conditioning, renaming, batch indexing, affine changes of variables), Contractions and
Integrates with Gaussian terms, and reparameterized sampling.

A Gaussian plus a Tensor is kept as a sum (``Contraction(None, add, {}, (g, t))`` once
``normalize`` has seen it), as in funsor 0.4.8; reducing it is evaluated here.
"""

from __future__ import annotations

import math

from funsor_core import gaussian_math as gm
from funsor_core import ops
from funsor_core.affine import extract_affine
from funsor_core.backend import backend_module, backend_name_of
from funsor_core.contraction import Contraction
from funsor_core.gaussian import (
    COMPRESSION_THRESHOLD,
    Gaussian,
    align_gaussian,
    gaussian_batch_inputs,
    gaussian_layout,
    merge_gaussian_inputs,
    real_offsets,
)
from funsor_core.interpreter import Tuple, build
from funsor_core.ops import BinaryOp, Op
from funsor_core.tensor import Tensor, align_tensor
from funsor_core.terms import Binary, Funsor, Number, Reduce, Subs, Variable, merge_inputs
from interpretations.exact import exact

__all__ = ["sample_gaussian", "CHECK_RANK"]

# Check the rank of a block before marginalizing it (a QR and one host read per call), so
# that too little information raises a ValueError naming the variable instead of giving inf.
CHECK_RANK = [True]
MulOp = type(ops.mul)


def _dense_sum(terms):
    result = None
    for t in terms:
        result = t if result is None else result + t
    return result


def _add_gaussians(gaussians) -> Funsor:
    """The sum of several Gaussians: align real inputs by name, embed, concatenate ranks."""
    first = gaussians[0]
    if len(gaussians) == 1:
        return first
    if all(g._ikey == first._ikey for g in gaussians):
        # Same inputs in the same order, hence the same (expanded) batch shape: no alignment.
        white_vec = ops.cat([g.white_vec for g in gaussians], -1)
        prec_sqrt = ops.cat([g.prec_sqrt for g in gaussians], -1)
        return _gaussian_result(white_vec, prec_sqrt, first._ikey)
    inputs = merge_gaussian_inputs(*gaussians)
    white_vec, prec_sqrt = align_gaussian(inputs, first)
    for g in gaussians[1:]:
        w, s = align_gaussian(inputs, g)
        white_vec, prec_sqrt = gm.concat(white_vec, prec_sqrt, w, s)
    return _gaussian_result(white_vec, prec_sqrt, tuple(inputs.items()))


def _gaussian_result(white_vec, prec_sqrt, ikey: tuple) -> Funsor:
    """A Gaussian from arrays of the full batch shape, as the exact constructor would build."""
    result = exact_gaussian(white_vec, prec_sqrt, ikey)
    return Gaussian.make(white_vec, prec_sqrt, ikey=ikey) if result is None else result


def _sum(*parts) -> Funsor:
    """The sum of Gaussians, Tensors, Numbers and sums of them (None parts are skipped), built
    directly in the normal form ``normalize`` gives ``g + t``: no rule would rewrite it."""
    gaussians, dense = [], []
    for part in parts:
        if part is not None:
            more_g, more_d = _split_sum(part)
            gaussians += more_g
            dense += more_d
    if len(gaussians) > 1:
        return _sum(_add_gaussians(gaussians), *dense)
    t = _dense_sum(dense)
    if not gaussians:
        return t
    if t is None:
        return gaussians[0]
    return build(Contraction, Contraction._prepare(None, ops.add, frozenset(), (gaussians[0], t)))


def _split_sum(result):
    """``(gaussians, dense)`` lists of a Gaussian, Tensor, Number or a Contraction sum of them."""
    terms = result.terms if (isinstance(result, Contraction) and result.red_op is None
                             and result.bin_op is ops.add) else (result,)
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    dense = [t for t in terms if isinstance(t, (Tensor, Number))]
    assert len(gaussians) + len(dense) == len(terms), result
    return gaussians, dense


# ---------------------------------------------------------------------------------------------
# Construction: a Gaussian of no real input is the Tensor of its constant; a wide one is
# compressed, splitting the constant off as a Tensor (the constructor returns g + t).
@exact.register(Gaussian, object, object, tuple)
def exact_gaussian(white_vec, prec_sqrt, inputs):
    dim, rank = prec_sqrt.shape[-2:]
    if dim == 0:
        batch = dict(gaussian_layout(inputs)[0])
        return Tensor.make(ops.mul(-0.5, ops.sum(ops.mul(white_vec, white_vec), -1)), batch)
    if rank > COMPRESSION_THRESHOLD * dim:
        batch = dict(gaussian_layout(inputs)[0])
        white_vec, prec_sqrt, shift = gm.compress(white_vec, prec_sqrt)
        return _sum(Gaussian.make(white_vec, prec_sqrt, ikey=inputs), Tensor.make(shift, batch))
    return None


# ---------------------------------------------------------------------------------------------
# g1 + g2 is one Gaussian over the union of their inputs (ranks concatenate).
@exact.register(Binary, BinaryOp, Gaussian, Gaussian)
def exact_binary_gaussian_gaussian(op, lhs, rhs):
    if op is not ops.add:
        return None
    return _add_gaussians([lhs, rhs])


# g - t = g + (-t), a (normalized) sum; g / c = g * (1 / c), see _scale_hook below.
@exact.register(Binary, BinaryOp, Gaussian, (Tensor, Number))
def exact_binary_gaussian_tensor(op, lhs, rhs):
    if op is ops.sub:
        return lhs + (-rhs)
    if op is ops.truediv:
        return _scale_sum(lhs, ops.truediv(1.0, rhs))
    return None


# The same for a sum g + t of Gaussians and Tensors: (g + t) - c = g + t + (-c), etc.
@exact.register(Binary, BinaryOp, Contraction, (Tensor, Number))
def exact_binary_gaussian_sum_tensor(op, lhs, rhs):
    if not (lhs.red_op is None and lhs.bin_op is ops.add
            and any(isinstance(t, Gaussian) for t in lhs.terms)
            and all(isinstance(t, (Gaussian, Tensor, Number)) for t in lhs.terms)):
        return None
    return exact_binary_gaussian_tensor(op, lhs, rhs)


# ---------------------------------------------------------------------------------------------
# Reduce(logaddexp, g, reals) = marginal (a Gaussian plus its Tensor normalizer);
# Reduce(add, g, plate) = product over the plate (ranks concatenate);
# Reduce(logaddexp, g, bints) is a mixture and stays lazy. Real variables go first.
@exact.register(Reduce, Op, Gaussian, frozenset)
def exact_reduce_gaussian(op, arg, reduced_vars):
    return _reduce_sum(op, [arg], [], reduced_vars)


def _reduce_sum(op, gaussians, dense, reduced_vars):
    """Reduce the sum of ``gaussians`` and ``dense`` terms; None when nothing can be done."""
    g = _add_gaussians(gaussians) if gaussians else None
    if g is not None and not isinstance(g, Gaussian):
        more_g, more_d = _split_sum(g)
        g, dense = (more_g[0] if more_g else None), dense + more_d
    t = _dense_sum(dense)
    g_inputs = g.inputs if g is not None else {}
    real = frozenset(v for v in reduced_vars if v in g_inputs and g_inputs[v].dtype == "real")
    bint = reduced_vars - real
    if op is ops.logaddexp:
        changed = len(gaussians) > 1 or len(dense) > 1
        if real:
            g, t, changed = _marginalize(g, real), t, True
            parts_g, parts_d = _split_sum(g)
            g = parts_g[0] if parts_g else None
            t = _dense_sum(parts_d + ([t] if t is not None else []))
        local = frozenset(v for v in bint if g is None or v not in g.inputs)
        if local and t is not None:
            t = _reduce_dense(op, t, local)
            changed = True
        elif local:
            t, changed = Number(sum(math.log(_size_of(v, gaussians, dense)) for v in local)), True
        rest = bint - local
        if not changed:
            return None
        result = _sum(g, t)
        return result.reduce(op, rest) if rest else result
    if op is ops.add:
        if real:
            return None  # a sum over a real variable is no integral
        sizes = {v: _size_of(v, gaussians, dense) for v in bint}
        parts = []
        if g is not None:
            parts.append(_plate(g, bint, sizes))
        if t is not None:
            parts.append(_reduce_dense(op, t, bint, sizes))
        return _dense_sum(parts)
    return None


def _size_of(name, gaussians, dense) -> int:
    for t in list(gaussians) + list(dense):
        if name in t.inputs:
            return t.inputs[name].size
    raise AssertionError(name)


def _reduce_dense(op, t, names, sizes=None):
    """Reduce a Tensor or Number over Bint names, counting names it lacks (``n * t`` for
    add, ``t + log n`` for logaddexp)."""
    own = frozenset(n for n in names if n in t.inputs)
    result = t.reduce(op, own) if own else t
    missing = [n for n in names if n not in t.inputs]
    if missing:
        count = 1
        for n in missing:
            count *= sizes[n] if sizes else 1
        result = result * float(count) if op is ops.add else result + math.log(count)
    return result


def _plate(g: Gaussian, names, sizes) -> Funsor:
    """sum_i g_i(x) over Bint names: move each plate dim into the rank; scale for the rest."""
    batch = g.batch_inputs
    own = [n for n in batch if n in names]
    white_vec, prec_sqrt = g.white_vec, g.prec_sqrt
    if own:
        keep = [n for n in batch if n not in names]
        kb = len(keep)
        perm_w = [list(batch).index(n) for n in keep + own]
        white_vec = ops.permute(white_vec, tuple(perm_w[:kb]) + (len(batch),) + tuple(perm_w[kb:]))
        prec_sqrt = ops.permute(prec_sqrt, tuple(perm_w[:kb]) + (len(batch), len(batch) + 1)
                                + tuple(perm_w[kb:]))
        n = 1
        for name in own:
            n *= batch[name].size
        kshape = tuple(batch[k].size for k in keep)
        white_vec = ops.reshape(white_vec, kshape + (g.rank * n,))
        prec_sqrt = ops.reshape(prec_sqrt, kshape + (g.dim, g.rank * n))
        batch = {k: batch[k] for k in keep}
    missing = [n for n in names if n not in g.inputs]
    if missing:
        scale = math.sqrt(math.prod(sizes[n] for n in missing))
        white_vec, prec_sqrt = ops.mul(white_vec, scale), ops.mul(prec_sqrt, scale)
    inputs = {**batch, **g.real_inputs}
    return Gaussian(white_vec, prec_sqrt, tuple(inputs.items()))


def _marginalize(g: Gaussian, names) -> Funsor:
    """log ∫ exp g dx_names: the remaining Gaussian plus a Tensor normalizer (or a Tensor)."""
    batch_items, offsets, dim = gaussian_layout(g._ikey)
    index = []
    for name, domain in g._ikey:
        if name in names:
            index.extend(range(offsets[name], offsets[name] + domain.num_elements))

    def labels():
        return [name if d.num_elements == 1 else f"{name}[{k}]"
                for name, d in g._ikey if name in names for k in range(d.num_elements)]

    white_vec, prec_sqrt, norm = gm.marginalize(g.white_vec, g.prec_sqrt, index,
                                                check=CHECK_RANK[0], names=labels)
    norm = Tensor.make(norm, dict(batch_items), ikey=batch_items)
    if len(index) == dim:
        return norm
    rest = tuple((k, d) for k, d in g._ikey if k not in names)
    return _sum(Gaussian.make(white_vec, prec_sqrt, ikey=rest), norm)


# ---------------------------------------------------------------------------------------------
# Contractions with Gaussian terms (sums of Gaussians, Tensors and Numbers): combine the
# Gaussians, then reduce as above.
@exact.register(Contraction, object, object, frozenset, Tuple[(Gaussian, Tensor, Number), ...])
def exact_contraction_gaussians(red_op, bin_op, reduced_vars, terms):
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    if not gaussians or (bin_op is not ops.add and bin_op is not None):
        return None
    dense = [t for t in terms if not isinstance(t, Gaussian)]
    if red_op is None:
        if len(gaussians) < 2 and len(dense) < 2:
            return None
        return _sum(_add_gaussians(gaussians), *dense)
    return _reduce_sum(red_op, gaussians, dense, reduced_vars)


# Gaussians among other terms (Deltas, lazy terms): add the Gaussians together first.
@exact.register(Contraction, object, object, frozenset, Tuple[Funsor, ...])
def exact_contraction_gaussians_others(red_op, bin_op, reduced_vars, terms):
    gaussians = [t for t in terms if isinstance(t, Gaussian)]
    if len(gaussians) < 2 or bin_op is not ops.add:
        return None
    rest = tuple(t for t in terms if not isinstance(t, Gaussian))
    return Contraction(red_op, bin_op, reduced_vars, rest + (_add_gaussians(gaussians),))


# ---------------------------------------------------------------------------------------------
# c * g for a constant c >= 0 is a Gaussian: c ||x S - w||^2 = ||x (√c S) - √c w||^2. It
# distributes over a sum g + t. A negative c makes the density convex, which no Gaussian is:
# such products stay lazy.
@exact.register(Contraction, type(None), MulOp, frozenset,
               Tuple[(Gaussian, Contraction), (Tensor, Number)])
def exact_contraction_scale_gaussian(red_op, bin_op, reduced_vars, terms):
    if red_op is not None or bin_op is not ops.mul or len(terms) != 2:
        return None
    (scale,) = [t for t in terms if isinstance(t, (Tensor, Number))] or [None]
    (base,) = [t for t in terms if t is not scale] if scale is not None else [None]
    if base is None or not (isinstance(base, Gaussian) or (
            isinstance(base, Contraction) and base.red_op is None and base.bin_op is ops.add
            and all(isinstance(t, (Gaussian, Tensor, Number)) for t in base.terms))):
        return None
    return _scale_sum(base, scale)




def _scale_sum(base, scale):
    gaussians, dense = _split_sum(base)
    parts = [_scale_gaussian(g, scale) for g in gaussians]
    if any(p is None for p in parts):
        return None
    return _dense_sum(parts + [t * scale for t in dense])


def _scale_gaussian(g: Gaussian, scale) -> Gaussian | None:
    if scale.dtype != "real" or scale.output.shape:
        return None
    if isinstance(scale, Number):
        if not float(scale.data) >= 0:
            return None
        root = math.sqrt(float(scale.data))
        return Gaussian.make(ops.mul(g.white_vec, root), ops.mul(g.prec_sqrt, root), ikey=g._ikey)
    if not _nonnegative(scale.data):
        return None
    inputs = merge_gaussian_inputs(g, scale)
    batch = gaussian_batch_inputs(inputs)
    white_vec, prec_sqrt = align_gaussian(inputs, g, expand=True)
    root = align_tensor(batch, Tensor.make(ops.sqrt(scale.data), scale.inputs), expand=True)
    return Gaussian.make(ops.mul(white_vec, ops.getitem(root, (Ellipsis, None))),
                         ops.mul(prec_sqrt, ops.getitem(root, (Ellipsis, None, None))), inputs)


def _nonnegative(data) -> bool:
    try:
        return bool((ops.to_numpy(data) >= 0).all())
    except Exception:  # traced values under jax.jit cannot be read: trust the caller
        return True


# ---------------------------------------------------------------------------------------------
# Substitution: Bint values index the batch (as a Tensor would); real constants condition;
# Variables rename; affine functions of other real inputs change variables.
@exact.register(Subs, Gaussian, tuple)
def exact_subs_gaussian(arg, subs):
    bint = tuple((k, v) for k, v in subs if arg.inputs[k].dtype != "real")
    real = tuple((k, v) for k, v in subs if arg.inputs[k].dtype == "real")
    if bint:
        arg = _subs_batch(arg, bint)
        if arg is None:
            return None
        if not real:
            return arg
    if all(isinstance(v, (Tensor, Number)) for _, v in real):
        return _condition(arg, real)
    if all(type(v) is Variable for _, v in real):
        renamed = _rename(arg, real)
        if renamed is not None:
            return renamed
    return _affine_subs(arg, real)


def _subs_batch(g: Gaussian, subs):
    if not all(isinstance(v, (Tensor, Number, Variable)) or type(v).__name__ == "Slice"
               for _, v in subs):
        return None
    batch = g.batch_inputs
    w = Subs(Tensor.make(g.white_vec, batch), subs)
    s = Subs(Tensor.make(g.prec_sqrt, batch), subs)
    if not (isinstance(w, Tensor) and isinstance(s, Tensor)):
        return None
    new_batch = dict(w.inputs)
    prec_sqrt = align_tensor(new_batch, s) if list(s.inputs) != list(new_batch) else s.data
    inputs = {**new_batch, **g.real_inputs}
    return Gaussian(w.data, prec_sqrt, tuple(inputs.items()))


def _rename(g: Gaussian, subs):
    mapping = {k: v.name for k, v in subs}
    others = set(g.inputs) - set(mapping)
    if len(set(mapping.values())) != len(mapping) or others & set(mapping.values()):
        return None  # a diagonal substitution: an affine change of variables
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


def _condition(g: Gaussian, subs) -> Funsor:
    values = dict(subs)
    inputs = merge_gaussian_inputs(g, *values.values())
    batch = gaussian_batch_inputs(inputs)
    white_vec, prec_sqrt = align_gaussian(inputs, g)
    offsets, _ = real_offsets(g.inputs)
    index, blocks = [], []
    for name, domain in g.inputs.items():
        if name in values:
            index.extend(range(offsets[name], offsets[name] + domain.num_elements))
            blocks.append(_value_block(values[name], batch, g.white_vec))
    shape = _common_batch([(b, 1) for b in blocks]) if len(blocks) > 1 else None
    if shape is not None:
        blocks = [ops.expand(b, shape + tuple(b.shape[-1:])) for b in blocks]
    value_b = blocks[0] if len(blocks) == 1 else ops.cat(blocks, -1)
    white_vec, prec_sqrt = gm.condition(white_vec, prec_sqrt, index, value_b)
    rest = tuple((k, d) for k, d in inputs.items() if k not in values)
    full = tuple(d.size for d in batch.values())
    if tuple(white_vec.shape[:-1]) != full:
        white_vec = ops.expand(white_vec, full + tuple(white_vec.shape[-1:]))
    if tuple(prec_sqrt.shape[:-2]) != full:
        prec_sqrt = ops.expand(prec_sqrt, full + tuple(prec_sqrt.shape[-2:]))
    return _gaussian_result(white_vec, prec_sqrt, rest)


def _common_batch(pairs):
    from funsor_core.domains import broadcast_shape

    return broadcast_shape(*(tuple(a.shape[: len(a.shape) - n]) for a, n in pairs))


def _affine_subs(g: Gaussian, subs):
    """x_old = z @ M + c for the new real vector z: prec_sqrt' = M @ S, white_vec' = w - c @ S."""
    values = dict(subs)
    affine = {}
    for name, value in subs:
        found = extract_affine(value)
        if found is None:
            return None
        affine[name] = found
    kept = {k: d for k, d in g.inputs.items() if k not in values}
    inputs = dict(g.batch_inputs)
    inputs.update(kept)
    for value in values.values():
        inputs = merge_inputs(inputs, value.inputs, "substitute")
    inputs = {**gaussian_batch_inputs(inputs),
              **{k: d for k, d in inputs.items() if d.dtype == "real"}}
    batch = gaussian_batch_inputs(inputs)
    full = tuple(d.size for d in batch.values())
    proto = g.white_vec
    new_offsets, new_dim = real_offsets(inputs)
    new_real = {k: d for k, d in inputs.items() if d.dtype == "real"}

    def expand(t: Tensor, event: tuple):
        data = align_tensor(batch, t) if t.inputs else ops.reshape(
            t.data, (1,) * len(full) + tuple(t.data.shape))
        return ops.expand(ops.reshape(data, tuple(data.shape[: len(full)]) + event), full + event)

    columns, consts = [], []
    for name, domain in g.inputs.items():
        if domain.dtype != "real":
            continue
        n = domain.num_elements
        rows = []
        for new_name, new_domain in new_real.items():
            m = new_domain.num_elements
            if name in values:
                const, coeffs = affine[name]
                block = coeffs.get(new_name)
                rows.append(expand(block, (m, n)) if block is not None
                            else ops.new_zeros(proto, full + (m, n)))
            elif new_name == name:
                rows.append(ops.expand(ops.new_eye(proto, n), full + (n, n)))
            else:
                rows.append(ops.new_zeros(proto, full + (m, n)))
        columns.append(ops.cat(rows, -2) if rows else ops.new_zeros(proto, full + (0, n)))
        if name in values:
            consts.append(expand(affine[name][0], (n,)))
        else:
            consts.append(ops.new_zeros(proto, full + (n,)))
    m_mat = ops.cat(columns, -1)
    c = ops.cat(consts, -1)
    white_vec, prec_sqrt = align_gaussian({**batch, **g.real_inputs}, g, expand=True)
    assert tuple(m_mat.shape[-2:]) == (new_dim, prec_sqrt.shape[-2])
    new_prec_sqrt = ops.matmul(m_mat, prec_sqrt)
    c_s = ops.getitem(ops.matmul(ops.getitem(c, (Ellipsis, None, slice(None))), prec_sqrt),
                      (Ellipsis, 0, slice(None)))
    new_white_vec = ops.sub(white_vec, c_s)
    return Gaussian(new_white_vec, new_prec_sqrt, tuple(inputs.items()))


# ---------------------------------------------------------------------------------------------
# Reparameterized sampling.
def sample_gaussian(g: Gaussian, sampled_vars, sample_inputs=None, rng_key=None) -> Funsor:
    """Draw reparameterized samples of real inputs ``sampled_vars`` of ``g``.

    Returns ``Delta(samples) + g(samples) - log q(samples) + log Z`` where ``q`` is the
    normalized marginal of the sampled variables and ``log Z`` the total log normalizer: a
    funsor whose ``logaddexp`` over the sampled names (and mean over ``sample_inputs``)
    estimates ``g``'s. When all real inputs are sampled that is ``Delta + log_normalizer``.

    Args:
        sampled_vars: a name or set of names of real inputs.
        sample_inputs: mapping of new Bint names to domains (independent draws).
        rng_key: an int seed (numpy, torch) or a jax PRNG key; None uses the global state.

    Example:
        >>> g = fc.Gaussian(mean=np.ones(1), covariance=np.eye(1), inputs={"x": fc.Real})
        >>> s = sample_gaussian(g, "x", {"n": fc.Bint[3]}, rng_key=0)
        >>> sorted(s.inputs)
        ['n', 'x']
    """
    from funsor_core.delta import Delta

    if isinstance(sampled_vars, str):
        sampled_vars = {sampled_vars}
    names = [k for k in g.inputs if k in set(sampled_vars) and g.inputs[k].dtype == "real"]
    if not names:
        return g
    sample_inputs = dict(sample_inputs or {})
    others = frozenset(k for k, d in g.real_inputs.items() if k not in names)
    marginal = g.reduce(ops.logaddexp, others) if others else g
    mg, md = _split_sum(marginal)
    q = mg[0]
    batch = {**sample_inputs, **q.batch_inputs}
    shape = tuple(d.size for d in batch.values()) + (q.dim,)
    noise = _standard_normal(q.white_vec, shape, rng_key)
    nb_s = len(sample_inputs)
    w = ops.reshape(q.white_vec, (1,) * nb_s + tuple(q.white_vec.shape))
    s = ops.reshape(q.prec_sqrt, (1,) * nb_s + tuple(q.prec_sqrt.shape))
    # Match the noise to the rank-(dim) system: pad a narrow prec_sqrt is impossible (not full
    # rank); gm.sample raises a clear error then.
    x = gm.sample(w, s, noise)
    offsets, _ = real_offsets(q.inputs)
    points = {}
    for name in names:
        domain = g.inputs[name]
        part = ops.getitem(x, (Ellipsis, slice(offsets[name], offsets[name] + domain.num_elements)))
        points[name] = Tensor.make(ops.reshape(part, tuple(part.shape[:-1]) + domain.shape), batch)
    delta = Delta(tuple((k, (v, Number(0.0))) for k, v in points.items()))
    log_z = g.log_normalizer
    if not others:
        return delta + log_z
    neg_log_q = log_z + (-marginal(**points))
    return delta + g(**points) + neg_log_q


def _standard_normal(proto, shape, rng_key):
    """Standard normal noise from the backend of ``proto``: an int ``rng_key`` seeds that
    backend's generator; a key of the backend's own kind (a jax PRNG key, a torch or numpy
    Generator) is used as given; None draws from the backend's global state."""
    name = backend_name_of(proto)
    module = backend_module(name)
    if rng_key is not None and not isinstance(rng_key, int) and backend_name_of(rng_key) != name:
        raise TypeError(f"rng_key is a {type(rng_key).__name__} ({backend_name_of(rng_key)}), "
                        f"but the Gaussian holds {name} arrays: pass an int seed or a {name} key")
    if isinstance(rng_key, int):
        rng_key = module.new_rng_key(rng_key)
    return ops.new_array(proto, module.randn(shape, rng_key))
