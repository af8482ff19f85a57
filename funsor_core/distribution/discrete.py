"""Discrete families: Categorical, Bernoulli, Binomial, Multinomial, Poisson and the compound
families of conjugate pairs (DirichletMultinomial, BetaBinomial, GammaPoisson); and Delta.

Counts (Binomial, Multinomial, Poisson, ...) have real values, as in funsor and pyro; a value
that is not a count in the support (negative, fractional, above ``total_count``, not summing
to it) has log density -inf. A Categorical's value is ``Bint[n]``.

Example:
    >>> round(Binomial(10.0, 0.3, value=4.0).item(), 6)  # scipy.stats.binom(10, .3).logpmf(4)
    -1.608833
"""

from __future__ import annotations

import math
import numbers

from funsor_core import ops
from funsor_core.atoms.delta import delta_log_indicator
from funsor_core.distribution.array_math import take_last
from funsor_core.distribution.base import Distribution, Param
from funsor_core.distribution.constraints import (
    NONNEGATIVE,
    NONNEGATIVE_INTEGER,
    POSITIVE,
    PROBS,
    REAL,
    UNIT_INTERVAL,
)
from funsor_core.distribution.continuous import Beta, Dirichlet, Gamma
from funsor_core.distribution.random import gumbel_argmax
from funsor_core.terms import Number

__all__ = ["Categorical", "CategoricalLogits", "Bernoulli", "BernoulliProbs",
           "BernoulliLogits", "Binomial", "Multinomial", "Poisson", "DirichletMultinomial",
           "BetaBinomial", "GammaPoisson", "Delta", "lchoose"]


def lchoose(n, k):
    """log of the binomial coefficient ``n choose k`` (real ``n``, ``k``).

    Example:
        >>> round(float(lchoose(np.array(5.0), np.array(2.0))), 6)  # log 10
        2.302585
    """
    return ops.lgamma(n + 1.0) - ops.lgamma(k + 1.0) - ops.lgamma(n - k + 1.0)


def _is_count(x):
    # x >= 0, finite and x mod 1 == 0: exact in every float dtype, with no cast to int, which
    # would overflow (1e20 is a count; jax without x64 casts to int32) and warn on inf/NaN;
    # the finite mask keeps inf out of ``mod``, which would warn too.
    finite = ops.isfinite(x)
    safe = ops.where(finite, x, 0.5)
    return finite & (safe >= 0) & (ops.mod(safe, 1.0) == 0)


def _integer_value(cls, args: tuple, kwargs: dict) -> tuple:
    """``(args, kwargs)`` with a non-integer number given as a ``Bint[n]`` value replaced by
    -1: outside the support, so the log density is -inf (as Bernoulli's is at 0.5), where a
    cast to int would silently truncate 1.7 to 1. A number is concrete, also under jit."""
    if len(args) == len(cls.fields):
        value, args = args[-1], args[:-1]
        return (*args, _integer_or_outside(value)), kwargs
    if "value" in kwargs:
        kwargs = {**kwargs, "value": _integer_or_outside(kwargs["value"])}
    return args, kwargs


def _integer_or_outside(value):
    data = value.data if isinstance(value, Number) and value.dtype == "real" else value
    if isinstance(data, numbers.Real) and not isinstance(data, numbers.Integral):
        return value if float(data).is_integer() else -1
    return value


def _safe_log(p):
    # log p, -inf where p == 0, with a zero (not NaN) gradient there. With every entry
    # positive (known only for a concrete array) that is the plain log: one pass, not six.
    if ops.known_true(p, lambda a: ops.amin(a) > 0):
        return ops.log(p)
    positive = p > 0
    return ops.where(positive, ops.log(ops.where(positive, p, ops.full_like(p, 1.0))),
                     ops.full_like(p, -math.inf))


def _categorical_moments(p):
    k = ops.astype(ops.new_arange(p, 0, p.shape[-1], 1), "real")
    mean = ops.sum(p * k, -1)
    return mean, ops.sum(p * k * k, -1) - mean * mean


class Categorical(Distribution):
    """Categorical(probs): value ``k`` in ``Bint[n]`` with probability ``probs[k]``.

    ``probs`` are nonnegative weights with a positive sum, normalized as torch's, pyro's and
    numpyro's ``Categorical(probs=...)`` normalize them (negative, infinite or all-zero
    weights raise, naming the entry).

    Example:
        >>> Categorical(np.array([0.25, 0.75])).inputs
        {'value': Bint[2]}
        >>> round(float(Categorical(np.array([1.0, 3.0]), value=1).data), 6)  # log(3/4)
        -0.287682
    """

    params = {"probs": Param(PROBS, 1)}
    fields = (*params, "value")
    has_enumerate_support = True

    @classmethod
    def infer_event(cls, shapes):
        return shapes["probs"][0], ()

    @classmethod
    def _prepare(cls, *args, **kwargs):
        args, kwargs = _integer_value(cls, args, kwargs)
        return super()._prepare(*args, **kwargs)

    @staticmethod
    def log_table(probs):
        """``log p(k)`` for every ``k`` along the last dim: the normalized log of ``probs``.

        Example:
            >>> np.round(Categorical.log_table(np.array([1.0, 3.0])), 6)  # log(1/4), log(3/4)
            array([-1.386294, -0.287682])
        """
        return _safe_log(probs) - ops.log(ops.sum(probs, -1, keepdims=True))

    @staticmethod
    def log_prob(value, probs):
        return take_last(Categorical.log_table(probs), value)

    @staticmethod
    def in_support(value, probs):
        return ops.and_(value >= 0, value < probs.shape[-1])

    @staticmethod
    def draw(rng, shape, probs):
        return gumbel_argmax(rng, _safe_log(probs), shape)

    @staticmethod
    def moments(probs):
        return _categorical_moments(probs / ops.sum(probs, -1, keepdims=True))


class CategoricalLogits(Distribution):
    """Categorical with unnormalized log probabilities ``logits`` (funsor's name).

    Example:
        >>> round(CategoricalLogits(np.zeros(4), value=2).item(), 6)  # log(1/4)
        -1.386294
    """

    params = {"logits": Param(REAL, 1)}
    fields = (*params, "value")
    has_enumerate_support = True

    @classmethod
    def infer_event(cls, shapes):
        return shapes["logits"][0], ()

    @classmethod
    def _prepare(cls, *args, **kwargs):
        args, kwargs = _integer_value(cls, args, kwargs)
        return super()._prepare(*args, **kwargs)

    @staticmethod
    def log_table(logits):
        """``log p(k)`` for every ``k`` along the last dim: ``logits`` log-normalized.

        Example:
            >>> np.round(CategoricalLogits.log_table(np.zeros(2)), 6)
            array([-0.693147, -0.693147])
        """
        return _log_softmax(logits)

    @staticmethod
    def log_prob(value, logits):
        return take_last(_log_softmax(logits), value)

    @staticmethod
    def in_support(value, logits):
        return ops.and_(value >= 0, value < logits.shape[-1])

    @staticmethod
    def draw(rng, shape, logits):
        return gumbel_argmax(rng, _log_softmax(logits), shape)

    @staticmethod
    def moments(logits):
        return _categorical_moments(ops.exp(_log_softmax(logits)))


def _log_softmax(logits):
    """``logits - logsumexp(logits)``, where a row with ``+inf`` logits takes the limit: all
    mass on them, split equally (``-log k``; IEEE's ``inf - inf`` is NaN, as in torch).
    Eagerly only such rows pay for it; under ``jax.jit`` the ``where`` always runs."""
    norm = ops.logsumexp(logits, -1, keepdims=True)
    if ops.is_concrete(norm) and not bool((norm == math.inf).any()):
        return ops.sub(logits, norm)
    out = ops.sub(logits, ops.where(ops.eq(norm, math.inf), ops.full_like(norm, 0.0), norm))
    top = ops.eq(logits, math.inf)
    count = ops.sum(ops.where(top, ops.full_like(logits, 1.0), ops.full_like(logits, 0.0)),
                    -1, keepdims=True)
    share = ops.neg(ops.log(ops.where(ops.gt(count, 0.0), count, ops.full_like(count, 1.0))))
    limit = ops.where(top, share, ops.full_like(logits, -math.inf))
    return ops.where(ops.eq(norm, math.inf), limit, out)


class BernoulliProbs(Distribution):
    """Bernoulli(probs): value 1.0 with probability ``probs``, else 0.0 (funsor's name).

    Example:
        >>> round(BernoulliProbs(0.25, value=1.0).item(), 6)
        -1.386294
    """

    params = {"probs": Param(UNIT_INTERVAL)}
    fields = (*params, "value")
    has_enumerate_support = True

    @staticmethod
    def log_prob(value, probs):
        return ops.xlogy(value, probs) + ops.xlog1py(1.0 - value, -probs)

    @staticmethod
    def in_support(value, probs):
        return ops.or_(value == 0, value == 1)

    @staticmethod
    def draw(rng, shape, probs):
        u = rng.uniform(shape)
        return ops.where(u < probs, ops.full_like(u, 1.0), ops.full_like(u, 0.0))

    @staticmethod
    def moments(probs):
        return probs, probs * (1.0 - probs)


class BernoulliLogits(Distribution):
    """Bernoulli with log odds ``logits``: ``P(1) = sigmoid(logits)`` (funsor's name).

    Example:
        >>> round(BernoulliLogits(0.0, value=1.0).item(), 6)
        -0.693147
    """

    params = {"logits": Param(REAL)}
    fields = (*params, "value")
    has_enumerate_support = True

    @staticmethod
    def log_prob(value, logits):
        # log sigmoid(+-logits) = -log(1 + exp(-+logits)) for value 1 / 0 (in_support has
        # masked the rest): one softplus, and exact at logits = +-inf (probs 1 or 0), where
        # value * logits - softplus(logits) would be inf - inf = NaN. (A 0 array, not 0.0:
        # logaddexp(0.0, -inf) takes the unit shortcut and returns a float, not an array.)
        z = (1.0 - 2.0 * value) * logits
        return -ops.logaddexp(ops.full_like(z, 0.0), z)

    @staticmethod
    def in_support(value, logits):
        return ops.or_(value == 0, value == 1)

    @staticmethod
    def draw(rng, shape, logits):
        u = rng.uniform(shape)
        return ops.where(u < ops.sigmoid(logits), ops.full_like(u, 1.0), ops.full_like(u, 0.0))

    @staticmethod
    def moments(logits):
        p = ops.sigmoid(logits)
        return p, p * (1.0 - p)


def Bernoulli(probs=None, logits=None, value="value"):  # noqa: N802  (funsor's name)
    """Bernoulli by ``probs`` or by ``logits``: a ``BernoulliProbs`` or ``BernoulliLogits``.

    Example:
        >>> type(Bernoulli(logits=0.0)).__name__
        'BernoulliLogits'
    """
    if (probs is None) == (logits is None):
        raise ValueError("Bernoulli takes exactly one of probs= and logits=")
    if probs is not None:
        return BernoulliProbs(probs, value)
    return BernoulliLogits(logits, value)


class Binomial(Distribution):
    """Binomial(total_count=1, probs): successes in ``total_count`` trials.

    Example:
        >>> Binomial(10.0, 0.3).mean().data
        array(3.)
    """

    params = {"total_count": Param(NONNEGATIVE_INTEGER, default=1.0),
              "probs": Param(UNIT_INTERVAL)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, total_count, probs):
        n, k = total_count, value
        return lchoose(n, k) + ops.xlogy(k, probs) + ops.xlog1py(n - k, -probs)

    @staticmethod
    def in_support(value, total_count, probs):
        return ops.and_(_is_count(value), value <= total_count)

    @staticmethod
    def draw(rng, shape, total_count, probs):
        return rng.binomial(total_count, probs, shape)

    @staticmethod
    def moments(total_count, probs):
        mean = total_count * probs
        return mean, mean * (1.0 - probs)


def _multinomial_draw(rng, shape, total_count, probs):
    # Conditional binomials: x_j ~ Binomial(n - sum_{i<j} x_i, p_j / (1 - sum_{i<j} p_i)).
    p = probs / ops.sum(probs, -1, keepdims=True)
    k = p.shape[-1]
    remaining = ops.expand(total_count + 0.0 * p[..., 0], tuple(shape))
    mass = ops.full_like(remaining, 1.0)
    parts = []
    for j in range(k - 1):
        pj = p[..., j]
        q = ops.clamp(pj / ops.clamp(mass, min=1e-38), min=0.0, max=1.0)
        x = rng.binomial(remaining, q, shape)
        parts.append(x)
        remaining = remaining - x
        mass = mass - pj
    parts.append(remaining)
    return ops.stack(parts, -1)


def _multinomial_support(value, total_count):
    ok = ops.all(_is_count(value), -1)
    return ops.and_(ok, ops.sum(value, -1) == total_count)


class Multinomial(Distribution):
    """Multinomial(total_count=1, probs): counts of ``total_count`` categorical draws.

    Example:
        >>> round(Multinomial(3.0, np.array([0.5, 0.5]), value=np.array([1.0, 2.0])).item(), 6)
        -0.980829
    """

    params = {"total_count": Param(NONNEGATIVE_INTEGER, default=1.0),
              "probs": Param(PROBS, 1)}
    fields = (*params, "value")

    @classmethod
    def infer_event(cls, shapes):
        return "real", shapes["probs"]

    @staticmethod
    def log_prob(value, total_count, probs):
        logp = _safe_log(probs) - ops.log(ops.sum(probs, -1, keepdims=True))
        # A zero count of a zero-probability category contributes 0, not 0 * -inf.
        terms = value * ops.where(value > 0, logp, ops.full_like(logp, 0.0))
        return (ops.lgamma(total_count + 1.0) - ops.sum(ops.lgamma(value + 1.0), -1)
                + ops.sum(terms, -1))

    @staticmethod
    def in_support(value, total_count, probs):
        return _multinomial_support(value, total_count)

    @staticmethod
    def draw(rng, shape, total_count, probs):
        return _multinomial_draw(rng, shape, total_count, probs)

    @staticmethod
    def moments(total_count, probs):
        p = probs / ops.sum(probs, -1, keepdims=True)
        mean = total_count[..., None] * p
        return mean, mean * (1.0 - p)


class Poisson(Distribution):
    """Poisson(rate): counts with mean ``rate``.

    Example:
        >>> round(Poisson(2.0, value=3.0).item(), 6)  # scipy.stats.poisson(2).logpmf(3)
        -1.712318
    """

    params = {"rate": Param(NONNEGATIVE)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, rate):
        return ops.xlogy(value, rate) - rate - ops.lgamma(value + 1.0)

    @staticmethod
    def in_support(value, rate):
        return _is_count(value)

    @staticmethod
    def draw(rng, shape, rate):
        return rng.poisson(rate, shape)

    @staticmethod
    def moments(rate):
        return rate, rate


class DirichletMultinomial(Distribution):
    """DirichletMultinomial(concentration, total_count=1): Multinomial counts whose probs are
    Dirichlet(concentration), integrated out: the marginal of the Dirichlet-Multinomial pair.

    Example:
        >>> d = DirichletMultinomial(np.ones(2), 1.0, value=np.array([0.0, 1.0]))
        >>> round(d.item(), 6)  # log(1/2)
        -0.693147
    """

    params = {"concentration": Param(POSITIVE, 1),
              "total_count": Param(NONNEGATIVE_INTEGER, default=1.0)}
    fields = (*params, "value")

    @classmethod
    def infer_event(cls, shapes):
        return "real", shapes["concentration"]

    @staticmethod
    def log_prob(value, concentration, total_count):
        a, n = concentration, total_count
        a0 = ops.sum(a, -1)
        return (ops.lgamma(a0) + ops.lgamma(n + 1.0) - ops.lgamma(n + a0)
                + ops.sum(ops.lgamma(value + a) - ops.lgamma(a) - ops.lgamma(value + 1.0), -1))

    @staticmethod
    def in_support(value, concentration, total_count):
        return _multinomial_support(value, total_count)

    @staticmethod
    def draw(rng, shape, concentration, total_count):
        probs = Dirichlet.draw(rng, shape, concentration)
        return _multinomial_draw(rng, shape, total_count, probs)

    @staticmethod
    def moments(concentration, total_count):
        a0 = ops.sum(concentration, -1, keepdims=True)
        n = total_count[..., None]
        p = concentration / a0
        return n * p, n * p * (1.0 - p) * (n + a0) / (1.0 + a0)


class BetaBinomial(Distribution):
    """BetaBinomial(concentration1, concentration0, total_count=1): Binomial counts whose probs
    are Beta(concentration1, concentration0), integrated out.

    Example:
        >>> round(BetaBinomial(1.0, 1.0, 4.0, value=2.0).item(), 6)  # uniform on 0..4
        -1.609438
    """

    params = {"concentration1": Param(POSITIVE), "concentration0": Param(POSITIVE),
              "total_count": Param(NONNEGATIVE_INTEGER, default=1.0)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, concentration1, concentration0, total_count):
        # B(k + a, n - k + b) / B(a, b) by ops.betaln: NumPyro's and Pyro's BetaBinomial in
        # the same order and kernels, so a collapsed Beta-Binomial rounds (and its gradient
        # steps an optimizer) exactly as their hand-written density does.
        a, b, n, k = concentration1, concentration0, total_count, value
        return lchoose(n, k) + ops.betaln(k + a, n - k + b) - ops.betaln(a, b)

    @staticmethod
    def in_support(value, concentration1, concentration0, total_count):
        return ops.and_(_is_count(value), value <= total_count)

    @staticmethod
    def draw(rng, shape, concentration1, concentration0, total_count):
        probs = Beta.draw(rng, shape, concentration1, concentration0)
        return rng.binomial(total_count, probs, shape)

    @staticmethod
    def moments(concentration1, concentration0, total_count):
        a, b, n = concentration1, concentration0, total_count
        s = a + b
        return n * a / s, n * a * b * (s + n) / (s * s * (s + 1.0))


class GammaPoisson(Distribution):
    """GammaPoisson(concentration, rate): Poisson counts whose rate is Gamma(concentration,
    rate), integrated out (a negative binomial).

    Example:
        >>> round(GammaPoisson(1.0, 1.0, value=0.0).item(), 6)  # log(1/2)
        -0.693147
    """

    params = {"concentration": Param(POSITIVE), "rate": Param(POSITIVE)}
    fields = (*params, "value")

    @staticmethod
    def log_prob(value, concentration, rate):
        a, b, k = concentration, rate, value
        return (ops.lgamma(k + a) - ops.lgamma(a) - ops.lgamma(k + 1.0) + a * ops.log(b)
                - (a + k) * ops.log1p(b))

    @staticmethod
    def in_support(value, concentration, rate):
        return _is_count(value)

    @staticmethod
    def draw(rng, shape, concentration, rate):
        return rng.poisson(Gamma.draw(rng, shape, concentration, rate), shape)

    @staticmethod
    def moments(concentration, rate):
        mean = concentration / rate
        return mean, mean * (1.0 + rate) / rate


class Delta(Distribution):
    """Delta(v, log_density=0): a point mass at ``v`` (of any real shape) with mass
    ``exp(log_density)``: the log density is ``log_density`` where ``value == v``, else -inf.

    With a Variable value it becomes the ``Delta`` atom under ``exact`` (funsor's rule).

    Example:
        >>> Delta(fc.Tensor(np.array(1.0)), 0.5, value=1.0).item()
        0.5
    """

    params = {"v": Param(REAL, None), "log_density": Param(REAL, default=0.0)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def infer_event(cls, shapes):
        return "real", shapes["v"]

    @classmethod
    def eager_log_density(cls, v, log_density, value):
        # log_density where value == v in every event entry, -inf elsewhere: the atom's math.
        return delta_log_indicator(value, v, log_density)

    @staticmethod
    def log_prob(value, v, log_density):  # only for sampling's DiCE factor, never needed
        raise NotImplementedError("Delta's samples are its point: no density is drawn")

    @staticmethod
    def draw(rng, shape, v, log_density):
        return ops.expand(v, tuple(shape) + tuple(v.shape[len(shape):]))

    @staticmethod
    def moments(v, log_density):
        return v, 0.0 * v
