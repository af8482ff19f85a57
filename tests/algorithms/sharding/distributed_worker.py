"""One of the two processes of ``test_sharded.py``'s ``jax.distributed`` test: two hosts on
localhost with 2 CPU devices each (CPU collectives by gloo), one mesh over the 4 global
devices. Each process computes a chain sharded in time (T = 10: uneven blocks) and a plate
reduction sharded over the data (N = 7), and prints one JSON line of their errors against
numpy. Run: ``python distributed_worker.py PROCESS_ID PORT``.
"""

from __future__ import annotations

import json
import os
import sys

T, N, K = 10, 7, 3


def main(process_id: int, port: str) -> None:
    import jax
    import numpy as np
    from scipy.special import logsumexp

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=process_id)
    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.sharding import sharded

    fc.set_backend("jax")
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
    rng = np.random.default_rng(0)  # the same numbers in both processes
    trans, x = rng.normal(size=(T, K, K)), rng.normal(size=(N, K))

    def program(trans, x):
        with sharded(mesh, plates={"data": "x"}, time={"t": "x"}):
            step = fc.Tensor(trans, {"t": fc.Bint[T], "a": fc.Bint[K], "b": fc.Bint[K]})
            chain = fc.MarkovProduct(ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[T]),
                                     {"a": "b"})
            plate = fc.Tensor(x, {"data": fc.Bint[N], "z": fc.Bint[K]})
            return chain.align(("a", "b")).data, plate.reduce(ops.logaddexp, "data").data

    chain, plate = (np.asarray(r.addressable_data(0)) for r in jax.jit(program)(trans, x))
    m = trans[0]
    for t in range(1, T):
        m = logsumexp(m[:, :, None] + trans[t][None], 1)
    print(json.dumps({"devices": jax.device_count(), "local": jax.local_device_count(),
                      "chain": float(np.abs(chain - m).max()),
                      "plate": float(np.abs(plate - logsumexp(x, 0)).max())}), flush=True)
    jax.distributed.shutdown()


if __name__ == "__main__":
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=2")
    main(int(sys.argv[1]), sys.argv[2])
