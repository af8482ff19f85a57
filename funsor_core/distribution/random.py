"""Random numbers for the families' samplers, on the backend of their parameters.

``Rng(proto, rng_key)`` draws normals, uniforms, gammas, Poisson and binomial counts on the
backend of the array ``proto``, in its float dtype. ``rng_key`` is an int seed, a numpy or
torch ``Generator``, a jax PRNG key (traced keys work under ``jax.jit``), or None (the
backend's global state); the same seed gives the same draws. Gamma draws are differentiable
in their shape parameter on torch and jax (the backends' implicit reparameterization).

Example:
    >>> rng = Rng(np.zeros(()), 0)
    >>> rng.gamma(np.array([1.0, 2.0]), (2,)).shape
    (2,)
"""

from __future__ import annotations

import math

from funsor_core import ops
from funsor_core.sampling.draw import backend_and_key

__all__ = ["Rng", "gumbel_argmax", "vonmises_draw"]


def _like(x, proto):
    """``x`` in ``proto``'s float dtype (backends draw in their default float dtype)."""
    dtype = proto.dtype
    if x.dtype == dtype:
        return x
    return x.to(dtype) if hasattr(x, "to") and not hasattr(x, "astype") else x.astype(dtype)


class Rng:
    """Random draws on the backend of ``proto``, in its float dtype, from one ``rng_key``.

    A jax key is split for every draw; numpy and torch generators advance their own state.

    Example:
        >>> rng = Rng(np.zeros(()), 0)
        >>> rng.normal((2, 3)).shape, float(rng.uniform(()) < 1.0)
        ((2, 3), 1.0)
    """

    def __init__(self, proto, rng_key=None) -> None:
        self.proto = proto
        self.module, self.key = backend_and_key(proto, rng_key)
        self._split = self.module.SPLITS_RNG_KEYS

    def _next(self):
        if not self._split:
            return self.key
        self.key, sub = self.module.split_key(self.key, 2)
        return sub

    def normal(self, shape: tuple):
        """Standard normal draws of ``shape``."""
        return _like(self.module.randn(tuple(shape), self._next()), self.proto)

    def uniform(self, shape: tuple):
        """Uniform draws on the open interval (0, 1) of ``shape``: rand gives [0, 1), so
        ``1 - u`` is in (0, 1], kept below 1 by half an ulp (``log(-log u)`` stays finite)."""
        u = _like(self.module.rand(tuple(shape), self._next()), self.proto)
        below_one = 1.0 - (2.0 ** -24 if getattr(u.dtype, "itemsize", 8) <= 4 else 2.0 ** -53)
        return ops.clamp(1.0 - u, max=below_one)

    def gamma(self, alpha, shape: tuple):
        """Gamma(alpha, 1) draws of ``shape`` (alpha broadcast to it); differentiable in
        alpha on torch and jax."""
        alpha = ops.expand(alpha, tuple(shape))
        return self.module.standard_gamma(alpha, self._next())

    def poisson(self, rate, shape: tuple):
        """Poisson(rate) draws of ``shape``, as floats."""
        return self.module.poisson(ops.expand(rate, tuple(shape)), self._next())

    def binomial(self, total_count, probs, shape: tuple):
        """Binomial(total_count, probs) draws of ``shape``, as floats."""
        total_count = ops.expand(total_count, tuple(shape))
        probs = ops.expand(ops.clamp(probs, min=0.0, max=1.0), tuple(shape))
        return self.module.binomial(total_count, probs, self._next())


def gumbel_argmax(rng: Rng, logits, shape: tuple):
    """Categorical draws of batch ``shape`` from ``logits`` (last dim), by the Gumbel-max trick:
    ``argmax_k (logits_k + G_k)``, ``G_k = -log(-log U_k)``, is distributed as softmax(logits).

    Example:
        >>> gumbel_argmax(Rng(np.zeros(()), 0), np.array([0.0, -np.inf]), (3,))
        array([0, 0, 0])
    """
    n = logits.shape[-1]
    u = rng.uniform(tuple(shape) + (n,))
    gumbel = -ops.log(-ops.log(u))
    return ops.argmax(logits + gumbel, -1)


def vonmises_draw(rng: Rng, loc, concentration, shape: tuple, candidates: int = 64):
    """Von Mises draws of ``shape`` by Best and Fisher's (1979) rejection sampler, vectorized:
    ``candidates`` proposals per draw, the first accepted one kept. Each is accepted with
    probability above 0.65 for every concentration, so all fail with probability below
    1e-29; no loop depends on values, so it runs under ``jax.jit``.

    Example:
        >>> x = vonmises_draw(Rng(np.zeros(()), 0), np.array(0.0), np.array(4.0), (1000,))
        >>> bool(np.all(np.abs(x) <= np.pi)), round(float(np.cos(x).mean()), 1)
        (True, 0.9)
    """
    k = ops.expand(concentration, tuple(shape))[..., None]
    # For tiny kappa the proposal constants lose precision; the density is uniform there.
    k = ops.clamp(k, min=1e-4)
    tau = 1.0 + ops.sqrt(1.0 + 4.0 * k * k)
    rho = (tau - ops.sqrt(2.0 * tau)) / (2.0 * k)
    r = (1.0 + rho * rho) / (2.0 * rho)
    draws = tuple(shape) + (candidates,)
    u1, u2, u3 = rng.uniform(draws), rng.uniform(draws), rng.uniform(draws)
    z = ops.cos(math.pi * u1)
    f = (1.0 + r * z) / (r + z)
    c = k * (r - f)
    accept = ops.or_(c * (2.0 - c) > u2, ops.log(c / u2) + 1.0 >= c)
    first = ops.argmax(ops.astype(accept, "int"), -1)  # the first accepted candidate
    hit = ops.eq(ops.new_arange(first, 0, candidates, 1), first[..., None])
    f = ops.sum(ops.where(hit, f, ops.full_like(f, 0.0)), -1)
    u3 = ops.sum(ops.where(hit, u3, ops.full_like(u3, 0.0)), -1)
    sign = ops.where(u3 > 0.5, ops.full_like(u3, 1.0), ops.full_like(u3, -1.0))
    theta = sign * ops.acos(ops.clamp(f, min=-1.0, max=1.0))
    return ops.mod(theta + loc + math.pi, 2.0 * math.pi) - math.pi  # wrapped into [-pi, pi)
