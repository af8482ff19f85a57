"""High-level algorithms on the adjoint (funsor's ``funsor.recipes``): forward filtering,
backward sampling of a factor graph, with samples either drawn (reparameterized) or written
as affine functions of white noise (preconditioning).

Example:
    >>> g = fc.Gaussian(mean=np.array([1.0]), covariance=np.array([[1.0]]),
    ...                 inputs={"a": fc.Real})
    >>> samples, log_prob = forward_filter_backward_rsample(
    ...     {"a": g}, frozenset({"a"}), frozenset(), {"particle": fc.Bint[2000]}, rng_key=0)
    >>> round(float(samples["a"].data.mean()), 1), sorted(log_prob.inputs)
    (1.0, ['particle'])
"""

from __future__ import annotations

from funsor_core import ops
from funsor_core.algorithms.adjoint.kinds import PosteriorSample, Precondition
from funsor_core.algorithms.adjoint.points import extract_samples
from funsor_core.algorithms.adjoint.tape import forward_backward
from funsor_core.algorithms.eliminate.plated import sum_product
from funsor_core.domains import Domain
from funsor_core.engine.interpreter import reflect
from funsor_core.terms.base import Funsor

__all__ = ["forward_filter_backward_precondition", "forward_filter_backward_rsample"]


def _check(factors, eliminate, plates) -> None:
    if not isinstance(factors, dict) or not all(
            isinstance(k, str) and isinstance(v, Funsor) for k, v in factors.items()):
        raise TypeError("factors must be a dict from site names to funsors")
    for what, names in (("eliminate", eliminate), ("plates", plates)):
        if not isinstance(names, frozenset) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"{what} must be a frozenset of names, got {names!r}")


def _log_z(factors: dict, eliminate: frozenset, plates: frozenset) -> Funsor:
    # Tensor variable elimination, recorded lazily; the tape evaluates it along its plan.
    with reflect:
        return sum_product(ops.logaddexp, ops.add, list(factors.values()), eliminate, plates)


def _samples_and_log_prob(factors, eliminate, plates, log_z, marginals) -> tuple:
    samples: dict = {}
    for name, factor in factors.items():
        if name in eliminate:
            samples.update(extract_samples(marginals[factor]))
    missing = sorted((eliminate - plates) - samples.keys())
    if missing:
        raise ValueError(f"no samples of {missing}: each latent variable needs a factor "
                         "named after it (its sample site)")
    return samples, log_z


def _log_prob(factors: dict, eliminate: frozenset, samples: dict, log_z) -> Funsor:
    log_prob = -log_z
    for f in factors.values():
        term = f(**{k: v for k, v in samples.items() if k in f.inputs})
        term = term.reduce(ops.add, eliminate.intersection(term.inputs))
        log_prob = log_prob + term
    return log_prob


def forward_filter_backward_rsample(factors: dict, eliminate: frozenset, plates: frozenset,
                                    sample_inputs: dict | None = None,
                                    rng_key=None) -> tuple:
    """Draw joint posterior samples of a plated factor graph, reparameterized where real.

    Tensor variable elimination computes ``log Z`` on a tape; the backward pass draws each
    eliminated variable from its conditional given those drawn before (Gaussians by
    reparameterization, so gradients flow through the samples).

    Args:
        factors: a dict from site names to factors; the factor of a latent variable is
            named after it.
        eliminate: names of latent variables and plates to eliminate.
        plates: the plate names.
        sample_inputs: names to ``Bint[n]``: draws made in batch along them.
        rng_key: a seed, generator or jax key.

    Returns:
        ``(samples, log_prob)``: a dict from latent names to samples, and the log density of
        the posterior at the samples (batched over ``sample_inputs``).

    Example:
        >>> x = fc.Tensor(np.array([-np.inf, 0.0]), {"x": fc.Bint[2]})  # x = 1 surely
        >>> samples, log_prob = forward_filter_backward_rsample(
        ...     {"x": x}, frozenset({"x"}), frozenset(), rng_key=0)
        >>> samples["x"].item(), float(log_prob)  # log p(x = 1) = log 1
        (1, 0.0)
    """
    _check(factors, eliminate, plates)
    sample_inputs = dict(sample_inputs or {})
    if not all(isinstance(d, Domain) for d in sample_inputs.values()):
        raise TypeError(f"sample_inputs map names to domains, got {sample_inputs!r}")
    log_z = _log_z(factors, eliminate, plates)
    with PosteriorSample(rng_key, **sample_inputs) as sampler:
        log_z, marginals = forward_backward(ops.logaddexp, ops.add, log_z,
                                            batch_vars=sampler.sample_vars)
    samples, log_z = _samples_and_log_prob(factors, eliminate, plates, log_z, marginals)
    return samples, _log_prob(factors, eliminate, samples, log_z)


def forward_filter_backward_precondition(factors: dict, eliminate: frozenset,
                                         plates: frozenset, aux_name: str = "aux") -> tuple:
    """Posterior samples of a Gaussian plated factor graph as affine functions of one white
    noise vector ``aux_name``: substituting standard normal values for it draws a sample.

    Returns:
        ``(samples, log_prob)``, both lazy functions of the input ``aux_name`` (a
        ``Reals[d]``, ``d`` the total number of elements of the eliminated variables).

    Example:
        >>> g = fc.Gaussian(mean=np.array([1.0]), covariance=np.array([[4.0]]),
        ...                 inputs={"a": fc.Real})
        >>> samples, log_prob = forward_filter_backward_precondition(
        ...     {"a": g}, frozenset({"a"}), frozenset())
        >>> float(samples["a"](aux=np.array([0.5])).data)  # 1 + 2 * 0.5
        2.0
    """
    _check(factors, eliminate, plates)
    if any(aux_name in f.inputs for f in factors.values()):
        raise ValueError(f"aux_name {aux_name!r} is already an input of a factor")
    log_z = _log_z(factors, eliminate, plates)
    with Precondition(aux_name=aux_name) as precondition:
        log_z, marginals = forward_backward(ops.logaddexp, ops.add, log_z,
                                            batch_vars=precondition.sample_vars)
    samples, log_z = _samples_and_log_prob(factors, eliminate, plates, log_z, marginals)
    subs = precondition.combine_subs()
    samples = {k: v(**{n: s for n, s in subs.items() if n in v.inputs})
               for k, v in samples.items()}
    return samples, _log_prob(factors, eliminate, samples, log_z)
