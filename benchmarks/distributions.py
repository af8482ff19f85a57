"""Log densities of distribution funsors against the raw library calls computing the same
numbers, and against funsor 0.4.8 when it is installed with pyro (its torch distributions).

- a batch of 10,000 Normals (``Normal(loc, scale, value)`` with all three Tensors over one
  input ``i``): torch against ``torch.distributions.Normal(loc, scale).log_prob(value)``,
  numpy against ``scipy.stats.norm.logpdf``, jax (both under ``jax.jit``) against
  ``jax.scipy.stats.norm.logpdf``;
- a 100-dimensional MultivariateNormal: torch against
  ``torch.distributions.MultivariateNormal(loc, scale_tril=L).log_prob(x)``, numpy against
  ``scipy.stats.multivariate_normal.logpdf`` (which factorizes a covariance), jax against
  ``jax.scipy.stats.multivariate_normal.logpdf``.

Both sides validate their parameters as they do by default (torch checks its constraints;
funsor-core checks concrete arrays when a distribution is built). Target: within 2x of the
raw torch call. Run with one thread: ``make bench`` (or ``OMP_NUM_THREADS=1 python
benchmarks/distributions.py``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import numpy as np  # noqa: E402
from timing import best_us, peer_columns  # noqa: E402

import funsor_core as fc  # noqa: E402
from funsor_core.distribution import MultivariateNormal, Normal  # noqa: E402

N, DIM = 10_000, 100
rng = np.random.default_rng(0)
NORMAL = (rng.standard_normal(N), rng.uniform(0.5, 2.0, N), rng.standard_normal(N))
L = np.tril(0.1 * rng.standard_normal((DIM, DIM)), -1) + np.diag(rng.uniform(0.5, 1.5, DIM))
MVN = (rng.standard_normal(DIM), L, rng.standard_normal(DIM))
BATCH = {"i": fc.Bint[N]}


def ours_normal(loc, scale, value):
    return Normal(fc.Tensor(loc, BATCH), fc.Tensor(scale, BATCH), fc.Tensor(value, BATCH)).data


def ours_mvn(loc, scale_tril, value):
    return MultivariateNormal(fc.Tensor(loc), fc.Tensor(scale_tril), fc.Tensor(value)).data


def funsor_peer():
    """funsor 0.4.8's torch distributions, or the reason they cannot run."""
    try:
        import funsor
        import pyro  # noqa: F401  (funsor.torch.distributions wraps pyro's)
    except ImportError as e:
        return None, f"missing ({e.name} is not installed; funsor's distributions need pyro)"
    funsor.set_backend("torch")
    import funsor.torch.distributions as fdist

    return fdist, None


def row(backend, case, raw, ours, peer=None):
    print(f"{backend:6} {case:22} {raw:10.1f} {ours:13.1f} {ours / raw:6.2f} "
          f"{peer_columns(peer, raw)}")


def run_numpy():
    import scipy.stats as st

    raw = lambda: st.norm.logpdf(NORMAL[2], NORMAL[0], NORMAL[1])  # noqa: E731
    np.testing.assert_allclose(ours_normal(*NORMAL), raw(), rtol=1e-12)
    row("numpy", "Normal x 10000", best_us(raw, 200), best_us(lambda: ours_normal(*NORMAL), 200))
    loc, tril, x = MVN
    cov = tril @ tril.T
    raw = lambda: st.multivariate_normal.logpdf(x, loc, cov)  # noqa: E731
    np.testing.assert_allclose(ours_mvn(*MVN), raw(), rtol=1e-8)
    row("numpy", "MVN dim 100", best_us(raw, 100), best_us(lambda: ours_mvn(*MVN), 100))


def run_torch(fdist):
    import torch

    torch.set_num_threads(1)
    loc, scale, value = (torch.tensor(a) for a in NORMAL)
    raw = lambda: torch.distributions.Normal(loc, scale).log_prob(value)  # noqa: E731
    np.testing.assert_allclose(ours_normal(loc, scale, value).numpy(), raw().numpy(), rtol=1e-12)
    peer = None
    if fdist is not None:
        fl, fs, fv = (funsor_tensor(a) for a in (loc, scale, value))
        peer = best_us(lambda: fdist.Normal(fl, fs, fv).data, 200)
    row("torch", "Normal x 10000", best_us(raw, 200),
        best_us(lambda: ours_normal(loc, scale, value), 200), peer)
    mloc, tril, x = (torch.tensor(a) for a in MVN)
    raw = lambda: torch.distributions.MultivariateNormal(  # noqa: E731
        mloc, scale_tril=tril).log_prob(x)
    np.testing.assert_allclose(ours_mvn(mloc, tril, x).numpy(), raw().numpy(), rtol=1e-10)
    peer = None
    if fdist is not None:
        import funsor

        args = [funsor.Tensor(a) for a in (mloc, tril, x)]
        peer = best_us(lambda: fdist.MultivariateNormal(*args).data, 100)
    row("torch", "MVN dim 100", best_us(raw, 100), best_us(lambda: ours_mvn(mloc, tril, x), 100),
        peer)


def funsor_tensor(a):
    import funsor

    return funsor.Tensor(a, {"i": funsor.Bint[N]})


def run_jax():
    import jax
    import jax.numpy as jnp
    import jax.scipy.stats as js

    jax.config.update("jax_enable_x64", True)
    args = [jnp.asarray(a) for a in NORMAL]
    raw = jax.jit(lambda loc, scale, value: js.norm.logpdf(value, loc, scale))
    ours = jax.jit(ours_normal)
    np.testing.assert_allclose(np.asarray(ours(*args)), np.asarray(raw(*args)), rtol=1e-12)
    row("jax", "Normal x 10000 (jit)", best_us(lambda: raw(*args).block_until_ready(), 500),
        best_us(lambda: ours(*args).block_until_ready(), 500))
    args = [jnp.asarray(a) for a in MVN]
    raw = jax.jit(lambda loc, tril, x: js.multivariate_normal.logpdf(x, loc, tril @ tril.T))
    ours = jax.jit(ours_mvn)
    np.testing.assert_allclose(np.asarray(ours(*args)), np.asarray(raw(*args)), rtol=1e-8)
    row("jax", "MVN dim 100 (jit)", best_us(lambda: raw(*args).block_until_ready(), 200),
        best_us(lambda: ours(*args).block_until_ready(), 200))


def main():
    fdist, missing = funsor_peer()
    print(f"funsor 0.4.8: {missing or 'installed, torch backend (pyro distributions)'}")
    print(f"{'backend':6} {'case':22} {'raw us':>10} {'funsor-core us':>13} {'ratio':>6} "
          f"{'funsor us':>13} {'ratio':>6}")
    run_numpy()
    run_torch(fdist)
    run_jax()


if __name__ == "__main__":
    main()
