"""One program, several devices: a plated mixture over a sharded data plate and a long HMM
sharded in time, under ``sharded(mesh, plates={"data": "x"}, time={"t": "x"})``.

The devices are 8 emulated CPU devices (``--xla_force_host_platform_device_count=8``, set
here before jax starts); on a machine with several accelerators the same code runs on them.
Each log likelihood and its gradient are checked against the same program on one device, and
the collectives of the compiled program (read from its HLO) are printed: forward, one
all-reduce of the reduced size for the plate, one all-gather of one K x K summary per device
for the chain; backward, the sum over devices of the gradient of a parameter that every
device shares (K numbers, K x K); nothing of the data's or the time's length. Wall time on
emulated devices says nothing about speed and is not shown.

Then Singh's synchronously partitioned MCMC (``partitioned_mcmc``): a 32-variable binary
chain in 8 partitions, one per device, its samples equal to one device's with the same key
and its marginals close to the exact ones (by elimination); and a Monte Carlo estimate whose
particles are split over the devices (``sharded(mesh, particles=...)`` inside
``MonteCarlo``), equal to one device's; and 64 independent Gibbs chains split over the
devices (``sharded_chains``: each chain its own key, no collective), equal to one device's.
Last, a switching linear dynamical system (2 regimes) of 64 steps sharded in time under
``moment_matching``: one moment-matched Gaussian per pair of end regimes gathered from
each device, the value equal to one device's.

Run: ``python examples/sharded.py`` (part of ``make demo``).
"""

from __future__ import annotations

import os
import re
import time

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import funsor_core as fc  # noqa: E402
from backends.jax_sharding import hlo_collectives  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.loopy import exact_marginals  # noqa: E402
from funsor_core.sharding import partitioned_mcmc, sharded, sharded_chains  # noqa: E402
from funsor_core.sum_product import sum_product  # noqa: E402
from interpretations import MonteCarlo, moment_matching  # noqa: E402

N, K, T = 2_000, 3, 1_000


def mixture_loglik(logits, locs, data):
    """log p(data) of a K-component Gaussian mixture, one z per data point (a plate)."""
    prior = fc.Tensor(jnp.broadcast_to(jax.nn.log_softmax(logits), (N, K)),
                      {"data": fc.Bint[N], "z": fc.Bint[K]})
    lik = fc.Tensor(-0.5 * (data[:, None] - locs[None]) ** 2 - 0.5 * np.log(2 * np.pi),
                    {"data": fc.Bint[N], "z": fc.Bint[K]})
    return sum_product(ops.logaddexp, ops.add, [prior, lik], frozenset({"data", "z"}),
                       frozenset({"data"})).data


def hmm_loglik(log_trans, log_obs):
    """log p(y) of a K-state HMM, as a Markov product over T steps (uniform start)."""
    time = fc.Variable("t", fc.Bint[T])
    step = fc.Tensor(log_trans[None] + log_obs[:, None, :],
                     {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
    chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, time, {"x": "y"})
    return chain.reduce(ops.logaddexp, frozenset({"x", "y"})).data - np.log(K)


def main() -> None:
    fc.set_backend("jax")
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
    rng = np.random.default_rng(0)
    data = jnp.asarray(rng.normal(size=N) + rng.choice([-2.0, 0.0, 2.0], size=N))
    logits, locs = jnp.zeros(K), jnp.asarray([-1.5, 0.1, 1.5])
    log_trans = jnp.asarray(np.log(np.full((K, K), 0.05) + 0.85 * np.eye(K)))
    log_obs = jnp.asarray(-0.5 * (rng.normal(size=(T, 1)) - np.arange(K)[None]) ** 2)

    def on_mesh(fn, **where):
        def wrapped(*args):
            with sharded(mesh, **where):
                return fn(*args)
        return wrapped

    print(f"{len(jax.devices())} devices, mesh axes {dict(mesh.shape)}")
    for name, fn, args, where in [
            (f"mixture, N = {N:,} data", mixture_loglik, (logits, locs, data),
             {"plates": {"data": "x"}}),
            (f"HMM, T = {T:,} steps", hmm_loglik, (log_trans, log_obs), {"time": {"t": "x"}})]:
        one = jax.jit(jax.value_and_grad(fn))(*args)
        compiled = jax.jit(jax.value_and_grad(on_mesh(fn, **where))).lower(*args).compile()
        many = compiled(*args)
        err = max(float(abs(one[0] - many[0])), float(jnp.abs(one[1] - many[1]).max()))
        print(f"{name}: log p = {float(many[0]):.6f} on 8 devices, "
              f"|difference to one device| (value, gradient) <= {err:.1e}")
        assert err < 1e-9, err
        _print_collectives(compiled, "value-and-gradient program")
    start = time.process_time()
    partitioned(mesh)
    middle = time.process_time()
    particles(mesh)
    last = time.process_time()
    chains(mesh)
    end = time.process_time()
    switching(mesh)
    print(f"(CPU: partitioned MCMC {middle - start:.1f} s, particles "
          f"{last - middle:.1f} s, chains {end - last:.1f} s, switching chain "
          f"{time.process_time() - end:.1f} s)")


def _print_collectives(compiled, what):
    for kind, shape in hlo_collectives(compiled.as_text()):
        shape = re.sub(r"\{[^}]*\}", "", shape)  # the layouts
        print(f"    collective in the compiled {what}: {kind} {shape}")


def partitioned(mesh, v=32, parts=8):
    """Partitioned Gibbs on a binary chain: 8 contiguous blocks (4 shifted partitionings),
    200 rounds x 16 chains, on 8 devices and on one, in one compiled program."""
    rng = np.random.default_rng(1)
    host = [rng.normal(size=(2, 2)) for _ in range(v - 1)]
    tables = [jnp.asarray(t) for t in host]
    domains = [{f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]} for i in range(v - 1)]
    size = v // parts
    ids = np.array([[(i + r * size // 4) % v // size for i in range(v)] for r in range(4)])

    def program(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        return tuple(jnp.stack([s[f"v{i}"].data for i in range(v)], -1) for s in (
            partitioned_mcmc(fs, 200, m, "x", num_partitions=parts, partitions=ids,
                             warmup=20, num_chains=16, rng_key=jax.random.PRNGKey(0))
            for m in (mesh, None)))

    compiled = jax.jit(program).lower(*tables).compile()
    many, one = (np.asarray(x) for x in compiled(*tables))
    exact = exact_marginals([fc.Tensor(t, d) for t, d in zip(host, domains)])[1]  # numpy
    p1 = np.array([float(np.exp(exact[f"v{i}"].data[1])) for i in range(v)])
    err = float(np.abs(many.mean((0, 1)) - p1).max())
    print(f"partitioned Gibbs, V = {v}, {parts} partitions on {len(mesh.devices.flat)} devices:"
          f" samples equal to one device's: {bool(np.array_equal(many, one))}; "
          f"max |marginal - exact| = {err:.3f} (3,200 correlated samples)")
    assert np.array_equal(many, one) and err < 0.1, err
    _print_collectives(compiled, "program (one per round)")


def particles(mesh, n=10_000):
    """E[sigmoid(x)], x ~ N(0.3, 1), with 10,000 particles split over the devices."""
    def estimate(loc, where):
        g = fc.Gaussian(mean=loc[None], covariance=jnp.eye(1), inputs={"x": fc.Real})
        with MonteCarlo(rng_key=jax.random.PRNGKey(1), particle=fc.Bint[n]):
            with sharded(where, particles={"particle": "x"}):
                e = fc.Integrate(g - g.log_normalizer, fc.Variable("x", fc.Real).sigmoid(), "x")
        return e.reduce(ops.mean, "particle").data

    one_mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    loc = jnp.asarray(0.3)
    many = float(jax.jit(lambda a: estimate(a, mesh))(loc))
    one = float(jax.jit(lambda a: estimate(a, one_mesh))(loc))
    print(f"Monte Carlo, {n:,} particles on {len(mesh.devices.flat)} devices: "
          f"{many:.4f}, |difference to one device| = {abs(many - one):.1e}")
    assert abs(many - one) < 1e-12


def chains(mesh, v=8, num_chains=64):
    """64 independent Gibbs chains of an 8-variable binary chain, 50 rounds, split over the
    devices and on one device, each chain with its own key."""
    rng = np.random.default_rng(2)
    host = [rng.normal(size=(2, 2)) for _ in range(v - 1)]
    domains = [{f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]} for i in range(v - 1)]

    def program(where, *arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        s = sharded_chains(fs, 50, where, num_chains=num_chains, rng_key=3, warmup=10)
        return jnp.stack([s[f"v{i}"].data for i in range(v)], -1)

    tables = [jnp.asarray(t) for t in host]
    compiled = jax.jit(lambda *a: program(mesh, *a)).lower(*tables).compile()
    many = np.asarray(compiled(*tables))
    one_mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))
    one = np.asarray(jax.jit(lambda *a: program(one_mesh, *a))(*tables))
    exact = exact_marginals([fc.Tensor(t, d) for t, d in zip(host, domains)])[1]  # numpy
    p1 = np.array([float(np.exp(exact[f"v{i}"].data[1])) for i in range(v)])
    err = float(np.abs(many.mean((0, 1)) - p1).max())
    print(f"Gibbs, {num_chains} chains on {len(mesh.devices.flat)} devices: samples equal to "
          f"one device's: {bool(np.array_equal(many, one))}; max |marginal - exact| = "
          f"{err:.3f} (3,200 samples)")
    assert np.array_equal(many, one) and err < 0.1, err
    found = hlo_collectives(compiled.as_text())
    print(f"    collectives in the compiled program: {len(found)}")


def switching(mesh, t_len=64):
    """A switching chain: regime r in {0, 1}, x_{t+1} = a_r x_t + noise (regime 1 faster and
    noisier), as a Gaussian over (x_t, x_{t+1}) per regime pair plus the regimes' log
    transition matrix; its moment-matched value at x_0 = 1, x_T = 0 on 8 devices (blocks of
    8: the one-device pairwise tree) and on one device (numpy)."""
    gain, noise = np.array([0.9, 0.5]), np.array([0.1, 1.0])
    # N(x_{t+1}; a x_t, q) times a weak N(x_t; 0, 10) so each pair's Gaussian is full rank
    prec = np.array([[[g * g / q + 0.1, -g / q], [-g / q, 1 / q]]
                     for g, q in zip(gain, noise)])
    cov = np.broadcast_to(np.linalg.inv(prec)[None, None, :],
                          (t_len, 2, 2, 2, 2)).copy()  # (t, prev regime, regime, 2, 2)
    mean = np.zeros((t_len, 2, 2, 2))
    log_trans = np.broadcast_to(np.log([[0.95, 0.05], [0.1, 0.9]]), (t_len, 2, 2))

    def value(mean, cov, log_trans):
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={
            "t": fc.Bint[t_len], "r": fc.Bint[2], "s": fc.Bint[2], "x": fc.Real, "y": fc.Real})
        step = g + fc.Tensor(log_trans, {"t": fc.Bint[t_len], "r": fc.Bint[2], "s": fc.Bint[2]})
        chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[t_len]),
                                 {"r": "s", "x": "y"})
        return chain(x=1.0, y=0.0).reduce(ops.logaddexp, frozenset({"r", "s"})).data

    def program(*arrays):
        with moment_matching, sharded(mesh, time={"t": "x"}):
            return value(*arrays)

    args = tuple(jnp.asarray(a) for a in (mean, cov, log_trans))
    compiled = jax.jit(program).lower(*args).compile()
    many = float(compiled(*args))
    fc.set_backend("numpy")
    with moment_matching:
        one = float(value(mean, cov, log_trans))
    fc.set_backend("jax")
    print(f"switching chain, T = {t_len}, 2 regimes, moment matched, on "
          f"{len(mesh.devices.flat)} devices: {many:.6f}, |difference to one device| = "
          f"{abs(many - one):.1e}")
    assert abs(many - one) < 1e-9
    _print_collectives(compiled, "program")


if __name__ == "__main__":
    main()
