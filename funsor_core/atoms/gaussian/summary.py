"""The mean and covariance of a Gaussian, or of a mixture of Gaussians, by input name.

``moments(f)`` reads a Gaussian log density ``f`` (a ``Gaussian``, or a ``Gaussian`` plus
Tensors of log weights, as ``g + logw`` builds it) and returns its mass, mean and covariance
over its real inputs, batched over its Bint inputs. With ``mixture=`` some Bint inputs are
mixed instead of batched: for components ``g_k`` of masses ``Z_k = exp(t_k) ∫ exp g_k``,

    p_k = Z_k / sum_j Z_j,    mean = sum_k p_k mu_k,
    cov  = sum_k p_k (Sigma_k + (mu_k - mean)(mu_k - mean)'),

the moments that ``moment_matching`` keeps when it collapses that mixture.

Each component is rotated once to its triangular factor ``R_k`` (``precision = R_k' R_k``),
so ``mu_k = R_k^{-1} z_k`` and ``Sigma_k = R_k^{-1} R_k^{-T}``: no precision is inverted
(``moments.component_moments``). A component with too little information (a precision that
is singular, so no covariance) raises ``ValueError`` naming its coordinates when the arrays
are concrete; under ``jax.jit`` its mass is ``+inf`` and its moments are not finite.

Example:
    >>> g = fc.Gaussian(mean=np.array([1.0, 2.0]), covariance=np.diag([4.0, 9.0]),
    ...                 inputs={"x": fc.Real, "y": fc.Real})
    >>> m = moments(g)
    >>> float(m.mean["y"].data), m.covariance.data.tolist()
    (2.0, [[4.0, 0.0], [0.0, 9.0]])
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from funsor_core import ops
from funsor_core.atoms.gaussian.algebra import gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian, align_gaussian, real_offsets
from funsor_core.atoms.gaussian.moments import _labels, component_moments
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.domains import Real
from funsor_core.terms.base import Funsor, Number
from funsor_core.terms.contraction import sum_addends

__all__ = ["Moments", "moments"]

_NOT_GAUSSIAN = (
    "moments needs a Gaussian log density: a Gaussian, or a Gaussian plus Tensors of log "
    "weights over its Bint inputs (e.g. g + logw), got {what}")


class Moments(NamedTuple):
    """The moments of a Gaussian log density, by input name (see ``moments``).

    Attributes:
        log_mass: ``log ∫ exp f`` over the real inputs (and the ``mixture`` names): a Tensor
            over the batch inputs (the Bint inputs not mixed).
        mean: for each real input, its mean: a Tensor over the batch inputs whose output is
            that input's domain (``Real``, ``Reals[n]``, ...).
        covariance: the joint covariance, a Tensor over the batch inputs with output
            ``Reals[dim, dim]``, its coordinates the real inputs flattened in the order of
            ``reals``.
        reals: the real inputs, in the order of the covariance's coordinates.

    Example:
        >>> g = fc.Gaussian(mean=np.array([1.5]), precision=np.array([[4.0]]),
        ...                 inputs={"x": fc.Real})
        >>> m = fc.moments(g)
        >>> float(m.mean["x"].data), m.covariance.data
        (1.5, array([[0.25]]))
    """

    log_mass: Tensor
    mean: dict
    covariance: Tensor
    reals: dict

    def block(self, a: str, b: str | None = None) -> Tensor:
        """The covariance block of real inputs ``a`` and ``b`` (default ``a``): a Tensor over
        the batch inputs with output ``Reals[*shape_a, *shape_b]``.

        Example:
            >>> g = fc.Gaussian(mean=np.zeros(3), covariance=np.diag([1.0, 2.0, 3.0]),
            ...                 inputs={"x": fc.Real, "y": fc.Reals[2]})
            >>> moments(g).block("y").data.tolist()
            [[2.0, 0.0], [0.0, 3.0]]
        """
        b = a if b is None else b
        for name in (a, b):
            if name not in self.reals:
                raise ValueError(f"Moments.block: '{name}' is not a real input; the real "
                                 f"inputs are {list(self.reals)}")
        offsets, _ = real_offsets(self.reals)
        da, db = self.reals[a], self.reals[b]
        data = self.covariance.data
        batch = tuple(data.shape[:-2])
        part = data[..., offsets[a]:offsets[a] + da.num_elements,
                    offsets[b]:offsets[b] + db.num_elements]
        return Tensor(ops.reshape(part, batch + da.shape + db.shape),
                      dict(self.covariance.inputs))


def _terms(f: Funsor) -> tuple:
    # The Gaussian and the log weights of ``f``: a sum built eagerly (a Contraction without
    # reduction) or lazily (a Binary tree of ops.add).
    if isinstance(f, Gaussian):
        return f, []
    found = sum_addends(f)
    gaussians = [t for t in found if isinstance(t, Gaussian)]
    weights = [t for t in found if not isinstance(t, Gaussian)]
    bad = [t for t in weights if not isinstance(t, (Tensor, Number)) or t.output is not Real
           or any(d.dtype == "real" for d in t.inputs.values())]
    if len(gaussians) > 1 and not bad:  # a sum kept side by side (moment_matching): add it up
        gaussians, more = split_gaussian_sum(gaussian_sum(*gaussians))
        weights = weights + more
    if len(gaussians) != 1 or bad:
        what = type(f).__name__ if len(gaussians) == 1 else (
            f"{len(gaussians)} Gaussians in {type(f).__name__}")
        if bad:
            what = f"a term {type(bad[0]).__name__} with inputs {dict(bad[0].inputs)} and " \
                   f"output {bad[0].output}"
        raise TypeError(_NOT_GAUSSIAN.format(what=what))
    return gaussians[0], weights


def _layout(g: Gaussian, weights: list, mixture: frozenset) -> tuple[dict, dict]:
    # Every Bint input, the batch ones first and the mixed ones last.
    bints: dict = dict(g.batch_inputs)
    for w in weights:
        bints.update((k, d) for k, d in w.inputs.items())
    unknown = sorted(mixture - set(bints))
    if unknown:
        raise ValueError(f"moments: mixture names {unknown} are not Bint inputs of the "
                         f"density, whose Bint inputs are {list(bints)}")
    kept = {k: d for k, d in bints.items() if k not in mixture}
    mixed = {k: d for k, d in bints.items() if k in mixture}
    return kept, mixed


def _component_arrays(g: Gaussian, weights: list, kept: dict, mixed: dict):
    # (log weight, mean, covariance) of each component, as kept + (n,), + (n, dim) and
    # + (n, dim, dim), with n the number of assignments of the mixed names (1 if none).
    reals = g.real_inputs
    order = {**kept, **mixed, **reals}
    white_vec, prec_sqrt = align_gaussian(order, g, expand=True)
    dim = prec_sqrt.shape[-2]
    labels = _labels(reals)
    if prec_sqrt.shape[-1] < dim:
        raise ValueError(f"moments: the Gaussian over {list(reals)} has rank "
                         f"{prec_sqrt.shape[-1]} < dim {dim}: no information on some "
                         f"direction of {labels}, so it has no mean or covariance")
    try:
        log_z, mean, r_inv = component_moments(white_vec, prec_sqrt, labels)
    except ValueError as e:
        if any(np.isnan(np.asarray(ops.to_numpy(ops.detach(a)))).any()
               for a in (white_vec, prec_sqrt)):  # not singular: NaN from upstream
            raise ValueError(f"moments: the Gaussian over {list(reals)} holds NaN (a NaN or "
                             f"+inf log weight, or a NaN parameter, in the terms it came "
                             f"from), so it has no moments; the rank test read it as "
                             f"singular: {e}") from None
        raise ValueError(f"moments: the precision over {list(reals)} is singular (no "
                         f"covariance): {e}") from None
    kshape = tuple(d.size for d in kept.values())
    n = math.prod(d.size for d in mixed.values())
    log_w = log_z
    for w in weights:  # a Number's data is a Python float
        log_w = ops.add(log_w, align_tensor({**kept, **mixed}, w) if isinstance(w, Tensor)
                        else w.data)
    log_w = ops.reshape(ops.expand(log_w, tuple(log_z.shape)), kshape + (n,))
    cov = ops.matmul(r_inv, ops.transpose(r_inv, -1, -2))
    return (log_w, ops.reshape(mean, kshape + (n, dim)),
            ops.reshape(cov, kshape + (n, dim, dim)))


def moments(f: Funsor, mixture=frozenset()) -> Moments:
    """The mass, mean and covariance of a Gaussian log density ``f`` over its real inputs.

    Args:
        f: a ``Gaussian``, or a Gaussian plus Tensors (or Numbers) of log weights over Bint
            inputs (``g + logw``): each assignment of the Bint inputs is a component.
        mixture: Bint input names (a name or a set) to mix over: their components are
            combined by their masses into one mean and covariance (those of the mixture).
            The other Bint inputs stay batch inputs of the results.

    Returns:
        ``Moments(log_mass, mean, covariance, reals)``: ``mean[name]`` a Tensor over the
        batch inputs with output the real input's domain, ``covariance`` the joint one
        (output ``Reals[dim, dim]``, coordinates in the order of ``reals``), and
        ``Moments.block(a, b)`` the block of two names.

    Raises:
        TypeError: ``f`` is not a Gaussian (plus log weights).
        ValueError: a ``mixture`` name is not a Bint input, or a component's precision is
            singular (too little information for a covariance), naming the coordinates.

    Example:
        >>> mu = np.array([[-1.0], [1.0]])   # two components over k, equal weights
        >>> g = fc.Gaussian(mean=mu, covariance=np.ones((2, 1, 1)),
        ...                 inputs={"k": fc.Bint[2], "x": fc.Real})
        >>> logw = fc.Tensor(np.log(np.array([0.5, 0.5])), {"k": fc.Bint[2]})
        >>> m = moments(g + logw, mixture="k")
        >>> float(m.mean["x"].data), float(m.covariance.data[0, 0])  # 1 + the means' spread
        (0.0, 2.0)
        >>> moments(g).mean["x"].data.tolist()  # batched over k
        [-1.0, 1.0]
    """
    mixture = frozenset([mixture]) if isinstance(mixture, str) else frozenset(mixture)
    if not isinstance(f, Funsor):
        raise TypeError(_NOT_GAUSSIAN.format(what=type(f).__name__))
    g, weights = _terms(f)
    kept, mixed = _layout(g, weights, mixture)
    log_w, mean_k, cov_k = _component_arrays(g, weights, kept, mixed)
    # p_k = Z_k / Z over the last axis; the mixture's moments as in the module docstring.
    log_mass = ops.logsumexp(log_w, -1)
    p = ops.exp(ops.sub(log_w, log_mass[..., None]))
    mean = ops.sum(ops.mul(p[..., None], mean_k), -2)
    diff = ops.sub(mean_k, mean[..., None, :])
    spread = ops.mul(diff[..., :, None], diff[..., None, :])
    cov = ops.sum(ops.mul(p[..., None, None], ops.add(cov_k, spread)), -3)
    reals = g.real_inputs
    offsets, _ = real_offsets(reals)
    kshape = tuple(log_mass.shape)
    means = {name: Tensor(ops.reshape(mean[..., offsets[name]:offsets[name] + d.num_elements],
                                      kshape + d.shape), dict(kept))
             for name, d in reals.items()}
    return Moments(Tensor(log_mass, dict(kept)), means, Tensor(cov, dict(kept)), dict(reals))
