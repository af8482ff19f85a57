"""Communication of ``sharded(...)`` programs, read from their compiled HLO, against the
theoretical minimum.

On emulated CPU devices (``--xla_force_host_platform_device_count``, set here before jax
starts) wall time measures nothing about multi-device speed and is not reported; what the
compiled program sends is exact. For each case and device count ``P`` the table lists the
collectives XLA kept (kind and result size, in elements) and the minimum:

- a plate reduction to an output of ``m`` elements: one collective of ``m`` (each device
  holds a partial result of the output's size, which must be combined);
- a ``logaddexp`` plate reduction: one collective of ``m`` as well (an all-gather of ``P m``
  elements here: the price of one collective instead of a max then a sum);
- a chain of ``T`` steps with ``K`` states: one collective of ``P K^2`` (each device's block
  summary; nothing of length ``T``); a Gaussian chain over ``D = 2 dp`` reals, one of
  ``P (D + D (D + 1) / 2 + 1)`` (an information vector, a symmetric precision, a constant),
  in either semiring (max-plus: Viterbi); a switching chain (``K`` switch states, each
  step a Gaussian over ``D`` reals per switch pair) under ``moment_matching``, one of
  ``P K^2 (D + D (D + 1) / 2 + 1)`` (one moment-matched Gaussian per end-state pair);
- a round of partitioned MCMC (``partitioned_mcmc``, Singh ch. 4) with ``C`` chains: one
  collective of ``C x`` (the variables updated in the round): each moved value once;
- several plates reduced together: one collective over all their mesh axes, as for one;
- a product of Gaussians over a plate (dim ``d``): one collective of ``P (d + d (d + 1) / 2
  + 1)`` (each device's partial product in information form);
- independent MCMC chains (``sharded_chains``): nothing (the chains share only the model;
  an uneven chain count returns its padded samples gathered, as jax cannot shard them);
- a Monte Carlo estimate averaged over sharded particles: one all-reduce of the estimate's
  size (here a scalar; with its gradient, XLA combines both into one all-reduce).

No peer shards inference (issue #33: numpyro, blackjax, dynamax, funsor 0.4.8 leave it to
the user), so there is no peer row. Weak and strong scaling need a multi-GPU machine.

Run: ``python benchmarks/sharded.py``.
"""

from __future__ import annotations

import contextlib
import math
import os
import re

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import funsor_core as fc  # noqa: E402
from backends.jax_sharding import compiled_collectives  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.sharding import partitioned_mcmc, sharded, sharded_chains  # noqa: E402
from interpretations import MonteCarlo, moment_matching  # noqa: E402


def _elements(shape: str) -> int:
    # all the shapes of a result (a tuple where XLA combined collectives)
    return sum(math.prod(int(d) for d in dims.split(",") if d)
               for dims in re.findall(r"\[([\d,]*)\]", shape))


def _plate(red_op, n, m):
    def fn(x):
        t = fc.Tensor(x, {"data": fc.Bint[n], "z": fc.Bint[m]})
        return t.reduce(red_op, "data").data
    return fn, (jnp.ones((n, m)),), "data"


def _chain(sum_op, t_len, k):
    def fn(x):
        step = fc.Tensor(x, {"t": fc.Bint[t_len], "x": fc.Bint[k], "y": fc.Bint[k]})
        time = fc.Variable("t", fc.Bint[t_len])
        return fc.MarkovProduct(sum_op, ops.add, step, time, {"x": "y"}).data
    return fn, (jnp.zeros((t_len, k, k)),), "t"


def _gaussian_chain(t_len, dp, sum_op=ops.logaddexp):
    def fn(mean, cov):
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={
            "t": fc.Bint[t_len], "x": fc.Reals[dp], "y": fc.Reals[dp]})
        time = fc.Variable("t", fc.Bint[t_len])
        mp = fc.MarkovProduct(sum_op, ops.add, g, time, {"x": "y"})
        return mp(x=jnp.zeros(dp), y=jnp.zeros(dp)).data
    eye = jnp.broadcast_to(jnp.eye(2 * dp), (t_len, 2 * dp, 2 * dp))
    return fn, (jnp.zeros((t_len, 2 * dp)), 2.0 * eye), "t"


def _switching_chain(t_len, k):
    def fn(mean, cov):
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={
            "t": fc.Bint[t_len], "a": fc.Bint[k], "b": fc.Bint[k], "x": fc.Real,
            "y": fc.Real})
        time = fc.Variable("t", fc.Bint[t_len])
        mp = fc.MarkovProduct(ops.logaddexp, ops.add, g, time, {"a": "b", "x": "y"})
        return mp(x=0.0, y=0.0).data
    eye = jnp.broadcast_to(jnp.eye(2), (t_len, k, k, 2, 2))
    return fn, (jnp.zeros((t_len, k, k, 2)), 2.0 * eye), "t"


def _row(label, build, minimum, devices, outside=contextlib.nullcontext):
    # ``outside``: an interpretation entered outside ``sharded`` (its fallback)
    fn, args, name = build
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("x",))
    where = {"plates": {name: "x"}} if name == "data" else {"time": {name: "x"}}

    def sharded_fn(*a):
        with outside(), sharded(mesh, **where):
            return fn(*a)

    _print(label, devices, compiled_collectives(sharded_fn, *args), minimum)


def _print(label, devices, found, minimum):
    sent = sum(_elements(s) for _, s in found)
    kinds = ", ".join(f"{k} {re.sub(r'[{][^}]*[}]', '', s)}" for k, s in found)
    print(f"| {label} | {devices} | {len(found)} | {kinds} | {sent} | 1 x {minimum} |")


def _partitioned_row(v, chains, devices):
    # a binary chain of v variables in P = devices contiguous blocks (two shifted
    # partitionings); per round, the active variables (blanket inside the block) move
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("x",))
    size = v // devices
    ids = np.array([[(i + r * size // 2) % v // size for i in range(v)] for r in range(2)])
    domains = [{f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]} for i in range(v - 1)]

    def fn(table):
        fs = [fc.Tensor(table, d) for d in domains]
        s = partitioned_mcmc(fs, 10, mesh, "x", partitions=ids, num_chains=chains, rng_key=0)
        return s["v1"].data

    found = compiled_collectives(fn, jnp.zeros((2, 2)))
    active = sum(int((row[max(i - 1, 0)] == row[i]) & (row[min(i + 1, v - 1)] == row[i]))
                 for row in ids[:1] for i in range(v))
    _print(f"partitioned Gibbs round, V={v:,} chain, C={chains}", devices, found,
           chains * active)


def _chains_row(v, chains, devices):
    # sharded_chains: independent Gibbs chains of a binary chain of v variables, 10 rounds;
    # the chains share nothing, so the minimum is no collective
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("x",))
    domains = [{f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]} for i in range(v - 1)]

    def fn(table):
        fs = [fc.Tensor(table, d) for d in domains]
        return sharded_chains(fs, 10, mesh, num_chains=chains, rng_key=0)["v1"].data

    found = compiled_collectives(fn, jnp.zeros((2, 2)))
    _print(f"sharded Gibbs chains, V={v:,} chain, C={chains}", devices, found, 0)


def _two_plates_row(red_op, n, g, m):
    # "data" on mesh axis "x" (4 devices) and "g" on "y" (2), reduced together
    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))

    def fn(x):
        t = fc.Tensor(x, {"data": fc.Bint[n], "g": fc.Bint[g], "z": fc.Bint[m]})
        with sharded(mesh, plates={"data": "x", "g": "y"}):
            return t.reduce(red_op, frozenset({"data", "g"})).data

    found = compiled_collectives(fn, jnp.ones((n, g, m)))
    _print(f"two plates {red_op.__name__}, n={n:,} on x, g={g} on y, m={m}", 8, found, m)


def _gaussian_plate(n, d):
    def fn(mean):
        cov = jnp.broadcast_to(jnp.eye(d), (n, d, d))
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={"data": fc.Bint[n], "x": fc.Reals[d]})
        return g.reduce(ops.add, "data")(x=jnp.zeros(d)).data
    return fn, (jnp.zeros((n, d)),), "data"


def _particles_row(n, devices):
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("x",))

    def fn(loc):
        g = fc.Gaussian(mean=loc[None], covariance=jnp.eye(1), inputs={"x": fc.Real})
        with MonteCarlo(rng_key=jax.random.PRNGKey(0), particle=fc.Bint[n]):
            with sharded(mesh, particles={"particle": "x"}):
                e = fc.Integrate(g - g.log_normalizer, fc.Variable("x", fc.Real).sigmoid(),
                                 "x")
        return e.reduce(ops.mean, "particle").data

    found = compiled_collectives(jax.value_and_grad(fn), jnp.asarray(0.3))
    _print(f"Monte Carlo value and gradient, N={n:,} particles", devices, found, 2)


def main() -> None:
    fc.set_backend("jax")
    print("| case | P | collectives | kept by XLA | elements | minimum |")
    print("|---|---|---|---|---|---|")
    for p in (2, 4, 8):
        _row("plate add, n=100,000, m=4", _plate(ops.add, 100_000, 4), 4, p)
        _row("plate logaddexp, n=100,000, m=4", _plate(ops.logaddexp, 100_000, 4), 4, p)
        _row("plate max, n=100,001, m=4 (uneven)", _plate(ops.max, 100_001, 4), 4, p)
        _row("chain logaddexp, T=10,000, K=8", _chain(ops.logaddexp, 10_000, 8), p * 64, p)
        _row("chain max, T=10,001, K=8 (uneven)", _chain(ops.max, 10_001, 8), p * 64, p)
        # a Gaussian summary over (first prev, last curr), D = 4: the information form's
        # D + D (D + 1) / 2 + 1 = 15 numbers; sent: w (D), the square root (D^2), k, a flag
        _row("Gaussian chain, T=10,001, state dim 2", _gaussian_chain(10_001, 2), p * 15, p)
        _row("Gaussian chain max, T=10,001, state dim 2",
             _gaussian_chain(10_001, 2, ops.max), p * 15, p)
        # K = 2 switch states, D = 2: K^2 (D + D (D + 1) / 2 + 1) = 24 numbers per device;
        # sent: K^2 (w (D), the square root (D^2), a constant) = 28
        _row("switching chain (moment matched), T=1,024, K=2, state dim 1",
             _switching_chain(1_024, 2), p * 24, p, lambda: moment_matching)
        # a product of Gaussians over dim d = 2: information form d + d (d + 1) / 2 + 1 = 6
        # per device; sent: the square root (d + 1) x d rows and the constant, 7
        _row("Gaussian plate product, n=100,000, dim 2", _gaussian_plate(100_000, 2), p * 6, p)
        _partitioned_row(400, 4, p)
        _particles_row(100_000, p)
        _chains_row(400, 64, p)
        _chains_row(400, 100, p)
    _two_plates_row(ops.add, 100_000, 8, 4)
    _two_plates_row(ops.logaddexp, 100_000, 8, 4)


if __name__ == "__main__":
    main()
