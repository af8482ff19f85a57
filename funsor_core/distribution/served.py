"""Families funsor 0.4.8 also serves (it generates them from pyro's and numpyro's classes),
beyond the conjugate core of ``continuous`` and ``discrete``: HalfNormal, HalfCauchy, Cauchy,
Gumbel, Logistic, Chi2, FisherSnedecor, Pareto, Weibull (continuous), Geometric and
NegativeBinomial (counts), OneHotCategorical (one-hot vectors). Parameters are named and
ordered as in ``torch.distributions`` (Logistic: as in pyro and numpyro).

Each is a declaration like the families of ``continuous`` and ``discrete``: a log density, a
support, a draw, and the first two moments where they exist (Cauchy and HalfCauchy have none).

Example:
    >>> round(Gumbel(0.0, 2.0, value=1.0).item(), 6)  # scipy.stats.gumbel_r(0, 2).logpdf(1)
    -1.799678
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.distribution.base import Distribution, Param
from funsor_core.distribution.constraints import POSITIVE, PROBS, REAL, UNIT_INTERVAL
from funsor_core.distribution.random import gumbel_argmax

__all__ = ["HalfNormal", "HalfCauchy", "Cauchy", "Gumbel", "Logistic", "Chi2", "FisherSnedecor",
           "Pareto", "Weibull", "Geometric", "NegativeBinomial", "OneHotCategorical"]

_LOG_PI = math.log(math.pi)
_EULER_GAMMA = 0.5772156649015329


def _floor_nonnegative(x):
    # floor for x >= 0 (ops has mod, not floor): x - (x mod 1).
    return x - ops.mod(x, 1.0)


def _tan_half_turn(u):
    # tan(pi (u - 1/2)) for u in (0, 1): a standard Cauchy draw (inverse CDF).
    a = math.pi * (u - 0.5)
    return ops.sin(a) / ops.cos(a)


def _is_count(x):
    finite = ops.isfinite(x)
    safe = ops.where(finite, x, 0.5)
    return finite & (safe >= 0) & (ops.mod(safe, 1.0) == 0)


class HalfNormal(Distribution):
    """HalfNormal(scale): ``|x|`` for ``x`` Normal(0, scale); density on ``value >= 0``.

    Example:
        >>> round(HalfNormal(2.0, value=1.0).item(), 6)  # scipy.stats.halfnorm(0, 2).logpdf(1)
        -1.043939
    """

    params = {"scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, scale):
        z = value / scale
        return 0.5 * math.log(2.0 / math.pi) - ops.log(scale) - 0.5 * z * z

    @staticmethod
    def in_support(value, scale):
        return value >= 0

    @staticmethod
    def draw(rng, shape, scale):
        return ops.abs(scale * rng.normal(shape))

    @staticmethod
    def moments(scale):
        return scale * math.sqrt(2.0 / math.pi), scale * scale * (1.0 - 2.0 / math.pi)


class Cauchy(Distribution):
    """Cauchy(loc, scale): density ``1 / (pi scale (1 + z^2))``, ``z = (x - loc) / scale``.

    Example:
        >>> round(Cauchy(0.0, 2.0, value=1.0).item(), 6)  # scipy.stats.cauchy(0, 2).logpdf(1)
        -2.061021
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, loc, scale):
        z = (value - loc) / scale
        return -_LOG_PI - ops.log(scale) - ops.log1p(z * z)

    @staticmethod
    def draw(rng, shape, loc, scale):
        return loc + scale * _tan_half_turn(rng.uniform(shape))


class HalfCauchy(Distribution):
    """HalfCauchy(scale): ``|x|`` for ``x`` Cauchy(0, scale); density on ``value >= 0``.

    Example:
        >>> round(HalfCauchy(2.0, value=1.0).item(), 6)  # scipy.stats.halfcauchy(0, 2).logpdf(1)
        -1.367873
    """

    params = {"scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, scale):
        z = value / scale
        return math.log(2.0) - _LOG_PI - ops.log(scale) - ops.log1p(z * z)

    @staticmethod
    def in_support(value, scale):
        return value >= 0

    @staticmethod
    def draw(rng, shape, scale):
        return ops.abs(scale * _tan_half_turn(rng.uniform(shape)))


class Gumbel(Distribution):
    """Gumbel(loc, scale): density ``exp(-(z + e^-z)) / scale``, ``z = (x - loc) / scale``.

    Example:
        >>> round(Gumbel(1.0, 1.0, value=1.0).item(), 6)  # -1
        -1.0
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, loc, scale):
        z = (value - loc) / scale
        return -ops.log(scale) - z - ops.exp(-z)

    @staticmethod
    def draw(rng, shape, loc, scale):
        return loc - scale * ops.log(-ops.log(rng.uniform(shape)))

    @staticmethod
    def moments(loc, scale):
        return loc + _EULER_GAMMA * scale, (math.pi ** 2 / 6.0) * scale * scale + 0.0 * loc


class Logistic(Distribution):
    """Logistic(loc, scale): density ``e^-z / (scale (1 + e^-z)^2)``, ``z = (x - loc) / scale``.

    Example:
        >>> round(Logistic(0.0, 2.0, value=1.0).item(), 6)  # scipy.stats.logistic(0, 2).logpdf(1)
        -2.141301
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, loc, scale):
        # The density is even in z: with |z| the exponential never overflows.
        a = ops.abs((value - loc) / scale)
        return -a - 2.0 * ops.log1p(ops.exp(-a)) - ops.log(scale)

    @staticmethod
    def draw(rng, shape, loc, scale):
        u = rng.uniform(shape)
        return loc + scale * (ops.log(u) - ops.log1p(-u))

    @staticmethod
    def moments(loc, scale):
        return loc + 0.0 * scale, (math.pi ** 2 / 3.0) * scale * scale + 0.0 * loc


class Chi2(Distribution):
    """Chi2(df): the Gamma(df / 2, rate 1 / 2) density on ``value >= 0``.

    Example:
        >>> round(Chi2(3.0, value=2.0).item(), 6)  # scipy.stats.chi2(3).logpdf(2)
        -1.572365
    """

    params = {"df": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, df):
        k = 0.5 * df
        return (ops.xlogy(k - 1.0, value) - 0.5 * value - k * math.log(2.0)
                - ops.lgamma(k))

    @staticmethod
    def in_support(value, df):
        return value >= 0

    @staticmethod
    def draw(rng, shape, df):
        return 2.0 * rng.gamma(0.5 * df, shape)

    @staticmethod
    def moments(df):
        return df, 2.0 * df


class FisherSnedecor(Distribution):
    """FisherSnedecor(df1, df2): the ratio ``(u1 / df1) / (u2 / df2)`` of two independent
    Chi2 variables, a density on ``value >= 0``.

    Example:
        >>> round(FisherSnedecor(3.0, 5.0, value=1.0).item(), 6)  # scipy.stats.f(3, 5).logpdf(1)
        -1.018394
    """

    params = {"df1": Param(POSITIVE), "df2": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def fill_value(cls, value, df1, df2):
        return ops.full_like(value, 1.0)

    @staticmethod
    def log_prob(value, df1, df2):
        a, b = 0.5 * df1, 0.5 * df2
        log_beta = ops.lgamma(a) + ops.lgamma(b) - ops.lgamma(a + b)
        return (a * ops.log(df1 / df2) + ops.xlogy(a - 1.0, value)
                - (a + b) * ops.log1p(df1 * value / df2) - log_beta)

    @staticmethod
    def in_support(value, df1, df2):
        return value >= 0

    @staticmethod
    def draw(rng, shape, df1, df2):
        u1 = rng.gamma(0.5 * df1, shape) / df1
        return u1 / (rng.gamma(0.5 * df2, shape) / df2)


class Pareto(Distribution):
    """Pareto(scale, alpha): density ``alpha scale^alpha / x^(alpha + 1)`` on ``x >= scale``.

    Example:
        >>> round(Pareto(1.0, 3.0, value=2.0).item(), 6)  # scipy.stats.pareto(3).logpdf(2)
        -1.673976
    """

    params = {"scale": Param(POSITIVE), "alpha": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def fill_value(cls, value, scale, alpha):
        return scale + ops.full_like(value, 0.0)

    @staticmethod
    def log_prob(value, scale, alpha):
        return ops.log(alpha) + alpha * ops.log(scale) - (alpha + 1.0) * ops.log(value)

    @staticmethod
    def in_support(value, scale, alpha):
        return value >= scale

    @staticmethod
    def draw(rng, shape, scale, alpha):
        return scale * ops.exp(-ops.log(rng.uniform(shape)) / alpha)

    @staticmethod
    def moments(scale, alpha):
        inf = ops.full_like(scale + alpha, math.inf)
        mean = ops.where(alpha > 1, alpha * scale / ops.where(alpha > 1, alpha - 1.0, 1.0), inf)
        safe = ops.where(alpha > 2, alpha, 3.0)
        var = ops.where(alpha > 2, scale * scale * safe / ((safe - 1.0) ** 2 * (safe - 2.0)),
                        inf)
        return mean, var


class Weibull(Distribution):
    """Weibull(scale, concentration): density ``(k / s) (x / s)^(k - 1) e^(-(x / s)^k)`` on
    ``x >= 0``.

    Example:
        >>> round(Weibull(2.0, 1.5, value=1.0).item(), 6)  # scipy.stats.weibull_min(1.5, 0, 2)
        -0.987809
    """

    params = {"scale": Param(POSITIVE), "concentration": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, scale, concentration):
        y = value / scale
        return (ops.log(concentration) - ops.log(scale) + ops.xlogy(concentration - 1.0, y)
                - ops.exp(concentration * ops.log(y)))

    @staticmethod
    def in_support(value, scale, concentration):
        return value >= 0

    @classmethod
    def fill_value(cls, value, scale, concentration):
        return scale + ops.full_like(value, 0.0)

    @staticmethod
    def draw(rng, shape, scale, concentration):
        return scale * ops.exp(ops.log(-ops.log(rng.uniform(shape))) / concentration)

    @staticmethod
    def moments(scale, concentration):
        g1 = ops.exp(ops.lgamma(1.0 + 1.0 / concentration))
        g2 = ops.exp(ops.lgamma(1.0 + 2.0 / concentration))
        return scale * g1, scale * scale * (g2 - g1 * g1)


class Geometric(Distribution):
    """Geometric(probs): the number of failures before the first success,
    ``P(k) = (1 - p)^k p`` for ``k = 0, 1, ...`` (torch's convention).

    Example:
        >>> round(Geometric(0.25, value=2.0).item(), 6)  # log(0.75^2 0.25)
        -1.961659
    """

    params = {"probs": Param(UNIT_INTERVAL)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, probs):
        return ops.xlogy(value, 1.0 - probs) + ops.log(probs)

    @staticmethod
    def in_support(value, probs):
        return _is_count(value)

    @staticmethod
    def draw(rng, shape, probs):
        # Inverse CDF: P(K >= k) = (1 - p)^k, so K = floor(log u / log(1 - p)).
        return _floor_nonnegative(ops.log(rng.uniform(shape)) / ops.log1p(-probs))

    @staticmethod
    def moments(probs):
        return (1.0 - probs) / probs, (1.0 - probs) / (probs * probs)


class NegativeBinomial(Distribution):
    """NegativeBinomial(total_count, probs): successes (each of probability ``probs``) before
    ``total_count`` failures, ``C(k + r - 1, k) p^k (1 - p)^r`` (torch's convention).

    Example:
        >>> round(NegativeBinomial(3.0, 0.4, value=2.0).item(), 6)  # scipy.stats.nbinom(3, 0.6)
        -1.573299
    """

    params = {"total_count": Param(POSITIVE), "probs": Param(UNIT_INTERVAL)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, total_count, probs):
        r = total_count
        return (ops.lgamma(value + r) - ops.lgamma(r) - ops.lgamma(value + 1.0)
                + ops.xlogy(value, probs) + r * ops.log1p(-probs))

    @staticmethod
    def in_support(value, total_count, probs):
        return _is_count(value)

    @staticmethod
    def draw(rng, shape, total_count, probs):
        # A Gamma-Poisson mixture: rate ~ Gamma(r, scale p / (1 - p)).
        return rng.poisson(rng.gamma(total_count, shape) * probs / (1.0 - probs), shape)

    @staticmethod
    def moments(total_count, probs):
        mean = total_count * probs / (1.0 - probs)
        return mean, mean / (1.0 - probs)


class OneHotCategorical(Distribution):
    """OneHotCategorical(probs): a Categorical draw as a one-hot vector (``Reals[K]``);
    ``probs`` are nonnegative weights normalized by their sum, as in ``Categorical``.

    Example:
        >>> d = OneHotCategorical(np.array([0.2, 0.8]), value=np.array([0.0, 1.0]))
        >>> round(d.item(), 6)  # log 0.8
        -0.223144
    """

    params = {"probs": Param(PROBS, 1)}
    fields = (*params, "value")

    @classmethod
    def infer_event(cls, shapes):
        return "real", shapes["probs"]

    @staticmethod
    def log_prob(value, probs):
        positive = probs > 0
        logp = ops.log(ops.where(positive, probs, ops.full_like(probs, 1.0)))
        logp = ops.where(positive, logp, ops.full_like(probs, -math.inf))
        logp = logp - ops.log(ops.sum(probs, -1, keepdims=True))
        # The zero entries of a one-hot value take nothing from a zero-probability category.
        return ops.sum(value * ops.where(value > 0, logp, ops.full_like(logp, 0.0)), -1)

    @staticmethod
    def in_support(value, probs):
        binary = ops.all(ops.or_(value == 0, value == 1), -1)
        return ops.and_(binary, ops.sum(value, -1) == 1)

    @staticmethod
    def draw(rng, shape, probs):
        positive = probs > 0
        logits = ops.where(positive, ops.log(ops.where(positive, probs, ops.full_like(probs, 1.0))),
                           ops.full_like(probs, -math.inf))
        index = gumbel_argmax(rng, logits, shape)
        k = ops.new_arange(probs, probs.shape[-1])
        return ops.astype(index[..., None] == k, probs.dtype) + 0.0 * probs

    @staticmethod
    def moments(probs):
        p = probs / ops.sum(probs, -1, keepdims=True)
        return p, p * (1.0 - p)
