"""``sharded(mesh, plates=..., time=...)``: values and gradients on 1, 4 and 8 devices
equal one device (and numpy brute force), and the compiled programs hold one collective of
the expected size. The multi-device part runs in ONE subprocess with 8 emulated CPU devices
(``sharded_checks.py``: jax reads the device count once, at start-up); the rest here on the
suite's single device."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import funsor_core as fc  # noqa: E402
from funsor_core import ops  # noqa: E402
from funsor_core.sharding import partitioned_mcmc, sharded, sharded_chains  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
K = 3


@pytest.fixture(scope="module")
def report():
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("sharded_checks.py"))],
                         env=_env(8), capture_output=True, text=True, cwd=ROOT,
                         timeout=900)  # ~30 s on 2 free cores; 5-14 min seen at load 14
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _env(devices: int) -> dict:
    # XLA's CPU backend at -O0: these small programs compile in about half the CPU time
    # (their collectives are decided before code generation, and float64 stays IEEE).
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "")
                        + f" --xla_force_host_platform_device_count={devices}"
                        " --xla_backend_optimization_level=0"
                        " --xla_llvm_disable_expensive_passes=true")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = "1"
    return env


def test_sharded_over_two_processes_by_jax_distributed():
    # two hosts on localhost (2 CPU devices each, gloo collectives), one 4-device mesh
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = str(s.getsockname()[1])
    worker = str(Path(__file__).with_name("distributed_worker.py"))
    procs = [subprocess.Popen([sys.executable, worker, str(i), port], env=_env(2), cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        result = json.loads(out.strip().splitlines()[-1])
        assert (result["devices"], result["local"]) == (4, 2)
        assert result["chain"] < 1e-12 and result["plate"] < 1e-12


@pytest.mark.parametrize("devices", ["1", "4", "8"])
def test_sharded_values_and_gradients_equal_one_device(report, devices):
    # plated sum- and max-product, Reduce(logaddexp) over the plate, log-space and max-plus
    # Tensor chains, a Gaussian chain; 8 devices: uneven blocks
    assert report["devices"] == 8
    errors = report["errors"][devices]
    assert errors["vs_numpy"] < 1e-12
    assert errors["vs_one_device"] < 1e-12
    assert errors["grad_vs_one_device"] < 1e-12


def test_sharded_plate_is_one_all_reduce_of_the_reduced_size(report):
    # the plated mixture's log-likelihood is a scalar: one all-reduce of f64[]
    for key in ("plate_logaddexp", "plate_max"):
        assert report["collectives"][key] == [["all-reduce", "f64[]"]]


def test_sharded_logaddexp_and_einsum_reductions_are_one_collective(report):
    # Reduce(logaddexp) to a scalar: each device's log-sum gathered (8 numbers); einsum
    # "dz,zw->w" over the sharded d: one all-reduce of the output's K numbers
    found = {key: [(kind, shape.split("{")[0]) for kind, shape in report["collectives"][key]]
             for key in ("reduce_logaddexp", "einsum")}
    assert found == {"reduce_logaddexp": [("all-gather", "f64[8]")],
                     "einsum": [("all-reduce", f"f64[{K}]")]}


def test_sharded_chain_is_one_gather_of_one_summary_per_device(report):
    # one all-gather of P x K x K (P = 8), forward and backward; no time-length collective
    for key in ("chain", "chain_grad_even"):
        assert [(kind, shape.split("{")[0]) for kind, shape in report["collectives"][key]] == [
            ("all-gather", f"f64[8,{K},{K}]")]


def test_sharded_gaussian_chain_is_one_gather_of_one_packed_summary(report):
    # state dim 1: D = 2, a summary packs w (2), s (2 x 2), k and a flag: 8 numbers per device
    assert [(kind, shape.split("{")[0]) for kind, shape in report["collectives"][
        "gaussian_chain"]] == [("all-gather", "f64[8,8]")]


def test_sharded_max_plus_gaussian_chain_equals_one_device(report):
    # Viterbi over a Gaussian chain, T = 12 on 8 devices (uneven): = the numpy max of the
    # joint quadratic form and one device; the same one all-gather of the packed summary
    result = report["gaussian_max_chain"]
    mean, cov = np.array(result["mean"]), np.array(result["cov"])
    g = fc.Gaussian(mean=mean, covariance=cov,
                    inputs={"t": fc.Bint[len(mean)], "x": fc.Real, "y": fc.Real})
    one = fc.MarkovProduct(ops.max, ops.add, g, fc.Variable("t", fc.Bint[len(mean)]),
                           {"x": "y"})(x=0.5, y=-0.3)  # one device, numpy
    assert result["vs_numpy"] < 1e-12 and abs(float(one.data) - result["value"]) < 1e-12
    assert [(kind, shape.split("{")[0]) for kind, shape in result["collectives"]] == [
        ("all-gather", "f64[8,8]")]


def test_sharded_marginals_and_viterbi_equal_one_device(report):
    # markov_marginals / markov_map differentiate the chain's total: through the sharded scan
    adjoint = report["adjoint"]
    assert adjoint["marginals"] < 1e-12 and adjoint["same_path"]
    gathers = [shape.split("{")[0] for kind, shape in adjoint["collectives"]]
    assert f"f64[8,{K},{K}]" in gathers  # the chain's summaries: the sharded path ran


def test_sharded_on_a_two_dimensional_mesh(report):
    # plate on mesh axis "x" (4 devices): its 4 log-sums gathered; time on ("x", "y"): 8;
    # a batched chain of two factors (B = 2): one summary of B x K x K per device; two plates
    # reduced at once ("data" on "x", "g" on "y"): logaddexp, the 8 devices' log-sums
    # gathered; add to the K-vector over z, one all-reduce of K; a product of 12 Gaussians
    # (one real) over a plate on both axes (uneven), and of 203 (each device's block
    # compressed by QR): each device's partial sum, 3 numbers (white vector, square root,
    # constant), gathered: 8 x 3 each
    result = report["mesh_2d"]
    assert result["error"] < 1e-12
    assert sorted(shape.split("{")[0] for _, shape in result["collectives"]) == sorted([
        "f64[4]", f"f64[8,2,{K},{K}]", f"f64[8,{K},{K}]", "f64[8]", f"f64[{K}]", "f64[8,3]",
        "f64[8,3]"])


def test_partitioned_mcmc_on_eight_devices_equals_one_device(report):
    # the same key: the same samples (4 partitions padded to 8, one per device), the chains
    # moved, and one all-gather per round of P x 1 x chains x the most active values of one
    # partition (8 x 1 x 4 x 2: a block's middle, or both ends of the chain in one block)
    result = report["partitioned_mcmc"]
    assert result["same_as_one_device"] and result["moved"] > 0.2
    assert [(kind, shape.split("{")[0]) for kind, shape in result["collectives"]] == [
        ("all-gather", "s64[8,1,4,2]")]


def test_sharded_monte_carlo_particles_equal_one_device(report):
    # 12 particles on 8 devices (padded): the estimate = one device's one-particle estimates
    # with the same keys; one all-reduce of the mean, nothing gathered (the gradient: see
    # benchmarks/sharded.py, one all-reduce with the value)
    result = report["particles"]
    assert result["value"] < 1e-12
    assert [(kind, shape.split("{")[0]) for kind, shape in result["collectives"]] == [
        ("all-reduce", "f64[]")]


def test_sharded_mcmc_chains_equal_one_device_chain_by_chain(report):
    # 12 Gibbs chains on 8 devices (uneven): chain c = the loopy sampler's run_chains on one
    # device with the chain's key; the chains differ (own keys); nothing moves between
    # devices but the returned samples (S x padded C x V, gathered once at the end: jax
    # cannot shard 12 over 8; an even C leaves them split, no collective: benchmarks/sharded.py)
    # And the same for 12 MH chains (uniform proposal) in the same compiled program: one
    # gather per sharded_chains call.
    result = report["mcmc_chains"]
    assert result["same"] == {"gibbs": True, "mh": True}, result["same"]
    assert min(result["chains_differ"].values()) > 0.5 and result["mh_differs_from_gibbs"]
    assert result["mass_zero_void"] == [True, True]  # under jit: -1, no state
    assert [(kind, shape.split("{")[0]) for kind, shape in result["collectives"]] == [
        ("all-gather", "s64[6,16,4]")] * 2


def _log_z_and_marginals(init, trans):
    """log Z of init(s_0) + sum_t trans[t](s_t, s_{t+1}) over all paths, and its gradient:
    p(s_0) and the pair marginals p(s_t, s_{t+1}) (forward-backward in numpy)."""
    def logsumexp(a, axis=0):
        return np.logaddexp.reduce(a, axis=axis)

    T = len(trans)
    alpha, beta = [init], [np.zeros(trans.shape[-1])]
    for t in range(T):
        alpha.append(logsumexp(alpha[-1][:, None] + trans[t], 0))
    for t in reversed(range(T)):
        beta.insert(0, logsumexp(trans[t] + beta[0][None], 1))
    log_z = logsumexp(alpha[-1])
    pairs = np.exp([alpha[t][:, None] + trans[t] + beta[t + 1][None] - log_z
                    for t in range(T)])
    return log_z, np.exp(init + beta[0] - log_z), pairs


def _max_path_gradient(mean, cov, a=0.5, b=-0.3):
    """d/d mean_t of max over x_1..x_{T-1} of sum_t -(z_t - mean_t)' cov_t^-1 (z_t - mean_t)
    / 2, z_t = (x_t, x_{t+1}), x_0 = a, x_T = b: cov_t^-1 (z*_t - mean_t) at the argmax path
    z* (the envelope theorem), the path from the joint quadratic form."""
    T = len(mean)
    J, h = np.zeros((T + 1, T + 1)), np.zeros(T + 1)
    precs = np.linalg.inv(cov)
    for t in range(T):
        J[t:t + 2, t:t + 2] += precs[t]
        h[t:t + 2] += precs[t] @ mean[t]
    inner = list(range(1, T))
    x = np.zeros(T + 1)
    x[0], x[T] = a, b
    x[inner] = np.linalg.solve(J[np.ix_(inner, inner)], h[inner] - J[np.ix_(inner, [0, T])]
                               @ np.array([a, b]))
    return np.stack([precs[t] @ (x[t:t + 2] - mean[t]) for t in range(T)])


def test_sharded_gradients_and_adjoint_samples_equal_one_device(report):
    # 8 devices, T = 12 (uneven): value and jax.grad of a Tensor chain's log Z (numpy
    # forward-backward: p(s_0) and the pair marginals) and of the max-plus Gaussian chain
    # (d/d mean at the argmax path); the adjoint tape's posterior paths (forward_backward
    # with ops.sample) with the same key: the same paths as one device, differing between
    # particles; the chain's summaries gathered (the tape's chain runs sharded)
    result = report["gradients_and_samples"]
    log_z, d_init, d_trans = _log_z_and_marginals(np.array(result["init"]),
                                                  np.array(result["trans"]))
    assert abs(result["log_z"] - log_z) < 1e-12
    assert np.abs(np.array(result["dz_init"]) - d_init).max() < 1e-12
    assert np.abs(np.array(result["dz_trans"]) - d_trans).max() < 1e-12
    mean, cov = np.array(result["mean"]), np.array(result["cov"])
    assert np.abs(np.array(result["dmax_mean"]) - _max_path_gradient(mean, cov)).max() < 1e-12
    assert result["same_paths"] and result["paths_differ"]
    gathers = [shape.split("{")[0] for kind, shape in result["collectives"]]
    assert f"f64[8,{K},{K}]" in gathers and "f64[8,8]" in gathers


def _switch_paths(mean, cov, logits, a=0.3, b=-0.2):
    """log of the switching chain's integral at x_0 = a, x_T = b for each pair of end
    switch states: the log-sum over all K^(T+1) switch paths of each path's Gaussian chain
    (its joint quadratic form over x_0..x_T, the inner block integrated)."""
    import itertools

    T, K = logits.shape[0], logits.shape[-1]
    out = np.full((K, K), -np.inf)
    inner, ends, x = list(range(1, T)), [0, T], np.array([a, b])
    for path in itertools.product(range(K), repeat=T + 1):
        J, h, c = np.zeros((T + 1, T + 1)), np.zeros(T + 1), 0.0
        for t, (s0, s1) in enumerate(zip(path[:-1], path[1:])):
            P, m = np.linalg.inv(cov[t, s0, s1]), mean[t, s0, s1]
            J[t:t + 2, t:t + 2] += P
            h[t:t + 2] += P @ m
            c += logits[t, s0, s1] - 0.5 * m @ P @ m  # fc.Gaussian is unnormalized
        g = h[inner] - J[np.ix_(inner, ends)] @ x
        Jii = J[np.ix_(inner, inner)]
        value = (c + h[ends] @ x - 0.5 * x @ J[np.ix_(ends, ends)] @ x
                 + 0.5 * (T - 1) * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(Jii)[1]
                 + 0.5 * g @ np.linalg.solve(Jii, g))
        out[path[0], path[-1]] = np.logaddexp(out[path[0], path[-1]], value)
    return out


def test_sharded_switching_chain_under_moment_matching(report):
    # 2 devices. T = 5, a shared switch Tensor (blocks of 2, one step left to every device:
    # the one-device pairwise tree): one device's value;
    # T = 6 (blocks of 3: another association): where moment matching is exact (Gaussians
    # independent of the switch) the enumeration of all switch paths to 1e-12, elsewhere
    # within the approximation's own error (one device: 0.04 nats from it); one all-gather
    # per chain of P x K^2 x (D + D^2 + 1) numbers (D = 2 real coordinates; batch of 2)
    from sharded_checks import switching_chain

    from interpretations import moment_matching

    result = report["switching"]
    even, odd = ([np.array(x) for x in result[k]] for k in ("even", "odd"))
    with moment_matching:
        one_even, one_odd = switching_chain(*even), switching_chain(*odd)
    same, other = np.array(result["same"]), np.array(result["other"])
    assert np.abs(same - one_even).max() < 1e-12
    exact, mixed = (_switch_paths(odd[0][b], odd[1][b], odd[2]) for b in (1, 0))
    assert np.abs(other[1] - exact).max() < 1e-12 and np.abs(one_odd[1] - exact).max() < 1e-12
    error, one_error = np.abs(other[0] - mixed).max(), np.abs(one_odd[0] - mixed).max()
    assert 0 < one_error < 0.1 and error < 2 * one_error
    assert sorted((kind, shape.split("{")[0]) for kind, shape in result["collectives"]) == [
        ("all-gather", "f64[2,28]"), ("all-gather", "f64[2,56]")]


def _mesh():
    return jax.sharding.Mesh(np.array(jax.devices()[:1]), ("x",))


def test_sharded_errors_name_what_is_missing():
    g = fc.Gaussian(mean=np.zeros((3, 2, 2, 2)),
                    covariance=np.broadcast_to(np.eye(2), (3, 2, 2, 2, 2)),
                    inputs={"t": fc.Bint[3], "a": fc.Bint[2], "b": fc.Bint[2], "x": fc.Real,
                            "y": fc.Real})

    for sum_op, match in [(ops.logaddexp, "Enter `moment_matching` outside"),  # the mixture
                          (ops.max, r"is in \(max, add\)")]:
        with pytest.raises(NotImplementedError, match=match):
            with sharded(_mesh(), time={"t": "x"}):  # a switching chain (raised before jax)
                fc.MarkovProduct(sum_op, ops.add, g, fc.Variable("t", fc.Bint[3]),
                                 {"a": "b", "x": "y"})
    with pytest.raises(ValueError, match="both as time and as particles"):
        sharded(_mesh(), time={"particle": "x"}, particles={"particle": "x"})
    with pytest.raises(ValueError, match="mesh axis 'y' is not in the mesh"):
        partitioned_mcmc([fc.Tensor(jax.numpy.zeros(2), {"a": fc.Bint[2]})], 1, _mesh(), "y")
    f = fc.Tensor(jax.numpy.zeros(2), {"a": fc.Bint[2]})
    with pytest.raises(ValueError, match="mesh axis 'y' is not in the mesh"):
        sharded_chains([f], 1, _mesh(), "y", rng_key=0)
    with pytest.raises(ValueError, match="needs rng_key"):
        sharded_chains([f], 1, _mesh())
    with pytest.raises(ValueError, match=r"init: one row of states per chain, \(num_chains, V\)"):
        sharded_chains([f], 1, _mesh(), num_chains=3, rng_key=0, init=np.zeros((2, 1), int))
    t = fc.Tensor(np.ones(4), {"data": fc.Bint[4]})
    with pytest.raises(TypeError, match="numpy backend cannot"):
        with sharded(_mesh(), plates={"data": "x"}):
            t.reduce(ops.add, "data")
    with pytest.raises(ValueError, match="mesh axis 'y'"):
        with sharded(_mesh(), plates={"data": "y"}):
            fc.Tensor(jax.numpy.ones(4), {"data": fc.Bint[4]}).reduce(ops.add, "data")
    with pytest.raises(ValueError, match="both as plates and as time"):
        sharded(_mesh(), plates={"t": "x"}, time={"t": "x"})


def test_sharded_under_lazy_stays_lazy():
    # the local evaluation below sharded is lazy: the rule declines, the reduction is recorded
    from interpretations import lazy

    t = fc.Tensor(jax.numpy.ones((4, 2)), {"data": fc.Bint[4], "z": fc.Bint[2]})
    with lazy:
        with sharded(_mesh(), plates={"data": "x"}):
            r = t.reduce(ops.add, "data")
    assert type(r) is fc.Reduce
    np.testing.assert_allclose(np.asarray(fc.reinterpret(r).data), [4.0, 4.0])
    # a switching chain likewise stays a lazy MarkovProduct (no error about its mixture)
    g = fc.Gaussian(jax.numpy.zeros((3, 2, 2, 2)),  # (white vector, square root): no jax op
                    jax.numpy.asarray(np.broadcast_to(np.eye(2), (3, 2, 2, 2, 2))),
                    {"t": fc.Bint[3], "a": fc.Bint[2], "b": fc.Bint[2], "x": fc.Real,
                     "y": fc.Real})
    with lazy:
        with sharded(_mesh(), time={"t": "x"}):
            mp = fc.MarkovProduct(ops.logaddexp, ops.add, g, fc.Variable("t", fc.Bint[3]),
                                  {"a": "b", "x": "y"})
    assert type(mp) is fc.MarkovProduct
