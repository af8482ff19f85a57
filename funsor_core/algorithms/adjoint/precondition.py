"""Preconditioned samples: a Gaussian's sample as an affine function of white noise.

For a Gaussian ``g(x, r) = -0.5 || x S_x + r S_r - w ||^2`` over the names ``x`` to place and
other real inputs ``r`` (earlier noise, after earlier points were substituted), the
conditional of ``x`` given ``r`` has precision ``S_x S_x'``. With ``S_x' = Q R`` (QR, ``R``
upper triangular), ``x = R^-1 (Q' (w - S_r' r) + e)`` for standard normal ``e`` is a sample
of it: its covariance is ``R^-1 R^-T``. One QR of ``[S_x' | w | -S_r']`` gives ``R`` and
``Q'[w | -S_r']`` together, with no precision matrix formed.

Example:
    >>> from funsor_core.algorithms.adjoint.kinds import Precondition
    >>> g = fc.Gaussian(mean=np.array([1.0]), covariance=np.array([[4.0]]),
    ...                 inputs={"x": fc.Real})
    >>> p = precondition_points(Precondition(), g, frozenset({"x"}))["x"]
    >>> p.inputs, float(p(aux_0=np.array([0.5])).data)  # 1 + 2 * 0.5
    ({'aux_0': Reals[1]}, 2.0)
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.points import split_guide
from funsor_core.atoms.gaussian import linalg as la
from funsor_core.atoms.gaussian.algebra import is_gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian, real_offsets
from funsor_core.atoms.tensor import Tensor
from funsor_core.terms.base import Funsor, Variable

__all__ = ["precondition_points"]


def precondition_points(state, guide: Funsor, names: frozenset) -> dict:
    """Points for the real ``names`` of a Gaussian ``guide``: affine functions of a new
    white-noise input made by ``state.new_noise`` (a ``Precondition``) and of the guide's
    other real inputs.

    Raises:
        NotImplementedError: a discrete name, or a guide that is not a Gaussian (plus
            Tensors).

    Example:
        ``x = mean + A @ noise`` with ``A A' = covariance``: white noise gives the guide.

        >>> from funsor_core.algorithms.adjoint.kinds import Precondition
        >>> mean, cov = np.array([1.0, -1.0]), np.array([[4.0, 1.0], [1.0, 2.0]])
        >>> guide = fc.Gaussian(mean=mean, covariance=cov, inputs={"x": fc.Reals[2]})
        >>> x = precondition_points(Precondition(aux_name="aux"), guide, frozenset("x"))["x"]
        >>> x.inputs
        {'aux_0': Reals[2]}
        >>> a = np.stack([x(aux_0=e).data - mean for e in np.eye(2)], 1)
        >>> x(aux_0=np.zeros(2)).data, np.allclose(a @ a.T, cov)
        (array([ 1., -1.]), True)
    """
    fixed, groups = split_guide(guide, names)
    points = dict(fixed)
    for group_names, density in groups:
        if not (isinstance(density, Gaussian) or is_gaussian_sum(density)):
            raise NotImplementedError(f"Precondition needs a Gaussian guide for "
                                      f"{sorted(group_names)}, got a {type(density).__name__}")
        (g, *more), _ = split_gaussian_sum(density)
        bad = sorted(k for k in group_names if density.inputs[k].dtype != "real")
        if more or bad:
            raise NotImplementedError(f"Precondition: cannot place {bad or sorted(group_names)}"
                                      " (discrete names, or several Gaussians)")
        points.update(_affine_sample(state, g, group_names))
    return points


def _affine_sample(state, g: Gaussian, names: frozenset) -> dict:
    offsets, _ = real_offsets(g.inputs)
    real = g.real_inputs
    x_names = [k for k in real if k in names]
    r_names = [k for k in real if k not in names]
    x_index = [i for k in x_names for i in range(offsets[k], offsets[k] + real[k].num_elements)]
    r_index = [i for k in r_names for i in range(offsets[k], offsets[k] + real[k].num_elements)]
    dx = len(x_index)
    s_x = la.mT(la.rows(g.prec_sqrt, x_index))  # batch + (rank, dx)
    s_r = la.mT(la.rows(g.prec_sqrt, r_index))  # batch + (rank, dr)
    white = ops.getitem(g.white_vec, (Ellipsis, None))
    rr = ops.qr_r(ops.cat([s_x, white, ops.neg(s_r)], -1))
    if rr.shape[-2] < dx:
        raise ValueError(f"Precondition: too little information to sample {sorted(names)} "
                         f"(rank {rr.shape[-2]} < {dx}); add a prior")
    r_upper = ops.getitem(rr, (Ellipsis, slice(0, dx), slice(0, dx)))
    z = ops.getitem(rr, (Ellipsis, slice(0, dx), slice(dx, None)))
    batch_shape = tuple(r_upper.shape[:-2])
    eye = la.expand(ops.new_eye(r_upper, dx), batch_shape, 2)
    r_inv = ops.triangular_solve(eye, r_upper, upper=True)
    coeffs = ops.matmul(r_inv, z)  # batch + (dx, 1 + dr): [mean | -d mean / d r]
    batch = g.batch_inputs
    noise = state.new_noise(tuple(d.size for d in batch.values()) + (dx,))
    if batch:
        noise = noise[tuple(batch)]
    flat = (Tensor(ops.getitem(coeffs, (Ellipsis, 0)), batch)
            + Tensor(r_inv, batch) @ noise)
    start = 1
    for k in r_names:
        n = real[k].num_elements
        block = ops.getitem(coeffs, (Ellipsis, slice(start, start + n)))
        flat = flat + Tensor(block, batch) @ Variable(k, real[k]).reshape((n,))
        start += n
    points, start = {}, 0
    for k in x_names:
        n = real[k].num_elements
        points[k] = flat[start:start + n].reshape(real[k].shape)
        start += n
    return points
