"""Continuous families: Normal, LogNormal, MultivariateNormal, Gamma, Beta, Dirichlet,
Exponential, Laplace, StudentT, Uniform, VonMises (and funsor's Nonreparameterized* twins).

Each family is a declaration: its parameters (constraint, event dims, default), the value's
domain, and four pieces of math on broadcast arrays, written once with ``ops`` so that every
backend runs them: ``log_density``, ``in_support``, ``draw`` and ``moments``.

Example:
    >>> d = Gamma(2.0, 3.0, value=0.5)  # scipy.stats.gamma(2, scale=1/3).logpdf(0.5)
    >>> round(d.item(), 6)
    0.004077
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.distribution.base import Distribution, Param
from funsor_core.distribution.constraints import (
    LOWER_CHOLESKY,
    POSITIVE,
    REAL,
    simplex_tolerance,
)
from funsor_core.distribution.fast_normal import fast_normal
from funsor_core.distribution.random import vonmises_draw
from funsor_core.engine.protocol import FunsorMeta

__all__ = ["Normal", "LogNormal", "MultivariateNormal", "Gamma", "Beta", "Dirichlet",
           "Exponential", "Laplace", "StudentT", "Uniform", "VonMises",
           "NonreparameterizedNormal", "NonreparameterizedGamma", "NonreparameterizedBeta",
           "NonreparameterizedDirichlet"]

LOG_2PI = math.log(2.0 * math.pi)


class _NormalMeta(FunsorMeta):
    """Builds the commonest Normals by ``fast_normal`` (the same term, the same checks, no
    generic argument handling), the others as every term is built."""

    def __call__(cls, *args, **kwargs):
        result = fast_normal(cls, args, kwargs)
        return super().__call__(*args, **kwargs) if result is None else result


class Normal(Distribution, metaclass=_NormalMeta):
    """Normal(loc, scale): density ``exp(-(x - loc)^2 / (2 scale^2)) / (scale sqrt(2 pi))``.

    With ``loc`` and ``value`` affine in real variables (and a Tensor ``scale``) it becomes
    a Gaussian funsor plus a Tensor normalizer under ``exact``.

    Example:
        >>> round(Normal(0.0, 2.0, value=1.0).item(), 6)  # scipy.stats.norm(0, 2).logpdf(1)
        -1.737086
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, loc, scale):
        z = (value - loc) / scale
        return -0.5 * z * z - ops.log(scale) - 0.5 * LOG_2PI

    @staticmethod
    def draw(rng, shape, loc, scale):
        return loc + scale * rng.normal(shape)

    @staticmethod
    def moments(loc, scale):
        return loc + 0.0 * scale, scale * scale + 0.0 * loc


class LogNormal(Distribution):
    """LogNormal(loc, scale): ``log(value)`` is Normal(loc, scale).

    Example:
        >>> round(LogNormal(0.0, 1.0, value=1.0).item(), 6)  # scipy.stats.lognorm(1).logpdf(1)
        -0.918939
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 1.0

    @staticmethod
    def log_prob(value, loc, scale):
        y = ops.log(value)
        z = (y - loc) / scale
        return -0.5 * z * z - ops.log(scale) - 0.5 * LOG_2PI - y

    @staticmethod
    def in_support(value, loc, scale):
        return value > 0

    @staticmethod
    def draw(rng, shape, loc, scale):
        return ops.exp(loc + scale * rng.normal(shape))

    @staticmethod
    def moments(loc, scale):
        s2 = scale * scale
        return ops.exp(loc + 0.5 * s2), ops.expm1(s2) * ops.exp(2.0 * loc + s2)


class MultivariateNormal(Distribution):
    """MultivariateNormal(loc, scale_tril): ``value = loc + scale_tril @ z``, ``z`` standard.

    ``scale_tril`` is lower triangular with a positive diagonal (checked). With ``loc`` and
    ``value`` affine in real variables it becomes a Gaussian funsor under ``exact``.

    Example:
        >>> L = np.array([[1.0, 0.0], [0.5, 2.0]])
        >>> round(MultivariateNormal(np.zeros(2), L, value=np.ones(2)).item(), 6)
        -3.062274
    """

    params = {"loc": Param(REAL, 1), "scale_tril": Param(LOWER_CHOLESKY, 2)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def infer_event(cls, shapes):
        (n,), tril = shapes["loc"], shapes["scale_tril"]
        if tril != (n, n):
            raise ValueError(f"MultivariateNormal: scale_tril must be Reals[{n}, {n}] to match "
                             f"loc of size {n}, got shape {tril}")
        return "real", (n,)

    @staticmethod
    def log_prob(value, loc, scale_tril):
        diff = value - loc
        z = ops.triangular_solve(diff[..., None], scale_tril)[..., 0]
        half_log_det = ops.sum(ops.log(ops.diagonal(scale_tril)), -1)
        n = loc.shape[-1]
        return -0.5 * ops.sum(z * z, -1) - half_log_det - 0.5 * n * LOG_2PI

    @staticmethod
    def draw(rng, shape, loc, scale_tril):
        n = loc.shape[-1]
        eps = rng.normal(tuple(shape) + (n,))
        return loc + ops.matmul(scale_tril, eps[..., None])[..., 0]

    @staticmethod
    def moments(loc, scale_tril):
        var = ops.sum(scale_tril * scale_tril, -1)
        return loc + 0.0 * var, var + 0.0 * loc


class Gamma(Distribution):
    """Gamma(concentration, rate): density ``rate^a x^(a - 1) e^(-rate x) / Gamma(a)``.

    Example:
        >>> Gamma(2.0, 4.0).mean().data
        array(0.5)
    """

    params = {"concentration": Param(POSITIVE), "rate": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 1.0

    @staticmethod
    def log_prob(value, concentration, rate):
        a = concentration
        return ops.xlogy(a - 1.0, value) + a * ops.log(rate) - rate * value - ops.lgamma(a)

    @staticmethod
    def in_support(value, concentration, rate):
        return value >= 0

    @staticmethod
    def draw(rng, shape, concentration, rate):
        return rng.gamma(concentration, shape) / rate

    @staticmethod
    def moments(concentration, rate):
        return concentration / rate, concentration / (rate * rate)


class Beta(Distribution):
    """Beta(concentration1, concentration0): density ``x^(c1 - 1) (1 - x)^(c0 - 1) / B(c1, c0)``.

    Example:
        >>> round(Beta(2.0, 3.0, value=0.25).item(), 6)  # scipy.stats.beta(2, 3).logpdf(.25)
        0.523248
    """

    params = {"concentration1": Param(POSITIVE), "concentration0": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 0.5

    @staticmethod
    def log_prob(value, concentration1, concentration0):
        a, b = concentration1, concentration0
        # -1.0 * value, not -value: a bool value (an observed coin) has no negation.
        return ops.xlogy(a - 1.0, value) + ops.xlog1py(b - 1.0, -1.0 * value) - ops.betaln(a, b)

    @staticmethod
    def in_support(value, concentration1, concentration0):
        return ops.and_(value >= 0, value <= 1)

    @staticmethod
    def draw(rng, shape, concentration1, concentration0):
        x, y = rng.gamma(concentration1, shape), rng.gamma(concentration0, shape)
        return x / ops.clamp(x + y, min=1e-38)

    @staticmethod
    def moments(concentration1, concentration0):
        a, b = concentration1, concentration0
        total = a + b
        return a / total, a * b / (total * total * (total + 1.0))


class Dirichlet(Distribution):
    """Dirichlet(concentration): a density over the probability vectors of size ``k``.

    Values off the simplex (beyond rounding) have density 0 (log density -inf).

    Example:
        >>> round(Dirichlet(np.ones(3), value=np.ones(3) / 3).item(), 6)  # log Gamma(3)
        0.693147
    """

    params = {"concentration": Param(POSITIVE, 1)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def infer_event(cls, shapes):
        return "real", shapes["concentration"]

    @classmethod
    def fill_value(cls, value, **params):
        return ops.full_like(value, 1.0 / value.shape[-1])

    @staticmethod
    def log_prob(value, concentration):
        a = concentration
        return (ops.sum(ops.xlogy(a - 1.0, value), -1) + ops.lgamma(ops.sum(a, -1))
                - ops.sum(ops.lgamma(a), -1))

    @staticmethod
    def in_support(value, concentration):
        ok = ops.all(value >= 0, -1)
        return ops.and_(ok, ops.abs(ops.sum(value, -1) - 1.0) <= simplex_tolerance(value))

    @staticmethod
    def draw(rng, shape, concentration):
        g = rng.gamma(concentration, tuple(shape) + tuple(concentration.shape[-1:]))
        return g / ops.clamp(ops.sum(g, -1, keepdims=True), min=1e-38)

    @staticmethod
    def moments(concentration):
        total = ops.sum(concentration, -1, keepdims=True)
        mean = concentration / total
        return mean, mean * (1.0 - mean) / (total + 1.0)


class Exponential(Distribution):
    """Exponential(rate): density ``rate e^(-rate x)`` on ``x >= 0``.

    Example:
        >>> round(Exponential(2.0, value=1.0).item(), 6)  # log 2 - 2
        -1.306853
    """

    params = {"rate": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, rate):
        return ops.log(rate) - rate * value

    @staticmethod
    def in_support(value, rate):
        return value >= 0

    @staticmethod
    def draw(rng, shape, rate):
        return -ops.log(rng.uniform(shape)) / rate

    @staticmethod
    def moments(rate):
        return 1.0 / rate, 1.0 / (rate * rate)


class Laplace(Distribution):
    """Laplace(loc, scale): density ``exp(-|x - loc| / scale) / (2 scale)``.

    Example:
        >>> round(Laplace(0.0, 1.0, value=1.0).item(), 6)  # -log 2 - 1
        -1.693147
    """

    params = {"loc": Param(REAL), "scale": Param(POSITIVE)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, loc, scale):
        return -ops.log(2.0 * scale) - ops.abs(value - loc) / scale

    @staticmethod
    def draw(rng, shape, loc, scale):
        # Inverse CDF: u uniform on (-1/2, 1/2), x = loc - scale sign(u) log(1 - 2|u|).
        u = rng.uniform(shape) - 0.5
        a = ops.clamp(1.0 - 2.0 * ops.abs(u), min=1e-38)
        sign = ops.where(u < 0, ops.full_like(u, -1.0), ops.full_like(u, 1.0))
        return loc - scale * sign * ops.log(a)

    @staticmethod
    def moments(loc, scale):
        return loc + 0.0 * scale, 2.0 * scale * scale + 0.0 * loc


class StudentT(Distribution):
    """StudentT(df, loc=0, scale=1): Student's t with ``df`` degrees of freedom.

    Example:
        >>> round(StudentT(3.0, value=0.5).item(), 6)  # scipy.stats.t(3).logpdf(0.5)
        -1.160974
    """

    params = {"df": Param(POSITIVE), "loc": Param(REAL, default=0.0),
              "scale": Param(POSITIVE, default=1.0)}
    fields = (*params, "value")
    reparameterized = True

    @staticmethod
    def log_prob(value, df, loc, scale):
        z = (value - loc) / scale
        infinite = df == math.inf  # a traced array under jax.jit, even for a constant df
        if isinstance(infinite, bool) or ops.is_concrete(infinite):
            if not bool(infinite if isinstance(infinite, bool) else infinite.any()):
                return (ops.lgamma(0.5 * (df + 1.0)) - ops.lgamma(0.5 * df)
                        - 0.5 * ops.log(df * math.pi) - ops.log(scale)
                        - 0.5 * (df + 1.0) * ops.log1p(z * z / df))  # finite df (eager)
        # df = inf is the Normal limit (the t formula reads inf - inf there); the t formula
        # runs on df = 1 in those entries so that neither branch of the where is NaN (which
        # would poison gradients).
        finite = ops.ne(df, math.inf)
        d = ops.where(finite, df, ops.full_like(df, 1.0))
        t = (ops.lgamma(0.5 * (d + 1.0)) - ops.lgamma(0.5 * d) - 0.5 * ops.log(d * math.pi)
             - 0.5 * (d + 1.0) * ops.log1p(z * z / d))
        return ops.where(finite, t, -0.5 * (z * z + LOG_2PI)) - ops.log(scale)

    @staticmethod
    def draw(rng, shape, df, loc, scale):
        # z sqrt(df / chi2), chi2 = 2 Gamma(df / 2): reparameterized through the gamma draw.
        chi2 = 2.0 * rng.gamma(0.5 * df, shape)
        return loc + scale * rng.normal(shape) * ops.sqrt(df / chi2)

    @staticmethod
    def moments(df, loc, scale):
        nan = ops.full_like(df + loc + scale, math.nan)
        mean = ops.where(df > 1, loc + 0.0 * df + 0.0 * scale, nan)
        var = ops.where(df > 2, scale * scale * df / (df - 2.0) + 0.0 * loc,
                        ops.where(df > 1, ops.full_like(nan, math.inf), nan))
        return mean, var


class Uniform(Distribution):
    """Uniform(low, high): density ``1 / (high - low)`` on ``[low, high]`` (``low < high``).

    Example:
        >>> round(Uniform(0.0, 4.0, value=1.0).item(), 6)
        -1.386294
    """

    params = {"low": Param(REAL), "high": Param(REAL)}
    fields = (*params, "value")
    reparameterized = True
    relations = (("high", "greater than low", lambda low, high: high > low),)

    @classmethod
    def fill_value(cls, value, low, high):
        # full_like, not 0 * value: an out-of-support value of +-inf must not make the fill NaN.
        return 0.5 * (low + high) + ops.full_like(value, 0.0)

    @staticmethod
    def log_prob(value, low, high):
        return -ops.log(high - low) + 0.0 * value

    @staticmethod
    def in_support(value, low, high):
        return ops.and_(value >= low, value <= high)

    @staticmethod
    def draw(rng, shape, low, high):
        return low + (high - low) * rng.uniform(shape)

    @staticmethod
    def moments(low, high):
        width = high - low
        return 0.5 * (low + high), width * width / 12.0


class VonMises(Distribution):
    """VonMises(loc, concentration): density ``exp(k cos(x - loc)) / (2 pi I_0(k))`` on angles.

    The density is periodic in ``value`` (any real angle is accepted). Samples lie in
    ``[-pi, pi)``; they are not reparameterized (torch's is not either).

    Example:
        >>> round(VonMises(0.0, 2.0, value=0.5).item(), 6)  # scipy.stats.vonmises(2).logpdf(.5)
        -0.906705
    """

    params = {"loc": Param(REAL), "concentration": Param(POSITIVE)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, loc, concentration):
        k = concentration
        # log I_0(k) = log(i0e(k)) + k: no overflow for large concentrations.
        return k * (ops.cos(value - loc) - 1.0) - LOG_2PI - ops.log(ops.i0e(k))

    @staticmethod
    def draw(rng, shape, loc, concentration):
        return vonmises_draw(rng, loc, concentration, shape)


# funsor's non-reparameterized twins: the same densities, samples without pathwise gradients
# (a DiCE factor carries the score-function gradient instead).
class NonreparameterizedNormal(Normal):
    """Normal whose samples carry no pathwise gradient (funsor's name).

    Example:
        >>> from funsor_core.distribution import Normal, NonreparameterizedNormal
        >>> d = NonreparameterizedNormal(0.0, 1.0, value=0.5)
        >>> float(d) == float(Normal(0.0, 1.0, value=0.5))
        True
    """

    params = Normal.params
    fields = Normal.fields
    reparameterized = False


class NonreparameterizedGamma(Gamma):
    """Gamma whose samples carry no pathwise gradient (funsor's name).

    Example:
        >>> from funsor_core.distribution import Gamma, NonreparameterizedGamma
        >>> float(NonreparameterizedGamma(2.0, 1.0, value=0.5)) == float(Gamma(2.0, 1.0, value=0.5))
        True
    """

    params = Gamma.params
    fields = Gamma.fields
    reparameterized = False


class NonreparameterizedBeta(Beta):
    """Beta whose samples carry no pathwise gradient (funsor's name).

    Example:
        >>> from funsor_core.distribution import Beta, NonreparameterizedBeta
        >>> float(NonreparameterizedBeta(2.0, 1.0, value=0.5)) == float(Beta(2.0, 1.0, value=0.5))
        True
    """

    params = Beta.params
    fields = Beta.fields
    reparameterized = False


class NonreparameterizedDirichlet(Dirichlet):
    """Dirichlet whose samples carry no pathwise gradient (funsor's name).

    Example:
        >>> from funsor_core.distribution import Dirichlet, NonreparameterizedDirichlet
        >>> c, v = fc.Tensor(np.ones(3)), fc.Tensor(np.array([0.2, 0.3, 0.5]))
        >>> float(NonreparameterizedDirichlet(c, value=v)) == float(Dirichlet(c, value=v))
        True
    """

    params = Dirichlet.params
    fields = Dirichlet.fields
    reparameterized = False
