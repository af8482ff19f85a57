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
  ``P (D + D (D + 1) / 2 + 1)`` (an information vector, a symmetric precision, a constant).

No peer shards inference (issue #33: numpyro, blackjax, dynamax, funsor 0.4.8 leave it to
the user), so there is no peer row. Weak and strong scaling need a multi-GPU machine.

Run: ``python benchmarks/sharded.py``.
"""

from __future__ import annotations

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
from funsor_core.sharding import sharded  # noqa: E402


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


def _gaussian_chain(t_len, dp):
    def fn(mean, cov):
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={
            "t": fc.Bint[t_len], "x": fc.Reals[dp], "y": fc.Reals[dp]})
        time = fc.Variable("t", fc.Bint[t_len])
        mp = fc.MarkovProduct(ops.logaddexp, ops.add, g, time, {"x": "y"})
        return mp(x=jnp.zeros(dp), y=jnp.zeros(dp)).data
    eye = jnp.broadcast_to(jnp.eye(2 * dp), (t_len, 2 * dp, 2 * dp))
    return fn, (jnp.zeros((t_len, 2 * dp)), 2.0 * eye), "t"


def _row(label, build, minimum, devices):
    fn, args, name = build
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("x",))
    where = {"plates": {name: "x"}} if name == "data" else {"time": {name: "x"}}

    def sharded_fn(*a):
        with sharded(mesh, **where):
            return fn(*a)

    found = compiled_collectives(sharded_fn, *args)
    sent = sum(_elements(s) for _, s in found)
    kinds = ", ".join(f"{k} {re.sub(r'[{][^}]*[}]', '', s)}" for k, s in found)
    print(f"| {label} | {devices} | {len(found)} | {kinds} | {sent} | 1 x {minimum} |")


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


if __name__ == "__main__":
    main()
