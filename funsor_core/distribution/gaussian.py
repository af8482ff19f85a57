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

from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian
from funsor_core.atoms.tensor import Tensor
from funsor_core.distribution.array_math import concrete
from funsor_core.distribution.constraints import LOWER_CHOLESKY
from funsor_core.domains import Domain
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.traversal import fresh_name

__all__ = ["normal_to_gaussian", "mvn_to_gaussian"]

LOG_2PI = math.log(2.0 * math.pi)


def _fresh(*terms: Funsor) -> str:
    avoid = set()
    for t in terms:
        avoid.update(t.inputs)
    return fresh_name("_z", avoid)


def _batch(scale: Tensor, event: tuple):
    """``scale``'s data as ``batch + event`` (its inputs' sizes, then its output broadcast
    to ``event``), and the batch sizes."""
    sizes = tuple(d.size for d in scale.inputs.values())
    data = scale.data
    out = tuple(data.shape[len(sizes):])
    data = ops.reshape(data, sizes + (1,) * (len(event) - len(out)) + out)
    if tuple(data.shape) != sizes + tuple(event):
        data = ops.expand(data, sizes + tuple(event))
    return data, sizes


def normal_to_gaussian(loc: Funsor, scale: Tensor, value: Funsor) -> Funsor:
    """``Normal(loc, scale, value)`` as ``Gaussian + Tensor`` (see the module docstring).

    ``loc`` and ``value`` are affine real funsors (``value`` of the value's full domain),
    ``scale`` a Tensor whose output broadcasts to it.

    Example:
        >>> x = fc.Variable("x", fc.Reals[2])
        >>> g = normal_to_gaussian(fc.Number(0.0), fc.Tensor(np.array(1.0)), x)
        >>> round(g(x=np.zeros(2)).item(), 6)  # two standard normal densities at 0
        -1.837877
    """
    shape = value.output.shape
    n = math.prod(shape)
    s, sizes = _batch(scale, shape)
    s = ops.reshape(s, sizes + (n,))
    if not concrete(s):  # a traced nonpositive scale gives NaN, never a finite density
        s = ops.where(s > 0, s, ops.full_like(s, math.nan))
    prec_sqrt = ops.diag_embed(1.0 / s)
    log_norm = Tensor(-ops.sum(ops.log(s), -1) - 0.5 * n * LOG_2PI, scale.inputs)
    rows = _constant_loc(loc, scale, value, sizes, n)
    if rows is not None:
        # value is x itself and loc a constant: ||x / s - loc / s||^2 is the Gaussian over x
        # at once (white vector loc / s), no change of variables to substitute.
        inputs = tuple(scale.inputs.items()) + ((value.name, value.output),)
        return gaussian_sum(Gaussian(rows / s, prec_sqrt, inputs), log_norm)
    white_vec = ops.new_zeros(s, sizes + (n,))
    z = _fresh(loc, scale, value)
    g = Gaussian(white_vec, prec_sqrt, tuple(scale.inputs.items()) + ((z, Domain("real", shape)),))
    return g(**{z: value - loc}) + log_norm


def _constant_loc(loc: Funsor, scale: Tensor, value: Funsor, sizes: tuple, n: int):
    """``loc`` as an array of shape ``sizes + (n,)`` (``scale``'s batch, the flattened value)
    when ``value`` is a Variable and ``loc`` a Number or a Tensor of no inputs or exactly
    ``scale``'s (in its order); None otherwise (the general affine path)."""
    if type(value) is not Variable or value.name in scale.inputs:
        return None
    if type(loc) is Number:
        return ops.new_full(scale.data, sizes + (n,), float(loc.data))
    if type(loc) is not Tensor or loc.inputs and tuple(loc.inputs) != tuple(scale.inputs):
        return None
    data, _ = _batch(loc, value.output.shape)
    if not loc.inputs and sizes:
        data = ops.expand(data, sizes + tuple(value.output.shape))
    return ops.reshape(data, sizes + (n,))


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
