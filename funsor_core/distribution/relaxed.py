"""Families on the unit interval and the low-rank Gaussian that funsor 0.4.8 also serves:
ContinuousBernoulli, RelaxedBernoulli and LowRankMultivariateNormal. Parameters are named and
ordered as funsor's ``funsor.torch.distributions`` declares them (``logits``, not ``probs``);
all three draw reparameterized samples.

Example:
    >>> round(ContinuousBernoulli(0.0, value=0.2).item(), 6)  # log C(1/2) + log(1/2) = 0
    0.0
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.distribution.base import Distribution, Param
from funsor_core.distribution.constraints import POSITIVE, REAL

__all__ = ["ContinuousBernoulli", "RelaxedBernoulli", "LowRankMultivariateNormal"]

_LOG_2 = math.log(2.0)
_LOG_2PI = math.log(2.0 * math.pi)
# Below this |1 - 2 probs| the Continuous Bernoulli's closed forms divide two small numbers;
# there their Taylor series in t = 1 - 2 probs (truncation error < 1e-13) replace them.
_TAYLOR_T = 0.05


def _series(t2, coefficients):
    # sum_k c_k t^(2k) by Horner's rule in t^2 = t2, for k = 0, 1, ...
    out = 0.0 * t2 + coefficients[-1]
    for c in reversed(coefficients[:-1]):
        out = out * t2 + c
    return out


def _half_t(logits):
    # t = 1 - 2p = -tanh(logits / 2) (no cancellation near p = 1/2), whether |t| is small, and
    # a t safe to divide by.
    t = -ops.tanh(0.5 * logits)
    small = ops.abs(t) < _TAYLOR_T
    return t, small, ops.where(small, ops.full_like(t, 1.0), t)


def _cb_log_normalizer(logits):
    # log C(p), C = 2 atanh(t) / t with t = 1 - 2p, and 2 atanh(t) = -logits.
    # Near t = 0 the series log 2 + t^2/3 + 13 t^4/90 + 251 t^6/2835 + 3551 t^8/56700.
    t, small, safe = _half_t(logits)
    safe_logits = ops.where(small, ops.full_like(logits, 1.0), logits)
    direct = ops.log(ops.abs(safe_logits)) - ops.log(ops.abs(safe))
    taylor = _LOG_2 + t * t * _series(t * t, (1 / 3, 13 / 90, 251 / 2835, 3551 / 56700))
    return ops.where(small, taylor, direct)


def _softplus(x):
    # log(1 + e^x) without overflow, x + log1p(e^-x) for x > 0; each branch clamped so the
    # other's exp stays finite, and the gradient at 0 is sigmoid(0) = 1/2 (not |x|'s kink).
    return ops.where(x > 0, x + ops.log1p(ops.exp(-ops.clamp(x, min=0.0))),
                     ops.log1p(ops.exp(ops.clamp(x, max=0.0))))


def _unit_clamp(x):
    # Keep a sigmoid's value strictly inside (0, 1) in its float precision, as torch does.
    eps = 2.0 ** -23 if getattr(x.dtype, "itemsize", 8) <= 4 else 2.0 ** -52
    return ops.clamp(x, min=eps, max=1.0 - eps)


class ContinuousBernoulli(Distribution):
    """ContinuousBernoulli(logits): density ``C(p) p^x (1 - p)^(1 - x)`` on ``[0, 1]`` with
    ``p = sigmoid(logits)`` (funsor's parameter) and normalizer
    ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)``, ``C(1/2) = 2`` (Loaiza-Ganem and Cunningham,
    2019). Near ``p = 1/2`` the normalizer and the moments use their Taylor series.

    Example:
        >>> round(ContinuousBernoulli(0.0, value=0.9).item(), 6)  # log(2 * 0.5)
        0.0
    """

    params = {"logits": Param(REAL)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 0.5

    @staticmethod
    def log_prob(value, logits):
        # x log p + (1 - x) log(1 - p) = x logits + log(1 - p) = x logits - softplus(logits).
        return value * logits - _softplus(logits) + _cb_log_normalizer(logits)

    @staticmethod
    def in_support(value, logits):
        return ops.and_(value >= 0, value <= 1)

    @staticmethod
    def draw(rng, shape, logits):
        # Inverse CDF: F(x) = (1 - p) ((p / (1 - p))^x - 1) / (1 - 2p), so with t = 1 - 2p,
        # x = log1p(-u t / (1 - p)) / logits; near t = 0 its series u - t u (1 - u) + ...
        u = rng.uniform(shape)
        t, _, safe = _half_t(logits)
        tiny = ops.abs(t) < 1e-3
        safe_logits = ops.where(tiny, ops.full_like(logits, 1.0), logits)
        direct = ops.log1p(-u * t / ops.sigmoid(-logits)) / safe_logits
        near = u - t * u * (1.0 - u) + (2.0 / 3.0) * t * t * u * (1.0 - u) * (1.0 - 2.0 * u)
        return ops.where(tiny, near, direct)

    @staticmethod
    def moments(logits):
        # mean = p / (2p - 1) + 1 / (log(1 - p) - log p), var = p (p - 1) / (1 - 2p)^2 +
        # 1 / logits^2, in t: -(1 - t) / 2t - 1 / logits and -(1 - t^2) / 4t^2 + 1 / logits^2.
        t, small, safe = _half_t(logits)
        safe_logits = ops.where(small, ops.full_like(logits, 1.0), logits)
        mean = -(1.0 - safe) / (2.0 * safe) - 1.0 / safe_logits
        var = -(1.0 - safe * safe) / (4.0 * safe * safe) + 1.0 / (safe_logits * safe_logits)
        t2 = t * t
        mean_taylor = 0.5 - t * _series(t2, (1 / 6, 2 / 45, 22 / 945, 214 / 14175))
        var_taylor = _series(t2, (1 / 12, -1 / 60, -8 / 945, -76 / 14175))
        return ops.where(small, mean_taylor, mean), ops.where(small, var_taylor, var)


class RelaxedBernoulli(Distribution):
    """RelaxedBernoulli(temperature, logits): the binary Concrete distribution on ``(0, 1)``,
    ``sigmoid((logits + logistic noise) / temperature)`` (Maddison et al. 2017); funsor's
    parameters, torch's density.

    Example:
        >>> round(RelaxedBernoulli(0.5, 0.0, value=0.5).item(), 6)  # log(0.5 / 0.25) - 2 log 2
        -0.693147
    """

    params = {"temperature": Param(POSITIVE), "logits": Param(REAL)}
    fields = (*params, "value")
    reparameterized = True
    support_fill = 0.5

    @staticmethod
    def log_prob(value, temperature, logits):
        # y = logit(x) has density t e^d / (1 + e^d)^2, d = logits - t y; dx/dy = x (1 - x).
        log_x, log_1mx = ops.log(value), ops.log1p(-value)
        d = logits - temperature * (log_x - log_1mx)
        return ops.log(temperature) + d - 2.0 * _softplus(d) - log_x - log_1mx

    @staticmethod
    def in_support(value, temperature, logits):
        return ops.and_(value > 0, value < 1)

    @staticmethod
    def draw(rng, shape, temperature, logits):
        u = rng.uniform(shape)
        return _unit_clamp(ops.sigmoid((logits + ops.log(u) - ops.log1p(-u)) / temperature))


class LowRankMultivariateNormal(Distribution):
    """LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance
    ``cov_factor @ cov_factor.T + diag(cov_diag)``, ``cov_factor`` of shape ``(n, r)``.

    With ``loc`` and ``value`` affine in real variables it becomes a Gaussian funsor under
    ``exact`` (the Cholesky factor of the covariance, then as ``MultivariateNormal``).

    Example:
        >>> W, D = np.array([[1.0], [0.5]]), np.array([1.0, 2.0])
        >>> d = LowRankMultivariateNormal(np.zeros(2), W, D, value=np.ones(2))
        >>> round(d.item(), 6)  # scipy.stats.multivariate_normal(0, W W^T + diag D).logpdf(1)
        -2.943689
    """

    params = {"loc": Param(REAL, 1), "cov_factor": Param(REAL, 2),
              "cov_diag": Param(POSITIVE, 1)}
    fields = (*params, "value")
    reparameterized = True

    @classmethod
    def infer_event(cls, shapes):
        (n,), factor, diag = shapes["loc"], shapes["cov_factor"], shapes["cov_diag"]
        if factor[0] != n or diag != (n,):
            raise ValueError(f"LowRankMultivariateNormal: cov_factor must be Reals[{n}, r] and "
                             f"cov_diag Reals[{n}] to match loc of size {n}, got shapes "
                             f"{factor} and {diag}")
        return "real", (n,)

    @staticmethod
    def log_prob(value, loc, cov_factor, cov_diag):
        tril = low_rank_scale_tril(cov_factor, cov_diag)
        diff = value - loc
        z = ops.triangular_solve(diff[..., None], tril)[..., 0]
        half_log_det = ops.sum(ops.log(ops.diagonal(tril)), -1)
        return -0.5 * ops.sum(z * z, -1) - half_log_det - 0.5 * loc.shape[-1] * _LOG_2PI

    @staticmethod
    def draw(rng, shape, loc, cov_factor, cov_diag):
        n, r = cov_factor.shape[-2:]
        eps_w = rng.normal(tuple(shape) + (r,))
        eps_d = rng.normal(tuple(shape) + (n,))
        return loc + ops.matmul(cov_factor, eps_w[..., None])[..., 0] + ops.sqrt(cov_diag) * eps_d

    @staticmethod
    def moments(loc, cov_factor, cov_diag):
        var = ops.sum(cov_factor * cov_factor, -1) + cov_diag
        return loc + 0.0 * var, var + 0.0 * loc


def low_rank_scale_tril(cov_factor, cov_diag):
    """The lower Cholesky factor of ``cov_factor @ cov_factor.T + diag(cov_diag)`` (arrays,
    batched over leading dims).

    Example:
        >>> low_rank_scale_tril(np.array([[1.0], [0.0]]), np.array([3.0, 4.0]))
        array([[2., 0.],
               [0., 2.]])
    """
    n = cov_diag.shape[-1]
    cov = ops.matmul(cov_factor, ops.transpose(cov_factor, -1, -2))
    return ops.cholesky(cov + ops.new_eye(cov_diag, n) * cov_diag[..., None, :])
