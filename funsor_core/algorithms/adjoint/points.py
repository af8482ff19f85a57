"""Points of log densities: the argmax (MAP), the mean, samples, and the point masses a
backward pass leaves in its adjoints.

These are the math behind the approximating interpretations (``argmax_approximate``,
``mean_approximate``, posterior sampling, Monte Carlo): each takes a log density ``guide``
(a Tensor, a Gaussian, a sum of them, possibly with point masses already fixed by earlier
steps of a backward pass) and the names to place, and returns one point per name, as funsors
batched over the guide's other inputs.

Example:
    >>> t = fc.Tensor(np.array([[0.0, 3.0], [2.0, 1.0]]), {"a": fc.Bint[2], "b": fc.Bint[2]})
    >>> sorted((k, int(v.data)) for k, v in compute_argmax(t, frozenset({"a", "b"})).items())
    [('a', 0), ('b', 1)]
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.atoms.delta import Delta
from funsor_core.atoms.gaussian.algebra import is_gaussian_sum, split_gaussian_sum
from funsor_core.atoms.gaussian.atom import Gaussian, real_offsets
from funsor_core.atoms.tensor import Tensor, align_tensor
from funsor_core.sampling.draw import extract_samples, sample
from funsor_core.sampling.keys import KeyStream
from funsor_core.terms.base import Funsor, Number, Variable
from funsor_core.terms.contraction import Contraction
from funsor_core.terms.traversal import reinterpret

__all__ = ["KeyStream", "compute_argmax", "compute_mean", "draw", "eliminate_points",
           "extract_samples", "names_of", "split_guide"]


def names_of(approx_vars) -> frozenset:
    """Names of a set of names or Variables.

    Example:
        >>> sorted(names_of({fc.Variable("x", fc.Real), "y"}))
        ['x', 'y']
    """
    if isinstance(approx_vars, (str, Funsor)):
        approx_vars = (approx_vars,)
    return frozenset(v.name if isinstance(v, Variable) else v for v in approx_vars)


def split_guide(guide: Funsor, names: frozenset) -> tuple[dict, list]:
    """``(fixed, groups)``: points that Deltas of ``guide`` already fix, and the other terms
    that depend on ``names``, grouped so that no name is shared between groups, each group
    summed into one log density (terms of ``guide`` free of ``names`` are dropped: they do
    not change where the names go).

    Example:
        >>> t = fc.Tensor(np.zeros(2), {"i": fc.Bint[2]})
        >>> fixed, groups = split_guide(fc.Delta("x", fc.Number(1.0)) + t, frozenset("ix"))
        >>> sorted(fixed), [sorted(names) for names, _ in groups]
        (['x'], [['i']])
    """
    if not getattr(type(guide), "_atom", False):
        guide = reinterpret(guide)
    terms = (guide.terms if isinstance(guide, Contraction) and guide.red_op is None
             and guide.bin_op is ops.add else (guide,))
    if isinstance(guide, Contraction) and guide.red_op is not None:
        raise NotImplementedError(f"cannot place {sorted(names)}: the guide is still a lazy "
                                  f"reduction {type(guide).__name__}({guide.red_op})")
    fixed: dict = {}
    groups: list = []  # [names, terms]
    for t in terms:
        if isinstance(t, Delta):
            fixed.update((k, p) for k, (p, _) in t.terms if k in names)
            continue
        own = names.intersection(t.inputs) - fixed.keys()
        if not own:
            continue
        merged = [own, [t]]
        rest = []
        for g in groups:
            if g[0] & own:
                merged[0] = merged[0] | g[0]
                merged[1] = g[1] + merged[1]
            else:
                rest.append(g)
        groups = rest + [merged]
    out = []
    for group_names, group_terms in groups:
        total = group_terms[0]
        for t in group_terms[1:]:
            total = total + t
        out.append((frozenset(group_names), total))
    return fixed, out


def _points_of_sample(s: Funsor, names: frozenset) -> dict:
    return {k: v for k, v in extract_samples(s).items() if k in names}


# ---------------------------------------------------------------------------------------------
# argmax
def compute_argmax(model: Funsor, approx_vars) -> dict:
    """The joint argmax of the log density ``model`` over ``approx_vars``, as a dict from
    names to points batched over the other inputs (funsor's ``compute_argmax``).

    Discrete names take the argmax of a Tensor; real names the mode (the mean) of a Gaussian;
    a Gaussian plus a Tensor is maximized jointly (the Tensor plus the Gaussian's value at
    its mode, over the discrete names; then the mode there). Names that a Delta fixes take
    its point.

    Raises:
        NotImplementedError: for a density with no argmax rule (a Gaussian maximized over
            some of its real inputs only, a lazy term).

    Example:
        >>> g = fc.Gaussian(mean=np.array([1.0, 2.0]), covariance=np.eye(2),
        ...                 inputs={"x": fc.Reals[2]})
        >>> compute_argmax(g, {"x"})["x"].data
        array([1., 2.])
    """
    names = names_of(approx_vars) & model.inputs.keys()
    if not names:
        return {}
    fixed, groups = split_guide(model, names)
    result = dict(fixed)
    for group_names, density in groups:
        result.update(_argmax(density, group_names))
    return result


def _argmax(density: Funsor, names: frozenset) -> dict:
    if isinstance(density, Tensor):
        return _argmax_tensor(density, names)
    if isinstance(density, Gaussian) or is_gaussian_sum(density):
        return _argmax_gaussian_sum(density, names)
    if isinstance(density, Number):
        return {}
    raise NotImplementedError(f"no argmax of a {type(density).__name__} over {sorted(names)}; "
                              "argmax knows Tensors, Gaussians, their sums and Deltas")


def _argmax_tensor(t: Tensor, names: frozenset) -> dict:
    # One argmax over the flattened event dims, unravelled row-major into one point per name.
    batch = {k: d for k, d in t.inputs.items() if k not in names}
    event = {k: d for k, d in t.inputs.items() if k in names}
    data = align_tensor({**batch, **event}, t)
    # The event size spelled out: -1 is ambiguous when a batch dim is 0 (an empty plate).
    size = math.prod(d.size for d in event.values())
    flat = ops.reshape(data, tuple(data.shape[:len(batch)]) + (size,))
    index = ops.argmax(flat, -1)
    result, rest = {}, index
    for name, domain in reversed(list(event.items())):
        # new_array: numpy's 0-d results are numpy scalars, which would take the active
        # backend; a point stays on its density's backend.
        result[name] = Tensor(ops.new_array(data, rest % domain.size), batch, domain.size)
        rest = rest // domain.size
    return result


def _mode(g: Gaussian, names: frozenset) -> dict:
    if names != frozenset(g.real_inputs):
        raise NotImplementedError(
            f"argmax of a Gaussian over {sorted(names)} but not its other real inputs "
            f"{sorted(set(g.real_inputs) - names)}: the mode would be a function of them")
    mean = g.mean
    offsets, _ = real_offsets(g.inputs)
    result = {}
    for name, domain in g.real_inputs.items():
        part = ops.getitem(mean, (Ellipsis, slice(offsets[name],
                                                  offsets[name] + domain.num_elements)))
        result[name] = Tensor(ops.reshape(part, tuple(part.shape[:-1]) + domain.shape),
                              g.batch_inputs)
    return result


def _argmax_gaussian_sum(density: Funsor, names: frozenset) -> dict:
    (g, *more), dense = split_gaussian_sum(density)
    if more:
        raise NotImplementedError("argmax of a sum of several Gaussians: combine them first")
    real = frozenset(k for k in names if density.inputs[k].dtype == "real")
    discrete = names - real
    if not discrete:
        return _mode(g, real)
    # max over (z, x) of t(z) + g(z, x) = max_z [t(z) + g(z, mode(z))]: the joint MAP.
    mode = _mode(g, frozenset(g.real_inputs))
    value = g(**mode)
    for t in dense:
        value = value + t
    result = _argmax_tensor(value, discrete)
    for name in real:
        result[name] = mode[name](**{k: v for k, v in result.items()
                                     if k in mode[name].inputs})
    return result


# ---------------------------------------------------------------------------------------------
# mean
def compute_mean(model: Funsor, approx_vars) -> dict:
    """The mean of each real name of ``approx_vars`` under the normalized density ``model``
    (its other real inputs integrated out), batched over its discrete inputs.

    Raises:
        NotImplementedError: a discrete name (its mean is no value of its domain), or a
            density other than a Gaussian (plus Tensors).

    Example:
        >>> g = fc.Gaussian(mean=np.array([1.0, 2.0]), covariance=np.eye(2),
        ...                 inputs={"x": fc.Real, "y": fc.Real})
        >>> float(compute_mean(g, {"y"})["y"].data)
        2.0
    """
    names = names_of(approx_vars) & model.inputs.keys()
    if not names:
        return {}
    fixed, groups = split_guide(model, names)
    result = dict(fixed)
    for group_names, density in groups:
        bad = sorted(k for k in group_names if density.inputs[k].dtype != "real")
        if bad:
            raise NotImplementedError(f"mean_approximate: {bad} are discrete; the mean of a "
                                      "Bint variable is not one of its values")
        if not (isinstance(density, Gaussian) or is_gaussian_sum(density)):
            raise NotImplementedError(f"no mean of a {type(density).__name__}")
        (g, *more), _ = split_gaussian_sum(density)
        if more:
            raise NotImplementedError("mean of a sum of several Gaussians: combine them first")
        others = frozenset(g.real_inputs) - group_names
        marginal = g.reduce(ops.logaddexp, others) if others else g
        (q,), _ = split_gaussian_sum(marginal)
        result.update(_mode(q, group_names))
    return result


# ---------------------------------------------------------------------------------------------
# samples
def draw(guide: Funsor, approx_vars, sample_inputs: dict, rng_key=None) -> tuple:
    """Draw ``approx_vars`` from the log density ``guide``: ``(points, log_weight)``.

    Groups of names that share no term are drawn independently; within a group the discrete
    names are drawn first from the density with the real names integrated out, then the real
    names given them. ``log_weight`` is ``log Z - log q(points)`` summed over the groups
    (``q`` the normalized density of a group, ``Z`` its normalizer): with it, ``Delta(points)
    + log_weight`` is an unbiased (Monte Carlo) estimate of ``guide`` itself, less the terms
    of ``guide`` that do not depend on the names.

    Args:
        guide: the log density, possibly with Deltas that fix some names already.
        approx_vars: the names (or Variables) to draw.
        sample_inputs: new Bint inputs along which independent draws are made.
        rng_key: a seed, generator or jax key (see ``KeyStream``), or a ``KeyStream``.

    Example:
        >>> t = fc.Tensor(np.array([0.0, -np.inf]), {"i": fc.Bint[2]})
        >>> points, _ = draw(t, {"i"}, {}, rng_key=0)
        >>> int(points["i"].data)
        0
    """
    names = names_of(approx_vars) & guide.inputs.keys()
    keys = rng_key if isinstance(rng_key, KeyStream) else KeyStream(rng_key)
    fixed, groups = split_guide(guide, names)
    points, log_weight = dict(fixed), Number(0.0)
    for group_names, density in groups:
        discrete = frozenset(k for k in group_names if density.inputs[k].dtype != "real")
        real = group_names - discrete
        reals = frozenset(k for k, d in density.inputs.items() if d.dtype == "real")
        part, weight = density, Number(0.0)
        if discrete:
            marginal = part.reduce(ops.logaddexp, reals) if reals else part
            s = sample(marginal, discrete, sample_inputs, keys.next(marginal))
            new = _points_of_sample(s, discrete)
            points.update(new)
            weight = weight + marginal.reduce(ops.logaddexp, discrete) - marginal(**new)
            part = part(**new)
        if real:
            s = sample(part, real, sample_inputs, keys.next(part))
            new = _points_of_sample(s, real)
            points.update(new)
            weight = weight + part.reduce(ops.logaddexp, real) - part(**new)
        log_weight = log_weight + weight
    return points, log_weight


def eliminate_points(factors: tuple, reduced: frozenset) -> tuple:
    """Reduce the point masses of ``reduced`` names out of a product (``+`` of log factors)
    by substitution: ``(factors, reduced)`` left to reduce.

    S_x [Delta(x = p, y = q) + f(x, y)] = Delta(y = q) + f(p, y) for S = max or logaddexp
    (a point mass of log weight 0): the points of the reduced names are substituted into the
    other factors, so that the points of the kept names stay points (reducing the Delta
    itself would tabulate them into a dense indicator).

    Example:
        >>> f = fc.Tensor(np.array([1.0, 2.0]), {"i": fc.Bint[2]})
        >>> point = Delta((("i", (fc.Number(1, 2), fc.Number(0.0))),))
        >>> (g,), left = eliminate_points((point, f), frozenset({"i"}))
        >>> float(g.data), left  # f at the point i = 1, nothing left to reduce
        (2.0, frozenset())
    """
    points: dict = {}
    out: list = []
    for f in factors:
        if type(f) is not Delta:
            out.append(f)
            continue
        rest = []
        for name, (point, log_density) in f.terms:
            if name in reduced and type(log_density) is Number and log_density.data == 0.0:
                points[name] = point
            else:
                rest.append((name, (point, log_density)))
        if rest:
            out.append(Delta(tuple(rest)))
    if not points:
        return factors, reduced
    out = [f(**{k: v for k, v in points.items() if k in f.inputs})
           if not points.keys().isdisjoint(f.inputs) else f for f in out]
    names = set()
    for f in out:
        names.update(f.inputs)
    return tuple(out) or (Number(0.0),), frozenset(reduced - points.keys()) & names
