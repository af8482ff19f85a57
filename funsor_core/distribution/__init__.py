"""Distributions as funsors: a log density is a funsor of named parameters and a ``value``.

Families (each a short declaration; see ``base.py``): Normal, LogNormal, MultivariateNormal,
Gamma, Beta, Dirichlet, Exponential, Laplace, StudentT, Uniform, VonMises (``continuous``);
Categorical, CategoricalLogits, Bernoulli (BernoulliProbs, BernoulliLogits), Binomial,
Multinomial, Poisson, DirichletMultinomial, BetaBinomial, GammaPoisson, Delta (``discrete``);
HalfNormal, HalfCauchy, Cauchy, Gumbel, Logistic, Chi2, FisherSnedecor, Pareto, Weibull,
Geometric, NegativeBinomial, OneHotCategorical (``served``); ContinuousBernoulli,
RelaxedBernoulli, LowRankMultivariateNormal (``relaxed``).
No pyro or numpyro: the densities are written once with ``funsor_core.ops`` and run on numpy,
torch and jax (also under ``jax.jit``). Models are sums of distribution funsors, and every
interpretation applies: exact evaluation, Gaussian conversion of affine Normals, conjugate
updates (``interpretations/exact/conjugate.py``), sampling.

Example:
    >>> from funsor_core.distribution import Beta, Bernoulli
    >>> p = fc.Variable("p", fc.Real)
    >>> model = Beta(2.0, 2.0, value=p) + Bernoulli(probs=p, value=1.0)
    >>> round(model.reduce(ops.logaddexp, "p").item(), 6)  # the marginal likelihood, log(1/2)
    -0.693147
"""

from funsor_core.distribution.base import (
    BACKEND_TO_DISTRIBUTIONS_BACKEND,
    FAMILIES,
    Distribution,
    Param,
    infer_domains,
)
from funsor_core.distribution.coerce import CoerceDistributionToFunsor
from funsor_core.distribution.constraints import Constraint
from funsor_core.distribution.continuous import (
    Beta,
    Dirichlet,
    Exponential,
    Gamma,
    Laplace,
    LogNormal,
    MultivariateNormal,
    NonreparameterizedBeta,
    NonreparameterizedDirichlet,
    NonreparameterizedGamma,
    NonreparameterizedNormal,
    Normal,
    StudentT,
    Uniform,
    VonMises,
)
from funsor_core.distribution.discrete import (
    Bernoulli,
    BernoulliLogits,
    BernoulliProbs,
    BetaBinomial,
    Binomial,
    Categorical,
    CategoricalLogits,
    Delta,
    DirichletMultinomial,
    GammaPoisson,
    Multinomial,
    Poisson,
)
from funsor_core.distribution.relaxed import (
    ContinuousBernoulli,
    LowRankMultivariateNormal,
    RelaxedBernoulli,
)
from funsor_core.distribution.served import (
    Cauchy,
    Chi2,
    FisherSnedecor,
    Geometric,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    Logistic,
    NegativeBinomial,
    OneHotCategorical,
    Pareto,
    Weibull,
)

__all__ = [
    "BACKEND_TO_DISTRIBUTIONS_BACKEND", "FAMILIES", "Distribution", "Param", "Constraint",
    "CoerceDistributionToFunsor",
    "infer_domains",
    "Normal", "LogNormal", "MultivariateNormal", "Gamma", "Beta", "Dirichlet", "Exponential",
    "Laplace", "StudentT", "Uniform", "VonMises", "NonreparameterizedNormal",
    "NonreparameterizedGamma", "NonreparameterizedBeta", "NonreparameterizedDirichlet",
    "Categorical", "CategoricalLogits", "Bernoulli", "BernoulliProbs", "BernoulliLogits",
    "Binomial", "Multinomial", "Poisson", "DirichletMultinomial", "BetaBinomial",
    "GammaPoisson", "Delta",
    "HalfNormal", "HalfCauchy", "Cauchy", "Gumbel", "Logistic", "Chi2", "Pareto", "Weibull",
    "Geometric", "NegativeBinomial", "FisherSnedecor", "OneHotCategorical",
    "ContinuousBernoulli", "RelaxedBernoulli", "LowRankMultivariateNormal",
]
