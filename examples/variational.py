"""Variational inference: ``Integrate(q, p - q, "w")`` under ``MonteCarlo``, trained by
gradient steps on torch and on jax.

Two Bayesian regressions with weights ``w`` in 2-d and a Gaussian prior; the guide ``q`` is a
Gaussian with a learned mean and scale. ``Integrate(q, p - q, "w")`` is the evidence lower
bound (ELBO); under ``MonteCarlo(particle=Bint[P])`` its parts with a closed form (the prior
and the entropy, Gaussian against Gaussian) are exact and the rest is estimated from
reparameterized draws of ``w``, so its gradient is an unbiased estimate of the ELBO's.

1. Linear regression (conjugate): the whole ELBO has a closed form, and ``MonteCarlo`` returns
   it exactly; training drives it up to the log evidence (the exact posterior is Gaussian).
2. Logistic regression (no closed form): the ELBO is estimated; trained with Adam on torch
   and on jax (a ``jax.jit``-compiled step, the random key traced). The exact ELBO of the
   trained guide and the log evidence are computed by quadrature on a fine grid and printed
   beside the estimates.

Writes ``examples/out/variational.png`` (the ELBO estimates during training) when matplotlib
is installed. Run: ``make demo`` (or ``python examples/variational.py``).
"""

from __future__ import annotations

import numpy as np
from _plotting import out_path, pyplot

import funsor_core as fc
from funsor_core import ops
from interpretations import MonteCarlo

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional
    def tqdm(iterable, **kwargs):
        return iterable

N, STEPS, PARTICLES = 100, 300, 64
rng = np.random.default_rng(0)
X = rng.normal(size=(N, 2))
W_TRUE = np.array([1.5, -0.7])
Y_LINEAR = X @ W_TRUE + 0.5 * rng.normal(size=N)
Y_LOGISTIC = (rng.random(N) < 1 / (1 + np.exp(-X @ W_TRUE))).astype(float)
W = fc.Variable("w", fc.Reals[2])


def prior(array):
    p = fc.Gaussian(mean=array(np.zeros(2)), covariance=array(np.eye(2)),
                    inputs={"w": fc.Reals[2]})
    return p - p.log_normalizer


def guide(mean, raw_scale, array):
    """A normalized Gaussian over w: mean, and a lower-triangular scale with a positive
    diagonal (softplus of the raw diagonal)."""
    diag = ops.log1p(ops.exp(ops.diagonal(raw_scale)))
    scale = ops.tril(raw_scale, -1) + ops.diag_embed(diag)
    q = fc.Gaussian(mean=mean, scale_tril=scale, inputs={"w": fc.Reals[2]})
    return q - q.log_normalizer


def logistic_log_likelihood(array):
    """sum_n log sigmoid(s_n x_n . w), s_n = 2 y_n - 1: lazy in w (no closed form)."""
    xs = fc.Tensor(array(X * (2 * Y_LOGISTIC - 1)[:, None]), {"n": fc.Bint[N]})
    return (xs * W).sum().sigmoid().log().reduce(ops.add, "n")


def linear_log_likelihood(array, noise=0.5):
    """sum_n log N(y_n; x_n . w, noise^2): a Gaussian in w."""
    # -0.5 ||(X w - y) / noise||^2 as a Gaussian over w: prec_sqrt X' / noise
    g = fc.Gaussian(white_vec=array(Y_LINEAR / noise), prec_sqrt=array(X.T / noise),
                    inputs={"w": fc.Reals[2]})
    return g - N * (np.log(noise) + 0.5 * np.log(2 * np.pi))


def adam(grads, state, lr=0.05, b1=0.9, b2=0.999, eps=1e-8):
    """One Adam step on a list of numpy/jax arrays; returns (updates, state)."""
    t, ms, vs = state
    t += 1
    ms = [b1 * m + (1 - b1) * g for m, g in zip(ms, grads)]
    vs = [b2 * v + (1 - b2) * g * g for v, g in zip(vs, grads)]
    steps = [lr * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)) ** 0.5 + eps) for m, v in zip(ms, vs)]
    return steps, (t, ms, vs)


# ---------------------------------------------------------------------------------------------
def train_torch(log_likelihood, label):
    import torch

    fc.set_backend("torch")
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        array = torch.tensor
        mean = torch.zeros(2, requires_grad=True)
        raw_scale = torch.zeros(2, 2, requires_grad=True)
        # (torch.optim.Adam imports torch._dynamo: seconds; the same update by hand)
        state = (0, [torch.zeros(2), torch.zeros(2, 2)], [torch.zeros(2), torch.zeros(2, 2)])
        model = prior(array) + log_likelihood(array)
        trace = []
        for step in tqdm(range(STEPS), desc=f"torch, {label}", leave=False):
            q = guide(mean, raw_scale, array)
            with MonteCarlo(rng_key=step, particle=fc.Bint[PARTICLES]):
                elbo = fc.Integrate(q, model - q, "w")
            if "particle" in elbo.inputs:
                elbo = elbo.reduce(ops.mean, "particle")
            grads = torch.autograd.grad(-elbo.data, (mean, raw_scale))
            steps, state = adam(grads, state)
            with torch.no_grad():
                mean -= steps[0]
                raw_scale -= steps[1]
            trace.append(float(elbo.data.detach()))
        return mean.detach().numpy(), raw_scale.detach().numpy(), trace
    finally:
        torch.set_default_dtype(dtype)
        fc.set_backend("numpy")


def train_jax(log_likelihood, label):
    import jax
    import jax.numpy as jnp

    fc.set_backend("jax")
    try:
        def neg_elbo(params, key):
            mean, raw_scale = params
            model = prior(jnp.asarray) + log_likelihood(jnp.asarray)
            q = guide(mean, raw_scale, jnp.asarray)
            with MonteCarlo(rng_key=key, particle=fc.Bint[PARTICLES]):
                elbo = fc.Integrate(q, model - q, "w")
            return -elbo.reduce(ops.mean, "particle").data

        step_fn = jax.jit(jax.value_and_grad(neg_elbo))
        params = [jnp.zeros(2), jnp.zeros((2, 2))]
        state = (0, [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params])
        key = jax.random.PRNGKey(0)
        trace = []
        for _ in tqdm(range(STEPS), desc=f"jax, {label}", leave=False):
            key, sub = jax.random.split(key)
            value, grads = step_fn(params, sub)
            steps, state = adam(grads, state)
            params = [p - s for p, s in zip(params, steps)]
            trace.append(-float(value))
        return np.asarray(params[0]), np.asarray(params[1]), trace
    finally:
        fc.set_backend("numpy")


# ---------------------------------------------------------------------------------------------
def numpy_guide(mean, raw_scale):
    diag = np.log1p(np.exp(np.diag(raw_scale)))
    scale = np.tril(raw_scale, -1) + np.diag(diag)
    return mean, scale @ scale.T


def _grid(mean, cov, half_width=8.0, n=241):
    """A grid around the guide (its axes scaled by its standard deviations) and the area of
    a cell: the integrands are smooth and negligible beyond 8 standard deviations."""
    sd = np.sqrt(np.diag(cov))
    axes = [np.linspace(mean[k] - half_width * sd[k], mean[k] + half_width * sd[k], n)
            for k in range(2)]
    g = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 2)
    return g, (axes[0][1] - axes[0][0]) * (axes[1][1] - axes[1][0])


def quadrature(mean, cov, log_lik_fn):
    """The ELBO of the guide N(mean, cov) and the log evidence, by quadrature."""
    g, area = _grid(mean, cov)
    diff = g - mean
    log_q = (-0.5 * np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff)
             - 0.5 * np.linalg.slogdet(2 * np.pi * cov)[1])
    log_p = -0.5 * (g ** 2).sum(1) - np.log(2 * np.pi) + log_lik_fn(g)
    elbo = (np.exp(log_q) * (log_p - log_q)).sum() * area
    top = log_p.max()
    return elbo, top + np.log(np.exp(log_p - top).sum() * area)


def numpy_logistic(w):
    z = (X * (2 * Y_LOGISTIC - 1)[:, None]) @ w.T  # (N, grid)
    return -np.logaddexp(0, -z).sum(0)


def main():
    print("== variational inference: Integrate(q, p - q) under MonteCarlo")
    mean, raw, trace = train_torch(linear_log_likelihood, "linear")
    q = guide(mean, raw, np.asarray)
    model = prior(np.asarray) + linear_log_likelihood(np.asarray)
    with MonteCarlo(rng_key=0, particle=fc.Bint[PARTICLES]):
        estimate = fc.Integrate(q, model - q, "w")
    exact_elbo = float(fc.Integrate(q, model - q, "w").data)
    evidence = float(model.reduce(ops.logaddexp, "w").data)
    # As in funsor, MonteCarlo keeps the requested `particle` input even where every part of
    # the integral has a closed form: each particle then holds the exact value.
    spread = float(np.ptp(np.asarray(estimate.data)))
    mc_elbo = float(estimate.reduce(ops.mean, "particle").data)
    print(f"1. linear regression (conjugate), torch, {STEPS} steps: MonteCarlo ELBO of the "
          f"trained guide {mc_elbo:.6f} (inputs {dict(estimate.inputs)}, spread over particles "
          f"{spread:.1e}: every part has a closed form), exact ELBO {exact_elbo:.6f}, "
          f"log evidence {evidence:.6f}")
    traces = {}
    for name, train in (("torch", train_torch), ("jax", train_jax)):
        mean, raw, trace = train(logistic_log_likelihood, "logistic")
        traces[name] = trace
        m, cov = numpy_guide(mean, raw)
        exact_elbo, evidence = quadrature(m, cov, numpy_logistic)
        print(f"2. logistic regression, {name}: mean of the last 50 MonteCarlo ELBO estimates "
              f"{np.mean(trace[-50:]):.4f}; exact ELBO of the trained guide (quadrature) "
              f"{exact_elbo:.4f}; log evidence (quadrature) {evidence:.4f}; "
              f"posterior mean ~ {np.round(m, 3)}")
    plot(traces, evidence)


def plot(traces, evidence):
    plt = pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 3))
    for name, trace in traces.items():
        ax.plot(trace, label=f"ELBO estimate ({name})", alpha=0.7)
    ax.axhline(evidence, color="k", ls="--", label="log evidence (quadrature)")
    ax.set_ylim(evidence - 30, evidence + 5)
    ax.set_xlabel("gradient step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out_path("variational.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
