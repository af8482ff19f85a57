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

Run: ``python examples/sharded.py`` (part of ``make demo``).
"""

from __future__ import annotations

import os
import re

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import funsor_core as fc  # noqa: E402
from backends.jax_sharding import hlo_collectives  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.sharding import sharded  # noqa: E402
from funsor_core.sum_product import sum_product  # noqa: E402

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
        for kind, shape in hlo_collectives(compiled.as_text()):
            shape = re.sub(r"\{[^}]*\}", "", shape)  # the layouts
            print(f"    collective in the compiled value-and-gradient program: {kind} {shape}")

if __name__ == "__main__":
    main()
