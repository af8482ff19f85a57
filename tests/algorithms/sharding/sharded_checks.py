"""The multi-device checks of ``test_sharded.py``, run in ONE subprocess whose jax sees 8
emulated CPU devices (``--xla_force_host_platform_device_count=8`` must be set before jax
starts, which the test session's jax already has). Prints one JSON object of errors and
collectives; the tests assert on it.

Per device count ``n`` in 1, 4, 8, one compiled program computes, under
``sharded(mesh of n devices, plates={"data": "x"}, time={"t": "x"})``: a plated mixture
(sum-product, local z), its max-product, a ``Reduce(logaddexp)`` over the plate, a
log-space and a max-plus Tensor chain, a Gaussian chain, an ``einsum`` over the plate; and
the gradient of a random weighting of them.
``N = T = 12``: blocks are even on 1 and 4 devices and uneven (masked) on 8. (Two devices
would be one more even split, the code path of four, at 10 s of compiles: a 2-device mesh
runs in ``_switching`` here and in the two-process test, 2 devices per host.)
Oracles: the same program on one device without ``sharded``, and numpy brute force.
"""

from __future__ import annotations

import json
import os
import sys

N, T, K = 12, 12, 3


def _gaussian_oracle(mean, cov, a, b, maximize=False):
    """log of the integral over x_1..x_{T-1} of prod_t exp(-q_t / 2), q_t the quadratic form
    of ((x_t, x_{t+1}) - mean_t) in cov_t^{-1}, at
    x_0 = a, x_T = b (scalar states): the joint quadratic form, inner block integrated
    (``maximize``: its max over the inner block, the same less the Gaussian integral's
    ``0.5 n log 2 pi - 0.5 log det J_ii``)."""
    import numpy as np

    n = T + 1
    J, h, c = np.zeros((n, n)), np.zeros(n), 0.0
    for t in range(T):
        P = np.linalg.inv(cov[t])
        idx = [t, t + 1]
        J[np.ix_(idx, idx)] += P
        h[idx] += P @ mean[t]
        c += -0.5 * mean[t] @ P @ mean[t]  # fc.Gaussian is unnormalized: exp(-q / 2)
    inner, outer = list(range(1, T)), [0, T]
    x = np.array([a, b])
    g = h[inner] - J[np.ix_(inner, outer)] @ x
    Jii = J[np.ix_(inner, inner)]
    integral = 0.5 * len(inner) * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(Jii)[1]
    return (c + h[outer] @ x - 0.5 * x @ J[np.ix_(outer, outer)] @ x
            + (0.0 if maximize else integral) + 0.5 * g @ np.linalg.solve(Jii, g))


def _numpy_oracles(logits, locs, data, trans, mean, cov):
    import numpy as np
    from scipy.special import logsumexp

    joint = logits[None] - 0.5 * (data[:, None] - locs[None]) ** 2
    out = [logsumexp(joint, 1).sum(), joint.max(1).sum(), logsumexp(joint)]
    for combine in (lambda a: logsumexp(a, 1), lambda a: a.max(1)):
        m = trans[0]
        for t in range(1, T):  # (i, j) <- combine_k m[i, k] + trans[t][k, j]
            m = combine(m[:, :, None] + trans[t][None])
        out.append(m)
    out.append(_gaussian_oracle(mean, cov, 0.5, -0.3))
    out.append(np.einsum("dz,zw->w", joint, trans[0]))
    return out


def _programs(mesh):
    import jax.numpy as jnp

    import funsor_core as fc
    from funsor_core import ops
    from funsor_core.einsum import einsum
    from funsor_core.sharding import sharded
    from funsor_core.sum_product import sum_product

    def mixture(logits, locs, data, sum_op):
        prior = fc.Tensor(jnp.broadcast_to(logits, (N, K)), {"data": fc.Bint[N], "z": fc.Bint[K]})
        lik = fc.Tensor(-0.5 * (data[:, None] - locs[None]) ** 2,
                        {"data": fc.Bint[N], "z": fc.Bint[K]})
        return sum_product(sum_op, ops.add, [prior, lik], frozenset({"data", "z"}),
                           frozenset({"data"})).data

    def chain(trans, sum_op):
        time = fc.Bint[trans.shape[0]]
        t = fc.Tensor(trans, {"t": time, "x": fc.Bint[K], "y": fc.Bint[K]})
        mp = fc.MarkovProduct(sum_op, ops.add, t, fc.Variable("t", time), {"x": "y"})
        return mp.align(("x", "y")).data

    def joint(logits, locs, data):  # Reduce(logaddexp) over the plate: an all-gather
        t = fc.Tensor(logits[None] - 0.5 * (data[:, None] - locs[None]) ** 2,
                      {"data": fc.Bint[N], "z": fc.Bint[K]})
        return t.reduce(ops.logaddexp, frozenset({"data", "z"})).data

    def kalman(mean, cov, sum_op=ops.logaddexp):  # a Gaussian chain, at its two ends
        time = fc.Bint[mean.shape[0]]
        g = fc.Gaussian(mean=mean, covariance=cov, inputs={"t": time, "x": fc.Real, "y": fc.Real})
        mp = fc.MarkovProduct(sum_op, ops.add, g, fc.Variable("t", time), {"x": "y"})
        return mp(x=0.5, y=-0.3).data

    def product(logits, locs, data, trans):  # einsum "dz,zw->w": (add, mul) over plate d
        t = fc.Tensor(logits[None] - 0.5 * (data[:, None] - locs[None]) ** 2,
                      {"d": fc.Bint[N], "z": fc.Bint[K]})
        return einsum("dz,zw->w", t, fc.Tensor(trans[0], {"z": fc.Bint[K], "w": fc.Bint[K]})).data

    def everything(logits, locs, data, trans, mean, cov):
        return (mixture(logits, locs, data, ops.logaddexp), mixture(logits, locs, data, ops.max),
                joint(logits, locs, data), chain(trans, ops.logaddexp), chain(trans, ops.max),
                kalman(mean, cov), product(logits, locs, data, trans))

    def under(fn, plates=True, time=True):
        if mesh is None:
            return fn

        def wrapped(*args):
            with sharded(mesh, plates={"data": "x", "d": "x"} if plates else None,
                         time={"t": "x"} if time else None):
                return fn(*args)
        return wrapped

    return everything, under, mixture, chain, kalman, joint, product


def _errors(n, args, weights, oracle, reference):
    import jax
    import numpy as np

    everything, under, *_ = _programs(_mesh(n))
    fn = under(everything)

    def loss(*a):
        return sum((w * v).sum() for w, v in zip(weights, fn(*a)))

    values, grads = jax.jit(lambda *a: (fn(*a), jax.grad(loss, (0, 1, 3, 4, 5))(*a)))(*args)
    ref_values, ref_grads = reference
    return {
        "vs_numpy": max(float(np.abs(np.asarray(v) - o).max()) for v, o in zip(values, oracle)),
        "vs_one_device": max(float(np.abs(np.asarray(v) - np.asarray(r)).max())
                             for v, r in zip(values, ref_values)),
        "grad_vs_one_device": max(float(np.abs(np.asarray(g) - np.asarray(r)).max())
                                  for g, r in zip(grads, ref_grads)),
    }


def _mesh(n):
    import jax
    import numpy as np

    return None if n is None else jax.sharding.Mesh(np.array(jax.devices()[:n]), ("x",))


def _collectives(args):
    from backends.jax_sharding import compiled_collectives

    _, under, mixture, chain, kalman, joint, product = _programs(_mesh(8))
    import jax

    from funsor_core import ops
    plate = under(lambda lg, lc, d: mixture(lg, lc, d, ops.logaddexp), time=False)
    plate_max = under(lambda lg, lc, d: mixture(lg, lc, d, ops.max), time=False)
    hmm = under(lambda tr: chain(tr, ops.logaddexp), plates=False)
    return {
        "plate_logaddexp": compiled_collectives(plate, *args[:3]),
        "plate_max": compiled_collectives(plate_max, *args[:3]),
        "reduce_logaddexp": compiled_collectives(under(joint, time=False), *args[:3]),
        "einsum": compiled_collectives(under(product, time=False), *args[:4]),
        "chain": compiled_collectives(hmm, args[3]),
        "gaussian_chain": compiled_collectives(under(kalman, plates=False), *args[4:]),
        # Even T: the gradient stays split like the steps. (An uneven T's gradient of a
        # replicated input is gathered back: jax cannot shard an array unevenly.)
        "chain_grad_even": compiled_collectives(jax.grad(lambda tr: hmm(tr).sum()),
                                                jax.numpy.concatenate([args[3]] * 2)[:16]),
    }


def _adjoint(args):
    """Posterior pair marginals and the Viterbi path (``markov_marginals``, ``markov_map``:
    derivatives of the chain's total) on 8 devices against one device, in one compiled
    program whose collectives are read too."""
    import jax
    import numpy as np

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core import ops
    from funsor_core.sharding import sharded
    from funsor_core.sum_product import markov_map, markov_marginals

    mesh = _mesh(8)
    time = fc.Variable("t", fc.Bint[T])

    def both(trans, logits):
        t = fc.Tensor(trans, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
        init = [fc.Tensor(logits, {"x": fc.Bint[K]})]
        total, pairs = markov_marginals(ops.logaddexp, ops.add, t, time, {"x": "y"}, init)
        score, path = markov_map(t, time, {"x": "y"}, init)
        return total.data, pairs.align(("t", "x", "y")).data, score.data, path["x"].data

    def program(trans, logits):
        with sharded(mesh, time={"t": "x"}):
            sharded_out = both(trans, logits)
        return sharded_out, both(trans, logits)

    compiled = jax.jit(program).lower(args[3], args[0]).compile()
    many, one = compiled(args[3], args[0])
    return {"marginals": max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
                             for a, b in zip(many[:3], one[:3])),
            "same_path": bool(np.array_equal(np.asarray(many[3]), np.asarray(one[3]))),
            "collectives": hlo_collectives(compiled.as_text())}


def _mesh_2d(args, oracle):
    """A 4 x 2 mesh: the plate on axis "x" (4 devices), the time on ("x", "y") (8), and two
    plates reduced at once ("data" on "x", "g" on "y"), a product of Gaussians over a plate
    on both axes (12 on 8 devices: uneven): one program, values
    against numpy (a batched chain whose step is built lazily from a shared matrix and
    observations: against one device), and its collectives."""
    import jax
    import numpy as np

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core import ops
    from funsor_core.sharding import sharded

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
    _, _, _, chain, _, joint, _ = _programs(None)

    def factored(trans, logits):  # a batch input b and a step built lazily: A_b + obs_t
        from interpretations import lazy

        a = fc.Tensor(trans[:2], {"b": fc.Bint[2], "x": fc.Bint[K], "y": fc.Bint[K]})
        obs = fc.Tensor(trans[:, 1], {"t": fc.Bint[T], "y": fc.Bint[K]})
        with lazy:
            step = a + obs + logits[0]
        mp = fc.MarkovProduct(ops.logaddexp, ops.add, step, fc.Variable("t", fc.Bint[T]),
                              {"x": "y"})
        return mp.align(("b", "x", "y")).data

    def two_plates(logits, locs, data):  # "data" on "x" (4 devices), "g" on "y" (4 on 2)
        t = fc.Tensor(logits[None, None] - 0.5 * (data[:, None, None] - locs[None, None]) ** 2
                      + jax.numpy.arange(4.0)[None, :, None],
                      {"data": fc.Bint[N], "g": fc.Bint[4], "z": fc.Bint[K]})
        return (t.reduce(ops.logaddexp, frozenset({"data", "g", "z"})).data,
                t.reduce(ops.add, frozenset({"data", "g"})).data)

    def gaussian_plate(trans):  # prod_i N(x; m_i, 1) over "d8" on ("x", "y"): 12 on 8
        g = fc.Gaussian(mean=trans[:, :1, 0], covariance=jax.numpy.ones((T, 1, 1)),
                        inputs={"d8": fc.Bint[T], "x": fc.Real})
        big = fc.Gaussian(mean=jax.numpy.linspace(-1.0, 1.0, 203)[:, None] + trans[0, 0, :1],
                          covariance=jax.numpy.ones((203, 1, 1)),
                          inputs={"e8": fc.Bint[203], "x": fc.Real})  # blocks compressed
        return (g.reduce(ops.add, "d8")(x=0.3).data, big.reduce(ops.add, "e8")(x=0.3).data)

    def program(logits, locs, data, trans):
        with sharded(mesh, plates={"data": "x", "g": "y", "d8": ("x", "y"),
                                     "e8": ("x", "y")},
                     time={"t": ("x", "y")}):
            out = (joint(logits, locs, data), chain(trans, ops.logaddexp),
                   factored(trans, logits)) + two_plates(logits, locs, data) + (
                gaussian_plate(trans))
        return out, factored(trans, logits)

    compiled = jax.jit(program).lower(*args[:4]).compile()
    values, batch_one = compiled(*args[:4])
    lg, lc, d = (np.asarray(a) for a in args[:3])
    cube = (lg[None, None] - 0.5 * (d[:, None, None] - lc[None, None]) ** 2
            + np.arange(4.0)[None, :, None])
    from scipy.special import logsumexp
    oracles = (oracle[2], oracle[3], batch_one, logsumexp(cube), cube.sum((0, 1)),
               -0.5 * ((0.3 - np.asarray(args[3])[:, 0, 0]) ** 2).sum(),  # unnormalized
               -0.5 * ((0.3 - np.linspace(-1, 1, 203) - float(args[3][0, 0, 0])) ** 2).sum())
    return {"error": max(float(np.abs(np.asarray(v) - o).max())
                         for v, o in zip(values, oracles)),
            "collectives": hlo_collectives(compiled.as_text())}


def _partitioned_mcmc():
    """Singh's partitioned MCMC (Gibbs) on a 12-variable binary chain, 4 partitions (3
    shifted contiguous partitionings), 20 rounds x 4 chains: on one device (the partitions
    as a batch) and on both axes of a 4 x 2 mesh (4 partitions padded to 8, one per
    device), with the same key, in ONE compiled program (its threefry draws make a compile
    cost seconds), and its collectives."""
    import jax
    import numpy as np

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core.sharding import partitioned_mcmc

    V, P = 12, 4
    rng = np.random.default_rng(5)
    tables = [rng.normal(size=(2, 2)) for _ in range(V - 1)] + [rng.normal(size=(2,))]
    domains = [{f"v{i}": fc.Bint[2], f"v{i + 1}": fc.Bint[2]} for i in range(V - 1)]
    domains.append({"v0": fc.Bint[2]})
    ids = np.array([[(v + r) % V // (V // P) for v in range(V)] for r in range(3)])

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))

    def run(mesh, axis, fs):
        s = partitioned_mcmc(fs, 20, mesh, axis, num_partitions=P, partitions=ids,
                             num_chains=4, rng_key=jax.random.PRNGKey(3))
        return jax.numpy.stack([s[f"v{i}"].data for i in range(V)], -1)

    def program(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        return run(None, "x", fs), run(mesh, ("x", "y"), fs)

    compiled = jax.jit(program).lower(*tables).compile()
    one, eight = (np.asarray(x) for x in compiled(*tables))
    return {"same_as_one_device": bool(np.array_equal(eight, one)),
            "moved": float((one != one[:1]).mean()),
            "collectives": hlo_collectives(compiled.as_text())}


def _particles():
    """``MonteCarlo(particle=Bint[12])`` with the particles sharded over 8 devices (uneven:
    2 per device, the last padded): the estimate of E[sigmoid(x)], x ~ N(loc, 1), against
    one device computing each particle's one-particle estimate
    with its key (the Monte Carlo's next key folded with the particle's index), in ONE
    compiled program; and its collectives."""
    import jax

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core import ops
    from funsor_core.sampling.keys import KeyStream
    from funsor_core.sharding import sharded
    from interpretations import MonteCarlo

    n, mesh = 12, _mesh(8)

    def model(loc):
        g = fc.Gaussian(mean=loc[None], covariance=jax.numpy.eye(1), inputs={"x": fc.Real})
        return g - g.log_normalizer, fc.Variable("x", fc.Real).sigmoid()

    def estimate(loc, key):
        with MonteCarlo(rng_key=key, particle=fc.Bint[n]):
            with sharded(mesh, particles={"particle": "x"}):
                e = fc.Integrate(*model(loc), "x")
        return e.reduce(ops.mean, "particle").data

    def one_device(loc, key):  # (vmapped over the keys: one random program to compile)
        measure, f = model(loc)
        first = KeyStream(key).next(measure)

        def one(i):
            with MonteCarlo(rng_key=jax.random.fold_in(first, i)):
                return fc.Integrate(measure, f, "x").data
        return jax.vmap(one)(jax.numpy.arange(n)).mean()

    def program(loc, key):
        return estimate(loc, key), one_device(loc, key)

    args = (jax.numpy.asarray(0.3), jax.random.PRNGKey(1))
    compiled = jax.jit(program).lower(*args).compile()
    value, ref_value = (float(v) for v in compiled(*args))
    return {"value": abs(value - ref_value), "collectives": hlo_collectives(compiled.as_text())}


def _gaussian_max_chain(args, host):
    """A max-plus (Viterbi) Gaussian chain over T = 12 steps on 8 devices (uneven), at its
    two ends: one compiled program (value only: its gradient is the one-device rule's, which
    the sum-product chain's gradient tests already cover), against the numpy max of the
    joint quadratic form, and its collectives. The one-device value is computed by the test
    (numpy backend, eager: here an eager jax run compiles each op, ~16 s)."""
    import jax

    from backends.jax_sharding import hlo_collectives
    from funsor_core import ops

    _, under, _, _, kalman, _, _ = _programs(_mesh(8))
    compiled = jax.jit(under(lambda m, c: kalman(m, c, ops.max), plates=False)).lower(
        *args[4:]).compile()
    value = float(compiled(*args[4:]))
    return {"value": value, "mean": host[4].tolist(), "cov": host[5].tolist(),
            "vs_numpy": abs(value - _gaussian_oracle(*host[4:], 0.5, -0.3, maximize=True)),
            "collectives": hlo_collectives(compiled.as_text())}


def _mcmc_chains():
    """``sharded_chains``: 12 Gibbs chains and 12 MH chains on a 4-cycle of binary
    variables, 6 rounds, split over 8 devices (uneven: 2 per device, the last padded),
    against the loopy sampler's own ``run_chains`` on one device with the same kernel, chain
    by chain with the chain's key (the sampler's key folded with its index), in ONE compiled
    program (a compile costs ~1 s: its threefry draws); and the program's collectives."""
    import jax
    import numpy as np

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core.algorithms.loopy.graph import FactorGraph
    from funsor_core.algorithms.loopy.mcmc import SamplerPlan, run_chains
    from funsor_core.sampling.keys import KeyStream
    from funsor_core.sharding import sharded_chains

    V, C, S = 4, 12, 6
    rng = np.random.default_rng(7)
    tables = [rng.normal(size=(2, 2)) for _ in range(V)]
    domains = [{f"v{i}": fc.Bint[2], f"v{(i + 1) % V}": fc.Bint[2]} for i in range(V)]
    key = jax.random.PRNGKey(11)
    init = rng.integers(0, 2, size=(C, V))

    def program(*arrays):
        fs = [fc.Tensor(a, d) for a, d in zip(arrays, domains)]
        base = KeyStream(key).next(fs[0])
        copies = [jax.numpy.broadcast_to(a, (C,) + a.shape) for a in arrays]
        out = []
        for kernel in ("gibbs", "mh"):
            s = sharded_chains(fs, S, _mesh(8), kernel=kernel, num_chains=C, rng_key=key,
                               init=init)

            def one_device(c, x0, *arrays, kernel=kernel):  # chain c alone, with its key
                # (all args batched: run_chains takes an init of the tables' array type)
                plan = SamplerPlan(FactorGraph.build([fc.Tensor(a, d)
                                                      for a, d in zip(arrays, domains)]))
                return run_chains(plan, x0[None], S, kernel,
                                  rng_key=jax.random.fold_in(base, c))[:, 0]

            out.append((jax.numpy.stack([s[f"v{i}"].data for i in range(V)], -1),  # (S, C, V)
                        jax.vmap(one_device, out_axes=1)(jax.numpy.arange(C),
                                                         jax.numpy.asarray(init), *copies)))
        return out

    compiled = jax.jit(program).lower(*tables).compile()
    runs = {k: [np.asarray(x) for x in pair]
            for k, pair in zip(("gibbs", "mh"), compiled(*tables))}
    # A model of mass zero (a -inf table), the same compiled program: sharded_chains raises
    # on it eagerly; traced, every chain's states are -1 (run_chains alone does not check).
    void = compiled(np.full((2, 2), -np.inf), *tables[1:])
    return {"same": {k: bool(np.array_equal(*pair)) for k, pair in runs.items()},
            "mass_zero_void": [bool((np.asarray(sharded) == -1).all()) for sharded, _ in void],
            "chains_differ": {k: float((ref[-1] != ref[-1, :1]).any(-1).mean())
                              for k, (_, ref) in runs.items()},
            "mh_differs_from_gibbs": bool((runs["mh"][1] != runs["gibbs"][1]).any()),
            "collectives": hlo_collectives(compiled.as_text())}


def _gradients_and_samples(args, host):
    """On 8 devices (T = 12: uneven), in ONE compiled program: the value and gradient of a
    Tensor chain's log Z (init + chain, all states summed) and of the max-plus Gaussian
    chain at its two ends (the test checks them against numpy: forward-backward pair
    marginals, the argmax path); and posterior paths of the Tensor chain drawn by the
    adjoint tape (``forward_backward(ops.sample)``) with the same key, sharded and on one
    device; its collectives."""
    import jax
    import numpy as np

    import funsor_core as fc
    from backends.jax_sharding import hlo_collectives
    from funsor_core import ops
    from funsor_core.algorithms.adjoint import forward_backward
    from interpretations import lazy

    _, under, _, _, kalman, _, _ = _programs(_mesh(8))

    def log_z(trans, logits):
        t = fc.Tensor(trans, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
        mp = fc.MarkovProduct(ops.logaddexp, ops.add, t, fc.Variable("t", fc.Bint[T]),
                              {"x": "y"})
        return (fc.Tensor(logits, {"x": fc.Bint[K]}) + mp).reduce(
            ops.logaddexp, frozenset({"x", "y"})).data

    def paths(trans, logits):
        t = fc.Tensor(trans, {"t": fc.Bint[T], "x": fc.Bint[K], "y": fc.Bint[K]})
        init = fc.Tensor(logits, {"x": fc.Bint[K]})
        with lazy:
            mp = fc.MarkovProduct(ops.logaddexp, ops.add, t, "t", {"x": "y"})
            root = (init + mp).reduce(ops.logaddexp, frozenset({"x", "y"}))
        _, adj = forward_backward(ops.sample, ops.add, root, rng_key=jax.random.PRNGKey(4),
                                  sample_inputs={"particle": fc.Bint[5]})
        return fc.extract_samples(adj[t])["x"].align(("t", "particle")).data

    def program(trans, logits, mean, cov):
        return (jax.value_and_grad(under(log_z), (0, 1))(trans, logits),
                jax.value_and_grad(under(lambda m, c: kalman(m, c, ops.max)))(mean, cov),
                under(paths)(trans, logits), paths(trans, logits))

    compiled = jax.jit(program).lower(args[3], args[0], *args[4:]).compile()
    (z, (dz_trans, dz_init)), (top, dtop_mean), eight, one = compiled(args[3], args[0],
                                                                       *args[4:])
    eight, one = np.asarray(eight), np.asarray(one)
    return {"trans": host[3].tolist(), "init": host[0].tolist(), "log_z": float(z),
            "dz_trans": np.asarray(dz_trans).tolist(), "dz_init": np.asarray(dz_init).tolist(),
            "mean": host[4].tolist(), "cov": host[5].tolist(), "max": float(top),
            "dmax_mean": np.asarray(dtop_mean).tolist(),
            "same_paths": bool(np.array_equal(one, eight)),
            "paths_differ": bool((one != one[:, :1]).any()),
            "collectives": hlo_collectives(compiled.as_text())}

def _switching_inputs(T, batch):
    """A switching chain's arrays (K = 2 switch states, scalar real state): mean (B, T, K,
    K, 2) and covariance of (x_t, x_{t+1}), switch logits (T, K, K); chain b = 1 has
    Gaussians that do not depend on the switch (moment matching is exact there)."""
    import numpy as np

    rng = np.random.default_rng(T)
    mean = rng.normal(size=(batch, T, 2, 2, 2))
    root = rng.normal(size=(batch, T, 2, 2, 2, 2))
    cov = root @ np.swapaxes(root, -1, -2) + np.eye(2)
    if batch > 1:
        mean[1], cov[1] = mean[1, :, :1, :1], cov[1, :, :1, :1]
    return mean, cov, rng.normal(size=(T, 2, 2))


def switching_chain(mean, cov, logits):
    """The moment-matched switching chain at x_0 = 0.3, x_T = -0.2, aligned (b, a, c): the
    one-device rule's value where no ``sharded`` is active (also used by the test, numpy)."""
    import funsor_core as fc
    from funsor_core import ops

    B, T = mean.shape[:2]
    time = fc.Bint[T]
    g = fc.Gaussian(mean=mean, covariance=cov, inputs={
        "b": fc.Bint[B], "t": time, "a": fc.Bint[2], "c": fc.Bint[2], "x": fc.Real,
        "y": fc.Real})
    switch = {"a": fc.Bint[2], "c": fc.Bint[2]}  # logits (K, K): the same at every step
    step = g + fc.Tensor(logits, switch if logits.ndim == 2 else {"t": time, **switch})
    mp = fc.MarkovProduct(ops.logaddexp, ops.add, step, fc.Variable("t", time),
                          {"a": "c", "x": "y"})
    return mp(x=0.3, y=-0.2).align(("b", "a", "c")).data


def _switching():
    """Switching (discrete x Gaussian) chains under ``moment_matching`` over a time sharded
    on 2 devices, in ONE compiled program (a moment-matching compile costs seconds: the
    smallest chains that show each case): T = 5 with one switch-transition Tensor for all
    steps (blocks of 2, the last step on every device: the one-device tree) and a batch of
    two T = 6 chains (blocks of 3: another association); the values, the inputs
    (the test computes one device and the enumeration of all switch paths on numpy) and the
    collectives."""
    import jax
    import numpy as np

    from backends.jax_sharding import hlo_collectives
    from funsor_core.sharding import sharded
    from interpretations import moment_matching

    even, odd = _switching_inputs(5, 1), _switching_inputs(6, 2)
    even = even[:2] + (even[2][0],)

    def program(even, odd):
        with moment_matching, sharded(_mesh(2), time={"t": "x"}):
            return switching_chain(*even), switching_chain(*odd)

    compiled = jax.jit(program).lower(even, odd).compile()
    same, other = compiled(even, odd)
    return {"even": [a.tolist() for a in even], "odd": [a.tolist() for a in odd],
            "same": np.asarray(same).tolist(), "other": np.asarray(other).tolist(),
            "collectives": hlo_collectives(compiled.as_text())}


def main() -> None:
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import funsor_core as fc

    fc.set_backend("jax")
    rng = np.random.default_rng(0)
    root = rng.normal(size=(T, 2, 2))
    host = (rng.normal(size=K), rng.normal(size=K), np.linspace(-2.0, 2.0, N),
            rng.normal(size=(T, K, K)), rng.normal(size=(T, 2)),
            root @ root.transpose(0, 2, 1) + np.eye(2))
    args = tuple(jax.numpy.asarray(a) for a in host)
    weights = [rng.normal(size=s) for s in ((), (), (), (K, K), (K, K), (), (K,))]
    oracle = _numpy_oracles(*host)
    everything, *_ = _programs(None)

    def loss(*a):
        return sum((w * v).sum() for w, v in zip(weights, everything(*a)))

    reference = jax.jit(lambda *a: (everything(*a), jax.grad(loss, (0, 1, 3, 4, 5))(*a)))(*args)
    report = {"devices": len(jax.devices()),
              "errors": {n: _errors(n, args, weights, oracle, reference) for n in (1, 4, 8)},
              "collectives": _collectives(args), "adjoint": _adjoint(args),
              "mesh_2d": _mesh_2d(args, oracle), "partitioned_mcmc": _partitioned_mcmc(),
              "particles": _particles(), "mcmc_chains": _mcmc_chains(),
              "gaussian_max_chain": _gaussian_max_chain(args, host),
              "switching": _switching(),
              "gradients_and_samples": _gradients_and_samples(args, host)}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    assert "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
    main()
