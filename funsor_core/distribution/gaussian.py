"""Normal and MultivariateNormal as Gaussian funsors: exact, when ``loc`` and ``value`` are
affine in real variables.

``Normal(loc, scale, value)`` is ``g(z = value - loc) + log_norm`` where ``g`` is the
Gaussian ``-0.5 ||z / scale||^2`` over a fresh real input ``z`` (white vector 0, square-root
precision ``1 / scale``) and ``log_norm = -log scale - log(2 pi) / 2`` a Tensor; substituting
the affine ``value - loc`` for ``z`` is the Gaussian's exact affine substitution. Likewise a
MultivariateNormal with square-root precision ``scale_tril^-T``. Batch output dims (a ``loc``
of output ``Reals[3]`` with a scalar ``scale``: three independent normals) make a block
diagonal precision over the flattened value. This is how a Kalman model is written from
distributions: each ``Normal(F @ x_prev, q, x_curr)`` becomes a Gaussian factor.

The rules in ``interpretations/exact/distribution.py`` decide when (affine arguments, a
Tensor scale); these functions only build the terms.

Example:
    >>> from funsor_core.distribution import Normal
    >>> x, y = fc.Variable("x", fc.Real), fc.Variable("y", fc.Real)
    >>> g = Normal(2.0 * x, 0.5, y)  # exact: a Gaussian over x, y plus a normalizer
    >>> type(g).__name__, sorted(g.inputs)
    ('Contraction', ['x', 'y'])
    >>> round(g(x=1.0, y=1.5).item(), 6)  # scipy.stats.norm(2, .5).logpdf(1.5)
    -0.72579
"""

from __future__ import annotations

import math

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.gaussian.host import host_copies, to_backend
from funsor_core.atoms.gaussian.parameters import REAL_DTYPES, widened
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.distribution.array_math import concrete, distinct_entries, with_arrays
from funsor_core.distribution.constraints import LOWER_CHOLESKY
from funsor_core.domains import Domain, Real
from funsor_core.engine.backend import backend_module
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import fresh_name

__all__ = ["normal_to_gaussian", "mvn_to_gaussian"]

LOG_2PI = math.log(2.0 * math.pi)


def _fresh(*terms: Funsor) -> str:
    avoid = set()
    for t in terms:
        avoid.update(t.inputs)
    return fresh_name("_z", avoid)


def _widened(term: Funsor) -> Funsor:
    # A Tensor of floats narrower than 32 bits as float32 (a Gaussian computes in float32 at
    # least, and its substitutions would round through the narrow dtype); other terms as
    # they are.
    if type(term) is Tensor and term.data.dtype not in REAL_DTYPES:
        data = widened(term.data)
        if data is not term.data:
            return Tensor(data, term.inputs, term.dtype)
    return term


def _batch(scale: Tensor, event: tuple):
    """``scale``'s data as ``batch + event`` (its inputs' sizes, then its output broadcast
    to ``event``), and the batch sizes."""
    sizes = tuple(d.size for d in scale.inputs.values())
    data = scale.data
    out = tuple(data.shape[len(sizes):])
    if out != tuple(event):
        data = ops.reshape(data, sizes + (1,) * (len(event) - len(out)) + out)
    if tuple(data.shape) != sizes + tuple(event):
        data = ops.expand(data, sizes + tuple(event))
    return data, sizes


def normal_to_gaussian(loc: Funsor, scale: Tensor | Number, value: Funsor) -> Funsor:
    """``Normal(loc, scale, value)`` as ``Gaussian + Tensor`` (see the module docstring).

    ``loc`` and ``value`` are affine real funsors (``value`` of the value's full domain),
    ``scale`` a Tensor whose output broadcasts to it, or a positive Number.

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> g = normal_to_gaussian(fc.Number(0.0), fc.Tensor(np.array(1.0)), x)
        >>> round(g(x=np.zeros(2)).item(), 6)  # two standard normal densities at 0
        -1.837877
    """
    loc, scale, value = _widened(loc), _widened(scale), _widened(value)
    shape = value.output.shape
    n = math.prod(shape)
    if type(scale) is float:  # (fast_normal's Python-number scale: no Number term made)
        direct = _constant_scale_gaussian(loc, scale, value)
        if direct is not None:
            return direct
        scale = Number(scale)
    if type(scale) is Number:
        direct = _constant_scale_gaussian(loc, float(scale.data), value)
        if direct is not None:
            return direct
        loc, scale, value = with_arrays((loc, scale, value))
    elif not scale.inputs and not scale.data.shape and host_copies(scale.data) is not None:
        # a number scale made a 0-d array beside an array argument, on a backend that would
        # compile each array call: as a number (host constants, atoms.gaussian.host)
        direct = _constant_scale_gaussian(loc, float(scale.data), value, like=scale.data)
        if direct is not None:
            return direct
    s, sizes = _batch(scale, shape)
    if not concrete(s):  # a traced nonpositive scale gives NaN, never a finite density
        s = ops.where(s > 0, s, ops.full_like(s, math.nan))
    if not sizes and not shape and type(value) is Variable and loc.output is Real and (
            type(loc) is Variable and loc.name != value.name
            or type(loc) in (Tensor, Number) and not loc.inputs):
        return _scalar_normal(loc, s, value)
    # -sum log s - n log(2 pi) / 2 (one scale: the same rounding, two array calls fewer), a
    # Tensor of arrays this rule computed: no checks needed.
    if shape:
        s = ops.reshape(s, sizes + (n,))
        log_norm = ops.sub(ops.neg(ops.sum(ops.log(s), -1)), 0.5 * n * LOG_2PI)
    else:
        # (-log s) - c is (-c) - log s bit for bit; an array minus a float is a C-level call in
        # torch, where a float minus an array goes through a Python wrapper (~5 us).
        log_norm = _per_distinct(lambda d: ops.neg(ops.log(d)) - 0.5 * LOG_2PI, s, 0)
        s = ops.reshape(s, sizes + (1,))
    log_norm = Tensor.make(log_norm, dict(scale.inputs), ikey=scale._ikey, output=Real)
    g = _difference_gaussian(loc, scale.inputs, s, value)
    if g is not None:
        return _plus_normalizer(g, log_norm)
    prec_sqrt = ops.diag_embed(1.0 / s)
    white_vec = ops.new_zeros(s, sizes + (n,))
    z = _fresh(loc, scale, value)
    g = Gaussian(white_vec, prec_sqrt, tuple(scale.inputs.items()) + ((z, Domain("real", shape)),))
    return g(**{z: value - loc}) + log_norm


def _per_distinct(fn, s, event_ndim: int):
    """``fn(s)`` for an elementwise ``fn``, computed once per distinct entry of ``s`` where
    it repeats in memory (a scale Pyro broadcast from one number over an HMM's T x K x plate
    batch: stride 0) and broadcast back, the same numbers; else ``fn(s)`` itself."""
    d = distinct_entries(s, event_ndim)
    return fn(s) if d is s else ops.expand(fn(d), tuple(s.shape))


def _scalar_normal(loc: Funsor, s, value: Variable) -> Funsor:
    """``Normal(loc, s, value)`` of one real coordinate, with a 0-d scale array ``s``, a
    Variable ``value`` and a Variable or input-free constant ``loc`` (the commonest Normal):
    the arrays of ``_difference_gaussian`` and the normalizer, in six array calls."""
    inv = ops.reciprocal(s)
    log_norm = Tensor.make(ops.neg(ops.log(s)) - 0.5 * LOG_2PI, {}, ikey=(), output=Real)
    prec_sqrt = ops.reshape(inv, (1, 1))
    if type(loc) is Variable:  # rows +1/s (value) and -1/s (loc), white vector 0
        g = Gaussian.make(ops.new_zeros(s, (1,)), ops.cat([prec_sqrt, ops.neg(prec_sqrt)], -2),
                          ikey=((value.name, Real), (loc.name, Real)))
        return _plus_normalizer(g, log_norm)
    c = loc.data if type(loc) is Tensor else float(loc.data)
    white_vec = ops.reshape(ops.mul(c, inv) if type(c) is not float else ops.mul(inv, c), (1,))
    g = Gaussian.make(white_vec, prec_sqrt, ikey=((value.name, Real),))
    object.__setattr__(g, "_triangular", "upper")  # diag(1 / s)
    return _plus_normalizer(g, log_norm)


def _plus_normalizer(g: Gaussian, log_norm: Tensor) -> Funsor:
    """``g + log_norm``, already the normal form ``Contraction(None, add, {}, (g, t))``, which
    every exact rule declines (as ``gaussian_sum`` builds it): the arguments are prepared
    here (the terms in canonical order; one backend, inputs agreeing by construction) and
    handed to reflect, which cons-hashes them."""
    terms = (g, log_norm) if _GAUSSIAN_FIRST else (log_norm, g)  # sort_terms' order
    # One block +-diag(1 / s) over one real input: log_norm = -sum log s - n log(2 pi) / 2 is
    # -log ∫ exp g over it (for every batch entry), so g + log_norm integrates to 1 by
    # construction, a fact the Gaussian expectation reads instead of computing the mass.
    if getattr(g, "_triangular", None) == "upper":
        object.__setattr__(g, "_normalizer", log_norm)
    return reflect.interpret(Contraction, (None, ops.add, frozenset(), terms))


# A Gaussian and a Tensor are ordered by their classes' sort ranks (``term_sort_key``).
_GAUSSIAN_FIRST = (Gaussian.sort_rank, "Gaussian") < (Tensor.sort_rank, "Tensor")


def _term_parts(t: Funsor, shape: tuple):
    # ``t`` as (real Variable name or None, constant or None), when it is a Variable of the
    # value's domain or holds no real input (a constant); None otherwise.
    if isinstance(t, Variable):
        return (t.name, None) if t.output.shape == shape else None
    if type(t) is Number:  # a Python number broadcasts over the value's shape
        return None, t
    if isinstance(t, Tensor) and t.output.shape == shape and all(
            d.dtype != "real" for d in t.inputs.values()):
        return None, t
    return None


def _difference_parts(loc: Funsor, value: Funsor, shape: tuple):
    """``[(value's name, constant), (loc's name, constant)]`` when the density is
    ``-0.5 ||(value - loc) / s||^2`` with Variables or constants on both sides and at least
    one real Variable; None otherwise (the general affine substitution)."""
    parts = [_term_parts(value, shape), _term_parts(loc, shape)]
    if None in parts or parts[0][0] == parts[1][0]:  # also two constants: no real input
        return None
    return parts


def _constant_scale_gaussian(loc: Funsor, sd: float, value: Funsor,
                             like=None) -> Funsor | None:
    """``Normal(loc, sd, value)`` for a Python-number ``sd`` (validated positive when the
    Normal was built) and ``loc``, ``value`` Variables or constants: the square-root
    precision and the normalizer depend on ``sd`` alone, so they are computed on the host, in
    the float dtype of the arrays they join (the array path's roundings: ``sd`` rounded to
    it, then ``1 / s``, ``log s``), and converted once (eager jax compiles nothing for numpy
    arrays); a Tensor constant costs one array call, ``-c / s``. None for other arguments.
    The same arrays as ``_difference_gaussian`` (``log s`` within an ulp: numpy's log).
    ``like``: the 0-d array ``sd`` was read from; with no array constant its dtype is kept,
    as the array path keeps it (a float32 scale under jax x64 gave float64 eagerly, float32
    under ``jax.jit``)."""
    shape = value.output.shape
    parts = _difference_parts(loc, value, shape)
    if parts is None:
        return None
    const = next((c for name, c in parts if name is None and type(c) is not Number), None)
    if const is None:
        as_real = backend_module().asarray
        proto = as_real(np.zeros(()), "real")
        if like is not None and ops.is_floating(like):
            proto = like
            as_real = lambda x, _: ops.new_array(like, x)  # noqa: E731
    elif ops.is_floating(const.data):
        proto = const.data
    else:
        return None
    ft = _HOST_FLOAT.get(proto.dtype.itemsize)
    if ft is None:
        return None
    n = math.prod(shape)
    inv = ft(1.0) / ft(sd)
    blocks, reals, white, factor = [], [], ft(0.0), None
    for (name, c), sign in zip(parts, (1.0, -1.0)):
        if name is not None:
            blocks.append(sign * inv)
            reals.append((name, value.output))
        elif type(c) is Number:
            white = -sign * (ft(c.data) * inv)  # -c / s, c = sign * const
        else:
            factor = float(-sign * inv)  # exact in ft: the array's dtype keeps it
    if n == 1:
        prec_sqrt = np.array([[b] for b in blocks], dtype=ft)
        log_norm = np.array(-0.5 * LOG_2PI - np.log(ft(sd)), dtype=ft)
    else:
        prec_sqrt = np.concatenate([np.eye(n, dtype=ft) * b for b in blocks], 0)
        log_norm = np.array(-np.sum(np.full(n, np.log(ft(sd)), dtype=ft)) - 0.5 * n * LOG_2PI,
                            dtype=ft)
    if const is None:
        batch = ()
        white_vec, prec_sqrt = as_real(np.full(n, white, dtype=ft), "real"), as_real(prec_sqrt,
                                                                                     "real")
        log_norm = as_real(log_norm, "real")
    else:
        batch = const._ikey
        full = tuple(d.size for _, d in batch)
        data = const.data  # batch + shape, as the white vector's batch + (n,)
        host = host_copies(data)
        if host is not None:
            data = host[0]
        if tuple(data.shape) != full + (n,):
            data = ops.reshape(data, full + (n,))
        white_vec = ops.mul(data, factor)
        if host is not None:
            white_vec = to_backend(proto, (white_vec,))[0]
        prec_sqrt = ops.new_array(proto, np.array(  # a writable copy (of any shape), for torch
            np.broadcast_to(prec_sqrt, full + prec_sqrt.shape)))
        log_norm = ops.new_array(proto, log_norm)
    g = Gaussian.make(white_vec, prec_sqrt, ikey=tuple(batch) + tuple(reals))
    if len(blocks) == 1:  # +-diag(1 / s): square and (upper) triangular
        object.__setattr__(g, "_triangular", "upper")
    return _plus_normalizer(g, Tensor.make(log_norm, {}, ikey=()))


_HOST_FLOAT = {8: np.float64, 4: np.float32}  # itemsize -> the host's float of that size


def _difference_gaussian(loc: Funsor, batch: dict, s, value: Funsor) -> Gaussian | None:
    """The Gaussian ``-0.5 ||(value - loc) / s||^2`` built directly, when ``value`` and
    ``loc`` are real Variables of the value's domain or constants (the common
    ``Normal(x_prev, sd, x_curr)``, ``Normal(x, sd, y_obs)``); None otherwise, for the
    general affine substitution. The same arrays as that substitution: square-root precision
    ``+-diag(1 / s)`` per variable (value +, loc -), white vector ``-c / s`` with ``c`` the
    constant of ``value - loc``; inputs in the substitution's order (batch, then reals)."""
    shape = value.output.shape
    parts = _difference_parts(loc, value, shape)
    if parts is None:
        return None
    inputs = dict(batch)
    for _, const in parts:
        if const is not None:
            inputs.update((k, d) for k, d in const.inputs.items() if k not in inputs)
    full = tuple(d.size for d in inputs.values())
    n = math.prod(shape)
    inv = _per_distinct(ops.reciprocal, s, 1)  # (torch's float / array: a slow wrapper)
    if len(inputs) > len(batch) or tuple(s.shape[:-1]) != full:
        inv = ops.expand(ops.reshape(inv, tuple(s.shape[:-1]) + (1,) * (len(inputs) - len(
            batch)) + (n,)), full + (n,))
    blocks, reals, white = [], {}, None
    for (name, const), sign in zip(parts, (1.0, -1.0)):
        if name is not None:
            block = inv if sign > 0 else ops.neg(inv)
            # a 1x1 diagonal is a reshape (eager jax compiles each op per shape: 1 not 5)
            blocks.append(ops.reshape(block, full + (1, 1)) if n == 1 else ops.diag_embed(block))
            reals[name] = value.output  # Domain("real", shape), interned
            continue
        if const.inputs:
            c = align_tensor(inputs, const)
            c = ops.reshape(c, tuple(c.shape[:len(inputs)]) + (n,))
        elif isinstance(const, Number):  # a Python number: one array call, no conversion
            white = ops.mul(inv, -sign * float(const.data))  # -c / s, c = sign * const
            continue
        else:  # a 0-d constant broadcasts as it is
            c = const.data if not const.data.shape else ops.reshape(const.data, (n,))
        white = ops.mul(c, inv)  # -sign * c / s: a negation for a constant value, else as is
        if sign > 0:
            white = ops.neg(white)
    prec_sqrt = blocks[0] if len(blocks) == 1 else ops.cat(blocks, -2)
    if white is None:
        white_vec = ops.new_zeros(s, full + (n,))
    else:
        white_vec = white if tuple(white.shape) == full + (n,) else ops.expand(white, full + (n,))
    g = Gaussian.make(white_vec, prec_sqrt, ikey=tuple(inputs.items()) + tuple(reals.items()))
    if len(blocks) == 1:  # +-diag(1 / s): square and (upper) triangular
        object.__setattr__(g, "_triangular", "upper")
    return g


def mvn_to_gaussian(loc: Funsor, scale_tril: Tensor, value: Funsor) -> Funsor:
    """``MultivariateNormal(loc, scale_tril, value)`` as ``Gaussian + Tensor``: square-root
    precision ``scale_tril^-T`` (block diagonal over batch output dims).

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> L = fc.Tensor(np.array([[2.0, 0.0], [1.0, 1.0]]))
        >>> g = mvn_to_gaussian(fc.Number(0.0), L, x)
        >>> round(g(x=np.zeros(2)).item(), 6)  # -log(2 pi) - log 2
        -2.531024
    """
    loc, scale_tril, value = _widened(loc), _widened(scale_tril), _widened(value)
    shape = value.output.shape
    k = shape[-1]
    out_batch = shape[:-1]
    b = math.prod(out_batch)
    tril, sizes = _batch(scale_tril, out_batch + (k, k))
    tril = ops.reshape(tril, sizes + (b, k, k))
    if not concrete(tril):
        ok = LOWER_CHOLESKY.check(tril)[..., None, None]
        tril = ops.where(ok, tril, ops.full_like(tril, math.nan))
    eye = ops.new_eye(tril, k)
    inv = ops.triangular_solve(ops.expand(eye, tuple(tril.shape)), tril)  # scale_tril^-1
    root = ops.transpose(inv, -1, -2)
    if b == 1:
        prec_sqrt = root[..., 0, :, :]
    else:  # block diagonal: entry (b k + i, c k + j) is delta_bc root_b[i, j]
        blocks = ops.einsum("...bij,bc->...bicj", root, ops.new_eye(tril, b))
        prec_sqrt = ops.reshape(blocks, sizes + (b * k, b * k))
    white_vec = ops.new_zeros(tril, sizes + (b * k,))
    z = _fresh(loc, scale_tril, value)
    g = Gaussian(white_vec, prec_sqrt,
                 tuple(scale_tril.inputs.items()) + ((z, Domain("real", shape)),))
    half_log_det = ops.sum(ops.sum(ops.log(ops.diagonal(tril)), -1), -1)
    log_norm = Tensor(-half_log_det - 0.5 * b * k * LOG_2PI, scale_tril.inputs)
    return g(**{z: value - loc}) + log_norm
